// UringFileSystem is the io_uring backend: the POSIX file system whose files
// do their reads, writes and fdatasyncs on the calling thread's Ring
// (ring.h). Directory operations, locks and opens stay plain syscalls; they
// are rare and gain nothing from a ring. MultiRead puts every request in
// flight with one submission and SyncFiles every fdatasync.
//
// When a thread cannot set up its ring (memory limits hit after the backend
// was chosen), that thread's I/O falls back to the POSIX syscalls rather than
// fail.
//
// Thread safety: as PosixFileSystem.
#ifndef CAIRN_IO_URING_FILE_SYSTEM_H_
#define CAIRN_IO_URING_FILE_SYSTEM_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "io/aligned_buffer.h"
#include "io/file_system.h"
#include "io/posix_file_system.h"
#include "io/ring.h"

namespace cairn::io {

// FdWritableFile whose O_DIRECT writes and fdatasyncs go through the ring.
// Its write-behind (a full O_DIRECT buffer) stays in flight on a ring of the
// file's own (Ring::TakeOwned, taken on first use) while appends go on; it
// is written at once where no ring can be had.
class UringWritableFile : public FdWritableFile {
 public:
  using FdWritableFile::FdWritableFile;
  ~UringWritableFile() override;  // Closes, so no write is left in flight.

 protected:
  absl::Status WriteAt(uint64_t offset, std::string_view data) override;
  absl::Status DataSync() override;
  absl::Status StartWrite(uint64_t offset, std::string_view data) override;
  absl::Status FinishWrites() override;
  // O_DIRECT: the write and an fdatasync linked after it (IOSQE_IO_LINK),
  // in flight together on the file's ring.
  absl::Status StartWriteAndSync(uint64_t offset, std::string_view data) override;
  absl::Status FinishWriteAndSync() override;

 private:
  // Puts the rest of the write-behind on the ring.
  absl::Status SubmitBehind();
  // Takes the file's ring if it has none; false when none can be had.
  bool HaveRing();
  // Drops the ring after a failure of the ring itself, once the kernel is
  // done with the in_flight operations it may hold.
  void DropRing(size_t in_flight);

  // StartWriteAndSync's operations: 0, 1 (a sync alone) or 2 in flight.
  size_t sync_ops_ = 0;
  uint64_t sync_offset_ = 0;
  std::string_view sync_data_;

  std::unique_ptr<Ring> ring_;  // null until the first write-behind, or after a failure
  uint64_t behind_offset_ = 0;
  std::string_view behind_;  // the write in flight; empty when none is
  size_t behind_done_ = 0;
};

// FdRandomAccessFile whose reads go through the ring.
struct ReadOp;  // one read of a ring batch (uring_file_system.cc)

class UringRandomAccessFile : public FdRandomAccessFile {
 public:
  using FdRandomAccessFile::FdRandomAccessFile;

  // All requests in flight at once (kDepth at a time); short reads that are
  // not at end of file are resubmitted for the remainder; -EAGAIN and -EINTR
  // are retried; a negative result is that request's status.
  absl::Status MultiRead(absl::Span<ReadRequest> requests) const override;

  // For reads run outside MultiRead (batches across files, read queues): the
  // ring op for req (widened into *bounce when O_DIRECT needs it), and req's
  // result from the finished op.
  void PrepareRead(const ReadRequest& req, ReadOp* op, AlignedBuffer* bounce) const;
  void FinishRead(const ReadOp& op, ReadRequest* req) const;

 protected:
  absl::StatusOr<size_t> ReadAt(uint64_t offset, size_t n, char* buf) const override;
};

class UringFileSystem : public PosixFileSystem {
 public:
  // Flushes every file, then puts all their fdatasyncs in flight at once and
  // waits for all. OK only if every one succeeded; a file whose sync failed is
  // poisoned. Files of other types are synced one by one.
  absl::Status SyncFiles(absl::Span<WritableFile* const> files) override;
  // When every file is this file system's: one batch on the ring across
  // all of them.
  absl::Status MultiReadFiles(absl::Span<const FileReadRequest> requests) override;
  // A queue with a ring of its own, so reads stay in flight between calls;
  // the batching default when no ring can be had.
  std::unique_ptr<ReadQueue> NewReadQueue() override;

  std::string Name() const override { return "io_uring"; }

 protected:
  std::unique_ptr<FdWritableFile> MakeWritableFile(int fd, const std::string& path,
                                                   const FileOptions& options,
                                                   bool direct) override;
  std::unique_ptr<FdRandomAccessFile> MakeRandomAccessFile(int fd, const std::string& path,
                                                           IoCategory category,
                                                           bool direct) override;
};

}  // namespace cairn::io

#endif  // CAIRN_IO_URING_FILE_SYSTEM_H_
