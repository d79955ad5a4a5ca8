// Tests for BlockCache: lookups, LRU eviction by bytes, replacement, erase,
// the disabled cache, and blocks that outlive their eviction.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lsm/block.h"
#include "lsm/block_builder.h"
#include "lsm/block_cache.h"
#include "lsm/dbformat.h"

namespace cairn::lsm {
namespace {

std::shared_ptr<const Block> MakeBlock(std::string_view value) {
  BlockBuilder builder;
  std::string key;
  AppendInternalKey(&key, "k", 1, ValueType::kValue);
  builder.Add(key, value);
  auto block = Block::Create(std::string(builder.Finish()), "test");
  EXPECT_TRUE(block.ok());
  return *block;
}

TEST(BlockCacheTest, LookupFindsWhatWasInserted) {
  BlockCache cache(1 << 20);
  auto block = MakeBlock("v");
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);
  cache.Insert(1, 0, block, 100);
  EXPECT_EQ(cache.Lookup(1, 0), block);
  EXPECT_EQ(cache.Lookup(1, 1), nullptr);  // other offset
  EXPECT_EQ(cache.Lookup(2, 0), nullptr);  // other file
  EXPECT_EQ(cache.usage(), 100u);
  EXPECT_EQ(cache.entries(), 1u);
}

TEST(BlockCacheTest, EvictsLeastRecentlyUsedByBytes) {
  BlockCache cache(300, /*num_shard_bits=*/0);
  cache.Insert(1, 0, MakeBlock("a"), 100);
  cache.Insert(1, 1, MakeBlock("b"), 100);
  cache.Insert(1, 2, MakeBlock("c"), 100);
  EXPECT_EQ(cache.usage(), 300u);
  // Touch the oldest so the middle one becomes least recently used.
  EXPECT_NE(cache.Lookup(1, 0), nullptr);
  cache.Insert(1, 3, MakeBlock("d"), 150);  // needs 150 bytes: evicts 1 and then 2
  EXPECT_NE(cache.Lookup(1, 0), nullptr);
  EXPECT_EQ(cache.Lookup(1, 1), nullptr);
  EXPECT_EQ(cache.Lookup(1, 2), nullptr);
  EXPECT_NE(cache.Lookup(1, 3), nullptr);
  EXPECT_EQ(cache.usage(), 250u);
}

TEST(BlockCacheTest, UsageNeverExceedsCapacity) {
  BlockCache cache(10000);  // 16 shards of 625 bytes
  auto block = MakeBlock("x");
  for (uint64_t i = 0; i < 1000; ++i) {
    cache.Insert(i % 7, i, block, 50 + i % 100);
    ASSERT_LE(cache.usage(), 10000u);
  }
  EXPECT_GT(cache.usage(), 5000u);
}

TEST(BlockCacheTest, ReinsertReplacesAndRecharges) {
  BlockCache cache(1000, 0);
  auto first = MakeBlock("1"), second = MakeBlock("2");
  cache.Insert(5, 10, first, 400);
  cache.Insert(5, 10, second, 300);
  EXPECT_EQ(cache.Lookup(5, 10), second);
  EXPECT_EQ(cache.usage(), 300u);
  EXPECT_EQ(cache.entries(), 1u);
}

TEST(BlockCacheTest, EraseDropsTheEntry) {
  BlockCache cache(1000);
  cache.Insert(5, 10, MakeBlock("1"), 400);
  cache.Erase(5, 10);
  cache.Erase(5, 11);  // absent: no effect
  EXPECT_EQ(cache.Lookup(5, 10), nullptr);
  EXPECT_EQ(cache.usage(), 0u);
}

TEST(BlockCacheTest, ZeroCapacityCachesNothing) {
  BlockCache cache(0);
  cache.Insert(1, 0, MakeBlock("v"), 1);
  cache.Insert(1, 1, MakeBlock("v"), 0);
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);
  EXPECT_EQ(cache.Lookup(1, 1), nullptr);
  EXPECT_EQ(cache.usage(), 0u);
}

TEST(BlockCacheTest, BlockLargerThanAShardIsNotCached) {
  BlockCache cache(100, 0);
  cache.Insert(1, 0, MakeBlock("small"), 60);
  cache.Insert(1, 1, MakeBlock("huge"), 101);
  EXPECT_EQ(cache.Lookup(1, 1), nullptr);
  EXPECT_NE(cache.Lookup(1, 0), nullptr);  // and it evicted nothing
}

TEST(BlockCacheTest, EvictedBlockStaysAliveWhileHeld) {
  BlockCache cache(100, 0);
  cache.Insert(1, 0, MakeBlock("held"), 100);
  std::shared_ptr<const Block> held = cache.Lookup(1, 0);
  std::weak_ptr<const Block> watch = held;
  cache.Insert(1, 1, MakeBlock("other"), 100);  // evicts the held block
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);
  ASSERT_FALSE(watch.expired());
  auto it = held->NewIterator();
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "held");
  it.reset();
  held.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(BlockCacheTest, ConcurrentInsertsAndLookupsStayWithinCapacity) {
  BlockCache cache(64 * 1024);
  auto block = MakeBlock("shared");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 2000; ++i) {
        cache.Insert(t, i, block, 64);
        auto found = cache.Lookup(t, i / 2);
        if (found != nullptr) {
          EXPECT_EQ(found, block);
        }
        if (i % 3 == 0) cache.Erase(t, i);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(cache.usage(), 64u * 1024);
}

}  // namespace
}  // namespace cairn::lsm
