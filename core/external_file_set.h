// ExternalFileSet is the FILESET descriptor of a file set that
// ExternalFileWriter writes and DB::IngestExternalFiles reads: the key
// range, the key table's size and each value-log segment's local id, size
// and record count, under one checksum. Layout: docs/ingestion.md,
// "The FILESET descriptor".
//
// Thread safety: a value type.
#ifndef CAIRN_CORE_EXTERNAL_FILE_SET_H_
#define CAIRN_CORE_EXTERNAL_FILE_SET_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace cairn {

struct ExternalFileSet {
  // The descriptor version this build writes and the newest it reads.
  static constexpr uint32_t kVersion = 1;
  // "cairnset", little-endian.
  static constexpr uint64_t kMagic = 0x7465736e72696163ull;

  struct Segment {
    uint64_t id = 0;    // local: the writer numbers its segments 1, 2, ...
    uint64_t size = 0;  // bytes, header included
    uint64_t records = 0;
    bool operator==(const Segment&) const = default;
  };
  std::string smallest_key;
  std::string largest_key;
  uint64_t entries = 0;
  uint64_t deletions = 0;
  uint64_t table_size = 0;
  std::vector<Segment> segments;  // ascending ids

  std::string Encode() const;
  // Errors: DataLoss naming path for a bad magic, checksum, truncation,
  // trailing bytes or an inconsistent field (segments not ascending,
  // smallest above largest, no entries); FailedPrecondition naming path and
  // both versions for a newer version (checked before the checksum, so that
  // a newer writer may change the rest).
  static absl::StatusOr<ExternalFileSet> Decode(std::string_view data, const std::string& path);

  bool operator==(const ExternalFileSet&) const = default;
};

// key with its non-printable bytes escaped, for messages.
std::string EscapedKey(std::string_view key);

// The files of a file set in dir.
std::string FileSetDescriptorPath(std::string_view dir);            // dir/FILESET
std::string FileSetTablePath(std::string_view dir);                 // dir/table.sst
std::string FileSetSegmentPath(std::string_view dir, uint64_t id);  // dir/NNNNNN.vlog

}  // namespace cairn

#endif  // CAIRN_CORE_EXTERNAL_FILE_SET_H_
