// GcCoordinator::JobIndex is the collector's narrow view of the LSM for one
// pass of GcCoordinator::Collect (gc::IndexView): liveness checks through
// the DB's read views, pointer rewrites through its write queue, the job's
// manifest edits (deferring a background job's victims until their
// superseding writes are durable), its output's claim, and its copies in
// the space ledger. Private to the coordinator's files.
//
// Thread safety: one GC thread uses an index at a time.
#ifndef CAIRN_CORE_GC_JOB_INDEX_H_
#define CAIRN_CORE_GC_JOB_INDEX_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "core/gc_coordinator.h"
#include "gc/index_view.h"

namespace cairn {

class GcCoordinator::JobIndex final : public gc::IndexView {
 public:
  // defer_victims: a background job's final edit leaves its victims to
  // ReleasePendingVictims when their superseding writes are not durable
  // yet, instead of syncing the WAL for them.
  JobIndex(GcCoordinator* gc, bool defer_victims) : gc_(gc), defer_victims_(defer_victims) {}

  absl::Status CheckLive(absl::Span<const std::string_view> keys,
                         absl::Span<const vlog::ValuePointer> pointers,
                         std::vector<bool>* live) override;
  absl::StatusOr<size_t> RewritePointers(absl::Span<const std::string_view> keys,
                                         absl::Span<const vlog::ValuePointer> old_pointers,
                                         absl::Span<const vlog::ValuePointer> new_pointers,
                                         std::vector<bool>* replaced, bool sync) override;
  absl::Status LogSegmentEdit(const vlog::SegmentEdit& edit) override;
  void Copied(uint64_t bytes) override;
  std::vector<vlog::PunchRun> KnownDeadRecords(uint64_t segment_id) override;
  std::vector<vlog::PunchRun> PunchedRuns(uint64_t segment_id) override;
  uint64_t NewFileNumber() override;

  // The current job's copies leave the space figure (its victims are gone
  // from it, or the job ended without that).
  void ReleaseCopies();
  void ReleaseUnlisted();
  // The victims the last job's final edit left unmarked, and the sequence
  // that must be durable before they are marked obsolete.
  std::vector<uint64_t> TakeDeferredVictims(lsm::SequenceNumber* durable_at) {
    *durable_at = deferred_until_;
    return std::exchange(deferred_victims_, {});
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
  absl::Status LogOrDeferSegmentEdit(const vlog::SegmentEdit& edit);

  GcCoordinator* const gc_;
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

}  // namespace cairn

#endif  // CAIRN_CORE_GC_JOB_INDEX_H_
