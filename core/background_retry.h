// Which background failures are retried rather than made the sticky
// background error: a flush or a compaction that fails for want of file
// descriptors (io::IsFdShortage) before its manifest edit leaves the
// database as it was, and passes once reads let files go, so its thread
// tries again after a pause instead of stopping writes until a reopen
// (docs/decisions/20261207_fd_budget.md). A failure at or after the edit
// stays sticky: the manifest may or may not hold it.
#ifndef CAIRN_CORE_BACKGROUND_RETRY_H_
#define CAIRN_CORE_BACKGROUND_RETRY_H_

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/time/time.h"
#include "io/fd_budget.h"

namespace cairn {

inline constexpr char kRetryablePayload[] = "cairn.BackgroundRetry";

// s, marked retryable when it is a descriptor shortage. Call only on a
// failure before the job's manifest edit.
inline absl::Status RetryableBeforeEdit(absl::Status s) {
  if (io::IsFdShortage(s)) s.SetPayload(kRetryablePayload, absl::Cord("1"));
  return s;
}

inline bool IsRetryable(const absl::Status& s) {
  return !s.ok() && s.GetPayload(kRetryablePayload).has_value();
}

// The pause before retry number attempt (0 first): 10 ms, doubling, at
// most a second, so a long shortage costs a log line a second.
inline absl::Duration RetryPause(int attempt) {
  return std::min(absl::Milliseconds(10) * (1 << std::min(attempt, 7)), absl::Seconds(1));
}

}  // namespace cairn

#endif  // CAIRN_CORE_BACKGROUND_RETRY_H_
