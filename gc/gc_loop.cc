#include "gc/gc_loop.h"

namespace cairn::gc {

void RunGcLoop(GcHost* host) {
  while (host->WaitUntilRunnable()) {
    if (host->ShouldCollect()) {
      const uint64_t reports_before = host->GarbageReports();
      const absl::StatusOr<uint64_t> victims = host->CollectOne();
      const bool collected = victims.ok() && *victims > 0;
      if (victims.ok() && !collected && host->OtherJobsRunning()) {
        host->EndRound(/*can_collect=*/true, reports_before, kRetryWait);
        continue;
      }
      if (victims.ok() && !collected && host->MemTableHidesGarbage()) {
        // Past the trigger with nothing counted enough to collect: the
        // garbage is in what the memtable hides.
        host->Flush();
      }
      // Nothing collectable yet: wait for flushes and compactions to count
      // more (they signal), or retry after kRetryWait.
      host->EndRound(collected, reports_before, collected ? absl::ZeroDuration() : kRetryWait);
    } else {
      // Collected victims that a reader held go once it has gone.
      host->DeleteObsoleteSegments();
      // Below the trigger there is nothing to hold writes for.
      host->EndRound(/*can_collect=*/true, host->GarbageReports(), kIdleWait);
    }
  }
}

}  // namespace cairn::gc
