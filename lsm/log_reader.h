// LogReader reads back the records of one write-ahead log (format:
// docs/wal_format.md) and tells how the log ends:
//
// - clean end: every byte belongs to a good record, or (format version 3)
//   the bytes after the last one are all zeros, filled ahead by the writer;
// - torn tail: a bad or incomplete record with no valid fragment anywhere
//   after it, which is what a crash during an unsynced append leaves. It is
//   ignored; status() stays OK, hit_torn_tail() is true and
//   valid_end_offset() says where good data ends, so the caller can truncate;
// - corruption in the middle: a bad record followed by a valid fragment.
//   Bytes that were once written whole went bad: status() is DataLoss naming
//   the file and the bad record's offset.
//
// Thread safety: one thread at a time.
#ifndef CAIRN_LSM_LOG_READER_H_
#define CAIRN_LSM_LOG_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/file_system.h"

namespace cairn::lsm {

class LogReader {
 public:
  // Reads the whole file at path through fs, charging `category` (the
  // MANIFEST, which shares this framing, passes kManifest), and checks its
  // header. Errors: the file system's (NotFound, I/O errors);
  // FailedPrecondition for a format version this build does not read;
  // DataLoss naming the file when the header names another log number, or
  // when it is damaged and valid fragments follow. A header that is cut short
  // or damaged with no valid fragment after it is a log that never synced:
  // Open succeeds and the log reads as empty, ending in a torn tail.
  static absl::StatusOr<std::unique_ptr<LogReader>> Open(
      io::FileSystem* fs, const std::string& path, uint64_t expected_log_number,
      io::IoCategory category = io::IoCategory::kWal);

  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;

  // Reads the next record into *record, which points into *scratch or into
  // the reader's own copy of the file and stays valid until the next call.
  // Returns false at the end of valid data (clean end or torn tail) or on
  // corruption; then check status().
  bool ReadRecord(std::string_view* record, std::string* scratch);

  // OK at a clean end or a torn tail; DataLoss for corruption in the middle.
  absl::Status status() const { return status_; }
  // True when reading ended at a torn (bad or incomplete) record.
  bool hit_torn_tail() const { return torn_tail_; }
  // The file offset just past the last good record (just past the header
  // when there is none, 0 when the header itself is torn). Truncating the
  // file there removes a torn tail.
  uint64_t valid_end_offset() const { return valid_end_; }
  // The offset of the first fragment of the record last returned.
  uint64_t last_record_offset() const { return last_record_offset_; }
  // The format version the header names; 0 when the header is torn.
  uint32_t format_version() const { return version_; }

  // Bytes [begin, end) of the file that SkipCorruption passed over.
  struct SkippedRange {
    uint64_t begin = 0;
    uint64_t end = 0;
  };
  // For a salvage, which wants every record that can still be read: after
  // ReadRecord stopped at corruption in the middle (status() DataLoss),
  // moves to the next fragment after the bad record that verifies and can
  // begin a record (full or first), and clears status(), so that ReadRecord
  // goes on from there. Returns the bytes passed over, from the end of the
  // last good record (valid_end_offset()) to where reading resumes; nullopt,
  // with nothing changed, when status() is OK or no such fragment follows.
  // Whatever the range held is gone, so the record read next need not be
  // the one that followed the last record read. DB recovery does not use
  // this: it refuses a log with a hole rather than replay around it.
  std::optional<SkippedRange> SkipCorruption();

 private:
  LogReader(std::string path, std::string contents, uint64_t log_number);

  // Checks the file header; a non-OK result refuses the file.
  absl::Status CheckHeader();
  // True when every byte from offset to the end of the file is zero.
  bool ZeroTailAt(uint64_t offset) const;
  // True when a fragment that verifies against this log starts at offset.
  bool FragmentVerifiesAt(uint64_t offset) const;
  // The first offset at or after `from` where a fragment verifies.
  std::optional<uint64_t> FindValidFragment(uint64_t from) const;
  // The same, for a fragment that begins a record (full or first).
  std::optional<uint64_t> FindRecordStart(uint64_t from) const;
  // Ends reading at a bad record starting at record_offset. Whether any
  // fragment verifies at or after scan_from decides between a torn tail and
  // corruption. Returns false, for ReadRecord to return.
  bool Stop(uint64_t record_offset, uint64_t scan_from, const std::string& why);

  const std::string path_;
  const std::string contents_;  // The whole file.
  const uint64_t log_number_;
  uint64_t pos_ = 0;  // Offset of the next fragment to read.
  uint32_t version_ = 0;
  bool done_ = false;
  bool torn_tail_ = false;
  absl::Status status_;
  uint64_t valid_end_ = 0;
  uint64_t last_record_offset_ = 0;
  // Where the bad record that set status_ to DataLoss starts.
  uint64_t bad_record_offset_ = 0;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_LOG_READER_H_
