// Log format: the framing of cairn's write-ahead log, also used by the
// MANIFEST. A log is a file header followed by opaque records, each split
// into checksummed fragments that never cross a 32 KiB block boundary.
// docs/wal_format.md describes it in full, with a worked example; this header
// holds its constants and the one checksum both sides compute.
#ifndef CAIRN_LSM_LOG_FORMAT_H_
#define CAIRN_LSM_LOG_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/checksum.h"
#include "io/coding.h"

namespace cairn::lsm {

// File header, at offset 0:
//   magic (8 bytes, "CAIRNWAL") | version fixed32 | log number fixed64 |
//   checksum fixed32 = low 32 bits of XXH3-64 over the 20 bytes before it.
inline constexpr uint64_t kLogMagic = 0x4c41574e52494143ull;  // "CAIRNWAL" as fixed64.
// Version 2 (the framing of version 1) adds one rule for WALs: a WAL that
// a newer one replaced ends with an end record (an empty write batch), so
// that recovery can tell a WAL closed whole from one a crash cut before it
// was synced (docs/wal_format.md, "End records"). Version 3 adds that a
// log may end in zeros its writer filled ahead of its appends
// (FileOptions::prefill_bytes): zeros from where a fragment would start to
// the end of the file are its clean end ("Zeros written ahead"). Version 4
// adds the WAL's sync records (13-byte records an older build would take
// for writes it cannot parse, so it must refuse the file: "Sync records").
// Version 5 (2026-12-07) adds range-deletion entries (type 3) to the write
// batches a WAL carries: an older build would refuse them as an unknown
// entry type, so as damage, and must refuse the file first. Version 6
// (2026-12-07, issue 60) adds the expiring entry types 4 and 5
// (lsm/dbformat.h) for the same reason. Version 7 (2026-12-08) adds the
// ingestion event (a record an older build would take for a malformed
// write batch: "Ingestion events"). Readers take all of them; the framing
// is the same in each.
inline constexpr uint32_t kLogFormatVersion = 7;
inline constexpr uint32_t kIngestionEventLogFormatVersion = 7;
inline constexpr uint32_t kExpiryLogFormatVersion = 6;
inline constexpr uint32_t kRangeDeletionLogFormatVersion = 5;
inline constexpr uint32_t kSyncRecordLogFormatVersion = 4;
inline constexpr uint32_t kPrefilledLogFormatVersion = 3;
inline constexpr uint32_t kOldestLogFormatVersion = 1;
inline constexpr size_t kLogFileHeaderSize = 8 + 4 + 8 + 4;

// The file is a sequence of blocks of this size; the first begins with the
// file header. A fragment never crosses a block boundary; a block tail too
// small for a fragment header (the trailer) is filled with zeros and skipped.
inline constexpr size_t kLogBlockSize = 32 * 1024;

// Fragment header: checksum fixed32 | length fixed16 | type (1 byte), then
// `length` payload bytes.
inline constexpr size_t kLogFragmentHeaderSize = 4 + 2 + 1;

// On disk. Never renumber; retired values stay listed here, never reused.
enum class LogFragmentType : uint8_t {
  // 0 is reserved so that zeros (preallocated or zero-filled space) never
  // form a fragment.
  kFull = 1,    // A whole record.
  kFirst = 2,   // The first fragment of a record.
  kMiddle = 3,  // An interior fragment.
  kLast = 4,    // The last fragment of a record.
};

inline bool IsValidLogFragmentType(uint8_t t) { return t >= 1 && t <= 4; }

// The fragment checksum: low 32 bits of XXH3-64 over
//   fixed64(log_number) | length fixed16 | type | payload.
// length_and_type is the 3 bytes of the fragment header after its checksum.
// Mixing in the log number makes a fragment left over from another log fail
// to verify here, so a stale or recycled file cannot pass for this one.
inline uint32_t LogFragmentChecksum(uint64_t log_number, std::string_view length_and_type,
                                    std::string_view payload) {
  char number[8];
  io::EncodeFixed64(number, log_number);
  io::Checksummer sum;
  sum.Update(std::string_view(number, sizeof(number)));
  sum.Update(length_and_type);
  sum.Update(payload);
  return sum.Digest32();
}

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_LOG_FORMAT_H_
