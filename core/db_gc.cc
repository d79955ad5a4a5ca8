// Value-log garbage collection, the DB's side: the index the collector
// checks liveness against and writes pointers back through (the write
// queue, as conditional updates), RunGC, and the background GC thread (the
// victims' release and deletion: core/db_gc_victims.cc). The protocol and
// victim choice: docs/gc.md.
#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "core/write_batch_internal.h"
#include "gc/gc_job.h"
#include "gc/gc_loop.h"
#include "gc/victim_picker.h"
#include "io/status_macros.h"
#include "lsm/dbformat.h"
#include "lsm/filename.h"
#include "vlog/segment_accounting.h"

namespace cairn {

using lsm::SequenceNumber;
using lsm::ValueType;

namespace {

bool SamePlace(const vlog::ValuePointer& a, const vlog::ValuePointer& b) {
  return a.segment_id == b.segment_id && a.offset == b.offset;
}

// Whether an LSM entry (type, stored) is a pointer to ptr's record.
bool IsPointerTo(ValueType type, std::string_view stored, const vlog::ValuePointer& ptr) {
  if (type != ValueType::kValuePointer) return false;
  absl::StatusOr<vlog::ValuePointer> current = vlog::DecodeValuePointer(stored);
  return current.ok() && SamePlace(*current, ptr);
}

// GC flushes a memtable that names at least this many value-log bytes when
// it finds nothing to collect past its trigger (the garbage is uncounted).
constexpr uint64_t kMinGarbageFlushBytes = 256 << 10;

// How long after GC last collected writes still send every separated value
// to the value log (Options::separate_at_flush_during_gc).
constexpr auto kAsWrittenAfterGc = std::chrono::seconds(10);

}  // namespace

// The collector's narrow view of the LSM.
class DBImpl::GcIndex final : public gc::IndexView {
 public:
  // defer_victims: a background job's final edit leaves its victims to
  // ReleasePendingVictims when their superseding writes are not durable
  // yet, instead of syncing the WAL for them.
  GcIndex(DBImpl* db, bool defer_victims) : db_(db), defer_victims_(defer_victims) {}

  absl::Status CheckLive(absl::Span<const std::string_view> keys,
                         absl::Span<const vlog::ValuePointer> pointers,
                         std::vector<bool>* live) override {
    // One read view for the batch, and the keys looked up in key order, as
    // MultiGet does: neighbouring lookups share index and data blocks in
    // the block cache (a victim's records are in write order, which under
    // random overwrites is no order at all).
    ReadView view = db_->GetReadView(ReadOptions());
    view.table_read.expect_hits = true;  // a victim's keys are nearly all there
    checked_through_ = std::max(checked_through_, view.sequence);
    if (new_job_) {
      // A job's first check (its rewrites come after all of them): every
      // record of the job is seen live at or after this base.
      base_sequence_ = view.sequence;
      base_mem_ = view.sv->mem;
      new_job_ = false;
    }
    return LookUp(view, keys, pointers, live);
  }

  absl::StatusOr<size_t> RewritePointers(absl::Span<const std::string_view> keys,
                                         absl::Span<const vlog::ValuePointer> old_pointers,
                                         absl::Span<const vlog::ValuePointer> new_pointers,
                                         std::vector<bool>* replaced, bool sync) override {
    new_job_ = true;  // the job's checks are over; the next one starts a job
    replaced->assign(keys.size(), false);
    // A job whose victims wait for durability needs no synced rewrite: a
    // flush or a later sync makes its rewrites durable before the victims
    // are marked obsolete (ReleasePendingVictims).
    if (defer_victims_) sync = false;
    if (db_->before_gc_rewrite_for_testing) db_->before_gc_rewrite_for_testing();
    // The leader, which holds up every user write while it builds the
    // batch, need only look in the memtables when every write since the
    // liveness checks is there. When a flush has moved some into a table
    // since, the batch is checked again here, outside the write queue, and
    // that check is the base.
    lsm::SequenceNumber base_sequence = base_sequence_;
    std::shared_ptr<lsm::MemTable> base_mem = base_mem_.lock();
    std::vector<std::string_view> kept_keys;
    std::vector<vlog::ValuePointer> kept_old, kept_new;
    std::vector<size_t> kept_index;
    {
      ReadView now = db_->GetReadView(ReadOptions());
      now.table_read.expect_hits = true;
      std::vector<bool> live(keys.size(), true);
      if (base_mem == nullptr || !HoldsMemTable(*now.sv, base_mem.get())) {
        base_sequence = now.sequence;
        base_mem = now.sv->mem;
        CAIRN_RETURN_IF_ERROR(LookUp(now, keys, old_pointers, &live));
        checked_through_ = std::max(checked_through_, now.sequence);
        db_->gc_counters_.rewrite_rechecks.fetch_add(keys.size(), std::memory_order_relaxed);
      }
      for (size_t i = 0; i < keys.size(); ++i) {
        if (!live[i]) continue;  // a newer Put or a Delete won
        kept_keys.push_back(keys[i]);
        kept_old.push_back(old_pointers[i]);
        kept_new.push_back(new_pointers[i]);
        kept_index.push_back(i);
      }
    }
    // A job's earlier batches were written unsynced; its last call syncs
    // them even when it has nothing left to write itself.
    if (kept_keys.empty() && !(sync && unsynced_rewrites_)) return 0;
    std::vector<bool> kept_replaced;
    PointerRewrite rewrite{kept_keys, kept_old, kept_new, &kept_replaced, base_sequence,
                           base_mem.get()};
    kept_replaced.assign(kept_keys.size(), false);
    CAIRN_RETURN_IF_ERROR(db_->WritePointerRewrite(rewrite, sync));
    // The writes this batch lost to are older than it: durable with it.
    rewritten_through_ = std::max(rewritten_through_, db_->last_sequence_.load());
    unsynced_rewrites_ = !sync;
    size_t n = 0;
    for (size_t j = 0; j < kept_index.size(); ++j) {
      if (!kept_replaced[j]) continue;
      (*replaced)[kept_index[j]] = true;
      ++n;
    }
    return n;
  }

  absl::Status LogSegmentEdit(const vlog::SegmentEdit& edit) override {
    const auto has = [&edit](vlog::SegmentEditTag tag) {
      return std::any_of(edit.changes().begin(), edit.changes().end(),
                         [tag](const auto& c) { return c.tag == tag; });
    };
    const absl::Status s = LogOrDeferSegmentEdit(edit);
    if (s.ok() && has(vlog::SegmentEditTag::kMarkObsolete)) {
      ReleaseCopies();  // the victims left the figure (obsolete, or waiting apart)
    } else if (s.ok() && has(vlog::SegmentEditTag::kNewSegment)) {
      ReleaseUnlisted();  // the output is in the set
    }
    return s;
  }

  void Copied(uint64_t bytes) override {
    copied_ += bytes;
    unlisted_ += bytes;
    db_->ledger_.GcCopied(bytes);
  }
  // The current job's copies leave the space figure (its victims are gone
  // from it, or the job ended without that).
  void ReleaseCopies() {
    ReleaseUnlisted();
    db_->ledger_.GcCopiesReleased(std::exchange(copied_, 0));
  }
  void ReleaseUnlisted() {
    db_->ledger_.GcUnlistedReleased(std::exchange(unlisted_, 0));
  }

  // The victims the last job's final edit left unmarked, and the sequence
  // that must be durable before they are marked obsolete.
  std::vector<uint64_t> TakeDeferredVictims(lsm::SequenceNumber* durable_at) {
    *durable_at = deferred_until_;
    return std::exchange(deferred_victims_, {});
  }

  std::vector<vlog::PunchRun> KnownDeadRecords(uint64_t segment_id) override {
    std::vector<vlog::PunchRun> runs;
    for (const vlog::DeadRecords::Record& r : db_->dead_records_.Records(segment_id)) {
      runs.push_back({r.offset, r.offset + r.size});
    }
    return runs;
  }

  std::vector<vlog::PunchRun> PunchedRuns(uint64_t segment_id) override {
    return db_->vlog_->segment_set().PunchedRuns(segment_id);
  }

  uint64_t NewFileNumber() override {
    // The job's output: claimed before the manifest can know it, so that
    // no other job picks it while no pointer names its records yet. Every
    // claim is made under gc_pick_mu_, so none appears while a job picks.
    const uint64_t id = db_->versions_->NewFileNumber();
    absl::MutexLock pick(&db_->gc_pick_mu_);
    absl::MutexLock l(&db_->mu_);
    db_->gc_claimed_.insert(id);
    claimed_outputs_.push_back(id);
    return id;
  }

  // The outputs claimed since the last call, which the caller releases
  // once their jobs have ended.
  std::vector<uint64_t> TakeClaimedOutputs() { return std::exchange(claimed_outputs_, {}); }

  // Every write that made a record of the jobs so far dead (the newest
  // read view a liveness check used), moved one, or that a rewrite lost to
  // is at or below this sequence: once it is synced, no crash brings an old
  // pointer into their victims back.
  lsm::SequenceNumber superseded_through() const {
    return std::max(checked_through_, rewritten_through_);
  }

 private:
  absl::Status LogOrDeferSegmentEdit(const vlog::SegmentEdit& edit) {
    // The next open deletes a segment the manifest marks obsolete. Before
    // the mark, every write that made one of its records dead must be
    // synced: a crash that took such a write would make a table's old
    // pointer into the victim the newest again (docs/gc.md, "When a
    // collected segment may be deleted"). A job that moved records synced
    // its last rewrite, which covers them all; a job whose records all died
    // to newer writes, or whose last batch lost every key, syncs here.
    const bool marks_obsolete =
        std::any_of(edit.changes().begin(), edit.changes().end(), [](const auto& c) {
          return c.tag == vlog::SegmentEditTag::kMarkObsolete;
        });
    if (marks_obsolete && superseded_through() > db_->versions_->LastSequence()) {
      if (defer_victims_) {
        // The victims wait, claimed, until a flush or a sync makes those
        // writes durable (ReleasePendingVictims); the rest is logged now.
        vlog::SegmentEdit rest;
        std::vector<uint64_t> victims;
        for (const vlog::SegmentEdit::Change& c : edit.changes()) {
          switch (c.tag) {
            case vlog::SegmentEditTag::kMarkObsolete: victims.push_back(c.segment_id); break;
            case vlog::SegmentEditTag::kAddGarbage:
              rest.AddGarbage(c.segment_id, c.bytes, c.records);
              break;
            default:
              return absl::InternalError(absl::StrCat(
                  "GC's final edit holds an unexpected change (tag ", static_cast<uint32_t>(c.tag),
                  ") beside its victims"));
          }
        }
        if (!rest.empty()) {
          lsm::VersionEdit ve;
          CAIRN_RETURN_IF_ERROR(db_->LogAndApply(&ve, &rest));
        }
        deferred_victims_ = std::move(victims);
        deferred_until_ = superseded_through();
        return absl::OkStatus();
      }
      CAIRN_RETURN_IF_ERROR(db_->SyncWalInQueue());
    }
    lsm::VersionEdit ve;
    return db_->LogAndApply(&ve, &edit);
  }


  // (*live)[i]: whether keys[i] points at pointers[i] in view. Sorted
  // lookups, as CheckLive explains, and as MultiGet's: the memtables
  // first, then the tables from the block cache alone, then the blocks
  // that missed, read in one batch (DBImpl::LookupBatchInView).
  absl::Status LookUp(const ReadView& view, absl::Span<const std::string_view> keys,
                      absl::Span<const vlog::ValuePointer> pointers, std::vector<bool>* live) {
    live->assign(keys.size(), false);
    std::vector<uint32_t> order(keys.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
    std::vector<ValueType> types(keys.size(), ValueType::kDeletion);
    std::vector<std::string> stored(keys.size());
    std::vector<absl::Status> statuses(keys.size());
    db_->LookupBatchInView(view, keys, order, &types, &stored, &statuses);
    for (uint32_t i : order) {
      CAIRN_RETURN_IF_ERROR(statuses[i]);
      (*live)[i] = IsPointerTo(types[i], stored[i], pointers[i]);
    }
    return absl::OkStatus();
  }

  DBImpl* const db_;
  const bool defer_victims_;
  std::vector<uint64_t> deferred_victims_;
  lsm::SequenceNumber deferred_until_ = 0;
  // The read view of the current job's first liveness check (weak: a
  // flushed memtable is not kept alive for it).
  lsm::SequenceNumber base_sequence_ = 0;
  std::weak_ptr<lsm::MemTable> base_mem_;
  bool new_job_ = true;  // the next liveness check sets the base
  lsm::SequenceNumber checked_through_ = 0;
  lsm::SequenceNumber rewritten_through_ = 0;
  bool unsynced_rewrites_ = false;  // the last rewrite written was not synced
  std::vector<uint64_t> claimed_outputs_;
  uint64_t copied_ = 0, unlisted_ = 0;  // the current job's, in the DB's figure
};

absl::StatusOr<bool> DBImpl::PointsAt(const ReadView& view, std::string_view key,
                                      const vlog::ValuePointer& ptr) {
  ValueType type;
  std::string stored;
  CAIRN_RETURN_IF_ERROR(LookupInView(view, key, &type, &stored));
  return IsPointerTo(type, stored, ptr);
}

bool DBImpl::HoldsMemTable(const SuperVersion& sv, const lsm::MemTable* mem) {
  if (sv.mem.get() == mem) return true;
  for (const auto& imm : sv.imm) {
    if (imm.get() == mem) return true;
  }
  return false;
}

bool DBImpl::StillPointsAt(const ReadView& view, SequenceNumber base_sequence,
                           std::string_view key, const vlog::ValuePointer& ptr,
                           MemTableCursors* cursors) {
  ValueType type;
  SequenceNumber seq = 0;
  std::string stored;
  // No write to the key since the base: it still points where it did.
  if (!LookupInMemtables(view, key, &type, &stored, &seq, cursors) || seq <= base_sequence) {
    return true;
  }
  return IsPointerTo(type, stored, ptr);
}

absl::Status DBImpl::BuildRewriteBatch(const PointerRewrite& rewrite, const ReadView& view,
                                       WriteBatch* batch) {
  // Runs as the write leader, alone in its group: every earlier write is in
  // the memtable, and no later one can slip in before this batch. User
  // writes wait meanwhile, so the memtables alone answer when they hold
  // every write since the base (a flush can complete between the caller's
  // check and this one; then the whole LSM does).
  const bool memtables_answer =
      rewrite.base_mem != nullptr && HoldsMemTable(*view.sv, rewrite.base_mem);
  // A job's keys come in key order: each memtable search starts from the
  // last one.
  MemTableCursors cursors(*view.sv);
  for (size_t i = 0; i < rewrite.keys.size(); ++i) {
    bool still;
    if (memtables_answer) {
      still = StillPointsAt(view, rewrite.base_sequence, rewrite.keys[i], rewrite.old_pointers[i],
                            &cursors);
    } else {
      CAIRN_ASSIGN_OR_RETURN(still, PointsAt(view, rewrite.keys[i], rewrite.old_pointers[i]));
    }
    if (!still) continue;  // a newer Put or a Delete won
    WriteBatchInternal::AddEntry(batch, ValueType::kValuePointer, rewrite.keys[i],
                                 vlog::EncodeValuePointer(rewrite.new_pointers[i]));
    (*rewrite.replaced)[i] = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<GcResult> DBImpl::CollectGarbage(bool manual) {
  // Background jobs run side by side, each on segments it has claimed; a
  // manual run (and a checkpoint's capture) waits for them and holds them
  // off.
  std::optional<absl::MutexLock> exclusive;
  std::optional<absl::ReaderMutexLock> shared;
  if (manual) {
    exclusive.emplace(&gc_mu_);
  } else {
    shared.emplace(&gc_mu_);
  }
  GcResult total;
  const auto start = std::chrono::steady_clock::now();
  CAIRN_RETURN_IF_ERROR(ReleasePendingVictims(VictimRelease::kWhenDurable));
  DeleteObsoleteSegments();
  gc::GcJobOptions jo;
  jo.compress = options_.value_compression == Compression::kZstd;
  jo.compression_level = 1;  // as the write path's (value_log.cc)
  // GC output takes the same append path as fresh values.
  jo.direct_writes = options_.direct_writes;
  jo.note_direct_refused = [this](const std::string& path) { vlog_->NoteDirectRefused(path); };
  jo.writeback_bytes = options_.value_log_bytes_per_sync;
  // Larger batches than the job's default: each shares one read view and
  // one sorted pass over the LSM.
  jo.liveness_batch_size = 1024;
  const gc::VictimPolicy policy = [this] {
    absl::MutexLock l(&mu_);
    return gc_controller_.victim_policy();
  }();
  GcIndex index(this, /*defer_victims=*/!manual);
  bool nothing_left = false;  // no victim worth a job is left
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
      absl::MutexLock l(&mu_);
      if (shutting_down_) break;
      CAIRN_RETURN_IF_ERROR(bg_error_);
      // Each victim's budget from the figure now: once writes are being
      // slowed for space, GC must not sleep.
      const double amp = ledger_.Space(/*with_estimate=*/true).amplification();
      jo.bytes_per_second = gc_controller_.JobBytesPerSecond(amp, manual);
      jobs_allowed = gc_controller_.JobsAllowed(amp, options_.max_background_gc);
      merge_only = !manual && !gc_controller_.collecting();
    }
    std::vector<uint64_t> victim_ids;
    bool seal_active = false;
    bool merge = false;
    {
      absl::MutexLock pick(&gc_pick_mu_);
      gc::PickRequest request;
      request.exclude = done;
      {
        // The claims before the segments: no claim is made while this
        // lock is held, and a job releases a segment only once it is
        // obsolete or safe to collect (its pointers written), so each
        // segment is claimed here or in its safe state in the list read
        // next.
        absl::MutexLock l(&mu_);
        // A background job alongside another only while GC is behind.
        if (!manual && gc_jobs_running_ >= jobs_allowed) break;
        request.exclude.insert(gc_claimed_.begin(), gc_claimed_.end());
      }
      std::vector<vlog::SegmentInfo> segments = vlog_->segment_set().Segments();
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
        victims = policy.Pick(request, manual, [this] {
          return GetValueLogSpace(/*with_estimate=*/true).amplification();
        });
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
        absl::MutexLock l(&mu_);
        for (const gc::VictimCandidate& v : victims) {
          victim_ids.push_back(v.segment_id);
          done.insert(v.segment_id);
          gc_claimed_.insert(v.segment_id);
        }
        ++gc_jobs_running_;
      }
    }
    if (seal_active) {
      sealed_active = true;
      CAIRN_RETURN_IF_ERROR(SealActiveSegmentInQueue());
      gc_counters_.active_seals.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    gc::GcJobResult r;
    absl::Status s = gc::RunGcJob(
        jo, fs_.get(), [this](uint64_t id) { return lsm::ValueLogFileName(dbname_, id); },
        victim_ids, &index, &r);
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
      absl::MutexLock l(&mu_);
      for (uint64_t id : victim_ids) {
        if (!is_deferred(id)) gc_claimed_.erase(id);
      }
      for (uint64_t id : index.TakeClaimedOutputs()) {
        gc_claimed_.erase(id);
        outputs.insert(id);
      }
      if (!deferred.empty()) {
        PendingVictims p{.ids = deferred, .durable_at = durable_at};
        for (uint64_t id : deferred) {
          if (std::optional<vlog::SegmentInfo> info = vlog_->segment_set().Get(id)) {
            // What they take on the device, as SpaceLedger::Space counts.
            p.bytes += info->allocated_bytes();
            p.garbage += std::min(info->size, info->garbage_bytes) -
                         std::min(info->garbage_bytes, info->punched_bytes);
          }
        }
        gc_pending_victims_.push_back(std::move(p));
      }
      --gc_jobs_running_;
      background_cv_.SignalAll();
    }
    if (!s.ok()) {
      absl::MutexLock l(&mu_);
      // A close cut the job short (its rewrite was refused before any
      // write): what it did leaves extra garbage, never a dangling pointer.
      if (!(shutting_down_ && absl::IsAborted(s))) SetBackgroundError(s);
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
      // victims obsolete (GcIndex::LogSegmentEdit). Deferred ones wait.
      std::vector<uint64_t> collected;
      for (uint64_t id : victim_ids) {
        if (!is_deferred(id)) collected.push_back(id);
      }
      absl::MutexLock l(&mu_);
      RetireCollectedLocked(collected);
    }
    total.victims += victim_ids.size();
    if (merge) merged += victim_ids.size();
    total.bytes_read += r.bytes_read;
    total.bytes_relocated += r.bytes_relocated;
    total.records_relocated += r.live_records;
    total.records_dropped += r.records_dropped;
    total.rewrites_lost += r.rewrites_lost;
    gc_counters_.runs.fetch_add(victim_ids.size(), std::memory_order_relaxed);
    gc_counters_.bytes_read.fetch_add(r.bytes_read, std::memory_order_relaxed);
    gc_counters_.bytes_relocated.fetch_add(r.bytes_relocated, std::memory_order_relaxed);
    gc_counters_.records_dropped.fetch_add(r.records_dropped, std::memory_order_relaxed);
    gc_counters_.records_known_dead.fetch_add(r.records_known_dead, std::memory_order_relaxed);
    gc_counters_.scan_micros.fetch_add(r.scan_micros, std::memory_order_relaxed);
    gc_counters_.liveness_micros.fetch_add(r.liveness_micros, std::memory_order_relaxed);
    gc_counters_.write_micros.fetch_add(r.write_micros, std::memory_order_relaxed);
    gc_counters_.rewrite_micros.fetch_add(r.rewrite_micros, std::memory_order_relaxed);
    gc_counters_.throttled_micros.fetch_add(r.throttled_micros, std::memory_order_relaxed);
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
      absl::MutexLock l(&mu_);
      const uint64_t waiting = PendingVictimTotals().bytes;
      if (manual) {
        how = VictimRelease::kNow;
      } else if (nothing_left || waiting > 2 * options_.value_log_segment_size ||
                 WalSyncIsCheapFor(waiting)) {
        how = VictimRelease::kSoon;
      }
    }
    CAIRN_RETURN_IF_ERROR(ReleasePendingVictims(how));
  }
  const uint64_t freed_before = gc_counters_.segments_freed.load();
  DeleteObsoleteSegments();
  total.segments_freed = gc_counters_.segments_freed.load() - freed_before;
  total.micros = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  gc_counters_.micros.fetch_add(total.micros, std::memory_order_relaxed);
  if (total.victims > 0) {
    info_log_->Log(
        "gc: %d segments collected (%d of them small ones merged), %d bytes read, %d bytes (%d "
        "records) relocated, %d garbage records dropped, %d rewrites lost to newer writes, %d "
        "segments freed, in %d us",
        total.victims, merged, total.bytes_read, total.bytes_relocated, total.records_relocated,
        total.records_dropped, total.rewrites_lost, total.segments_freed, total.micros);
    NotifyListeners([&](EventListener& l) { l.OnGcCompleted(total); });
  }
  return total;
}

absl::StatusOr<GcResult> DBImpl::RunGC() {
  CAIRN_RETURN_IF_ERROR(CheckWritable("RunGC"));
  const uint64_t freed_before = gc_counters_.segments_freed.load();
  CAIRN_ASSIGN_OR_RETURN(GcResult r, CollectGarbage(/*manual=*/true));
  PunchReadyRuns(/*wait=*/true);
  deleter_->WaitIdle();  // the victims' files are gone on return
  {
    // A failure deleting the victims (the manifest write) stops the DB.
    absl::MutexLock l(&mu_);
    if (!bg_error_.ok()) return bg_error_;
  }
  r.segments_freed = gc_counters_.segments_freed.load() - freed_before;
  return r;
}

absl::Status DBImpl::CountUnaccountedGarbage() {
  if (vlog_->segment_set().size() == 0) return absl::OkStatus();
  // Every pointer of every version in the LSM: at open the memtables are
  // empty (replay went to L0), so the tables hold every reference.
  vlog::SegmentAccounting accounting;
  const std::shared_ptr<const lsm::Version> v = versions_->current();
  const lsm::TableReadOptions ro{.verify_checksums = true, .fill_cache = false};
  for (int level = 0; level < lsm::kNumLevels; ++level) {
    for (const auto& f : v->files(level)) {
      std::unique_ptr<lsm::InternalIterator> it =
          table_cache_->NewIterator(ro, f->number, f->file_size);
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        lsm::ParsedInternalKey p;
        if (!lsm::ParseInternalKey(it->key(), &p) || p.type != ValueType::kValuePointer) continue;
        absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(it->value());
        if (!ptr.ok()) {
          return absl::DataLossError(absl::StrCat(lsm::TableFileName(dbname_, f->number),
                                                  ": undecodable value pointer: ",
                                                  ptr.status().message()));
        }
        accounting.AddReference(*ptr);
      }
      CAIRN_RETURN_IF_ERROR(it->status());
    }
  }
  const vlog::SegmentEdit edit = vlog::SegmentAccounting::LeakEdit(
      accounting.Check(vlog_->segment_set(), vlog_->ActiveSizes()));
  if (edit.empty()) return absl::OkStatus();
  for (const vlog::SegmentEdit::Change& c : edit.changes()) {
    gc_counters_.leaked_bytes_recounted.fetch_add(c.bytes, std::memory_order_relaxed);
  }
  lsm::VersionEdit ve;
  return LogAndApply(&ve, &edit);
}

bool DBImpl::GcCanCollect() {
  // A round that found nothing was right about the garbage counted before
  // it began; any counted since may be collectable.
  return gc_can_collect_ || garbage_reports_.load(std::memory_order_acquire) != gc_idle_reports_;
}

bool DBImpl::ActiveSegmentWorthSealing(const gc::VictimPolicy& policy, bool manual) {
  const std::optional<std::pair<uint64_t, uint64_t>> active = vlog_->ActiveSegment();
  if (!active.has_value()) return false;
  const auto [id, bytes] = *active;
  const std::optional<vlog::SegmentInfo> info = vlog_->segment_set().Get(id);
  if (!info.has_value() || info->sealed || info->obsolete) return false;
  const uint64_t garbage = info->garbage_bytes + foreseen_.Bytes(id);
  return policy.ShouldSealActive(bytes, std::min(bytes, garbage), manual, [this] {
    return GetValueLogSpace(/*with_estimate=*/true).amplification();
  });
}

bool DBImpl::MemTableHidesGarbage() {
  absl::MutexLock l(&mu_);
  return ledger_.MemTableGarbageEstimate() >= kMinGarbageFlushBytes;
}

bool DBImpl::GcJobsRunning() {
  absl::MutexLock l(&mu_);
  return gc_jobs_running_ > 0;
}

// The mechanism behind each step of gc::RunGcLoop, GC's schedule.
class DBImpl::GcHostImpl final : public gc::GcHost {
 public:
  explicit GcHostImpl(DBImpl* db) : db_(db) {}

  bool WaitUntilRunnable() override {
    absl::MutexLock l(&db_->mu_);
    while (!db_->shutting_down_ && !db_->bg_error_.ok()) db_->background_cv_.Wait(&db_->mu_);
    return !db_->shutting_down_;
  }
  bool ShouldCollect() override {
    // Hysteresis (gc::GcController): GC starts once space amplification
    // passes the trigger and keeps going until it is back under a lower
    // mark, so that it does not hover at the trigger and leave the value
    // log above it whenever writes pause.
    bool collect;
    {
      absl::MutexLock l(&db_->mu_);
      collect = db_->gc_controller_.ShouldCollect(
          db_->ledger_.Space(/*with_estimate=*/true).amplification());
      // Meanwhile, and for kAsWrittenAfterGc after, writes send every
      // separated value to the value log: under sustained overwrites GC
      // pauses between its stop mark and the trigger for about a second at
      // a time, and values sent to the WAL then would keep the next jobs'
      // victims waiting for a flush.
      const auto now = std::chrono::steady_clock::now();
      if (collect) last_collect_ = now;
      db_->values_as_written_.store(collect || (last_collect_.has_value() &&
                                                now - *last_collect_ < kAsWrittenAfterGc),
                                    std::memory_order_relaxed);
    }
    // Below the trigger a round still merges small segments, and only that
    // (CollectGarbage reads the controller too): a round that collects
    // nothing then is no sign of GC falling behind, and flushes nothing.
    merge_only_ = !collect && SmallSegmentsToMerge();
    return collect || merge_only_;
  }
  uint64_t GarbageReports() override {
    return db_->garbage_reports_.load(std::memory_order_acquire);
  }
  absl::StatusOr<uint64_t> CollectOne() override {
    // Errors are sticky in bg_error_ (set by CollectGarbage).
    absl::StatusOr<GcResult> r = db_->CollectGarbage(/*manual=*/false);
    if (!r.ok()) return r.status();
    db_->PunchReadyRuns();
    return r->victims;
  }
  void DeleteObsoleteSegments() override {
    // Below the trigger GC is idle: victims still waiting for durability
    // get it now, from a flush or a sync (an error is sticky in bg_error_).
    db_->ReleasePendingVictims(DBImpl::VictimRelease::kSoon).IgnoreError();
    db_->DeleteObsoleteSegments();
    db_->PunchReadyRuns();
  }
  bool MemTableHidesGarbage() override { return !merge_only_ && db_->MemTableHidesGarbage(); }
  bool OtherJobsRunning() override { return db_->GcJobsRunning(); }
  void Flush() override {
    db_->Flush().IgnoreError();  // an error is sticky in bg_error_, or the close
  }
  void EndRound(bool can_collect, uint64_t idle_reports, absl::Duration wait) override {
    // A merge's round is one below the trigger: nothing holds writes back.
    if (merge_only_) can_collect = true;
    absl::MutexLock l(&db_->mu_);
    // Writers delayed for space, and WaitForBackgroundWork, read this
    // through GcCanCollect, which also sees garbage counted since the
    // round began (by a flush in it, or any flush or compaction).
    db_->gc_can_collect_ = can_collect;
    db_->gc_idle_reports_ = idle_reports;
    db_->background_cv_.SignalAll();
    // A close that signalled while mu_ was released must not wait out the
    // timeout.
    if (wait > absl::ZeroDuration() && !db_->shutting_down_) {
      db_->background_cv_.WaitWithTimeout(&db_->mu_, wait);
    }
  }

 private:
  // Whether there are gc::kMinSmallSegmentsToMerge small segments no job
  // holds. The segment list is read again only once segments or claims have
  // come or gone since it last said no: a round below the trigger comes at
  // each flush and compaction, and the list holds every segment.
  bool SmallSegmentsToMerge() {
    const vlog::SegmentSet::Totals totals = db_->vlog_->segment_set().GetTotals();
    gc::PickRequest request;
    {
      absl::MutexLock l(&db_->mu_);
      if (!db_->gc_controller_.enabled()) return false;  // no background GC at all
      request.exclude.insert(db_->gc_claimed_.begin(), db_->gc_claimed_.end());
    }
    const std::array<uint64_t, 4> seen = {totals.segments, totals.sealed_segments,
                                          totals.obsolete_segments, request.exclude.size()};
    if (seen == nothing_to_merge_at_) return false;
    const std::vector<vlog::SegmentInfo> segments = db_->vlog_->segment_set().Segments();
    request.segments = segments;
    if (!gc::VictimPicker::PickSmall(request, db_->options_.value_log_segment_size).empty()) {
      return true;
    }
    nothing_to_merge_at_ = seen;
    return false;
  }

  DBImpl* const db_;
  // When ShouldCollect last said yes (GC thread only).
  std::optional<std::chrono::steady_clock::time_point> last_collect_;
  // The last ShouldCollect said yes only to merge small segments.
  bool merge_only_ = false;
  // The figures SmallSegmentsToMerge last found nothing at.
  std::array<uint64_t, 4> nothing_to_merge_at_ = {~uint64_t{0}};
};

void DBImpl::GcThread() {
  GcHostImpl host(this);
  gc::RunGcLoop(&host);
}

}  // namespace cairn
