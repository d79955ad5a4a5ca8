// GcCoordinator (core/gc_coordinator.h): a victim's life from its pick to
// its deletion, and GC's background loop. The punched runs are
// core/gc_coordinator_punch.cc; the job's view of the LSM is
// core/gc_job_index.cc. The protocol and victim choice: docs/gc.md.
#include "core/gc_coordinator.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <iterator>
#include <optional>
#include <utility>

#include "cairn/listener.h"
#include "core/file_deleter.h"
#include "core/gc_job_index.h"
#include "core/info_log.h"
#include "gc/gc_job.h"
#include "gc/gc_loop.h"
#include "io/status_macros.h"
#include "lsm/filename.h"

namespace cairn {

namespace {

// GC flushes a memtable that names at least this many value-log bytes when
// it finds nothing to collect past its trigger (the garbage is uncounted).
constexpr uint64_t kMinGarbageFlushBytes = 256 << 10;

// How long after GC last collected writes still send every separated value
// to the value log (Options::separate_at_flush_during_gc).
constexpr auto kAsWrittenAfterGc = std::chrono::seconds(10);

}  // namespace

GcCoordinator::GcCoordinator(GcDbAccess* db, const Options& options, std::string dbname,
                             io::FileSystem* fs, SpaceLedger* ledger, absl::Mutex* db_mu,
                             absl::CondVar* db_cv)
    : db_(db),
      options_(options),
      dbname_(std::move(dbname)),
      fs_(fs),
      ledger_(ledger),
      db_mu_(db_mu),
      db_cv_(db_cv),
      controller_(gc::GcControllerOptions{.space_amp_trigger = options.gc_space_amp_trigger,
                                          .min_garbage_ratio = options.gc_min_garbage_ratio,
                                          .bytes_per_second = options.gc_bytes_per_sec}) {}

absl::StatusOr<GcResult> GcCoordinator::Collect(bool manual) {
  // Background jobs run side by side, each on segments it has claimed; a
  // manual run (and a checkpoint's capture) waits for them and holds them
  // off.
  std::optional<absl::MutexLock> exclusive;
  std::optional<absl::ReaderMutexLock> shared;
  if (manual) {
    exclusive.emplace(&jobs_mu_);
  } else {
    shared.emplace(&jobs_mu_);
  }
  GcResult total;
  const auto start = std::chrono::steady_clock::now();
  CAIRN_RETURN_IF_ERROR(ReleasePendingVictims(VictimRelease::kWhenDurable));
  DeleteObsoleteSegments();
  vlog::ValueLog& vlog = db_->value_log();
  gc::GcJobOptions jo;
  jo.compress = options_.value_compression == Compression::kZstd;
  jo.compression_level = 1;  // as the write path's (value_log.cc)
  // GC output takes the same append path as fresh values.
  jo.direct_writes = options_.direct_writes;
  jo.note_direct_refused = [&vlog](const std::string& path) { vlog.NoteDirectRefused(path); };
  jo.writeback_bytes = options_.value_log_bytes_per_sync;
  // Larger batches than the job's default: each shares one read view and
  // one sorted pass over the LSM.
  jo.liveness_batch_size = 1024;
  const gc::VictimPolicy policy = [this] {
    absl::MutexLock l(db_mu_);
    return controller_.victim_policy();
  }();
  JobIndex index(this, /*defer_victims=*/!manual);
  bool nothing_left = false;   // no victim worth a job is left
  bool sealed_active = false;  // this pass sealed the active segment once
  absl::flat_hash_set<uint64_t> done;
  // This pass's outputs: a merge does not take them again (their bytes
  // were just copied).
  absl::flat_hash_set<uint64_t> outputs;
  uint64_t merged = 0;  // victims taken as small segments to merge
  int jobs_allowed = 1;
  // Background GC below its trigger merges small segments, and only that
  // (docs/gc.md, "Merging small segments").
  bool merge_only = false;
  while (true) {
    {
      absl::MutexLock l(db_mu_);
      if (db_->ShuttingDownLocked()) break;
      CAIRN_RETURN_IF_ERROR(db_->BackgroundErrorLocked());
      // Each victim's budget from the figure now: once writes are being
      // slowed for space, GC must not sleep.
      const double amp = ledger_->Space(/*with_estimate=*/true).amplification();
      jo.bytes_per_second = controller_.JobBytesPerSecond(amp, manual);
      jobs_allowed = controller_.JobsAllowed(amp, options_.max_background_gc);
      merge_only = !manual && !controller_.collecting();
    }
    std::vector<uint64_t> victim_ids;
    bool seal_active = false;
    bool merge = false;
    {
      absl::MutexLock pick(&pick_mu_);
      gc::PickRequest request;
      request.exclude = done;
      {
        // The claims before the segments: no claim is made while this
        // lock is held, and a job releases a segment only once it is
        // obsolete or safe to collect (its pointers written), so each
        // segment is claimed here or in its safe state in the list read
        // next.
        absl::MutexLock l(db_mu_);
        // A background job alongside another only while GC is behind.
        if (!manual && jobs_running_ >= jobs_allowed) break;
        request.exclude.insert(claimed_.begin(), claimed_.end());
      }
      std::vector<vlog::SegmentInfo> segments = vlog.segment_set().Segments();
      // Garbage flushes foresaw counts as it will once compactions count it.
      for (vlog::SegmentInfo& info : segments) {
        info.garbage_bytes =
            std::min(info.size, info.garbage_bytes + foreseen_.Bytes(info.segment_id));
      }
      request.segments = segments;
      // Victims up to a segment's size in all share one job: one output
      // segment, its syncs and manifest edit, one synced rewrite and one
      // removal, instead of each paying for its own (docs/gc.md).
      request.byte_budget = options_.value_log_segment_size;
      std::vector<gc::VictimCandidate> victims;
      if (!merge_only) {
        victims = policy.Pick(request, manual, [this] { return SpaceAmplification(); });
      }
      if (victims.empty()) {
        // No garbage worth a job: small segments (flushes of a few values,
        // short sessions) that no garbage will ever make victims are merged
        // into one output once there are enough of them. Their victims and
        // output follow every rule of a garbage job's.
        request.exclude.insert(outputs.begin(), outputs.end());
        victims = gc::VictimPicker::PickSmall(request, options_.value_log_segment_size);
        merge = !victims.empty();
      }
      if (victims.empty()) {
        // Garbage the write path keeps piling into the active segment
        // (a small key set overwritten again and again) is out of reach
        // until the segment is sealed: seal it, and pick again.
        seal_active = !merge_only && !sealed_active && ActiveSegmentWorthSealing(policy, manual);
        if (!seal_active) {
          nothing_left = true;
          break;
        }
      } else {
        absl::MutexLock l(db_mu_);
        for (const gc::VictimCandidate& v : victims) {
          victim_ids.push_back(v.segment_id);
          done.insert(v.segment_id);
          claimed_.insert(v.segment_id);
        }
        ++jobs_running_;
      }
    }
    if (seal_active) {
      sealed_active = true;
      CAIRN_RETURN_IF_ERROR(db_->SealActiveSegment());
      counters_.active_seals.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    gc::GcJobResult r;
    absl::Status s = gc::RunGcJob(
        jo, fs_, [this](uint64_t id) { return lsm::ValueLogFileName(dbname_, id); }, victim_ids,
        &index, &r);
    index.ReleaseCopies();  // a job that failed, or had nothing to copy
    lsm::SequenceNumber durable_at = 0;
    const std::vector<uint64_t> deferred = index.TakeDeferredVictims(&durable_at);
    const auto is_deferred = [&](uint64_t id) {
      return std::find(deferred.begin(), deferred.end(), id) != deferred.end();
    };
    {
      // Collected victims are obsolete now, which no picker takes, or wait
      // claimed for durability; the output is an ordinary segment once its
      // pointers are written (or obsolete, or counted as garbage, when the
      // job failed).
      absl::MutexLock l(db_mu_);
      for (uint64_t id : victim_ids) {
        if (!is_deferred(id)) claimed_.erase(id);
      }
      for (uint64_t id : index.TakeClaimedOutputs()) {
        claimed_.erase(id);
        outputs.insert(id);
      }
      if (!deferred.empty()) {
        PendingVictims p{.ids = deferred, .durable_at = durable_at};
        for (uint64_t id : deferred) {
          if (std::optional<vlog::SegmentInfo> info = vlog.segment_set().Get(id)) {
            // What they take on the device, as SpaceLedger::Space counts.
            p.bytes += info->allocated_bytes();
            p.garbage += std::min(info->size, info->garbage_bytes) -
                         std::min(info->garbage_bytes, info->punched_bytes);
          }
        }
        pending_victims_.push_back(std::move(p));
      }
      --jobs_running_;
      db_cv_->SignalAll();
    }
    if (!s.ok()) {
      absl::MutexLock l(db_mu_);
      // A close cut the job short (its rewrite was refused before any
      // write): what it did leaves extra garbage, never a dangling pointer.
      if (!(db_->ShuttingDownLocked() && absl::IsAborted(s))) db_->SetBackgroundErrorLocked(s);
      return s;
    }
    // The victims are done with: nothing scans them again.
    for (uint64_t id : victim_ids) {
      dead_records_.Forget(id);
      foreseen_.Forget(id);
    }
    {
      // The writes that superseded the victims' records are durable
      // already: the job's final edit synced them before it marked the
      // victims obsolete (JobIndex::LogSegmentEdit). Deferred ones wait.
      std::vector<uint64_t> collected;
      for (uint64_t id : victim_ids) {
        if (!is_deferred(id)) collected.push_back(id);
      }
      absl::MutexLock l(db_mu_);
      RetireCollectedLocked(collected);
    }
    total.victims += victim_ids.size();
    if (merge) merged += victim_ids.size();
    total.bytes_read += r.bytes_read;
    total.bytes_relocated += r.bytes_relocated;
    total.records_relocated += r.live_records;
    total.records_dropped += r.records_dropped;
    total.rewrites_lost += r.rewrites_lost;
    counters_.runs.fetch_add(victim_ids.size(), std::memory_order_relaxed);
    counters_.bytes_read.fetch_add(r.bytes_read, std::memory_order_relaxed);
    counters_.bytes_relocated.fetch_add(r.bytes_relocated, std::memory_order_relaxed);
    counters_.records_dropped.fetch_add(r.records_dropped, std::memory_order_relaxed);
    counters_.records_known_dead.fetch_add(r.records_known_dead, std::memory_order_relaxed);
    counters_.scan_micros.fetch_add(r.scan_micros, std::memory_order_relaxed);
    counters_.liveness_micros.fetch_add(r.liveness_micros, std::memory_order_relaxed);
    counters_.write_micros.fetch_add(r.write_micros, std::memory_order_relaxed);
    counters_.rewrite_micros.fetch_add(r.rewrite_micros, std::memory_order_relaxed);
    counters_.throttled_micros.fetch_add(r.throttled_micros, std::memory_order_relaxed);
    DeleteObsoleteSegments();
    if (!manual) break;  // background: one victim per pass, then re-check
  }
  {
    // Victims waiting for durability go once a flush or a sync has made
    // their superseding writes durable (the flush releases them itself).
    // RunGC syncs for them. A background pass seeks their durability when
    // GC has nothing else to do (so that an idle database holds none), when
    // they hold more than two segments' worth of space, and whenever a WAL
    // sync would cost little next to what they free (the WAL holds
    // pointers, not values: docs/decisions/
    // 20261206_values_as_written_while_gc_collects.md): from a flush where
    // one is queued or the live memtable is worth one, from a sync
    // otherwise (VictimRelease::kSoon).
    VictimRelease how = VictimRelease::kWhenDurable;
    {
      absl::MutexLock l(db_mu_);
      const uint64_t waiting = PendingVictimTotalsLocked().bytes;
      if (manual) {
        how = VictimRelease::kNow;
      } else if (nothing_left || waiting > 2 * options_.value_log_segment_size ||
                 WalSyncIsCheapFor(waiting)) {
        how = VictimRelease::kSoon;
      }
    }
    CAIRN_RETURN_IF_ERROR(ReleasePendingVictims(how));
  }
  const uint64_t freed_before = counters_.segments_freed.load();
  DeleteObsoleteSegments();
  total.segments_freed = counters_.segments_freed.load() - freed_before;
  total.micros = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  counters_.micros.fetch_add(total.micros, std::memory_order_relaxed);
  if (total.victims > 0) {
    db_->info_log().Log(
        "gc: %d segments collected (%d of them small ones merged), %d bytes read, %d bytes (%d "
        "records) relocated, %d garbage records dropped, %d rewrites lost to newer writes, %d "
        "segments freed, in %d us",
        total.victims, merged, total.bytes_read, total.bytes_relocated, total.records_relocated,
        total.records_dropped, total.rewrites_lost, total.segments_freed, total.micros);
    for (const auto& listener : options_.listeners) listener->OnGcCompleted(total);
  }
  return total;
}

absl::Status GcCoordinator::ReleasePendingVictims(VictimRelease how) {
  enum class Action { kNone, kSwitch, kSync } action = Action::kNone;
  {
    absl::MutexLock l(db_mu_);
    // None waiting here can still mean another thread has taken them and
    // is logging them: the wait for obsolete_mu_ below covers that.
    lsm::SequenceNumber newest = 0;
    for (const PendingVictims& p : pending_victims_) newest = std::max(newest, p.durable_at);
    if (how != VictimRelease::kWhenDurable && newest > db_->DurableSequence()) {
      action = Action::kSync;
      if (how == VictimRelease::kSoon) {
        // A flush already queued makes them durable without a sync; so
        // does one of the live memtable when they wait on its writes,
        // unless it holds under a sixteenth of memtable_size. Neither
        // writes the WAL's copy of the values to the device; a sync does,
        // and every user write waits behind it in the queue meanwhile
        // (docs/decisions/20261204_victims_released_by_flushes.md).
        const GcDbAccess::MemTables mems = db_->MemTablesLocked();
        if (newest <= mems.queued_through) {
          action = Action::kNone;
        } else if (!WalSyncIsCheapFor(PendingVictimTotalsLocked().bytes) && mems.immutable < 2 &&
                   mems.mutable_bytes >= options_.memtable_size / 16) {
          action = Action::kSwitch;
        }
      }
    }
  }
  // A synced group covers every write before it, the closed WALs' included.
  if (action == Action::kSync) {
    CAIRN_RETURN_IF_ERROR(db_->SyncWal());
    counters_.victim_syncs.fetch_add(1, std::memory_order_relaxed);
  } else if (action == Action::kSwitch) {
    // Their release comes with the flush (a later call).
    CAIRN_RETURN_IF_ERROR(db_->SwitchMemTable());
    counters_.victim_switches.fetch_add(1, std::memory_order_relaxed);
  }
  absl::MutexLock release(&obsolete_mu_);
  std::vector<PendingVictims> ready;
  {
    absl::MutexLock l(db_mu_);
    const lsm::SequenceNumber durable = db_->DurableSequence();
    auto waiting =
        std::stable_partition(pending_victims_.begin(), pending_victims_.end(),
                              [&](const PendingVictims& p) { return p.durable_at > durable; });
    ready.assign(std::make_move_iterator(waiting), std::make_move_iterator(pending_victims_.end()));
    pending_victims_.erase(waiting, pending_victims_.end());
  }
  if (ready.empty()) return absl::OkStatus();
  vlog::SegmentEdit edit;
  for (const PendingVictims& p : ready) {
    for (uint64_t id : p.ids) edit.MarkObsolete(id);
  }
  const absl::Status s = db_->LogAndApply(edit);
  absl::MutexLock l(db_mu_);
  if (!s.ok()) {
    // Unlogged, they stay claimed: their records' bytes are garbage the
    // next open counts from the LSM. The DB stops writing meanwhile.
    db_->SetBackgroundErrorLocked(s);
    return s;
  }
  for (const PendingVictims& p : ready) {
    counters_.victims_waited.fetch_add(p.ids.size(), std::memory_order_relaxed);
    for (uint64_t id : p.ids) claimed_.erase(id);
    RetireCollectedLocked(p.ids);
  }
  db_cv_->SignalAll();
  return absl::OkStatus();
}

bool GcCoordinator::WalSyncIsCheapFor(uint64_t victim_bytes) {
  // A sync writes the WAL's unsynced bytes (and the active segment's, which
  // the device gets anyway). Where the WAL carries values (values separated
  // at flush, inline ones) that is about what a flush would write again, and
  // the victims wait for the flush instead.
  return victim_bytes > 0 && db_->WalUnsyncedBytes() * 8 <= victim_bytes;
}

void GcCoordinator::RetireCollectedLocked(absl::Span<const uint64_t> ids) {
  // Readers from before the rewrite hold the epoch this ends or an earlier
  // one; a victim goes when they are all gone and no older snapshot or
  // pinned sequence remains (core/retention.h).
  retention_.AddObsolete(ids, db_->LastSequence());
  db_->InstallSuperVersionLocked();
}

GcCoordinator::PendingVictims GcCoordinator::PendingVictimTotalsLocked() const {
  db_mu_->AssertHeld();
  PendingVictims total;
  for (const PendingVictims& p : pending_victims_) {
    total.bytes += p.bytes;
    total.garbage += p.garbage;
  }
  return total;
}

void GcCoordinator::DeleteObsoleteSegments() {
  absl::MutexLock deleting(&obsolete_mu_);
  std::vector<uint64_t> deletable;
  {
    absl::MutexLock l(db_mu_);
    deletable = retention_.TakeDeletable(db_->OldestSnapshotLocked());
  }
  if (deletable.empty()) return;
  // The manifest forgets them first, then the files go on the deleter's
  // thread (an unlink may wait for the device's discard). A crash between
  // the two leaves files the manifest does not know, which the next open
  // removes; nothing references them.
  vlog::SegmentEdit edit;
  for (uint64_t id : deletable) {
    db_->value_log().EvictReader(id);
    edit.RemoveSegment(id);
  }
  absl::Status s = db_->LogAndApply(edit);
  if (!s.ok()) {
    // They stay obsolete in the manifest; the next open deletes them.
    absl::MutexLock l(db_mu_);
    db_->SetBackgroundErrorLocked(s);
    return;
  }
  for (uint64_t id : deletable) {
    dead_records_.Forget(id);
    foreseen_.Forget(id);
    db_->deleter().Remove(lsm::ValueLogFileName(dbname_, id));
    counters_.segments_freed.fetch_add(1, std::memory_order_relaxed);
  }
}

absl::Status GcCoordinator::FlushDurable() {
  // GC victims waiting on the flushed memtable's writes (the rewrites that
  // moved their records, or the writes that superseded them) can go now,
  // not only at GC's next pass (an error is sticky in the background error).
  CAIRN_RETURN_IF_ERROR(ReleasePendingVictims(VictimRelease::kWhenDurable));
  DeleteObsoleteSegments();
  return absl::OkStatus();
}

absl::Status GcCoordinator::SettleVictims() {
  // The files the settled work made obsolete are gone on return, as the
  // space figures already say. Those figures count victims waiting for
  // their rewrites' durability as collected; GC releases them when it next
  // looks, which can be after the return, so they get their sync here.
  // Their release and the deletions can show GC more to collect (a
  // garbage report it has not looked at): a job it would start just after
  // the return, its output written beside its victim, doubled the small
  // key-set test's directory for a moment (2.07x live, 1.07x 300 ms
  // later). Wait for that too, a few rounds at most.
  for (int round = 0;; ++round) {
    CAIRN_RETURN_IF_ERROR(ReleasePendingVictims(VictimRelease::kNow));
    DeleteObsoleteSegments();
    PunchReadyRuns(/*wait=*/true);
    db_->deleter().WaitIdle();
    absl::MutexLock l(db_mu_);
    const auto gc_busy = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(*db_mu_) {
      return jobs_running_ > 0 || BehindLocked();
    };
    if (round == 3 || !gc_busy()) break;
    CAIRN_RETURN_IF_ERROR(db_->WaitWhileLocked(gc_busy));
  }
  return absl::OkStatus();
}

bool GcCoordinator::CanCollectLocked() {
  db_mu_->AssertHeld();
  // A round that found nothing was right about the garbage counted before
  // it began; any counted since may be collectable.
  return can_collect_ || garbage_reports_.load(std::memory_order_acquire) != idle_reports_;
}

bool GcCoordinator::BehindLocked() {
  db_mu_->AssertHeld();
  if (!controller_.enabled() || !CanCollectLocked()) return false;
  const double amp = ledger_->Space(/*with_estimate=*/true).amplification();
  // Collecting until the stop mark, or about to start.
  return controller_.collecting() ? amp > controller_.collect_until()
                                  : amp > controller_.start_mark();
}

uint64_t GcCoordinator::ForeseeLocked(const vlog::DeadRecords::Batch& batch, bool* overflowed) {
  db_mu_->AssertHeld();
  const uint64_t before = foreseen_.overflowed();
  const vlog::SegmentSet& set = db_->value_log().segment_set();
  const uint64_t bytes =
      foreseen_.Add(batch, [this, &set](uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(*db_mu_) {
        const std::optional<vlog::SegmentInfo> info = set.Get(id);
        return info.has_value() && !info->obsolete && !claimed_.contains(id);
      });
  if (bytes > 0) GarbageReported();
  *overflowed = foreseen_.overflowed() != before;
  return bytes;
}

double GcCoordinator::SpaceAmplification() {
  absl::MutexLock l(db_mu_);
  return ledger_->Space(/*with_estimate=*/true).amplification();
}

bool GcCoordinator::ActiveSegmentWorthSealing(const gc::VictimPolicy& policy, bool manual) {
  const vlog::ValueLog& vlog = db_->value_log();
  const std::optional<std::pair<uint64_t, uint64_t>> active = vlog.ActiveSegment();
  if (!active.has_value()) return false;
  const auto [id, bytes] = *active;
  const std::optional<vlog::SegmentInfo> info = vlog.segment_set().Get(id);
  if (!info.has_value() || info->sealed || info->obsolete) return false;
  const uint64_t garbage = info->garbage_bytes + foreseen_.Bytes(id);
  return policy.ShouldSealActive(bytes, std::min(bytes, garbage), manual,
                                 [this] { return SpaceAmplification(); });
}

bool GcCoordinator::MemTableHidesGarbage() {
  absl::MutexLock l(db_mu_);
  return ledger_->MemTableGarbageEstimate() >= kMinGarbageFlushBytes;
}

// The mechanism behind each step of gc::RunGcLoop, GC's schedule.
class GcCoordinator::LoopHost final : public gc::GcHost {
 public:
  explicit LoopHost(GcCoordinator* gc) : gc_(gc) {}

  bool WaitUntilRunnable() override {
    absl::MutexLock l(gc_->db_mu_);
    GcDbAccess* db = gc_->db_;
    while (!db->ShuttingDownLocked() && !db->BackgroundErrorLocked().ok()) {
      gc_->db_cv_->Wait(gc_->db_mu_);
    }
    return !db->ShuttingDownLocked();
  }
  bool ShouldCollect() override {
    // Hysteresis (gc::GcController): GC starts once space amplification
    // passes the trigger and keeps going until it is back under a lower
    // mark, so that it does not hover at the trigger and leave the value
    // log above it whenever writes pause.
    bool collect;
    {
      absl::MutexLock l(gc_->db_mu_);
      collect = gc_->controller_.ShouldCollect(
          gc_->ledger_->Space(/*with_estimate=*/true).amplification());
      // Meanwhile, and for kAsWrittenAfterGc after, writes send every
      // separated value to the value log: under sustained overwrites GC
      // pauses between its stop mark and the trigger for about a second at
      // a time, and values sent to the WAL then would keep the next jobs'
      // victims waiting for a flush.
      const auto now = std::chrono::steady_clock::now();
      if (collect) last_collect_ = now;
      gc_->values_as_written_.store(
          collect || (last_collect_.has_value() && now - *last_collect_ < kAsWrittenAfterGc),
          std::memory_order_relaxed);
    }
    // Below the trigger a round still merges small segments, and only that
    // (Collect reads the controller too): a round that collects nothing
    // then is no sign of GC falling behind, and flushes nothing.
    merge_only_ = !collect && SmallSegmentsToMerge();
    return collect || merge_only_;
  }
  uint64_t GarbageReports() override {
    return gc_->garbage_reports_.load(std::memory_order_acquire);
  }
  absl::StatusOr<uint64_t> CollectOne() override {
    // Errors are sticky in the background error (set by Collect).
    absl::StatusOr<GcResult> r = gc_->Collect(/*manual=*/false);
    if (!r.ok()) return r.status();
    gc_->PunchReadyRuns();
    return r->victims;
  }
  void DeleteObsoleteSegments() override {
    // Below the trigger GC is idle: victims still waiting for durability
    // get it now, from a flush or a sync (an error is sticky in the
    // background error).
    gc_->ReleasePendingVictims(VictimRelease::kSoon).IgnoreError();
    gc_->DeleteObsoleteSegments();
    gc_->PunchReadyRuns();
  }
  bool MemTableHidesGarbage() override { return !merge_only_ && gc_->MemTableHidesGarbage(); }
  bool OtherJobsRunning() override {
    absl::MutexLock l(gc_->db_mu_);
    return gc_->jobs_running_ > 0;
  }
  void Flush() override {
    gc_->db_->Flush().IgnoreError();  // an error is sticky in the background error, or the close
  }
  void EndRound(bool can_collect, uint64_t idle_reports, absl::Duration wait) override {
    // A merge's round is one below the trigger: nothing holds writes back.
    if (merge_only_) can_collect = true;
    absl::MutexLock l(gc_->db_mu_);
    // Writers delayed for space, and WaitForBackgroundWork, read this
    // through CanCollectLocked, which also sees garbage counted since the
    // round began (by a flush in it, or any flush or compaction).
    gc_->can_collect_ = can_collect;
    gc_->idle_reports_ = idle_reports;
    gc_->db_cv_->SignalAll();
    // A close that signalled while the DB's mutex was released must not
    // wait out the timeout.
    if (wait > absl::ZeroDuration() && !gc_->db_->ShuttingDownLocked()) {
      gc_->db_cv_->WaitWithTimeout(gc_->db_mu_, wait);
    }
  }

 private:
  // Whether there are gc::kMinSmallSegmentsToMerge small segments no job
  // holds. The segment list is read again only once segments or claims have
  // come or gone since it last said no: a round below the trigger comes at
  // each flush and compaction, and the list holds every segment.
  bool SmallSegmentsToMerge() {
    const vlog::SegmentSet& set = gc_->db_->value_log().segment_set();
    const vlog::SegmentSet::Totals totals = set.GetTotals();
    gc::PickRequest request;
    {
      absl::MutexLock l(gc_->db_mu_);
      if (!gc_->controller_.enabled()) return false;  // no background GC at all
      request.exclude.insert(gc_->claimed_.begin(), gc_->claimed_.end());
    }
    const std::array<uint64_t, 4> seen = {totals.segments, totals.sealed_segments,
                                          totals.obsolete_segments, request.exclude.size()};
    if (seen == nothing_to_merge_at_) return false;
    const std::vector<vlog::SegmentInfo> segments = set.Segments();
    request.segments = segments;
    if (!gc::VictimPicker::PickSmall(request, gc_->options_.value_log_segment_size).empty()) {
      return true;
    }
    nothing_to_merge_at_ = seen;
    return false;
  }

  GcCoordinator* const gc_;
  // When ShouldCollect last said yes (GC thread only).
  std::optional<std::chrono::steady_clock::time_point> last_collect_;
  // The last ShouldCollect said yes only to merge small segments.
  bool merge_only_ = false;
  // The figures SmallSegmentsToMerge last found nothing at.
  std::array<uint64_t, 4> nothing_to_merge_at_ = {~uint64_t{0}};
};

void GcCoordinator::RunLoop() {
  LoopHost host(this);
  gc::RunGcLoop(&host);
}

}  // namespace cairn
