#include "vlog/value_cache.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace cairn::vlog {
namespace {

std::shared_ptr<const std::string> Value(size_t n, char c = 'v') {
  return std::make_shared<const std::string>(n, c);
}

TEST(ValueCacheTest, FindsWhatWasInsertedAndCountsHitsAndMisses) {
  ValueCache cache(1 << 20);
  cache.Insert(1, 28, Value(100, 'a'));
  cache.Insert(2, 28, Value(100, 'b'));
  auto a = cache.Lookup(1, 28);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(*a, std::string(100, 'a'));
  EXPECT_EQ(*cache.Lookup(2, 28), std::string(100, 'b'));
  EXPECT_EQ(cache.Lookup(1, 29), nullptr);
  EXPECT_EQ(cache.Lookup(3, 28), nullptr);
  EXPECT_EQ(cache.hits(), 2u);
  EXPECT_EQ(cache.misses(), 2u);
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_EQ(cache.usage(), 2 * ValueCache::Charge(100));
}

TEST(ValueCacheTest, AProbeCountsItsHitButLeavesItsMissToTheReadAfterIt) {
  ValueCache cache(1 << 20);
  cache.Insert(1, 28, Value(100, 'a'));
  EXPECT_NE(cache.Lookup(1, 28, /*count_miss=*/false), nullptr);
  EXPECT_EQ(cache.Lookup(1, 99, /*count_miss=*/false), nullptr);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 0u);
  EXPECT_EQ(cache.Lookup(1, 99), nullptr);  // the read's own lookup
  EXPECT_EQ(cache.misses(), 1u);
}

TEST(ValueCacheTest, EvictsLeastRecentlyUsedByBytes) {
  // One shard, room for exactly three 1000-byte values.
  ValueCache cache(3 * ValueCache::Charge(1000), /*num_shard_bits=*/0);
  cache.Insert(1, 0, Value(1000));
  cache.Insert(1, 1, Value(1000));
  cache.Insert(1, 2, Value(1000));
  EXPECT_EQ(cache.usage(), cache.capacity());
  ASSERT_NE(cache.Lookup(1, 0), nullptr);  // 0 becomes most recent; 1 is oldest
  cache.Insert(1, 3, Value(1000));
  EXPECT_EQ(cache.Lookup(1, 1), nullptr);
  EXPECT_NE(cache.Lookup(1, 0), nullptr);
  EXPECT_NE(cache.Lookup(1, 2), nullptr);
  EXPECT_NE(cache.Lookup(1, 3), nullptr);

  // A value the size of two evicts the two least recently used.
  cache.Insert(1, 4, Value(2 * 1000 + ValueCache::kEntryOverhead));
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);
  EXPECT_EQ(cache.Lookup(1, 2), nullptr);
  EXPECT_NE(cache.Lookup(1, 3), nullptr);
  EXPECT_NE(cache.Lookup(1, 4), nullptr);
  EXPECT_LE(cache.usage(), cache.capacity());
}

TEST(ValueCacheTest, TinyValuesAreChargedTheirOverhead) {
  ValueCache cache(10 * ValueCache::kEntryOverhead, 0);
  for (uint64_t i = 0; i < 100; ++i) cache.Insert(5, i, Value(0));
  EXPECT_EQ(cache.entries(), 10u);
}

TEST(ValueCacheTest, ValueLargerThanAShardIsNotCached) {
  ValueCache cache(16 * 1000);  // 16 shards of 1000 bytes
  cache.Insert(1, 0, Value(2000));
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);
  EXPECT_EQ(cache.usage(), 0u);
}

TEST(ValueCacheTest, ReplacingAnEntryRechargesIt) {
  ValueCache cache(1 << 20, 0);
  cache.Insert(1, 0, Value(500));
  cache.Insert(1, 0, Value(100, 'n'));
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(cache.usage(), ValueCache::Charge(100));
  EXPECT_EQ(*cache.Lookup(1, 0), std::string(100, 'n'));
}

TEST(ValueCacheTest, EraseDropsTheEntry) {
  ValueCache cache(1 << 20);
  cache.Insert(1, 0, Value(10));
  cache.Erase(1, 0);
  cache.Erase(1, 1);  // absent: no-op
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);
  EXPECT_EQ(cache.usage(), 0u);
}

TEST(ValueCacheTest, ZeroCapacityDisablesTheCache) {
  ValueCache cache(0);
  cache.Insert(1, 0, Value(10));
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_EQ(cache.misses(), 1u);
}

TEST(ValueCacheTest, EvictedValueStaysAliveForItsHolder) {
  ValueCache cache(ValueCache::Charge(100), 0);
  cache.Insert(1, 0, Value(100, 'x'));
  std::shared_ptr<const std::string> held = cache.Lookup(1, 0);
  cache.Insert(1, 1, Value(100, 'y'));  // evicts (1, 0)
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);
  EXPECT_EQ(*held, std::string(100, 'x'));
}

TEST(ValueCacheTest, ShardsShareTheCapacity) {
  ValueCache cache(16 * ValueCache::Charge(100));
  for (uint64_t i = 0; i < 1000; ++i) cache.Insert(i, i * 7, Value(100));
  EXPECT_LE(cache.usage(), cache.capacity());
  EXPECT_GT(cache.entries(), 0u);
}

TEST(ValueCacheTest, ConcurrentUseKeepsTheBound) {
  ValueCache cache(64 * 1024);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      for (uint64_t i = 0; i < 5000; ++i) {
        const uint64_t off = (i * 31 + t) % 2000;
        if (auto v = cache.Lookup(1, off); v != nullptr) {
          EXPECT_EQ(v->size(), off % 300);
        } else {
          cache.Insert(1, off, Value(off % 300));
        }
        if (i % 97 == 0) cache.Erase(1, off);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(cache.usage(), cache.capacity());
  EXPECT_EQ(cache.hits() + cache.misses(), 4u * 5000u);
}


TEST(ValueCacheTest, NewValueTakesTheBytesOfAValueTheCacheEvicted) {
  ValueCache cache(ValueCache::Charge(4096), /*num_shard_bits=*/0);  // room for one
  std::shared_ptr<std::string> first = ValueCache::NewValue(4096);
  first->assign(4096, 'a');
  const char* bytes = first->data();
  cache.Insert(1, 0, std::move(first));
  const size_t pooled = ValueCache::PooledOnThisThread();
  std::shared_ptr<std::string> second = ValueCache::NewValue(4096);
  second->assign(4096, 'b');
  cache.Insert(1, 1, std::move(second));  // evicts the first; no one holds it
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);
  EXPECT_EQ(ValueCache::PooledOnThisThread(), pooled + 1);
  std::shared_ptr<std::string> third = ValueCache::NewValue(4000);
  EXPECT_EQ(ValueCache::PooledOnThisThread(), pooled);
  EXPECT_TRUE(third->empty());
  EXPECT_GE(third->capacity(), 4096u);
  EXPECT_EQ(third->data(), bytes);
  EXPECT_EQ(*cache.Lookup(1, 1), std::string(4096, 'b'));
}

TEST(ValueCacheTest, AnEvictedValueAReaderHoldsKeepsItsBytesUntilTheReaderLetsGo) {
  ValueCache cache(ValueCache::Charge(4096), /*num_shard_bits=*/0);
  std::shared_ptr<std::string> first = ValueCache::NewValue(4096);
  first->assign(4096, 'a');
  cache.Insert(1, 0, std::move(first));
  std::shared_ptr<const std::string> held = cache.Lookup(1, 0);
  ASSERT_NE(held, nullptr);
  const size_t pooled = ValueCache::PooledOnThisThread();
  std::shared_ptr<std::string> second = ValueCache::NewValue(4096);
  second->assign(4096, 'b');
  cache.Insert(1, 1, std::move(second));
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);
  // Taking a buffer for the second may have emptied the pool by one; the
  // held value is not in it.
  const size_t after_insert = ValueCache::PooledOnThisThread();
  EXPECT_LE(after_insert, pooled);
  EXPECT_EQ(*held, std::string(4096, 'a'));
  held.reset();
  EXPECT_EQ(ValueCache::PooledOnThisThread(), after_insert + 1);
}

TEST(ValueCacheTest, ThePoolKeepsNeitherLargeBuffersNorMoreThanItsBound) {
  // On a thread of its own, whose pool starts empty.
  std::thread t([] {
    // Half-size buffers, more of them than the pool's bytes allow.
    const size_t half = ValueCache::kMaxPooledCapacity / 2 + 1;
    std::vector<std::shared_ptr<std::string>> values;
    for (size_t i = 0; i < ValueCache::kMaxPooledBytes / half + 3; ++i) {
      values.push_back(ValueCache::NewValue(half));
    }
    EXPECT_EQ(ValueCache::PooledOnThisThread(), 0u);
    std::shared_ptr<std::string> large = ValueCache::NewValue(ValueCache::kMaxPooledCapacity + 1);
    large->assign(ValueCache::kMaxPooledCapacity + 1, 'x');
    large.reset();  // above the largest kept: freed
    EXPECT_EQ(ValueCache::PooledOnThisThread(), 0u);
    values.clear();
    EXPECT_EQ(ValueCache::PooledOnThisThread(), ValueCache::kMaxPooledBytes / half);
  });
  t.join();
}

TEST(ValueCacheTest, AValueLetGoOnAThreadWithoutAPoolIsFreed) {
  ValueCache cache(1 << 20);
  std::shared_ptr<std::string> v = ValueCache::NewValue(4096);
  v->assign(4096, 'a');
  cache.Insert(1, 0, v);
  std::shared_ptr<const std::string> held = std::move(v);
  cache.Erase(1, 0);
  // The other thread never made a pool: its release frees the string, and
  // its own NewValue, then its exit, free what its pool held.
  std::thread other([held = std::move(held)]() mutable {
    EXPECT_EQ(ValueCache::PooledOnThisThread(), 0u);
    held.reset();
    EXPECT_EQ(ValueCache::PooledOnThisThread(), 0u);
    std::shared_ptr<std::string> mine = ValueCache::NewValue(100);
    mine->assign(100, 'b');
    mine.reset();
    EXPECT_EQ(ValueCache::PooledOnThisThread(), 1u);
  });
  other.join();
}


TEST(ValueCacheTest, ASmallValueNeverTakesALargeBuffer) {
  // A cached value is charged its size: the buffer it takes from the pool
  // may be at most a quarter larger, or the cache's memory would outgrow
  // its capacity.
  std::shared_ptr<std::string> large = ValueCache::NewValue(60000);
  large->assign(60000, 'x');
  const char* large_bytes = large->data();
  large.reset();  // pooled
  std::shared_ptr<std::string> small = ValueCache::NewValue(100);
  EXPECT_NE(small->data(), large_bytes);
  EXPECT_LT(small->capacity(), 1000u);
  std::shared_ptr<std::string> fits = ValueCache::NewValue(50000);
  EXPECT_EQ(fits->data(), large_bytes);
  EXPECT_GE(fits->capacity(), 50000u);
  EXPECT_LT(ValueCache::NewValue(20000)->capacity(), 30000u);
}

}  // namespace
}  // namespace cairn::vlog
