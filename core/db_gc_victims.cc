// What becomes of a GC job's victims once the job is done: they wait for
// the writes that moved or superseded their records to be durable (a
// flush, or a WAL sync when one is cheap), are marked obsolete, wait for
// the readers of their read epoch, and are deleted. docs/gc.md, "When a
// collected segment may be deleted".
#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include "core/db_impl.h"
#include "io/status_macros.h"
#include "lsm/filename.h"

namespace cairn {

absl::Status DBImpl::ReleasePendingVictims(VictimRelease how) {
  enum class Action { kNone, kSwitch, kSync } action = Action::kNone;
  {
    absl::MutexLock l(&mu_);
    // None waiting here can still mean another thread has taken them and
    // is logging them: the wait for obsolete_mu_ below covers that.
    lsm::SequenceNumber newest = 0;
    for (const PendingVictims& p : gc_pending_victims_) newest = std::max(newest, p.durable_at);
    if (how != VictimRelease::kWhenDurable && newest > versions_->LastSequence()) {
      action = Action::kSync;
      if (how == VictimRelease::kSoon) {
        // A flush already queued makes them durable without a sync; so
        // does one of the live memtable when they wait on its writes,
        // unless it holds under a sixteenth of memtable_size. Neither
        // writes the WAL's copy of the values to the device; a sync does,
        // and every user write waits behind it in the queue meanwhile
        // (docs/decisions/20261204_victims_released_by_flushes.md).
        const lsm::SequenceNumber queued = imm_.empty() ? 0 : imm_.back().last_sequence;
        if (newest <= queued) {
          action = Action::kNone;
        } else if (!WalSyncIsCheapFor(PendingVictimTotals().bytes) && imm_.size() < 2 &&
                   mem_->ApproximateMemoryUsage() >= options_.memtable_size / 16) {
          action = Action::kSwitch;
        }
      }
    }
  }
  // A synced group covers every write before it, the closed WALs' included.
  if (action == Action::kSync) {
    CAIRN_RETURN_IF_ERROR(SyncWalInQueue());
    gc_counters_.victim_syncs.fetch_add(1, std::memory_order_relaxed);
  } else if (action == Action::kSwitch) {
    // Their release comes with the flush (a later call).
    CAIRN_RETURN_IF_ERROR(SwitchMemTableInQueue());
    gc_counters_.victim_switches.fetch_add(1, std::memory_order_relaxed);
  }
  absl::MutexLock release(&obsolete_mu_);
  std::vector<PendingVictims> ready;
  {
    absl::MutexLock l(&mu_);
    const lsm::SequenceNumber durable = versions_->LastSequence();
    auto waiting = std::stable_partition(
        gc_pending_victims_.begin(), gc_pending_victims_.end(),
        [&](const PendingVictims& p) { return p.durable_at > durable; });
    ready.assign(std::make_move_iterator(waiting), std::make_move_iterator(gc_pending_victims_.end()));
    gc_pending_victims_.erase(waiting, gc_pending_victims_.end());
  }
  if (ready.empty()) return absl::OkStatus();
  vlog::SegmentEdit edit;
  for (const PendingVictims& p : ready) {
    for (uint64_t id : p.ids) edit.MarkObsolete(id);
  }
  lsm::VersionEdit ve;
  const absl::Status s = LogAndApply(&ve, &edit);
  absl::MutexLock l(&mu_);
  if (!s.ok()) {
    // Unlogged, they stay claimed: their records' bytes are garbage the
    // next open counts from the LSM. The DB stops writing meanwhile.
    SetBackgroundError(s);
    return s;
  }
  for (const PendingVictims& p : ready) {
    gc_counters_.victims_waited.fetch_add(p.ids.size(), std::memory_order_relaxed);
    for (uint64_t id : p.ids) gc_claimed_.erase(id);
    RetireCollectedLocked(p.ids);
  }
  background_cv_.SignalAll();
  return absl::OkStatus();
}

bool DBImpl::WalSyncIsCheapFor(uint64_t victim_bytes) const {
  // A sync writes the WAL's unsynced bytes (and the active segment's, which
  // the device gets anyway). Where the WAL carries values (values separated
  // at flush, inline ones) that is about what a flush would write again, and
  // the victims wait for the flush instead.
  return victim_bytes > 0 &&
         wal_unsynced_bytes_.load(std::memory_order_relaxed) * 8 <= victim_bytes;
}

void DBImpl::RetireCollectedLocked(absl::Span<const uint64_t> ids) {
  // Readers from before the rewrite hold the epoch this ends or an earlier
  // one; a victim goes when they are all gone and no older snapshot or
  // pinned sequence remains (core/retention.h).
  retention_.AddObsolete(ids, last_sequence_.load());
  InstallSuperVersionLocked();
}

DBImpl::PendingVictims DBImpl::PendingVictimTotals() const {
  PendingVictims total;
  for (const PendingVictims& p : gc_pending_victims_) {
    total.bytes += p.bytes;
    total.garbage += p.garbage;
  }
  return total;
}

void DBImpl::DeleteObsoleteSegments() {
  absl::MutexLock deleting(&obsolete_mu_);
  std::vector<uint64_t> deletable;
  {
    absl::MutexLock l(&mu_);
    deletable = retention_.TakeDeletable(OldestSnapshot());
  }
  if (deletable.empty()) return;
  // The manifest forgets them first, then the files go on the deleter's
  // thread (an unlink may wait for the device's discard). A crash between
  // the two leaves files the manifest does not know, which the next open
  // removes; nothing references them.
  vlog::SegmentEdit edit;
  for (uint64_t id : deletable) {
    vlog_->EvictReader(id);
    edit.RemoveSegment(id);
  }
  lsm::VersionEdit ve;
  absl::Status s = LogAndApply(&ve, &edit);
  if (!s.ok()) {
    // They stay obsolete in the manifest; the next open deletes them.
    absl::MutexLock l(&mu_);
    SetBackgroundError(s);
    return;
  }
  for (uint64_t id : deletable) {
    dead_records_.Forget(id);
    foreseen_.Forget(id);
    deleter_->Remove(lsm::ValueLogFileName(dbname_, id));
    gc_counters_.segments_freed.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace cairn
