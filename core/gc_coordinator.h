// GcCoordinator runs value-log garbage collection for one DB and owns its
// state: the segments jobs hold (claims), the victims waiting for
// durability, the records known dead and the garbage foreseen, the punched
// runs waiting for their readers, when collected bytes may leave the disk
// (Retention), the controller, and GC's counters. It reaches the DB only
// through GcDbAccess (core/gc_db_access.h).
//
// A victim's life, all of it here (docs/gc.md, "The protocol"):
//   - picked: Collect chooses it (gc::VictimPolicy, or small segments to
//     merge) under pick_mu_ and claims it;
//   - rewritten: gc::RunGcJob copies its live records and writes their
//     pointers back through JobIndex (core/gc_job_index.h);
//   - waiting for durability: a background job leaves it claimed in
//     pending_victims_ until the writes that moved or superseded its
//     records are durable;
//   - released: ReleasePendingVictims marks it obsolete in the manifest
//     (a flush, FlushDurable, or a sync it asks for) and retires it into
//     Retention;
//   - deleted: DeleteObsoleteSegments removes it once no reader of its
//     epoch and no older snapshot remains.
// Records that flushes and compactions counted dead are punched out of the
// segments they stay in until then (core/gc_coordinator_punch.cc).
//
// Thread safety: every public method is thread-safe. The state shared with
// the DB's own (claims, jobs running, waiting victims, pending punches, the
// controller) is guarded by the DB's mutex (db_mu_), as it was when it lived
// on DBImpl: public methods named *Locked require it and assert it at run
// time (the DB's callers hold it as DBImpl::mu_, which the static analysis
// cannot tie to db_mu_), the others take it themselves. Lock order:
// punch_mu_, then jobs_mu_, then pick_mu_ or obsolete_mu_, then the DB's
// mutex.
#ifndef CAIRN_CORE_GC_COORDINATOR_H_
#define CAIRN_CORE_GC_COORDINATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "cairn/db.h"
#include "core/db_counters.h"
#include "core/db_records.h"
#include "core/foreseen_garbage.h"
#include "core/gc_db_access.h"
#include "core/retention.h"
#include "core/space_ledger.h"
#include "gc/gc_controller.h"
#include "gc/victim_picker.h"
#include "io/file_system.h"
#include "vlog/dead_records.h"

namespace cairn {

class GcCoordinator {
 public:
  using PendingVictims = db_records::PendingVictims;
  using PendingPunch = db_records::PendingPunch;

  // How ReleasePendingVictims seeks the waiting victims' durability. kNow
  // syncs the WAL first. kSoon: nothing while a queued flush covers them, a
  // sync when WalSyncIsCheapFor them, a switch while the live memtable holds
  // their writes (and a sixteenth of its budget), a sync otherwise.
  // kWhenDurable releases only those already durable.
  enum class VictimRelease { kWhenDurable, kSoon, kNow };

  // Records flushes and compactions dropped, which GC skips without a
  // liveness check (2 Mi records, 16 MiB at most; docs/gc.md, "Records
  // known dead").
  static constexpr size_t kDeadRecordsBound = size_t{2} << 20;

  // db, options, ledger, db_mu and db_cv outlive the coordinator; db_mu is
  // the DB's mutex and db_cv the condition variable background work
  // signals on.
  GcCoordinator(GcDbAccess* db, const Options& options, std::string dbname, io::FileSystem* fs,
                SpaceLedger* ledger, absl::Mutex* db_mu, absl::CondVar* db_cv);
  GcCoordinator(const GcCoordinator&) = delete;
  GcCoordinator& operator=(const GcCoordinator&) = delete;

  // Jobs.
  // Collects: a manual run (RunGC) every victim worth it, waiting for
  // background jobs and holding them off; a background pass one job. Sets
  // the background error on failure.
  absl::StatusOr<GcResult> Collect(bool manual) ABSL_LOCKS_EXCLUDED(*db_mu_);
  // A GC thread's body (gc::RunGcLoop) until the DB closes.
  void RunLoop();

  // Victims after their job.
  absl::Status ReleasePendingVictims(VictimRelease how) ABSL_LOCKS_EXCLUDED(*db_mu_, obsolete_mu_);
  // Deletes the collected segments no reader or snapshot can reach any more.
  void DeleteObsoleteSegments() ABSL_LOCKS_EXCLUDED(*db_mu_, obsolete_mu_);
  // A flush's edit is applied (its writes are durable): the victims that
  // waited on them are released and what can go is deleted.
  absl::Status FlushDurable() ABSL_LOCKS_EXCLUDED(*db_mu_);
  // The settle's last step (DB::WaitForBackgroundWork): the waiting victims
  // synced and released, the deletable deleted, the ready runs punched and
  // the deleter idle; again while a job runs or GC is behind, a few times.
  absl::Status SettleVictims() ABSL_LOCKS_EXCLUDED(*db_mu_);

  // Garbage counted and foreseen.
  // A flush or compaction counted dead (its edit applied): lists them, but
  // for segments gone or collected, and plans punches in their segments.
  void DeadRecordsCounted(vlog::DeadRecords::Batch dead) ABSL_LOCKS_EXCLUDED(*db_mu_);
  // A flush found records its table shadows below: foreseen, but in
  // segments gone, obsolete or claimed. Returns the bytes added; *overflowed
  // is set when the list's bound dropped some.
  uint64_t ForeseeLocked(const vlog::DeadRecords::Batch& batch, bool* overflowed);
  // A manifest edit counted garbage (GC may have more to collect).
  void GarbageReported() { garbage_reports_.fetch_add(1, std::memory_order_release); }

  // Punched runs (core/gc_coordinator_punch.cc). Logs and punches the runs
  // no reader can reach any more, in segments no GC job holds (they are
  // held meanwhile, as a job's). While another call or a checkpoint holds
  // punch_mu_, returns at once, or with wait first waits for it (a settle
  // step, which must see the space freed). A failure to log is the
  // background error; a failure to punch is logged (and, where the file
  // system cannot punch, turns punching off).
  void PunchReadyRuns(bool wait = false) ABSL_LOCKS_EXCLUDED(*db_mu_, punch_mu_);

  // Claims outside jobs: a flush's new segments, until its memtable leaves
  // the SuperVersion (a liveness check would find each value inline in it
  // and take every record for dead).
  void ClaimLocked(uint64_t segment_id) {
    db_mu_->AssertHeld();
    claimed_.insert(segment_id);
  }
  void UnclaimLocked(uint64_t segment_id) {
    db_mu_->AssertHeld();
    claimed_.erase(segment_id);
  }

  // Questions, under the DB's mutex.
  // False while background GC, past its trigger, found nothing to collect
  // and no garbage has been counted since it looked.
  bool CanCollectLocked();
  // Background GC is (or is about to start) collecting, and can.
  bool BehindLocked();
  bool JobsRunningLocked() {
    db_mu_->AssertHeld();
    return jobs_running_ > 0;
  }
  // The waiting victims' bytes and counted garbage, summed (a few entries).
  PendingVictims PendingVictimTotalsLocked() const;
  // When GC runs, how fast, and how much user writes wait for it.
  gc::GcController& ControllerLocked() {
    db_mu_->AssertHeld();
    return controller_;
  }

  // Read without the DB's mutex.
  Retention& retention() { return retention_; }
  const ForeseenGarbage& foreseen() const { return foreseen_; }
  const GcCounters& counters() const { return counters_; }
  // Garbage found at open that nothing had counted.
  void RecountedLeak(uint64_t bytes) {
    counters_.leaked_bytes_recounted.fetch_add(bytes, std::memory_order_relaxed);
  }
  // GC collects, or did < 10 s ago: writes send every separated value to
  // the value log (Options::separate_at_flush_during_gc).
  bool values_as_written() const { return values_as_written_.load(std::memory_order_relaxed); }
  // Tests only: the records GC would drop without a lookup, in all.
  size_t dead_records_listed() const { return dead_records_.size(); }

  // A checkpoint holds these: jobs_mutex() from before its flush until its
  // state is captured (no background job runs, and none starts), and
  // punch_mutex() from its capture until its links are made (a punch in
  // between could reach its files).
  absl::Mutex* jobs_mutex() ABSL_LOCK_RETURNED(jobs_mu_) { return &jobs_mu_; }
  absl::Mutex* punch_mutex() ABSL_LOCK_RETURNED(punch_mu_) { return &punch_mu_; }

 private:
  class JobIndex;  // core/gc_job_index.h
  class LoopHost;  // gc_coordinator.cc

  // Victims the manifest now marks obsolete: they wait for the readers of
  // the current read epoch (and older snapshots), and a new epoch begins.
  void RetireCollectedLocked(absl::Span<const uint64_t> ids) ABSL_EXCLUSIVE_LOCKS_REQUIRED(*db_mu_);
  bool WalSyncIsCheapFor(uint64_t victim_bytes);  // at most an eighth
  // Nothing to pick: whether the active value-log segment holds enough
  // counted garbage to seal it for GC (gc::VictimPolicy::ShouldSealActive).
  bool ActiveSegmentWorthSealing(const gc::VictimPolicy& policy, bool manual)
      ABSL_LOCKS_EXCLUDED(*db_mu_);
  // Past the trigger with nothing to collect: is flushing worth it?
  bool MemTableHidesGarbage() ABSL_LOCKS_EXCLUDED(*db_mu_);
  // The space figure GC steers by, with the estimate of hidden garbage.
  double SpaceAmplification() ABSL_LOCKS_EXCLUDED(*db_mu_);
  // Plans runs in the segments of dead (listed just now) whose counted
  // garbage grew by a step since they were last planned.
  void PlanPunches(const vlog::DeadRecords::Batch& dead) ABSL_LOCKS_EXCLUDED(*db_mu_);

  GcDbAccess* const db_;
  const Options& options_;
  const std::string dbname_;
  io::FileSystem* const fs_;
  SpaceLedger* const ledger_;
  absl::Mutex* const db_mu_;
  absl::CondVar* const db_cv_;

  // Held by PunchReadyRuns, and by a checkpoint (punch_mutex()).
  absl::Mutex punch_mu_ ABSL_ACQUIRED_BEFORE(jobs_mu_);
  // Background jobs hold it shared and run side by side
  // (Options::max_background_gc); RunGC and a checkpoint's capture hold it
  // exclusively.
  absl::Mutex jobs_mu_ ABSL_ACQUIRED_BEFORE(pick_mu_);
  // Serializes choosing victims with claiming them, so that two jobs never
  // pick the same segment.
  absl::Mutex pick_mu_ ABSL_ACQUIRED_BEFORE(*db_mu_);
  // Held by ReleasePendingVictims from taking the ready victims until they
  // are retired, and by DeleteObsoleteSegments from taking the deletable
  // segments until their files are queued on the deleter: a caller that
  // finds the list empty because another thread took it waits for that
  // thread's work, so a settle step that returns has seen every victim GC
  // released beside it marked obsolete and handed to the deleter.
  absl::Mutex obsolete_mu_ ABSL_ACQUIRED_AFTER(jobs_mu_) ABSL_ACQUIRED_BEFORE(*db_mu_);

  // Segments a running job holds: its victims, and its output from the
  // moment it has a number until the job ends; a flush's new segments
  // (ClaimLocked); segments being punched. No job may pick them: before its
  // pointers are rewritten an output's records all look dead.
  absl::flat_hash_set<uint64_t> claimed_ ABSL_GUARDED_BY(*db_mu_);
  int jobs_running_ ABSL_GUARDED_BY(*db_mu_) = 0;
  // Victims of background jobs whose records all moved or died, waiting
  // until the writes that moved or superseded them are durable (sequence
  // durable_at) before the manifest marks them obsolete: a background job
  // does not sync the WAL for them (docs/gc.md, "Victims wait for
  // durability"). They stay claimed meanwhile.
  std::vector<PendingVictims> pending_victims_ ABSL_GUARDED_BY(*db_mu_);
  // When collected segments and punched runs may leave the disk: the read
  // epochs, the obsolete segments and the sequences iterators pin
  // (core/retention.h states the rule).
  Retention retention_;
  vlog::DeadRecords dead_records_{kDeadRecordsBound};
  // Records flushed entries shadow in the tables below, not counted yet
  // (docs/gc.md, "Garbage foreseen at flush").
  ForeseenGarbage foreseen_{size_t{1} << 20};
  // Punched runs waiting for their epoch (docs/gc.md, "Punched runs").
  std::vector<PendingPunch> punch_pending_ ABSL_GUARDED_BY(*db_mu_);
  // Segment id -> its garbage bytes when its runs were last planned.
  absl::flat_hash_map<uint64_t, uint64_t> punch_planned_garbage_ ABSL_GUARDED_BY(*db_mu_);
  std::atomic<bool> punch_unsupported_{false};
  // Whether GC's last round collected (or was below its trigger), and the
  // count of manifest edits that counted garbage (garbage_reports_) when a
  // round that found nothing began. Read through CanCollectLocked: garbage
  // counted since that round, by a flush or compaction, may be
  // collectable, so writes may be delayed for space and
  // WaitForBackgroundWork waits until GC has looked again.
  bool can_collect_ ABSL_GUARDED_BY(*db_mu_) = true;
  std::atomic<uint64_t> garbage_reports_{0};
  uint64_t idle_reports_ ABSL_GUARDED_BY(*db_mu_) = 0;
  gc::GcController controller_ ABSL_GUARDED_BY(*db_mu_);
  std::atomic<bool> values_as_written_{false};
  GcCounters counters_;
};

}  // namespace cairn

#endif  // CAIRN_CORE_GC_COORDINATOR_H_
