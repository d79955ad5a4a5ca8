// The write path's stalls: a write waits for value-log space while GC is
// behind, and for room in the memtable (slowed near the level-0 and
// pending-compaction triggers, stopped at them). Split from core/db_write.cc
// (2026-12-08) to keep each file under 800 lines.
#include <atomic>
#include <chrono>
#include <thread>

#include "core/db_impl.h"

namespace cairn {

namespace {

// Raises a maximum kept without a lock to at least value.
void RaiseTo(std::atomic<uint64_t>& max, uint64_t value) {
  uint64_t seen = max.load(std::memory_order_relaxed);
  while (value > seen && !max.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

absl::Status DBImpl::WaitForValueLogSpace(uint64_t bytes) {
  if (!bg_error_.ok()) return bg_error_;
  if (shutting_down_) return absl::AbortedError("the database is closing");
  gc::GcController& controller = gc_.ControllerLocked();
  if (!controller.enabled() || options_.value_separation_threshold == kInlineValues) {
    return absl::OkStatus();
  }
  // GC is behind: the write waits its turn at the delayed-write rate, at
  // most max_write_delay (gc/gc_controller.h). The figure is kept per edit,
  // so this reads counters, never every segment.
  const double amp = ledger_.Space(/*with_estimate=*/true).amplification();
  // Writes wait only for a GC that is collecting. One that has not looked
  // since the trigger was passed sleeps between idle rounds (up to a
  // second): wake it rather than delay writes for nothing meanwhile.
  if (!controller.collecting() && amp > controller.start_mark()) {
    background_cv_.SignalAll();
  }
  const absl::Duration delay =
      controller.WriteDelay(amp, bytes, absl::Now(), gc_.CanCollectLocked());
  write_delayed_ = delay > absl::ZeroDuration() || amp > controller.slowdown_mark();
  if (delay <= absl::ZeroDuration()) return absl::OkStatus();
  SetStallCondition(StallCondition::kDelayed, "value-log space: GC is behind");
  counters_.stall_slowdowns.fetch_add(1, std::memory_order_relaxed);
  RaiseTo(counters_.stall_max_delay_micros,
          static_cast<uint64_t>(absl::ToInt64Microseconds(delay)));
  mu_.Unlock();
  const auto start = std::chrono::steady_clock::now();
  absl::SleepFor(delay);
  RecordStall(start);
  mu_.Lock();
  return absl::OkStatus();
}

void DBImpl::RecordStall(std::chrono::steady_clock::time_point start) {
  const uint64_t micros = std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count();
  counters_.stall_micros.fetch_add(micros, std::memory_order_relaxed);
  RaiseTo(counters_.stall_max_micros, micros);
}

void DBImpl::SlowDownWrite() {
  counters_.stall_slowdowns.fetch_add(1, std::memory_order_relaxed);
  mu_.Unlock();
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  RecordStall(start);
  mu_.Lock();
}

absl::Status DBImpl::MakeRoomForWrite(bool force) {
  bool allow_delay = !force;
  while (true) {
    if (!bg_error_.ok()) return bg_error_;
    // The background threads are gone or going: waiting for a flush would
    // never end (a GC rewrite can still be writing during close).
    if (shutting_down_) return absl::AbortedError("the database is closing");
    const int l0_files = static_cast<int>(versions_->current()->NumFiles(0));
    // A pending-bytes limit of 0 is off, as in RocksDB.
    const uint64_t soft = options_.soft_pending_compaction_bytes_limit;
    const uint64_t hard = options_.hard_pending_compaction_bytes_limit;
    if (allow_delay && (l0_files >= options_.level0_slowdown_trigger ||
                        (soft != 0 && pending_compaction_bytes_ >= soft))) {
      // Near the stop trigger: give each write a 1 ms delay rather than stop
      // one write for seconds later.
      SetStallCondition(StallCondition::kDelayed,
                        l0_files >= options_.level0_slowdown_trigger
                            ? "level-0 files at the slowdown trigger"
                            : "pending compaction bytes at the soft limit");
      SlowDownWrite();
      allow_delay = false;
      continue;
    }
    if (!force && mem_->ApproximateMemoryUsage() < options_.memtable_size &&
        !ledger_.MemTableFull()) {
      if (allow_delay && !write_delayed_) SetStallCondition(StallCondition::kNormal, "");
      return absl::OkStatus();
    }
    if (imm_.size() >= 2 || l0_files >= options_.level0_stop_trigger ||
        (hard != 0 && pending_compaction_bytes_ >= hard)) {
      // Flushes (or L0 compactions) are behind: wait for them.
      SetStallCondition(StallCondition::kStopped,
                        imm_.size() >= 2 ? "memtables waiting for their flush"
                        : l0_files >= options_.level0_stop_trigger
                            ? "level-0 files at the stop trigger"
                            : "pending compaction bytes at the hard limit");
      counters_.stall_stops.fetch_add(1, std::memory_order_relaxed);
      const auto start = std::chrono::steady_clock::now();
      background_cv_.Wait(&mu_);
      RecordStall(start);
      continue;
    }
    if (force && mem_->empty()) return absl::OkStatus();
    // Switch to a fresh memtable and WAL. A failure here (a sync of the old
    // WAL or value log, or the new WAL's creation) stops writes: the old
    // WAL's durability is unknown.
    absl::Status s = NewLog();
    if (!s.ok()) {
      SetBackgroundError(s);
      return bg_error_;
    }
    return absl::OkStatus();
  }
}

}  // namespace cairn
