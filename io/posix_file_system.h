// PosixFileSystem is the FileSystem on plain syscalls (pwrite, pread,
// fdatasync), and the home of the file-descriptor files both real backends
// share: FdWritableFile holds the append buffer and the O_DIRECT tail logic
// once, and FdRandomAccessFile the widening of unaligned direct reads. The
// io_uring backend (uring_file_system.h) subclasses all three and replaces
// only the low-level positioned write, read and sync.
//
// Thread safety: PosixFileSystem and FdRandomAccessFile are safe for
// concurrent use; an FdWritableFile is used by one thread at a time, except
// Size(), which any thread may call.
#ifndef CAIRN_IO_POSIX_FILE_SYSTEM_H_
#define CAIRN_IO_POSIX_FILE_SYSTEM_H_

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/aligned_buffer.h"
#include "io/file_system.h"
#include "io/io_stats.h"

namespace cairn::io {

// absl::ErrnoToStatus(errno_value, "<what>: <strerror>") with ENOSPC (and
// EDQUOT) as ResourceExhausted. what names the operation and the path, e.g.
// "write /db/000012.vlog at 4096".
absl::Status ErrnoError(int errno_value, const std::string& what);

// FdWritableFile appends to an open file descriptor through a 1 MiB buffer.
// Without O_DIRECT, Flush writes the buffer as is. With O_DIRECT, Flush writes
// whole aligned blocks, as RocksDB's direct-I/O writer does: a partial tail
// block is written padded with zeros and stays in the buffer, to be
// rewritten whole, with the bytes after it, by the next Flush. The file on
// disk then holds up to one block of zeros past Size(); Close cuts them off
// (ftruncate, then fdatasync so that the cut is as durable as the bytes), so
// a closed file is exactly Size() bytes long. Readers of a file still open
// (recovery after a crash) find the zeros after the last record, where a
// torn tail would be.
//
// Write-behind (O_DIRECT only): when Append fills the buffer, its whole
// blocks go to the file through StartWrite and the appends go on into a
// second buffer while they are on the device; the next write of the file
// waits for them (FinishWrites). The base class writes at once; the io_uring
// backend keeps the write in flight on a ring of the file's own.
class FdWritableFile : public WritableFile {
 public:
  static constexpr size_t kBufferSize = 1 << 20;
  // A buffered (not O_DIRECT) write goes to the kernel in pieces of at most
  // this many bytes. The page cache sizes its folios by the write: aligned
  // writes of 512 KiB and more got large folios, whose copy cost 8x the CPU
  // of 256 KiB pieces on Linux 6.18 here (64 MiB: 0.08 s against 0.01 s),
  // and compaction spent half its time in that copy.
  static constexpr size_t kMaxBufferedWrite = 256 << 10;
  // AppendParts of at least this many bytes (not O_DIRECT) goes to the file
  // at once, the buffered bytes and the parts in one pwritev, rather than
  // through the buffer. A caller that flushes after each call (the value
  // log, once per write group) saves the copy at any size, since its flush
  // would have written anyway; one that does not pays a write per call,
  // which costs about what copying 16 KiB does.
  static constexpr size_t kGatherBytes = 16 << 10;

  // Takes ownership of fd. direct says whether fd was opened with O_DIRECT.
  // writeback_bytes, prefill_bytes: FileOptions' (buffered files only).
  FdWritableFile(int fd, std::string path, IoCategory category, bool direct,
                 std::shared_ptr<IoStats> stats, uint64_t writeback_bytes = 0,
                 uint64_t prefill_bytes = 0);
  ~FdWritableFile() override;  // Closes if Close was not called.

  // Positions the file at end_offset, an existing file's size (reopen). With
  // O_DIRECT it reads the partial tail block back into the buffer.
  absl::Status InitAtEnd(uint64_t end_offset);

  absl::Status Append(std::string_view data) override;
  absl::Status AppendParts(absl::Span<const std::string_view> parts) override;
  absl::Status Flush() override;
  absl::Status Sync() override;
  // O_DIRECT: the tail block's write and the fdatasync go through
  // StartWriteAndSync (in flight together on the ring); buffered files sync
  // at once.
  absl::Status StartSync() override;
  absl::Status WaitSync() override;
  absl::Status Close() override;
  uint64_t Size() const override { return size_.load(std::memory_order_relaxed); }
  const std::string& path() const override { return path_; }
  bool direct() const override { return direct_; }

  // As a crash of the process would leave the file: waits for a write in
  // flight (the kernel finishes one it has started), then closes the
  // descriptor without writing the buffer, cutting the padding or syncing.
  void AbandonForTesting();

  // The two halves of Sync, for backends that sync many files at once:
  // PrepareSync flushes (or returns the sticky error); FinishSync records the
  // fdatasync's outcome, charging the sync and poisoning the file on error.
  absl::Status PrepareSync();
  absl::Status FinishSync(absl::Status sync_status);
  int fd() const { return fd_; }
  IoCategory category() const { return category_; }

 protected:
  // Writes all of data at offset, retrying short writes, EINTR and EAGAIN.
  // The caller charges the write to stats.
  virtual absl::Status WriteAt(uint64_t offset, std::string_view data);
  // fdatasync(fd), retrying EINTR.
  virtual absl::Status DataSync();
  // Starts writing data (aligned, O_DIRECT) at offset; data must stay
  // untouched until FinishWrites returns. The default writes at once.
  virtual absl::Status StartWrite(uint64_t offset, std::string_view data) {
    return WriteAt(offset, data);
  }
  // Waits for every write StartWrite began; the first failure.
  virtual absl::Status FinishWrites() { return absl::OkStatus(); }
  // Starts writing data (aligned, O_DIRECT; may be empty) at offset and
  // then an fdatasync that covers it; data must stay untouched until
  // FinishWriteAndSync returns, which gives the outcome of both. The
  // default does both at once.
  virtual absl::Status StartWriteAndSync(uint64_t offset, std::string_view data);
  virtual absl::Status FinishWriteAndSync() { return absl::OkStatus(); }

 private:
  // Writes the buffer (see the class comment); an error is made sticky.
  absl::Status WriteBuffer();
  // Writes the n bytes iov holds at offset with pwritev, retrying short
  // writes (iov is consumed), EINTR and EAGAIN; WriteAt's way here. The
  // io_uring backend writes buffered files this way too (UringWritableFile).
  absl::Status WriteVectorAt(uint64_t offset, absl::Span<iovec> iov, size_t n);
  // WriteAt, then charges the write or poisons the file.
  absl::Status WriteAndCharge(uint64_t offset, std::string_view data);
  // Buffered files with prefill_bytes: zero-fills from where the zeros end
  // through the chunk that holds the byte before end, before an append
  // reaches it (FileOptions::prefill_bytes). A failed write turns it off.
  void PrefillThrough(uint64_t end);
  // Buffered files: starts writeback up to end (FileOptions::writeback_bytes).
  void StartWriteback(uint64_t end);
  // O_DIRECT: the buffer's bytes padded to whole blocks, as the next write
  // must put them at buf_offset_ (empty when they are on disk already); and,
  // once that write is done, the bookkeeping that keeps only the partial
  // tail block in the buffer.
  std::string_view DirectBlocks();
  void BlocksWritten(size_t padded);
  absl::Status Poison(absl::Status status);

  int fd_;
  const std::string path_;
  const IoCategory category_;
  const bool direct_;
  const std::shared_ptr<IoStats> stats_;
  // Waits for the write-behind write, charging it or poisoning the file.
  absl::Status FinishWriteBehind();

  AlignedBuffer buf_;
  // O_DIRECT write-behind: the buffer on the device (empty when none is),
  // and its length.
  AlignedBuffer spare_;
  size_t behind_ = 0;
  uint64_t buf_offset_ = 0;  // File offset of buf_.data(); aligned when direct.
  uint64_t disk_size_ = 0;   // Bytes on disk, with O_DIRECT's padding.
  // StartSync's write in flight: its length (0: a sync alone), and whether
  // one is pending.
  size_t sync_write_len_ = 0;
  bool sync_pending_ = false;
  // O_DIRECT: the buffer holds only a partial tail block that is on disk
  // as it is (padded), so Flush has nothing to write.
  bool tail_written_ = false;
  const uint64_t writeback_bytes_;
  uint64_t prefill_bytes_;  // 0 once a zero-fill failed
  uint64_t prefilled_end_ = 0;  // where the zeros written ahead end
  uint64_t writeback_from_ = 0;  // where the next writeback starts
  std::atomic<uint64_t> size_{0};
  absl::Status error_;
  bool closed_ = false;
};

// FdRandomAccessFile reads an open file descriptor at offsets. With O_DIRECT,
// requests whose offset, length or buffer are not aligned as the file system
// needs (read_alignment; its memory alignment for the buffer) go through an
// aligned bounce buffer, widened to read_alignment, and the wanted bytes are
// copied out.
class FdRandomAccessFile : public RandomAccessFile {
 public:
  FdRandomAccessFile(int fd, std::string path, IoCategory category, bool direct,
                     std::shared_ptr<IoStats> stats);
  ~FdRandomAccessFile() override;

  absl::Status Read(uint64_t offset, size_t n, char* scratch,
                    std::string_view* result) const override;
  // One Read per request, in order.
  absl::Status MultiRead(absl::Span<ReadRequest> requests) const override;
  absl::StatusOr<uint64_t> Size() const override;
  const std::string& path() const override { return path_; }
  size_t read_alignment() const override { return direct_ ? read_alignment_ : 1; }

 protected:
  // Reads up to n bytes at offset into buf (aligned as O_DIRECT needs when
  // direct), stopping early only at end of file. Charges the read to
  // stats().
  virtual absl::StatusOr<size_t> ReadAt(uint64_t offset, size_t n, char* buf) const;

  int fd() const { return fd_; }
  bool direct() const { return direct_; }
  IoCategory category() const { return category_; }
  IoStats& stats() const { return *stats_; }
  // Whether a read of n bytes at offset into buf can go to the file as it
  // is: always when buffered; with O_DIRECT when offset and n are multiples
  // of read_alignment() and buf of the file system's memory alignment.
  bool ReadsInPlace(uint64_t offset, size_t n, const char* buf) const;

 private:
  const int fd_;
  const std::string path_;
  const IoCategory category_;
  const bool direct_;
  const std::shared_ptr<IoStats> stats_;
  size_t read_alignment_ = kDirectIoAlignment;
  size_t memory_alignment_ = kDirectIoAlignment;
};

class PosixFileSystem : public FileSystem {
 public:
  PosixFileSystem();
  ~PosixFileSystem() override;

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
  absl::StatusOr<FileSpace> GetFileSpace(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<FileLock>> LockFileShared(const std::string& path) override;
  absl::StatusOr<bool> LockFileHasReaders(const std::string& path) override;
  absl::Status OverwriteSynced(const std::string& path, uint64_t offset,
                               std::string_view data) override;
  absl::Status PunchHoles(const std::string& path,
                          absl::Span<const std::pair<uint64_t, uint64_t>> ranges) override;
  bool FileExists(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override;
  absl::Status CreateDir(const std::string& dir) override;
  absl::Status RemoveDir(const std::string& dir) override;
  absl::Status SyncDir(const std::string& dir) override;
  // fcntl open-file-description lock plus a process-wide table of held paths.
  absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;

  std::string Name() const override { return "posix"; }
  IoStats& stats() override { return *stats_; }

 protected:
  const std::shared_ptr<IoStats>& shared_stats() const { return stats_; }

  // Factories for the backend's file types; the io_uring backend overrides
  // them. They take ownership of fd.
  // direct: whether fd was opened with O_DIRECT (options.direct asked).
  virtual std::unique_ptr<FdWritableFile> MakeWritableFile(int fd, const std::string& path,
                                                           const FileOptions& options,
                                                           bool direct);
  virtual std::unique_ptr<FdRandomAccessFile> MakeRandomAccessFile(int fd, const std::string& path,
                                                                   IoCategory category,
                                                                   bool direct);

 private:
  // Opens path with flags, adding O_DIRECT when asked; when the file system
  // refuses O_DIRECT (EINVAL, e.g. tmpfs) it opens buffered and clears
  // *direct.
  absl::StatusOr<int> OpenFd(const std::string& path, int flags, bool* direct);

  const std::shared_ptr<IoStats> stats_;
};

}  // namespace cairn::io

#endif  // CAIRN_IO_POSIX_FILE_SYSTEM_H_
