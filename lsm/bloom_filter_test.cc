// Tests for the bloom filter: no false negatives, a false-positive rate near
// the textbook value, probe counts, and refusal of malformed filters.
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "lsm/bloom_filter.h"

namespace cairn::lsm {
namespace {

std::string Key(int i) { return absl::StrFormat("key-%08d", i); }

double FalsePositiveRate(int bits_per_key, int num_keys) {
  BloomFilterBuilder builder(bits_per_key);
  for (int i = 0; i < num_keys; ++i) builder.AddKey(Key(i));
  const std::string data = builder.Finish();
  auto filter = BloomFilter::Parse(data, "test");
  EXPECT_TRUE(filter.ok()) << filter.status();
  if (!filter.ok()) return 1.0;
  int hits = 0;
  const int probes = 20000;
  for (int i = 0; i < probes; ++i) hits += filter->KeyMayMatch(Key(num_keys + 1000000 + i));
  return static_cast<double>(hits) / probes;
}

TEST(BloomFilterTest, AddedKeysAlwaysMatch) {
  for (int n : {1, 10, 100, 1000, 10000}) {
    BloomFilterBuilder builder(10);
    for (int i = 0; i < n; ++i) builder.AddKey(Key(i));
    const std::string data = builder.Finish();
    auto filter = BloomFilter::Parse(data, "test");
    ASSERT_TRUE(filter.ok()) << filter.status();
    for (int i = 0; i < n; ++i) ASSERT_TRUE(filter->KeyMayMatch(Key(i))) << n << " " << i;
  }
}

TEST(BloomFilterTest, TenBitsPerKeyGivesAboutOnePercentFalsePositives) {
  for (int n : {1000, 10000, 50000}) {
    const double rate = FalsePositiveRate(10, n);
    EXPECT_LT(rate, 0.02) << n << " keys";
    EXPECT_GT(rate, 0.001) << n << " keys: suspiciously perfect";
  }
}

TEST(BloomFilterTest, MoreBitsMeanFewerFalsePositives) {
  EXPECT_GT(FalsePositiveRate(4, 10000), FalsePositiveRate(16, 10000));
}

TEST(BloomFilterTest, EmptyFilterMatchesNothing) {
  BloomFilterBuilder builder(10);
  const std::string data = builder.Finish();
  EXPECT_EQ(data.size(), 9u);  // the 64-bit minimum plus the probe count
  auto filter = BloomFilter::Parse(data, "test");
  ASSERT_TRUE(filter.ok());
  EXPECT_FALSE(filter->KeyMayMatch("anything"));
  EXPECT_FALSE(filter->KeyMayMatch(""));
}

TEST(BloomFilterTest, ProbeCountIsBitsTimesLnTwoClamped) {
  EXPECT_EQ(BloomFilterBuilder(10).num_probes(), 7);
  EXPECT_EQ(BloomFilterBuilder(1).num_probes(), 1);
  EXPECT_EQ(BloomFilterBuilder(100).num_probes(), kMaxBloomProbes);
  BloomFilterBuilder builder(10);
  builder.AddKey("x");
  auto filter = BloomFilter::Parse(builder.Finish(), "test");
  ASSERT_TRUE(filter.ok());
  EXPECT_EQ(filter->num_probes(), 7);
}

TEST(BloomFilterTest, FilterSizeFollowsBitsPerKey) {
  BloomFilterBuilder builder(10);
  for (int i = 0; i < 1000; ++i) builder.AddKey(Key(i));
  EXPECT_EQ(builder.Finish().size(), 1250u + 1);
}

TEST(BloomFilterTest, MalformedFiltersAreDataLoss) {
  EXPECT_EQ(BloomFilter::Parse("", "f").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(BloomFilter::Parse(std::string(8, '\0'), "f").status().code(),
            absl::StatusCode::kDataLoss);
  std::string zero_probes(9, '\0');
  EXPECT_EQ(BloomFilter::Parse(zero_probes, "f").status().code(), absl::StatusCode::kDataLoss);
  std::string many_probes(8, '\0');
  many_probes.push_back(31);
  auto bad = BloomFilter::Parse(many_probes, "my-file");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("my-file"), absl::string_view::npos);
}

// A builder on a pooled hash list writes the same filter as one on its own,
// and leaves the list's memory for the next builder.
TEST(BloomHashPoolTest, PooledBuildersWriteTheSameFilterAndShareTheMemory) {
  auto pool = std::make_shared<BloomHashPool>(1 << 20);
  std::string first;
  {
    BloomFilterBuilder builder(10, pool);
    for (int i = 0; i < 5000; ++i) builder.AddKey(Key(i));
    first = builder.Finish();
  }
  BloomFilterBuilder alone(10);
  for (int i = 0; i < 5000; ++i) alone.AddKey(Key(i));
  EXPECT_EQ(first, alone.Finish());
  const size_t kept = pool->bytes();
  EXPECT_GE(kept, 5000u * sizeof(uint64_t));

  BloomFilterBuilder next(10, pool);
  EXPECT_EQ(pool->bytes(), 0u);  // taken
  EXPECT_EQ(next.num_keys(), 0u);
  for (int i = 100; i < 200; ++i) next.AddKey(Key(i));
  const std::string data = next.Finish();  // the filter keeps a view of it
  auto filter = BloomFilter::Parse(data, "test");
  ASSERT_TRUE(filter.ok());
  for (int i = 100; i < 200; ++i) EXPECT_TRUE(filter->KeyMayMatch(Key(i))) << i;
  EXPECT_EQ(next.num_keys(), 100u);
}

TEST(BloomHashPoolTest, KeepsNoMoreThanItsCapacity) {
  auto pool = std::make_shared<BloomHashPool>(64 << 10);  // 8192 hashes
  {
    BloomFilterBuilder a(10, pool);
    BloomFilterBuilder b(10, pool);
    for (int i = 0; i < 6000; ++i) a.AddKey(Key(i));
    for (int i = 0; i < 6000; ++i) b.AddKey(Key(i));
  }
  // One list of 6000 or more fits; two do not.
  EXPECT_GE(pool->bytes(), 6000u * sizeof(uint64_t));
  EXPECT_LE(pool->bytes(), size_t{64} << 10);
  BloomFilterBuilder huge(10, pool);
  for (int i = 0; i < 20000; ++i) huge.AddKey(Key(i));
}

}  // namespace
}  // namespace cairn::lsm
