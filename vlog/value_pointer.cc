#include "vlog/value_pointer.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "io/coding.h"
#include "vlog/vlog_format.h"

namespace cairn::vlog {

void ValuePointer::EncodeTo(std::string* dst) const {
  io::PutVarint64(dst, segment_id);
  io::PutVarint64(dst, offset);
  io::PutVarint32(dst, size);
}

bool ValuePointer::DecodeFrom(std::string_view* input, ValuePointer* pointer) {
  return io::GetVarint64(input, &pointer->segment_id) &&
         io::GetVarint64(input, &pointer->offset) && io::GetVarint32(input, &pointer->size) &&
         pointer->size >= kRecordHeaderSize;
}

std::string ValuePointer::DebugString() const {
  return absl::StrCat("seg ", segment_id, " off ", offset, " size ", size);
}

std::string EncodeValuePointer(const ValuePointer& pointer) {
  std::string out;
  pointer.EncodeTo(&out);
  return out;
}

absl::StatusOr<ValuePointer> DecodeValuePointer(std::string_view bytes) {
  std::string_view input = bytes;
  ValuePointer pointer;
  if (!ValuePointer::DecodeFrom(&input, &pointer) || !input.empty()) {
    return absl::DataLossError(absl::StrCat("malformed value pointer (",
                                            bytes.size(), " bytes: ",
                                            absl::BytesToHexString(absl::string_view(
                                                bytes.data(), std::min<size_t>(bytes.size(), 32))), ")"));
  }
  return pointer;
}

}  // namespace cairn::vlog
