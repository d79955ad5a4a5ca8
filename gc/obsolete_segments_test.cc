// When a collected segment may be deleted: never while a read view from
// before the move, an older snapshot, or a WAL recovery would replay can
// still reach it; at once when none can.
#include "gc/obsolete_segments.h"

#include <memory>

#include "gtest/gtest.h"

namespace cairn::gc {
namespace {

TEST(ObsoleteSegmentsTest, ASegmentNoOneCanReachIsDeletableAtOnce) {
  ObsoleteSegments s;
  s.Add(7, /*sequence=*/0, /*log_number=*/0, {});
  const ObsoleteSegments::Ready r = s.TakeDeletable(/*oldest_snapshot=*/0, /*replayed_from=*/1);
  EXPECT_EQ(r.deletable, std::vector<uint64_t>{7});
  EXPECT_EQ(r.waiting_for_wal, 0u);
  EXPECT_TRUE(s.empty());
}

TEST(ObsoleteSegmentsTest, AReadViewFromBeforeTheMoveKeepsIt) {
  ObsoleteSegments s;
  auto epoch = std::make_shared<int>(0);
  s.Add(7, 100, 0, epoch);
  EXPECT_TRUE(s.TakeDeletable(200, 10).deletable.empty());
  EXPECT_EQ(s.size(), 1u);
  epoch.reset();  // the last reader of that epoch went
  EXPECT_EQ(s.TakeDeletable(200, 10).deletable, std::vector<uint64_t>{7});
}

TEST(ObsoleteSegmentsTest, AnOlderSnapshotKeepsIt) {
  ObsoleteSegments s;
  s.Add(7, 100, 0, {});
  EXPECT_TRUE(s.TakeDeletable(/*oldest_snapshot=*/99, 10).deletable.empty());
  EXPECT_EQ(s.TakeDeletable(/*oldest_snapshot=*/100, 10).deletable, std::vector<uint64_t>{7});
}

TEST(ObsoleteSegmentsTest, AWalRecoveryWouldReplayKeepsItAndIsCountedAsWaiting) {
  ObsoleteSegments s;
  s.Add(7, 100, /*log_number=*/12, {});
  s.Add(8, 100, /*log_number=*/12, std::make_shared<int>(0));  // expired at once: no reader
  ObsoleteSegments::Ready r = s.TakeDeletable(200, /*replayed_from=*/12);
  EXPECT_TRUE(r.deletable.empty());
  EXPECT_EQ(r.waiting_for_wal, 2u);
  r = s.TakeDeletable(200, /*replayed_from=*/13);  // a flush moved the log number on
  EXPECT_EQ(r.deletable, (std::vector<uint64_t>{7, 8}));
  EXPECT_EQ(r.waiting_for_wal, 0u);
}

TEST(ObsoleteSegmentsTest, OnlyTheReachableOnesStay) {
  ObsoleteSegments s;
  auto reader = std::make_shared<int>(0);
  s.Add(1, 10, 0, {});
  s.Add(2, 20, 0, reader);
  s.Add(3, 30, 0, {});
  const ObsoleteSegments::Ready r = s.TakeDeletable(25, 1);
  EXPECT_EQ(r.deletable, std::vector<uint64_t>{1});  // 2: a reader; 3: an older snapshot
  EXPECT_EQ(r.waiting_for_wal, 0u);
  EXPECT_EQ(s.size(), 2u);
}

}  // namespace
}  // namespace cairn::gc
