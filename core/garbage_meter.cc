#include "core/garbage_meter.h"

#include "absl/status/statusor.h"
#include "vlog/value_pointer.h"

namespace cairn {

void GarbageMeter::OnValueDropped(std::string_view user_key, lsm::ValueType type,
                                  std::string_view stored_value) {
  if (type != lsm::ValueType::kValuePointer) return;
  absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(stored_value);
  if (!ptr.ok()) {
    ++undecodable_;  // the table's checksum held, so this cannot happen short of a bug
    return;
  }
  ++dropped_pointers_;
  auto& [bytes, records] = garbage_[ptr->segment_id];
  bytes += ptr->size;
  ++records;
  dead_[ptr->segment_id].push_back({ptr->offset, ptr->size});
}

void GarbageMeter::Finish() {
  for (const auto& [segment, counts] : garbage_) {
    edit_.AddGarbage(segment, counts.first, counts.second);
  }
  garbage_.clear();
}

}  // namespace cairn
