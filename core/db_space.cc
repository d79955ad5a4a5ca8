// The value log's space figures (docs/gc.md, "Counting garbage in time"):
// what GC, the write throttle and the memtable's flush bound steer by.
#include <algorithm>
#include <memory>

#include "core/db_impl.h"
#include "lsm/version.h"

namespace cairn {

// The value bytes a memtable or L0 names before the garbage they may hide
// can flush or compact them for it (DBImpl::HidesQuarterOfAllowance). 1 MiB
// until 2026-12-06: over a live set of a few MiB that let the value
// log climb a third of live between counts (docs/gc.md, "Counting garbage
// in time").
constexpr uint64_t kMinHiddenNamedBytes = uint64_t{256} << 10;

double DBImpl::ValueLogSpaceAmplification() const {
  const vlog::ValueLog::Totals t = vlog_->GetTotals();
  // Punched bytes are garbage that takes no space any more.
  const uint64_t bytes = t.bytes - std::min(t.bytes, t.punched_bytes);
  const uint64_t garbage = t.garbage_bytes - std::min(t.garbage_bytes, t.punched_bytes);
  if (bytes == 0) return 0;
  const uint64_t live = bytes > garbage ? bytes - garbage : 1;
  return static_cast<double>(bytes) / live;
}

double db_records::ValueLogSpace::amplification() const {
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
  // Values the memtables hold for their flushes to separate are value-log
  // bytes already, in the WAL (Options::separate_at_flush_below): left out,
  // a burst before GC collects piled up to two memtables of them unseen.
  space.bytes += mem_flush_value_bytes_.load(std::memory_order_relaxed);
  for (const ImmutableMemTable& imm : imm_) space.bytes += imm.flush_value_bytes;
  space.garbage = garbage - std::min(garbage, pending.garbage) + foreseen_.total_bytes();
  // A running job's copies duplicate its victims' live records until the
  // victims go: garbage, and bytes while their output is not in the set.
  space.bytes += gc_copies_unlisted_.load(std::memory_order_relaxed);
  space.garbage += gc_copies_.load(std::memory_order_relaxed);
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
  space.uncounted = HiddenEstimate(hidden, deleted) + MemTableGarbageEstimate();
  return space;
}

uint64_t DBImpl::HiddenEstimate(uint64_t value_bytes, uint64_t deleted_bytes) const {
  const uint64_t deleted = std::min(deleted_bytes, value_bytes);
  return static_cast<uint64_t>(garbage_yield_ * static_cast<double>(value_bytes - deleted)) +
         deleted;
}

bool DBImpl::HidesQuarterOfAllowance(uint64_t named, uint64_t hidden) {
  if (options_.gc_space_amp_trigger <= 1 || named < kMinHiddenNamedBytes) return false;
  // Garbage already counted is left out of the rest: a value log at the
  // trigger would otherwise flush or compact at every floor's worth of
  // GC's rewrites.
  const ValueLogSpace space = GetValueLogSpaceLocked(/*with_estimate=*/false);
  const uint64_t uncounted = space.bytes - std::min(space.bytes, space.garbage);
  const double rest = static_cast<double>(uncounted - std::min(uncounted, named));
  return static_cast<double>(hidden) > 0.25 * (options_.gc_space_amp_trigger - 1) * rest;
}

uint64_t DBImpl::MemTableGarbageEstimate() {
  // What the mutable memtable's entries made garbage: at least the pointers
  // they superseded in it (exact), and under overwrites about the value
  // bytes they name (the yield), whichever is more.
  const double named = static_cast<double>(MemHiddenValueBytes() +
                                           mem_flush_value_bytes_.load(std::memory_order_relaxed));
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

bool DBImpl::NeedsGarbageCompaction() {
  if (options_.gc_space_amp_trigger <= 0) return false;  // nobody would act on the counts
  // Garbage is counted when a flush or compaction drops a pointer. An L0
  // table's pointers may each hide an older version below, whose record is
  // garbage that no count shows until L0 is compacted into the levels
  // below. When that garbage could put the value log past the GC trigger
  // (worst case: every pointer in L0 hides a live record; the yield is not
  // used here, as it lags when a load turns into overwrites), compact L0
  // now so that GC steers by counted garbage. Tables
  // hold keys and pointers only, so this costs little next to the value
  // bytes it accounts for.
  const std::shared_ptr<const lsm::Version> v = versions_->current();
  const std::optional<Level0Hidden> l0 = Level0HiddenBytes(*v);
  if (!l0.has_value() || l0->value_bytes == 0) return false;
  ValueLogSpace space = GetValueLogSpaceLocked(/*with_estimate=*/false);
  if (space.bytes == 0) return false;
  // The same lag in a small log that GC has just brought down: counted
  // garbage is low, so L0's worst case passes the trigger only once L0
  // names a third of the log, and the garbage it hides meanwhile is in
  // nobody's count. So L0 is also compacted once what it is estimated to
  // hide (its deletions' share, and the yield of its pointers' share) is
  // more than a quarter of the garbage the trigger allows over the rest of
  // the log, as a memtable is flushed (MemTableValueBytesFull). Over a
  // large log the worst case comes first. During a load the yield is
  // about 0 and this adds no compaction.
  if (HidesQuarterOfAllowance(l0->value_bytes,
                              HiddenEstimate(l0->value_bytes, l0->deleted_bytes))) {
    return true;
  }
  space.uncounted = l0->value_bytes;
  return space.amplification() > options_.gc_space_amp_trigger;
}

std::optional<DBImpl::Level0Hidden> DBImpl::Level0HiddenBytes(const lsm::Version& v) {
  Level0Hidden sum;
  for (const auto& f : v.files(0)) {
    if (f->being_compacted) return std::nullopt;
    auto it = l0_hidden_.find(f->number);
    if (it != l0_hidden_.end()) {
      sum.value_bytes += it->second.value_bytes;
      sum.deleted_bytes += it->second.deleted_bytes;
      continue;
    }
    if (recovered_average_record_ == 0) {  // a table flushed before this open
      uint64_t bytes = 0, records = 0;
      for (const vlog::SegmentInfo& s : vlog_->segment_set().Segments()) {
        bytes += s.size;
        records += s.records;
      }
      recovered_average_record_ = records == 0 ? 1 : std::max<uint64_t>(1, bytes / records);
    }
    sum.value_bytes += f->num_entries * recovered_average_record_;
  }
  return sum;
}

bool DBImpl::HiddenGarbageMayPass(double mark) {
  if (!gc_controller_.enabled()) return false;
  const std::shared_ptr<const lsm::Version> v = versions_->current();
  uint64_t hidden = Level0HiddenBytes(*v).value_or(Level0Hidden{}).value_bytes;
  for (const ImmutableMemTable& imm : imm_) hidden += imm.value_bytes;
  hidden += MemHiddenValueBytes() + mem_flush_value_bytes_.load(std::memory_order_relaxed) +
            DeletedValueEstimate(mem_deletions_.load(std::memory_order_relaxed));
  if (hidden == 0) return false;
  // The worst case: every pointer above L1 hides a live record.
  ValueLogSpace space = GetValueLogSpaceLocked(/*with_estimate=*/false);
  space.uncounted = hidden;
  return space.amplification() > mark;
}

}  // namespace cairn
