#include "lsm/skiplist.h"

#include <atomic>
#include <cstdint>
#include <functional>
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

// Runs two copies of reader on threads while write runs here; done is set
// once write returns, and the readers are joined.
void WithTwoReaders(const std::function<void()>& reader, std::atomic<bool>* done,
                    const std::function<void()>& write) {
  std::thread r1(reader), r2(reader);
  write();
  done->store(true, std::memory_order_release);
  r1.join();
  r2.join();
}

// Inserts n random keys in [lo, hi) into the list and the model (fewer
// when some repeat).
void FillRandom(List* list, std::set<Key>* model, int n, Key lo, Key hi) {
  absl::BitGen gen;
  for (int i = 0; i < n; ++i) {
    const Key k = absl::Uniform<Key>(gen, lo, hi);
    if (model->insert(k).second) list->Insert(k);
  }
}

// The list iterates exactly the model's keys, in order.
void ExpectListHolds(const List& list, const std::set<Key>& model) {
  List::Iterator it(&list);
  it.SeekToFirst();
  for (Key k : model) {
    ASSERT_TRUE(it.Valid());
    ASSERT_EQ(it.key(), k);
    it.Next();
  }
  EXPECT_FALSE(it.Valid());
}

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
  FillRandom(&list, &model, 3000, 0, 10000);
  for (Key k = 0; k < 10000; k += 7) EXPECT_EQ(list.Contains(k), model.count(k) == 1) << k;

  ExpectListHolds(list, model);

  List::Iterator it(&list);
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
  WithTwoReaders(reader, &done, [&] {
    for (Key k = 0; k < kKeys; ++k) {
      list.Insert(k);
      inserted.store(k + 1, std::memory_order_release);
    }
  });
  List::Iterator it(&list);
  it.SeekToLast();
  ASSERT_TRUE(it.Valid());
  EXPECT_EQ(it.key(), kKeys - 1);
}

// The expected answer of a Seek: the first model key >= target.
const Key* LowerBound(const std::set<Key>& model, Key target) {
  auto it = model.lower_bound(target);
  return it == model.end() ? nullptr : &*it;
}

// Seek through finger (from the head when null) lands where the model says.
void ExpectSeek(const List& list, const std::set<Key>& model, Key target, List::Finger* finger) {
  const Key* want = LowerBound(model, target);
  const Key* got = finger == nullptr ? list.Seek(target) : list.Seek(target, finger);
  if (want == nullptr) {
    EXPECT_EQ(got, nullptr) << "Seek " << target;
  } else {
    ASSERT_NE(got, nullptr) << "Seek " << target;
    EXPECT_EQ(*got, *want) << "Seek " << target;
  }
}

// A finger answers as a search from the head does, for targets in
// ascending runs with gaps of every size, repeated targets, targets that go
// back, and targets past the end.
TEST(SkipListTest, SeeksThroughAFingerMatchSeeksFromTheHead) {
  Arena arena;
  List list(Comparator(), &arena);
  std::set<Key> model;
  absl::BitGen gen;
  FillRandom(&list, &model, 5000, 10, 100000);
  List::Finger finger;
  ExpectSeek(list, model, 0, &finger);  // before the first entry
  for (int run = 0; run < 200; ++run) {
    Key target = absl::Uniform<Key>(gen, 0, 100000);
    const Key max_gap = Key{1} << absl::Uniform<int>(gen, 0, 17);
    for (int i = 0; i < 50; ++i) {
      ExpectSeek(list, model, target, &finger);
      if (absl::Bernoulli(gen, 0.1)) ExpectSeek(list, model, target, &finger);  // again
      target += absl::Uniform<Key>(gen, 0, max_gap + 1);
    }
    // Back to an earlier key, and past the end.
    ExpectSeek(list, model, absl::Uniform<Key>(gen, 0, target / 2 + 1), &finger);
    if (run % 50 == 0) ExpectSeek(list, model, 200000, &finger);
  }
  // Every model key, in order, through one finger.
  List::Finger sweep;
  for (Key k : model) ExpectSeek(list, model, k, &sweep);
}

// Inserts through a finger, in ascending runs and at random, keep the list
// what a model says: each insert returns the entry it now precedes, and
// the list iterates in order with every key.
TEST(SkipListTest, InsertsThroughAFingerKeepTheListSorted) {
  Arena arena;
  List list(Comparator(), &arena);
  std::set<Key> model;
  absl::BitGen gen;
  List::Finger finger;
  for (int run = 0; run < 300; ++run) {
    Key k = absl::Uniform<Key>(gen, 0, 1000000);
    const int length = absl::Uniform<int>(gen, 1, 100);
    for (int i = 0; i < length; ++i) {
      // Mostly ascending; now and then a key from anywhere.
      const Key key = absl::Bernoulli(gen, 0.05) ? absl::Uniform<Key>(gen, 0, 1000000) : k;
      k += absl::Uniform<Key>(gen, 1, 500);
      if (!model.insert(key).second) continue;
      const Key* after = list.Insert(key, &finger);
      auto next = model.upper_bound(key);
      if (next == model.end()) {
        EXPECT_EQ(after, nullptr) << key;
      } else {
        ASSERT_NE(after, nullptr) << key;
        EXPECT_EQ(*after, *next) << key;
      }
    }
  }
  ExpectListHolds(list, model);
  for (int i = 0; i < 2000; ++i) ExpectSeek(list, model, absl::Uniform<Key>(gen, 0, 1000001), nullptr);
}

// A finger made before inserts that did not go through it still inserts
// right: it sees the list grew taller and starts over from the head.
TEST(SkipListTest, AFingerSurvivesInsertsMadeWithoutIt) {
  Arena arena;
  List list(Comparator(), &arena);
  std::set<Key> model;
  List::Finger finger;
  for (Key k = 0; k < 4; ++k) {
    list.Insert(k * 2, &finger);
    model.insert(k * 2);
  }
  // Enough plain inserts to raise the height (1 in 4 nodes per level).
  for (Key k = 1000; k < 60000; ++k) {
    list.Insert(k);
    model.insert(k);
  }
  for (Key k = 9; k < 1000; k += 2) {
    list.Insert(k, &finger);
    model.insert(k);
  }
  ExpectListHolds(list, model);
}

// Readers seek through fingers, in ascending runs, while one writer inserts
// through its own: every key the writer had inserted when a seek began is
// found, and no seek lands before its target.
TEST(SkipListTest, FingerReadersRunConcurrentlyWithAFingerWriter) {
  Arena arena;
  List list(Comparator(), &arena);
  constexpr Key kKeys = 40000;
  // The writer inserts the even keys 0, 2, ... in order; readers seek all
  // over, behind the writer and around it.
  std::atomic<Key> inserted{0};  // even keys [0, inserted) are in the list
  std::atomic<bool> done{false};
  auto reader = [&] {
    absl::BitGen gen;
    while (!done.load(std::memory_order_acquire)) {
      List::Finger finger;
      Key target = absl::Uniform<Key>(gen, 0, kKeys);
      for (int i = 0; i < 300 && target < kKeys; ++i) {
        const Key known = inserted.load(std::memory_order_acquire);
        const Key* got = list.Seek(target, &finger);
        const Key want = target + (target % 2);  // the next even key
        if (want < known) {
          ASSERT_NE(got, nullptr) << target;
          ASSERT_EQ(*got, want) << target;
        } else if (got != nullptr) {
          ASSERT_GE(*got, target);
        }
        target += absl::Uniform<Key>(gen, 0, 64);
      }
    }
  };
  WithTwoReaders(reader, &done, [&] {
    List::Finger finger;
    for (Key k = 0; k < kKeys; k += 2) {
      list.Insert(k, &finger);
      inserted.store(k + 1, std::memory_order_release);
    }
  });
  List::Iterator it(&list);
  it.SeekToLast();
  ASSERT_TRUE(it.Valid());
  EXPECT_EQ(it.key(), kKeys - 2);
}

}  // namespace
}  // namespace cairn::lsm
