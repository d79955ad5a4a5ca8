#include "io/sharded_lru_cache.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace cairn::io {
namespace {

std::shared_ptr<const std::string> Str(std::string s) {
  return std::make_shared<const std::string>(std::move(s));
}

TEST(SharedCacheTest, KindsWithTheSameNumbersAreDifferentEntries) {
  Cache cache(1 << 20, /*shard_bits=*/0);
  cache.Insert(7, 4096, Str("block"), 100, kCacheKindBlock);
  cache.Insert(7, 4096, Str("value"), 300, kCacheKindValue);
  ASSERT_NE(cache.Lookup(7, 4096, kCacheKindBlock), nullptr);
  EXPECT_EQ(*std::static_pointer_cast<const std::string>(cache.Lookup(7, 4096, kCacheKindBlock)),
            "block");
  EXPECT_EQ(*std::static_pointer_cast<const std::string>(cache.Lookup(7, 4096, kCacheKindValue)),
            "value");
  EXPECT_EQ(cache.usage(kCacheKindBlock), 100u);
  EXPECT_EQ(cache.usage(kCacheKindValue), 300u);
  EXPECT_EQ(cache.usage(), 400u);
  EXPECT_EQ(cache.entries(kCacheKindValue), 1u);
  cache.Erase(7, 4096, kCacheKindValue);
  EXPECT_EQ(cache.Lookup(7, 4096, kCacheKindValue), nullptr);
  EXPECT_NE(cache.Lookup(7, 4096, kCacheKindBlock), nullptr);
  EXPECT_EQ(cache.usage(kCacheKindValue), 0u);
  EXPECT_EQ(cache.entries(kCacheKindValue), 0u);
}

TEST(SharedCacheTest, OneKindsInsertsEvictTheOthersColdEntries) {
  // One shard of 1,000 bytes: both kinds compete for the same budget.
  Cache cache(1000, /*shard_bits=*/0);
  for (uint64_t i = 0; i < 4; ++i) cache.Insert(1, i, Str("b"), 200, kCacheKindBlock);
  EXPECT_EQ(cache.usage(kCacheKindBlock), 800u);
  cache.Lookup(1, 0, kCacheKindBlock);  // block 0 is hot; 1 is now the coldest
  cache.Insert(2, 0, Str("v"), 400, kCacheKindValue);
  EXPECT_EQ(cache.usage(kCacheKindValue), 400u);
  EXPECT_EQ(cache.usage(kCacheKindBlock), 600u);
  EXPECT_EQ(cache.usage(), 1000u);
  EXPECT_EQ(cache.Lookup(1, 1, kCacheKindBlock), nullptr);
  EXPECT_NE(cache.Lookup(1, 0, kCacheKindBlock), nullptr);
  // And values give way to blocks the same way.
  for (uint64_t i = 10; i < 15; ++i) cache.Insert(1, i, Str("b"), 200, kCacheKindBlock);
  EXPECT_EQ(cache.usage(kCacheKindValue), 0u);
  EXPECT_EQ(cache.usage(kCacheKindBlock), 1000u);
}

}  // namespace
}  // namespace cairn::io
