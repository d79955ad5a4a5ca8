// Tests for the compaction picker: dynamic level targets, scores, the L0
// trigger, the smallest-overlap choice, trivial moves, files being compacted,
// clean cuts at shared user keys, range picks and the pending-bytes estimate.
// Files here are metadata only; nothing is read.
#include "lsm/compaction.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lsm/dbformat.h"
#include "lsm/version.h"

namespace cairn::lsm {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr uint64_t kMiB = uint64_t{1} << 20;

// A file holding user keys [lo, hi].
std::shared_ptr<FileMetaData> File(uint64_t number, std::string_view lo, std::string_view hi,
                                   uint64_t size, SequenceNumber seq = 100) {
  auto f = std::make_shared<FileMetaData>();
  f->number = number;
  f->file_size = size;
  AppendInternalKey(&f->smallest, lo, seq + 1, ValueType::kValue);
  AppendInternalKey(&f->largest, hi, seq, ValueType::kValue);
  f->smallest_seq = seq;
  f->largest_seq = seq + 1;
  return f;
}

// Levels in any order; L0 is put newest first, the others by key.
std::shared_ptr<const Version> MakeVersion(std::array<FileList, kNumLevels> levels) {
  std::sort(levels[0].begin(), levels[0].end(),
            [](const auto& a, const auto& b) { return a->number > b->number; });
  for (int level = 1; level < kNumLevels; ++level) {
    std::sort(levels[level].begin(), levels[level].end(), [](const auto& a, const auto& b) {
      return CompareInternalKeys(a->smallest, b->smallest) < 0;
    });
  }
  return std::make_shared<const Version>(std::move(levels));
}

std::vector<uint64_t> Numbers(const FileList& files) {
  std::vector<uint64_t> n;
  for (const auto& f : files) n.push_back(f->number);
  std::sort(n.begin(), n.end());
  return n;
}

CompactionOptions Options() {
  CompactionOptions o;
  o.target_file_size = 1 * kMiB;  // base level 10 MiB, L5 100 MiB, L6 1000 MiB
  return o;
}

TEST(CompactionOptionsTest, BaseLevelBytesDefaultsToTenFilesCappedAt256MiB) {
  CompactionOptions o;
  o.target_file_size = 1 * kMiB;
  EXPECT_EQ(BaseLevelBytes(o), 10 * kMiB);
  o.target_file_size = 64 * kMiB;
  EXPECT_EQ(BaseLevelBytes(o), 256 * kMiB);
  o.max_bytes_for_level_base = 3 * kMiB;
  EXPECT_EQ(BaseLevelBytes(o), 3 * kMiB);
}

TEST(LevelShapeTest, EmptyTreeCompactsL0IntoTheLastLevel) {
  auto v = MakeVersion({FileList{File(1, "a", "z", kMiB)}});
  const LevelShape shape = ComputeLevelShape(*v, Options());
  EXPECT_EQ(shape.base_level, kNumLevels - 1);
  EXPECT_EQ(shape.target_bytes[kNumLevels - 1], 10 * kMiB);
  for (int level = 0; level < kNumLevels - 1; ++level) EXPECT_EQ(shape.target_bytes[level], 0u);
  EXPECT_DOUBLE_EQ(shape.score[0], 0.25);
}

TEST(LevelShapeTest, TargetsGrowFromTheBottomLevelUp) {
  auto v = MakeVersion({FileList{}, {}, {}, {}, {}, {}, {File(1, "a", "z", 1000 * kMiB)}});
  const LevelShape shape = ComputeLevelShape(*v, Options());
  EXPECT_EQ(shape.base_level, 4);
  EXPECT_EQ(shape.target_bytes[4], 10 * kMiB);
  EXPECT_EQ(shape.target_bytes[5], 100 * kMiB);
  EXPECT_EQ(shape.target_bytes[6], 1000 * kMiB);
  for (int level = 1; level < 4; ++level) EXPECT_EQ(shape.target_bytes[level], 0u);
  EXPECT_EQ(BaseLevel(*v, Options()), 4);
}

TEST(LevelShapeTest, SmallBottomKeepsTheBaseLevelThereAndNoTargetBelowBaseSize) {
  auto v = MakeVersion({FileList{}, {}, {}, {}, {}, {}, {File(1, "a", "z", 5 * kMiB)}});
  LevelShape shape = ComputeLevelShape(*v, Options());
  EXPECT_EQ(shape.base_level, 6);
  EXPECT_EQ(shape.target_bytes[6], 10 * kMiB);
  EXPECT_DOUBLE_EQ(shape.score[6], 0);  // nothing below the last level

  // Data in L5 and L6: the first non-empty level stays the base level while
  // its share of the bottom fits in the base size...
  v = MakeVersion({FileList{}, {}, {}, {}, {}, {File(1, "a", "m", 12 * kMiB)},
                   {File(2, "a", "z", 80 * kMiB)}});
  shape = ComputeLevelShape(*v, Options());
  EXPECT_EQ(shape.base_level, 5);
  EXPECT_EQ(shape.target_bytes[5], 10 * kMiB);
  EXPECT_EQ(shape.target_bytes[6], 80 * kMiB);
  EXPECT_DOUBLE_EQ(shape.score[5], 1.2);

  // ... and a level above opens once it does not.
  v = MakeVersion({FileList{}, {}, {}, {}, {}, {File(1, "a", "m", 12 * kMiB)},
                   {File(2, "a", "z", 200 * kMiB)}});
  shape = ComputeLevelShape(*v, Options());
  EXPECT_EQ(shape.base_level, 4);
  EXPECT_EQ(shape.target_bytes[4], 10 * kMiB);
  EXPECT_EQ(shape.target_bytes[5], 20 * kMiB);
  EXPECT_EQ(shape.target_bytes[6], 200 * kMiB);
  EXPECT_DOUBLE_EQ(shape.score[5], 0.6);
}

TEST(LevelShapeTest, ScoresIgnoreFilesBeingCompacted) {
  auto v = MakeVersion({FileList{File(10, "a", "b", kMiB), File(11, "a", "b", kMiB)}, {}, {},
                        {}, {File(1, "a", "c", 15 * kMiB), File(2, "d", "f", 5 * kMiB)}, {},
                        {File(3, "a", "z", 1000 * kMiB)}});
  LevelShape shape = ComputeLevelShape(*v, Options());
  EXPECT_DOUBLE_EQ(shape.score[0], 0.5);
  EXPECT_DOUBLE_EQ(shape.score[4], 2.0);
  v->files(0)[0]->being_compacted = true;
  v->files(4)[0]->being_compacted = true;
  shape = ComputeLevelShape(*v, Options());
  EXPECT_DOUBLE_EQ(shape.score[0], 0.25);
  EXPECT_DOUBLE_EQ(shape.score[4], 0.5);
}

TEST(PickCompactionTest, NothingToDoBelowTheL0Trigger) {
  std::array<FileList, kNumLevels> levels;
  for (int i = 1; i <= 3; ++i) levels[0].push_back(File(i, "a", "z", kMiB));
  EXPECT_EQ(PickCompaction(*MakeVersion(levels), Options()), nullptr);
  levels[0].push_back(File(4, "a", "z", kMiB));
  auto c = PickCompaction(*MakeVersion(levels), Options());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level(), 0);
  EXPECT_EQ(c->output_level(), kNumLevels - 1);
  EXPECT_THAT(Numbers(c->inputs(0)), ElementsAre(1, 2, 3, 4));
  EXPECT_FALSE(c->IsTrivialMove());
  EXPECT_FALSE(c->is_manual());
  EXPECT_DOUBLE_EQ(c->score(), 1.0);
}

TEST(PickCompactionTest, L0TakesTheFilesOverlappingTheOldestTransitively) {
  std::array<FileList, kNumLevels> levels;
  levels[0] = {File(1, "a", "c", kMiB), File(2, "x", "z", kMiB), File(3, "c", "e", kMiB),
               File(4, "e", "g", kMiB)};
  levels[6] = {File(20, "a", "b", 300 * kMiB), File(21, "c", "d", 300 * kMiB),
               File(22, "w", "z", 400 * kMiB)};
  auto v = MakeVersion(levels);
  auto c = PickCompaction(*v, Options());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level(), 0);
  EXPECT_EQ(c->output_level(), 4);  // the base level of a 1000 MiB tree
  EXPECT_THAT(Numbers(c->inputs(0)), ElementsAre(1, 3, 4));
  EXPECT_THAT(c->inputs(1), IsEmpty());
  EXPECT_THAT(c->grandparents(), IsEmpty());  // L5 is empty
  EXPECT_EQ(c->smallest_user_key(), "a");
  EXPECT_EQ(c->largest_user_key(), "g");
}

TEST(PickCompactionTest, OnlyOneL0CompactionAtATime) {
  std::array<FileList, kNumLevels> levels;
  for (int i = 1; i <= 8; ++i) levels[0].push_back(File(i, "a", "z", kMiB));
  auto v = MakeVersion(levels);
  v->files(0).back()->being_compacted = true;  // file 1
  EXPECT_EQ(PickCompaction(*v, Options()), nullptr);
}

TEST(PickCompactionTest, HighestScoreWins) {
  std::array<FileList, kNumLevels> levels;
  for (int i = 1; i <= 4; ++i) levels[0].push_back(File(i, "a", "z", kMiB));  // score 1
  levels[4] = {File(10, "a", "c", 30 * kMiB)};                                // score 3
  levels[6] = {File(11, "a", "z", 1000 * kMiB)};
  auto c = PickCompaction(*MakeVersion(levels), Options());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level(), 4);
  EXPECT_EQ(c->output_level(), 5);

  for (int i = 5; i <= 16; ++i) levels[0].push_back(File(i, "a", "z", kMiB));  // score 4
  c = PickCompaction(*MakeVersion(levels), Options());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level(), 0);
  EXPECT_EQ(c->output_level(), 4);
  EXPECT_THAT(Numbers(c->inputs(1)), ElementsAre(10));
}

// L4 is over its 10 MiB target; each file's L5 overlap differs.
std::array<FileList, kNumLevels> OverlapRatioTree() {
  std::array<FileList, kNumLevels> levels;
  levels[4] = {File(1, "a", "b", 1 * kMiB), File(2, "c", "d", 1 * kMiB),
               File(3, "e", "f", 2 * kMiB), File(4, "g", "h", 8 * kMiB)};
  levels[5] = {File(11, "a", "b", 5 * kMiB), File(12, "c", "d", kMiB / 2),
               File(13, "e", "f", 3 * kMiB), File(14, "g", "h", 80 * kMiB)};
  levels[6] = {File(21, "a", "z", 1000 * kMiB)};
  return levels;
}

TEST(PickCompactionTest, PicksTheFileWithTheSmallestOverlapRatio) {
  auto v = MakeVersion(OverlapRatioTree());
  auto c = PickCompaction(*v, Options());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level(), 4);
  EXPECT_DOUBLE_EQ(c->score(), 1.2);
  EXPECT_THAT(Numbers(c->inputs(0)), ElementsAre(2));
  EXPECT_THAT(Numbers(c->inputs(1)), ElementsAre(12));
  EXPECT_THAT(Numbers(c->grandparents()), ElementsAre(21));
  EXPECT_EQ(c->InputBytes(), kMiB + kMiB / 2);
}

TEST(PickCompactionTest, SkipsFilesBeingCompactedAndPicksWhoseOverlapIsBusy) {
  auto v = MakeVersion(OverlapRatioTree());
  v->files(4)[1]->being_compacted = true;  // file 2, the best
  auto c = PickCompaction(*v, Options());
  ASSERT_NE(c, nullptr);
  EXPECT_THAT(Numbers(c->inputs(0)), ElementsAre(3));  // ratio 1.5 beats 5 and 10

  v->files(4)[1]->being_compacted = false;
  v->files(5)[1]->being_compacted = true;  // file 12, the best file's overlap
  c = PickCompaction(*v, Options());
  ASSERT_NE(c, nullptr);
  EXPECT_THAT(Numbers(c->inputs(0)), ElementsAre(3));

  // Marking and clearing goes through the Compaction.
  c->SetInputsBeingCompacted(true);
  EXPECT_TRUE(v->files(4)[2]->being_compacted);
  EXPECT_TRUE(v->files(5)[2]->being_compacted);
  auto next = PickCompaction(*v, Options());
  ASSERT_NE(next, nullptr);
  EXPECT_THAT(Numbers(next->inputs(0)), ElementsAre(1));
  c->SetInputsBeingCompacted(false);
  EXPECT_FALSE(v->files(4)[2]->being_compacted);
}

TEST(PickCompactionTest, ExpandsInputsSoNoUserKeyIsSplit) {
  std::array<FileList, kNumLevels> levels;
  // Files 1 and 2 both hold versions of "k"; file 3 shares "p" with file 2.
  levels[4] = {File(1, "a", "k", 6 * kMiB, 100), File(2, "k", "p", 6 * kMiB, 50),
               File(3, "p", "s", 6 * kMiB, 10), File(4, "t", "u", 6 * kMiB)};
  levels[6] = {File(21, "a", "z", 1000 * kMiB)};
  auto v = MakeVersion(levels);
  const std::string b_key = "b";
  auto c = PickRangeCompaction(*v, Options(), 4, nullptr, &b_key);
  ASSERT_NE(c, nullptr);
  EXPECT_THAT(Numbers(c->inputs(0)), ElementsAre(1, 2, 3));
  EXPECT_EQ(c->largest_user_key(), "s");

  // The automatic pick expands the same way: file 1 has no overlap below.
  c = PickCompaction(*v, Options());
  ASSERT_NE(c, nullptr);
  EXPECT_THAT(Numbers(c->inputs(0)), ElementsAre(1, 2, 3));
}

TEST(PickCompactionTest, TrivialMoveWhenNothingOverlapsBelow) {
  std::array<FileList, kNumLevels> levels;
  levels[4] = {File(1, "a", "b", 11 * kMiB)};
  levels[5] = {File(2, "c", "d", 5 * kMiB)};
  levels[6] = {File(3, "a", "z", 1000 * kMiB)};
  auto c = PickCompaction(*MakeVersion(levels), Options());
  ASSERT_NE(c, nullptr);
  EXPECT_THAT(c->inputs(1), IsEmpty());
  // 1000 MiB of grandparent overlap is more than 10 target files.
  EXPECT_FALSE(c->IsTrivialMove());

  levels[6] = {File(3, "a", "a", 10 * kMiB), File(4, "c", "z", 990 * kMiB)};
  c = PickCompaction(*MakeVersion(levels), Options());
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->IsTrivialMove());
  EXPECT_THAT(Numbers(c->grandparents()), ElementsAre(3));

  // A lone L0 file over an empty base range moves too.
  std::array<FileList, kNumLevels> l0;
  for (int i = 1; i <= 4; ++i) {
    const std::string k(1, static_cast<char>('a' + 2 * i));
    l0[0].push_back(File(i, k, k, kMiB));
  }
  c = PickCompaction(*MakeVersion(l0), Options());
  ASSERT_NE(c, nullptr);
  EXPECT_THAT(Numbers(c->inputs(0)), ElementsAre(1));
  EXPECT_TRUE(c->IsTrivialMove());
}

TEST(PickRangeCompactionTest, PicksTheLevelFilesOverlappingTheRange) {
  auto v = MakeVersion(OverlapRatioTree());
  const std::string c_key = "c", e_key = "e";
  bool blocked = true;
  auto c = PickRangeCompaction(*v, Options(), 4, &c_key, &e_key, &blocked);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(blocked);
  EXPECT_TRUE(c->is_manual());
  EXPECT_EQ(c->output_level(), 5);
  EXPECT_THAT(Numbers(c->inputs(0)), ElementsAre(2, 3));
  EXPECT_THAT(Numbers(c->inputs(1)), ElementsAre(12, 13));

  c = PickRangeCompaction(*v, Options(), 4, nullptr, nullptr);
  ASSERT_NE(c, nullptr);
  EXPECT_THAT(Numbers(c->inputs(0)), ElementsAre(1, 2, 3, 4));

  const std::string x_key = "x";
  EXPECT_EQ(PickRangeCompaction(*v, Options(), 4, &x_key, nullptr, &blocked), nullptr);
  EXPECT_FALSE(blocked);  // nothing there
  EXPECT_EQ(PickRangeCompaction(*v, Options(), 2, nullptr, nullptr, &blocked), nullptr);
  EXPECT_FALSE(blocked);

  v->files(5)[2]->being_compacted = true;  // file 13
  EXPECT_EQ(PickRangeCompaction(*v, Options(), 4, &c_key, &e_key, &blocked), nullptr);
  EXPECT_TRUE(blocked);
}

TEST(PickRangeCompactionTest, L0GoesToTheBaseLevelAndTheLastLevelIntoItself) {
  std::array<FileList, kNumLevels> levels;
  levels[0] = {File(1, "a", "c", kMiB), File(2, "m", "n", kMiB)};
  levels[6] = {File(3, "a", "f", 500 * kMiB), File(4, "g", "z", 500 * kMiB)};
  auto v = MakeVersion(levels);
  const std::string b_key = "b";
  auto c = PickRangeCompaction(*v, Options(), 0, &b_key, &b_key);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->output_level(), 4);
  EXPECT_THAT(Numbers(c->inputs(0)), ElementsAre(1));

  c = PickRangeCompaction(*v, Options(), 6, &b_key, nullptr);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level(), 6);
  EXPECT_EQ(c->output_level(), 6);
  EXPECT_THAT(Numbers(c->inputs(0)), ElementsAre(3, 4));
  EXPECT_THAT(c->inputs(1), IsEmpty());
  EXPECT_FALSE(c->IsTrivialMove());

  // A manual compaction into the last level rewrites, to drop what it can.
  levels[0].clear();
  levels[5] = {File(5, "a", "b", 3 * kMiB)};
  levels[6] = {File(4, "g", "z", 500 * kMiB)};
  c = PickRangeCompaction(*MakeVersion(levels), Options(), 5, nullptr, nullptr);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->IsTrivialMove());

  v->files(0)[0]->being_compacted = true;  // file 2: an L0 compaction runs
  bool blocked = false;
  EXPECT_EQ(PickRangeCompaction(*v, Options(), 0, &b_key, &b_key, &blocked), nullptr);
  EXPECT_TRUE(blocked);
}

TEST(CompactionTest, AddInputDeletionsRemovesBothLevels) {
  auto v = MakeVersion(OverlapRatioTree());
  const std::string c_key = "c", e_key = "e";
  auto c = PickRangeCompaction(*v, Options(), 4, &c_key, &e_key);
  ASSERT_NE(c, nullptr);
  VersionEdit edit;
  c->AddInputDeletions(&edit);
  EXPECT_THAT(edit.deleted_files(), ElementsAre(std::pair<int, uint64_t>(4, 2),
                                                std::pair<int, uint64_t>(4, 3),
                                                std::pair<int, uint64_t>(5, 12),
                                                std::pair<int, uint64_t>(5, 13)));
  EXPECT_THAT(c->DebugString(), ::testing::HasSubstr("L4 -> L5 (manual): #2 #3 + #12 #13"));
}

TEST(PendingCompactionBytesTest, SumsExcessTimesFanOut) {
  std::array<FileList, kNumLevels> levels;
  levels[6] = {File(1, "a", "z", 1000 * kMiB)};
  levels[5] = {File(2, "a", "z", 40 * kMiB)};
  levels[4] = {File(3, "a", "z", 10 * kMiB)};
  EXPECT_EQ(EstimatePendingCompactionBytes(*MakeVersion(levels), Options()), 0u);

  // L4: 20 MiB against 10: 10 MiB excess, each rewriting 2 bytes of L5.
  levels[4].push_back(File(4, "a", "z", 10 * kMiB));
  EXPECT_EQ(EstimatePendingCompactionBytes(*MakeVersion(levels), Options()), 30 * kMiB);

  // L0 at its trigger adds its bytes and flows into L4.
  for (int i = 10; i < 14; ++i) levels[0].push_back(File(i, "a", "z", 2 * kMiB));
  // L0 8 MiB; L4 28 MiB: 18 MiB excess * (40/28 + 1).
  const uint64_t expected = 8 * kMiB + static_cast<uint64_t>(18.0 * kMiB * (40.0 / 28.0 + 1));
  EXPECT_EQ(EstimatePendingCompactionBytes(*MakeVersion(levels), Options()), expected);
}

}  // namespace
}  // namespace cairn::lsm
