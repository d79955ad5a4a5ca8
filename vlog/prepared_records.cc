#include "vlog/prepared_records.h"

#include "absl/strings/str_cat.h"
#include "io/status_macros.h"

namespace cairn::vlog {

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
