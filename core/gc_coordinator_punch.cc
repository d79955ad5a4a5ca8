// GcCoordinator's punched runs (core/gc_coordinator.h): freeing the blocks
// of dead records without a copy (docs/gc.md, "Punched runs"; the planning
// rules are vlog/punch_plan.h's), and the list of records known dead they
// are planned from.
//
// A run is safe to punch once three things hold:
//   - every record in it was counted as garbage by a flush or compaction
//     whose edit is applied (DeadRecords lists only those), so no key's
//     current version, nor any snapshot's, names it, and no crash can
//     bring a pointer to it back (the edit is durable, and the writes
//     that superseded its records are in that edit's tables);
//   - no reader from before that count remains: a read view that took its
//     pointers earlier holds the read epoch that was current then, and the
//     run waits for that epoch to end, as a collected segment does;
//   - the manifest lists the run before its blocks go, so that every scan
//     of the segment (GC, `cairn check`) steps over it, also after a crash.
// A segment a GC job holds is left alone (the job's scan read its runs when
// it began), and so is a file with a second name: a checkpoint's hard link
// shares its blocks, and the checkpoint's records may still be live. While
// a read-only DB holds its share of LOCK (in any process), nothing is
// punched: its view may be older than the counts.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "core/file_deleter.h"
#include "core/gc_coordinator.h"
#include "core/info_log.h"
#include "lsm/filename.h"
#include "vlog/punch_plan.h"

namespace cairn {

namespace {

// A segment's runs are planned again once its counted garbage grew by this
// share of its size since the last plan (at least 16 KiB): often enough to
// free its blocks soon after they die, seldom enough that planning (a sort
// of its dead records) costs little.
constexpr uint64_t kPlanStepDivisor = 8;
constexpr uint64_t kMinPlanStep = uint64_t{16} << 10;
// A run is punched only where it frees at least this much: one
// fallocate(PUNCH_HOLE) costs about 60 us on ext4 here whatever it frees
// (docs/decisions/20261205_punched_runs.md), while GC frees a 4 KiB block
// for about 5 us of copying at the garbage shares it collects at. Runs of
// 16 blocks or more pay for themselves; shorter ones, the most of them
// under uniform random overwrites, are left to GC.
constexpr uint64_t kMinPunchGain = uint64_t{64} << 10;

}  // namespace

void GcCoordinator::DeadRecordsCounted(vlog::DeadRecords::Batch dead) {
  // Only segments still to be collected: an old pointer a compaction drops
  // may name a segment GC collected and deleted long ago.
  const vlog::SegmentSet& set = db_->value_log().segment_set();
  const auto wanted = [&set](uint64_t id) {
    const std::optional<vlog::SegmentInfo> info = set.Get(id);
    return info.has_value() && !info->obsolete;
  };
  absl::erase_if(dead, [&](const auto& entry) { return !wanted(entry.first); });
  foreseen_.Counted(dead);  // counted now: no longer foreseen
  dead_records_.Add(dead);
  // A segment deleted between the check above and the add stays listed:
  // sweep such leftovers whenever the list passes half its bound.
  if (dead_records_.size() > kDeadRecordsBound / 2) dead_records_.ForgetAllBut(wanted);
  if (foreseen_.size() > foreseen_.max_records() / 2) foreseen_.ForgetAllBut(wanted);
  PlanPunches(dead);
}

void GcCoordinator::PlanPunches(const vlog::DeadRecords::Batch& dead) {
  if (!options_.gc_punch_holes || punch_unsupported_.load(std::memory_order_relaxed)) return;
  // A WAL kept for the change feed may point to a dead record (the feed
  // reads the values of old writes): nothing is punched while WALs are
  // kept (docs/decisions/20261208_change_feed.md).
  if (options_.wal_ttl_seconds > 0 || options_.wal_size_limit_bytes > 0) return;
  const vlog::SegmentSet& set = db_->value_log().segment_set();
  std::vector<PendingPunch> planned;
  for (const auto& [id, records] : dead) {
    const std::optional<vlog::SegmentInfo> info = set.Get(id);
    if (!info.has_value() || !info->sealed || info->obsolete) continue;
    std::vector<vlog::PunchRun> pending;
    {
      absl::MutexLock l(db_mu_);
      uint64_t& last = punch_planned_garbage_[id];
      const uint64_t step = std::max(kMinPlanStep, info->size / kPlanStepDivisor);
      if (info->garbage_bytes < last + step) continue;
      last = info->garbage_bytes;
      for (const PendingPunch& p : punch_pending_) {
        if (p.segment_id == id) pending.insert(pending.end(), p.runs.begin(), p.runs.end());
      }
    }
    // What is punched or about to be, as one ascending merged list.
    std::vector<vlog::PunchRun> covered = set.PunchedRuns(id);
    covered.insert(covered.end(), pending.begin(), pending.end());
    // A run can gain at most its own span and the two blocks it shares with
    // punched runs beside it: shorter ones are not worth a look.
    std::vector<vlog::PunchRun> runs =
        vlog::PlanPunchRuns(dead_records_.Runs(id, kMinPunchGain - 2 * vlog::kPunchBlockSize),
                            vlog::MergedRuns(std::move(covered)), kMinPunchGain);
    if (!runs.empty()) planned.push_back({.segment_id = id, .runs = std::move(runs)});
  }
  if (planned.empty()) return;
  absl::MutexLock l(db_mu_);
  // Readers from before the counts hold this epoch or an earlier one; the
  // runs wait until they are all gone. A new epoch starts for later ones.
  const std::weak_ptr<const void> ended = retention_.EndEpoch();
  for (PendingPunch& p : planned) {
    p.epoch = ended;
    punch_pending_.push_back(std::move(p));
  }
  db_->InstallSuperVersionLocked();
}

void GcCoordinator::PunchReadyRuns(bool wait) {
  if (wait) {
    punch_mu_.Lock();
  } else if (!punch_mu_.TryLock()) {
    return;  // another call, or a checkpoint linking files
  }
  absl::Cleanup unlock = [this] { punch_mu_.Unlock(); };
  std::vector<PendingPunch> ready;
  {
    absl::MutexLock pick(&pick_mu_);
    absl::MutexLock l(db_mu_);
    const vlog::SegmentSet& set = db_->value_log().segment_set();
    std::vector<PendingPunch> waiting;
    for (PendingPunch& p : punch_pending_) {
      if (!p.epoch.expired()) {
        waiting.push_back(std::move(p));
      } else if (!claimed_.contains(p.segment_id) && set.Contains(p.segment_id)) {
        ready.push_back(std::move(p));
      }
      // else a job collects the segment, or it is gone: nothing to punch.
    }
    punch_pending_ = std::move(waiting);
    for (const PendingPunch& p : ready) claimed_.insert(p.segment_id);
    absl::erase_if(punch_planned_garbage_,
                   [&set](const auto& entry) { return !set.Contains(entry.first); });
  }
  if (ready.empty()) {
    return;
  }
  // A read-only DB, in this process or another, may read records this one
  // has since counted dead: nothing is punched while one is open. The runs
  // wait for the next round.
  const absl::StatusOr<bool> readers = fs_->LockFileHasReaders(lsm::LockFileName(dbname_));
  if (!readers.ok() || *readers) {
    counters_.punch_held_for_readers.fetch_add(1, std::memory_order_relaxed);
    absl::MutexLock l(db_mu_);
    for (PendingPunch& p : ready) {
      claimed_.erase(p.segment_id);
      punch_pending_.push_back(std::move(p));
    }
    db_cv_->SignalAll();
    return;
  }
  // One entry per segment, its runs ascending.
  std::sort(ready.begin(), ready.end(), [](const PendingPunch& a, const PendingPunch& b) {
    return a.segment_id < b.segment_id;
  });
  std::vector<std::pair<uint64_t, std::vector<vlog::PunchRun>>> work;
  for (const PendingPunch& p : ready) {
    if (work.empty() || work.back().first != p.segment_id) work.push_back({p.segment_id, {}});
    work.back().second.insert(work.back().second.end(), p.runs.begin(), p.runs.end());
  }
  const vlog::SegmentSet& set = db_->value_log().segment_set();
  vlog::SegmentEdit edit;
  std::vector<std::pair<uint64_t, std::vector<vlog::PunchRun>>> logged;
  for (auto& [id, runs] : work) {
    const std::optional<vlog::SegmentInfo> info = set.Get(id);
    if (!info.has_value() || info->obsolete || !info->sealed) continue;
    absl::StatusOr<io::FileSystem::FileSpace> space =
        fs_->GetFileSpace(lsm::ValueLogFileName(dbname_, id));
    if (!space.ok()) continue;  // its scan or deletion reports what is wrong
    if (space->links > 1) {
      counters_.punch_skipped_linked.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    // Runs planned apart may overlap; and what is punched already is left
    // out, so the edit adds only new bytes.
    std::vector<vlog::PunchRun> added =
        vlog::SubtractRuns(vlog::MergedRuns(std::move(runs)), set.PunchedRuns(id));
    added.erase(std::remove_if(added.begin(), added.end(),
                               [&](const vlog::PunchRun& r) {
                                 return r.begin < vlog::kSegmentHeaderSize || r.end > info->size;
                               }),
                added.end());
    if (added.empty()) continue;
    edit.PunchRuns(id, added);
    logged.emplace_back(id, std::move(added));
  }
  absl::Status s;
  if (!edit.empty()) {
    s = db_->LogAndApply(edit);
  }
  if (s.ok()) {
    for (const auto& [id, added] : logged) {
      counters_.punch_runs.fetch_add(added.size(), std::memory_order_relaxed);
      const std::vector<std::pair<uint64_t, uint64_t>> ranges =
          vlog::PunchRanges(set.PunchedRuns(id), added);
      if (ranges.empty()) continue;
      const std::string path = lsm::ValueLogFileName(dbname_, id);
      const absl::Status punched = fs_->PunchHoles(path, ranges);
      if (punched.ok()) {
        counters_.punch_calls.fetch_add(ranges.size(), std::memory_order_relaxed);
        uint64_t bytes = 0;
        for (const auto& [offset, length] : ranges) bytes += length;
        counters_.punch_bytes.fetch_add(bytes, std::memory_order_relaxed);
        continue;
      }
      // The runs stay listed: their records are dead either way, and a
      // scan steps over them whether or not their blocks went.
      if (absl::IsUnimplemented(punched)) {
        punch_unsupported_.store(true, std::memory_order_relaxed);
        db_->info_log().Log("gc: punching holes is off: %s", punched.ToString());
        break;
      }
      db_->info_log().Log("gc: punching holes in %s failed (the space stays taken): %s", path,
                          punched.ToString());
    }
  }
  {
    absl::MutexLock l(db_mu_);
    for (const auto& [id, runs] : work) claimed_.erase(id);
    // The manifest may or may not hold the runs; the blocks are untouched.
    if (!s.ok()) db_->SetBackgroundErrorLocked(s);
    db_cv_->SignalAll();
  }
}

}  // namespace cairn
