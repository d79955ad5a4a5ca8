// The factories of cairn/file_system.h over the io/ backends.
#include "cairn/file_system.h"

#include "io/file_system.h"
#include "io/memory_file_system.h"

namespace cairn {

std::shared_ptr<FileSystem> NewMemoryFileSystem() {
  return std::make_shared<io::MemoryFileSystem>();
}

absl::StatusOr<std::shared_ptr<FileSystem>> NewDefaultFileSystem(IoBackendOption backend) {
  return io::NewFileSystem(static_cast<io::IoBackend>(backend));
}

absl::StatusOr<std::vector<std::string>> ListDirectory(FileSystem& fs, const std::string& dir) {
  return fs.ListDir(dir);
}

bool PathExists(FileSystem& fs, const std::string& path) { return fs.FileExists(path); }

}  // namespace cairn
