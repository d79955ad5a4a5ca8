// A GC job's view of the LSM: liveness checks, pointer rewrites and the
// job's manifest edits (core/gc_job_index.h). The protocol: docs/gc.md.
#include "core/gc_job_index.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/status_macros.h"
#include "lsm/version_edit.h"

namespace cairn {

absl::Status GcCoordinator::JobIndex::CheckLive(absl::Span<const std::string_view> keys,
                                                absl::Span<const vlog::ValuePointer> pointers,
                                                std::vector<bool>* live) {
  // One read view for the batch, and the keys looked up in key order, as
  // MultiGet does: neighbouring lookups share index and data blocks in
  // the block cache (a victim's records are in write order, which under
  // random overwrites is no order at all).
  GcReadBase view;
  bool looked = false;
  const absl::Status s =
      gc_->db_->CheckPointers(keys, pointers, /*unless_holding=*/nullptr, live, &view, &looked);
  checked_through_ = std::max(checked_through_, view.sequence);
  if (new_job_) {
    // A job's first check (its rewrites come after all of them): every
    // record of the job is seen live at or after this base.
    base_sequence_ = view.sequence;
    base_mem_ = view.mem;
    new_job_ = false;
  }
  return s;
}

absl::StatusOr<size_t> GcCoordinator::JobIndex::RewritePointers(
    absl::Span<const std::string_view> keys, absl::Span<const vlog::ValuePointer> old_pointers,
    absl::Span<const vlog::ValuePointer> new_pointers, std::vector<bool>* replaced, bool sync) {
  new_job_ = true;  // the job's checks are over; the next one starts a job
  replaced->assign(keys.size(), false);
  // A job whose victims wait for durability needs no synced rewrite: a
  // flush or a later sync makes its rewrites durable before the victims
  // are marked obsolete (ReleasePendingVictims).
  if (defer_victims_) sync = false;
  gc_->db_->BeforeRewriteForTesting();
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
    std::vector<bool> live(keys.size(), true);
    GcReadBase now;
    bool looked = false;
    CAIRN_RETURN_IF_ERROR(
        gc_->db_->CheckPointers(keys, old_pointers, base_mem.get(), &live, &now, &looked));
    if (looked) {
      base_sequence = now.sequence;
      base_mem = now.mem;
      checked_through_ = std::max(checked_through_, now.sequence);
      gc_->counters_.rewrite_rechecks.fetch_add(keys.size(), std::memory_order_relaxed);
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
  GcPointerRewrite rewrite{kept_keys,      kept_old,      kept_new,
                           &kept_replaced, base_sequence, base_mem.get()};
  kept_replaced.assign(kept_keys.size(), false);
  CAIRN_RETURN_IF_ERROR(gc_->db_->WritePointerRewrite(rewrite, sync));
  // The writes this batch lost to are older than it: durable with it.
  rewritten_through_ = std::max(rewritten_through_, gc_->db_->LastSequence());
  unsynced_rewrites_ = !sync;
  size_t n = 0;
  for (size_t j = 0; j < kept_index.size(); ++j) {
    if (!kept_replaced[j]) continue;
    (*replaced)[kept_index[j]] = true;
    ++n;
  }
  return n;
}

absl::Status GcCoordinator::JobIndex::LogSegmentEdit(const vlog::SegmentEdit& edit) {
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

void GcCoordinator::JobIndex::Copied(uint64_t bytes) {
  copied_ += bytes;
  unlisted_ += bytes;
  gc_->ledger_->GcCopied(bytes);
}

void GcCoordinator::JobIndex::ReleaseCopies() {
  ReleaseUnlisted();
  gc_->ledger_->GcCopiesReleased(std::exchange(copied_, 0));
}

void GcCoordinator::JobIndex::ReleaseUnlisted() {
  gc_->ledger_->GcUnlistedReleased(std::exchange(unlisted_, 0));
}

std::vector<vlog::PunchRun> GcCoordinator::JobIndex::KnownDeadRecords(uint64_t segment_id) {
  std::vector<vlog::PunchRun> runs;
  for (const vlog::DeadRecords::Record& r : gc_->dead_records_.Records(segment_id)) {
    runs.push_back({r.offset, r.offset + r.size});
  }
  return runs;
}

std::vector<vlog::PunchRun> GcCoordinator::JobIndex::PunchedRuns(uint64_t segment_id) {
  return gc_->db_->value_log().segment_set().PunchedRuns(segment_id);
}

uint64_t GcCoordinator::JobIndex::NewFileNumber() {
  // The job's output: claimed before the manifest can know it, so that
  // no other job picks it while no pointer names its records yet. Every
  // claim is made under pick_mu_, so none appears while a job picks.
  const uint64_t id = gc_->db_->NewFileNumber();
  absl::MutexLock pick(&gc_->pick_mu_);
  absl::MutexLock l(gc_->db_mu_);
  gc_->claimed_.insert(id);
  claimed_outputs_.push_back(id);
  return id;
}

absl::Status GcCoordinator::JobIndex::LogOrDeferSegmentEdit(const vlog::SegmentEdit& edit) {
  // The next open deletes a segment the manifest marks obsolete. Before
  // the mark, every write that made one of its records dead must be
  // synced: a crash that took such a write would make a table's old
  // pointer into the victim the newest again (docs/gc.md, "When a
  // collected segment may be deleted"). A job that moved records synced
  // its last rewrite, which covers them all; a job whose records all died
  // to newer writes, or whose last batch lost every key, syncs here.
  const bool marks_obsolete =
      std::any_of(edit.changes().begin(), edit.changes().end(),
                  [](const auto& c) { return c.tag == vlog::SegmentEditTag::kMarkObsolete; });
  if (marks_obsolete && superseded_through() > gc_->db_->DurableSequence()) {
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
            return absl::InternalError(
                absl::StrCat("GC's final edit holds an unexpected change (tag ",
                             static_cast<uint32_t>(c.tag), ") beside its victims"));
        }
      }
      if (!rest.empty()) CAIRN_RETURN_IF_ERROR(gc_->db_->LogAndApply(rest));
      deferred_victims_ = std::move(victims);
      deferred_until_ = superseded_through();
      return absl::OkStatus();
    }
    CAIRN_RETURN_IF_ERROR(gc_->db_->SyncWal());
  }
  return gc_->db_->LogAndApply(edit);
}

}  // namespace cairn
