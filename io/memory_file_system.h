// MemoryFileSystem keeps every file and directory in memory, for tests. It
// follows the real backends' semantics: a file's size counts every appended
// byte, an open file survives rename and removal of its name (as an inode
// does), files live only in directories that exist ("/" always does), ListDir
// names direct children, a hard link shares the file's contents, a
// directory renames with everything in it, and LockFile excludes other holders in this
// instance. There is no buffering and no crash simulation: an appended byte
// is immediately readable. The fault-injecting wrapper does crashes.
//
// Paths are normalized lexically ("a//b/./c/" is "a/b/c").
//
// Thread safety: safe for concurrent use, including concurrent readers of one
// file; a WritableFile by one thread at a time.
#ifndef CAIRN_IO_MEMORY_FILE_SYSTEM_H_
#define CAIRN_IO_MEMORY_FILE_SYSTEM_H_

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "io/file_system.h"
#include "io/io_stats.h"

namespace cairn::io {

class MemoryFileSystem : public FileSystem {
 public:
  MemoryFileSystem();
  ~MemoryFileSystem() override;

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const FileOptions& options) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> ReopenWritableFile(
      const std::string& path, const FileOptions& options) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path, const FileOptions& options) override;

  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status LinkFile(const std::string& from, const std::string& to) override;
  absl::Status RemoveFile(const std::string& path) override;
  absl::Status TruncateFile(const std::string& path, uint64_t size) override;
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override;
  // Allocated bytes: the size less the whole 4 KiB blocks punched; links:
  // the names that share the file.
  absl::StatusOr<FileSpace> GetFileSpace(const std::string& path) override;
  // Zeroes each range and counts its whole 4 KiB blocks as punched (until
  // the file is truncated below them).
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
  absl::StatusOr<std::unique_ptr<FileLock>> LockFileShared(const std::string& path) override;
  absl::StatusOr<bool> LockFileHasReaders(const std::string& path) override;

  std::string Name() const override { return "memory"; }
  IoStats& stats() override { return *stats_; }

  // Test helpers, bypassing the counters. ReadFileToString returns a file's
  // whole contents (NotFound if missing); WriteFileFromString replaces them,
  // creating the file if its directory exists. Open files see the change, so
  // tests can corrupt bytes under a reader.
  absl::StatusOr<std::string> ReadFileToString(const std::string& path);
  absl::Status WriteFileFromString(const std::string& path, std::string_view contents);
  // Makes LinkFile answer Unimplemented, as across two real file systems,
  // so tests reach their callers' copy path.
  void SetLinksSupported(bool supported) { links_supported_.store(supported); }

  // The contents of one file; shared by its name and every open handle.
  struct FileData {
    mutable absl::Mutex mu;
    std::string contents ABSL_GUARDED_BY(mu);
    // Indexes of the 4 KiB blocks punched out (PunchHoles).
    absl::btree_set<uint64_t> punched_blocks ABSL_GUARDED_BY(mu);
  };
  // The set of held locks, shared with the FileLock objects so that a lock
  // may outlive the file system.
  struct LockSet {
    absl::Mutex mu;
    absl::flat_hash_set<std::string> paths ABSL_GUARDED_BY(mu);
    // Path -> LockFileShared holds.
    absl::flat_hash_map<std::string, int> readers ABSL_GUARDED_BY(mu);
  };

 private:
  // NotFound unless the parent directory of path exists.
  absl::Status CheckParentExists(const std::string& path) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool DirExists(const std::string& dir) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RenameFile of a directory (normalized paths), with everything under it.
  absl::Status RenameDir(const std::string& from, const std::string& to)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sorted names of the files and directories directly in dir.
  std::vector<std::string> Children(const std::string& dir) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<FileData> Find(const std::string& path) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Find for a path as the caller spelled it, under mu_; null when missing.
  std::shared_ptr<FileData> FindPath(const std::string& path) const ABSL_LOCKS_EXCLUDED(mu_);
  // The file at path, created empty if missing. truncate empties it.
  absl::StatusOr<std::shared_ptr<FileData>> OpenForWrite(const std::string& path, bool create,
                                                         bool truncate);

  std::atomic<bool> links_supported_{true};
  const std::shared_ptr<IoStats> stats_;
  const std::shared_ptr<LockSet> locks_;
  mutable absl::Mutex mu_;
  absl::btree_map<std::string, std::shared_ptr<FileData>> files_ ABSL_GUARDED_BY(mu_);
  absl::btree_set<std::string> dirs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn::io

#endif  // CAIRN_IO_MEMORY_FILE_SYSTEM_H_
