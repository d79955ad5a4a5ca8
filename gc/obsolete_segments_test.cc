// When a collected segment may be deleted: never while a read view from
// before the move, an older snapshot, or a crash that loses the writes that
// superseded its records can still reach it; at once when none can.
#include "gc/obsolete_segments.h"

#include <memory>

#include "gtest/gtest.h"

namespace cairn::gc {
namespace {

using Victim = ObsoleteSegments::Victim;

// A victim moved at sequence, its superseding writes at or below it, with
// no WAL and the given epoch.
Victim Moved(uint64_t id, uint64_t sequence, std::weak_ptr<const void> epoch = {}) {
  return Victim{.segment_id = id, .sequence = sequence, .durable_at = sequence, .epoch = epoch};
}

TEST(ObsoleteSegmentsTest, ASegmentNoOneCanReachIsDeletableAtOnce) {
  ObsoleteSegments s;
  s.Add(Moved(7, 0));
  const ObsoleteSegments::Ready r =
      s.TakeDeletable(/*oldest_snapshot=*/0, /*synced_sequence=*/0, /*replayed_from=*/1);
  EXPECT_EQ(r.deletable, std::vector<uint64_t>{7});
  EXPECT_EQ(r.waiting_for_wal, 0u);
  EXPECT_TRUE(s.empty());
}

TEST(ObsoleteSegmentsTest, AReadViewFromBeforeTheMoveKeepsIt) {
  ObsoleteSegments s;
  auto epoch = std::make_shared<int>(0);
  s.Add(Moved(7, 100, epoch));
  EXPECT_TRUE(s.TakeDeletable(200, 200, 10).deletable.empty());
  EXPECT_EQ(s.size(), 1u);
  epoch.reset();  // the last reader of that epoch went
  EXPECT_EQ(s.TakeDeletable(200, 200, 10).deletable, std::vector<uint64_t>{7});
}

TEST(ObsoleteSegmentsTest, AnOlderSnapshotKeepsIt) {
  ObsoleteSegments s;
  s.Add(Moved(7, 100));
  EXPECT_TRUE(s.TakeDeletable(/*oldest_snapshot=*/99, 200, 10).deletable.empty());
  EXPECT_EQ(s.TakeDeletable(/*oldest_snapshot=*/100, 200, 10).deletable,
            std::vector<uint64_t>{7});
}

TEST(ObsoleteSegmentsTest, UnsyncedSupersedingWritesKeepItUntilAFlushAndAreCountedAsWaiting) {
  ObsoleteSegments s;
  s.Add({.segment_id = 7, .sequence = 100, .durable_at = 90, .log_number = 12});
  // expired at once: no reader
  s.Add({.segment_id = 8, .sequence = 100, .durable_at = 90, .log_number = 12,
         .epoch = std::make_shared<int>(0)});
  ObsoleteSegments::Ready r =
      s.TakeDeletable(200, /*synced_sequence=*/89, /*replayed_from=*/12);
  EXPECT_TRUE(r.deletable.empty());
  EXPECT_EQ(r.waiting_for_wal, 2u);
  r = s.TakeDeletable(200, 89, /*replayed_from=*/13);  // a flush moved the log number on
  EXPECT_EQ(r.deletable, (std::vector<uint64_t>{7, 8}));
  EXPECT_EQ(r.waiting_for_wal, 0u);
}

TEST(ObsoleteSegmentsTest, ASyncOfTheSupersedingWritesFreesItWithoutAFlush) {
  ObsoleteSegments s;
  s.Add({.segment_id = 7, .sequence = 100, .durable_at = 90, .log_number = 12});
  EXPECT_EQ(s.TakeDeletable(200, /*synced_sequence=*/89, 12).waiting_for_wal, 1u);
  // A synced write at 90 or later: recovery replays every write up to it,
  // so no old pointer into 7 comes back without its successor.
  EXPECT_EQ(s.TakeDeletable(200, /*synced_sequence=*/90, 12).deletable,
            std::vector<uint64_t>{7});
}

TEST(ObsoleteSegmentsTest, OnlyTheReachableOnesStay) {
  ObsoleteSegments s;
  auto reader = std::make_shared<int>(0);
  s.Add(Moved(1, 10));
  s.Add(Moved(2, 20, reader));
  s.Add(Moved(3, 30));
  const ObsoleteSegments::Ready r = s.TakeDeletable(25, 30, 1);
  EXPECT_EQ(r.deletable, std::vector<uint64_t>{1});  // 2: a reader; 3: an older snapshot
  EXPECT_EQ(r.waiting_for_wal, 0u);
  EXPECT_EQ(s.size(), 2u);
}

}  // namespace
}  // namespace cairn::gc
