// The value-log segment format: the segment header and the value record, as
// described in docs/vlog_format.md. The writer, the reader and the scanner
// share these encoders and checks so the format lives in one place.
//
//   segment := header record*
//   header  := magic:fixed64 version:fixed32 kind:fixed32 segment_id:fixed64
//              checksum:fixed32                                  (28 bytes)
//   record  := checksum:fixed32 key_len:fixed32 value_len:fixed32 flags:u8
//              key value                                  (13 + k + v bytes)
//   value   := the value | one zstd frame | a chunked value (see below)
//
// Thread safety: the functions are pure.
#ifndef CAIRN_VLOG_VLOG_FORMAT_H_
#define CAIRN_VLOG_VLOG_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cairn::vlog {

// "cairnvlg" read as a little-endian uint64.
inline constexpr uint64_t kSegmentMagic = 0x676c766e72696163ull;
// The segment format this build writes. Version 2 added chunked records
// (kRecordFlagChunked); a version 1 segment is read as it is, since it never
// holds one.
inline constexpr uint32_t kSegmentFormatVersion = 2;
inline constexpr uint32_t kOldestReadableSegmentVersion = 1;
inline constexpr size_t kSegmentHeaderSize = 28;
inline constexpr size_t kRecordHeaderSize = 13;

// Largest value a record may hold (uncompressed); equal to the public
// cairn::kMaxValueSize, which vlog/ may not include. Also the bound on what a
// compressed record may claim to expand to. The value as stored may be a
// little longer (kMaxRecordStoredSize, below).
inline constexpr size_t kMaxRecordValueSize = 256u * 1024 * 1024;
// Largest key a record may hold; equal to cairn::kMaxKeySize.
inline constexpr size_t kMaxRecordKeySize = 64 * 1024;

// What a segment holds. On disk (segment header, manifest): never renumber.
enum class SegmentKind : uint32_t {
  // 0 is invalid, so a zeroed header never passes as a kind.
  kFresh = 1,     // user writes, appended by the write path
  kGcOutput = 2,  // live records relocated by the garbage collector
};
bool IsValidSegmentKind(uint32_t kind);
const char* SegmentKindName(SegmentKind kind);

// Record flag bits. On disk: never reuse a bit; readers reject records with
// any other bit set, and with both bits set.
inline constexpr uint8_t kRecordFlagZstd = 0x01;     // value is one zstd frame
inline constexpr uint8_t kRecordFlagChunked = 0x02;  // value is a chunk table and chunks
inline constexpr uint8_t kKnownRecordFlags = kRecordFlagZstd | kRecordFlagChunked;
// Flags a reader accepts: known bits, and not both forms at once.
inline constexpr bool ValidRecordFlags(uint8_t flags) {
  return (flags & ~kKnownRecordFlags) == 0 &&
         (flags & (kRecordFlagZstd | kRecordFlagChunked)) != (kRecordFlagZstd | kRecordFlagChunked);
}

// A chunked value (docs/vlog_format.md, "Chunked values"): the value cut
// into chunks of chunk_size bytes (the last one shorter), each stored raw or
// as its own zstd frame under its own checksum, so that part of the value can
// be read, verified and decompressed without the rest, and without the rest
// of the table.
//
//   chunked := table_checksum:fixed32 raw_size:fixed32 chunk_size:fixed32
//              count:fixed32 entry[count] chunk[count]
//   entry   := end:fixed32 checksum:fixed32 flags:u8                 (9 bytes)
//
// table_checksum covers raw_size, chunk_size and count. Chunk i's stored
// bytes run from the previous entry's end (the first chunk: from the end of
// the table) to its own end, offsets from the start of the stored value; its
// checksum is XXH3-64 (low half) of them seeded with i * 256 + flags, so a
// damaged end, flag or entry is caught by the chunk it describes.
inline constexpr size_t kChunkTableHeaderSize = 16;
inline constexpr size_t kChunkEntrySize = 9;
inline constexpr uint8_t kChunkFlagZstd = 0x01;
// Chunk sizes a reader accepts; the writer's default is 64 KiB.
inline constexpr uint32_t kMinValueChunkSize = 4;
inline constexpr uint32_t kMaxValueChunkSize = 16u << 20;
inline constexpr uint32_t kDefaultValueChunkSize = 64u << 10;

struct SegmentHeader {
  uint32_t version = kSegmentFormatVersion;
  SegmentKind kind = SegmentKind::kFresh;
  uint64_t segment_id = 0;
};

// Appends the 28 header bytes to *dst.
void EncodeSegmentHeader(const SegmentHeader& header, std::string* dst);

// Decodes and checks the first kSegmentHeaderSize bytes of a segment; path
// names the file in error messages.
// Errors: DataLoss when data is shorter than a header, the magic is wrong,
// the checksum fails or the kind is unknown; FailedPrecondition when the
// segment was written by another format version (checked after the magic,
// before the checksum, so a newer writer may change the rest of the header).
absl::StatusOr<SegmentHeader> DecodeSegmentHeader(std::string_view data,
                                                  const std::string& path);

// Bytes of a record holding key and value stored uncompressed (an upper bound
// for a compressed one).
inline constexpr uint64_t RecordSize(uint64_t key_len, uint64_t value_len) {
  return kRecordHeaderSize + key_len + value_len;
}

// Bytes of the chunk table of a raw_size-byte value cut into chunk_size-byte
// chunks. REQUIRES: chunk_size > 0.
inline constexpr uint64_t ChunkTableSize(uint64_t raw_size, uint64_t chunk_size) {
  return kChunkTableHeaderSize + (raw_size + chunk_size - 1) / chunk_size * kChunkEntrySize;
}
// The largest stored value (a record's value_len) a writer produces and a
// reader accepts. A stored value can be longer than the value it holds (at
// most kMaxRecordValueSize): a chunked value adds its table, and a zstd frame
// of incompressible bytes is longer than they are (the encoders keep a frame
// only when it is shorter, but the limit does not rely on that). So the
// limit is the raw limit plus the table of a largest value at the default
// chunk size (36,880 bytes) plus zstd's worst-case growth of it (by
// ZSTD_COMPRESSBOUND, at most 1/256 of the input plus 64 bytes). A writer
// refuses a value whose stored form could be longer still (only a chunk size
// below the default makes one), so every record it writes reads back.
inline constexpr uint64_t kMaxRecordStoredSize =
    kMaxRecordValueSize + ChunkTableSize(kMaxRecordValueSize, kDefaultValueChunkSize) +
    kMaxRecordValueSize / 256 + 64;
// value_len and the record size are fixed32 on disk and in a pointer.
static_assert(RecordSize(kMaxRecordKeySize, kMaxRecordStoredSize) <= UINT32_MAX);

// The largest record a writer produces; readers treat larger claims as bad.
inline constexpr uint64_t kMaxRecordSize = RecordSize(kMaxRecordKeySize, kMaxRecordStoredSize);

// Appends one record to *dst. stored_value is the value as stored (already
// compressed when flags has kRecordFlagZstd, a chunked value when it has
// kRecordFlagChunked), given as the concatenation of parts.
// REQUIRES: key.size() <= kMaxRecordKeySize and the parts' total size
// <= kMaxRecordStoredSize.
void EncodeRecord(std::string_view key, std::initializer_list<std::string_view> stored_value,
                  uint8_t flags, std::string* dst);
inline void EncodeRecord(std::string_view key, std::string_view stored_value, uint8_t flags,
                         std::string* dst) {
  EncodeRecord(key, {stored_value}, flags, dst);
}
// How a writer stores a value (SegmentWriterOptions carries the same three).
struct RecordEncoding {
  // Try zstd; the frame is kept only when it is smaller than the value.
  bool compress = false;
  int compression_level = 3;  // zstd level, 1..19
  // A value longer than this is stored chunked; 0: never chunk.
  uint32_t chunk_size = kDefaultValueChunkSize;
};

// Appends to *dst the whole record a writer stores for key and value:
// chunked when the value is longer than encoding.chunk_size, else one zstd
// frame when encoding.compress and the frame is smaller, else the value
// itself. The record's checksum covers neither its segment nor its offset,
// so a record can be encoded before its place in the log is known (the
// write path encodes in each writer's own thread, docs/architecture.md).
// *table and *body are scratch for a chunked value.
// REQUIRES: key.size() <= kMaxRecordKeySize, value.size() <=
// kMaxRecordValueSize, and a chunk_size of 0 or within
// kMinValueChunkSize..kMaxValueChunkSize. Errors: InvalidArgument when the
// stored value could be longer than kMaxRecordStoredSize (the chunk table and
// the value together: a value near the limit in chunks smaller than the
// default), checked before any compression; zstd's. On an error *dst is left
// as it was.
absl::Status EncodeValueRecord(std::string_view key, std::string_view value,
                               const RecordEncoding& encoding, std::string* dst,
                               std::string* table, std::string* body);

// Encodes value as a chunked stored value: appends its table to *table,
// and *body_is_value tells what follows it. True: every chunk is stored raw,
// so the stored value is *table followed by value itself (no copy made).
// False: *body holds the chunks as stored (zstd, when compress and it makes
// a chunk smaller, at level).
// REQUIRES: kMinValueChunkSize <= chunk_size <= kMaxValueChunkSize and
// value.size() <= kMaxRecordValueSize. Errors: zstd's.
absl::Status EncodeChunkedValue(std::string_view value, uint32_t chunk_size, bool compress,
                                int level, std::string* table, std::string* body,
                                bool* body_is_value);

// The 16 bytes that open a chunked value.
struct ChunkTableHeader {
  uint32_t raw_size = 0;
  uint32_t chunk_size = 0;
  uint32_t count = 0;
  // Where the first chunk starts in the stored value.
  uint64_t table_size() const { return kChunkTableHeaderSize + uint64_t{count} * kChunkEntrySize; }
  // The chunk holding byte `offset` of the value. REQUIRES: offset < raw_size.
  uint32_t ChunkOf(uint64_t offset) const { return static_cast<uint32_t>(offset / chunk_size); }
};

// One chunk of a chunked value, from its table entry.
struct ChunkRef {
  uint32_t index = 0;
  uint64_t stored_offset = 0;  // from the start of the stored value
  uint32_t stored_size = 0;
  uint32_t raw_size = 0;       // bytes of the value it holds
  uint64_t raw_offset = 0;     // where they start in the value
  uint32_t checksum = 0;
  uint8_t flags = 0;
  bool compressed() const { return (flags & kChunkFlagZstd) != 0; }
};
// True when some chunk is a zstd frame; false means the chunks, back to back,
// are the value's bytes.
inline bool AnyCompressed(const std::vector<ChunkRef>& chunks) {
  for (const ChunkRef& c : chunks) {
    if (c.compressed()) return true;
  }
  return false;
}

// Parses and checks the table header at data[0] of a chunked stored value
// of stored_size bytes. Errors: DataLoss naming the failed check.
absl::Status ParseChunkTableHeader(std::string_view data, uint64_t stored_size,
                                   ChunkTableHeader* header);

// The table bytes that chunks [first, last] need, as an offset in the stored
// value and a length: their entries and, for first > 0, the entry before,
// whose end is where chunk first starts.
struct ChunkEntrySpan {
  uint64_t offset = 0;
  uint64_t size = 0;
};
ChunkEntrySpan EntriesFor(uint32_t first, uint32_t last);

// Parses the entries of chunks [first, last] from span, the bytes
// EntriesFor(first, last) names. Errors: DataLoss for unknown flags, ends
// out of order or past stored_size, or a raw chunk of the wrong size.
absl::Status ParseChunkEntries(const ChunkTableHeader& header, uint64_t stored_size,
                               uint32_t first, uint32_t last, std::string_view span,
                               std::vector<ChunkRef>* chunks);

// Header and every entry of a whole chunked stored value; the chunks must
// fill it exactly. Errors: as the two above.
absl::Status ParseChunkTable(std::string_view stored, ChunkTableHeader* header,
                             std::vector<ChunkRef>* chunks);

// Appends chunk's value bytes to *out, given its stored bytes; checks the
// chunk's checksum when verify. Errors: DataLoss for a checksum mismatch or
// a frame that does not decode to exactly chunk.raw_size bytes.
absl::Status DecodeChunk(const ChunkRef& chunk, std::string_view stored, bool verify,
                         std::string* out);

// A record parsed in place; the views point into the parsed bytes.
struct ParsedRecord {
  uint32_t size = 0;  // whole record, header included
  uint8_t flags = 0;
  std::string_view key;
  std::string_view stored_value;
  bool compressed() const { return (flags & kRecordFlagZstd) != 0; }
  bool chunked() const { return (flags & kRecordFlagChunked) != 0; }
  // The stored value is the value itself (neither flag).
  bool plain() const { return (flags & (kRecordFlagZstd | kRecordFlagChunked)) == 0; }
};

// Outcome of parsing the bytes at a record boundary.
enum class RecordCheck : uint8_t {
  kOk = 0,
  kTruncated = 1,    // fewer bytes than the header or its lengths claim
  kBadLength = 2,    // a length beyond kMaxRecordKeySize / kMaxRecordStoredSize
  kBadChecksum = 3,  // the checksum does not match the bytes it covers
  kBadFlags = 4,     // checksum fine, but a flag bit this build does not know, or both
};
const char* RecordCheckName(RecordCheck check);

// Parses and verifies the record starting at data[0]; data may continue past
// the record. Never reads outside data.
RecordCheck ParseRecord(std::string_view data, ParsedRecord* record);

// The user value of a parsed record: stored_value itself, its zstd frame
// decompressed, or its chunks put together. Replaces *value. Errors:
// DataLoss when a frame does not decode, claims more than
// kMaxRecordValueSize bytes, or a chunk table fails its checks.
absl::Status RecordValue(const ParsedRecord& record, std::string* value);
// The value of a chunked stored value (already covered by its record's
// checksum, so chunk checksums are not checked again). Errors: as RecordValue.
absl::Status ChunkedValue(std::string_view stored, std::string* value);

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_VLOG_FORMAT_H_
