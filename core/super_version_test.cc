#include "core/super_version.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace cairn {
namespace {

// A SuperVersion whose memtable lets the test see when it is destroyed.
std::unique_ptr<SuperVersion> NewSuperVersion(std::vector<std::weak_ptr<lsm::MemTable>>* mems) {
  auto sv = std::make_unique<SuperVersion>();
  sv->mem = std::make_shared<lsm::MemTable>();
  if (mems != nullptr) mems->push_back(sv->mem);
  return sv;
}

TEST(SuperVersionCacheTest, AcquireReturnsTheInstalledOneAndNumbersGrow) {
  SuperVersionCache cache;
  EXPECT_EQ(cache.number(), 0u);
  cache.Install(NewSuperVersion(nullptr));
  {
    SuperVersionRef ref = cache.Acquire();
    EXPECT_EQ(ref->number, 1u);
  }
  cache.Install(NewSuperVersion(nullptr));
  SuperVersionRef ref = cache.Acquire();
  EXPECT_EQ(ref->number, 2u);
  EXPECT_EQ(cache.number(), 2u);
}

TEST(SuperVersionCacheTest, ASecondReadOnTheSameThreadTakesNoLock) {
  SuperVersionCache cache;
  cache.Install(NewSuperVersion(nullptr));
  { SuperVersionRef first = cache.Acquire(); }
  const uint64_t slow = cache.slow_acquires();
  for (int i = 0; i < 100; ++i) {
    SuperVersionRef ref = cache.Acquire();
    // The cache's reference and the one the slot lent to this read.
    EXPECT_EQ(ref->refs_for_testing(), 2);
  }
  EXPECT_EQ(cache.slow_acquires(), slow);
}

TEST(SuperVersionCacheTest, AnInstallReleasesTheCachedOneOnceNoReaderHoldsIt) {
  std::vector<std::weak_ptr<lsm::MemTable>> mems;
  SuperVersionCache cache;
  cache.Install(NewSuperVersion(&mems));
  { SuperVersionRef warm = cache.Acquire(); }  // the slot now caches it
  SuperVersionRef reading = cache.Acquire();
  SuperVersionRef owned = cache.AcquireOwned();  // slot busy: a reference of its own
  cache.Install(NewSuperVersion(&mems));
  EXPECT_FALSE(mems[0].expired());  // two readers still hold it
  reading.Reset();
  EXPECT_FALSE(mems[0].expired());
  owned.Reset();
  EXPECT_TRUE(mems[0].expired());
  SuperVersionRef next = cache.Acquire();
  EXPECT_EQ(next->number, 2u);
}

TEST(SuperVersionCacheTest, ReadersRacingInstallsSeeNewerVersionsAndLeakNothing) {
  std::vector<std::weak_ptr<lsm::MemTable>> mems;
  constexpr int kInstalls = 2000;
  constexpr int kReaders = 6;
  {
    SuperVersionCache cache;
    cache.Install(NewSuperVersion(&mems));
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> reads{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < kReaders; ++t) {
      readers.emplace_back([&, t] {
        uint64_t last = 0;
        while (!stop.load(std::memory_order_acquire)) {
          // Alternate the two kinds, as Get and NewIterator do.
          SuperVersionRef ref = (t % 2 == 0 || last % 3 != 0) ? cache.Acquire()
                                                               : cache.AcquireOwned();
          ASSERT_NE(ref->mem, nullptr);
          ASSERT_GE(ref->number, last) << "a reader went back in time";
          ASSERT_TRUE(ref->mem->empty());  // touch what it points at
          last = ref->number;
          reads.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    std::vector<std::unique_ptr<SuperVersion>> ready;
    for (int i = 1; i < kInstalls; ++i) ready.push_back(NewSuperVersion(&mems));
    for (auto& sv : ready) cache.Install(std::move(sv));
    stop.store(true, std::memory_order_release);
    for (auto& r : readers) r.join();
    EXPECT_GT(reads.load(), 0u);
    // Only the current one is alive, and whatever a slot still caches.
    size_t alive = 0;
    for (const auto& m : mems) alive += !m.expired();
    EXPECT_LE(alive, 1u + SuperVersionCache::kSlots);
    EXPECT_FALSE(mems.back().expired());
  }
  for (const auto& m : mems) EXPECT_TRUE(m.expired());
}

}  // namespace
}  // namespace cairn
