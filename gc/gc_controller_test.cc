#include "gc/gc_controller.h"

#include <optional>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace cairn::gc {
namespace {

GcControllerOptions Defaults() {
  GcControllerOptions o;
  o.space_amp_trigger = 1.5;
  o.initial_delayed_write_rate = 64 << 20;
  o.min_delayed_write_rate = 1 << 20;
  o.max_delayed_write_rate = 1 << 30;
  return o;
}

TEST(GcControllerTest, MarksFollowTheTrigger) {
  GcController c(Defaults());
  EXPECT_DOUBLE_EQ(c.start_mark(), 1.5);
  EXPECT_DOUBLE_EQ(c.stop_mark(), 1.3);
  EXPECT_DOUBLE_EQ(c.settle_mark(), 1.25);
  EXPECT_DOUBLE_EQ(c.slowdown_mark(), 1.55);
  EXPECT_DOUBLE_EQ(c.unthrottle_mark(), 1.5);
  EXPECT_DOUBLE_EQ(c.limit_mark(), 1.75);
}

TEST(GcControllerTest, CollectsFromTheTriggerDownToTheStopMark) {
  GcController c(Defaults());
  EXPECT_FALSE(c.ShouldCollect(1.45)) << "below the trigger, not yet started";
  EXPECT_TRUE(c.ShouldCollect(1.51));
  EXPECT_TRUE(c.ShouldCollect(1.45)) << "hysteresis: goes on below the trigger";
  EXPECT_FALSE(c.ShouldCollect(1.29));
  EXPECT_FALSE(c.ShouldCollect(1.45));
}

TEST(GcControllerTest, ASettleCollectsDownToTheSettleMarkOnce) {
  GcController c(Defaults());
  c.Settle();
  EXPECT_DOUBLE_EQ(c.collect_until(), 1.25);
  EXPECT_TRUE(c.ShouldCollect(1.4)) << "a settle collects from below the trigger";
  EXPECT_TRUE(c.ShouldCollect(1.28)) << "past the stop mark, down to the settle mark";
  EXPECT_FALSE(c.ShouldCollect(1.24));
  // The next collection, started by the trigger, stops at the stop mark.
  EXPECT_DOUBLE_EQ(c.collect_until(), 1.3);
  EXPECT_TRUE(c.ShouldCollect(1.51));
  EXPECT_FALSE(c.ShouldCollect(1.29));
}

// A settle collects after a burst that passed the trigger (background GC
// started), or past the trigger now; not after one that stayed under it.
// Once the settle ends, only a new pass of the trigger asks for the next.
TEST(GcControllerTest, ASettleIsWantedOnlyAfterTheTriggerWasPassed) {
  GcController c(Defaults());
  EXPECT_FALSE(c.SettleWanted(1.45)) << "a burst that stayed under the trigger";
  EXPECT_TRUE(c.SettleWanted(1.51));
  EXPECT_FALSE(c.ShouldCollect(1.45));
  EXPECT_FALSE(c.SettleWanted(1.45));
  EXPECT_TRUE(c.ShouldCollect(1.51));  // background GC starts
  EXPECT_FALSE(c.ShouldCollect(1.29));  // and rests at the stop mark
  EXPECT_TRUE(c.SettleWanted(1.29)) << "the burst passed the trigger";
  EXPECT_TRUE(c.SettleWanted(1.45));
  c.EndSettle();
  EXPECT_FALSE(c.SettleWanted(1.45));
  EXPECT_FALSE(GcController(GcControllerOptions{.space_amp_trigger = 0}).SettleWanted(3.0))
      << "GC off";
}

TEST(GcControllerTest, MoreJobsAtOnceOnlyPastTheTrigger) {
  GcController c(Defaults());
  EXPECT_EQ(c.JobsAllowed(1.45, 2), 1) << "on the way down to the stop mark: one job";
  EXPECT_EQ(c.JobsAllowed(1.5, 2), 1);
  EXPECT_EQ(c.JobsAllowed(1.51, 2), 2) << "behind: every job the options allow";
  EXPECT_EQ(c.JobsAllowed(1.8, 1), 1);
}

TEST(GcControllerTest, DisabledNeverCollectsNorDelays) {
  GcControllerOptions o = Defaults();
  o.space_amp_trigger = 0;
  GcController c(o);
  EXPECT_FALSE(c.ShouldCollect(10));
  EXPECT_EQ(c.WriteDelay(10, 4096, absl::Now(), true), absl::ZeroDuration());
}

TEST(GcControllerTest, BudgetIsLiftedWhenFarBehindAndForRunGc) {
  GcController c(Defaults());
  EXPECT_EQ(c.JobBytesPerSecond(1.45, /*manual=*/false), Defaults().bytes_per_second);
  EXPECT_EQ(c.JobBytesPerSecond(1.52, /*manual=*/false), 0u);
  EXPECT_EQ(c.JobBytesPerSecond(1.2, /*manual=*/true), 0u);
}

TEST(GcControllerTest, NoDelayBelowTheSlowdownMarkOrWhenGcCannotCollect) {
  GcController c(Defaults());
  ASSERT_TRUE(c.ShouldCollect(1.6));
  const absl::Time t = absl::Now();
  EXPECT_EQ(c.WriteDelay(1.54, 1 << 20, t, true), absl::ZeroDuration());
  EXPECT_EQ(c.WriteDelay(1.9, 1 << 20, t, /*can_collect=*/false), absl::ZeroDuration());
  EXPECT_GT(c.WriteDelay(1.9, 1 << 20, t, true), absl::ZeroDuration());
}

// Writes past the slowdown mark wait only while background GC collects:
// before its first look at amp, and after it stopped, a delay would bring
// nothing down (a small key set overwritten before any flush was slowed
// 7.7 s of 8 this way, with GC busy 0.02 s).
TEST(GcControllerTest, NoDelayWhileGcIsNotCollecting) {
  GcController c(Defaults());
  const absl::Time t = absl::Now();
  EXPECT_EQ(c.WriteDelay(1.9, 1 << 20, t, true), absl::ZeroDuration()) << "GC has not looked";
  ASSERT_TRUE(c.ShouldCollect(1.9));
  EXPECT_GT(c.WriteDelay(1.9, 1 << 20, t, true), absl::ZeroDuration());
  ASSERT_FALSE(c.ShouldCollect(1.2));
  EXPECT_EQ(c.WriteDelay(1.9, 1 << 20, t, true), absl::ZeroDuration()) << "GC stopped";
}

TEST(GcControllerTest, WritesShareOneScheduleAtTheDelayedRate) {
  GcController c(Defaults());
  ASSERT_TRUE(c.ShouldCollect(1.6));
  const absl::Time t = absl::Now();
  // 64 MiB/s: 1 MiB takes 1/64 s; the second write waits for the first.
  const absl::Duration first = c.WriteDelay(1.6, 1 << 20, t, true);
  const absl::Duration second = c.WriteDelay(1.6, 1 << 20, t, true);
  EXPECT_NEAR(absl::ToDoubleSeconds(first), 1.0 / 64, 1e-6);
  EXPECT_NEAR(absl::ToDoubleSeconds(second), 2.0 / 64, 1e-6);
}

TEST(GcControllerTest, NoWriteWaitsPastTheCap) {
  GcController c(Defaults());
  ASSERT_TRUE(c.ShouldCollect(1.6));
  const absl::Time t = absl::Now();
  for (int i = 0; i < 100; ++i) {
    EXPECT_LE(c.WriteDelay(2.5, 64 << 20, t, true), absl::Milliseconds(100));
  }
}

TEST(GcControllerTest, RateFallsWhileSpaceGrowsAndRecoversWhileItShrinks) {
  GcController c(Defaults());
  ASSERT_TRUE(c.ShouldCollect(1.6));
  absl::Time t = absl::Now();
  c.WriteDelay(1.56, 4096, t, true);
  const uint64_t start = c.delayed_write_rate();
  double amp = 1.56;
  for (int i = 0; i < 5; ++i) {
    t += absl::Milliseconds(150);
    amp += 0.03;
    c.WriteDelay(amp, 4096, t, true);
  }
  const uint64_t low = c.delayed_write_rate();
  EXPECT_LT(low, start);
  for (int i = 0; i < 5; ++i) {
    t += absl::Milliseconds(150);
    amp -= 0.02;
    c.WriteDelay(amp, 4096, t, true);
  }
  EXPECT_GT(c.delayed_write_rate(), low);
  // Past the limit mark the rate drops to its minimum at once.
  c.WriteDelay(1.8, 4096, t, true);
  EXPECT_EQ(c.delayed_write_rate(), Defaults().min_delayed_write_rate);
  // Back under the slowdown mark: the next episode starts afresh.
  c.WriteDelay(1.3, 4096, t, true);
  EXPECT_EQ(c.delayed_write_rate(), Defaults().initial_delayed_write_rate);
}

vlog::SegmentInfo Sealed(uint64_t id, uint64_t size, uint64_t garbage) {
  vlog::SegmentInfo info;
  info.segment_id = id;
  info.sealed = true;
  info.size = size;
  info.records = 10;
  info.garbage_bytes = garbage;
  info.garbage_records = 1;
  return info;
}

TEST(GcControllerTest, VictimPolicyTakesTheFloorThenTheFallbackOnlyPastTheTrigger) {
  const VictimPolicy policy = GcController(Defaults()).victim_policy();
  EXPECT_DOUBLE_EQ(policy.floor(), 0.5);
  EXPECT_DOUBLE_EQ(policy.fallback_floor(), 0.25);
  const std::vector<vlog::SegmentInfo> segments = {Sealed(1, 1000, 300), Sealed(2, 1000, 100)};
  PickRequest request;
  request.segments = segments;
  int amp_reads = 0;
  auto amp_at = [&amp_reads](double amp) {
    return [&amp_reads, amp] {
      ++amp_reads;
      return amp;
    };
  };
  // Nothing at the floor (0.5): below the trigger, no victim.
  EXPECT_TRUE(policy.Pick(request, /*manual=*/false, amp_at(1.4)).empty());
  // Past it, the best segment at the fallback floor (0.25): 1, not 2 (0.1).
  std::vector<VictimCandidate> v = policy.Pick(request, false, amp_at(1.6));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].segment_id, 1u);
  // RunGC never drops its floor, whatever the figure.
  EXPECT_TRUE(policy.Pick(request, /*manual=*/true, amp_at(3.0)).empty());
  // A segment at the floor is taken without reading the figure.
  const std::vector<vlog::SegmentInfo> with_one_at_floor = {Sealed(1, 1000, 300),
                                                            Sealed(3, 1000, 600)};
  request.segments = with_one_at_floor;
  amp_reads = 0;
  v = policy.Pick(request, false, amp_at(1.0));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].segment_id, 3u);
  EXPECT_EQ(amp_reads, 0);
}

// A settle goes down to its mark: past it, with no segment at the floor,
// the best one at the fallback floor; once the settle is over, the trigger
// is the line again.
TEST(GcControllerTest, ASettleTakesTheFallbackFloorPastTheSettleMark) {
  GcController c(Defaults());
  const std::vector<vlog::SegmentInfo> segments = {Sealed(1, 1000, 300), Sealed(2, 1000, 100)};
  PickRequest request;
  request.segments = segments;
  const auto amp = [](double a) { return [a] { return a; }; };
  EXPECT_TRUE(c.victim_policy().Pick(request, false, amp(1.28)).empty());
  c.Settle();
  std::vector<VictimCandidate> v = c.victim_policy().Pick(request, false, amp(1.28));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].segment_id, 1u);
  EXPECT_TRUE(c.victim_policy().Pick(request, false, amp(1.24)).empty()) << "at the mark";
  EXPECT_TRUE(c.victim_policy().Pick(request, /*manual=*/true, amp(1.28)).empty());
  EXPECT_FALSE(c.ShouldCollect(1.24));  // the settle is over
  EXPECT_TRUE(c.victim_policy().Pick(request, false, amp(1.28)).empty());
}

TEST(GcControllerTest, VictimPolicyTakesSeveralVictimsWithinTheJobsBudget) {
  const VictimPolicy policy = GcController(Defaults()).victim_policy();
  const std::vector<vlog::SegmentInfo> segments = {
      Sealed(1, 1000, 600), Sealed(2, 1000, 700), Sealed(3, 1000, 800), Sealed(4, 1000, 100)};
  PickRequest request;
  request.segments = segments;
  auto amp = [] { return 1.0; };
  // No budget: the best one (the oldest at the floor scores highest).
  std::vector<VictimCandidate> v = policy.Pick(request, false, amp);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].segment_id, 1u);
  // Room for two, best first; 4 is under the floor and never joins.
  request.byte_budget = 2000 + 2 * vlog::kSegmentHeaderSize;
  v = policy.Pick(request, false, amp);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].segment_id, 1u);
  EXPECT_EQ(v[1].segment_id, 2u);
  request.byte_budget = 1 << 20;
  v = policy.Pick(request, /*manual=*/true, amp);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[2].segment_id, 3u);
}

TEST(GcControllerTest, TheActiveSegmentIsSealedOnceItsGarbageReachesTheFloor) {
  const VictimPolicy policy = GcController(Defaults()).victim_policy();
  const uint64_t mib = 1 << 20;
  auto below = [] { return 1.2; };
  auto past = [] { return 1.8; };
  EXPECT_TRUE(policy.ShouldSealActive(40 * mib, 30 * mib, false, below));
  EXPECT_TRUE(policy.ShouldSealActive(40 * mib, 20 * mib, true, below)) << "at the floor, 0.5";
  EXPECT_FALSE(policy.ShouldSealActive(40 * mib, 19 * mib, false, below));
  // Between the fallback floor (0.25) and the floor: background GC past
  // the trigger only.
  EXPECT_TRUE(policy.ShouldSealActive(40 * mib, 12 * mib, false, past));
  EXPECT_FALSE(policy.ShouldSealActive(40 * mib, 12 * mib, true, past));
  EXPECT_FALSE(policy.ShouldSealActive(40 * mib, 9 * mib, false, past));
  // Too little garbage to be worth a segment of its own and a job.
  EXPECT_FALSE(policy.ShouldSealActive(mib, mib - 1, false, past));
  EXPECT_TRUE(policy.ShouldSealActive(mib + 100, mib, false, below));
  EXPECT_FALSE(policy.ShouldSealActive(0, 0, true, past));
}

}  // namespace
}  // namespace cairn::gc
