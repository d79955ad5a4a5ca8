#include "lsm/level_iterator.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "lsm/filename.h"
#include "lsm/table_builder.h"
#include "lsm/table_cache.h"

namespace cairn::lsm {
namespace {

constexpr char kDb[] = "/db";

std::string Key(int i) { return absl::StrFormat("k%03d", i); }

std::string IKey(int i) {
  std::string k;
  AppendInternalKey(&k, Key(i), 7, ValueType::kValue);
  return k;
}

class LevelIteratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs_.CreateDir(kDb).ok());
    // Five files holding keys 0..4, 10..14, 20..24, 30..34 and 40..44.
    for (int f = 0; f < 5; ++f) files_.push_back(Table(100 + f, 10 * f, 10 * f + 4));
  }

  std::shared_ptr<FileMetaData> Table(uint64_t number, int lo, int hi) {
    auto file = fs_.NewWritableFile(TableFileName(kDb, number), {});
    EXPECT_TRUE(file.ok());
    TableBuilder builder(TableOptions{}, file->get());
    for (int i = lo; i <= hi; ++i) {
      EXPECT_TRUE(builder.Add(IKey(i), absl::StrFormat("v%d", i)).ok());
    }
    EXPECT_TRUE(builder.Finish().ok());
    EXPECT_TRUE((*file)->Close().ok());
    auto meta = std::make_shared<FileMetaData>();
    meta->number = number;
    meta->file_size = builder.FileSize();
    meta->smallest = builder.smallest_key();
    meta->largest = builder.largest_key();
    return meta;
  }

  std::unique_ptr<InternalIterator> NewIter() {
    return NewLevelIterator(TableReadOptions{}, &cache_, files_);
  }

  // The user-key numbers from the current position to the end, forwards or
  // backwards.
  static std::vector<int> Drain(InternalIterator* it, bool forward) {
    std::vector<int> out;
    for (; it->Valid(); forward ? it->Next() : it->Prev()) {
      out.push_back(std::stoi(std::string(ExtractUserKey(it->key()).substr(1))));
      EXPECT_EQ(it->value(), absl::StrFormat("v%d", out.back()));
    }
    EXPECT_TRUE(it->status().ok()) << it->status();
    return out;
  }

  static std::vector<int> Keys(std::initializer_list<std::pair<int, int>> ranges,
                               bool reverse = false) {
    std::vector<int> out;
    for (auto [lo, hi] : ranges) {
      for (int i = lo; i <= hi; ++i) out.push_back(i);
    }
    if (reverse) std::reverse(out.begin(), out.end());
    return out;
  }

  io::MemoryFileSystem fs_;
  TableCache cache_{&fs_, kDb, TableOptions{}, nullptr, nullptr};
  std::vector<std::shared_ptr<FileMetaData>> files_;
};

TEST_F(LevelIteratorTest, WalksEveryFileForwardsAndBackwards) {
  auto it = NewIter();
  EXPECT_FALSE(it->Valid());
  it->SeekToFirst();
  EXPECT_EQ(Drain(it.get(), true), Keys({{0, 4}, {10, 14}, {20, 24}, {30, 34}, {40, 44}}));
  it->SeekToLast();
  EXPECT_EQ(Drain(it.get(), false),
            Keys({{0, 4}, {10, 14}, {20, 24}, {30, 34}, {40, 44}}, /*reverse=*/true));
}

TEST_F(LevelIteratorTest, OpensFilesOnlyWhenReached) {
  auto it = NewIter();
  EXPECT_EQ(cache_.open_tables(), 0u);
  it->Seek(IKey(22));
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), IKey(22));
  EXPECT_EQ(cache_.open_tables(), 1u);
  for (int i = 0; i < 3; ++i) it->Next();  // 23, 24, then into the next file.
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), IKey(30));
  EXPECT_EQ(cache_.open_tables(), 2u);
}

TEST_F(LevelIteratorTest, SeekLandsOnTheFirstKeyAtOrAfterTheTarget) {
  auto it = NewIter();
  it->Seek(IKey(12));
  EXPECT_EQ(Drain(it.get(), true), Keys({{12, 14}, {20, 24}, {30, 34}, {40, 44}}));
  it->Seek(IKey(16));  // Between files: the next file's first key.
  EXPECT_EQ(Drain(it.get(), true), Keys({{20, 24}, {30, 34}, {40, 44}}));
  std::string before_all;
  AppendInternalKey(&before_all, "a", 1, ValueType::kValue);
  it->Seek(before_all);
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), IKey(0));
  it->Seek(IKey(45));
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
  // Seeking back into a file already open, then crossing files backwards.
  it->Seek(IKey(41));
  it->Prev();
  it->Prev();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), IKey(34));
}

TEST_F(LevelIteratorTest, SeekForPrevLandsOnTheLastKeyAtOrBeforeTheTarget) {
  auto it = NewIter();
  it->SeekForPrev(IKey(22));
  EXPECT_EQ(Drain(it.get(), false), Keys({{0, 4}, {10, 14}, {20, 22}}, /*reverse=*/true));
  it->SeekForPrev(IKey(17));  // Between files: the previous file's last key.
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), IKey(14));
  it->SeekForPrev(IKey(99));
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), IKey(44));
  std::string before_all;
  AppendInternalKey(&before_all, "a", 1, ValueType::kValue);
  it->SeekForPrev(before_all);
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

TEST_F(LevelIteratorTest, EmptyLevelIsNeverValid) {
  auto it = NewLevelIterator(TableReadOptions{}, &cache_, {});
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  it->SeekToLast();
  EXPECT_FALSE(it->Valid());
  it->Seek(IKey(1));
  EXPECT_FALSE(it->Valid());
  it->SeekForPrev(IKey(1));
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

TEST_F(LevelIteratorTest, AFileThatDoesNotOpenStopsTheWalkWithItsError) {
  ASSERT_TRUE(fs_.RemoveFile(TableFileName(kDb, 102)).ok());
  auto it = NewIter();
  it->SeekToFirst();
  std::vector<int> seen;
  for (; it->Valid(); it->Next()) seen.push_back(0);
  EXPECT_EQ(seen.size(), 10u);  // Files 100 and 101, then the missing one.
  EXPECT_FALSE(it->status().ok());
  it->Seek(IKey(22));
  EXPECT_FALSE(it->Valid());
  EXPECT_FALSE(it->status().ok());
}

TEST_F(LevelIteratorTest, FindFileBinarySearchesLargestKeys) {
  EXPECT_EQ(FindFile(files_, IKey(0)), 0u);
  EXPECT_EQ(FindFile(files_, IKey(4)), 0u);
  EXPECT_EQ(FindFile(files_, IKey(5)), 1u);
  EXPECT_EQ(FindFile(files_, IKey(44)), 4u);
  EXPECT_EQ(FindFile(files_, IKey(45)), 5u);
  EXPECT_EQ(FindFile({}, IKey(1)), 0u);
}

}  // namespace
}  // namespace cairn::lsm
