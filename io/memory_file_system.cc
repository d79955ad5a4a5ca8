#include "io/memory_file_system.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "io/status_macros.h"

namespace cairn::io {
namespace {

// The block a punched hole frees whole (as ext4's).
constexpr uint64_t kPunchBlock = 4096;

using FileData = MemoryFileSystem::FileData;

// "a//b/./c/" -> "a/b/c"; "" and "." -> "" (the working directory).
std::string Normalize(std::string_view path) {
  std::string p = std::filesystem::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (p == ".") p.clear();
  return p;
}

std::string ParentOf(const std::string& normalized) {
  std::string parent = std::filesystem::path(normalized).parent_path().string();
  return parent == "." ? std::string() : parent;
}

class MemoryWritableFile : public WritableFile {
 public:
  MemoryWritableFile(std::shared_ptr<FileData> data, std::string path, IoCategory category,
                     std::shared_ptr<IoStats> stats, uint64_t size)
      : data_(std::move(data)),
        path_(std::move(path)),
        category_(category),
        stats_(std::move(stats)),
        size_(size) {}

  absl::Status Append(std::string_view data) override {
    if (closed_) return absl::FailedPreconditionError(absl::StrCat("append to closed ", path_));
    const uint64_t offset = size_.load(std::memory_order_relaxed);
    {
      absl::MutexLock l(&data_->mu);
      std::string& c = data_->contents;
      // Writes at this handle's offset, like pwrite: a file truncated under
      // the writer grows back with zeros.
      if (c.size() < offset) c.resize(offset, '\0');
      c.replace(offset, data.size(), data);
    }
    size_.store(offset + data.size(), std::memory_order_relaxed);
    stats_->AddWrite(category_, data.size());
    return absl::OkStatus();
  }
  absl::Status Flush() override {
    if (closed_) return absl::FailedPreconditionError(absl::StrCat("flush of closed ", path_));
    return absl::OkStatus();
  }
  absl::Status Sync() override {
    CAIRN_RETURN_IF_ERROR(Flush());
    stats_->AddSync(category_);
    return absl::OkStatus();
  }
  absl::Status Close() override {
    closed_ = true;
    return absl::OkStatus();
  }
  uint64_t Size() const override { return size_.load(std::memory_order_relaxed); }
  const std::string& path() const override { return path_; }

 private:
  const std::shared_ptr<FileData> data_;
  const std::string path_;
  const IoCategory category_;
  const std::shared_ptr<IoStats> stats_;
  std::atomic<uint64_t> size_;
  bool closed_ = false;
};

class MemoryRandomAccessFile : public RandomAccessFile {
 public:
  MemoryRandomAccessFile(std::shared_ptr<FileData> data, std::string path, IoCategory category,
                         std::shared_ptr<IoStats> stats)
      : data_(std::move(data)),
        path_(std::move(path)),
        category_(category),
        stats_(std::move(stats)) {}

  absl::Status Read(uint64_t offset, size_t n, char* scratch,
                    std::string_view* result) const override {
    size_t got = 0;
    {
      absl::ReaderMutexLock l(&data_->mu);
      const std::string& c = data_->contents;
      if (offset < c.size()) {
        got = std::min<uint64_t>(n, c.size() - offset);
        std::memcpy(scratch, c.data() + offset, got);
      }
    }
    stats_->AddRead(category_, got);
    *result = std::string_view(scratch, got);
    return absl::OkStatus();
  }
  absl::Status MultiRead(absl::Span<ReadRequest> requests) const override {
    for (ReadRequest& req : requests) {
      std::string_view got;
      req.status = Read(req.offset, req.len, req.buf, &got);
      req.result = got.size();
    }
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> Size() const override {
    absl::ReaderMutexLock l(&data_->mu);
    return data_->contents.size();
  }
  const std::string& path() const override { return path_; }

 private:
  const std::shared_ptr<FileData> data_;
  const std::string path_;
  const IoCategory category_;
  const std::shared_ptr<IoStats> stats_;
};

class MemoryFileLock : public FileLock {
 public:
  MemoryFileLock(std::shared_ptr<MemoryFileSystem::LockSet> locks, std::string key)
      : locks_(std::move(locks)), key_(std::move(key)) {}
  ~MemoryFileLock() override {
    absl::MutexLock l(&locks_->mu);
    locks_->paths.erase(key_);
  }

 private:
  const std::shared_ptr<MemoryFileSystem::LockSet> locks_;
  const std::string key_;
};

// A LockFileShared hold: one count of its path's readers.
class MemorySharedLock : public FileLock {
 public:
  MemorySharedLock(std::shared_ptr<MemoryFileSystem::LockSet> locks, std::string key)
      : locks_(std::move(locks)), key_(std::move(key)) {}
  ~MemorySharedLock() override {
    absl::MutexLock l(&locks_->mu);
    if (--locks_->readers[key_] == 0) locks_->readers.erase(key_);
  }

 private:
  const std::shared_ptr<MemoryFileSystem::LockSet> locks_;
  const std::string key_;
};

}  // namespace

MemoryFileSystem::MemoryFileSystem()
    : stats_(std::make_shared<IoStats>()), locks_(std::make_shared<LockSet>()) {}
MemoryFileSystem::~MemoryFileSystem() = default;

bool MemoryFileSystem::DirExists(const std::string& dir) const {
  return dir.empty() || dir == "/" || dirs_.contains(dir);
}

absl::Status MemoryFileSystem::CheckParentExists(const std::string& path) const {
  if (!DirExists(ParentOf(path))) {
    return absl::NotFoundError(absl::StrCat(path, ": no such directory ", ParentOf(path)));
  }
  return absl::OkStatus();
}

std::vector<std::string> MemoryFileSystem::Children(const std::string& dir) const {
  std::vector<std::string> names;
  auto add = [&](const std::string& p) {
    if (p != dir && ParentOf(p) == dir) {
      names.push_back(std::filesystem::path(p).filename().string());
    }
  };
  for (const auto& [p, data] : files_) add(p);
  for (const std::string& p : dirs_) add(p);
  std::sort(names.begin(), names.end());
  return names;
}

std::shared_ptr<FileData> MemoryFileSystem::Find(const std::string& path) const {
  auto it = files_.find(path);
  return it == files_.end() ? nullptr : it->second;
}

std::shared_ptr<FileData> MemoryFileSystem::FindPath(const std::string& path) const {
  const std::string normalized = Normalize(path);
  absl::MutexLock l(&mu_);
  return Find(normalized);
}

absl::StatusOr<std::shared_ptr<FileData>> MemoryFileSystem::OpenForWrite(const std::string& path,
                                                                         bool create,
                                                                         bool truncate) {
  absl::MutexLock l(&mu_);
  std::shared_ptr<FileData> data = Find(path);
  if (data == nullptr) {
    if (!create) return absl::NotFoundError(absl::StrCat("open ", path, ": no such file"));
    if (dirs_.contains(path)) {
      return absl::FailedPreconditionError(absl::StrCat("open ", path, ": is a directory"));
    }
    CAIRN_RETURN_IF_ERROR(CheckParentExists(path));
    data = std::make_shared<FileData>();
    files_[path] = data;
  } else if (truncate) {
    // Same file object: open readers see the truncation, as with O_TRUNC.
    absl::MutexLock dl(&data->mu);
    data->contents.clear();
  }
  return data;
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemoryFileSystem::NewWritableFile(
    const std::string& path, const FileOptions& options) {
  const std::string p = Normalize(path);
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<FileData> data, OpenForWrite(p, true, true));
  return std::make_unique<MemoryWritableFile>(std::move(data), path, options.category, stats_, 0);
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemoryFileSystem::ReopenWritableFile(
    const std::string& path, const FileOptions& options) {
  const std::string p = Normalize(path);
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<FileData> data, OpenForWrite(p, false, false));
  uint64_t size;
  {
    absl::ReaderMutexLock l(&data->mu);
    size = data->contents.size();
  }
  return std::make_unique<MemoryWritableFile>(std::move(data), path, options.category, stats_,
                                              size);
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> MemoryFileSystem::NewRandomAccessFile(
    const std::string& path, const FileOptions& options) {
  std::shared_ptr<FileData> data = FindPath(path);
  if (data == nullptr) return absl::NotFoundError(absl::StrCat("open ", path, ": no such file"));
  return std::make_unique<MemoryRandomAccessFile>(std::move(data), path, options.category, stats_);
}

absl::Status MemoryFileSystem::RenameFile(const std::string& from, const std::string& to) {
  const std::string f = Normalize(from);
  const std::string t = Normalize(to);
  absl::MutexLock l(&mu_);
  if (dirs_.contains(f)) return RenameDir(f, t);
  auto it = files_.find(f);
  if (it == files_.end()) {
    return absl::NotFoundError(absl::StrCat("rename ", from, " to ", to, ": no such file"));
  }
  CAIRN_RETURN_IF_ERROR(CheckParentExists(t));
  if (dirs_.contains(t)) {
    return absl::FailedPreconditionError(
        absl::StrCat("rename ", from, " to ", to, ": target is a directory"));
  }
  if (f == t) return absl::OkStatus();
  std::shared_ptr<FileData> data = std::move(it->second);
  files_.erase(it);
  files_[t] = std::move(data);  // Replaces an existing target, as rename(2) does.
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::RenameDir(const std::string& from, const std::string& to) {
  if (from == "/" || absl::StartsWith(to, absl::StrCat(from, "/"))) {
    return absl::InvalidArgumentError(
        absl::StrCat("rename ", from, " to ", to, ": a directory cannot move into itself"));
  }
  CAIRN_RETURN_IF_ERROR(CheckParentExists(to));
  if (dirs_.contains(to) || files_.contains(to)) {
    // rename(2) would replace an empty directory; nothing here needs that.
    return absl::AlreadyExistsError(absl::StrCat("rename ", from, " to ", to, ": target exists"));
  }
  const std::string prefix = absl::StrCat(from, "/");
  auto moved = [&](const std::string& path) {
    return absl::StrCat(to, path.substr(from.size()));
  };
  std::vector<std::string> dirs = {from};
  for (auto it = dirs_.lower_bound(prefix); it != dirs_.end() && absl::StartsWith(*it, prefix);
       ++it) {
    dirs.push_back(*it);
  }
  for (const std::string& d : dirs) {
    dirs_.erase(d);
    dirs_.insert(moved(d));
  }
  std::vector<std::string> files;
  for (auto it = files_.lower_bound(prefix); it != files_.end() && absl::StartsWith(it->first, prefix);
       ++it) {
    files.push_back(it->first);
  }
  for (const std::string& f : files) {
    auto node = files_.extract(f);
    node.key() = moved(f);
    files_.insert(std::move(node));
  }
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::LinkFile(const std::string& from, const std::string& to) {
  if (!links_supported_.load()) {
    return absl::UnimplementedError(
        absl::StrCat("link ", from, " to ", to, ": links are turned off (copy instead)"));
  }
  const std::string f = Normalize(from);
  const std::string t = Normalize(to);
  absl::MutexLock l(&mu_);
  auto it = files_.find(f);
  if (it == files_.end()) {
    return absl::NotFoundError(absl::StrCat("link ", from, " to ", to, ": no such file"));
  }
  CAIRN_RETURN_IF_ERROR(CheckParentExists(t));
  if (files_.contains(t) || dirs_.contains(t)) {
    return absl::AlreadyExistsError(absl::StrCat("link ", from, " to ", to, ": target exists"));
  }
  std::shared_ptr<FileData> data = it->second;  // Inserting below moves btree nodes.
  files_[t] = std::move(data);  // Both names share the contents, as an inode.
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::RemoveFile(const std::string& path) {
  absl::MutexLock l(&mu_);
  if (files_.erase(Normalize(path)) == 0) {
    return absl::NotFoundError(absl::StrCat("unlink ", path, ": no such file"));
  }
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::TruncateFile(const std::string& path, uint64_t size) {
  std::shared_ptr<FileData> data = FindPath(path);
  if (data == nullptr) {
    return absl::NotFoundError(absl::StrCat("truncate ", path, ": no such file"));
  }
  absl::MutexLock l(&data->mu);
  data->contents.resize(size, '\0');
  data->punched_blocks.erase(data->punched_blocks.lower_bound(size / kPunchBlock),
                             data->punched_blocks.end());
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::OverwriteSynced(const std::string& path, uint64_t offset,
                                               std::string_view data) {
  std::shared_ptr<FileData> file = FindPath(path);
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("overwrite ", path, ": no such file"));
  }
  absl::MutexLock l(&file->mu);
  if (offset + data.size() > file->contents.size()) {
    return absl::OutOfRangeError(absl::StrCat("overwrite ", path, " at ", offset, ": ", data.size(),
                                              " bytes past its end (", file->contents.size(),
                                              " bytes)"));
  }
  file->contents.replace(offset, data.size(), data);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> MemoryFileSystem::GetFileSize(const std::string& path) {
  std::shared_ptr<FileData> data = FindPath(path);
  if (data == nullptr) return absl::NotFoundError(absl::StrCat("stat ", path, ": no such file"));
  absl::ReaderMutexLock l(&data->mu);
  return data->contents.size();
}

absl::StatusOr<FileSystem::FileSpace> MemoryFileSystem::GetFileSpace(const std::string& path) {
  std::shared_ptr<FileData> data;
  uint64_t links = 0;
  {
    absl::MutexLock l(&mu_);
    data = Find(Normalize(path));
    for (const auto& [name, other] : files_) links += other == data ? 1 : 0;
  }
  if (data == nullptr) return absl::NotFoundError(absl::StrCat("stat ", path, ": no such file"));
  absl::ReaderMutexLock l(&data->mu);
  const uint64_t punched = data->punched_blocks.size() * kPunchBlock;
  const uint64_t size = data->contents.size();
  return FileSpace{.allocated_bytes = size - std::min(size, punched), .links = links};
}

absl::Status MemoryFileSystem::PunchHoles(const std::string& path,
                                          absl::Span<const std::pair<uint64_t, uint64_t>> ranges) {
  std::shared_ptr<FileData> data = FindPath(path);
  if (data == nullptr) {
    return absl::NotFoundError(absl::StrCat("punch holes in ", path, ": no such file"));
  }
  absl::MutexLock l(&data->mu);
  const uint64_t size = data->contents.size();
  for (const auto& [offset, length] : ranges) {
    const uint64_t begin = std::min(offset, size);
    const uint64_t end = std::min(offset + length, size);
    std::fill(data->contents.begin() + static_cast<ptrdiff_t>(begin),
              data->contents.begin() + static_cast<ptrdiff_t>(end), '\0');
    for (uint64_t b = (begin + kPunchBlock - 1) / kPunchBlock; (b + 1) * kPunchBlock <= end; ++b) {
      data->punched_blocks.insert(b);
    }
  }
  return absl::OkStatus();
}

bool MemoryFileSystem::FileExists(const std::string& path) {
  const std::string p = Normalize(path);
  absl::MutexLock l(&mu_);
  return files_.contains(p) || DirExists(p);
}

absl::StatusOr<std::vector<std::string>> MemoryFileSystem::ListDir(const std::string& dir) {
  const std::string d = Normalize(dir);
  absl::MutexLock l(&mu_);
  if (!DirExists(d)) {
    return absl::NotFoundError(absl::StrCat("opendir ", dir, ": no such directory"));
  }
  return Children(d);
}

absl::Status MemoryFileSystem::CreateDir(const std::string& dir) {
  const std::string d = Normalize(dir);
  absl::MutexLock l(&mu_);
  if (DirExists(d)) return absl::OkStatus();
  if (files_.contains(d)) {
    return absl::AlreadyExistsError(absl::StrCat("mkdir ", dir, ": a file exists"));
  }
  CAIRN_RETURN_IF_ERROR(CheckParentExists(d));
  dirs_.insert(d);
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::RemoveDir(const std::string& dir) {
  const std::string d = Normalize(dir);
  absl::MutexLock l(&mu_);
  if (!dirs_.contains(d)) {
    return absl::NotFoundError(absl::StrCat("rmdir ", dir, ": no such directory"));
  }
  if (!Children(d).empty()) {
    return absl::FailedPreconditionError(absl::StrCat("rmdir ", dir, ": directory not empty"));
  }
  dirs_.erase(d);
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::SyncDir(const std::string& dir) {
  absl::MutexLock l(&mu_);
  if (!DirExists(Normalize(dir))) {
    return absl::NotFoundError(absl::StrCat("open dir ", dir, ": no such directory"));
  }
  stats_->AddSync(IoCategory::kOther);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FileLock>> MemoryFileSystem::LockFile(const std::string& path) {
  const std::string p = Normalize(path);
  CAIRN_RETURN_IF_ERROR(OpenForWrite(p, true, false).status());
  absl::MutexLock l(&locks_->mu);
  if (!locks_->paths.insert(p).second) {
    return absl::FailedPreconditionError(absl::StrCat("lock ", path, " is already held"));
  }
  return std::make_unique<MemoryFileLock>(locks_, p);
}

absl::StatusOr<std::unique_ptr<FileLock>> MemoryFileSystem::LockFileShared(
    const std::string& path) {
  const std::string p = Normalize(path);
  if (!FileExists(p)) {
    return absl::NotFoundError(absl::StrCat("shared lock on ", path, ": no such file"));
  }
  absl::MutexLock l(&locks_->mu);
  ++locks_->readers[p];
  return std::make_unique<MemorySharedLock>(locks_, p);
}

absl::StatusOr<bool> MemoryFileSystem::LockFileHasReaders(const std::string& path) {
  absl::MutexLock l(&locks_->mu);
  return locks_->readers.contains(Normalize(path));
}

absl::StatusOr<std::string> MemoryFileSystem::ReadFileToString(const std::string& path) {
  std::shared_ptr<FileData> data = FindPath(path);
  if (data == nullptr) return absl::NotFoundError(absl::StrCat("read ", path, ": no such file"));
  absl::ReaderMutexLock l(&data->mu);
  return data->contents;
}

absl::Status MemoryFileSystem::WriteFileFromString(const std::string& path,
                                                   std::string_view contents) {
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<FileData> data,
                         OpenForWrite(Normalize(path), true, false));
  absl::MutexLock l(&data->mu);
  data->contents.assign(contents);
  return absl::OkStatus();
}

}  // namespace cairn::io
