#include "lsm/arena.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "gtest/gtest.h"

namespace cairn::lsm {
namespace {

TEST(ArenaTest, NewArenaHoldsNoMemory) {
  Arena arena;
  EXPECT_EQ(arena.MemoryUsage(), 0u);
}

TEST(ArenaTest, SmallAllocationsShareOneBlock) {
  Arena arena;
  char* a = arena.Allocate(100);
  const size_t usage = arena.MemoryUsage();
  EXPECT_GE(usage, Arena::kBlockSize);
  char* b = arena.Allocate(100);
  EXPECT_EQ(b, a + 100);
  EXPECT_EQ(arena.MemoryUsage(), usage);
}

TEST(ArenaTest, FullBlockIsFollowedByANewOne) {
  Arena arena;
  for (size_t i = 0; i < Arena::kBlockSize / 512; ++i) arena.Allocate(512);
  const size_t usage = arena.MemoryUsage();
  arena.Allocate(1);
  EXPECT_GE(arena.MemoryUsage(), usage + Arena::kBlockSize);
}

TEST(ArenaTest, LargeAllocationGetsItsOwnBlockAndKeepsTheCurrentOne) {
  Arena arena;
  char* small1 = arena.Allocate(10);
  const size_t before = arena.MemoryUsage();
  char* big = arena.Allocate(100'000);
  EXPECT_GE(arena.MemoryUsage(), before + 100'000);
  EXPECT_LT(arena.MemoryUsage(), before + 100'000 + Arena::kBlockSize);
  // The small allocations continue in the block they started in.
  char* small2 = arena.Allocate(10);
  EXPECT_EQ(small2, small1 + 10);
  std::memset(big, 0xab, 100'000);
  EXPECT_EQ(static_cast<unsigned char>(big[99'999]), 0xab);
}

// A bigger block (a memtable's arena, lsm/memtable.h) packs kilobyte values
// one after another; only what passes a quarter of it gets a block alone.
TEST(ArenaTest, BiggerBlocksPackKilobyteAllocations) {
  constexpr size_t kBlock = 64 << 10;
  Arena arena(kBlock);
  char* first = arena.Allocate(4096);
  const size_t usage = arena.MemoryUsage();
  EXPECT_GE(usage, kBlock);
  EXPECT_LT(usage, kBlock + Arena::kBlockSize);
  for (int i = 1; i < 15; ++i) EXPECT_EQ(arena.Allocate(4096), first + i * 4096);
  EXPECT_EQ(arena.MemoryUsage(), usage);
  arena.Allocate(kBlock / 4 + 1);  // its own block
  EXPECT_EQ(arena.Allocate(4096), first + 15 * 4096);
  EXPECT_GE(arena.MemoryUsage(), usage + kBlock / 4 + 1);
  EXPECT_LT(arena.MemoryUsage(), usage + kBlock / 2);
}

TEST(ArenaTest, AlignedAllocationsAreAligned) {
  Arena arena;
  absl::BitGen gen;
  for (int i = 0; i < 2000; ++i) {
    if (absl::Bernoulli(gen, 0.5)) arena.Allocate(absl::Uniform<size_t>(gen, 1, 20));
    const size_t n = absl::Uniform<size_t>(gen, 1, 3000);
    char* p = arena.AllocateAligned(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % Arena::kAlignment, 0u) << "allocation " << i;
  }
}

TEST(ArenaTest, AllocationsDoNotOverlapAndKeepTheirContents) {
  Arena arena;
  absl::BitGen gen;
  std::vector<std::pair<char*, size_t>> allocated;
  size_t total = 0;
  for (int i = 0; i < 5000; ++i) {
    size_t n = absl::Uniform<size_t>(gen, 1, 200);
    if (i % 500 == 0) n = absl::Uniform<size_t>(gen, 2000, 20000);  // Some large ones.
    char* p = absl::Bernoulli(gen, 0.3) ? arena.AllocateAligned(n) : arena.Allocate(n);
    std::memset(p, static_cast<char>(i), n);
    allocated.emplace_back(p, n);
    total += n;
  }
  for (size_t i = 0; i < allocated.size(); ++i) {
    const auto [p, n] = allocated[i];
    for (size_t j = 0; j < n; ++j) {
      ASSERT_EQ(p[j], static_cast<char>(i)) << "allocation " << i << " byte " << j;
    }
  }
  EXPECT_GE(arena.MemoryUsage(), total);
  // Waste stays bounded: at most a quarter block lost per block, plus
  // bookkeeping and alignment.
  EXPECT_LE(arena.MemoryUsage(), total * 2 + Arena::kBlockSize);
}

TEST(ArenaTest, MemoryUsageIsReadableFromAnotherThread) {
  Arena arena;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    size_t last = 0;
    while (!done.load(std::memory_order_acquire)) {
      const size_t now = arena.MemoryUsage();
      EXPECT_GE(now, last);
      last = now;
    }
  });
  for (int i = 0; i < 20000; ++i) arena.Allocate(64);
  done.store(true, std::memory_order_release);
  reader.join();
  EXPECT_GE(arena.MemoryUsage(), 20000u * 64);
}

TEST(ArenaBlockPoolTest, ADestroyedArenaGivesItsBlocksToTheNext) {
  constexpr size_t kBlock = 64 << 10;
  auto pool = std::make_shared<ArenaBlockPool>(kBlock, 4 * kBlock);
  std::vector<char*> first_blocks;
  {
    Arena arena(kBlock, pool);
    for (int i = 0; i < 3; ++i) {
      first_blocks.push_back(arena.Allocate(kBlock / 4));
      arena.Allocate(kBlock - kBlock / 4);  // fills the block
    }
    arena.Allocate(kBlock);  // its own block: never pooled
    EXPECT_EQ(pool->bytes(), 0u);
  }
  EXPECT_EQ(pool->bytes(), 3 * kBlock);
  Arena next(kBlock, pool);
  char* p = next.Allocate(100);
  EXPECT_NE(std::find(first_blocks.begin(), first_blocks.end(), p), first_blocks.end());
  EXPECT_EQ(pool->bytes(), 2 * kBlock);
  EXPECT_EQ(pool->reused(), 1u);
  // A reused block counts against the arena like a fresh one.
  EXPECT_GE(next.MemoryUsage(), kBlock);
  EXPECT_LT(next.MemoryUsage(), kBlock + Arena::kBlockSize);
}

TEST(ArenaBlockPoolTest, KeepsNoMoreThanItsCapacity) {
  constexpr size_t kBlock = 16 << 10;
  auto pool = std::make_shared<ArenaBlockPool>(kBlock, 2 * kBlock);
  {
    Arena arena(kBlock, pool);
    for (int i = 0; i < 5; ++i) {
      arena.Allocate(kBlock / 4);
      arena.Allocate(kBlock - kBlock / 4);
    }
  }
  EXPECT_EQ(pool->bytes(), 2 * kBlock);
}

TEST(ArenaBlockPoolTest, APoolOfAnotherBlockSizeIsNotUsed) {
  auto pool = std::make_shared<ArenaBlockPool>(8192, 1 << 20);
  {
    Arena arena(Arena::kBlockSize, pool);
    arena.Allocate(100);
  }
  EXPECT_EQ(pool->bytes(), 0u);
}

// Arenas on several threads share one pool; every block handed out is
// handed to one arena at a time (each writes its own pattern and finds it
// again).
TEST(ArenaBlockPoolTest, ArenasOnManyThreadsShareOnePool) {
  constexpr size_t kBlock = 8192;
  auto pool = std::make_shared<ArenaBlockPool>(kBlock, 16 * kBlock);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([pool, t] {
      for (int round = 0; round < 200; ++round) {
        Arena arena(kBlock, pool);
        std::vector<char*> pieces;  // a quarter block each: three blocks
        for (int i = 0; i < 12; ++i) {
          char* q = arena.Allocate(kBlock / 4);
          std::memset(q, 'a' + t, kBlock / 4);
          pieces.push_back(q);
        }
        for (char* q : pieces) {
          for (size_t j = 0; j < kBlock / 4; j += 256) ASSERT_EQ(q[j], 'a' + t);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(pool->bytes(), 16 * kBlock);
  EXPECT_GT(pool->reused(), 0u);
}

#if defined(__SANITIZE_ADDRESS__)
#define CAIRN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CAIRN_TEST_ASAN 1
#endif
#endif
#ifdef CAIRN_TEST_ASAN
// Under AddressSanitizer a block kept in the pool is poisoned: a read through
// a pointer into a destroyed memtable is still caught, as it was when the
// block went back to the system.
TEST(ArenaBlockPoolDeathTest, AReadOfAPooledBlockIsReported) {
  constexpr size_t kBlock = 8192;
  auto pool = std::make_shared<ArenaBlockPool>(kBlock, 4 * kBlock);
  volatile char* stale = nullptr;
  {
    Arena arena(kBlock, pool);
    stale = arena.Allocate(16);
    stale[0] = 'x';
  }
  EXPECT_DEATH({ [[maybe_unused]] char c = stale[0]; }, "use-after-poison");
}
#endif

}  // namespace
}  // namespace cairn::lsm
