#include "io/fd_budget.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "io/testing/status_matchers.h"

namespace cairn::io {
namespace {

TEST(FdBudgetTest, AcquiresUpToTheLimitThenFailsWithAShortage) {
  FdBudget budget(3, absl::ZeroDuration());
  for (int i = 0; i < 3; ++i) ASSERT_OK(budget.Acquire(/*wait=*/false));
  EXPECT_EQ(budget.in_use(), 3u);
  const absl::Status s = budget.Acquire(/*wait=*/false);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_TRUE(IsFdShortage(s)) << s;
  EXPECT_NE(s.message().find("3 descriptors"), std::string_view::npos) << s;
  EXPECT_EQ(budget.shortages(), 1u);
  budget.Release();
  EXPECT_OK(budget.Acquire(/*wait=*/false));
}

TEST(FdBudgetTest, KeepFreeLeavesRoomForOthers) {
  FdBudget budget(4, absl::ZeroDuration());
  ASSERT_OK(budget.Acquire(false, /*keep_free=*/2));
  ASSERT_OK(budget.Acquire(false, /*keep_free=*/2));
  EXPECT_TRUE(IsFdShortage(budget.Acquire(false, /*keep_free=*/2)));
  // The room kept is there for a caller that keeps none.
  EXPECT_OK(budget.Acquire(false));
  EXPECT_OK(budget.Acquire(false));
  EXPECT_EQ(budget.in_use(), 4u);
}

TEST(FdBudgetTest, ASpentBudgetClosesIdleFilesFirst) {
  FdBudget budget(2, absl::ZeroDuration());
  ASSERT_OK(budget.Acquire(false));
  ASSERT_OK(budget.Acquire(false));
  int idle = 1;
  const uint64_t id = budget.AddReclaimer([&] {
    if (idle == 0) return false;
    --idle;
    budget.Release();  // as the close of an idle file does
    return true;
  });
  EXPECT_OK(budget.Acquire(false));  // took the idle one's unit
  EXPECT_EQ(idle, 0);
  EXPECT_TRUE(IsFdShortage(budget.Acquire(false)));
  budget.RemoveReclaimer(id);
}

TEST(FdBudgetTest, AWaitingAcquireTakesAUnitReleasedMeanwhile) {
  FdBudget budget(1, absl::Seconds(30));
  ASSERT_OK(budget.Acquire(false));
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(20));
    budget.Release();
  });
  EXPECT_OK(budget.Acquire(/*wait=*/true));
  releaser.join();
  EXPECT_EQ(budget.in_use(), 1u);
}

TEST(FdBudgetTest, AWaitingAcquireFindsAFileThatBecameIdle) {
  // A user letting go makes a file idle without a Release: the wait looks
  // through the reclaimers again.
  FdBudget budget(1, absl::Seconds(30));
  ASSERT_OK(budget.Acquire(false));
  std::atomic<bool> idle{false};
  const uint64_t id = budget.AddReclaimer([&] {
    if (!idle.exchange(false)) return false;
    budget.Release();
    return true;
  });
  std::thread user([&] {
    absl::SleepFor(absl::Milliseconds(20));
    idle = true;
  });
  EXPECT_OK(budget.Acquire(/*wait=*/true));
  user.join();
  budget.RemoveReclaimer(id);
}

TEST(FdBudgetTest, AWaitGivesUpAfterMaxWait) {
  FdBudget budget(1, absl::Milliseconds(20));
  ASSERT_OK(budget.Acquire(false));
  const absl::Time start = absl::Now();
  EXPECT_TRUE(IsFdShortage(budget.Acquire(/*wait=*/true)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(20));
}

TEST(FdBudgetTest, AttachReleasesWhenTheLastOwnerLetsGo) {
  auto budget = std::make_shared<FdBudget>(2);
  ASSERT_OK(budget->Acquire(false));
  std::shared_ptr<int> held = FdBudget::Attach(budget, std::make_unique<int>(7));
  std::shared_ptr<int> copy = held;
  held.reset();
  EXPECT_EQ(budget->in_use(), 1u);
  copy.reset();
  EXPECT_EQ(budget->in_use(), 0u);
}

TEST(FdBudgetTest, CloseIdleClosesEveryIdleFile) {
  FdBudget budget(8);
  int idle = 3;
  for (int i = 0; i < 5; ++i) ASSERT_OK(budget.Acquire(false));
  const uint64_t id = budget.AddReclaimer([&] {
    if (idle == 0) return false;
    --idle;
    budget.Release();
    return true;
  });
  EXPECT_EQ(budget.CloseIdle(), 3u);
  EXPECT_EQ(budget.in_use(), 2u);
  budget.RemoveReclaimer(id);
}

TEST(FdBudgetTest, OnlyDescriptorShortagesAreShortages) {
  EXPECT_TRUE(
      IsFdShortage(absl::ResourceExhaustedError("open /d/000012.vlog: Too many open files")));
  EXPECT_TRUE(IsFdShortage(
      absl::ResourceExhaustedError("open /d/000012.vlog: Too many open files in system")));
  EXPECT_FALSE(IsFdShortage(absl::ResourceExhaustedError("write /d/000012.vlog: No space left")));
  EXPECT_FALSE(IsFdShortage(absl::UnavailableError("Too many open files")));
  EXPECT_FALSE(IsFdShortage(absl::OkStatus()));
}

}  // namespace
}  // namespace cairn::io
