// SegmentReader::ReadValueRange: part of one value, without reading the rest
// of its record. Kept apart from segment_reader.cc because it verifies less
// (see the header): whole-record reads stay in one place.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "io/coding.h"
#include "io/status_macros.h"
#include "vlog/segment_reader.h"

namespace cairn::vlog {

absl::Status SegmentReader::ReadValueRange(const ValuePointer& pointer,
                                           std::string_view expected_key, uint64_t offset,
                                           uint64_t length, std::string* out,
                                           bool* compressed) const {
  out->clear();
  *compressed = false;
  CAIRN_RETURN_IF_ERROR(CheckPointer(pointer));
  // The header and, when the pointer is long enough to hold it, the key.
  const size_t head_size =
      std::min<uint64_t>(pointer.size, kRecordHeaderSize + expected_key.size());
  std::string head(head_size, '\0');
  std::string_view got;
  CAIRN_RETURN_IF_ERROR(file_->Read(pointer.offset, head_size, head.data(), &got));
  if (got.size() < head_size) {
    return Corrupt(pointer, absl::StrCat("record cut short by the end of the file (", got.size(),
                                         " of ", head_size, " header bytes)"));
  }
  const uint64_t key_len = io::DecodeFixed32(got.data() + 4);
  const uint64_t value_len = io::DecodeFixed32(got.data() + 8);
  const uint8_t flags = static_cast<uint8_t>(got[12]);
  if (key_len > kMaxRecordKeySize || value_len > kMaxRecordValueSize ||
      RecordSize(key_len, value_len) != pointer.size) {
    return Corrupt(pointer, absl::StrCat("record header claims a ", key_len, "-byte key and a ",
                                         value_len, "-byte value; the pointer says ",
                                         pointer.size, " bytes"));
  }
  if ((flags & ~kKnownRecordFlags) != 0) return Corrupt(pointer, "unknown record flags");
  if (key_len != expected_key.size() || got.substr(kRecordHeaderSize) != expected_key) {
    return Corrupt(pointer, "record holds another key");
  }
  if ((flags & kRecordFlagZstd) != 0) {
    *compressed = true;
    return absl::OkStatus();
  }
  if (offset >= value_len || length == 0) return absl::OkStatus();
  const size_t n = static_cast<size_t>(std::min(length, value_len - offset));
  out->resize(n);
  CAIRN_RETURN_IF_ERROR(
      file_->Read(pointer.offset + kRecordHeaderSize + key_len + offset, n, out->data(), &got));
  if (got.size() < n) {
    out->clear();
    return Corrupt(pointer, absl::StrCat("value cut short by the end of the file (", got.size(),
                                         " of ", n, " bytes at value offset ", offset, ")"));
  }
  if (got.data() != out->data()) std::memmove(out->data(), got.data(), n);
  return absl::OkStatus();
}

}  // namespace cairn::vlog
