// ForeseenGarbage: the list of records flushes foresaw as garbage, which
// GC's victim choice and the write throttle read before any compaction
// counts them (docs/gc.md, "Garbage foreseen at flush").
#include "core/foreseen_garbage.h"

#include "gtest/gtest.h"

namespace cairn {
namespace {

const auto kAll = [](uint64_t) { return true; };

TEST(ForeseenGarbageTest, AddsEachRecordOnceAndCountedTakesOnlyListedRecordsOff) {
  ForeseenGarbage f(100);
  vlog::DeadRecords::Batch batch;
  batch[7] = {{0, 100}, {100, 50}};
  batch[9] = {{4096, 10}};
  EXPECT_EQ(f.Add(batch, kAll), 160u);
  EXPECT_EQ(f.Add(batch, kAll), 0u);  // listed already: no double count
  EXPECT_EQ(f.total_bytes(), 160u);
  EXPECT_EQ(f.Bytes(7), 150u);
  EXPECT_EQ(f.Bytes(9), 10u);
  EXPECT_EQ(f.size(), 3u);

  // A compaction counted one listed record of 7 and one never listed.
  vlog::DeadRecords::Batch counted;
  counted[7] = {{100, 50}, {200, 30}};
  counted[8] = {{0, 5}};
  f.Counted(counted);
  EXPECT_EQ(f.Bytes(7), 100u);
  EXPECT_EQ(f.total_bytes(), 110u);
  EXPECT_EQ(f.size(), 2u);
}

TEST(ForeseenGarbageTest, SkipsSegmentsNotKeptAndForgetsCollectedOnes) {
  ForeseenGarbage f(100);
  vlog::DeadRecords::Batch batch;
  batch[1] = {{0, 10}};
  batch[2] = {{0, 20}, {20, 20}};
  batch[3] = {{0, 30}};
  EXPECT_EQ(f.Add(batch, [](uint64_t id) { return id != 3; }), 50u);
  EXPECT_EQ(f.Bytes(3), 0u);
  f.Forget(2);
  EXPECT_EQ(f.Bytes(2), 0u);
  EXPECT_EQ(f.total_bytes(), 10u);
  EXPECT_EQ(f.size(), 1u);
  batch.erase(2);
  f.Add(batch, kAll);
  f.ForgetAllBut([](uint64_t id) { return id == 3; });
  EXPECT_EQ(f.Bytes(1), 0u);
  EXPECT_EQ(f.total_bytes(), 30u);
  EXPECT_EQ(f.size(), 1u);
}

TEST(ForeseenGarbageTest, StopsListingAtItsBound) {
  ForeseenGarbage f(2);
  vlog::DeadRecords::Batch batch;
  batch[1] = {{0, 10}, {10, 10}, {20, 10}};
  EXPECT_EQ(f.Add(batch, kAll), 20u);
  EXPECT_EQ(f.size(), 2u);
  EXPECT_EQ(f.overflowed(), 1u);
  EXPECT_EQ(f.total_bytes(), 20u);
}

}  // namespace
}  // namespace cairn
