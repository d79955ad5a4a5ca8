// SegmentScanner walks the records of one value-log segment in file order
// with large sequential reads, for the garbage collector (relocating live
// records) and recovery (finding where the good bytes of a crashed segment
// end). Layout: docs/vlog_format.md.
//
// It tells a torn tail from corruption (docs/testing.md, invariant 3). When the
// record at offset X is bad (cut short, out-of-range lengths, bad checksum or
// unknown flags), the scanner looks for a valid record starting at any later
// offset:
//   - none: X is a torn tail. Next returns false, status() is OK,
//     torn_tail() is true and valid_end_offset() is X. The bytes from X on
//     were never acknowledged; the caller may truncate them.
//   - one at Y: corruption in the middle. status() is DataLoss naming the
//     file, X and Y.
// With allow_torn_tail false (a sealed segment) any bad record is DataLoss.
// A value that itself contains a complete valid record image can make a torn
// tail look like corruption; the scanner then fails safe (DataLoss), never
// dropping good records.
//
// The scan covers the bytes the file held when Open ran.
//
// Thread safety: one thread at a time.
#ifndef CAIRN_VLOG_SEGMENT_SCANNER_H_
#define CAIRN_VLOG_SEGMENT_SCANNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/aligned_buffer.h"
#include "io/file_system.h"
#include "vlog/segment_edit.h"
#include "vlog/value_pointer.h"
#include "vlog/vlog_format.h"

namespace cairn::vlog {

struct SegmentScannerOptions {
  // Bytes per sequential read (a record larger than this is read whole).
  size_t read_size = 2u << 20;
  // Recovery scans are kValueLog; the garbage collector's are kGc.
  io::IoCategory category = io::IoCategory::kGc;
  bool direct_reads = false;
  // False for sealed segments: a bad last record is DataLoss too. True for
  // the segment that was active at a crash.
  bool allow_torn_tail = true;
  // Fill ScannedRecord::value with the uncompressed value. The garbage
  // collector may leave it off and copy stored bytes as they are.
  bool uncompress_values = true;
  // Keep the next read_size bytes in flight (an io::ReadQueue of the file
  // system's) while the caller works on the current ones, so a scan that
  // does work per record (GC's liveness checks) does not wait for the
  // device between reads. On backends without a ring the read happens at
  // the next refill, as without it.
  bool read_ahead = false;
  // The segment's punched runs (SegmentSet::PunchedRuns: ascending,
  // disjoint, each whole garbage records). The scan steps over each one
  // without parsing it: its blocks were punched out and read as zeros. A
  // run that does not start where a record does is DataLoss.
  std::vector<PunchRun> skip_runs;
  // Records known dead (GC's list, vlog::DeadRecords), ascending by
  // offset, each [begin, end) a whole record as its pointer names it. The
  // scan steps over each one that starts where a record does and whose
  // header gives the same size, without verifying its checksum: the caller
  // would drop it anyway. One whose header disagrees is parsed as any other
  // record; entries that start inside a record are passed over.
  std::vector<PunchRun> known_dead;
};

// One record. The views stay valid until the next call to Next.
struct ScannedRecord {
  uint64_t offset = 0;
  uint32_t size = 0;  // whole record
  uint8_t flags = 0;  // kRecordFlag* bits
  std::string_view bytes;         // the whole record as on disk: header, key, stored value
  std::string_view key;
  std::string_view stored_value;  // as on disk (a zstd frame when compressed)
  std::string_view value;         // uncompressed; empty unless uncompress_values
  // The pointer that names this record in segment segment_id.
  ValuePointer pointer(uint64_t segment_id) const { return {segment_id, offset, size}; }
};

class SegmentScanner {
 public:
  // Opens path and checks its header, which must name segment_id.
  // A file shorter than a header is a torn tail at offset 0 when
  // allow_torn_tail (the segment's creation never completed), else DataLoss.
  // Errors: as SegmentReader::Open.
  static absl::StatusOr<std::unique_ptr<SegmentScanner>> Open(
      io::FileSystem* fs, std::string path, uint64_t segment_id,
      const SegmentScannerOptions& options);

  SegmentScanner(const SegmentScanner&) = delete;
  SegmentScanner& operator=(const SegmentScanner&) = delete;

  // Reads the next record into *record and returns true; returns false at
  // the end of the valid records or on error, after which status() says
  // which and Next keeps returning false.
  bool Next(ScannedRecord* record);

  // OK, or the error that stopped the scan (DataLoss naming file and offset
  // for corruption; the file system's read errors).
  const absl::Status& status() const { return status_; }
  // After a clean end: whether the segment ended in a torn tail.
  bool torn_tail() const { return torn_tail_; }
  // After a clean end: the offset just past the last good record (the file
  // size when there is no torn tail).
  uint64_t valid_end_offset() const { return valid_end_; }
  // Records returned so far.
  uint64_t records_read() const { return records_read_; }
  // Bytes of punched runs stepped over (SegmentScannerOptions::skip_runs).
  uint64_t skipped_bytes() const { return skipped_bytes_; }
  // Records known dead stepped over, and their bytes
  // (SegmentScannerOptions::known_dead).
  uint64_t known_dead_skipped() const { return known_dead_skipped_; }
  uint64_t known_dead_skipped_bytes() const { return known_dead_skipped_bytes_; }
  // The file's size when the scan started.
  uint64_t file_size() const { return file_size_; }
  // The segment's header; version 0 when it was torn (short file).
  const SegmentHeader& header() const { return header_; }
  const std::string& path() const { return path_; }

 private:
  SegmentScanner(std::unique_ptr<io::RandomAccessFile> file, std::string path,
                 const SegmentScannerOptions& options, uint64_t file_size,
                 std::unique_ptr<io::ReadQueue> queue);

  // A view of the bytes [offset, offset + n), shortened at the end of the
  // file, reading into the window as needed. REQUIRES: offset <= file_size_.
  absl::StatusOr<std::string_view> Bytes(uint64_t offset, uint64_t n);
  // Reads n bytes at offset into dst (from the read-ahead when it holds
  // them); *got is how many (fewer only at the end of the file).
  absl::Status ReadInto(uint64_t offset, size_t n, char* dst, size_t* got);
  // Starts reading the read_size bytes after the window, when read_ahead.
  void StartReadAhead();
  // Waits for a read-ahead in flight; its bytes are kept for ReadInto.
  void FinishReadAhead();
  // Parses the record at offset (views into the window).
  absl::StatusOr<RecordCheck> CheckAt(uint64_t offset, ParsedRecord* record);
  // Steps over the records known dead that start at pos_ (and the punched
  // runs after them); false when the scan stopped on an error.
  bool SkipKnownDead();
  // Decides between torn tail and corruption for a bad record at offset.
  void HandleBadRecord(uint64_t offset, RecordCheck check);
  void Stop(absl::Status status);

  const std::unique_ptr<io::RandomAccessFile> file_;
  const std::string path_;
  const SegmentScannerOptions options_;
  uint64_t file_size_;
  SegmentHeader header_{0, SegmentKind::kFresh, 0};  // version 0: not read

  // File bytes [window_offset_, + window_len_), at window_.data() + window_pos_.
  // Buffers are not zeroed (every byte a view shows was read into it): a
  // scan of a 16 MiB segment would otherwise clear two read_size buffers.
  io::AlignedBuffer window_;
  size_t window_pos_ = 0;
  size_t window_len_ = 0;
  uint64_t window_offset_ = 0;
  std::string value_;          // uncompressed value of the current record

  // Read-ahead: the bytes after the window, in flight or arrived, at
  // ahead_buf_.data() + kAheadHeadroom. The headroom takes the start of a
  // record the window ends in, so that the read-ahead becomes the next
  // window by a swap of buffers, not a copy of read_size bytes. The buffer
  // is declared before the queue, whose destructor waits for its reads.
  static constexpr size_t kAheadHeadroom = 64u << 10;
  io::AlignedBuffer ahead_buf_;
  io::ReadRequest ahead_;
  bool ahead_in_flight_ = false;
  bool ahead_ready_ = false;
  std::unique_ptr<io::ReadQueue> queue_;  // null without read_ahead

  uint64_t pos_ = 0;           // offset of the next record
  uint64_t records_read_ = 0;
  size_t next_run_ = 0;  // index in options_.skip_runs
  uint64_t skipped_bytes_ = 0;
  size_t next_dead_ = 0;  // in options_.known_dead
  uint64_t known_dead_skipped_ = 0;
  uint64_t known_dead_skipped_bytes_ = 0;
  bool done_ = false;
  bool torn_tail_ = false;
  uint64_t valid_end_ = 0;
  absl::Status status_;
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_SEGMENT_SCANNER_H_
