#include "vlog/dead_records.h"

#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace cairn::vlog {
namespace {

TEST(DeadRecordsTest, OffsetsComeBackSortedAndOncePerSegment) {
  DeadRecords dead(100);
  dead.Add({{7, {{300, 1}, {100, 1}, {200, 1}}}, {8, {{50, 1}}}});
  dead.Add({{7, {{150, 1}, {100, 1}}}});  // 100 again: listed once
  EXPECT_EQ(dead.Offsets(7), (std::vector<uint64_t>{100, 150, 200, 300}));
  EXPECT_EQ(dead.Offsets(8), (std::vector<uint64_t>{50}));
  EXPECT_TRUE(dead.Offsets(9).empty());
  EXPECT_EQ(dead.size(), 6u);
  EXPECT_EQ(dead.overflowed(), 0u);
}

TEST(DeadRecordsTest, RecordsComeBackWithTheirSizesSortedAndOnce) {
  DeadRecords dead(100);
  dead.Add({{7, {{8300, 4125}, {28, 4125}}}});
  dead.Add({{7, {{4153, 4147}, {28, 4125}}}});
  EXPECT_EQ(dead.Records(7), (std::vector<DeadRecords::Record>{
                                 {28, 4125}, {4153, 4147}, {8300, 4125}}));
  EXPECT_TRUE(dead.Records(8).empty());
}

TEST(DeadRecordsTest, ForgettingASegmentFreesItsShareOfTheBound) {
  DeadRecords dead(4);
  dead.Add({{7, {{1, 1}, {2, 1}, {3, 1}}}});
  dead.Forget(7);
  EXPECT_TRUE(dead.Offsets(7).empty());
  EXPECT_EQ(dead.size(), 0u);
  dead.Add({{8, {{10, 1}, {20, 1}, {30, 1}, {40, 1}}}});
  EXPECT_EQ(dead.Offsets(8).size(), 4u);
  dead.Forget(99);  // unknown: nothing happens
  EXPECT_EQ(dead.size(), 4u);
}

TEST(DeadRecordsTest, ForgetAllButKeepsOnlyTheSegmentsAsked) {
  DeadRecords dead(100);
  dead.Add({{7, {{1, 1}, {2, 1}}}, {8, {{3, 1}}}, {9, {{4, 1}, {5, 1}, {6, 1}}}});
  dead.ForgetAllBut([](uint64_t id) { return id == 8; });
  EXPECT_TRUE(dead.Offsets(7).empty());
  EXPECT_EQ(dead.Offsets(8), (std::vector<uint64_t>{3}));
  EXPECT_TRUE(dead.Offsets(9).empty());
  EXPECT_EQ(dead.size(), 1u);
}

TEST(DeadRecordsTest, PastTheBoundRecordsAreNotListedButCounted) {
  DeadRecords dead(3);
  dead.Add({{7, {{1, 1}, {2, 1}}}});
  dead.Add({{8, {{5, 1}, {6, 1}, {7, 1}}}});
  EXPECT_EQ(dead.size(), 3u);
  EXPECT_EQ(dead.overflowed(), 2u);
  EXPECT_EQ(dead.Offsets(7), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(dead.Offsets(8), (std::vector<uint64_t>{5}));
}

TEST(DeadRecordsTest, OffsetsBeyondThirtyTwoBitsAreNotListed) {
  DeadRecords dead(10);
  const uint64_t far = uint64_t{std::numeric_limits<uint32_t>::max()} + 1;
  dead.Add({{7, {{far, 1}, {12, 1}}}});
  EXPECT_EQ(dead.Offsets(7), (std::vector<uint64_t>{12}));
  EXPECT_EQ(dead.overflowed(), 1u);
}

TEST(DeadRecordsTest, ConcurrentAddsAndReadsKeepEveryOffset) {
  DeadRecords dead(1 << 20);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&dead, t] {
      for (uint64_t i = 0; i < 1000; ++i) {
        dead.Add({{static_cast<uint64_t>(t % 2), {{i * 4 + static_cast<uint64_t>(t / 2), 1}}}});
        if (i % 100 == 0) dead.Offsets(t % 2);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(dead.Offsets(0).size(), 2000u);
  EXPECT_EQ(dead.Offsets(1).size(), 2000u);
  EXPECT_EQ(dead.size(), 4000u);
}

}  // namespace
}  // namespace cairn::vlog
