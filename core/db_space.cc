// The value log's space figures (docs/gc.md, "Counting garbage in time"):
// what GC, the write throttle and the memtable's flush bound steer by.
#include <algorithm>
#include <memory>

#include "core/db_impl.h"
#include "lsm/version.h"

namespace cairn {

double DBImpl::ValueLogSpaceAmplification() const {
  const vlog::ValueLog::Totals t = vlog_->GetTotals();
  // Punched bytes are garbage that takes no space any more.
  const uint64_t bytes = t.bytes - std::min(t.bytes, t.punched_bytes);
  const uint64_t garbage = t.garbage_bytes - std::min(t.garbage_bytes, t.punched_bytes);
  if (bytes == 0) return 0;
  const uint64_t live = bytes > garbage ? bytes - garbage : 1;
  return static_cast<double>(bytes) / live;
}

double DBImpl::ValueLogSpace::amplification() const {
  if (bytes == 0) return 0;
  const uint64_t dead = std::min(bytes, garbage + uncounted);
  return static_cast<double>(bytes) / std::max<uint64_t>(1, bytes - dead);
}

DBImpl::ValueLogSpace DBImpl::GetValueLogSpace(bool with_estimate) {
  absl::MutexLock l(&mu_);
  return GetValueLogSpaceLocked(with_estimate);
}

DBImpl::ValueLogSpace DBImpl::GetValueLogSpaceLocked(bool with_estimate) {
  // Two reads without one lock between them: a segment sealed in between
  // can be off by its size for one decision, which the next one corrects.
  // Every write asks (the throttle, the memtable's value-byte bound), so
  // this reads counters only, not the value cache's shards.
  const vlog::SegmentSet::Totals set = vlog_->segment_set().GetTotals();
  const uint64_t active = vlog_->ActiveBytes();
  ValueLogSpace space;
  // Victims waiting for durability count as collected already, as obsolete
  // ones awaiting their readers do: GC's work on them is done, and a flush
  // or a sync frees them without more.
  const PendingVictims pending = PendingVictimTotals();
  // Bytes on the device: punched runs take none (their bytes count as
  // neither space nor garbage), so GC steers by the space garbage takes.
  const uint64_t bytes = set.bytes - std::min(set.bytes, set.punched_bytes);
  const uint64_t garbage = set.garbage_bytes - std::min(set.garbage_bytes, set.punched_bytes);
  space.bytes = bytes - std::min(bytes, set.obsolete_bytes + pending.bytes) + active;
  space.garbage = garbage - std::min(garbage, pending.garbage);
  if (!with_estimate) return space;
  // Garbage that flushes and compactions have not reported yet: the older
  // versions hidden by what the memtables and the L0 tables point at,
  // estimated as their value bytes times the yield L0 compactions have
  // shown (about 1 under pure overwrites, about 0 while loading), and
  // those their deletions hide, at full weight: a deletion hides its key's
  // value whatever a load before it yielded.
  const Level0Hidden l0 = Level0HiddenBytes(*versions_->current()).value_or(Level0Hidden{});
  uint64_t hidden = l0.value_bytes;
  uint64_t deleted = l0.deleted_bytes;
  for (const ImmutableMemTable& imm : imm_) {
    hidden += imm.value_bytes;
    deleted += imm.deleted_bytes;
  }
  deleted = std::min(deleted, hidden);
  space.uncounted =
      static_cast<uint64_t>(garbage_yield_ * static_cast<double>(hidden - deleted)) + deleted +
      MemTableGarbageEstimate();
  return space;
}

uint64_t DBImpl::MemTableGarbageEstimate() {
  // What the mutable memtable's entries made garbage: at least the pointers
  // they superseded in it (exact), and under overwrites about the value
  // bytes they name (the yield), whichever is more.
  const double named = static_cast<double>(MemHiddenValueBytes());
  return std::max(mem_superseded_bytes_.load(std::memory_order_relaxed),
                  static_cast<uint64_t>(garbage_yield_ * named)) +
         DeletedValueEstimate(mem_deletions_.load(std::memory_order_relaxed));
}

uint64_t DBImpl::DeletedValueEstimate(uint64_t deletions) {
  if (deletions == 0) return 0;
  const std::shared_ptr<const lsm::Version> v = versions_->current();
  if (v.get() != entries_version_) {
    // Once per version: every write asks while the memtable holds deletions.
    entries_version_ = v.get();
    table_entries_ = 0;
    for (int level = 0; level < lsm::kNumLevels; ++level) {
      for (const auto& f : v->files(level)) table_entries_ += f->num_entries;
    }
  }
  if (table_entries_ == 0) return 0;
  const ValueLogSpace space = GetValueLogSpaceLocked(/*with_estimate=*/false);
  const double live = static_cast<double>(space.bytes - std::min(space.bytes, space.garbage));
  return static_cast<uint64_t>(static_cast<double>(deletions) * live /
                               static_cast<double>(table_entries_));
}

}  // namespace cairn
