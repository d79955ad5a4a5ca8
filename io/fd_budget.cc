#include "io/fd_budget.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"

namespace cairn::io {
namespace {

// Marks the budget's own ResourceExhausted, which IsFdShortage recognizes
// without reading the message.
constexpr char kShortagePayload[] = "cairn.io.FdBudget";

// How often a waiting Acquire looks for idle files again: a user that lets
// go of a file makes it idle without a Release to wake the wait.
constexpr absl::Duration kPollInterval = absl::Milliseconds(1);

}  // namespace

FdBudget::FdBudget(size_t limit, absl::Duration max_wait)
    : limit_(std::max<size_t>(limit, 1)), max_wait_(max_wait) {}

uint64_t FdBudget::AddReclaimer(Reclaimer reclaimer) {
  absl::MutexLock l(&reclaim_mu_);
  const uint64_t id = next_id_++;
  reclaimers_.push_back({id, std::move(reclaimer)});
  return id;
}

void FdBudget::RemoveReclaimer(uint64_t id) {
  absl::MutexLock l(&reclaim_mu_);
  std::erase_if(reclaimers_, [id](const Registered& r) { return r.id == id; });
}

bool FdBudget::ReclaimOne() {
  absl::ReaderMutexLock l(&reclaim_mu_);
  for (const Registered& r : reclaimers_) {
    if (r.reclaimer()) return true;
  }
  return false;
}

absl::Status FdBudget::Acquire(bool wait, size_t keep_free) {
  const absl::Time deadline = wait ? absl::Now() + max_wait_ : absl::InfinitePast();
  while (true) {
    {
      absl::MutexLock l(&mu_);
      if (HasRoom(keep_free)) {
        ++in_use_;
        return absl::OkStatus();
      }
    }
    // An idle file's close Releases its unit before the reclaimer returns.
    if (ReclaimOne()) continue;
    absl::MutexLock l(&mu_);
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      ++shortages_;
      absl::Status s = absl::ResourceExhaustedError(absl::StrFormat(
          "too many open files: %d of the %d descriptors for open tables and value-log segments "
          "(half the open-file limit, RLIMIT_NOFILE) are in use by reads, none idle",
          in_use_, limit_));
      s.SetPayload(kShortagePayload, absl::Cord("1"));
      return s;
    }
    struct Args {
      const FdBudget* budget;
      size_t keep_free;
    } args{this, keep_free};
    mu_.AwaitWithDeadline(absl::Condition(
                              +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                return a->budget->HasRoom(a->keep_free);
                              },
                              &args),
                          std::min(deadline, now + kPollInterval));
  }
}

void FdBudget::Release() {
  absl::MutexLock l(&mu_);
  if (in_use_ > 0) --in_use_;
}

size_t FdBudget::CloseIdle() {
  size_t closed = 0;
  while (ReclaimOne()) ++closed;
  return closed;
}

size_t FdBudget::in_use() const {
  absl::MutexLock l(&mu_);
  return in_use_;
}

uint64_t FdBudget::shortages() const {
  absl::MutexLock l(&mu_);
  return shortages_;
}

bool IsFdShortage(const absl::Status& s) {
  if (!absl::IsResourceExhausted(s)) return false;
  // EMFILE and ENFILE, as absl::ErrnoToStatus words them ("Too many open
  // files", "... in system"); ENOSPC's ResourceExhausted is no shortage.
  return s.GetPayload(kShortagePayload).has_value() ||
         absl::StrContains(absl::AsciiStrToLower(s.message()), "too many open files");
}

}  // namespace cairn::io
