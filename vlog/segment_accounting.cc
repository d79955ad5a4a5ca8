#include "vlog/segment_accounting.h"

#include "absl/strings/str_format.h"
#include "vlog/vlog_format.h"

namespace cairn::vlog {

int64_t SegmentAccounting::Imbalance::unaccounted_bytes() const {
  return static_cast<int64_t>(size) - static_cast<int64_t>(kSegmentHeaderSize) -
         static_cast<int64_t>(referenced_bytes) - static_cast<int64_t>(garbage_bytes);
}

int64_t SegmentAccounting::Imbalance::unaccounted_records() const {
  return static_cast<int64_t>(records) - static_cast<int64_t>(referenced_records) -
         static_cast<int64_t>(garbage_records);
}

std::string SegmentAccounting::Imbalance::DebugString() const {
  return absl::StrFormat(
      "segment %d: %d bytes = %d header + %d referenced (%d records) + %d garbage (%d records) "
      "%s %d bytes (%d of %d records) %s",
      segment_id, size, kSegmentHeaderSize, referenced_bytes, referenced_records, garbage_bytes,
      garbage_records, unaccounted_bytes() > 0 ? "+" : "-",
      unaccounted_bytes() > 0 ? unaccounted_bytes() : -unaccounted_bytes(), unaccounted_records(),
      records,
      unaccounted_bytes() > 0 ? "neither referenced nor counted as garbage (a leak)"
                              : "counted twice");
}

void SegmentAccounting::AddReference(const ValuePointer& pointer) {
  Count& c = references_[pointer.segment_id];
  c.bytes += pointer.size;
  ++c.records;
}

uint64_t SegmentAccounting::referenced_bytes(uint64_t segment_id) const {
  auto it = references_.find(segment_id);
  return it == references_.end() ? 0 : it->second.bytes;
}

std::vector<SegmentAccounting::Imbalance> SegmentAccounting::Check(
    const SegmentSet& set,
    const absl::flat_hash_map<uint64_t, std::pair<uint64_t, uint64_t>>& active_sizes) const {
  std::vector<Imbalance> out;
  for (const SegmentInfo& info : set.Segments()) {
    if (info.obsolete) continue;  // collected: its records are not counted
    Imbalance b;
    b.segment_id = info.segment_id;
    if (info.sealed) {
      b.size = info.size;
      b.records = info.records;
    } else if (auto it = active_sizes.find(info.segment_id); it != active_sizes.end()) {
      b.size = it->second.first;
      b.records = it->second.second;
    } else {
      continue;
    }
    if (b.size < kSegmentHeaderSize) continue;  // sealed empty: no file to account for
    if (auto it = references_.find(info.segment_id); it != references_.end()) {
      b.referenced_bytes = it->second.bytes;
      b.referenced_records = it->second.records;
    }
    b.garbage_bytes = info.garbage_bytes;
    b.garbage_records = info.garbage_records;
    if (b.unaccounted_bytes() != 0) out.push_back(b);
  }
  return out;
}

SegmentEdit SegmentAccounting::LeakEdit(const std::vector<Imbalance>& imbalances) {
  SegmentEdit edit;
  for (const Imbalance& b : imbalances) {
    if (b.unaccounted_bytes() <= 0) continue;
    edit.AddGarbage(b.segment_id, static_cast<uint64_t>(b.unaccounted_bytes()),
                    static_cast<uint64_t>(std::max<int64_t>(0, b.unaccounted_records())));
  }
  return edit;
}

}  // namespace cairn::vlog
