// The pieces of the SST file format shared by TableBuilder and Table: block
// handles, the block trailer (compression type and checksum), the properties
// block and the fixed-size footer. docs/table_format.md is the manual; this
// header is its code.
//
// Every decoder here takes bytes from disk and returns DataLoss naming the file
// and offset when they are wrong; none asserts on them.
#ifndef CAIRN_LSM_TABLE_FORMAT_H_
#define CAIRN_LSM_TABLE_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/file_system.h"
#include "lsm/range_tombstone.h"
#include "lsm/read_counters.h"

namespace cairn::lsm {

// "cairnSST" read as a little-endian uint64: the file's last 8 bytes.
inline constexpr uint64_t kTableMagicNumber = 0x5453536e72696163ull;
// Versions this build reads and writes. Retired versions: none yet.
// Version 2 (2026-12-07) adds the range-deletion block; version 3
// (2026-12-07, issue 60) adds the expiring entry types 4 and 5
// (lsm/dbformat.h) and may hold a range-deletion block too. A builder writes
// 3 only for a table that holds an expiring entry, 2 for one with range
// tombstones but no expiring entry, and 1 (byte for byte as before) for
// every other, so an older build refuses exactly the tables it would
// misread.
inline constexpr uint32_t kTableFormatVersion = 3;
inline constexpr uint32_t kOldestTableFormatVersion = 1;
inline constexpr uint32_t kRangeDeletionTableFormatVersion = 2;
inline constexpr uint32_t kExpiryTableFormatVersion = 3;

// Compression type byte of the block trailer. On disk: never renumber.
enum class BlockCompression : uint8_t { kNone = 0, kZstd = 1 };

// Trailer after every block: 1-byte compression type + fixed32 checksum (low
// 32 bits of XXH3-64 over the stored contents followed by the type byte).
inline constexpr size_t kBlockTrailerSize = 5;

// A decompressed block may not claim more than this (a guard against
// allocating what a corrupt frame header asks for).
inline constexpr size_t kMaxUncompressedBlockSize = size_t{1} << 30;

// Where a block lives: offset of its first byte and size of its stored
// contents, not counting the trailer. Encoded as two varint64s in index
// entries and as two fixed64s in the footer.
struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;

  void EncodeVarintTo(std::string* dst) const;
  // Consumes a varint-encoded handle from *input; false when malformed.
  bool DecodeVarintFrom(std::string_view* input);
  bool operator==(const BlockHandle&) const = default;
};
inline constexpr size_t kMaxVarintBlockHandleLength = 20;

// Statistics of one table, stored in the properties block as (varint32 tag,
// varint64 value) pairs. Unknown tags are skipped, so fields can be added
// without a version bump. Tags are on disk: never renumber or reuse.
struct TableProperties {
  uint64_t num_entries = 0;         // tag 1
  uint64_t num_deletions = 0;       // tag 2
  uint64_t raw_key_bytes = 0;       // tag 3: internal-key bytes added
  uint64_t raw_value_bytes = 0;     // tag 4
  uint64_t smallest_sequence = 0;   // tag 5
  uint64_t largest_sequence = 0;    // tag 6
  uint64_t num_data_blocks = 0;     // tag 7
  uint64_t num_value_pointers = 0;  // tag 8: entries of type kValuePointer
  // Tag 9 (2026-12-07, issue 60): the value-log bytes the table's pointers
  // name (each pointer's record size), for DB::GetApproximateSizes. Written
  // by builders that can size a pointer (TableOptions::value_pointer_bytes,
  // every table a DB writes); tables written before have none, and
  // has_value_pointer_bytes tells them apart from a table whose pointers
  // name 0 bytes.
  uint64_t value_pointer_bytes = 0;
  bool has_value_pointer_bytes = false;
  // Tags 10 to 12 (table format 2): the range tombstones in the
  // range-deletion block, and where that block is. Written only when
  // there is at least one.
  uint64_t num_range_deletions = 0;
  BlockHandle range_deletion_handle;
  // Tag 13 (2026-12-07, issue 60): entries of the expiring types 4 and 5
  // (written only when nonzero, by version 3 tables).
  uint64_t num_expiring = 0;

  void EncodeTo(std::string* dst) const;
  // DataLoss naming origin when the pairs are malformed.
  absl::Status DecodeFrom(std::string_view input, const std::string& origin);
};

// The last kFooterSize bytes of every SST file:
//   index handle, filter handle, properties handle (each fixed64 offset +
//   fixed64 size; a filter of size 0 means "no filter"), fixed32 version,
//   fixed32 checksum (low 32 bits of XXH3-64 over the 52 bytes before it),
//   fixed64 magic.
struct Footer {
  BlockHandle index_handle;
  BlockHandle filter_handle;
  BlockHandle properties_handle;
  uint32_t version = kOldestTableFormatVersion;

  void EncodeTo(std::string* dst) const;
  // Checks, in order: the magic (DataLoss "not an SST file"), the checksum
  // (DataLoss), the version (FailedPrecondition for one this build does not
  // know). input must be exactly kFooterSize bytes.
  absl::Status DecodeFrom(std::string_view input, const std::string& file_name,
                          uint64_t footer_offset);
};
inline constexpr size_t kFooterSize = 64;

// The range-deletion block's contents (format 2): varint64 count, then per
// tombstone bytes begin, bytes end, varint64 sequence (bytes = varint32
// length + bytes). Decode returns DataLoss naming origin when malformed.
void EncodeRangeDeletionBlock(const std::vector<RangeTombstone>& tombstones, std::string* dst);
absl::StatusOr<std::vector<RangeTombstone>> DecodeRangeDeletionBlock(std::string_view input,
                                                                     const std::string& origin);

// Appends a block's trailer for stored contents of the given type.
void AppendBlockTrailer(std::string_view contents, BlockCompression type, std::string* dst);

// OK when the block at handle, with its trailer, lies within the first
// data_end bytes of the file at path; else DataLoss naming file and offset.
absl::Status CheckBlockHandle(const std::string& path, uint64_t data_end,
                              const BlockHandle& handle);

// Verifies raw, the handle.size stored bytes of the block at handle followed
// by its trailer, and returns the block's uncompressed contents. DataLoss
// naming path and the block's offset when raw is short, the checksum fails,
// the compression type is unknown or the frame is bad.
absl::StatusOr<std::string> DecodeBlockContents(std::string raw, const std::string& path,
                                                const BlockHandle& handle);

// Reads the block at handle from file (within the first data_end bytes),
// verifies its checksum and returns its uncompressed contents. DataLoss naming
// the file and the block's offset for a short read, a bad checksum, an
// unknown compression type or a bad frame; I/O errors pass through. Counts a
// block read in counters (may be null).
absl::StatusOr<std::string> ReadBlockContents(const io::RandomAccessFile& file, uint64_t data_end,
                                              const BlockHandle& handle, ReadCounters* counters);

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_TABLE_FORMAT_H_
