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
// Reopen continues a segment that recovery found unsealed, once its torn
// tail (if any) is cut, so that short sessions do not leave one small
// segment each behind.
//
// Errors are sticky: after any failed Append, Flush or Sync every later call
// returns the first error, because what reached the file is unknown.
//
// Thread safety: one thread at a time; size() and segment_id() from any.
#ifndef CAIRN_VLOG_SEGMENT_WRITER_H_
#define CAIRN_VLOG_SEGMENT_WRITER_H_

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
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
  // Buffered writes: start the kernel's writeback every this many bytes
  // (io::FileOptions::writeback_bytes). 0: never.
  uint64_t writeback_bytes = 0;
  // A value longer than this is stored chunked (kRecordFlagChunked): cut into
  // chunks of this size, each compressed on its own and checksummed, so that
  // a range of it can be read and verified alone. 0: never chunk.
  // Otherwise kMinValueChunkSize..kMaxValueChunkSize.
  uint32_t chunk_size = kDefaultValueChunkSize;
  // Create syncs the header, so that a damaged header is always corruption,
  // never a torn tail. false: the caller syncs the whole segment before the
  // manifest names it (GC output, the flush's segments), so a crash before
  // that leaves an orphan file that open removes, and the sync is wasted.
  bool sync_header = true;
};

// Whole encoded records back to back, sizes[i] bytes each.
struct EncodedRecords {
  std::string_view bytes;
  absl::Span<const uint32_t> sizes;
};

class SegmentWriter {
 public:
  // Creates (or truncates) path, writes the header for segment_id and syncs.
  // Errors: InvalidArgument for an invalid kind or compression level; the
  // file system's errors (the file may then exist; the caller removes it).
  static absl::StatusOr<std::unique_ptr<SegmentWriter>> Create(
      io::FileSystem* fs, std::string path, uint64_t segment_id,
      const SegmentWriterOptions& options);

  // Reopens path, which holds exactly size bytes of segment segment_id in
  // records whole records (recovery's valid end), and appends after them.
  // Errors: FailedPrecondition when the file's size is not size; the file
  // system's errors.
  static absl::StatusOr<std::unique_ptr<SegmentWriter>> Reopen(
      io::FileSystem* fs, std::string path, uint64_t segment_id, uint64_t size,
      uint64_t records, const SegmentWriterOptions& options);

  ~SegmentWriter();  // Closes the file if Close was not called.
  SegmentWriter(const SegmentWriter&) = delete;
  SegmentWriter& operator=(const SegmentWriter&) = delete;

  // Appends one record (buffered) and returns where it is.
  // Errors: InvalidArgument (before any I/O) when key or value is larger
  // than kMaxRecordKeySize or kMaxRecordValueSize;
  // FailedPrecondition after Close; the sticky error; the file's errors.
  absl::StatusOr<ValuePointer> Append(std::string_view key, std::string_view value);
  // Appends a record whose value is already in its stored form (flags say
  // how, e.g. kRecordFlagZstd), as read from another segment: GC copies
  // records without decompressing and compressing them again.
  // Errors: as Append; InvalidArgument for unknown flags.
  absl::StatusOr<ValuePointer> AppendStored(std::string_view key, std::string_view stored_value,
                                            uint8_t flags);

  // Appends whole records that EncodeValueRecord encoded with Encoding()
  // (e.g. in other threads, before their place was known), as one write of
  // every run (io::WritableFile::AppendParts: large runs go to the file from
  // where they lie, not through its buffer), and appends their pointers to
  // *pointers in order. The records are this process's own and are not
  // parsed again. Errors: InvalidArgument (before any write) when a run's
  // sizes do not add up to its bytes; otherwise as Append.
  absl::Status AppendEncoded(absl::Span<const EncodedRecords> runs,
                             std::vector<ValuePointer>* pointers);
  // How Append encodes a value: the options' compression and chunk size.
  RecordEncoding Encoding() const;

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
  absl::StatusOr<ValuePointer> AppendRecord(std::string_view key,
                                            std::initializer_list<std::string_view> stored,
                                            uint8_t flags);
  // Appends record_, one whole encoded record.
  absl::StatusOr<ValuePointer> AppendEncodedRecord();
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
  std::string compressed_;  // scratch: the value's zstd frame, or its stored chunks
  std::string chunk_table_;  // scratch: a chunked value's table
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_SEGMENT_WRITER_H_
