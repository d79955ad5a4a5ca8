// SegmentWriter appends value records to one new value-log segment and
// returns a ValuePointer for each. Layout: docs/vlog_format.md.
//
// Create writes the segment header and syncs it, so a segment that holds any
// record always has a durable header: after a crash a damaged header is
// corruption, never a torn tail. Records are appended through the file's own
// write buffer; Flush hands them to the kernel, Sync makes them durable. A
// record's bytes are readable (by a SegmentReader on the same file system)
// once flushed. The caller must make the file's directory entry durable
// (FileSystem::SyncDir) before relying on the segment after a crash.
//
// There is no reopen: after a crash the engine starts a new segment and the
// old one's torn tail, if any, stays beyond every acknowledged pointer.
//
// Errors are sticky: after any failed Append, Flush or Sync every later call
// returns the first error, because what reached the file is unknown.
//
// Thread safety: one thread at a time; size() and segment_id() from any.
#ifndef CAIRN_VLOG_SEGMENT_WRITER_H_
#define CAIRN_VLOG_SEGMENT_WRITER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/file_system.h"
#include "vlog/value_pointer.h"
#include "vlog/vlog_format.h"

namespace cairn::vlog {

struct SegmentWriterOptions {
  // Fresh writes are charged to io::IoCategory::kValueLog, GC output to kGc.
  SegmentKind kind = SegmentKind::kFresh;
  // Try zstd on every non-empty value; the compressed form is kept only when
  // it is smaller than the value.
  bool compress = false;
  int compression_level = 3;  // zstd level, 1..19
  // Open the file with O_DIRECT (where the file system can).
  bool direct_writes = false;
};

class SegmentWriter {
 public:
  // Creates (or truncates) path, writes the header for segment_id and syncs.
  // Errors: InvalidArgument for an invalid kind or compression level; the
  // file system's errors (the file may then exist; the caller removes it).
  static absl::StatusOr<std::unique_ptr<SegmentWriter>> Create(
      io::FileSystem* fs, std::string path, uint64_t segment_id,
      const SegmentWriterOptions& options);

  ~SegmentWriter();  // Closes the file if Close was not called.
  SegmentWriter(const SegmentWriter&) = delete;
  SegmentWriter& operator=(const SegmentWriter&) = delete;

  // Appends one record (buffered) and returns where it is.
  // Errors: InvalidArgument (before any I/O) when key or value is larger
  // than kMaxRecordKeySize or kMaxRecordValueSize;
  // FailedPrecondition after Close; the sticky error; the file's errors.
  absl::StatusOr<ValuePointer> Append(std::string_view key, std::string_view value);

  // Hands buffered records to the kernel.
  absl::Status Flush();
  // Flush, then fdatasync. To sync together with the WAL, pass file() to
  // FileSystem::SyncFiles instead.
  absl::Status Sync();
  // Flushes and closes; the file is then exactly size() bytes. Idempotent.
  absl::Status Close();

  // Bytes in the segment so far, header included: the offset of the next
  // record.
  uint64_t size() const { return size_.load(std::memory_order_acquire); }
  uint64_t segment_id() const { return segment_id_; }
  // Records appended so far.
  uint64_t record_count() const { return record_count_; }
  const std::string& path() const { return path_; }
  const SegmentWriterOptions& options() const { return options_; }
  // The underlying file, for FileSystem::SyncFiles. Null after Close.
  io::WritableFile* file() { return file_.get(); }

 private:
  SegmentWriter(std::unique_ptr<io::WritableFile> file, std::string path,
                uint64_t segment_id, const SegmentWriterOptions& options);
  // Returns s, remembering it as the sticky error when it is not OK.
  absl::Status Track(absl::Status s);

  std::unique_ptr<io::WritableFile> file_;
  const std::string path_;
  const uint64_t segment_id_;
  const SegmentWriterOptions options_;
  std::atomic<uint64_t> size_{0};
  uint64_t record_count_ = 0;
  bool closed_ = false;
  absl::Status error_;
  std::string record_;      // scratch: the record being appended
  std::string compressed_;  // scratch: the value's zstd frame
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_SEGMENT_WRITER_H_
