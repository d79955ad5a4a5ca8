// FdBudget counts the file descriptors a DB's caches of open files hold (its
// tables and value-log segment readers) against one limit, so that together
// they stay within the process's open-file limit however many of them reads
// hold at once (docs/decisions/20261207_fd_budget.md).
//
// Each open file holds one unit from Acquire until Release (Attach ties the
// Release to the last owner of the opened object letting go), so files in
// use past a cache's own bound are counted too. A cache registers a
// reclaimer that closes one of its idle files (one no user holds); when the
// budget is spent, Acquire closes idle files through the reclaimers first,
// then waits up to max_wait for one to come free, then fails with
// ResourceExhausted naming the limit (IsFdShortage).
//
// Thread safety: every method may be called from any thread. A reclaimer
// runs on the thread that calls Acquire, with none of the budget's locks
// held but the registry's reader lock: it must not call AddReclaimer or
// RemoveReclaimer.
#ifndef CAIRN_IO_FD_BUDGET_H_
#define CAIRN_IO_FD_BUDGET_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cairn::io {

class FdBudget {
 public:
  // Closes one idle file and returns true, or returns false when it holds
  // none idle.
  using Reclaimer = std::function<bool()>;

  // limit below 1 counts as 1.
  explicit FdBudget(size_t limit, absl::Duration max_wait = absl::Milliseconds(100));

  FdBudget(const FdBudget&) = delete;
  FdBudget& operator=(const FdBudget&) = delete;

  // Registers a reclaimer; the id removes it. RemoveReclaimer waits for a
  // call of it in progress, so the reclaimer's owner may go after it.
  uint64_t AddReclaimer(Reclaimer reclaimer);
  void RemoveReclaimer(uint64_t id);

  // Takes one unit, leaving keep_free units for others (a caller whose
  // files matter less leaves room for those that matter more). When none is
  // free, closes idle files through the reclaimers; when none is idle, waits
  // up to max_wait if wait is true. Errors: ResourceExhausted (IsFdShortage).
  absl::Status Acquire(bool wait, size_t keep_free = 0);
  // Gives one unit back.
  void Release();

  // Closes every idle file the reclaimers hold; returns how many.
  size_t CloseIdle();

  // obj as a shared_ptr that Releases one unit when its last owner lets go.
  // REQUIRES: one unit Acquired for obj (and not Released).
  template <typename T>
  static std::shared_ptr<T> Attach(const std::shared_ptr<FdBudget>& budget,
                                   std::unique_ptr<T> obj) {
    return std::shared_ptr<T>(obj.release(), [budget](T* p) {
      delete p;
      budget->Release();
    });
  }

  size_t limit() const { return limit_; }
  size_t in_use() const;
  // Acquires that failed (the budget spent, nothing idle, no unit freed).
  uint64_t shortages() const;

 private:
  bool ReclaimOne();
  bool HasRoom(size_t keep_free) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return in_use_ + keep_free < limit_;
  }

  const size_t limit_;
  const absl::Duration max_wait_;
  mutable absl::Mutex mu_;
  size_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t shortages_ ABSL_GUARDED_BY(mu_) = 0;

  absl::Mutex reclaim_mu_;
  struct Registered {
    uint64_t id;
    Reclaimer reclaimer;
  };
  std::vector<Registered> reclaimers_ ABSL_GUARDED_BY(reclaim_mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(reclaim_mu_) = 1;
};

// Whether s says a file could not be opened for want of descriptors: the
// budget's ResourceExhausted, or the system's EMFILE or ENFILE. Such an
// error passes once files close, unlike ENOSPC's ResourceExhausted.
bool IsFdShortage(const absl::Status& s);

}  // namespace cairn::io

#endif  // CAIRN_IO_FD_BUDGET_H_
