// GcController is the policy of value-log garbage collection, apart from
// its mechanism (core/ runs jobs, deletes files and holds the locks): when
// background GC starts and stops (a trigger with hysteresis), how fast a
// job may go (its byte budget, lifted when GC falls far behind), how low the
// victim floor may drop, and how much each user write is delayed when GC
// cannot keep up (a delayed-write rate that adapts, as RocksDB's
// WriteController does, so that writes are slowed smoothly and never held
// for seconds). All of it is a function of one figure, the value log's space
// amplification as core/ estimates it (docs/gc.md).
//
// Thread safety: none. core/ calls it under its DB mutex.
#ifndef CAIRN_GC_GC_CONTROLLER_H_
#define CAIRN_GC_GC_CONTROLLER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "gc/victim_picker.h"

namespace cairn::gc {

struct GcControllerOptions {
  // Background GC starts above this space amplification (t); 0 disables it.
  double space_amp_trigger = 1.5;
  // The victim floor (share of garbage) for RunGC and for background GC
  // while it keeps up.
  double min_garbage_ratio = 0.5;
  // A background job's byte budget (0: unlimited).
  uint64_t bytes_per_second = uint64_t{256} << 20;
  // The delayed-write rate user writes start at once GC falls behind, and
  // its bounds as it adapts.
  uint64_t initial_delayed_write_rate = uint64_t{64} << 20;
  uint64_t min_delayed_write_rate = uint64_t{1} << 20;
  uint64_t max_delayed_write_rate = uint64_t{1} << 30;
  // No single write waits longer than this.
  absl::Duration max_write_delay = absl::Milliseconds(100);
};

// Victim choice: the best segment at the garbage floor; for background GC
// past the trigger with none there, the best at the fallback floor (half
// of it: at most 3 bytes copied per byte freed instead of 1), since space
// comes first (docs/gc.md, "Keeping up"). A value copied out of the
// controller, so that a job picks without the DB mutex.
// The least counted garbage for which VictimPolicy::ShouldSealActive seals
// the active segment.
inline constexpr uint64_t kMinSealGarbageBytes = uint64_t{1} << 20;

class VictimPolicy {
 public:
  VictimPolicy(double floor, double fallback_floor, double trigger)
      : picker_({floor}), low_picker_({fallback_floor}), trigger_(trigger) {}
  // The victims of one job, best first, within request.byte_budget (the
  // best one always; VictimPicker::Pick), all from the same floor; empty
  // when there is none. amp is read only when no segment reaches the floor.
  std::vector<VictimCandidate> Pick(const PickRequest& request, bool manual,
                                    absl::FunctionRef<double()> amp) const;
  double floor() const { return picker_.options().min_garbage_ratio; }
  double fallback_floor() const { return low_picker_.options().min_garbage_ratio; }
  // When Pick found nothing: whether to seal the active segment, of bytes
  // with garbage counted, so that it can be picked. Writes keep piling
  // garbage into it where a small key set is overwritten again and again,
  // and a segment is only sealed at its target size (16 MiB by default),
  // so that nothing else reclaims it. Yes when its garbage reaches the floor
  // Pick would use (the fallback floor only for background GC past the
  // trigger) and at least kMinSealGarbageBytes, so that sealing, and the
  // small segment it leaves, is worth a job.
  bool ShouldSealActive(uint64_t bytes, uint64_t garbage, bool manual,
                        absl::FunctionRef<double()> amp) const;

 private:
  VictimPicker picker_;
  VictimPicker low_picker_;
  double trigger_;
};

class GcController {
 public:
  explicit GcController(const GcControllerOptions& options);

  // The marks, for t = space_amp_trigger (values at t = 1.5):
  double start_mark() const { return t_; }                    // 1.5: GC starts
  double stop_mark() const { return 1 + 0.6 * (t_ - 1); }     // 1.3: GC stops
  double settle_mark() const { return 1 + 0.5 * (t_ - 1); }   // 1.25: a settle's stop
  double slowdown_mark() const { return t_ + 0.1 * (t_ - 1); }  // 1.55: writes slowed
  double limit_mark() const { return t_ + 0.5 * (t_ - 1); }   // 1.75: slowest rate
  // GC's budget is lifted past the trigger, before user writes are slowed
  // at the slowdown mark: a write never waits for space while GC sleeps on
  // its budget. The budget holds GC back only below the trigger, on its way
  // down to the stop mark.
  double unthrottle_mark() const { return start_mark(); }

  bool enabled() const { return t_ > 0; }

  // Background GC: whether to collect now, given amp. Starts above the
  // trigger and goes on until amp is below the stop mark (hysteresis).
  bool ShouldCollect(double amp);
  bool collecting() const { return collecting_; }
  // Where the collecting under way stops: the stop mark, or the settle
  // mark for a settle step.
  double collect_until() const { return settling_ ? settle_mark() : stop_mark(); }
  // A settle step (DB::WaitForBackgroundWork) with writes paused: GC
  // collects down to the settle mark from wherever amp is, as if it had
  // passed the trigger, so that the settled figure is the low one, with
  // room under the value log's figure for the rest of the directory
  // (tables, the manifest; docs/gc.md). core/ settles only after a burst
  // that passed the trigger (SettleWanted).
  void Settle() {
    if (enabled()) collecting_ = settling_ = true;
  }
  // Whether a settle step at amp should collect: only if amp passed the
  // trigger since the last settle (background GC started collecting), or
  // is past it now. A burst that stayed under the trigger is left where
  // it is: below the trigger GC spends no write amplification on space,
  // and a settle does not either, so a load that leaves 1.4x behind
  // costs no more than its own writes (docs/gc.md, "The settle step").
  bool SettleWanted(double amp) const {
    return enabled() && (passed_trigger_ || amp > start_mark());
  }
  // The settle step is over: the next one collects only once amp passes
  // the trigger again.
  void EndSettle() { passed_trigger_ = false; }

  // Background jobs that may run at once at amp, of at most max_jobs
  // (Options::max_background_gc): one until amp passes the trigger, all
  // of them past it. A second job at once takes the second-best victims,
  // which hold less garbage than the best will by the time one job gets
  // to them: worth it only while GC is behind (docs/gc.md).
  int JobsAllowed(double amp, int max_jobs) const { return amp > start_mark() ? max_jobs : 1; }
  // A background job's byte budget at amp (0: unlimited); RunGC's is 0.
  uint64_t JobBytesPerSecond(double amp, bool manual) const;
  // Victims at min_garbage_ratio, or at half of it past the trigger; in a
  // settle, past the settle mark, so that a settle ends at its mark rather
  // than wherever no segment is half garbage (docs/gc.md, "A settle takes
  // victims at the fallback floor").
  VictimPolicy victim_policy() const {
    return VictimPolicy(options_.min_garbage_ratio, 0.5 * options_.min_garbage_ratio,
                        settling_ ? settle_mark() : start_mark());
  }

  // How long a user write of bytes, arriving at now, waits, at amp; 0
  // below the slowdown mark. Writes share one schedule at the delayed-write
  // rate; the rate falls by a fifth each 100 ms in which amp rose and
  // grows by a quarter each in which it fell, and drops to the minimum past
  // the limit mark. No delay while background GC is not collecting (the
  // last ShouldCollect said no), nor with can_collect false (GC finds
  // nothing it may collect): waiting could not bring amp down.
  absl::Duration WriteDelay(double amp, uint64_t bytes, absl::Time now, bool can_collect);
  uint64_t delayed_write_rate() const { return rate_; }

 private:
  const GcControllerOptions options_;
  const double t_;
  bool collecting_ = false;
  bool settling_ = false;  // the collecting under way is a settle's
  bool passed_trigger_ = false;  // background GC started since the last settle
  // Delayed writes.
  bool delaying_ = false;
  uint64_t rate_;
  absl::Time next_write_ = absl::InfinitePast();
  absl::Time last_adjust_ = absl::InfinitePast();
  double amp_at_adjust_ = 0;
};

}  // namespace cairn::gc

#endif  // CAIRN_GC_GC_CONTROLLER_H_
