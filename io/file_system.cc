#include "io/file_system.h"

#include "absl/container/flat_hash_map.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "io/posix_file_system.h"
#include "io/ring.h"
#include "io/status_macros.h"
#include "io/uring_file_system.h"

namespace cairn::io {

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string path(dir);
  if (!path.empty() && path.back() != '/') path += '/';
  path.append(name);
  return path;
}

absl::Status FileSystem::MultiReadFiles(absl::Span<const FileReadRequest> requests) {
  // Group by file, keeping each file's requests in order.
  absl::flat_hash_map<const RandomAccessFile*, std::vector<size_t>> by_file;
  std::vector<const RandomAccessFile*> order;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto [it, inserted] = by_file.try_emplace(requests[i].file);
    if (inserted) order.push_back(requests[i].file);
    it->second.push_back(i);
  }
  absl::Status first;
  std::vector<ReadRequest> batch;
  for (const RandomAccessFile* file : order) {
    const std::vector<size_t>& idx = by_file[file];
    batch.clear();
    for (size_t i : idx) batch.push_back(std::move(*requests[i].request));
    absl::Status s = file->MultiRead(absl::MakeSpan(batch));
    if (first.ok() && !s.ok()) first = s;
    for (size_t j = 0; j < idx.size(); ++j) *requests[idx[j]].request = std::move(batch[j]);
  }
  return first;
}

namespace {

// The ReadQueue of backends without a ring: submitted requests wait until
// their owner asks for one of them, and are then read together as one batch.
class BatchReadQueue final : public ReadQueue {
 public:
  explicit BatchReadQueue(FileSystem* fs) : fs_(fs) {}

  void Submit(absl::Span<const FileReadRequest> requests) override {
    pending_.insert(pending_.end(), requests.begin(), requests.end());
  }
  void Wait(ReadRequest* request) override { Poll(request); }
  bool Poll(ReadRequest* request) override {
    for (const FileReadRequest& r : pending_) {
      if (r.request != request) continue;
      // Each request carries its own status; the aggregate adds nothing.
      fs_->MultiReadFiles(pending_).IgnoreError();
      pending_.clear();
      break;
    }
    return true;
  }
  void Forget(ReadRequest* request) override {
    std::erase_if(pending_, [request](const FileReadRequest& r) { return r.request == request; });
  }
  size_t in_flight() const override { return pending_.size(); }

 private:
  FileSystem* const fs_;
  std::vector<FileReadRequest> pending_;
};

}  // namespace

std::unique_ptr<ReadQueue> FileSystem::NewReadQueue() {
  return std::make_unique<BatchReadQueue>(this);
}

absl::Status WritableFile::AppendParts(absl::Span<const std::string_view> parts) {
  for (std::string_view part : parts) {
    absl::Status s = Append(part);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status FileSystem::SyncFiles(absl::Span<WritableFile* const> files) {
  absl::Status first;
  for (WritableFile* f : files) {
    absl::Status s = f->Sync();
    if (first.ok()) first = s;
  }
  return first;
}

absl::StatusOr<FileSystem::FileSpace> FileSystem::GetFileSpace(const std::string& path) {
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, GetFileSize(path));
  return FileSpace{.allocated_bytes = size, .links = 1};
}

absl::Status FileSystem::PunchHoles(const std::string& path,
                                    absl::Span<const std::pair<uint64_t, uint64_t>>) {
  return absl::UnimplementedError(
      absl::StrCat("punch holes in ", path, ": the ", Name(), " file system cannot"));
}

absl::Status FileSystem::OverwriteSynced(const std::string& path, uint64_t, std::string_view) {
  return absl::UnimplementedError(
      absl::StrCat("overwrite bytes of ", path, ": the ", Name(), " file system cannot"));
}

absl::StatusOr<std::unique_ptr<FileLock>> FileSystem::LockFileShared(const std::string& path) {
  return absl::UnimplementedError(
      absl::StrCat("shared lock on ", path, ": the ", Name(), " file system cannot"));
}

absl::StatusOr<bool> FileSystem::LockFileHasReaders(const std::string&) { return false; }

namespace {

absl::StatusOr<IoBackend> BackendFromEnv(IoBackend fallback) {
  const char* env = std::getenv("CAIRN_IO");
  if (env == nullptr || *env == '\0') return fallback;
  const std::string v = absl::AsciiStrToLower(env);
  if (v == "uring" || v == "io_uring") return IoBackend::kUring;
  if (v == "posix") return IoBackend::kPosix;
  if (v == "auto") return IoBackend::kAuto;
  return absl::InvalidArgumentError(
      absl::StrCat("CAIRN_IO=", env, ": expected uring, posix or auto"));
}

void LogFallbackOnce(const absl::Status& why) {
  static std::atomic<bool> logged{false};
  if (logged.exchange(true)) return;
  std::fprintf(stderr, "cairn: io_uring unavailable (%s); using the POSIX backend\n",
               why.ToString().c_str());
}

}  // namespace

absl::StatusOr<std::shared_ptr<FileSystem>> NewFileSystem(IoBackend backend) {
  CAIRN_ASSIGN_OR_RETURN(backend, BackendFromEnv(backend));
  if (backend == IoBackend::kPosix) return std::make_shared<PosixFileSystem>();
  // Both kUring and kAuto fall back: the engine must open without io_uring.
  absl::Status probe = Ring::Probe();
  if (!probe.ok()) {
    LogFallbackOnce(probe);
    return std::make_shared<PosixFileSystem>();
  }
  return std::make_shared<UringFileSystem>();
}

absl::StatusOr<std::string> ReadFileToString(FileSystem* fs, const std::string& path,
                                             IoCategory category) {
  FileOptions options;
  options.category = category;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                         fs->NewRandomAccessFile(path, options));
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  std::string contents(size, '\0');
  std::string_view got;
  CAIRN_RETURN_IF_ERROR(file->Read(0, size, contents.data(), &got));
  contents.resize(got.size());
  return contents;
}

absl::Status WriteStringToFile(FileSystem* fs, const std::string& path, std::string_view contents,
                               bool sync, IoCategory category) {
  FileOptions options;
  options.category = category;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs->NewWritableFile(path, options));
  CAIRN_RETURN_IF_ERROR(file->Append(contents));
  if (sync) CAIRN_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

}  // namespace cairn::io
