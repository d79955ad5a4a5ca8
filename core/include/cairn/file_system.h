// The file system a database runs on, as an application sees it: a handle
// to pass in Options::file_system, made by one of the factories below. The
// in-memory one lets an application's own tests open databases without
// touching the disk (and see each other's files, when they share it).
//
// The interface behind the handle (io/file_system.h) is internal: it
// changes with the engine's I/O (batched reads, read queues, counters), so
// an application cannot implement a file system of its own in this
// version (docs/decisions/20261201_public_file_system.md).
#ifndef CAIRN_FILE_SYSTEM_H_
#define CAIRN_FILE_SYSTEM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cairn/options.h"

namespace cairn {

namespace io {
class FileSystem;
}  // namespace io
using FileSystem = io::FileSystem;

// A new, empty file system in memory ("/" exists). Files are gone with the
// last handle. Thread-safe; LockFile excludes other databases on the same
// instance only.
std::shared_ptr<FileSystem> NewMemoryFileSystem();

// The real file system on the chosen backend (what DB::Open uses when
// Options::file_system is null).
absl::StatusOr<std::shared_ptr<FileSystem>> NewDefaultFileSystem(
    IoBackendOption backend = IoBackendOption::kAuto);

// For tests: the names in dir (NotFound when it does not exist) and whether
// path exists, on any of these file systems.
absl::StatusOr<std::vector<std::string>> ListDirectory(FileSystem& fs, const std::string& dir);
bool PathExists(FileSystem& fs, const std::string& path);

}  // namespace cairn

#endif  // CAIRN_FILE_SYSTEM_H_
