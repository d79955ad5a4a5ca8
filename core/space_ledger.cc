// The value log's space figures (docs/gc.md, "Counting garbage in time"):
// what GC, the write throttle and the memtable's flush bound steer by.
#include "core/space_ledger.h"

#include <algorithm>
#include <memory>

#include "lsm/version.h"

namespace cairn {

// The value bytes a memtable or L0 names before the garbage they may hide
// can flush or compact them for it (HidesQuarterOfAllowance). 1 MiB until
// 2026-12-06: over a live set of a few MiB that let the value log climb a
// third of live between counts (docs/gc.md, "Counting garbage in time").
constexpr uint64_t kMinHiddenNamedBytes = uint64_t{256} << 10;

double db_records::ValueLogSpace::amplification() const {
  if (bytes == 0) return 0;
  const uint64_t dead = std::min(bytes, garbage + uncounted);
  return static_cast<double>(bytes) / std::max<uint64_t>(1, bytes - dead);
}

void SpaceLedger::GroupInserted(const Group& g) {
  if (g.named > 0) mem_value_bytes_.fetch_add(g.named, std::memory_order_relaxed);
  if (g.named > 0 && g.gc_rewrite) mem_gc_value_bytes_.fetch_add(g.named, std::memory_order_relaxed);
  if (g.superseded > 0) mem_superseded_bytes_.fetch_add(g.superseded, std::memory_order_relaxed);
  if (g.deletions > 0) mem_deletions_.fetch_add(g.deletions, std::memory_order_relaxed);
  if (g.for_flush > 0) mem_flush_value_bytes_.fetch_add(g.for_flush, std::memory_order_relaxed);
}

SpaceLedger::SwitchedMemTable SpaceLedger::MemTableSwitched() {
  SwitchedMemTable out;
  out.deleted_bytes = DeletedValueEstimate(mem_deletions_.load(std::memory_order_relaxed));
  out.flush_value_bytes = mem_flush_value_bytes_.load(std::memory_order_relaxed);
  out.value_bytes = MemHiddenValueBytes() + out.flush_value_bytes + out.deleted_bytes;
  mem_value_bytes_.store(0, std::memory_order_relaxed);
  mem_gc_value_bytes_.store(0, std::memory_order_relaxed);
  mem_superseded_bytes_.store(0, std::memory_order_relaxed);
  mem_flush_value_bytes_.store(0, std::memory_order_relaxed);
  mem_deletions_.store(0, std::memory_order_relaxed);
  return out;
}

void SpaceLedger::TableFlushed(uint64_t file_number, uint64_t named, uint64_t deletions,
                               std::optional<uint64_t> found) {
  if (found.has_value()) {
    // What it hides is listed exactly: nothing left to estimate, and the
    // yield is learnt here rather than at its compaction, from all it hides
    // (records of victims GC is collecting are not listed).
    l0_hidden_[file_number] = {};
    if (named > 0) {
      const double yield = std::min(1.0, static_cast<double>(*found) / named);
      garbage_yield_ = 0.5 * garbage_yield_ + 0.5 * yield;
    }
    return;
  }
  const uint64_t deleted = DeletedValueEstimate(deletions);
  l0_hidden_[file_number] = {named + deleted, deleted};
}

void SpaceLedger::Level0Compacted(absl::Span<const uint64_t> inputs, uint64_t counted) {
  uint64_t inflow = 0;
  for (uint64_t number : inputs) {
    auto it = l0_hidden_.find(number);
    if (it == l0_hidden_.end()) continue;
    inflow += it->second.value_bytes;
    l0_hidden_.erase(it);
  }
  if (inflow > 0) {
    const double yield = std::min(1.0, static_cast<double>(counted) / inflow);
    garbage_yield_ = 0.5 * garbage_yield_ + 0.5 * yield;
  }
}

SpaceLedger::ValueLogSpace SpaceLedger::Space(bool with_estimate) {
  // Two reads without one lock between them: a segment sealed in between
  // can be off by its size for one decision, which the next one corrects.
  // Every write asks (the throttle, the memtable's value-byte bound), so
  // this reads counters only, not the value cache's shards.
  const Figures f = sources_.figures();
  ValueLogSpace space;
  // Victims waiting for durability count as collected already, as obsolete
  // ones awaiting their readers do: GC's work on them is done, and a flush
  // or a sync frees them without more.
  // Bytes on the device: punched runs take none (their bytes count as
  // neither space nor garbage), so GC steers by the space garbage takes.
  const uint64_t bytes = f.set.bytes - std::min(f.set.bytes, f.set.punched_bytes);
  const uint64_t garbage =
      f.set.garbage_bytes - std::min(f.set.garbage_bytes, f.set.punched_bytes);
  space.bytes =
      bytes - std::min(bytes, f.set.obsolete_bytes + f.pending_victim_bytes) + f.active_bytes;
  // Values the memtables hold for their flushes to separate are value-log
  // bytes already, in the WAL (Options::separate_at_flush_below): left out,
  // a burst before GC collects piled up to two memtables of them unseen.
  space.bytes += mem_flush_value_bytes_.load(std::memory_order_relaxed) + f.imm_flush_value_bytes;
  space.garbage = garbage - std::min(garbage, f.pending_victim_garbage) + f.foreseen_bytes;
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
  const Level0Hidden l0 =
      Level0HiddenBytes(*sources_.current_version()).value_or(Level0Hidden{});
  const uint64_t hidden = l0.value_bytes + f.imm_value_bytes;
  const uint64_t deleted = l0.deleted_bytes + f.imm_deleted_bytes;
  space.uncounted = HiddenEstimate(hidden, deleted) + MemTableGarbageEstimate();
  return space;
}

uint64_t SpaceLedger::HiddenEstimate(uint64_t value_bytes, uint64_t deleted_bytes) const {
  const uint64_t deleted = std::min(deleted_bytes, value_bytes);
  return static_cast<uint64_t>(garbage_yield_ * static_cast<double>(value_bytes - deleted)) +
         deleted;
}

bool SpaceLedger::HidesQuarterOfAllowance(uint64_t named, uint64_t hidden) {
  if (settings_.gc_space_amp_trigger <= 1 || named < kMinHiddenNamedBytes) return false;
  // Garbage already counted is left out of the rest: a value log at the
  // trigger would otherwise flush or compact at every floor's worth of
  // GC's rewrites.
  const ValueLogSpace space = Space(/*with_estimate=*/false);
  const uint64_t uncounted = space.bytes - std::min(space.bytes, space.garbage);
  const double rest = static_cast<double>(uncounted - std::min(uncounted, named));
  return static_cast<double>(hidden) > 0.25 * (settings_.gc_space_amp_trigger - 1) * rest;
}

uint64_t SpaceLedger::MemTableGarbageEstimate() {
  // What the mutable memtable's entries made garbage: at least the pointers
  // they superseded in it (exact), and under overwrites about the value
  // bytes they name (the yield), whichever is more.
  const double named = static_cast<double>(MemHiddenValueBytes() +
                                           mem_flush_value_bytes_.load(std::memory_order_relaxed));
  return std::max(mem_superseded_bytes_.load(std::memory_order_relaxed),
                  static_cast<uint64_t>(garbage_yield_ * named)) +
         DeletedValueEstimate(mem_deletions_.load(std::memory_order_relaxed));
}

uint64_t SpaceLedger::DeletedValueEstimate(uint64_t deletions) {
  if (deletions == 0) return 0;
  const std::shared_ptr<const lsm::Version> v = sources_.current_version();
  if (v.get() != entries_version_) {
    // Once per version: every write asks while the memtable holds deletions.
    entries_version_ = v.get();
    table_entries_ = 0;
    for (int level = 0; level < lsm::kNumLevels; ++level) {
      for (const auto& f : v->files(level)) table_entries_ += f->num_entries;
    }
  }
  if (table_entries_ == 0) return 0;
  const ValueLogSpace space = Space(/*with_estimate=*/false);
  const double live = static_cast<double>(space.bytes - std::min(space.bytes, space.garbage));
  return static_cast<uint64_t>(static_cast<double>(deletions) * live /
                               static_cast<double>(table_entries_));
}

bool SpaceLedger::MemTableFull() {
  const uint64_t named = mem_value_bytes_.load(std::memory_order_relaxed);
  const uint64_t deletions = mem_deletions_.load(std::memory_order_relaxed);
  if (named == 0 && deletions == 0) return false;
  if (named >= settings_.max_memtable_value_bytes) return true;
  // What the pointers hide below is known only once a flush and an L0
  // compaction count it, and the estimate's yield lags a load that turned
  // into overwrites (it reads 0 until L0 compactions count garbage). So,
  // past 256 KiB, the memtable is flushed once the worst case of what it
  // hides alone (every value it names hides a live one below) is more
  // garbage than the trigger allows over the rest: in a small database a
  // few overwrites of each key otherwise sat in the memtable, unseen, at
  // 2-3x live. The bytes GC's rewrites name are left out: they hide
  // nothing.
  const uint64_t hiding = MemHiddenValueBytes();
  if (HidesQuarterOfAllowance(hiding, hiding)) return true;
  // Garbage the memtable holds itself (a small set of keys overwritten
  // again and again) is invisible to GC until a flush counts it: flush
  // once it passes a quarter of the garbage the trigger allows over the
  // live value log, or 256 KiB, whichever is more. What its deletions hide
  // below it (an estimate; the compaction after the flush counts it) flushes
  // it once it passes all the garbage the trigger allows, or a sixteenth of
  // the memtable size: flushed as soon, a stream of deletions had GC copy
  // the values it was about to delete again and again, and made a flush per
  // few hundred deletions as the database emptied.
  // Without background GC nobody acts on what the deletions hide before a
  // compaction reaches them anyway (as NeedsGarbageCompaction).
  const uint64_t superseded = mem_superseded_bytes_.load(std::memory_order_relaxed);
  const uint64_t deleted =
      settings_.gc_space_amp_trigger > 0 ? DeletedValueEstimate(deletions) : 0;
  if (superseded < (256u << 10) && deleted < settings_.memtable_size / 16) return false;
  const double t = settings_.gc_space_amp_trigger > 1 ? settings_.gc_space_amp_trigger : 1.5;
  const ValueLogSpace space = Space(/*with_estimate=*/true);
  const uint64_t dead = std::min(space.bytes, space.garbage + space.uncounted);
  const double live = static_cast<double>(space.bytes - dead);
  return (superseded >= (256u << 10) && static_cast<double>(superseded) >= 0.25 * (t - 1) * live) ||
         (deleted >= settings_.memtable_size / 16 && static_cast<double>(deleted) >= (t - 1) * live);
}

bool SpaceLedger::NeedsGarbageCompaction() {
  if (settings_.gc_space_amp_trigger <= 0) return false;  // nobody would act on the counts
  // Garbage is counted when a flush or compaction drops a pointer. An L0
  // table's pointers may each hide an older version below, whose record is
  // garbage that no count shows until L0 is compacted into the levels
  // below. When that garbage could put the value log past the GC trigger
  // (worst case: every pointer in L0 hides a live record; the yield is not
  // used here, as it lags when a load turns into overwrites), compact L0
  // now so that GC steers by counted garbage. Tables hold keys and pointers
  // only, so this costs little next to the value bytes it accounts for.
  const std::shared_ptr<const lsm::Version> v = sources_.current_version();
  const std::optional<Level0Hidden> l0 = Level0HiddenBytes(*v);
  if (!l0.has_value() || l0->value_bytes == 0) return false;
  ValueLogSpace space = Space(/*with_estimate=*/false);
  if (space.bytes == 0) return false;
  // The same lag in a small log that GC has just brought down: counted
  // garbage is low, so L0's worst case passes the trigger only once L0
  // names a third of the log, and the garbage it hides meanwhile is in
  // nobody's count. So L0 is also compacted once what it is estimated to
  // hide (its deletions' share, and the yield of its pointers' share) is
  // more than a quarter of the garbage the trigger allows over the rest of
  // the log, as a memtable is flushed (MemTableFull). Over a large log the
  // worst case comes first. During a load the yield is about 0 and this
  // adds no compaction.
  if (HidesQuarterOfAllowance(l0->value_bytes,
                              HiddenEstimate(l0->value_bytes, l0->deleted_bytes))) {
    return true;
  }
  space.uncounted = l0->value_bytes;
  return space.amplification() > settings_.gc_space_amp_trigger;
}

std::optional<SpaceLedger::Level0Hidden> SpaceLedger::Level0HiddenBytes(const lsm::Version& v) {
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
      recovered_average_record_ = std::max<uint64_t>(1, sources_.average_record());
    }
    sum.value_bytes += f->num_entries * recovered_average_record_;
  }
  return sum;
}

bool SpaceLedger::HiddenGarbageMayPass(double mark) {
  const std::shared_ptr<const lsm::Version> v = sources_.current_version();
  const Figures f = sources_.figures();
  uint64_t hidden = Level0HiddenBytes(*v).value_or(Level0Hidden{}).value_bytes;
  hidden += f.imm_value_bytes;
  hidden += MemHiddenValueBytes() + mem_flush_value_bytes_.load(std::memory_order_relaxed) +
            DeletedValueEstimate(mem_deletions_.load(std::memory_order_relaxed));
  if (hidden == 0) return false;
  // The worst case: every pointer above L1 hides a live record.
  ValueLogSpace space = Space(/*with_estimate=*/false);
  space.uncounted = hidden;
  return space.amplification() > mark;
}

}  // namespace cairn
