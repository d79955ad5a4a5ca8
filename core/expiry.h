// Expiry (issue 60, TTL): the DB's clock for expiring writes and the rules
// that turn a TTL into an entry's expiry and an expired entry into a
// deletion. Decisions: docs/decisions/20261207_ttl_expiry.md.
#ifndef CAIRN_CORE_EXPIRY_H_
#define CAIRN_CORE_EXPIRY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cairn/options.h"
#include "lsm/dbformat.h"

namespace cairn {

// Options::clock (or the system's real-time clock) made monotonic: NowMicros
// never returns less than it returned before, so an entry once read as
// expired stays expired while the DB is open, whatever the clock does.
// Thread-safe.
class ExpiryClock {
 public:
  explicit ExpiryClock(std::shared_ptr<Clock> clock);
  uint64_t NowMicros();

 private:
  const std::shared_ptr<Clock> clock_;
  std::atomic<uint64_t> max_seen_{0};
};

// The expiry of a write made at now_micros with a TTL of ttl_seconds:
// InvalidArgument for 0 or a TTL over kMaxTtlSeconds.
absl::StatusOr<uint64_t> ExpiryAfter(uint64_t now_micros, uint64_t ttl_seconds);

// A lookup's answer (*type, *stored) as a read must see it at now: an
// expired entry becomes a deletion, an unexpired one its type without
// expiry and its payload. DataLoss (naming the key) for an expiring entry
// without its expiry.
absl::Status ResolveExpiry(std::string_view key, uint64_t now_micros, lsm::ValueType* type,
                           std::string* stored);

}  // namespace cairn

#endif  // CAIRN_CORE_EXPIRY_H_
