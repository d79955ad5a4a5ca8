// Tests for batched seeks (lsm/seek_batch.h): a merged iterator given a
// file system reads the first block of every sorted run in one batch (L0
// tables and a level alike), finds the same entries as children seeking in
// turn, takes cached blocks without a read, honours fill_cache, and turns a
// damaged block into DataLoss for that seek, naming the file and offset.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "lsm/block_cache.h"
#include "lsm/dbformat.h"
#include "lsm/filename.h"
#include "lsm/level_iterator.h"
#include "lsm/merging_iterator.h"
#include "lsm/read_counters.h"
#include "lsm/seek_batch.h"
#include "lsm/table.h"
#include "lsm/table_builder.h"
#include "lsm/table_cache.h"

namespace cairn::lsm {
namespace {

using Model = std::map<std::string, std::string, InternalKeyLess>;
using testing::HasSubstr;

constexpr char kDb[] = "/db";

std::string UserKey(int i) { return absl::StrFormat("key%07d", i); }

std::string Key(int i) {
  std::string k;
  AppendInternalKey(&k, UserKey(i), 1, ValueType::kValue);
  return k;
}

// A memory file system that counts the batches of reads across files.
class CountingFileSystem : public io::MemoryFileSystem {
 public:
  absl::Status MultiReadFiles(absl::Span<const io::FileReadRequest> requests) override {
    ++batches;
    requests_read += requests.size();
    std::vector<io::FileReadRequest> pass;
    for (const io::FileReadRequest& r : requests) {
      if (!fail_path.empty() && absl::StrContains(r.file->path(), fail_path)) {
        r.request->status = absl::UnavailableError(r.file->path() + ": injected read error");
      } else {
        pass.push_back(r);
      }
    }
    return FileSystem::MultiReadFiles(pass);
  }
  int batches = 0;
  size_t requests_read = 0;
  std::string fail_path;  // batched reads of files whose path holds it fail
};

class SeekBatchTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs_.CreateDir(kDb).ok());
    options_.block_size = 1024;
    options_.compress = false;
  }

  // Table number holding every key i in [begin, end) with i % mod == rem.
  FileMetaData Build(uint64_t number, int begin, int end, int mod, int rem) {
    auto file = fs_.NewWritableFile(TableFileName(kDb, number), {});
    EXPECT_TRUE(file.ok());
    TableBuilder builder(options_, file->get());
    FileMetaData meta;
    meta.number = number;
    for (int i = begin; i < end; ++i) {
      if (i % mod != rem) continue;
      const std::string value(100, static_cast<char>('a' + i % 26));
      EXPECT_TRUE(builder.Add(Key(i), value).ok());
      model_[Key(i)] = value;
      if (meta.smallest.empty()) meta.smallest = Key(i);
      meta.largest = Key(i);
    }
    EXPECT_TRUE(builder.Finish().ok());
    EXPECT_TRUE((*file)->Close().ok());
    meta.file_size = builder.FileSize();
    return meta;
  }

  // Three sorted runs over keys 0..2999: two tables as in L0 (keys 0 and
  // 1 mod 3) and a level of two tables (keys 2 mod 3, split at 1500).
  void BuildRuns() {
    Build(1, 0, 3000, 3, 0);
    Build(2, 0, 3000, 3, 1);
    level_ = {std::make_shared<FileMetaData>(Build(3, 0, 1500, 3, 2)),
              std::make_shared<FileMetaData>(Build(4, 1500, 3000, 3, 2))};
  }

  std::unique_ptr<InternalIterator> NewMerged(const TableReadOptions& ro, io::FileSystem* fs) {
    std::vector<std::unique_ptr<InternalIterator>> children;
    const FileMetaData f1 = *FileOf(1), f2 = *FileOf(2);
    children.push_back(cache_.NewIterator(ro, 1, f1.file_size));
    children.push_back(cache_.NewIterator(ro, 2, f2.file_size));
    children.push_back(NewLevelIterator(ro, &cache_, level_));
    return NewMergingIterator(std::move(children), fs);
  }

  std::shared_ptr<FileMetaData> FileOf(uint64_t number) {
    auto file = std::make_shared<FileMetaData>();
    file->number = number;
    file->file_size = *fs_.GetFileSize(TableFileName(kDb, number));
    return file;
  }

  // Opens every table (so that the counts below see only data blocks) and
  // zeroes the counters.
  void OpenAll() {
    for (uint64_t n = 1; n <= 4; ++n) {
      ASSERT_TRUE(cache_.FindTable(n, *fs_.GetFileSize(TableFileName(kDb, n))).ok());
    }
    fs_.batches = 0;
    fs_.requests_read = 0;
    counters_.block_reads = 0;
    counters_.block_cache_hits = 0;
    counters_.block_cache_misses = 0;
  }

  // Table number, open.
  std::shared_ptr<Table> TableOf(uint64_t number) {
    auto table = cache_.FindTable(number, *fs_.GetFileSize(TableFileName(kDb, number)));
    EXPECT_TRUE(table.ok()) << table.status();
    return table.ok() ? *table : nullptr;
  }

  // Seeks it to user key i and checks the next n entries against the model.
  void SeekAndCheck(InternalIterator* it, int i, int n) {
    it->Seek(MakeLookupKey(UserKey(i), kMaxSequenceNumber));
    auto m = model_.lower_bound(Key(i));
    for (int k = 0; k < n && m != model_.end(); ++k, ++m) {
      ASSERT_TRUE(it->Valid()) << it->status();
      ASSERT_EQ(it->key(), m->first);
      ASSERT_EQ(it->value(), m->second);
      it->Next();
    }
    EXPECT_TRUE(it->status().ok()) << it->status();
  }

  CountingFileSystem fs_;
  TableOptions options_;
  Model model_;
  std::vector<std::shared_ptr<FileMetaData>> level_;
  BlockCache block_cache_{size_t{8} << 20};
  ReadCounters counters_;
  TableCache cache_{&fs_, kDb, options_, &block_cache_, &counters_, 100};
};

TEST_F(SeekBatchTest, ASeekReadsTheFirstBlockOfEveryRunInOneBatch) {
  BuildRuns();
  OpenAll();
  auto it = NewMerged(TableReadOptions{}, &fs_);
  it->Seek(MakeLookupKey(UserKey(2000), kMaxSequenceNumber));
  EXPECT_EQ(fs_.batches, 1);
  EXPECT_EQ(fs_.requests_read, 3u);  // both L0 tables and the level's second table
  EXPECT_EQ(counters_.block_reads.load(), 3u);
  EXPECT_EQ(counters_.block_cache_misses.load(), 3u);
  ASSERT_TRUE(it->Valid()) << it->status();
  EXPECT_EQ(it->key(), Key(2000));
  EXPECT_EQ(block_cache_.entries(), 3u);
}

TEST_F(SeekBatchTest, BatchedSeeksFindWhatSeeksInTurnFind) {
  BuildRuns();
  OpenAll();
  auto batched = NewMerged(TableReadOptions{}, &fs_);
  auto in_turn = NewMerged(TableReadOptions{}, nullptr);
  for (int i : {0, 1, 2, 499, 1499, 1500, 1501, 2998, 2999}) {
    SCOPED_TRACE(i);
    SeekAndCheck(batched.get(), i, 40);
    SeekAndCheck(in_turn.get(), i, 40);
  }
  // Past the last key every run is at its end.
  batched->Seek(MakeLookupKey(UserKey(3000), kMaxSequenceNumber));
  EXPECT_FALSE(batched->Valid());
  EXPECT_TRUE(batched->status().ok());
  EXPECT_GT(fs_.batches, 0);
}

TEST_F(SeekBatchTest, CachedBlocksAreTakenWithoutARead) {
  BuildRuns();
  OpenAll();
  auto it = NewMerged(TableReadOptions{}, &fs_);
  SeekAndCheck(it.get(), 700, 30);
  const uint64_t reads = counters_.block_reads.load();
  const uint64_t hits = counters_.block_cache_hits.load();
  // A second iterator (no block of its own yet) seeks to the same place.
  auto again = NewMerged(TableReadOptions{}, &fs_);
  SeekAndCheck(again.get(), 700, 30);
  EXPECT_EQ(counters_.block_reads.load(), reads);
  EXPECT_EQ(counters_.block_cache_hits.load() - hits, reads);  // every block, from the cache
  EXPECT_EQ(fs_.batches, 1);  // nothing left to read the second time
}

TEST_F(SeekBatchTest, FillCacheFalseLeavesTheCacheAlone) {
  BuildRuns();
  OpenAll();
  TableReadOptions ro;
  ro.fill_cache = false;
  auto it = NewMerged(ro, &fs_);
  SeekAndCheck(it.get(), 1200, 20);
  EXPECT_EQ(fs_.requests_read, 3u);
  EXPECT_EQ(block_cache_.entries(), 0u);
}

TEST_F(SeekBatchTest, ASeekOnTheBlockAnIteratorHoldsReadsNothing) {
  BuildRuns();
  OpenAll();
  auto it = NewMerged(TableReadOptions{.fill_cache = false}, &fs_);
  SeekAndCheck(it.get(), 900, 1);
  const size_t read = fs_.requests_read;
  SeekAndCheck(it.get(), 901, 1);  // the same block in every run
  EXPECT_EQ(fs_.requests_read, read);
}

TEST_F(SeekBatchTest, ADamagedBlockFailsTheSeekWithDataLossNamingTheFile) {
  BuildRuns();
  // Damage the data block of table 2 that holds key 1000.
  std::shared_ptr<Table> table = TableOf(2);
  ASSERT_NE(table, nullptr);
  const uint64_t offset = table->ApproximateOffsetOf(Key(1000));
  auto bytes = fs_.ReadFileToString(TableFileName(kDb, 2));
  ASSERT_TRUE(bytes.ok());
  (*bytes)[offset + 10] ^= 0x40;
  ASSERT_TRUE(fs_.WriteFileFromString(TableFileName(kDb, 2), *bytes).ok());
  OpenAll();

  auto it = NewMerged(TableReadOptions{}, &fs_);
  it->Seek(MakeLookupKey(UserKey(1000), kMaxSequenceNumber));
  EXPECT_EQ(fs_.batches, 1);
  EXPECT_FALSE(it->Valid());
  EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(it->status().message()), HasSubstr("000002.sst"));
  EXPECT_THAT(std::string(it->status().message()),
              HasSubstr(absl::StrFormat("offset %d", offset)));
  // The damaged block never reaches the cache; the two good ones do.
  EXPECT_EQ(block_cache_.entries(), 2u);

  // A seek that does not touch the damaged block still works.
  auto fresh = NewMerged(TableReadOptions{}, &fs_);
  SeekAndCheck(fresh.get(), 2500, 10);
}

TEST_F(SeekBatchTest, AReadErrorFailsThatSeekAndNothingElse) {
  BuildRuns();
  OpenAll();
  fs_.fail_path = "000004.sst";
  auto it = NewMerged(TableReadOptions{}, &fs_);
  it->Seek(MakeLookupKey(UserKey(2000), kMaxSequenceNumber));
  EXPECT_FALSE(it->Valid());
  EXPECT_EQ(it->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(it->status().message()), HasSubstr("000004.sst"));
  EXPECT_EQ(block_cache_.entries(), 2u);
  // Once the file reads again, so does a new iterator.
  fs_.fail_path.clear();
  auto fresh = NewMerged(TableReadOptions{}, &fs_);
  SeekAndCheck(fresh.get(), 2000, 30);
}

TEST_F(SeekBatchTest, AHandleOutsideTheDataBlocksFailsWithoutARead) {
  BuildRuns();
  OpenAll();
  std::shared_ptr<Table> table = TableOf(4);
  ASSERT_NE(table, nullptr);
  SeekBatch batch;
  BlockFetch* bad = batch.Add(table.get(), BlockHandle{table->file_size(), 10});
  EXPECT_EQ(bad->status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(batch.reads(), 0u);
  batch.Run(&fs_);
  EXPECT_EQ(fs_.batches, 0);  // nothing to read
  EXPECT_EQ(bad->block, nullptr);
}

TEST_F(SeekBatchTest, ABlockAddedTwiceIsReadOnceAndCachedForTheLookupsAfter) {
  BuildRuns();
  OpenAll();
  std::shared_ptr<Table> table = TableOf(1);
  ASSERT_NE(table, nullptr);
  SeekBatch batch;
  const std::string key = MakeLookupKey(UserKey(300), kMaxSequenceNumber);
  EXPECT_TRUE(table->AddGetRead(TableReadOptions{}, key, &batch));
  EXPECT_TRUE(table->AddGetRead(TableReadOptions{}, key, &batch));
  EXPECT_EQ(batch.size(), 1u);
  // Key 301 is not in table 1 (keys 0 mod 3): its filter rules it out.
  EXPECT_FALSE(
      table->AddGetRead(TableReadOptions{}, MakeLookupKey(UserKey(301), 0), &batch));
  batch.Run(&fs_);
  batch.CacheFetched();
  EXPECT_EQ(fs_.requests_read, 1u);
  EXPECT_EQ(block_cache_.entries(), 1u);
  TableGetResult result;
  ASSERT_TRUE(table->Get(TableReadOptions{}, key, &result).ok());
  EXPECT_TRUE(result.found);
  EXPECT_EQ(counters_.block_reads.load(), 1u);  // the Get found the block cached
}

// The first pass of a batch of lookups: from the cache alone, a lookup
// that needs a block the cache lacks reads nothing and says so.
TEST_F(SeekBatchTest, ACacheOnlyGetReadsNothingAndSaysWhenItNeedsABlock) {
  BuildRuns();
  OpenAll();
  std::shared_ptr<Table> table = TableOf(1);
  ASSERT_NE(table, nullptr);
  TableReadOptions cache_only;
  cache_only.cache_only = true;
  const std::string key = MakeLookupKey(UserKey(300), kMaxSequenceNumber);
  TableGetResult result;
  ASSERT_TRUE(table->Get(cache_only, key, &result).ok());
  EXPECT_TRUE(result.needs_read);
  EXPECT_FALSE(result.found);
  EXPECT_EQ(counters_.block_reads.load(), 0u);
  // A key the filter rules out needs no block at all.
  ASSERT_TRUE(table->Get(cache_only, MakeLookupKey(UserKey(301), 0), &result).ok());
  EXPECT_FALSE(result.needs_read);
  EXPECT_FALSE(result.found);
  // Once a full lookup has cached the block, the cache alone answers.
  ASSERT_TRUE(table->Get(TableReadOptions{}, key, &result).ok());
  ASSERT_TRUE(result.found);
  ASSERT_TRUE(table->Get(cache_only, key, &result).ok());
  EXPECT_FALSE(result.needs_read);
  EXPECT_TRUE(result.found);
  EXPECT_EQ(counters_.block_reads.load(), 1u);
}

}  // namespace
}  // namespace cairn::lsm
