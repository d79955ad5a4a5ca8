// RunGcLoop is background GC's schedule: when a round collects, when it
// flushes the memtables for GC's sake, and how long it waits before the
// next round. The DB implements GcHost, the mechanism behind each step (its
// locks, its files, its memtables); the loop is the policy, with
// GcController's trigger deciding whether a round collects at all
// (docs/gc.md, "Keeping up").
//
// A round past the trigger collects one victim (its job deletes the victims
// no reader holds), then:
//   - when it found nothing while another loop's job runs, it waits for
//     that job's end (which signals), since the job may hold what there
//     was to collect: no flush, and GC is not reported idle;
//   - when it found no victim but the memtable hides enough garbage, it
//     flushes, so that the flush (and the L0 compaction it leads to)
//     counts that garbage;
//   - it goes again at once when it collected, or after kRetryWait.
// Below the trigger, it deletes the collected victims whose last reader
// has gone since, and waits kIdleWait between rounds. A signal from the DB
// (a flush, a compaction, a close) ends any wait early.
//
// Thread safety: runs on each of the DB's GC threads; the host's methods
// take its own locks.
#ifndef CAIRN_GC_GC_LOOP_H_
#define CAIRN_GC_GC_LOOP_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cairn::gc {

class GcHost {
 public:
  virtual ~GcHost() = default;
  // Blocks while a background error stops background work; false once the
  // DB is closing (the loop returns).
  virtual bool WaitUntilRunnable() = 0;
  // Whether this round collects: GcController::ShouldCollect at the
  // current space amplification.
  virtual bool ShouldCollect() = 0;
  // Manifest edits that have counted garbage so far.
  virtual uint64_t GarbageReports() = 0;
  // Collects at most one victim; the number collected (0: none at the
  // floor). An error is also the DB's background error.
  virtual absl::StatusOr<uint64_t> CollectOne() = 0;
  // Below the trigger: marks collected the victims still waiting for their
  // rewrites' durability (syncing for them), and deletes the collected
  // victims no reader or snapshot can reach.
  virtual void DeleteObsoleteSegments() = 0;
  // Whether the mutable memtable hides enough garbage to flush for.
  virtual bool MemTableHidesGarbage() = 0;
  // Whether another loop's job is running (the DB runs one loop per
  // Options::max_background_gc). A round that found nothing while one is
  // may have found nothing because that job holds the victims.
  virtual bool OtherJobsRunning() = 0;
  // Flushes the memtables (an error is the DB's background error, or the
  // close).
  virtual void Flush() = 0;
  // Ends a round: publishes whether GC can collect (false: it found
  // nothing, with idle_reports the garbage reports when the round began),
  // wakes whoever waits for background work, then waits up to wait, or
  // until signalled or closing.
  virtual void EndRound(bool can_collect, uint64_t idle_reports, absl::Duration wait) = 0;
};

inline constexpr absl::Duration kRetryWait = absl::Milliseconds(100);
inline constexpr absl::Duration kIdleWait = absl::Seconds(1);

// Runs rounds until host->WaitUntilRunnable() returns false.
void RunGcLoop(GcHost* host);

}  // namespace cairn::gc

#endif  // CAIRN_GC_GC_LOOP_H_
