// Internal keys: the LSM's view of a user key at one sequence number.
//
//   internal key = user_key . fixed64_le((sequence << 8) | type)
//
// Ordered by user key ascending (bytewise), then sequence descending, then
// type descending, so the newest version of a key comes first.
//
// The LSM stores values as tagged bytes: kValue holds the value inline,
// kValuePointer holds an opaque pointer that only the value log understands.
// The LSM never interprets pointer bytes; it hands the ones a compaction drops
// to a CompactionListener.
//
// Expiring entries (issue 60, TTL; WAL format 6, table format 3): types 4 and
// 5 are kValue and kValuePointer whose stored bytes begin with the entry's
// expiry, fixed64 microseconds since the Unix epoch, followed by the inline
// value or the pointer bytes. Readers treat an entry whose expiry is at or
// before their clock as a deletion (docs/decisions/20261207_ttl_expiry.md).
#ifndef CAIRN_LSM_DBFORMAT_H_
#define CAIRN_LSM_DBFORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "io/coding.h"

namespace cairn::lsm {

using SequenceNumber = uint64_t;
inline constexpr SequenceNumber kMaxSequenceNumber = (uint64_t{1} << 56) - 1;

// On disk (WAL, SST). Never renumber; retired values stay listed here.
enum class ValueType : uint8_t {
  kDeletion = 0,
  kValue = 1,
  kValuePointer = 2,
  // A range deletion (DeleteRange, 2026-12-07): in a write batch its key is
  // the range's begin and its value the exclusive end; it deletes every
  // version of every user key in [begin, end) with a lower sequence. It
  // never appears in a table's data blocks or a memtable's skip list: both
  // keep range deletions beside their point entries
  // (lsm/range_tombstone.h).
  kRangeDeletion = 3,
  // An inline value or a value pointer whose stored bytes begin with an
  // 8-byte expiry (TTL, 2026-12-07, issue 60).
  kValueWithExpiry = 4,
  kValuePointerWithExpiry = 5,
};
// Seek targets use the highest type so they sort before every entry of the
// same user key and sequence.
inline constexpr ValueType kValueTypeForSeek = ValueType::kValuePointerWithExpiry;

// Types a point entry (a memtable's or a data block's) may have.
inline bool IsValidValueType(uint8_t t) { return t <= 2 || t == 4 || t == 5; }
// Types a write batch entry may have: the point types and kRangeDeletion.
inline bool IsValidBatchType(uint8_t t) { return t <= 5; }

// Bytes of the expiry that begins an expiring entry's stored value.
inline constexpr size_t kExpirySize = 8;

inline bool HasExpiry(ValueType t) {
  return t == ValueType::kValueWithExpiry || t == ValueType::kValuePointerWithExpiry;
}
// kValue for kValueWithExpiry, kValuePointer for kValuePointerWithExpiry;
// any other type unchanged.
inline ValueType WithoutExpiry(ValueType t) {
  if (t == ValueType::kValueWithExpiry) return ValueType::kValue;
  if (t == ValueType::kValuePointerWithExpiry) return ValueType::kValuePointer;
  return t;
}
// The expiring form of kValue or kValuePointer; any other type unchanged.
inline ValueType WithExpiry(ValueType t) {
  if (t == ValueType::kValue) return ValueType::kValueWithExpiry;
  if (t == ValueType::kValuePointer) return ValueType::kValuePointerWithExpiry;
  return t;
}

// An entry's stored bytes taken apart: the type without expiry, the expiry
// (0: none) and the inline value or pointer bytes.
struct StoredValue {
  ValueType type = ValueType::kValue;
  uint64_t expiry_micros = 0;
  std::string_view payload;
};

// False when an expiring entry's bytes are shorter than its expiry (damage),
// or its expiry is 0 (never written: 0 means "no expiry").
inline bool SplitStoredValue(ValueType t, std::string_view stored, StoredValue* out) {
  out->type = WithoutExpiry(t);
  if (!HasExpiry(t)) {
    out->expiry_micros = 0;
    out->payload = stored;
    return true;
  }
  if (stored.size() < kExpirySize) return false;
  out->expiry_micros = io::DecodeFixed64(stored.data());
  out->payload = stored.substr(kExpirySize);
  return out->expiry_micros != 0;
}

// The stored bytes of an expiring entry.
inline void AppendExpiringValue(std::string* dst, uint64_t expiry_micros,
                                std::string_view payload) {
  io::PutFixed64(dst, expiry_micros);
  dst->append(payload);
}

// Whether an entry with this expiry (0: none) reads as deleted at now.
inline bool IsExpired(uint64_t expiry_micros, uint64_t now_micros) {
  return expiry_micros != 0 && expiry_micros <= now_micros;
}

inline uint64_t PackSequenceAndType(SequenceNumber seq, ValueType t) {
  return (seq << 8) | static_cast<uint8_t>(t);
}

inline void AppendInternalKey(std::string* dst, std::string_view user_key,
                              SequenceNumber seq, ValueType t) {
  dst->append(user_key);
  io::PutFixed64(dst, PackSequenceAndType(seq, t));
}

struct ParsedInternalKey {
  std::string_view user_key;
  SequenceNumber sequence = 0;
  ValueType type = ValueType::kValue;
};

// False when ikey is shorter than 8 bytes or has an unknown type.
inline bool ParseInternalKey(std::string_view ikey, ParsedInternalKey* out) {
  if (ikey.size() < 8) return false;
  uint64_t tag = io::DecodeFixed64(ikey.data() + ikey.size() - 8);
  uint8_t t = static_cast<uint8_t>(tag & 0xff);
  if (!IsValidValueType(t)) return false;
  out->user_key = ikey.substr(0, ikey.size() - 8);
  out->sequence = tag >> 8;
  out->type = static_cast<ValueType>(t);
  return true;
}

// REQUIRES: ikey.size() >= 8.
inline std::string_view ExtractUserKey(std::string_view ikey) {
  return ikey.substr(0, ikey.size() - 8);
}
inline uint64_t ExtractTag(std::string_view ikey) {
  return io::DecodeFixed64(ikey.data() + ikey.size() - 8);
}

// Three-way comparison of internal keys as described above.
inline int CompareInternalKeys(std::string_view a, std::string_view b) {
  int r = ExtractUserKey(a).compare(ExtractUserKey(b));
  if (r != 0) return r < 0 ? -1 : 1;
  uint64_t ta = ExtractTag(a), tb = ExtractTag(b);
  if (ta > tb) return -1;
  if (ta < tb) return 1;
  return 0;
}

struct InternalKeyLess {
  bool operator()(std::string_view a, std::string_view b) const {
    return CompareInternalKeys(a, b) < 0;
  }
};

// The key to Seek to for the newest version of user_key visible at seq.
inline std::string MakeLookupKey(std::string_view user_key, SequenceNumber seq) {
  std::string k;
  AppendInternalKey(&k, user_key, seq, kValueTypeForSeek);
  return k;
}

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_DBFORMAT_H_
