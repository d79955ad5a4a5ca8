// LogWriter appends records to a new write-ahead log (format:
// docs/wal_format.md). Each record is an opaque payload (the DB writes one
// encoded write batch per record); a reader gets back exactly the payloads
// added, in order, up to the last one that reached the disk whole.
//
// Thread safety: one writer at a time (the DB's write leader).
#ifndef CAIRN_LSM_LOG_WRITER_H_
#define CAIRN_LSM_LOG_WRITER_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/file_system.h"

namespace cairn::lsm {

class LogWriter {
 public:
  // Takes ownership of file, which must be empty, and writes the file header
  // naming log_number immediately (not synced). Errors: the file's Append
  // error; FailedPrecondition when the file is not empty (a log is never
  // appended to across opens: a torn tail must stay the tail).
  static absl::StatusOr<std::unique_ptr<LogWriter>> Create(std::unique_ptr<io::WritableFile> file,
                                                           uint64_t log_number);

  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;
  // Does not close the file: call Close to learn whether the last bytes
  // reached it.
  ~LogWriter() = default;

  // Appends one record (any size, empty included). Buffered, not synced.
  // After any write error the writer is broken: this and every later call
  // return that error, so a record cut short by a failed write can only be
  // the file's tail. FailedPrecondition after Close.
  absl::Status AddRecord(std::string_view payload);

  // Makes every added record durable (flush, then fdatasync).
  absl::Status Sync();
  // Hands every added record to the kernel: it survives a process crash, not
  // a power loss.
  absl::Status Flush();
  // Flushes and closes the file; later calls fail with FailedPrecondition.
  absl::Status Close();

  // The file, for batched syncs (io::FileSystem::SyncFiles).
  io::WritableFile* file() { return file_.get(); }
  uint64_t log_number() const { return log_number_; }
  // Bytes written so far, header and padding included.
  uint64_t size() const { return file_->Size(); }

 private:
  LogWriter(std::unique_ptr<io::WritableFile> file, uint64_t log_number);

  // Writes one fragment at block_offset_, which leaves room for its header.
  absl::Status EmitFragment(uint8_t type, std::string_view payload);
  // Records a write error so that every later call fails with it.
  absl::Status Check(absl::Status s);
  absl::Status CheckOpen() const;

  std::unique_ptr<io::WritableFile> file_;
  const uint64_t log_number_;
  size_t block_offset_;  // Offset of the next byte within its block.
  absl::Status error_;   // The first write error; sticky.
  bool closed_ = false;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_LOG_WRITER_H_
