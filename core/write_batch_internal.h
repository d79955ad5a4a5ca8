// WriteBatchInternal: the engine's view of a WriteBatch's encoding, which is
// also the payload of one WAL record (docs/wal_format.md, "Batch payload"):
//
//   batch  := sequence:fixed64 count:fixed32 entry*
//   entry  := type:u8 key:lenprefixed [value:lenprefixed]   (no value for deletions)
//
// type is lsm::ValueType: 0 deletion, 1 inline value, 2 value pointer, 3
// range deletion (key = begin, value = end; WAL format 5), 4 inline value
// with expiry, 5 value pointer with expiry (WAL format 6; the value of 4 and
// 5 begins with the fixed64 expiry, lsm/dbformat.h). Users only ever add
// types 0, 1, 3 and 4; the write path rewrites large values into pointers
// (type 2 or 5) before the batch reaches the WAL.
#ifndef CAIRN_CORE_WRITE_BATCH_INTERNAL_H_
#define CAIRN_CORE_WRITE_BATCH_INTERNAL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "cairn/write_batch.h"
#include "lsm/dbformat.h"

namespace cairn {

inline constexpr size_t kBatchHeaderSize = 12;

class WriteBatchInternal {
 public:
  // InvalidArgument when key or value is over its limit (kMaxKeySize,
  // kMaxValueSize).
  static absl::Status CheckSizes(std::string_view key, std::string_view value);
  // InvalidArgument unless begin < end and both are within kMaxKeySize.
  static absl::Status CheckRange(std::string_view begin, std::string_view end);
  static uint64_t Sequence(const WriteBatch& b);
  static void SetSequence(WriteBatch* b, uint64_t seq);
  static void SetCount(WriteBatch* b, uint32_t n);
  static std::string_view Contents(const WriteBatch& b) { return b.rep_; }
  // Replaces the batch with contents read from the WAL. DataLoss when
  // contents are shorter than the header.
  static absl::Status SetContents(WriteBatch* b, std::string_view contents);
  // The end record that closes a WAL a newer one replaced (WAL format 2,
  // docs/wal_format.md, "End records"): a batch of no entries carrying the
  // newest write's sequence. No other batch the DB writes is empty.
  static std::string EndRecord(uint64_t sequence);
  static bool IsEndRecord(std::string_view contents);
  // A sync record (WAL format 4, docs/wal_format.md, "Sync records"): what
  // was durable when it was written, so that recovery can tell a power
  // cut's unsynced suffix from damage to synced writes. 13 bytes: an empty
  // batch's header carrying the synced sequence, then the kind.
  enum class SyncKind : uint8_t {
    // The first record of a WAL a switch began: every write through the
    // sequence was synced before this WAL was.
    kSwitch = 1,
    // Written by a sync that synced the closed WALs, after their syncs
    // completed: every older WAL is durable whole, through its end record.
    kOlderWalsWhole = 2,
  };
  static std::string SyncRecord(SyncKind kind, uint64_t synced_sequence);
  // Whether contents is a sync record (of a known kind); sets the outputs
  // when it is.
  static bool ParseSyncRecord(std::string_view contents, SyncKind* kind,
                              uint64_t* synced_sequence);
  // An ingestion event (WAL format 7, docs/wal_format.md, "Ingestion
  // events"): external files became visible at one sequence number, which
  // the event takes (DB::IngestExternalFiles). An empty batch's header
  // carrying that sequence, the marker byte, then the files' names:
  //   fixed64(sequence) fixed32(0) u8(0x10) varint32(n) lenprefixed(name)*n
  // At least 14 bytes, so never an end record (12) or a sync record (13).
  static constexpr uint8_t kIngestionEventMarker = 0x10;
  static std::string IngestionEventRecord(uint64_t sequence,
                                          const std::vector<std::string>& files);
  // Whether contents is an ingestion event (only its header and marker are
  // looked at: IsIngestionEvent); ParseIngestionEvent sets the outputs, and
  // is DataLoss when the names do not parse or bytes follow them.
  static bool IsIngestionEvent(std::string_view contents);
  static absl::Status ParseIngestionEvent(std::string_view contents, uint64_t* sequence,
                                          std::vector<std::string>* files);
  // Appends src's entries to dst (sequence of dst unchanged).
  static void Append(WriteBatch* dst, const WriteBatch& src);
  // Appends entries, whole encoded entries cut from another batch's
  // Contents; the caller sets the count (SetCount).
  static void AppendEntries(WriteBatch* dst, std::string_view entries);
  // Adds an entry of any type (a pointer entry's value is the pointer bytes).
  static void AddEntry(WriteBatch* b, lsm::ValueType type, std::string_view key,
                       std::string_view value);

  // The batch with each kValue entry made to expire at expiry_micros
  // (kValueWithExpiry) in *out; entries with an expiry of their own keep it.
  // DataLoss for a malformed batch, as ForEach.
  static absl::Status WithExpiry(const WriteBatch& b, uint64_t expiry_micros, WriteBatch* out);

  // Visits each entry with its sequence number (the batch's sequence plus
  // its index). DataLoss when the encoding is malformed (an expiring entry
  // without its 8-byte nonzero expiry included) or the count is
  // wrong; on error nothing after the bad entry is visited.
  using EntryFn = absl::FunctionRef<absl::Status(lsm::SequenceNumber seq, lsm::ValueType type,
                                                 std::string_view key, std::string_view value)>;
  static absl::Status ForEach(const WriteBatch& b, EntryFn fn);
  static absl::Status ForEach(std::string_view contents, EntryFn fn);
};

}  // namespace cairn

#endif  // CAIRN_CORE_WRITE_BATCH_INTERNAL_H_
