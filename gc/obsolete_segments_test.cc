// When a collected segment may be deleted: never while a read view from
// before the move or an older snapshot can still reach it; at once when
// neither can. (A crash cannot: the job marks it obsolete only once the
// writes that superseded its records are synced, tested in core/gc_test.cc.)
#include "gc/obsolete_segments.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace cairn::gc {
namespace {

using Victim = ObsoleteSegments::Victim;

// A victim moved at sequence, held by epoch (none: no reader).
Victim Moved(uint64_t id, uint64_t sequence, std::weak_ptr<const void> epoch = {}) {
  return Victim{.segment_id = id, .sequence = sequence, .epoch = epoch};
}

TEST(ObsoleteSegmentsTest, ASegmentNoOneCanReachIsDeletableAtOnce) {
  ObsoleteSegments s;
  s.Add(Moved(7, 0));
  EXPECT_EQ(s.TakeDeletable(/*oldest_snapshot=*/0), std::vector<uint64_t>{7});
  EXPECT_TRUE(s.empty());
  EXPECT_TRUE(s.TakeDeletable(0).empty());  // taken once
}

TEST(ObsoleteSegmentsTest, AReadViewFromBeforeTheMoveKeepsIt) {
  ObsoleteSegments s;
  auto epoch = std::make_shared<int>(0);
  s.Add(Moved(7, 100, epoch));
  EXPECT_TRUE(s.TakeDeletable(200).empty());
  EXPECT_EQ(s.size(), 1u);
  epoch.reset();  // the last reader of that epoch went
  EXPECT_EQ(s.TakeDeletable(200), std::vector<uint64_t>{7});
}

TEST(ObsoleteSegmentsTest, AnOlderSnapshotKeepsIt) {
  ObsoleteSegments s;
  s.Add(Moved(7, 100));
  EXPECT_TRUE(s.TakeDeletable(/*oldest_snapshot=*/99).empty());
  EXPECT_EQ(s.TakeDeletable(/*oldest_snapshot=*/100), std::vector<uint64_t>{7});
}

TEST(ObsoleteSegmentsTest, OnlyTheReachableOnesStay) {
  ObsoleteSegments s;
  auto reader = std::make_shared<int>(0);
  s.Add(Moved(1, 10));
  s.Add(Moved(2, 20, reader));
  s.Add(Moved(3, 30));
  EXPECT_EQ(s.TakeDeletable(25), std::vector<uint64_t>{1});  // 2: a reader; 3: an older snapshot
  EXPECT_EQ(s.size(), 2u);
  reader.reset();
  EXPECT_EQ(s.TakeDeletable(30), (std::vector<uint64_t>{2, 3}));
  EXPECT_TRUE(s.empty());
}

}  // namespace
}  // namespace cairn::gc
