// FaultFileSystem wraps another FileSystem and remembers what a crash would
// lose: for each file written through it, the bytes appended and the prefix
// that a successful Sync or SyncFiles made durable; and, optionally, the
// creates, renames and removes that no SyncDir of their directory has made
// durable yet. SimulateCrash turns that record into a crash image in the base
// file system. It also injects errors (EIO, ENOSPC, short writes) into the
// n-th matching operation. It serves the crash and fault suites of
// docs/testing.md; production code never uses it.
//
// A crash cycle:
//   fs->SetFilesystemActive(false);  // the process is dead: mutations fail
//   db.reset();                      // the old DB's files close, no effect
//   CAIRN_RETURN_IF_ERROR(fs->SimulateCrash(CrashMode::kDropUnsynced, seed));
//   // reopen on fs (tracking starts afresh) or on the base; check the oracle
//
// Files that existed before the wrapper first wrote them are durable as they
// are. Bytes a crash keeps are exactly the bytes appended through the wrapper:
// SimulateCrash first closes every open base file so that nothing still
// buffered is written later.
//
// Thread safety: every method may be called concurrently; SimulateCrash waits
// for operations in flight. The FaultFileSystem must outlive its files.
#ifndef CAIRN_IO_FAULT_FILE_SYSTEM_H_
#define CAIRN_IO_FAULT_FILE_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "io/file_system.h"

namespace cairn::io {

namespace fault_internal {
enum class Op : uint8_t;  // the operations BeforeOp tells apart
}  // namespace fault_internal

enum class CrashMode : uint8_t {
  // Every file is cut back to its last synced size.
  kDropUnsynced = 0,
  // Every file keeps a random prefix (possibly none, possibly all) of its
  // unsynced bytes.
  kKeepRandomPrefix = 1,
  // Unsynced bytes are kept, except that the last unsynced append of each
  // file is torn: a random proper prefix of it survives and the rest of its
  // bytes are zeros or random garbage (chosen at random per file).
  kTearLastWrite = 2,
  // Power loss, as the page cache loses it: every file keeps its synced
  // prefix and, at random, none, some or all of the 4 KiB pages (by file
  // offset) of its unsynced bytes that the kernel might have written back
  // before the power failed, in file order (the last kept page may be the
  // file's partial tail). Pages written back out of order (a hole of
  // zeros before kept bytes) are not modelled. Pair it with
  // drop_unsynced_dir_entries, so that files whose creation or rename no
  // directory sync made durable are undone too; SimulateCrash refuses it
  // (InvalidArgument) otherwise.
  kPowerLoss = 3,
};

// The page size kPowerLoss keeps or drops unsynced bytes by.
inline constexpr uint64_t kPowerLossPageSize = 4096;

// Which operations a fault set by FailAfter counts and fails.
enum class FaultKind : uint8_t {
  kAnyWrite = 0,    // Append, Flush, Sync, Close of a WritableFile; SyncFiles
  kSync = 1,        // Sync, SyncFiles, SyncDir
  kRead = 2,        // Read, MultiRead
  kAny = 3,         // every operation that returns a status
  kShortWrite = 4,  // Append; a failing append hands the first half of its
                    // bytes to the base file, then returns the error
  kMetadata = 5,    // opening files, RenameFile, RemoveFile, TruncateFile,
                    // GetFileSize, ListDir, CreateDir, RemoveDir, SyncDir,
                    // LockFile
};

struct FaultFileSystemOptions {
  // LevelDB's model of directory durability: a create, rename or remove
  // becomes durable only when SyncDir of its directory (the target's, for a
  // rename) succeeds, and SimulateCrash undoes the rest, newest first: files
  // created since are deleted (even when their data was synced), renames are
  // reversed (a replaced target comes back) and removed files come back.
  // Removed and replaced files wait under hidden names (".fault_fs_trash.N",
  // left out of ListDir) until their directory is synced; RemoveDir deletes
  // those of the directory it removes.
  bool drop_unsynced_dir_entries = false;
};

// The statuses the real backends return for EIO and ENOSPC
// (absl::ErrnoToStatus; ENOSPC is ResourceExhausted).
absl::Status InjectedIoError(std::string_view context);
absl::Status InjectedNoSpaceError(std::string_view context);

class FaultFileSystem : public FileSystem {
 public:
  explicit FaultFileSystem(std::shared_ptr<FileSystem> base,
                           FaultFileSystemOptions options = {});
  ~FaultFileSystem() override;

  FaultFileSystem(const FaultFileSystem&) = delete;
  FaultFileSystem& operator=(const FaultFileSystem&) = delete;

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const FileOptions& options) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> ReopenWritableFile(
      const std::string& path, const FileOptions& options) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path, const FileOptions& options) override;
  // Every file must come from this FaultFileSystem (else InvalidArgument).
  // The base syncs them together; on success each counts as synced.
  absl::Status SyncFiles(absl::Span<WritableFile* const> files) override;
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status LinkFile(const std::string& from, const std::string& to) override;
  absl::Status RemoveFile(const std::string& path) override;
  absl::Status TruncateFile(const std::string& path, uint64_t size) override;
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override;
  absl::StatusOr<FileSpace> GetFileSpace(const std::string& path) override;
  // Passed to the base as they are (a crash does not release a reader's
  // hold: it belongs to another process's view).
  absl::StatusOr<std::unique_ptr<FileLock>> LockFileShared(const std::string& path) override;
  absl::StatusOr<bool> LockFileHasReaders(const std::string& path) override;
  // A metadata operation (kMetadata faults). A crash keeps what it punched:
  // the worst case, as a file system may or may not have made it durable.
  absl::Status OverwriteSynced(const std::string& path, uint64_t offset,
                               std::string_view data) override;
  absl::Status PunchHoles(const std::string& path,
                          absl::Span<const std::pair<uint64_t, uint64_t>> ranges) override;
  bool FileExists(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override;
  absl::Status CreateDir(const std::string& dir) override;
  absl::Status RemoveDir(const std::string& dir) override;
  absl::Status SyncDir(const std::string& dir) override;
  absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
  // "fault(" + the base's name + ")".
  std::string Name() const override;
  // The base's counters.
  IoStats& stats() override { return base_->stats(); }

  // Produces the crash image of mode in the base file system, with seed
  // choosing every random cut. Then: every file and lock opened here before
  // the call is dead (locks released; file operations fail with
  // FailedPrecondition), tracking restarts with every file durable as it now
  // is, and the file system is active again. Faults set by FailAfter stay.
  // Returns the first error of the base while making the image (after
  // trying every file).
  absl::Status SimulateCrash(CrashMode mode, uint64_t seed);

  // After n_ops more operations matching kind, the next matching operation
  // fails with error, without reaching the base (a short write reaches it in
  // part). persistent: every matching operation after that fails too; else
  // only the one. Replaces any earlier fault. REQUIRES: !error.ok().
  void FailAfter(uint64_t n_ops, absl::Status error, FaultKind kind, bool persistent);
  void ClearFaults();

  // Inactive: every mutating operation (writes, syncs, opening files for
  // writing, renames, removes, truncates, directory changes) fails with
  // Unavailable and changes nothing, as if the machine had died. Reads work.
  void SetFilesystemActive(bool active);

  // Operations seen (every operation that returns a status, on the file
  // system or its files, except those on dead files) and faults injected.
  uint64_t ops_seen() const;
  uint64_t faults_injected() const;

  FileSystem* base() const { return base_.get(); }

 private:
  class Writer;
  class Reader;
  class Lock;
  struct FileState;
  struct DirOp;
  using Op = fault_internal::Op;
  struct Fault {
    uint64_t remaining = 0;
    absl::Status error;
    FaultKind kind = FaultKind::kAny;
    bool persistent = false;
    bool fired = false;
  };

  // Counts op and decides its fate: FailedPrecondition when the file's
  // generation is dead, Unavailable when inactive and op mutates, the
  // injected error when the fault fires (*short_write set for a short
  // write), else OK.
  absl::Status BeforeOp(Op op, uint64_t generation, std::string_view path,
                        bool* short_write = nullptr) ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<FileState> TrackNewFile(const std::string& path, uint64_t size)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MoveState(const std::string& from, const std::string& to)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string TrashPath(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes the pending directory operations of dir durable, deleting their
  // trash. Returns the first error of the base.
  absl::Status CommitDirOps(std::string_view dir) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CrashFile(const std::string& path, const FileState& state,
                         CrashMode mode, uint64_t& rng_state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RevertDirOp(const DirOp& op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t generation() const ABSL_LOCKS_EXCLUDED(mu_);

  const std::shared_ptr<FileSystem> base_;
  const FaultFileSystemOptions options_;

  // Held shared by every operation while it uses the base, exclusively by
  // SimulateCrash, so that no base file changes under the crash image. It
  // also guards each Writer's and Lock's base object.
  mutable absl::Mutex crash_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // Guards the bookkeeping below; held across base calls only by directory
  // operations, so that the order of pending_ matches the base's.
  mutable absl::Mutex mu_;
  // Files written through this wrapper, by their current base path.
  absl::btree_map<std::string, std::shared_ptr<FileState>> files_ ABSL_GUARDED_BY(mu_);
  std::vector<DirOp> pending_ ABSL_GUARDED_BY(mu_);  // oldest first
  absl::flat_hash_set<Writer*> writers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<Lock*> locks_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_trash_ ABSL_GUARDED_BY(mu_) = 0;
  bool active_ ABSL_GUARDED_BY(mu_) = true;
  std::optional<Fault> fault_ ABSL_GUARDED_BY(mu_);
  uint64_t ops_seen_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t faults_injected_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cairn::io

#endif  // CAIRN_IO_FAULT_FILE_SYSTEM_H_
