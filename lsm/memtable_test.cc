#include "lsm/memtable.h"

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "lsm/dbformat.h"

namespace cairn::lsm {
namespace {

std::string IKey(std::string_view user_key, SequenceNumber seq, ValueType t) {
  std::string k;
  AppendInternalKey(&k, user_key, seq, t);
  return k;
}

struct Found {
  bool found = false;
  ValueType type = ValueType::kValue;
  SequenceNumber seq = 0;
  std::string value;
};

Found Lookup(const MemTable& mem, std::string_view key, SequenceNumber snapshot) {
  Found f;
  f.found = mem.Get(key, snapshot, &f.type, &f.seq, &f.value);
  return f;
}

TEST(MemTableTest, EmptyMemTableFindsNothing) {
  MemTable mem;
  EXPECT_TRUE(mem.empty());
  EXPECT_EQ(mem.num_entries(), 0u);
  EXPECT_FALSE(Lookup(mem, "a", kMaxSequenceNumber).found);
  auto it = mem.NewIterator();
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

TEST(MemTableTest, GetReturnsNewestVersionVisibleAtSnapshot) {
  MemTable mem;
  mem.Add(1, ValueType::kValue, "k", "v1");
  mem.Add(3, ValueType::kValue, "k", "v3");
  mem.Add(5, ValueType::kDeletion, "k", "");
  mem.Add(7, ValueType::kValuePointer, "k", std::string("\x01\x02\x00\x03", 4));

  EXPECT_FALSE(Lookup(mem, "k", 0).found);
  for (SequenceNumber snap : {1, 2}) {
    Found f = Lookup(mem, "k", snap);
    ASSERT_TRUE(f.found) << snap;
    EXPECT_EQ(f.type, ValueType::kValue);
    EXPECT_EQ(f.seq, 1u);
    EXPECT_EQ(f.value, "v1");
  }
  Found f4 = Lookup(mem, "k", 4);
  EXPECT_EQ(f4.value, "v3");
  EXPECT_EQ(f4.seq, 3u);
  Found f6 = Lookup(mem, "k", 6);
  ASSERT_TRUE(f6.found);
  EXPECT_EQ(f6.type, ValueType::kDeletion);
  EXPECT_EQ(f6.seq, 5u);
  Found f_max = Lookup(mem, "k", kMaxSequenceNumber);
  EXPECT_EQ(f_max.type, ValueType::kValuePointer);
  EXPECT_EQ(f_max.seq, 7u);
  EXPECT_EQ(f_max.value, std::string("\x01\x02\x00\x03", 4));

  EXPECT_EQ(mem.num_entries(), 4u);
  EXPECT_EQ(mem.num_deletes(), 1u);
}

TEST(MemTableTest, AddFindsTheEntryItSupersedes) {
  MemTable mem;
  MemTable::Superseded old;
  // Neighbours that are not the key (prefixes, the next key) are not it.
  mem.Add(1, ValueType::kValue, "ka", "other");
  mem.Add(2, ValueType::kValue, "kb", "next");
  EXPECT_FALSE(mem.AddAndFindSuperseded(3, ValueType::kValue, "k", "v3", &old));
  EXPECT_FALSE(mem.AddAndFindSuperseded(4, ValueType::kValue, "kc", "last", &old));
  const std::string long_value(200, 'x');  // kept out of the entry
  ASSERT_TRUE(mem.AddAndFindSuperseded(5, ValueType::kValue, "k", long_value, &old));
  EXPECT_EQ(old.type, ValueType::kValue);
  EXPECT_EQ(old.value, "v3");
  ASSERT_TRUE(mem.AddAndFindSuperseded(6, ValueType::kDeletion, "k", "", &old));
  EXPECT_EQ(old.type, ValueType::kValue);
  EXPECT_EQ(old.value, long_value);
  const std::string pointer("\x01\x02\x00\x03", 4);
  ASSERT_TRUE(mem.AddAndFindSuperseded(7, ValueType::kValuePointer, "k", pointer, &old));
  EXPECT_EQ(old.type, ValueType::kDeletion);
  EXPECT_TRUE(old.value.empty());
  ASSERT_TRUE(mem.AddAndFindSuperseded(8, ValueType::kValue, "k", "v8", &old));
  EXPECT_EQ(old.type, ValueType::kValuePointer);
  EXPECT_EQ(old.value, pointer);
  // The entries are all there, as Add leaves them.
  EXPECT_EQ(mem.num_entries(), 8u);
  EXPECT_EQ(Lookup(mem, "k", 7).value, pointer);
  EXPECT_EQ(Lookup(mem, "k", kMaxSequenceNumber).value, "v8");
  EXPECT_EQ(Lookup(mem, "kc", kMaxSequenceNumber).value, "last");
}

// Sorted batches of Adds (each superseding the key's older version) and of
// Gets at several snapshots, through cursors, answer exactly as Adds and Gets
// without one, in the order a write group or GC's sorted batches give them,
// and in any other order.
TEST(MemTableTest, CursorsAnswerAsSearchesFromTheHead) {
  MemTable with, without;
  absl::BitGen gen;
  std::map<std::string, std::vector<std::pair<SequenceNumber, std::string>>> model;
  SequenceNumber seq = 0;
  auto key_of = [](int i) { return absl::StrFormat("key%06d", i); };
  for (int round = 0; round < 40; ++round) {
    // A batch: ascending keys (as GC's rewrites), sometimes out of order,
    // sometimes the same key twice (a later write of the batch wins).
    std::vector<int> ids;
    int id = absl::Uniform<int>(gen, 0, 500);
    for (int i = 0; i < 100; ++i) {
      ids.push_back(absl::Bernoulli(gen, 0.05) ? absl::Uniform<int>(gen, 0, 5000) : id);
      if (!absl::Bernoulli(gen, 0.05)) id += absl::Uniform<int>(gen, 1, 60);
    }
    MemTable::Cursor cursor;
    for (int i : ids) {
      const std::string k = key_of(i);
      const std::string v = absl::StrFormat("v%d", ++seq);
      MemTable::Superseded old_with, old_without;
      const bool had_with =
          with.AddAndFindSuperseded(seq, ValueType::kValue, k, v, &old_with, &cursor);
      const bool had_without =
          without.AddAndFindSuperseded(seq, ValueType::kValue, k, v, &old_without);
      ASSERT_EQ(had_with, had_without) << k;
      ASSERT_EQ(had_with, model.count(k) == 1) << k;
      if (had_with) {
        EXPECT_EQ(old_with.value, model[k].back().second) << k;
        EXPECT_EQ(old_without.value, old_with.value) << k;
      }
      model[k].push_back({seq, v});
    }
  }
  // Lookups in key order and at random, at the newest and at older
  // snapshots, through one cursor per run.
  for (int run = 0; run < 50; ++run) {
    const SequenceNumber snapshot =
        run % 2 == 0 ? kMaxSequenceNumber : absl::Uniform<SequenceNumber>(gen, 0, seq + 1);
    MemTable::Cursor cursor;
    int id = absl::Uniform<int>(gen, 0, 1000);
    for (int i = 0; i < 200; ++i) {
      const std::string k = key_of(absl::Bernoulli(gen, 0.1) ? absl::Uniform<int>(gen, 0, 6000) : id);
      id += absl::Uniform<int>(gen, 0, 40);
      Found f;
      f.found = with.Get(k, snapshot, &f.type, &f.seq, &f.value, &cursor);
      const Found plain = Lookup(without, k, snapshot);
      ASSERT_EQ(f.found, plain.found) << k << " at " << snapshot;
      // The model: the newest version at or below the snapshot.
      const std::pair<SequenceNumber, std::string>* want = nullptr;
      if (auto it = model.find(k); it != model.end()) {
        for (const auto& version : it->second) {
          if (version.first <= snapshot) want = &version;
        }
      }
      ASSERT_EQ(f.found, want != nullptr) << k << " at " << snapshot;
      if (want != nullptr) {
        EXPECT_EQ(f.seq, want->first);
        EXPECT_EQ(f.value, want->second);
        EXPECT_EQ(plain.value, want->second);
      }
    }
  }
}

TEST(MemTableTest, DeletionLeavesValueUntouched) {
  MemTable mem;
  mem.Add(2, ValueType::kDeletion, "k", "");
  Found f;
  f.value = "unchanged";
  f.found = mem.Get("k", 10, &f.type, &f.seq, &f.value);
  ASSERT_TRUE(f.found);
  EXPECT_EQ(f.type, ValueType::kDeletion);
  EXPECT_EQ(f.value, "unchanged");
}

TEST(MemTableTest, KeysThatArePrefixesOfEachOtherStayApart) {
  MemTable mem;
  mem.Add(1, ValueType::kValue, "ab", "long");
  mem.Add(2, ValueType::kValue, "a", "short");
  EXPECT_EQ(Lookup(mem, "a", 10).value, "short");
  EXPECT_EQ(Lookup(mem, "ab", 10).value, "long");
  EXPECT_FALSE(Lookup(mem, "", 10).found);
  EXPECT_FALSE(Lookup(mem, "abc", 10).found);
  EXPECT_FALSE(Lookup(mem, "b", 10).found);
}

TEST(MemTableTest, EmptyKeyEmptyValueAndBinaryBytesRoundTrip) {
  MemTable mem;
  const std::string binary_key("\x00\xff\x00", 3);
  const std::string big_value(100'000, 'x');
  mem.Add(1, ValueType::kValue, "", "");
  mem.Add(2, ValueType::kValue, binary_key, big_value);
  Found empty = Lookup(mem, "", 5);
  ASSERT_TRUE(empty.found);
  EXPECT_EQ(empty.value, "");
  EXPECT_EQ(Lookup(mem, binary_key, 5).value, big_value);
  EXPECT_GE(mem.ApproximateMemoryUsage(), big_value.size());
}

TEST(MemTableTest, IteratorMatchesInternalKeyOrderInBothDirections) {
  MemTable mem;
  std::map<std::string, std::string, InternalKeyLess> model;
  absl::BitGen gen;
  SequenceNumber seq = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string user_key = absl::StrFormat("key%03d", absl::Uniform(gen, 0, 300));
    const auto type = static_cast<ValueType>(absl::Uniform(gen, 0, 3));
    const std::string value =
        type == ValueType::kDeletion ? "" : std::string(absl::Uniform(gen, 0, 50), 'a' + i % 26);
    mem.Add(++seq, type, user_key, value);
    model[IKey(user_key, seq, type)] = value;
  }

  auto it = mem.NewIterator();
  it->SeekToFirst();
  for (const auto& [k, v] : model) {
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->key(), k);
    EXPECT_EQ(it->value(), v);
    it->Next();
  }
  EXPECT_FALSE(it->Valid());
  it->SeekToLast();
  for (auto r = model.rbegin(); r != model.rend(); ++r) {
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->key(), r->first);
    it->Prev();
  }
  EXPECT_FALSE(it->Valid());

  for (int i = 0; i < 500; ++i) {
    const std::string target = MakeLookupKey(absl::StrFormat("key%03d", absl::Uniform(gen, 0, 301)),
                                             absl::Uniform<SequenceNumber>(gen, 0, seq + 2));
    it->Seek(target);
    auto lb = model.lower_bound(target);
    ASSERT_EQ(it->Valid(), lb != model.end());
    if (it->Valid()) {
      EXPECT_EQ(it->key(), lb->first);
    }
    it->SeekForPrev(target);
    auto ub = model.upper_bound(target);
    ASSERT_EQ(it->Valid(), ub != model.begin());
    if (it->Valid()) {
      EXPECT_EQ(it->key(), std::prev(ub)->first);
    }
  }
  EXPECT_EQ(mem.num_entries(), model.size());
}

TEST(MemTableTest, MemoryUsageGrowsWithEntries) {
  MemTable mem;
  const size_t initial = mem.ApproximateMemoryUsage();
  for (int i = 0; i < 1000; ++i) {
    mem.Add(i + 1, ValueType::kValue, absl::StrFormat("key%06d", i), std::string(100, 'v'));
  }
  EXPECT_GE(mem.ApproximateMemoryUsage(), initial + 1000 * (100 + 9 + 8));
  EXPECT_FALSE(mem.empty());
}

TEST(MemTableTest, ArenaBlocksAreAFractionOfTheWriteBuffer) {
  EXPECT_EQ(MemTable::ArenaBlockSize(0), Arena::kBlockSize);
  EXPECT_EQ(MemTable::ArenaBlockSize(128 << 10), Arena::kBlockSize);  // tests' small memtables
  EXPECT_EQ(MemTable::ArenaBlockSize(1 << 20), 16u << 10);
  EXPECT_EQ(MemTable::ArenaBlockSize((1 << 20) + 12345), 16u << 10);  // whole pages
  EXPECT_EQ(MemTable::ArenaBlockSize(64 << 20), 1u << 20);
  EXPECT_EQ(MemTable::ArenaBlockSize(size_t{4} << 30), 1u << 20);
}

// Every size around the entry limit and the arena's own-block limits, in
// memtables of the default block and of the largest.
class MemTableValueLengthTest : public ::testing::TestWithParam<size_t> {};

TEST_P(MemTableValueLengthTest, ValuesOfEveryLengthAroundTheEntryLimitReadBackWhole) {
  MemTable mem(GetParam());
  std::map<std::string, std::string> model;
  const size_t limit = MemTable::kMaxValueInEntry;
  const size_t lengths[] = {0, 1, limit - 1, limit, limit + 1, 300, 1024, 1025, 4096,
                           70000, (256 << 10) + 1, 1 << 20};
  SequenceNumber seq = 0;
  for (size_t n : lengths) {
    for (int copy = 0; copy < 3; ++copy) {
      const std::string key = absl::StrFormat("k%06d-%d", n, copy);
      std::string value(n, '\0');
      for (size_t i = 0; i < n; ++i) value[i] = static_cast<char>((i * 7 + n + copy) & 0xff);
      mem.Add(++seq, ValueType::kValue, key, value);
      model[key] = value;
    }
  }
  for (const auto& [key, value] : model) {
    const Found f = Lookup(mem, key, kMaxSequenceNumber);
    ASSERT_TRUE(f.found) << key;
    EXPECT_EQ(f.value, value) << key;
  }
  auto it = mem.NewIterator();
  auto expected = model.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++expected) {
    ASSERT_NE(expected, model.end());
    EXPECT_EQ(ExtractUserKey(it->key()), expected->first);
    EXPECT_EQ(it->value(), expected->second) << expected->first;
  }
  EXPECT_EQ(expected, model.end());
  // Long values count toward the flush trigger like short ones.
  EXPECT_GE(mem.ApproximateMemoryUsage(), 3 * (300 + 4096 + 70000));
}

INSTANTIATE_TEST_SUITE_P(WriteBufferSizes, MemTableValueLengthTest,
                         ::testing::Values(size_t{0}, size_t{64} << 20));

// One writer adds versions while readers Get: a reader must always find a
// version at least as new as the one published before its read.
TEST(MemTableTest, ReadersRunConcurrentlyWithTheWriter) {
  MemTable mem;
  constexpr int kKeys = 50;
  constexpr SequenceNumber kWrites = 20000;
  std::atomic<SequenceNumber> published{0};
  std::atomic<bool> done{false};
  auto reader = [&] {
    absl::BitGen gen;
    while (!done.load(std::memory_order_acquire)) {
      const SequenceNumber known = published.load(std::memory_order_acquire);
      if (known < kKeys) continue;
      const int k = absl::Uniform(gen, 0, kKeys);
      Found f = Lookup(mem, absl::StrFormat("k%02d", k), kMaxSequenceNumber);
      ASSERT_TRUE(f.found);
      // Sequence s writes key s % kKeys with value "s".
      EXPECT_EQ(f.seq % kKeys, static_cast<SequenceNumber>(k));
      EXPECT_EQ(f.value, absl::StrCat(f.seq));
      EXPECT_GT(f.seq + kKeys, known);
    }
  };
  std::thread r1(reader), r2(reader);
  for (SequenceNumber s = 1; s <= kWrites; ++s) {
    mem.Add(s, ValueType::kValue, absl::StrFormat("k%02d", s % kKeys), absl::StrCat(s));
    published.store(s, std::memory_order_release);
  }
  done.store(true, std::memory_order_release);
  r1.join();
  r2.join();
  EXPECT_EQ(mem.num_entries(), kWrites);
}

}  // namespace
}  // namespace cairn::lsm
