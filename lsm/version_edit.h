// VersionEdit is one change to the set of table files that make up the LSM
// tree, plus the counters recovery needs (log number, next file number, last
// sequence) and opaque extension records that other parts of the engine (the
// value log) persist through the manifest. The MANIFEST file is a log of
// encoded VersionEdits; the layout is docs/manifest_format.md.
//
// Thread safety: none; a VersionEdit belongs to one thread at a time.
#ifndef CAIRN_LSM_VERSION_EDIT_H_
#define CAIRN_LSM_VERSION_EDIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "lsm/dbformat.h"

namespace cairn::lsm {

// Levels of the LSM tree: L0 (overlapping flushed files) to L6.
inline constexpr int kNumLevels = 7;

// The manifest format this build writes and the newest it reads. Every
// encoded edit starts with it; a newer one is refused (FailedPrecondition).
inline constexpr uint32_t kManifestFormatVersion = 1;

// The key order of the tables, recorded in every manifest's first record.
inline constexpr std::string_view kComparatorName = "cairn.bytewise";

// One table file. smallest and largest are internal keys (dbformat.h).
struct FileMetaData {
  uint64_t number = 0;
  uint64_t file_size = 0;
  std::string smallest;
  std::string largest;
  SequenceNumber smallest_seq = 0;
  SequenceNumber largest_seq = 0;
  uint64_t num_entries = 0;
  // Range tombstones in the table's range-deletion block (table format 2);
  // manifest tag 10, absent (0) for a table without any. Reads load the
  // tombstones of the tables where it is not 0.
  uint64_t num_range_deletions = 0;
  // Set while a compaction has this file as input; read and written only by
  // the compaction scheduler under its lock. Not persisted.
  bool being_compacted = false;

  std::string_view smallest_user_key() const { return ExtractUserKey(smallest); }
  std::string_view largest_user_key() const { return ExtractUserKey(largest); }
};

// Field tags of an encoded VersionEdit. On disk: never renumber, never reuse;
// retired tags stay listed here, commented out.
enum class EditTag : uint32_t {
  // 0 is never a tag, so zeroed bytes never decode as a field.
  kFormatVersion = 1,   // varint32; always the first field
  kComparator = 2,      // length-prefixed name
  kLogNumber = 3,       // varint64
  kNextFileNumber = 4,  // varint64
  kLastSequence = 5,    // varint64
  kCompactPointer = 6,  // varint32 level, length-prefixed internal key
  kDeletedFile = 7,     // varint32 level, varint64 number
  kNewFile = 8,         // level, number, size, smallest, largest, seqs, entries
  kExtension = 9,       // varint32 extension tag, length-prefixed payload
  // 2026-12-07 (DeleteRange): varint32 level, varint64 number, varint64
  // count; follows the kNewFile of the same file in the same record.
  kFileRangeDeletions = 10,
};

class VersionEdit {
 public:
  // Empties the edit.
  void Clear();

  void SetComparatorName(std::string_view name) { comparator_ = std::string(name); }
  void SetLogNumber(uint64_t n) { log_number_ = n; }
  void SetNextFileNumber(uint64_t n) { next_file_number_ = n; }
  void SetLastSequence(SequenceNumber s) { last_sequence_ = s; }
  // REQUIRES: 0 <= level < kNumLevels.
  void SetCompactPointer(int level, std::string_view internal_key);
  // Adds a file at level. REQUIRES: 0 <= level < kNumLevels; smallest and
  // largest are internal keys. being_compacted is not carried.
  void AddFile(int level, const FileMetaData& file);
  // Removes file number from level.
  void RemoveFile(int level, uint64_t number);
  // Appends an opaque record that the manifest keeps and hands back, in order,
  // on recovery (VersionSet::Recover). The LSM never interprets it.
  void AddExtension(uint32_t tag, std::string_view payload);

  const std::optional<std::string>& comparator_name() const { return comparator_; }
  const std::optional<uint64_t>& log_number() const { return log_number_; }
  const std::optional<uint64_t>& next_file_number() const { return next_file_number_; }
  const std::optional<SequenceNumber>& last_sequence() const { return last_sequence_; }
  const std::vector<std::pair<int, std::string>>& compact_pointers() const {
    return compact_pointers_;
  }
  // (level, number), sorted and without duplicates.
  const absl::btree_set<std::pair<int, uint64_t>>& deleted_files() const {
    return deleted_files_;
  }
  const std::vector<std::pair<int, FileMetaData>>& new_files() const { return new_files_; }
  const std::vector<std::pair<uint32_t, std::string>>& extensions() const {
    return extensions_;
  }

  // Appends the encoding to *dst. Deterministic: equal edits encode equally.
  void EncodeTo(std::string* dst) const;

  // Replaces this edit with the one encoded in src.
  // Errors: FailedPrecondition when src was written by a newer format version;
  // DataLoss naming the field and byte offset for anything malformed (missing
  // format version, unknown tag, truncated field, level out of range, a key
  // that is not an internal key, smallest > largest). Never crashes; on error
  // the edit is left empty.
  absl::Status DecodeFrom(std::string_view src);

  // One field per line, for logs and the inspection tool.
  std::string DebugString() const;

 private:
  std::optional<std::string> comparator_;
  std::optional<uint64_t> log_number_;
  std::optional<uint64_t> next_file_number_;
  std::optional<SequenceNumber> last_sequence_;
  std::vector<std::pair<int, std::string>> compact_pointers_;
  absl::btree_set<std::pair<int, uint64_t>> deleted_files_;
  std::vector<std::pair<int, FileMetaData>> new_files_;
  std::vector<std::pair<uint32_t, std::string>> extensions_;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_VERSION_EDIT_H_
