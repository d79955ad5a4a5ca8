#include "lsm/skiplist.h"

#include <atomic>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "gtest/gtest.h"
#include "lsm/arena.h"

namespace cairn::lsm {
namespace {

using Key = uint64_t;

struct Comparator {
  int operator()(const Key& a, const Key& b) const { return a < b ? -1 : (a > b ? 1 : 0); }
};
using List = SkipList<Key, Comparator>;

TEST(SkipListTest, EmptyListHasNoEntries) {
  Arena arena;
  List list(Comparator(), &arena);
  EXPECT_FALSE(list.Contains(10));
  List::Iterator it(&list);
  it.SeekToFirst();
  EXPECT_FALSE(it.Valid());
  it.SeekToLast();
  EXPECT_FALSE(it.Valid());
  it.Seek(100);
  EXPECT_FALSE(it.Valid());
  it.SeekForPrev(100);
  EXPECT_FALSE(it.Valid());
}

TEST(SkipListTest, MatchesStdSetForLookupsSeeksAndBothDirections) {
  Arena arena;
  List list(Comparator(), &arena);
  std::set<Key> model;
  absl::BitGen gen;
  for (int i = 0; i < 3000; ++i) {
    const Key k = absl::Uniform<Key>(gen, 0, 10000);
    if (model.insert(k).second) list.Insert(k);
  }
  for (Key k = 0; k < 10000; k += 7) EXPECT_EQ(list.Contains(k), model.count(k) == 1) << k;

  List::Iterator it(&list);
  it.SeekToFirst();
  for (Key k : model) {
    ASSERT_TRUE(it.Valid());
    EXPECT_EQ(it.key(), k);
    it.Next();
  }
  EXPECT_FALSE(it.Valid());

  it.SeekToLast();
  for (auto r = model.rbegin(); r != model.rend(); ++r) {
    ASSERT_TRUE(it.Valid());
    EXPECT_EQ(it.key(), *r);
    it.Prev();
  }
  EXPECT_FALSE(it.Valid());

  for (int i = 0; i < 2000; ++i) {
    const Key target = absl::Uniform<Key>(gen, 0, 10001);
    it.Seek(target);
    auto lb = model.lower_bound(target);
    if (lb == model.end()) {
      EXPECT_FALSE(it.Valid()) << "Seek " << target;
    } else {
      ASSERT_TRUE(it.Valid()) << "Seek " << target;
      EXPECT_EQ(it.key(), *lb);
    }
    it.SeekForPrev(target);
    auto ub = model.upper_bound(target);
    if (ub == model.begin()) {
      EXPECT_FALSE(it.Valid()) << "SeekForPrev " << target;
    } else {
      ASSERT_TRUE(it.Valid()) << "SeekForPrev " << target;
      EXPECT_EQ(it.key(), *std::prev(ub));
    }
  }
}

TEST(SkipListTest, SeekForPrevOnAnExistingKeyLandsOnIt) {
  Arena arena;
  List list(Comparator(), &arena);
  for (Key k : {10, 20, 30}) list.Insert(k);
  List::Iterator it(&list);
  it.SeekForPrev(20);
  ASSERT_TRUE(it.Valid());
  EXPECT_EQ(it.key(), 20u);
  it.SeekForPrev(9);
  EXPECT_FALSE(it.Valid());
  it.Seek(31);
  EXPECT_FALSE(it.Valid());
}

// One writer inserts increasing keys while readers scan. Every scan must be
// sorted and must include every key inserted before the scan began.
TEST(SkipListTest, ReadersRunConcurrentlyWithOneWriter) {
  Arena arena;
  List list(Comparator(), &arena);
  constexpr Key kKeys = 20000;
  std::atomic<Key> inserted{0};  // Keys [0, inserted) are in the list.
  std::atomic<bool> done{false};

  auto reader = [&] {
    absl::BitGen gen;
    while (!done.load(std::memory_order_acquire)) {
      const Key known = inserted.load(std::memory_order_acquire);
      List::Iterator it(&list);
      const Key start = known == 0 ? 0 : absl::Uniform<Key>(gen, 0, known);
      it.Seek(start);
      Key expected = start;
      int steps = 0;
      while (it.Valid() && steps++ < 200) {
        // Keys are inserted in order, so nothing below `known` may be missing.
        if (expected < known) {
          ASSERT_EQ(it.key(), expected);
        }
        ASSERT_GE(it.key(), expected);
        expected = it.key() + 1;
        it.Next();
      }
      if (known > 0) {
        EXPECT_TRUE(list.Contains(known - 1));
      }
    }
  };
  std::thread r1(reader), r2(reader);
  for (Key k = 0; k < kKeys; ++k) {
    list.Insert(k);
    inserted.store(k + 1, std::memory_order_release);
  }
  done.store(true, std::memory_order_release);
  r1.join();
  r2.join();
  List::Iterator it(&list);
  it.SeekToLast();
  ASSERT_TRUE(it.Valid());
  EXPECT_EQ(it.key(), kKeys - 1);
}

}  // namespace
}  // namespace cairn::lsm
