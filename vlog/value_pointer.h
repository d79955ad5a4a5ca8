// ValuePointer names one value record in the value log: the segment (its file
// number), the record's byte offset in the segment and the record's size, so
// one read fetches the whole record. The LSM stores the encoded pointer as the
// opaque value bytes of a kValuePointer entry and never looks inside.
//
//   encoding := varint64(segment_id) varint64(offset) varint32(size)
//
// Typically 5-10 bytes: segment ids are small, offsets below 2^35 take at
// most 5 bytes, sizes below 2^21 take 3.
//
// Thread safety: a value type; no shared state.
#ifndef CAIRN_VLOG_VALUE_POINTER_H_
#define CAIRN_VLOG_VALUE_POINTER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace cairn::vlog {

struct ValuePointer {
  uint64_t segment_id = 0;
  uint64_t offset = 0;  // of the record's first byte, from the file's start
  uint32_t size = 0;    // of the whole record, header included

  // Appends the varint encoding to *dst.
  void EncodeTo(std::string* dst) const;
  // Decodes a pointer from the front of *input and advances past it. Returns
  // false (input and *pointer unspecified) when the bytes run out, a varint
  // is malformed, or the size is smaller than a record header.
  static bool DecodeFrom(std::string_view* input, ValuePointer* pointer);

  // "seg 12 off 4096 size 1037".
  std::string DebugString() const;

  bool operator==(const ValuePointer&) const = default;
};

// Largest encoding: two full varint64s and a varint32.
inline constexpr size_t kMaxEncodedValuePointerSize = 25;

// The LSM's opaque value bytes for a pointer: exactly its encoding.
std::string EncodeValuePointer(const ValuePointer& pointer);

// Decodes value bytes that the LSM stored for a kValuePointer entry.
// Errors: DataLoss when they are not exactly one well-formed pointer
// (malformed, truncated or with trailing bytes).
absl::StatusOr<ValuePointer> DecodeValuePointer(std::string_view bytes);

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_VALUE_POINTER_H_
