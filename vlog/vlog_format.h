// The value-log segment format: the segment header and the value record, as
// described in docs/vlog_format.md. The writer, the reader and the scanner
// share these encoders and checks so the format lives in one place.
//
//   segment := header record*
//   header  := magic:fixed64 version:fixed32 kind:fixed32 segment_id:fixed64
//              checksum:fixed32                                  (28 bytes)
//   record  := checksum:fixed32 key_len:fixed32 value_len:fixed32 flags:u8
//              key value                                  (13 + k + v bytes)
//
// Thread safety: the functions are pure.
#ifndef CAIRN_VLOG_VLOG_FORMAT_H_
#define CAIRN_VLOG_VLOG_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cairn::vlog {

// "cairnvlg" read as a little-endian uint64.
inline constexpr uint64_t kSegmentMagic = 0x676c766e72696163ull;
// The segment format this build writes and the only one it reads.
inline constexpr uint32_t kSegmentFormatVersion = 1;
inline constexpr size_t kSegmentHeaderSize = 28;
inline constexpr size_t kRecordHeaderSize = 13;

// Largest value a record may hold (uncompressed); equal to the public
// cairn::kMaxValueSize, which vlog/ may not include. Also the bound on what a
// compressed record may claim to expand to.
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

// Record flag bits. On disk: never reuse a bit; version 1 readers reject
// records with any other bit set.
inline constexpr uint8_t kRecordFlagZstd = 0x01;  // value is one zstd frame
inline constexpr uint8_t kKnownRecordFlags = kRecordFlagZstd;

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
// The largest record a writer produces; readers treat larger claims as bad.
inline constexpr uint64_t kMaxRecordSize = RecordSize(kMaxRecordKeySize, kMaxRecordValueSize);

// Appends one record to *dst. stored_value is the value as stored (already
// compressed when flags has kRecordFlagZstd).
// REQUIRES: key.size() <= kMaxRecordKeySize and
// stored_value.size() <= kMaxRecordValueSize.
void EncodeRecord(std::string_view key, std::string_view stored_value, uint8_t flags,
                  std::string* dst);

// A record parsed in place; the views point into the parsed bytes.
struct ParsedRecord {
  uint32_t size = 0;  // whole record, header included
  uint8_t flags = 0;
  std::string_view key;
  std::string_view stored_value;
  bool compressed() const { return (flags & kRecordFlagZstd) != 0; }
};

// Outcome of parsing the bytes at a record boundary.
enum class RecordCheck : uint8_t {
  kOk = 0,
  kTruncated = 1,    // fewer bytes than the header or its lengths claim
  kBadLength = 2,    // a length beyond kMaxRecordKeySize / kMaxRecordValueSize
  kBadChecksum = 3,  // the checksum does not match the bytes it covers
  kBadFlags = 4,     // checksum fine, but a flag bit this build does not know
};
const char* RecordCheckName(RecordCheck check);

// Parses and verifies the record starting at data[0]; data may continue past
// the record. Never reads outside data.
RecordCheck ParseRecord(std::string_view data, ParsedRecord* record);

// The user value of a parsed record: stored_value itself, or its zstd frame
// decompressed. Replaces *value. Errors: DataLoss when the frame does not
// decode or claims more than kMaxRecordValueSize bytes.
absl::Status RecordValue(const ParsedRecord& record, std::string* value);

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_VLOG_FORMAT_H_
