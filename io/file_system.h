// FileSystem is the only way cairn touches files. Backends: io_uring
// (uring_file_system.cc), POSIX (posix_file_system.cc), in-memory
// (memory_file_system.cc, for tests) and a fault-injecting wrapper
// (fault_file_system.h, for crash and error tests).
//
// Errors: syscall and CQE failures map through absl::ErrnoToStatus, with the
// path in the message; ENOSPC becomes ResourceExhausted; NotFound when a file
// that must exist does not. Short reads at end of file are not errors: Read
// returns fewer bytes.
//
// Thread safety: a FileSystem and a RandomAccessFile may be used from many
// threads at once; a WritableFile by one thread at a time.
#ifndef CAIRN_IO_FILE_SYSTEM_H_
#define CAIRN_IO_FILE_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "io/io_stats.h"

namespace cairn::io {

// Alignment of O_DIRECT buffers, and of the offsets and lengths of O_DIRECT
// writes. Reads align to their file's own granularity
// (RandomAccessFile::read_alignment), which divides it.
inline constexpr size_t kDirectIoAlignment = 4096;
// FileOptions::writeback_bytes leaves this many bytes at the end of the file
// out of each writeback it starts: a page under writeback makes the next
// write to it wait (stable pages), and the last pages are the ones the next
// appends fill.
inline constexpr uint64_t kWritebackLag = uint64_t{1} << 20;

struct FileOptions {
  IoCategory category = IoCategory::kOther;
  // O_DIRECT. A backend or file system that cannot do it (tmpfs, memory)
  // silently uses buffered I/O; callers must not rely on it for durability.
  bool direct = false;
  // Buffered writes only: once this many bytes have been written since the
  // last time, the file starts the kernel's writeback of them
  // (sync_file_range, SYNC_FILE_RANGE_WRITE), all but the last
  // kWritebackLag bytes, which later writes may still touch. Without it a
  // fast writer fills the page cache with dirty pages until the kernel
  // throttles it for seconds at a time. It promises nothing about
  // durability. 0: never.
  uint64_t writeback_bytes = 0;
  // Buffered writes only: the file is written with zeros this many bytes
  // at a time (one write per aligned chunk) ahead of its appends, so that
  // each append overwrites page-cache pages that exist, blocks the file
  // system has reserved and, once a sync has covered them, blocks already
  // allocated, instead of adding a page, a reservation and an allocation
  // for every few appends; a later fdatasync then writes data and no
  // metadata. Until Close cuts it, the file ends in up to this many zero
  // bytes past its last append (the WAL's format allows for them:
  // docs/wal_format.md). Zero-filling that fails turns it off for the
  // file; the append itself reports its own error. 0: never.
  uint64_t prefill_bytes = 0;
};

// WritableFile appends bytes sequentially to one file through a write buffer
// (aligned when direct). Size() counts every byte appended, flushed or not.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Appends data; it may sit in the buffer until Flush, Sync or Close.
  virtual absl::Status Append(std::string_view data) = 0;
  // Appends parts back to back: the same bytes and errors as one Append of
  // their concatenation. A backend may write large parts from where they
  // lie instead of copying them into its buffer (the POSIX one writes the
  // buffer and the parts with one pwritev); the parts need not outlive the
  // call. This default appends each.
  virtual absl::Status AppendParts(absl::Span<const std::string_view> parts);
  // Hands buffered bytes to the kernel. With O_DIRECT every byte goes to
  // the device in whole blocks: a partial tail block is written padded with
  // zeros and rewritten by the next Flush, so until Close the file on disk
  // may hold up to one block of zeros past Size().
  virtual absl::Status Flush() = 0;
  // Flush, then fdatasync. After an error the file refuses further writes.
  virtual absl::Status Sync() = 0;
  // Sync in two halves, so the caller can work while it runs: StartSync
  // puts the buffered bytes and an fdatasync after them in flight (O_DIRECT
  // files on the io_uring backend: one linked write and fdatasync on the
  // file's own ring) and WaitSync waits for them and returns the outcome.
  // Nothing else may be called on the file in between, and WaitSync must
  // follow a StartSync that returned OK. Elsewhere StartSync is Sync and
  // WaitSync returns OK.
  virtual absl::Status StartSync() { return Sync(); }
  virtual absl::Status WaitSync() { return absl::OkStatus(); }
  // Flush and close; the file's size on disk is exactly Size().
  virtual absl::Status Close() = 0;
  virtual uint64_t Size() const = 0;
  virtual const std::string& path() const = 0;
  // Whether appends reach the file with O_DIRECT: false when FileOptions did
  // not ask for it, and when the file system refused it (tmpfs, memory) and
  // the file fell back to buffered writes.
  virtual bool direct() const { return false; }
};

// One request of a batched read. buf must hold len bytes (any alignment; the
// file widens to aligned bounce buffers when direct). On return, result is the
// number of bytes read (less than len only at end of file) and status says
// whether this request failed.
struct ReadRequest {
  uint64_t offset = 0;
  size_t len = 0;
  char* buf = nullptr;
  size_t result = 0;
  absl::Status status;
};

// RandomAccessFile reads at offsets; safe for concurrent use.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to n bytes at offset into scratch; *result points into scratch
  // and is shorter than n only at end of file.
  virtual absl::Status Read(uint64_t offset, size_t n, char* scratch,
                            std::string_view* result) const = 0;
  // Reads every request, all in flight at once where the backend can (one
  // submission on the ring, then reaping completions). Returns the first
  // failing request's status; every request's own status is set.
  virtual absl::Status MultiRead(absl::Span<ReadRequest> requests) const = 0;
  virtual absl::StatusOr<uint64_t> Size() const = 0;
  virtual const std::string& path() const = 0;
  // The granularity of this file's reads, a power of two that divides
  // kDirectIoAlignment: an O_DIRECT file widens each read to offsets and
  // lengths that are multiples of it, its file system's direct-I/O offset
  // alignment (statx STATX_DIOALIGN: the device's logical block, 512 bytes
  // on most disks; kDirectIoAlignment where the kernel does not say). A
  // 4,200-byte table block then costs 4.5 KiB at the device instead of 8
  // (docs/decisions/20261203_direct_read_alignment.md). A caller that
  // reads such a widened span into an AlignedBuffer itself has it read in
  // place, with no bounce buffer. Buffered files read any range: 1.
  virtual size_t read_alignment() const { return 1; }
};

// A held LOCK file; releasing it (destruction) unlocks.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

// One request of a batched read across files.
struct FileReadRequest {
  const RandomAccessFile* file = nullptr;
  ReadRequest* request = nullptr;
};

// ReadQueue keeps reads in flight while its owner goes on working: Submit
// starts them and returns, Wait returns once one of them is complete. On
// the io_uring backend the queue has a ring of its own, so its reads stay in
// flight between calls; other backends read a queue's submitted requests as
// one batch (FileSystem::MultiReadFiles) at the first Wait or Poll.
//
// A request and its buf must stay valid until the queue reports it complete
// (Wait or Poll) or the queue is destroyed; each file until its reads are
// complete. A completed request carries its result and status as after
// RandomAccessFile::MultiRead. The destructor waits for every read in flight.
//
// Thread safety: a ReadQueue belongs to one thread at a time.
class ReadQueue {
 public:
  virtual ~ReadQueue() = default;
  // Starts reading every request, all in flight together where the backend can.
  virtual void Submit(absl::Span<const FileReadRequest> requests) = 0;
  // Returns once request (submitted here) is complete.
  virtual void Wait(ReadRequest* request) = 0;
  // Without blocking: whether request (submitted here) is complete.
  virtual bool Poll(ReadRequest* request) = 0;
  // The owner no longer wants request: a read not yet started is never
  // made (Poll then says complete, with no result); one already in flight
  // still completes, so its buffer must stay until Poll says so.
  virtual void Forget(ReadRequest* request) = 0;
  // Submitted requests not yet complete.
  virtual size_t in_flight() const = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // A queue for asynchronous reads of this file system's files (see
  // ReadQueue). The default reads each queue's requests in batches through
  // MultiReadFiles, so wrappers keep their behaviour.
  virtual std::unique_ptr<ReadQueue> NewReadQueue();

  // Creates (or truncates) path for appending.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const FileOptions& options) = 0;
  // Opens an existing file for appending at its current end.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> ReopenWritableFile(
      const std::string& path, const FileOptions& options) = 0;
  virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path, const FileOptions& options) = 0;

  // Reads requests that may name different files of this file system, all
  // in flight at once where the backend can (io_uring: one batch across
  // files); others read file by file with MultiRead. Same per-request
  // contract as RandomAccessFile::MultiRead; returns the first failure.
  virtual absl::Status MultiReadFiles(absl::Span<const FileReadRequest> requests);

  // Syncs several files of this file system together: on the ring all the
  // fdatasyncs are in flight at once. OK only when every one succeeded.
  virtual absl::Status SyncFiles(absl::Span<WritableFile* const> files);

  // Renames a file, or a directory to a name that does not exist.
  virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  // Makes to a second name (a hard link) of the existing file from; to must
  // not exist (AlreadyExists). Unimplemented when these two paths cannot be
  // linked (different file systems, EXDEV; or no hard links there, EPERM or
  // EOPNOTSUPP): the caller copies instead.
  virtual absl::Status LinkFile(const std::string& from, const std::string& to) = 0;
  virtual absl::Status RemoveFile(const std::string& path) = 0;
  virtual absl::Status TruncateFile(const std::string& path, uint64_t size) = 0;
  virtual absl::StatusOr<uint64_t> GetFileSize(const std::string& path) = 0;
  // What a file takes on the device (POSIX st_blocks, in bytes: a punched
  // hole takes nothing) and how many names it has (hard links). The default,
  // for file systems that cannot tell: its size, and one name.
  struct FileSpace {
    uint64_t allocated_bytes = 0;
    uint64_t links = 1;
  };
  virtual absl::StatusOr<FileSpace> GetFileSpace(const std::string& path);
  // Frees the device blocks inside each [offset, offset + length) of ranges
  // (whole blocks only; the bytes of a range then read as zeros) and keeps
  // the file's size (Linux fallocate PUNCH_HOLE | KEEP_SIZE). Unimplemented
  // where the file system cannot punch holes (the default).
  virtual absl::Status PunchHoles(const std::string& path,
                                  absl::Span<const std::pair<uint64_t, uint64_t>> ranges);
  // Overwrites bytes [offset, offset + data.size()) of the existing file
  // path in place, and syncs the file before returning. OutOfRange when the
  // range does not lie inside the file (it never grows the file).
  // Unimplemented where the file system cannot (the default): the caller
  // copies the file instead. Ingestion rebinds an adopted value-log
  // segment's header to its new number with it (docs/ingestion.md).
  virtual absl::Status OverwriteSynced(const std::string& path, uint64_t offset,
                                       std::string_view data);
  virtual bool FileExists(const std::string& path) = 0;
  // Names (not paths) of the entries in dir, without "." and "..".
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  // Creates dir if missing (not its parents).
  virtual absl::Status CreateDir(const std::string& dir) = 0;
  virtual absl::Status RemoveDir(const std::string& dir) = 0;
  // fsyncs the directory, making creates, renames and unlinks in it durable.
  virtual absl::Status SyncDir(const std::string& dir) = 0;

  // Takes an exclusive lock on path (created if missing) that excludes other
  // processes (fcntl/flock) and other holders in this process. A held lock is
  // FailedPrecondition naming the path.
  virtual absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;
  // For a reader of a database another process may be writing: a shared
  // hold on the lock file at path (which must exist: NotFound otherwise),
  // which LockFile's exclusive lock does not exclude and which
  // LockFileHasReaders sees from any process while it is held (POSIX: LockFile
  // locks byte 0, this a shared lock on byte 1). Unimplemented where the file
  // system cannot (the default).
  virtual absl::StatusOr<std::unique_ptr<FileLock>> LockFileShared(const std::string& path);
  // Whether a LockFileShared hold on path exists, in any process. False
  // where path is missing or the file system cannot tell (the default).
  virtual absl::StatusOr<bool> LockFileHasReaders(const std::string& path);

  // "io_uring", "posix", "memory", or a wrapper's name around its base's.
  virtual std::string Name() const = 0;

  // Per-category byte and operation counters of every file opened here.
  virtual IoStats& stats() = 0;
};

enum class IoBackend : uint8_t { kAuto = 0, kUring = 1, kPosix = 2 };

// Opens the real file system on the chosen backend. The environment variable
// CAIRN_IO=uring|posix|auto overrides the argument. When the ring cannot be
// set up (EPERM from a container's seccomp profile, ENOSYS, ENOMEM), or sets
// up but cannot run a no-op (a profile that denies only io_uring_enter),
// kAuto and kUring both fall back to POSIX and log that once per process: the
// engine never fails to open because io_uring is missing. Name() says which
// backend is in use.
absl::StatusOr<std::shared_ptr<FileSystem>> NewFileSystem(IoBackend backend);

// Test hook: the real backends' opens with O_DIRECT fail with EINVAL, as on
// a file system that cannot do it, until called again with false.
void SetDirectIoRefusedForTesting(bool refused);

// Test hook: makes ring setup fail with -errno_value (0 restores the real
// io_uring_queue_init). Lets tests prove the POSIX fallback.
void SetRingSetupFailureForTesting(int errno_value);

// Joins a directory and a file name.
std::string JoinPath(std::string_view dir, std::string_view name);

// Reads the whole of path. NotFound when it does not exist.
absl::StatusOr<std::string> ReadFileToString(FileSystem* fs, const std::string& path,
                                             IoCategory category = IoCategory::kOther);
// Creates (or truncates) path, writes contents, fdatasyncs when sync, closes.
absl::Status WriteStringToFile(FileSystem* fs, const std::string& path,
                               std::string_view contents, bool sync,
                               IoCategory category = IoCategory::kOther);

}  // namespace cairn::io

#endif  // CAIRN_IO_FILE_SYSTEM_H_
