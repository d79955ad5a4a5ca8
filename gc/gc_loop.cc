#include "gc/gc_loop.h"

namespace cairn::gc {

void RunGcLoop(GcHost* host) {
  int idle_rounds_waiting = 0;
  while (host->WaitUntilRunnable()) {
    if (host->ShouldCollect()) {
      const uint64_t reports_before = host->GarbageReports();
      const absl::StatusOr<uint64_t> victims = host->CollectOne();
      const bool collected = victims.ok() && *victims > 0;
      if (victims.ok() && host->DeleteObsoleteSegments() >= kSyncForWaitingVictims) {
        // Victims wait for the writes that superseded their records to be
        // synced; non-sync writes alone never sync them before the next
        // WAL switch.
        host->SyncWal();
        host->DeleteObsoleteSegments();
      } else if (victims.ok() && !collected && host->MemTableHidesGarbage()) {
        // Past the trigger with nothing counted enough to collect: the
        // garbage is in what the memtable hides.
        host->Flush();
      }
      // Nothing collectable yet: wait for flushes and compactions to count
      // more (they signal), or retry after kRetryWait.
      host->EndRound(collected, reports_before, collected ? absl::ZeroDuration() : kRetryWait);
    } else {
      // Below the trigger: collected victims still waiting for a sync once
      // writes have stopped are freed by one.
      if (host->DeleteObsoleteSegments() == 0) {
        idle_rounds_waiting = 0;
      } else if (++idle_rounds_waiting >= 2) {
        host->SyncWal();
        host->DeleteObsoleteSegments();
        idle_rounds_waiting = 0;
      }
      // Below the trigger there is nothing to hold writes for.
      host->EndRound(/*can_collect=*/true, host->GarbageReports(), kIdleWait);
    }
  }
}

}  // namespace cairn::gc
