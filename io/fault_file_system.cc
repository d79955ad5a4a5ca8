#include "io/fault_file_system.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "io/status_macros.h"

namespace cairn::io {

namespace {

constexpr char kTrashPrefix[] = ".fault_fs_trash.";

// SplitMix64: a tiny generator whose sequence depends only on the seed, so a
// crash seed replays the same image on every platform and library version.
uint64_t NextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string_view StripTrailingSlashes(std::string_view dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  return dir;
}

// The directory holding path, as SyncDir would name it.
std::string DirName(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

}  // namespace

absl::Status InjectedIoError(std::string_view context) {
  return absl::ErrnoToStatus(EIO, absl::StrCat("injected fault: ", std::string(context)));
}

absl::Status InjectedNoSpaceError(std::string_view context) {
  return absl::ErrnoToStatus(ENOSPC, absl::StrCat("injected fault: ", std::string(context)));
}

// The operations BeforeOp tells apart; Matches() sorts them into FaultKinds.
enum class fault_internal::Op : uint8_t {
  kAppend, kFlush, kSync, kClose, kSyncFiles, kRead,
  kOpenWritable, kOpenReadable, kRename, kLink, kRemove, kTruncate, kPunch, kGetSize,
  kListDir, kCreateDir, kRemoveDir, kSyncDir, kLock,
};

namespace {

using fault_internal::Op;

bool IsFileWrite(Op op) {
  return op == Op::kAppend || op == Op::kFlush || op == Op::kSync || op == Op::kClose ||
         op == Op::kSyncFiles;
}

bool Mutates(Op op) {
  switch (op) {
    case Op::kRead: case Op::kOpenReadable: case Op::kGetSize: case Op::kListDir:
    case Op::kLock:
      return false;
    default:
      return true;
  }
}

bool Matches(FaultKind kind, Op op) {
  switch (kind) {
    case FaultKind::kAnyWrite: return IsFileWrite(op);
    case FaultKind::kSync:
      return op == Op::kSync || op == Op::kSyncFiles || op == Op::kSyncDir;
    case FaultKind::kRead: return op == Op::kRead;
    case FaultKind::kAny: return true;
    case FaultKind::kShortWrite: return op == Op::kAppend;
    case FaultKind::kMetadata: return !IsFileWrite(op) && op != Op::kRead;
  }
  return false;
}

}  // namespace

// What a crash may lose of one file: bytes [synced_size, size).
struct FaultFileSystem::FileState {
  uint64_t size = 0;         // bytes appended through the wrapper (or found)
  uint64_t synced_size = 0;  // prefix covered by a successful sync
  uint64_t last_append_offset = 0;
  uint64_t last_append_len = 0;
};

// A create, rename or remove not yet made durable by SyncDir(dir).
struct FaultFileSystem::DirOp {
  enum class Type : uint8_t { kCreate, kRename, kRemove };
  Type type;
  std::string dir;
  std::string path;   // kCreate: the file; kRename: from; kRemove: the file
  std::string to;     // kRename only
  std::string trash;  // kRemove: the removed file; kRename: a replaced target
};

FaultFileSystem::FaultFileSystem(std::shared_ptr<FileSystem> base,
                                 FaultFileSystemOptions options)
    : base_(std::move(base)), options_(options) {}

FaultFileSystem::~FaultFileSystem() = default;

std::string FaultFileSystem::Name() const { return absl::StrCat("fault(", base_->Name(), ")"); }

void FaultFileSystem::FailAfter(uint64_t n_ops, absl::Status error, FaultKind kind,
                                bool persistent) {
  absl::MutexLock l(&mu_);
  fault_ = Fault{n_ops, std::move(error), kind, persistent, false};
}

void FaultFileSystem::ClearFaults() {
  absl::MutexLock l(&mu_);
  fault_.reset();
}

void FaultFileSystem::SetFilesystemActive(bool active) {
  absl::MutexLock l(&mu_);
  active_ = active;
}

uint64_t FaultFileSystem::ops_seen() const {
  absl::MutexLock l(&mu_);
  return ops_seen_;
}

uint64_t FaultFileSystem::faults_injected() const {
  absl::MutexLock l(&mu_);
  return faults_injected_;
}

uint64_t FaultFileSystem::generation() const {
  absl::MutexLock l(&mu_);
  return generation_;
}

absl::Status FaultFileSystem::BeforeOp(Op op, uint64_t generation, std::string_view path,
                                       bool* short_write) {
  absl::MutexLock l(&mu_);
  if (generation != generation_) {
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(path), ": file was open when the file system crashed"));
  }
  ++ops_seen_;
  if (!active_ && Mutates(op)) {
    return absl::UnavailableError(absl::StrCat(std::string(path), ": fault file system is inactive"));
  }
  if (!fault_.has_value() || !Matches(fault_->kind, op)) return absl::OkStatus();
  if (fault_->remaining > 0) {
    --fault_->remaining;
    return absl::OkStatus();
  }
  if (fault_->fired && !fault_->persistent) return absl::OkStatus();
  fault_->fired = true;
  ++faults_injected_;
  if (short_write != nullptr) *short_write = fault_->kind == FaultKind::kShortWrite;
  return fault_->error;
}

// ---------------------------------------------------------------- Writer

// Forwards to a base WritableFile and records appends and syncs in the
// file's FileState.
class FaultFileSystem::Writer : public WritableFile {
 public:
  Writer(FaultFileSystem* fs, std::string path, std::unique_ptr<WritableFile> base,
         std::shared_ptr<FileState> state, uint64_t generation)
      : fs_(fs), path_(std::move(path)), base_(std::move(base)), state_(std::move(state)),
        generation_(generation), size_(base_->Size()) {}

  ~Writer() override {
    absl::ReaderMutexLock crash_lock(&fs_->crash_mu_);
    // Closing hands every byte appended to the base, so the base holds
    // exactly what the FileState records (a crash decides what survives).
    if (base_ != nullptr) base_->Close().IgnoreError();
    absl::MutexLock l(&fs_->mu_);
    fs_->writers_.erase(this);
  }

  absl::Status Append(std::string_view data) override {
    absl::ReaderMutexLock crash_lock(&fs_->crash_mu_);
    bool short_write = false;
    absl::Status s = fs_->BeforeOp(Op::kAppend, generation_, path_, &short_write);
    if (!s.ok()) {
      if (short_write && base_ != nullptr) {
        ForwardAppend(data.substr(0, data.size() / 2)).IgnoreError();  // s reports it
      }
      return s;
    }
    CAIRN_RETURN_IF_ERROR(CheckOpen());
    return ForwardAppend(data);
  }

  absl::Status Flush() override {
    absl::ReaderMutexLock crash_lock(&fs_->crash_mu_);
    CAIRN_RETURN_IF_ERROR(fs_->BeforeOp(Op::kFlush, generation_, path_));
    CAIRN_RETURN_IF_ERROR(CheckOpen());
    return base_->Flush();
  }

  absl::Status Sync() override {
    absl::ReaderMutexLock crash_lock(&fs_->crash_mu_);
    CAIRN_RETURN_IF_ERROR(fs_->BeforeOp(Op::kSync, generation_, path_));
    CAIRN_RETURN_IF_ERROR(CheckOpen());
    CAIRN_RETURN_IF_ERROR(base_->Sync());
    MarkSynced(size_.load());
    return absl::OkStatus();
  }

  absl::Status Close() override {
    absl::ReaderMutexLock crash_lock(&fs_->crash_mu_);
    CAIRN_RETURN_IF_ERROR(fs_->BeforeOp(Op::kClose, generation_, path_));
    CAIRN_RETURN_IF_ERROR(CheckOpen());
    absl::Status s = base_->Close();
    base_.reset();
    return s;
  }

  // The two halves of Sync, forwarded so that the base's own (a ring's
  // linked write and fdatasync) runs; the bytes count as synced once
  // WaitSync succeeds.
  absl::Status StartSync() override {
    absl::ReaderMutexLock crash_lock(&fs_->crash_mu_);
    CAIRN_RETURN_IF_ERROR(fs_->BeforeOp(Op::kSync, generation_, path_));
    CAIRN_RETURN_IF_ERROR(CheckOpen());
    CAIRN_RETURN_IF_ERROR(base_->StartSync());
    sync_started_at_ = size_.load();
    return absl::OkStatus();
  }
  absl::Status WaitSync() override {
    absl::ReaderMutexLock crash_lock(&fs_->crash_mu_);
    CAIRN_RETURN_IF_ERROR(CheckOpen());
    CAIRN_RETURN_IF_ERROR(base_->WaitSync());
    MarkSynced(sync_started_at_);
    return absl::OkStatus();
  }

  uint64_t Size() const override { return size_.load(std::memory_order_relaxed); }
  const std::string& path() const override { return path_; }
  bool direct() const override {
    absl::ReaderMutexLock crash_lock(&fs_->crash_mu_);
    return base_ != nullptr && base_->direct();
  }

 private:
  friend class FaultFileSystem;

  absl::Status CheckOpen() const {
    if (base_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(path_, ": closed"));
    return absl::OkStatus();
  }

  absl::Status ForwardAppend(std::string_view data) {
    absl::Status s = base_->Append(data);
    const uint64_t before = size_.load();
    const uint64_t after = base_->Size();
    size_.store(after);
    absl::MutexLock l(&fs_->mu_);
    if (after > before) {
      state_->size = after;
      state_->last_append_offset = before;
      state_->last_append_len = after - before;
    }
    return s;
  }

  void MarkSynced(uint64_t size) {
    absl::MutexLock l(&fs_->mu_);
    if (size > state_->synced_size) state_->synced_size = size;
  }

  // Called by SimulateCrash with crash_mu_ held exclusively.
  absl::Status Abandon() {
    if (base_ == nullptr) return absl::OkStatus();
    absl::Status s = base_->Close();
    base_.reset();
    return s;
  }

  FaultFileSystem* const fs_;
  const std::string path_;
  std::unique_ptr<WritableFile> base_ ABSL_GUARDED_BY(fs_->crash_mu_);  // null once closed
  const std::shared_ptr<FileState> state_;
  const uint64_t generation_;
  std::atomic<uint64_t> size_;  // Size() may be read by any thread
  uint64_t sync_started_at_ = 0;  // Size() at the last StartSync
};

// ---------------------------------------------------------------- Reader

class FaultFileSystem::Reader : public RandomAccessFile {
 public:
  Reader(FaultFileSystem* fs, std::unique_ptr<RandomAccessFile> base, uint64_t generation)
      : fs_(fs), base_(std::move(base)), generation_(generation) {}

  absl::Status Read(uint64_t offset, size_t n, char* scratch,
                    std::string_view* result) const override {
    absl::ReaderMutexLock crash_lock(&fs_->crash_mu_);
    CAIRN_RETURN_IF_ERROR(fs_->BeforeOp(Op::kRead, generation_, base_->path()));
    return base_->Read(offset, n, scratch, result);
  }

  absl::Status MultiRead(absl::Span<ReadRequest> requests) const override {
    absl::ReaderMutexLock crash_lock(&fs_->crash_mu_);
    absl::Status s = fs_->BeforeOp(Op::kRead, generation_, base_->path());
    if (!s.ok()) {
      for (ReadRequest& r : requests) {
        r.result = 0;
        r.status = s;
      }
      return s;
    }
    return base_->MultiRead(requests);
  }

  absl::StatusOr<uint64_t> Size() const override { return base_->Size(); }
  const std::string& path() const override { return base_->path(); }
  size_t read_alignment() const override { return base_->read_alignment(); }

 private:
  FaultFileSystem* const fs_;
  const std::unique_ptr<RandomAccessFile> base_;
  const uint64_t generation_;
};

// ---------------------------------------------------------------- Lock

// A base lock that SimulateCrash can release, as a dying process would.
class FaultFileSystem::Lock : public FileLock {
 public:
  Lock(FaultFileSystem* fs, std::unique_ptr<FileLock> base) : fs_(fs), base_(std::move(base)) {}
  ~Lock() override {
    absl::ReaderMutexLock crash_lock(&fs_->crash_mu_);
    base_.reset();
    absl::MutexLock l(&fs_->mu_);
    fs_->locks_.erase(this);
  }

 private:
  friend class FaultFileSystem;
  FaultFileSystem* const fs_;
  std::unique_ptr<FileLock> base_ ABSL_GUARDED_BY(fs_->crash_mu_);
};

// ---------------------------------------------------------------- opening

std::shared_ptr<FaultFileSystem::FileState> FaultFileSystem::TrackNewFile(
    const std::string& path, uint64_t size) {
  auto state = std::make_shared<FileState>();
  state->size = size;
  state->synced_size = size;
  files_[path] = state;
  return state;
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultFileSystem::NewWritableFile(
    const std::string& path, const FileOptions& options) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kOpenWritable, generation(), path));
  const bool existed = base_->FileExists(path);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, base_->NewWritableFile(path, options));
  absl::MutexLock l(&mu_);
  std::shared_ptr<FileState> state = TrackNewFile(path, 0);
  if (!existed && options_.drop_unsynced_dir_entries) {
    pending_.push_back(DirOp{DirOp::Type::kCreate, DirName(path), path, "", ""});
  }
  auto writer = std::make_unique<Writer>(this, path, std::move(file), std::move(state), generation_);
  writers_.insert(writer.get());
  return writer;
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultFileSystem::ReopenWritableFile(
    const std::string& path, const FileOptions& options) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kOpenWritable, generation(), path));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                         base_->ReopenWritableFile(path, options));
  absl::MutexLock l(&mu_);
  const uint64_t size = file->Size();
  std::shared_ptr<FileState> state;
  auto it = files_.find(path);
  if (it == files_.end()) {
    state = TrackNewFile(path, size);  // found on disk: durable as it is
  } else {
    state = it->second;
    state->size = size;
    if (state->synced_size > size) state->synced_size = size;
  }
  auto writer = std::make_unique<Writer>(this, path, std::move(file), std::move(state), generation_);
  writers_.insert(writer.get());
  return writer;
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> FaultFileSystem::NewRandomAccessFile(
    const std::string& path, const FileOptions& options) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  const uint64_t gen = generation();
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kOpenReadable, gen, path));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                         base_->NewRandomAccessFile(path, options));
  return std::make_unique<Reader>(this, std::move(file), gen);
}

absl::StatusOr<std::unique_ptr<FileLock>> FaultFileSystem::LockFile(const std::string& path) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kLock, generation(), path));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> base_lock, base_->LockFile(path));
  auto lock = std::make_unique<Lock>(this, std::move(base_lock));
  absl::MutexLock l(&mu_);
  locks_.insert(lock.get());
  return lock;
}

absl::Status FaultFileSystem::SyncFiles(absl::Span<WritableFile* const> files) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kSyncFiles, generation(), "SyncFiles"));
  std::vector<Writer*> writers;
  std::vector<WritableFile*> bases;
  for (WritableFile* f : files) {
    auto* w = dynamic_cast<Writer*>(f);
    if (w == nullptr || w->fs_ != this) {
      return absl::InvalidArgumentError(
          absl::StrCat("SyncFiles: ", f == nullptr ? "null" : f->path(), " is not a file of ", Name()));
    }
    if (w->generation_ != generation()) {
      return absl::FailedPreconditionError(
          absl::StrCat(w->path_, ": file was open when the file system crashed"));
    }
    CAIRN_RETURN_IF_ERROR(w->CheckOpen());
    writers.push_back(w);
    bases.push_back(w->base_.get());
  }
  CAIRN_RETURN_IF_ERROR(base_->SyncFiles(bases));
  for (Writer* w : writers) w->MarkSynced(w->size_.load());
  return absl::OkStatus();
}

// ---------------------------------------------------------------- metadata

void FaultFileSystem::MoveState(const std::string& from, const std::string& to) {
  auto it = files_.find(from);
  if (it == files_.end()) {
    files_.erase(to);  // the target's old contents, if tracked, are gone
    return;
  }
  std::shared_ptr<FileState> state = std::move(it->second);
  files_.erase(it);
  files_[to] = std::move(state);
}

std::string FaultFileSystem::TrashPath(const std::string& path) {
  return JoinPath(DirName(path), absl::StrCat(kTrashPrefix, next_trash_++));
}

absl::Status FaultFileSystem::RenameFile(const std::string& from, const std::string& to) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kRename, generation(), to));
  absl::MutexLock l(&mu_);
  if (!options_.drop_unsynced_dir_entries) {
    CAIRN_RETURN_IF_ERROR(base_->RenameFile(from, to));
    MoveState(from, to);
    return absl::OkStatus();
  }
  // Keep a replaced target under a trash name so a crash can bring it back.
  std::string trash;
  if (from != to && base_->FileExists(from) && base_->FileExists(to)) {
    trash = TrashPath(to);
    CAIRN_RETURN_IF_ERROR(base_->RenameFile(to, trash));
    MoveState(to, trash);
  }
  absl::Status s = base_->RenameFile(from, to);
  if (!s.ok()) {
    if (!trash.empty() && base_->RenameFile(trash, to).ok()) MoveState(trash, to);
    return s;
  }
  MoveState(from, to);
  pending_.push_back(DirOp{DirOp::Type::kRename, DirName(to), from, to, std::move(trash)});
  return absl::OkStatus();
}

absl::Status FaultFileSystem::LinkFile(const std::string& from, const std::string& to) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kLink, generation(), to));
  CAIRN_RETURN_IF_ERROR(base_->LinkFile(from, to));
  absl::MutexLock l(&mu_);
  // The new name shares the file's bytes; what a crash keeps of them is
  // tracked once, under the name they were written through. The name itself
  // is a create that a SyncDir makes durable.
  if (options_.drop_unsynced_dir_entries) {
    pending_.push_back(DirOp{DirOp::Type::kCreate, DirName(to), to, "", ""});
  }
  return absl::OkStatus();
}

absl::Status FaultFileSystem::RemoveFile(const std::string& path) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kRemove, generation(), path));
  absl::MutexLock l(&mu_);
  if (!options_.drop_unsynced_dir_entries) {
    CAIRN_RETURN_IF_ERROR(base_->RemoveFile(path));
    files_.erase(path);
    return absl::OkStatus();
  }
  if (!base_->FileExists(path)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file to remove"));
  }
  std::string trash = TrashPath(path);
  CAIRN_RETURN_IF_ERROR(base_->RenameFile(path, trash));
  MoveState(path, trash);
  pending_.push_back(DirOp{DirOp::Type::kRemove, DirName(path), path, "", std::move(trash)});
  return absl::OkStatus();
}

absl::Status FaultFileSystem::TruncateFile(const std::string& path, uint64_t size) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kTruncate, generation(), path));
  CAIRN_RETURN_IF_ERROR(base_->TruncateFile(path, size));
  absl::MutexLock l(&mu_);
  auto it = files_.find(path);
  if (it != files_.end()) {
    FileState& state = *it->second;
    state.size = size;
    if (state.synced_size > size) state.synced_size = size;
    if (state.last_append_offset + state.last_append_len > size) state.last_append_len = 0;
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> FaultFileSystem::GetFileSize(const std::string& path) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kGetSize, generation(), path));
  return base_->GetFileSize(path);
}

absl::StatusOr<FileSystem::FileSpace> FaultFileSystem::GetFileSpace(const std::string& path) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kGetSize, generation(), path));
  return base_->GetFileSpace(path);
}

absl::StatusOr<std::unique_ptr<FileLock>> FaultFileSystem::LockFileShared(
    const std::string& path) {
  return base_->LockFileShared(path);
}

absl::StatusOr<bool> FaultFileSystem::LockFileHasReaders(const std::string& path) {
  return base_->LockFileHasReaders(path);
}

absl::Status FaultFileSystem::PunchHoles(const std::string& path,
                                         absl::Span<const std::pair<uint64_t, uint64_t>> ranges) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kPunch, generation(), path));
  return base_->PunchHoles(path, ranges);
}

absl::Status FaultFileSystem::OverwriteSynced(const std::string& path, uint64_t offset,
                                              std::string_view data) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  // Synced before it returns: a crash after it keeps the bytes, one in the
  // middle of it (the injected failure) leaves them as they were.
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kSync, generation(), path));
  return base_->OverwriteSynced(path, offset, data);
}

bool FaultFileSystem::FileExists(const std::string& path) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  return base_->FileExists(path);
}

absl::StatusOr<std::vector<std::string>> FaultFileSystem::ListDir(const std::string& dir) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kListDir, generation(), dir));
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, base_->ListDir(dir));
  std::erase_if(names, [](const std::string& n) { return absl::StartsWith(n, kTrashPrefix); });
  return names;
}

absl::Status FaultFileSystem::CreateDir(const std::string& dir) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kCreateDir, generation(), dir));
  return base_->CreateDir(dir);
}

absl::Status FaultFileSystem::RemoveDir(const std::string& dir) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kRemoveDir, generation(), dir));
  absl::MutexLock l(&mu_);
  // Removing the directory removes whatever waits in its trash.
  CAIRN_RETURN_IF_ERROR(CommitDirOps(StripTrailingSlashes(dir)));
  return base_->RemoveDir(dir);
}

absl::Status FaultFileSystem::SyncDir(const std::string& dir) {
  absl::ReaderMutexLock crash_lock(&crash_mu_);
  CAIRN_RETURN_IF_ERROR(BeforeOp(Op::kSyncDir, generation(), dir));
  absl::MutexLock l(&mu_);
  CAIRN_RETURN_IF_ERROR(base_->SyncDir(dir));
  return CommitDirOps(StripTrailingSlashes(dir));
}

absl::Status FaultFileSystem::CommitDirOps(std::string_view dir) {
  absl::Status first_error;
  std::vector<DirOp> still_pending;
  for (DirOp& op : pending_) {
    if (op.dir != dir) {
      still_pending.push_back(std::move(op));
      continue;
    }
    if (!op.trash.empty()) {
      absl::Status s = base_->RemoveFile(op.trash);
      if (first_error.ok()) first_error = s;
      files_.erase(op.trash);
    }
  }
  pending_ = std::move(still_pending);
  return first_error;
}

// ---------------------------------------------------------------- crash

absl::Status FaultFileSystem::CrashFile(const std::string& path, const FileState& state,
                                        CrashMode mode, uint64_t& rng) {
  absl::StatusOr<uint64_t> actual = base_->GetFileSize(path);
  if (absl::IsNotFound(actual.status())) return absl::OkStatus();  // gone behind our back
  CAIRN_RETURN_IF_ERROR(actual.status());
  const uint64_t size = std::min(state.size, *actual);
  const uint64_t synced = std::min(state.synced_size, size);
  if (size == synced) return absl::OkStatus();
  switch (mode) {
    case CrashMode::kDropUnsynced:
      return base_->TruncateFile(path, synced);
    case CrashMode::kKeepRandomPrefix:
      return base_->TruncateFile(path, synced + NextRandom(rng) % (size - synced + 1));
    case CrashMode::kPowerLoss: {
      // Half the time nothing unsynced survives; else a random number of
      // the unsynced pages, the cut on a page boundary or at the end.
      if (NextRandom(rng) % 2 == 0) return base_->TruncateFile(path, synced);
      const uint64_t first_boundary = (synced / kPowerLossPageSize + 1) * kPowerLossPageSize;
      const uint64_t pages =
          first_boundary >= size ? 0 : (size - first_boundary) / kPowerLossPageSize + 1;
      const uint64_t k = NextRandom(rng) % (pages + 2);  // 0: none; pages + 1: all
      const uint64_t cut =
          k == 0 ? synced : std::min(size, first_boundary + (k - 1) * kPowerLossPageSize);
      return base_->TruncateFile(path, cut);
    }
    case CrashMode::kTearLastWrite:
      break;
  }
  // Tear the last append where it is unsynced: keep k < len of its bytes and
  // replace the rest, so the file keeps its length but not its last record.
  const uint64_t start = std::max(state.last_append_offset, synced);
  const uint64_t end = std::min(state.last_append_offset + state.last_append_len, size);
  if (end <= start) return absl::OkStatus();
  const uint64_t keep = NextRandom(rng) % (end - start);
  const bool garbage = NextRandom(rng) % 2 == 1;
  std::string torn(end - start - keep, '\0');
  if (garbage) {
    for (char& c : torn) c = static_cast<char>(NextRandom(rng));
  }
  CAIRN_RETURN_IF_ERROR(base_->TruncateFile(path, start + keep));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                         base_->ReopenWritableFile(path, FileOptions{}));
  CAIRN_RETURN_IF_ERROR(file->Append(torn));
  return file->Close();
}

absl::Status FaultFileSystem::RevertDirOp(const DirOp& op) {
  switch (op.type) {
    case DirOp::Type::kCreate:
      if (!base_->FileExists(op.path)) return absl::OkStatus();
      return base_->RemoveFile(op.path);
    case DirOp::Type::kRename:
      CAIRN_RETURN_IF_ERROR(base_->RenameFile(op.to, op.path));
      if (op.trash.empty()) return absl::OkStatus();
      return base_->RenameFile(op.trash, op.to);
    case DirOp::Type::kRemove:
      return base_->RenameFile(op.trash, op.path);
  }
  return absl::InternalError("unknown directory operation");
}

absl::Status FaultFileSystem::SimulateCrash(CrashMode mode, uint64_t seed) {
  if (mode == CrashMode::kPowerLoss && !options_.drop_unsynced_dir_entries) {
    return absl::InvalidArgumentError(
        "CrashMode::kPowerLoss needs FaultFileSystemOptions::drop_unsynced_dir_entries");
  }
  absl::WriterMutexLock crash_lock(&crash_mu_);
  absl::MutexLock l(&mu_);
  absl::Status first_error;
  auto note = [&first_error](absl::Status s) {
    if (first_error.ok()) first_error = std::move(s);
  };
  // The dead process's open files: their bytes reach the base now, so that
  // nothing buffered is written after the image is made.
  for (Writer* w : writers_) note(w->Abandon());
  for (Lock* lock : locks_) lock->base_.reset();
  ++generation_;
  uint64_t rng = seed;
  for (const auto& [path, state] : files_) note(CrashFile(path, *state, mode, rng));
  // Undo, newest first, what no directory sync made durable.
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) note(RevertDirOp(*it));
  files_.clear();
  pending_.clear();
  active_ = true;
  return first_error;
}

}  // namespace cairn::io
