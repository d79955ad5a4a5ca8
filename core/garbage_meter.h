// GarbageMeter: what a flush or compaction drops, as value-log garbage.
// A compaction listener that records the value pointers a job drops (older
// versions, deletions' victims) as garbage of their segments, to be logged
// as a segment edit with the job's version edit. It lives in core because it
// joins the two layers: lsm reports dropped values, vlog counts garbage.
#ifndef CAIRN_CORE_GARBAGE_METER_H_
#define CAIRN_CORE_GARBAGE_METER_H_

#include <cstdint>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "lsm/compaction_iterator.h"
#include "vlog/dead_records.h"
#include "vlog/segment_edit.h"

namespace cairn {

class GarbageMeter : public lsm::CompactionListener {
 public:
  void OnValueDropped(std::string_view user_key, lsm::ValueType type,
                      std::string_view stored_value) override;
  // Turns the counts into edit() (once, after the job).
  void Finish();
  const vlog::SegmentEdit& edit() const { return edit_; }
  vlog::SegmentEdit* mutable_edit() { return &edit_; }
  uint64_t dropped_pointers() const { return dropped_pointers_; }
  uint64_t undecodable() const { return undecodable_; }
  // Where the dropped records lie, for GC to skip them once the edit is
  // applied (vlog::DeadRecords); taken once, after the job.
  vlog::DeadRecords::Batch TakeDead() { return std::exchange(dead_, {}); }

 private:
  absl::flat_hash_map<uint64_t, std::pair<uint64_t, uint64_t>> garbage_;  // bytes, records
  vlog::DeadRecords::Batch dead_;
  vlog::SegmentEdit edit_;
  uint64_t dropped_pointers_ = 0;
  uint64_t undecodable_ = 0;
};

}  // namespace cairn

#endif  // CAIRN_CORE_GARBAGE_METER_H_
