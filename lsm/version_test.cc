#include "lsm/version.h"

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "lsm/filename.h"
#include "lsm/merging_iterator.h"
#include "lsm/read_counters.h"
#include "lsm/table_builder.h"
#include "lsm/table_cache.h"

namespace cairn::lsm {
namespace {

using ::testing::HasSubstr;

constexpr char kDb[] = "/db";

struct Entry {
  std::string user_key;
  SequenceNumber seq;
  ValueType type;
  std::string value;
};

std::string IKey(std::string_view user_key, SequenceNumber seq,
                 ValueType type = ValueType::kValue) {
  std::string k;
  AppendInternalKey(&k, user_key, seq, type);
  return k;
}

class VersionTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs_.CreateDir(kDb).ok()); }

  // Writes table `number` holding entries and returns its metadata.
  std::shared_ptr<FileMetaData> Table(uint64_t number, std::vector<Entry> entries) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return CompareInternalKeys(IKey(a.user_key, a.seq, a.type),
                                 IKey(b.user_key, b.seq, b.type)) < 0;
    });
    auto file = fs_.NewWritableFile(TableFileName(kDb, number), {});
    EXPECT_TRUE(file.ok()) << file.status();
    TableBuilder builder(TableOptions{}, file->get());
    auto meta = std::make_shared<FileMetaData>();
    meta->number = number;
    meta->smallest_seq = kMaxSequenceNumber;
    for (const Entry& e : entries) {
      EXPECT_TRUE(builder.Add(IKey(e.user_key, e.seq, e.type), e.value).ok());
      meta->smallest_seq = std::min(meta->smallest_seq, e.seq);
      meta->largest_seq = std::max(meta->largest_seq, e.seq);
    }
    EXPECT_TRUE(builder.Finish().ok());
    EXPECT_TRUE((*file)->Close().ok());
    meta->file_size = builder.FileSize();
    meta->smallest = builder.smallest_key();
    meta->largest = builder.largest_key();
    meta->num_entries = builder.NumEntries();
    return meta;
  }

  // A table of keys lo..hi (printf "%s%03d" with prefix) at sequence seq.
  std::shared_ptr<FileMetaData> RangeTable(uint64_t number, int lo, int hi, SequenceNumber seq) {
    std::vector<Entry> entries;
    for (int i = lo; i <= hi; ++i) {
      entries.push_back({absl::StrFormat("k%03d", i), seq, ValueType::kValue,
                         absl::StrFormat("v%03d@%d", i, seq)});
    }
    return Table(number, std::move(entries));
  }

  absl::Status Get(const Version& v, std::string_view user_key, SequenceNumber snapshot,
                   TableGetResult* result) {
    return v.Get(TableReadOptions{}, &cache_, MakeLookupKey(user_key, snapshot), result);
  }

  io::MemoryFileSystem fs_;
  TableCache cache_{&fs_, kDb, TableOptions{}, nullptr, nullptr};
};

TEST_F(VersionTest, GetPrefersTheNewestL0File) {
  VersionEdit edit;
  edit.AddFile(0, *Table(10, {{"k", 5, ValueType::kValue, "old"}, {"m", 5, ValueType::kValue, "m5"}}));
  edit.AddFile(0, *Table(11, {{"k", 8, ValueType::kValue, "new"}}));
  edit.AddFile(0, *Table(12, {{"m", 9, ValueType::kDeletion, ""}}));
  edit.AddFile(1, *Table(5, {{"k", 2, ValueType::kValue, "oldest"}, {"q", 2, ValueType::kValue, "q2"}}));
  VersionBuilder builder(nullptr);
  ASSERT_TRUE(builder.Apply(edit).ok());
  auto v = builder.Build();
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ((*v)->files(0).size(), 3u);
  EXPECT_EQ((*v)->files(0)[0]->number, 12u);
  EXPECT_EQ((*v)->files(0)[2]->number, 10u);

  TableGetResult r;
  ASSERT_TRUE(Get(**v, "k", kMaxSequenceNumber, &r).ok());
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.value, "new");
  EXPECT_EQ(r.sequence, 8u);
  // At an older snapshot the newer file has nothing visible; the older one does.
  ASSERT_TRUE(Get(**v, "k", 7, &r).ok());
  EXPECT_EQ(r.value, "old");
  ASSERT_TRUE(Get(**v, "k", 4, &r).ok());
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.value, "oldest");
  ASSERT_TRUE(Get(**v, "k", 1, &r).ok());
  EXPECT_FALSE(r.found);
  // A newer deletion hides the value below it, and is itself the answer.
  ASSERT_TRUE(Get(**v, "m", kMaxSequenceNumber, &r).ok());
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.type, ValueType::kDeletion);
  ASSERT_TRUE(Get(**v, "m", 8, &r).ok());
  EXPECT_EQ(r.value, "m5");
  // Only in L1.
  ASSERT_TRUE(Get(**v, "q", kMaxSequenceNumber, &r).ok());
  EXPECT_EQ(r.value, "q2");
  ASSERT_TRUE(Get(**v, "zzz", kMaxSequenceNumber, &r).ok());
  EXPECT_FALSE(r.found);
}

TEST_F(VersionTest, GetOpensOnlyTheOneCandidateFilePerDeeperLevel) {
  VersionEdit edit;
  for (int i = 0; i < 20; ++i) edit.AddFile(2, *RangeTable(100 + i, 10 * i, 10 * i + 4, 3));
  VersionBuilder builder(nullptr);
  ASSERT_TRUE(builder.Apply(edit).ok());
  auto v = builder.Build();
  ASSERT_TRUE(v.ok()) << v.status();

  TableGetResult r;
  ASSERT_TRUE(Get(**v, "k123", kMaxSequenceNumber, &r).ok());
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.value, "v123@3");
  EXPECT_EQ(cache_.open_tables(), 1u);
  // In the gap between two files' ranges: no file is opened at all.
  ASSERT_TRUE(Get(**v, "k127", kMaxSequenceNumber, &r).ok());
  EXPECT_FALSE(r.found);
  EXPECT_EQ(cache_.open_tables(), 1u);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(Get(**v, absl::StrFormat("k%03d", i), kMaxSequenceNumber, &r).ok());
    EXPECT_EQ(r.found, i % 10 <= 4) << i;
  }
  EXPECT_EQ(cache_.open_tables(), 20u);
}

TEST_F(VersionTest, ExpectedHitsSkipOnlyTheDeepestLevelsFilter) {
  VersionEdit edit;
  edit.AddFile(0, *RangeTable(10, 0, 9, 20));
  edit.AddFile(2, *RangeTable(5, 0, 99, 3));
  edit.AddFile(6, *RangeTable(6, 0, 199, 1));
  VersionBuilder builder(nullptr);
  ASSERT_TRUE(builder.Apply(edit).ok());
  auto v = builder.Build();
  ASSERT_TRUE(v.ok()) << v.status();
  ReadCounters counters;
  TableCache cache(&fs_, kDb, TableOptions{}, nullptr, &counters);
  TableReadOptions hits;
  hits.expect_hits = true;
  auto get = [&](const TableReadOptions& ro, std::string_view key, TableGetResult* r) {
    return (*v)->Get(ro, &cache, MakeLookupKey(key, kMaxSequenceNumber), r);
  };
  TableGetResult r;
  // Only the deepest level holds k150: found without its filter.
  ASSERT_TRUE(get(hits, "k150", &r).ok());
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.value, "v150@1");
  EXPECT_EQ(counters.bloom_probes, 0u);
  // Shallower levels still consult theirs.
  ASSERT_TRUE(get(hits, "k050", &r).ok());
  EXPECT_EQ(r.value, "v050@3");
  EXPECT_EQ(counters.bloom_probes, 1u);
  ASSERT_TRUE(get(hits, "k005", &r).ok());
  EXPECT_EQ(r.value, "v005@20");
  EXPECT_EQ(counters.bloom_probes, 2u);
  // A key that is not there is still not found, through the L2 filter and
  // the deepest level's blocks.
  ASSERT_TRUE(get(hits, "k0505", &r).ok());
  EXPECT_FALSE(r.found);
  EXPECT_EQ(counters.bloom_probes, 3u);
  // Without the hint every level's filter is consulted.
  ASSERT_TRUE(get(TableReadOptions{}, "k150", &r).ok());
  EXPECT_TRUE(r.found);
  EXPECT_EQ(counters.bloom_probes, 4u);
}

TEST_F(VersionTest, GetFindsAUserKeySplitAcrossTwoFilesOfALevel) {
  // k@9 ends file 20; k@3 starts file 21.
  VersionEdit edit;
  edit.AddFile(1, *Table(20, {{"a", 1, ValueType::kValue, "a"}, {"k", 9, ValueType::kValue, "k9"}}));
  edit.AddFile(1, *Table(21, {{"k", 3, ValueType::kValue, "k3"}, {"z", 1, ValueType::kValue, "z"}}));
  VersionBuilder builder(nullptr);
  ASSERT_TRUE(builder.Apply(edit).ok());
  auto v = builder.Build();
  ASSERT_TRUE(v.ok()) << v.status();
  TableGetResult r;
  ASSERT_TRUE(Get(**v, "k", 10, &r).ok());
  EXPECT_EQ(r.value, "k9");
  ASSERT_TRUE(Get(**v, "k", 5, &r).ok());
  EXPECT_EQ(r.value, "k3");
}

TEST_F(VersionTest, GetReturnsTheErrorOfAMissingTable) {
  VersionEdit edit;
  FileMetaData ghost;
  ghost.number = 77;
  ghost.file_size = 1000;
  ghost.smallest = IKey("a", 1);
  ghost.largest = IKey("z", 1);
  edit.AddFile(3, ghost);
  VersionBuilder builder(nullptr);
  ASSERT_TRUE(builder.Apply(edit).ok());
  auto v = builder.Build();
  ASSERT_TRUE(v.ok());
  TableGetResult r;
  absl::Status s = Get(**v, "m", kMaxSequenceNumber, &r);
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(r.found);
  // Outside its range the file is not touched.
  EXPECT_TRUE(Get(**v, "zz", kMaxSequenceNumber, &r).ok());
}

TEST_F(VersionTest, AddIteratorsMergeToEveryEntryInOrder) {
  VersionEdit edit;
  edit.AddFile(0, *Table(30, {{"b", 20, ValueType::kValue, "b20"}}));
  edit.AddFile(0, *Table(31, {{"b", 21, ValueType::kDeletion, ""}, {"x", 21, ValueType::kValue, "x"}}));
  edit.AddFile(1, *RangeTable(10, 0, 2, 5));
  edit.AddFile(1, *RangeTable(11, 5, 7, 5));
  edit.AddFile(3, *RangeTable(12, 1, 6, 1));
  VersionBuilder builder(nullptr);
  ASSERT_TRUE(builder.Apply(edit).ok());
  auto v = builder.Build();
  ASSERT_TRUE(v.ok());

  std::vector<std::unique_ptr<InternalIterator>> iters;
  (*v)->AddIterators(TableReadOptions{}, &cache_, &iters);
  EXPECT_EQ(iters.size(), 4u);  // Two L0 files, L1, L3.
  EXPECT_EQ(cache_.open_tables(), 2u);  // Level iterators open lazily.
  auto merged = NewMergingIterator(std::move(iters));
  std::vector<std::string> keys;
  for (merged->SeekToFirst(); merged->Valid(); merged->Next()) {
    ParsedInternalKey p;
    ASSERT_TRUE(ParseInternalKey(merged->key(), &p));
    keys.push_back(absl::StrFormat("%s@%d", std::string(p.user_key), p.sequence));
  }
  ASSERT_TRUE(merged->status().ok());
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "b@21", "b@20", "k000@5", "k001@5", "k001@1", "k002@5", "k002@1",
                      "k003@1", "k004@1", "k005@5", "k005@1", "k006@5", "k006@1", "k007@5",
                      "x@21"}));
}

TEST_F(VersionTest, LevelStatsAndOverlapQueries) {
  VersionEdit edit;
  edit.AddFile(2, *RangeTable(40, 0, 9, 1));
  edit.AddFile(2, *RangeTable(41, 20, 29, 1));
  edit.AddFile(2, *RangeTable(42, 40, 49, 1));
  VersionBuilder builder(nullptr);
  ASSERT_TRUE(builder.Apply(edit).ok());
  auto v = builder.Build();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)->NumFiles(2), 3u);
  EXPECT_EQ((*v)->NumFiles(1), 0u);
  EXPECT_EQ((*v)->LevelBytes(2), (*v)->files(2)[0]->file_size + (*v)->files(2)[1]->file_size +
                                     (*v)->files(2)[2]->file_size);
  FileList inputs;
  (*v)->GetOverlappingInputs(2, "k009", "k020", &inputs);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0]->number, 40u);
  EXPECT_EQ(inputs[1]->number, 41u);
  inputs.clear();
  (*v)->GetOverlappingInputs(2, "k030", "k039", &inputs);
  EXPECT_TRUE(inputs.empty());
  EXPECT_THAT((*v)->DebugString(), HasSubstr("L2: 3 files"));
  EXPECT_THAT((*v)->DebugString(), HasSubstr("#41"));
}

TEST(VersionBuilderTest, CarriesFileObjectsAndChecksEdits) {
  auto file = [](uint64_t n, std::string_view lo, std::string_view hi) {
    FileMetaData f;
    f.number = n;
    f.file_size = 10;
    f.smallest = IKey(lo, 1);
    f.largest = IKey(hi, 1);
    return f;
  };
  VersionEdit first;
  first.AddFile(1, file(1, "a", "c"));
  first.AddFile(1, file(2, "d", "f"));
  VersionBuilder b0(nullptr);
  ASSERT_TRUE(b0.Apply(first).ok());
  auto v0 = b0.Build();
  ASSERT_TRUE(v0.ok());
  (*v0)->files(1)[0]->being_compacted = true;

  VersionEdit second;
  second.RemoveFile(1, 2);
  second.AddFile(2, file(2, "d", "f"));  // A move down keeps its number.
  VersionBuilder b1(v0->get());
  ASSERT_TRUE(b1.Apply(second).ok());
  auto v1 = b1.Build();
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ((*v1)->files(1)[0], (*v0)->files(1)[0]);  // Same object: flag kept.
  EXPECT_TRUE((*v1)->files(1)[0]->being_compacted);
  EXPECT_EQ((*v1)->NumFiles(2), 1u);

  VersionEdit dup;
  dup.AddFile(3, file(1, "x", "y"));
  VersionBuilder b2(v1->get());
  EXPECT_EQ(b2.Apply(dup).code(), absl::StatusCode::kInvalidArgument);
  VersionEdit wrong_level;
  wrong_level.RemoveFile(2, 1);
  VersionBuilder b3(v1->get());
  EXPECT_EQ(b3.Apply(wrong_level).code(), absl::StatusCode::kInvalidArgument);
  // Touching ranges (same user key, same sequence) overlap.
  VersionEdit touching;
  touching.AddFile(2, file(9, "f", "g"));
  VersionBuilder b4(v1->get());
  ASSERT_TRUE(b4.Apply(touching).ok());
  EXPECT_EQ(b4.Build().status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cairn::lsm
