#include "core/expiry.h"

#include <chrono>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace cairn {

ExpiryClock::ExpiryClock(std::shared_ptr<Clock> clock) : clock_(std::move(clock)) {}

uint64_t ExpiryClock::NowMicros() {
  uint64_t now;
  if (clock_ != nullptr) {
    now = clock_->NowMicros();
  } else {
    const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
    const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(since_epoch).count();
    now = us > 0 ? static_cast<uint64_t>(us) : 0;
  }
  uint64_t seen = max_seen_.load(std::memory_order_relaxed);
  while (now > seen && !max_seen_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
  return now > seen ? now : seen;
}

absl::StatusOr<uint64_t> ExpiryAfter(uint64_t now_micros, uint64_t ttl_seconds) {
  if (ttl_seconds == 0) {
    return absl::InvalidArgumentError("a TTL of 0 seconds means no expiry; use Put");
  }
  if (ttl_seconds > kMaxTtlSeconds) {
    return absl::InvalidArgumentError(absl::StrCat("TTL of ", ttl_seconds,
                                                   " seconds exceeds the limit of ",
                                                   kMaxTtlSeconds, " (kMaxTtlSeconds)"));
  }
  // ttl_seconds * 1e6 < 2^52, and a clock within 2^63 microseconds (292,000
  // years) cannot carry the sum past 2^64: the saturation below is for a
  // broken clock alone.
  const uint64_t ttl_micros = ttl_seconds * 1'000'000;
  if (now_micros > UINT64_MAX - ttl_micros) return UINT64_MAX;
  return now_micros + ttl_micros;
}

absl::Status ResolveExpiry(std::string_view key, uint64_t now_micros, lsm::ValueType* type,
                           std::string* stored) {
  if (!lsm::HasExpiry(*type)) return absl::OkStatus();
  lsm::StoredValue sv;
  if (!lsm::SplitStoredValue(*type, *stored, &sv)) {
    return absl::DataLossError(absl::StrCat(
        "expiring entry of key '", absl::CHexEscape(absl::string_view(key.data(), key.size())),
        "' lacks its expiry"));
  }
  if (lsm::IsExpired(sv.expiry_micros, now_micros)) {
    *type = lsm::ValueType::kDeletion;
    stored->clear();
    return absl::OkStatus();
  }
  *type = sv.type;
  stored->erase(0, lsm::kExpirySize);
  return absl::OkStatus();
}

}  // namespace cairn
