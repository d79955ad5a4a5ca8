#include "vlog/punch_plan.h"

#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace cairn::vlog {
namespace {

using Record = DeadRecords::Record;

// Records of 4,125 bytes (a 4 KiB value, a 16-byte key) from offset 28.
constexpr uint32_t kRecord = 4125;
Record At(int i) { return {kSegmentHeaderSize + static_cast<uint64_t>(i) * kRecord, kRecord}; }
uint64_t Begin(int i) { return At(i).offset; }

// The runs of adjacent records among records, as DeadRecords lists them.
std::vector<PunchRun> RunsOf(const std::vector<Record>& records) {
  DeadRecords dead(1 << 20);
  dead.Add({{1, records}});
  return dead.Runs(1, 0);
}

// PlanPunchRuns over the records' runs.
std::vector<PunchRun> Plan(const std::vector<Record>& records, absl::Span<const PunchRun> punched,
                           uint64_t min_gain) {
  return PlanPunchRuns(RunsOf(records), punched, min_gain);
}

TEST(PunchPlanTest, OneDeadRecordFreesNoBlockTwoAdjacentDo) {
  EXPECT_TRUE(Plan({At(3)}, {}, kPunchBlockSize).empty());
  EXPECT_TRUE(Plan({At(3), At(5)}, {}, kPunchBlockSize).empty());
  EXPECT_EQ(Plan({At(3), At(4)}, {}, kPunchBlockSize),
            (std::vector<PunchRun>{{Begin(3), Begin(5)}}));
}

TEST(PunchPlanTest, DeadRecordsJoinIntoRunsOfAdjacentRecords) {
  EXPECT_EQ(RunsOf({At(5), At(1), At(2), At(7), At(6), At(2)}),
            (std::vector<PunchRun>{{Begin(1), Begin(3)}, {Begin(5), Begin(8)}}));
  DeadRecords dead(100);
  dead.Add({{1, {At(1), At(2), At(5), At(6), At(7)}}});
  EXPECT_EQ(dead.Runs(1, 3 * kRecord), (std::vector<PunchRun>{{Begin(5), Begin(8)}}));
  EXPECT_TRUE(dead.Runs(2, 0).empty());
}

TEST(PunchPlanTest, RunsJoinWhatIsPunchedAndAddOnlyNewBytes) {
  const std::vector<PunchRun> punched = {{Begin(3), Begin(5)}};
  // Record 5 alone next to the punched run frees the block they share.
  EXPECT_EQ(Plan({At(3), At(4), At(5)}, punched, kPunchBlockSize),
            (std::vector<PunchRun>{{Begin(5), Begin(6)}}));
  // Nothing new: nothing to add.
  EXPECT_TRUE(Plan({At(3), At(4)}, punched, kPunchBlockSize).empty());
  // A gain below the floor is not worth a run.
  EXPECT_TRUE(Plan({At(5)}, punched, 64 * kPunchBlockSize).empty());
}

TEST(PunchPlanTest, SubtractLeavesTheUncoveredPieces) {
  EXPECT_EQ(SubtractRuns({{100, 1000}}, {{200, 300}, {500, 600}}),
            (std::vector<PunchRun>{{100, 200}, {300, 500}, {600, 1000}}));
  EXPECT_TRUE(SubtractRuns({{200, 300}}, {{100, 1000}}).empty());
  EXPECT_EQ(SubtractRuns({{100, 200}, {900, 1000}}, {{150, 950}}),
            (std::vector<PunchRun>{{100, 150}, {950, 1000}}));
}

TEST(PunchPlanTest, RangesAreTheWholeBlocksOfTheMergedRunNearTheAddedOne) {
  // Merged run 28-12403 (records 0-2); added run 8278-12403 (record 2):
  // of the merged run's whole blocks (4096-12288) it touches 8192-12288,
  // which records 1 and 2 share; 4096-8192 went with records 0 and 1.
  EXPECT_EQ(PunchRanges({{Begin(0), Begin(3)}}, {{Begin(2), Begin(3)}}),
            (std::vector<std::pair<uint64_t, uint64_t>>{{8192, 4096}}));
  // Added alone, records 0-2 free all three blocks.
  EXPECT_EQ(PunchRanges({{Begin(0), Begin(3)}}, {{Begin(0), Begin(3)}}),
            (std::vector<std::pair<uint64_t, uint64_t>>{{4096, 8192}}));
  // A run with no whole block punches nothing.
  EXPECT_TRUE(PunchRanges({{Begin(0), Begin(1)}}, {{Begin(0), Begin(1)}}).empty());
}

// Whatever the dead records, the planned runs are ascending, disjoint,
// outside what is punched, made of dead records only, and every range to
// punch lies inside the runs (dead bytes only).
TEST(PunchPlanTest, RandomPlansPunchOnlyDeadBytes) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 200; ++round) {
    std::set<int> dead_ids;
    std::vector<Record> dead;
    for (int i = 0; i < 200; ++i) {
      if (rng() % 100 < 45) {
        dead_ids.insert(i);
        dead.push_back(At(i));
      }
    }
    std::vector<PunchRun> punched;
    for (int pass = 0; pass < 3; ++pass) {
      const std::vector<PunchRun> added = Plan(dead, punched, kPunchBlockSize);
      uint64_t prev = 0;
      for (const PunchRun& r : added) {
        ASSERT_GE(r.begin, prev);
        ASSERT_LT(r.begin, r.end);
        prev = r.end;
        for (const PunchRun& p : punched) ASSERT_TRUE(r.end <= p.begin || r.begin >= p.end);
        // Record-aligned, every record inside dead.
        ASSERT_EQ((r.begin - kSegmentHeaderSize) % kRecord, 0u);
        ASSERT_EQ((r.end - kSegmentHeaderSize) % kRecord, 0u);
        for (uint64_t at = r.begin; at < r.end; at += kRecord) {
          ASSERT_TRUE(dead_ids.contains(static_cast<int>((at - kSegmentHeaderSize) / kRecord)));
        }
      }
      std::vector<PunchRun> merged = punched;
      merged.insert(merged.end(), added.begin(), added.end());
      std::sort(merged.begin(), merged.end(),
                [](const PunchRun& a, const PunchRun& b) { return a.begin < b.begin; });
      punched.clear();
      for (const PunchRun& r : merged) {
        if (!punched.empty() && r.begin <= punched.back().end) {
          punched.back().end = std::max(punched.back().end, r.end);
        } else {
          punched.push_back(r);
        }
      }
      for (const auto& range : PunchRanges(punched, added)) {
        // Named copies: clang before 16 cannot capture structured bindings.
        const uint64_t offset = range.first;
        const uint64_t length = range.second;
        ASSERT_EQ(offset % kPunchBlockSize, 0u);
        ASSERT_EQ(length % kPunchBlockSize, 0u);
        const bool inside = std::any_of(punched.begin(), punched.end(), [&](const PunchRun& r) {
          return r.begin <= offset && offset + length <= r.end;
        });
        ASSERT_TRUE(inside) << offset << "+" << length;
      }
      // More records die between passes.
      for (int i = 0; i < 200; ++i) {
        if (!dead_ids.contains(i) && rng() % 100 < 20) dead_ids.insert(i);
      }
      dead.clear();
      for (int i : dead_ids) dead.push_back(At(i));
    }
  }
}

}  // namespace
}  // namespace cairn::vlog
