#include "vlog/prepared_records.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "io/status_macros.h"

namespace cairn::vlog {

namespace {
// This thread's kept buffer (PreparedRecords::Reserve): empty, with the
// capacity of the largest buffer a PreparedRecords of this thread ended
// with, up to kKeptBufferBytes.
thread_local std::string kept_buffer;
}  // namespace

PreparedRecords::~PreparedRecords() {
  if (bytes_.capacity() > kept_buffer.capacity() && bytes_.capacity() <= kKeptBufferBytes) {
    bytes_.clear();
    kept_buffer.swap(bytes_);
  }
}

void PreparedRecords::Reserve(size_t bytes) {
  const size_t want = bytes_.size() + bytes;
  if (bytes_.empty() && bytes_.capacity() < want && kept_buffer.capacity() >= want) {
    bytes_.swap(kept_buffer);
  }
  bytes_.reserve(want);
}

absl::Status PreparedRecords::Add(std::string_view key, std::string_view value) {
  if (key.size() > kMaxRecordKeySize || value.size() > kMaxRecordValueSize) {
    return absl::InvalidArgumentError(absl::StrCat("value record of a ", key.size(),
                                                   "-byte key and a ", value.size(),
                                                   "-byte value is over the record limits"));
  }
  const size_t start = bytes_.size();
  CAIRN_RETURN_IF_ERROR(EncodeValueRecord(key, value, encoding_, &bytes_, &table_, &body_));
  sizes_.push_back(static_cast<uint32_t>(bytes_.size() - start));
  return absl::OkStatus();
}

}  // namespace cairn::vlog
