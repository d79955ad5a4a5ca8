// One memory budget: Options::cache_size is one LRU shared by SST blocks and
// separated values, unless block_cache_size or value_cache_size give a kind
// a cache of its own; the stats report each kind's bytes and capacity.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

constexpr int kKeys = 200;
constexpr size_t kValueSize = 4096;

std::string Key(int i) { return absl::StrFormat("key%05d", i); }
std::string Value(int i) { return std::string(kValueSize, static_cast<char>('a' + i % 26)); }

// Loads kKeys separated values into SSTs, then reads each twice.
std::unique_ptr<DB> LoadAndReadTwice(const Options& options) {
  auto opened = OpenWithFileSystem(options, "/db", std::make_shared<io::MemoryFileSystem>());
  EXPECT_OK(opened.status());
  if (!opened.ok()) return nullptr;
  std::unique_ptr<DB> db = *std::move(opened);
  for (int i = 0; i < kKeys; ++i) EXPECT_OK(db->Put({}, Key(i), Value(i)));
  EXPECT_OK(db->Flush());
  std::string v;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < kKeys; ++i) {
      EXPECT_OK(db->Get({}, Key(i), &v));
      EXPECT_EQ(v, Value(i));
    }
  }
  return db;
}

// Where each kind is cached: in the shared budget, or in caches of the
// given capacities.
void ExpectCaches(const Stats& st, bool shared, uint64_t block_capacity,
                  uint64_t value_capacity) {
  EXPECT_EQ(st.cache_shared, shared);
  EXPECT_EQ(st.block_cache_capacity, block_capacity);
  EXPECT_EQ(st.value_cache_capacity, value_capacity);
}

// Every value was read from the device once, then served from the cache,
// which holds them all.
void ExpectEveryValueCachedOnce(const Stats& st) {
  EXPECT_EQ(st.value_cache_misses, static_cast<uint64_t>(kKeys));
  EXPECT_EQ(st.value_cache_hits, static_cast<uint64_t>(kKeys));
  EXPECT_GE(st.value_cache_bytes, kKeys * kValueSize);
}

Options Base() {
  Options o;
  o.memtable_size = 1 << 20;
  o.value_separation_threshold = 1024;
  return o;
}

TEST(CacheBudgetTest, BlocksAndValuesShareCacheSizeByDefault) {
  Options o = Base();
  o.cache_size = 8 << 20;  // holds every value
  std::unique_ptr<DB> db = LoadAndReadTwice(o);
  ASSERT_NE(db, nullptr);
  const Stats st = db->GetStats();
  ExpectCaches(st, /*shared=*/true, o.cache_size, o.cache_size);
  ExpectEveryValueCachedOnce(st);
  EXPECT_GT(st.block_cache_bytes, 0u);
  EXPECT_LE(st.block_cache_bytes + st.value_cache_bytes, o.cache_size);
  std::string text;
  ASSERT_TRUE(db->GetProperty("cairn.stats", &text));
  EXPECT_NE(text.find("cache: one budget for blocks and values"), std::string::npos) << text;
  EXPECT_NE(text.find(absl::StrFormat("value cache: %d hits, %d misses, ", kKeys, kKeys)),
            std::string::npos)
      << text;
}

TEST(CacheBudgetTest, TheSharedBudgetBoundsBothKindsTogether) {
  Options o = Base();
  o.cache_size = 256 << 10;  // a quarter of the values
  std::unique_ptr<DB> db = LoadAndReadTwice(o);
  ASSERT_NE(db, nullptr);
  const Stats st = db->GetStats();
  EXPECT_LE(st.block_cache_bytes + st.value_cache_bytes, o.cache_size);
  EXPECT_GT(st.value_cache_bytes, 0u);
  // Read twice in the same order, an LRU smaller than the set misses
  // (almost) all: the cache's shards are picked by a hash seeded per
  // process, so a shard may now and then get few enough values to keep
  // some. At most what the budget holds can hit the second time.
  EXPECT_EQ(st.value_cache_hits + st.value_cache_misses, 2u * kKeys);
  EXPECT_GE(st.value_cache_misses, 2u * kKeys - o.cache_size / kValueSize);
}

TEST(CacheBudgetTest, ACacheOfItsOwnKeepsAKindOutOfTheSharedBudget) {
  Options o = Base();
  o.cache_size = 0;                // no shared cache: values are not cached
  o.block_cache_size = 1 << 20;    // blocks have their own
  std::unique_ptr<DB> db = LoadAndReadTwice(o);
  ASSERT_NE(db, nullptr);
  const Stats st = db->GetStats();
  ExpectCaches(st, /*shared=*/false, o.block_cache_size, 0);
  EXPECT_GT(st.block_cache_bytes, 0u);
  EXPECT_EQ(st.value_cache_bytes, 0u);
  EXPECT_EQ(st.value_cache_hits, 0u);

  Options own = Base();
  own.value_cache_size = 2 << 20;
  db = LoadAndReadTwice(own);
  ASSERT_NE(db, nullptr);
  const Stats st2 = db->GetStats();
  ExpectCaches(st2, /*shared=*/false, own.cache_size, own.value_cache_size);
  ExpectEveryValueCachedOnce(st2);
}

// Flushes and compactions put the blocks they write in the cache while the
// tables fit in half of it, so reads after a compaction find them there;
// tables too large for that, or the option off, leave the cache to reads.
TEST(CacheBudgetTest, NewTablesBlocksAreCachedWhileTheTablesFitInHalfTheCache) {
  struct Case {
    const char* name;
    bool option;
    size_t threshold;  // separated (pointers in the tables) or inline values
    bool expect_cached;
  };
  for (const Case& c : {Case{"separated", true, 1024, true}, Case{"option off", false, 1024, false},
                        Case{"inline, tables over half", true, kInlineValues, false}}) {
    SCOPED_TRACE(c.name);
    Options o = Base();
    o.cache_size = 2 << 20;
    o.cache_new_table_blocks = c.option;
    o.value_separation_threshold = c.threshold;
    // Half the values loaded are garbage: background GC's liveness lookups
    // would read the tables' blocks into the cache, whatever the option.
    o.gc_space_amp_trigger = 0;
    auto opened = OpenWithFileSystem(o, "/db", std::make_shared<io::MemoryFileSystem>());
    ASSERT_OK(opened.status());
    std::unique_ptr<DB> db = *std::move(opened);
    // Inline, the live keys alone take 3.2 MB of tables.
    constexpr int kLive = 4 * kKeys;
    for (int i = 0; i < 2 * kLive; ++i) ASSERT_OK(db->Put({}, Key(i % kLive), Value(i)));
    ASSERT_OK(db->Flush());
    ASSERT_OK(db->CompactRange(nullptr, nullptr));
    const uint64_t misses_before = db->GetStats().block_cache_misses;
    std::string v;
    for (int i = 0; i < kLive; i += 4) {
      ASSERT_OK(db->Get({}, Key(i), &v));
      ASSERT_EQ(v, Value(kLive + i));
    }
    const uint64_t misses = db->GetStats().block_cache_misses - misses_before;
    if (c.expect_cached) {
      EXPECT_EQ(misses, 0u);
    } else {
      EXPECT_GT(misses, 0u);
    }
  }
}

// ReadOptions::fill_cache false, as RocksDB's: values read from the device
// by Get, GetRange, MultiGet and a scan are shown but not put into the
// cache, so a large scan or a one-off read evicts nothing; a value the
// cache holds is still served from it.
TEST(CacheBudgetTest, FillCacheFalseReadsValuesWithoutCachingThem) {
  Options o = Base();
  o.cache_size = 8 << 20;  // would hold every value
  auto opened = OpenWithFileSystem(o, "/db", std::make_shared<io::MemoryFileSystem>());
  ASSERT_OK(opened.status());
  std::unique_ptr<DB> db = *std::move(opened);
  for (int i = 0; i < kKeys; ++i) ASSERT_OK(db->Put({}, Key(i), Value(i)));
  ASSERT_OK(db->Flush());
  const Stats before = db->GetStats();
  ReadOptions no_fill;
  no_fill.fill_cache = false;
  std::string v;
  for (int i = 0; i < kKeys / 4; ++i) {
    ASSERT_OK(db->Get(no_fill, Key(i), &v));
    ASSERT_EQ(v, Value(i));
  }
  PinnableValue pinned;
  ASSERT_OK(db->Get(no_fill, Key(kKeys / 4), &pinned));
  EXPECT_EQ(pinned.value(), Value(kKeys / 4));
  EXPECT_FALSE(pinned.pinned());
  std::string range;
  ASSERT_OK(db->GetRange(no_fill, Key(kKeys / 4 + 1), 10, 100, &range));
  EXPECT_EQ(range, Value(kKeys / 4 + 1).substr(10, 100));
  std::vector<std::string> keys;
  for (int i = kKeys / 2; i < kKeys / 2 + 20; ++i) keys.push_back(Key(i));
  std::vector<std::string_view> key_views(keys.begin(), keys.end());
  std::vector<std::string> values;
  const std::vector<absl::Status> statuses = db->MultiGet(no_fill, key_views, &values);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_OK(statuses[i]);
    ASSERT_EQ(values[i], Value(kKeys / 2 + static_cast<int>(i)));
  }
  int seen = 0;
  {
    auto it = db->NewIterator(no_fill);
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++seen) {
      ASSERT_EQ(it->value(), Value(seen));
    }
    ASSERT_OK(it->status());
  }
  EXPECT_EQ(seen, kKeys);
  EXPECT_EQ(db->GetStats().value_cache_bytes, before.value_cache_bytes);

  // The default fills it, and a read that does not fill is served from it.
  ASSERT_OK(db->Get({}, Key(0), &v));
  EXPECT_GE(db->GetStats().value_cache_bytes, before.value_cache_bytes + kValueSize);
  const uint64_t hits = db->GetStats().value_cache_hits;
  ASSERT_OK(db->Get(no_fill, Key(0), &v));
  EXPECT_EQ(v, Value(0));
  EXPECT_EQ(db->GetStats().value_cache_hits, hits + 1);
}

}  // namespace
}  // namespace cairn
