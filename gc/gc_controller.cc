#include "gc/gc_controller.h"

#include <algorithm>

namespace cairn::gc {

namespace {

// The delayed-write rate adapts at most this often.
constexpr absl::Duration kAdjustInterval = absl::Milliseconds(100);

}  // namespace

GcController::GcController(const GcControllerOptions& options)
    : options_(options), t_(options.space_amp_trigger), rate_(options.initial_delayed_write_rate) {}

bool GcController::ShouldCollect(double amp) {
  if (!enabled()) return collecting_ = false;
  const bool was_collecting = collecting_;
  collecting_ = amp > (collecting_ ? collect_until() : start_mark());
  if (collecting_ && !was_collecting) passed_trigger_ = true;
  if (!collecting_) settling_ = false;
  return collecting_;
}

uint64_t GcController::JobBytesPerSecond(double amp, bool manual) const {
  // The budget keeps background GC from starving foreground writes; once
  // the value log is well past its trigger, GC is losing to the writes and
  // reclaiming space comes first.
  if (manual || !enabled() || amp > unthrottle_mark()) return 0;
  return options_.bytes_per_second;
}

absl::Duration GcController::WriteDelay(double amp, uint64_t bytes, absl::Time now,
                                        bool can_collect) {
  // A delay helps only while background GC collects: one that has not
  // looked since amp passed the trigger (it sleeps between idle rounds;
  // core/ wakes it) would let writes wait for nothing.
  if (!enabled() || !collecting_ || !can_collect || amp <= slowdown_mark()) {
    if (delaying_) {
      // Back under the mark: the next episode starts afresh.
      delaying_ = false;
      rate_ = options_.initial_delayed_write_rate;
    }
    return absl::ZeroDuration();
  }
  if (!delaying_) {
    delaying_ = true;
    next_write_ = now;
    last_adjust_ = now;
    amp_at_adjust_ = amp;
  } else if (now - last_adjust_ >= kAdjustInterval) {
    const double scaled = amp > amp_at_adjust_ ? 0.8 * static_cast<double>(rate_)
                                               : 1.25 * static_cast<double>(rate_);
    rate_ = static_cast<uint64_t>(std::clamp(scaled,
                                             static_cast<double>(options_.min_delayed_write_rate),
                                             static_cast<double>(options_.max_delayed_write_rate)));
    last_adjust_ = now;
    amp_at_adjust_ = amp;
  }
  if (amp > limit_mark()) rate_ = options_.min_delayed_write_rate;
  // One schedule for all writers: each write moves it on by its bytes at
  // the rate, and waits until its turn, but never longer than the cap (the
  // rest of its debt is forgiven, so one big write cannot stall the next).
  const absl::Time start = std::max(now, next_write_);
  next_write_ = start + absl::Seconds(static_cast<double>(bytes) / static_cast<double>(rate_));
  const absl::Duration wait = std::min(next_write_ - now, options_.max_write_delay);
  if (next_write_ - now > options_.max_write_delay) next_write_ = now + options_.max_write_delay;
  return wait;
}

std::vector<VictimCandidate> VictimPolicy::Pick(const PickRequest& request, bool manual,
                                                absl::FunctionRef<double()> amp) const {
  std::vector<VictimCandidate> victims = picker_.Pick(request);
  if (victims.empty() && !manual && trigger_ > 0 && amp() > trigger_) {
    victims = low_picker_.Pick(request);
  }
  return victims;
}

bool VictimPolicy::ShouldSealActive(uint64_t bytes, uint64_t garbage, bool manual,
                                    absl::FunctionRef<double()> amp) const {
  if (bytes == 0 || garbage < kMinSealGarbageBytes) return false;
  const double share = static_cast<double>(garbage) / static_cast<double>(bytes);
  if (share >= floor()) return true;
  return !manual && trigger_ > 0 && share >= fallback_floor() && amp() > trigger_;
}

}  // namespace cairn::gc
