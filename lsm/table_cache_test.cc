// Tests for TableCache: tables are opened once and reused, bounded by
// max_open_files, forgotten by Evict, kept alive by their users, and open
// errors are reported without being cached.
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "io/fd_budget.h"
#include "io/memory_file_system.h"
#include "lsm/block_cache.h"
#include "lsm/dbformat.h"
#include "lsm/filename.h"
#include "lsm/read_counters.h"
#include "lsm/table_builder.h"
#include "lsm/table_cache.h"

namespace cairn::lsm {
namespace {

constexpr char kDb[] = "/db";

class TableCacheTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs_.CreateDir(kDb).ok()); }

  // Writes table `number` holding keys "<number>-<i>" for i < n; returns its size.
  uint64_t MakeTable(uint64_t number, int n = 50) {
    auto file = fs_.NewWritableFile(TableFileName(kDb, number), {});
    EXPECT_TRUE(file.ok()) << file.status();
    TableBuilder builder(options_, file->get());
    for (int i = 0; i < n; ++i) {
      std::string key;
      AppendInternalKey(&key, absl::StrFormat("%d-%04d", number, i), 10, ValueType::kValue);
      EXPECT_TRUE(builder.Add(key, absl::StrFormat("value-%d-%d", number, i)).ok());
    }
    EXPECT_TRUE(builder.Finish().ok());
    EXPECT_TRUE((*file)->Close().ok());
    return builder.FileSize();
  }

  std::unique_ptr<TableCache> NewCache(size_t max_open_files = 1000) {
    return std::make_unique<TableCache>(&fs_, kDb, options_, &block_cache_, &counters_,
                                        max_open_files);
  }

  io::MemoryFileSystem fs_;
  TableOptions options_;
  BlockCache block_cache_{1 << 20};
  ReadCounters counters_;
};

TEST_F(TableCacheTest, FindTableReusesTheOpenTable) {
  const uint64_t size = MakeTable(1);
  auto cache = NewCache();
  auto first = cache->FindTable(1, size);
  ASSERT_TRUE(first.ok()) << first.status();
  const uint64_t reads = fs_.stats().Get(io::IoCategory::kTable).read_ops;
  EXPECT_GT(reads, 0u);  // opened for category kTable
  auto second = cache->FindTable(1, size);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ(fs_.stats().Get(io::IoCategory::kTable).read_ops, reads);  // no reopen
  EXPECT_EQ(cache->open_tables(), 1u);
  EXPECT_EQ((*first)->file_number(), 1u);
}

TEST_F(TableCacheTest, GetReadsThroughTheCachedTable) {
  const uint64_t size = MakeTable(3);
  auto cache = NewCache();
  TableGetResult r;
  ASSERT_TRUE(cache->Get({}, 3, size, MakeLookupKey("3-0007", kMaxSequenceNumber), &r).ok());
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.value, "value-3-7");
  ASSERT_TRUE(cache->Get({}, 3, size, MakeLookupKey("3-0007", 9), &r).ok());
  EXPECT_FALSE(r.found);  // written at sequence 10
  ASSERT_TRUE(cache->Get({}, 3, size, MakeLookupKey("3-9999", kMaxSequenceNumber), &r).ok());
  EXPECT_FALSE(r.found);
  EXPECT_EQ(counters_.bloom_probes, 3u);
}

TEST_F(TableCacheTest, EvictForgetsTheTableButUsersKeepIt) {
  const uint64_t size = MakeTable(2);
  auto cache = NewCache();
  auto held = cache->FindTable(2, size);
  ASSERT_TRUE(held.ok());
  auto it = cache->NewIterator({}, 2, size);
  cache->Evict(2);
  cache->Evict(99);  // unknown: no effect
  EXPECT_EQ(cache->open_tables(), 0u);
  // The iterator and the holder still read the evicted table.
  int n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  EXPECT_EQ(n, 50);
  EXPECT_TRUE(it->status().ok());
  EXPECT_EQ((*held)->num_entries(), 50u);
  auto reopened = cache->FindTable(2, size);
  ASSERT_TRUE(reopened.ok());
  EXPECT_NE(reopened->get(), held->get());
}

TEST_F(TableCacheTest, IteratorOutlivesTheCache) {
  const uint64_t size = MakeTable(4);
  auto cache = NewCache();
  auto it = cache->NewIterator({}, 4, size);
  cache.reset();
  it->SeekToLast();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "value-4-49");
}

TEST_F(TableCacheTest, LeastRecentlyUsedTableIsClosedPastTheLimit) {
  const uint64_t s1 = MakeTable(1), s2 = MakeTable(2), s3 = MakeTable(3);
  auto cache = NewCache(/*max_open_files=*/2);
  auto t1 = cache->FindTable(1, s1);
  auto t2 = cache->FindTable(2, s2);
  ASSERT_TRUE(t1.ok() && t2.ok());
  ASSERT_TRUE(cache->FindTable(1, s1).ok());  // 2 is now least recently used
  auto t3 = cache->FindTable(3, s3);
  ASSERT_TRUE(t3.ok());
  EXPECT_EQ(cache->open_tables(), 2u);
  auto again1 = cache->FindTable(1, s1);
  auto again2 = cache->FindTable(2, s2);
  ASSERT_TRUE(again1.ok() && again2.ok());
  EXPECT_EQ(again1->get(), t1->get());  // still cached
  EXPECT_NE(again2->get(), t2->get());  // was closed, opened afresh
}

TEST_F(TableCacheTest, MissingFileIsDataLossNamingItAndNotCached) {
  // A version lists the table: a missing file is lost data, never an
  // absent key.
  auto cache = NewCache();
  auto missing = cache->FindTable(5, 1000);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "000005.sst")) << missing.status();
  auto it = cache->NewIterator({}, 5, 1000);
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss);
  TableGetResult r;
  EXPECT_EQ(cache->Get({}, 5, 1000, MakeLookupKey("k", 1), &r).code(),
            absl::StatusCode::kDataLoss);
  // Once the file exists the next call opens it.
  const uint64_t size = MakeTable(5);
  EXPECT_TRUE(cache->FindTable(5, size).ok());
}

TEST_F(TableCacheTest, CorruptTableIsDataLossNamingTheFile) {
  const uint64_t size = MakeTable(6);
  auto bytes = fs_.ReadFileToString(TableFileName(kDb, 6));
  ASSERT_TRUE(bytes.ok());
  (*bytes)[size - 1] ^= 0x20;  // magic
  ASSERT_TRUE(fs_.WriteFileFromString(TableFileName(kDb, 6), *bytes).ok());
  auto cache = NewCache();
  auto table = cache->FindTable(6, size);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(table.status().message().find("000006.sst"), absl::string_view::npos);
  EXPECT_EQ(cache->open_tables(), 0u);
}

TEST_F(TableCacheTest, TablesShareTheBlockCache) {
  const uint64_t s1 = MakeTable(1), s2 = MakeTable(2);
  auto cache = NewCache();
  TableGetResult r;
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(cache->Get({}, 1, s1, MakeLookupKey("1-0001", kMaxSequenceNumber), &r).ok());
    ASSERT_TRUE(cache->Get({}, 2, s2, MakeLookupKey("2-0001", kMaxSequenceNumber), &r).ok());
  }
  EXPECT_EQ(counters_.block_cache_misses, 2u);
  EXPECT_EQ(counters_.block_cache_hits, 2u);
  EXPECT_EQ(block_cache_.entries(), 2u);
}

// With a budget shared with the segment readers, tables held past the bound
// count against it, and a spent budget closes idle tables (an idle segment
// reader, through its reclaimer) before it fails an open.
TEST_F(TableCacheTest, TablesDrawFromTheBudgetAndIdleOnesCloseForNewOpens) {
  const uint64_t size1 = MakeTable(1), size2 = MakeTable(2), size3 = MakeTable(3);
  auto budget = std::make_shared<io::FdBudget>(2, absl::ZeroDuration());
  TableCache cache(&fs_, kDb, options_, &block_cache_, &counters_, /*max_open_files=*/1, budget);
  auto one = cache.FindTable(1, size1);
  auto two = cache.FindTable(2, size2);  // 1 leaves the cache but is held
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_EQ(cache.open_tables(), 1u);
  EXPECT_EQ(budget->in_use(), 2u);
  // Both held: 3 cannot open.
  auto three = cache.FindTable(3, size3);
  EXPECT_TRUE(io::IsFdShortage(three.status())) << three.status();
  two->reset();  // 2 idle in the cache: closes for 3
  three = cache.FindTable(3, size3);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(budget->in_use(), 2u);
  one->reset();
  EXPECT_EQ(budget->in_use(), 1u);
  // A failed open gives its unit back.
  EXPECT_FALSE(cache.FindTable(9, 100).ok());
  EXPECT_EQ(budget->in_use(), 1u);
}

}  // namespace
}  // namespace cairn::lsm
