// Waiting for background work to settle (DB::WaitForBackgroundWork): the
// flushes and compactions that count hidden garbage, GC's rounds past its
// marks, and the victims and punches they leave (docs/gc.md, "The settle
// step").
#include <algorithm>

#include "core/background_retry.h"
#include "core/db_impl.h"
#include "io/status_macros.h"

namespace cairn {

absl::Status DBImpl::CountHiddenGarbage() {
  CAIRN_RETURN_IF_ERROR(Flush());
  absl::MutexLock l(&mu_);
  ++manual_compactions_;
  const absl::Status s = CompactLevelLocked(0, nullptr, nullptr);
  --manual_compactions_;
  if (!s.ok() && !IsRetryable(s)) SetBackgroundError(s);
  background_cv_.SignalAll();
  return s;
}

absl::Status DBImpl::WaitWhileLocked(absl::FunctionRef<bool()> busy) {
  // Background work signals as it finishes; the timeout re-reads figures
  // (GC's among them) that flushes and compactions move without a signal.
  while (bg_error_.ok() && !shutting_down_ && busy()) {
    background_cv_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
  }
  if (!bg_error_.ok()) return bg_error_;
  if (shutting_down_) return absl::AbortedError("the database is closing");
  return absl::OkStatus();
}

absl::Status DBImpl::WaitForBackgroundWork() {
  CAIRN_RETURN_IF_ERROR(CheckNotClosed());
  if (read_only_) return absl::OkStatus();  // it runs none
  // After a burst that passed GC's trigger, GC brings the value log down
  // to its settle mark, not only under the trigger: the figure a settle
  // step sees is the low one. A burst that stayed under the trigger is
  // left as it is (docs/gc.md, "The settle step").
  // Whether the burst passed the trigger is read off counted garbage where
  // the hidden garbage could decide it (HiddenGarbageMayPass): the
  // estimate's yield lags a load that turned into overwrites.
  bool count_first;
  {
    absl::MutexLock l(&mu_);
    count_first = HiddenGarbageMayPass(gc_.ControllerLocked().start_mark());
  }
  if (count_first) CAIRN_RETURN_IF_ERROR(CountHiddenGarbage());
  bool settle_gc;
  {
    absl::MutexLock l(&mu_);
    settle_gc =
        gc_.ControllerLocked().SettleWanted(ledger_.Space(/*with_estimate=*/true).amplification());
    if (settle_gc && gc_.CanCollectLocked()) gc_.ControllerLocked().Settle();
    background_cv_.SignalAll();
  }
  // Rounds of waiting for GC, each ended by a new look at the figure.
  constexpr int kMaxSettleRounds = 6;
  int counts = 0;  // of the hidden garbage (CountHiddenGarbage)
  for (int settle = 0;; ++settle) {
    {
      absl::MutexLock l(&mu_);
      // A GC job under way finishes first: its victim would be left waiting.
      CAIRN_RETURN_IF_ERROR(WaitWhileLocked([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !imm_.empty() || flush_running_ || switch_running_ || compactions_running_ > 0 ||
               gc_.JobsRunningLocked() || NeedsCompaction() || gc_.BehindLocked();
      }));
    }
    gc_.DeleteObsoleteSegments();
    if (!settle_gc) {
      // What the flushes and compactions just counted can show the burst
      // past the trigger after all: the figure before them held only an
      // estimate of the garbage L0 hides.
      absl::MutexLock l(&mu_);
      settle_gc = gc_.ControllerLocked().SettleWanted(
          ledger_.Space(/*with_estimate=*/true).amplification());
      if (!settle_gc) break;
      if (gc_.CanCollectLocked()) gc_.ControllerLocked().Settle();
      background_cv_.SignalAll();
      continue;
    }
    if (settle == kMaxSettleRounds) break;
    {
      absl::MutexLock l(&mu_);
      // GC can leave collecting short of the settle mark: a round of its own
      // that reads the figure under the mark (a burst's garbage still
      // uncounted) ends the settle's collection, and what a flush or
      // compaction counts afterwards stays behind (one fill and overwrite
      // pass ended at 1.43x). Collect again while GC can.
      if (gc_.CanCollectLocked() && ledger_.Space(/*with_estimate=*/true).amplification() >
                                        gc_.ControllerLocked().settle_mark()) {
        gc_.ControllerLocked().Settle();
        background_cv_.SignalAll();
        continue;
      }
      // Garbage GC cannot see because the memtable or L0 hides it: flush and
      // compact L0, so that every pointer they drop is counted and GC can
      // take it before the return. The estimate is no guide here: its yield,
      // learnt from the last L0 compactions, can be near 0 while the
      // memtable hides half the value log. Counting is exact, and cheap next
      // to the values: tables hold keys and pointers. Twice at most: the
      // second round counts and collects what the first round's GC left.
      if (counts == 2 || !HiddenGarbageMayPass(gc_.ControllerLocked().settle_mark())) break;
    }
    ++counts;
    CAIRN_RETURN_IF_ERROR(CountHiddenGarbage());
    // Garbage the flush and the compaction counted make CanCollectLocked true
    // again (a garbage report); wake GC to take it down to the settle mark.
    absl::MutexLock l(&mu_);
    if (gc_.CanCollectLocked()) gc_.ControllerLocked().Settle();
    background_cv_.SignalAll();
  }
  if (settle_gc) {
    absl::MutexLock l(&mu_);
    gc_.ControllerLocked().EndSettle();
  }
  // The files that work made obsolete are gone on return, victims waiting
  // for their rewrites' durability included (GcCoordinator::SettleVictims).
  return gc_.SettleVictims();
}

}  // namespace cairn
