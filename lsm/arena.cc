#include "lsm/arena.h"

#include <cassert>
#include <cstdint>

// Blocks kept in a pool are poisoned under AddressSanitizer, so that a read
// through a pointer into a destroyed memtable is still reported as one.
#if defined(__SANITIZE_ADDRESS__)
#define CAIRN_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CAIRN_ARENA_ASAN 1
#endif
#endif
#ifdef CAIRN_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define CAIRN_POISON_BLOCK(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define CAIRN_UNPOISON_BLOCK(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define CAIRN_POISON_BLOCK(p, n) ((void)(p), (void)(n))
#define CAIRN_UNPOISON_BLOCK(p, n) ((void)(p), (void)(n))
#endif

namespace cairn::lsm {

namespace {

// Bytes needed to move p up to a multiple of alignment (a power of two).
size_t Padding(const char* p, size_t alignment) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  return (alignment - (addr & (alignment - 1))) & (alignment - 1);
}

}  // namespace

static_assert((Arena::kAlignment & (Arena::kAlignment - 1)) == 0,
              "arena alignment must be a power of two");

ArenaBlockPool::ArenaBlockPool(size_t block_size, size_t capacity_bytes)
    : block_size_(block_size), max_blocks_(capacity_bytes / block_size) {
  assert(block_size > 0);
}

ArenaBlockPool::~ArenaBlockPool() {
  for (auto& block : blocks_) CAIRN_UNPOISON_BLOCK(block.get(), block_size_);
}

std::unique_ptr<char[]> ArenaBlockPool::Take() {
  absl::MutexLock lock(&mu_);
  if (blocks_.empty()) return nullptr;
  std::unique_ptr<char[]> block = std::move(blocks_.back());
  blocks_.pop_back();
  ++reused_;
  CAIRN_UNPOISON_BLOCK(block.get(), block_size_);
  return block;
}

void ArenaBlockPool::Give(std::unique_ptr<char[]> block) {
  {
    absl::MutexLock lock(&mu_);
    if (blocks_.size() < max_blocks_) {
      CAIRN_POISON_BLOCK(block.get(), block_size_);
      blocks_.push_back(std::move(block));
      return;
    }
  }
  // Full: the block is freed here, outside the lock.
}

size_t ArenaBlockPool::bytes() const {
  absl::MutexLock lock(&mu_);
  return blocks_.size() * block_size_;
}

uint64_t ArenaBlockPool::reused() const {
  absl::MutexLock lock(&mu_);
  return reused_;
}

Arena::Arena(size_t block_size, std::shared_ptr<ArenaBlockPool> pool)
    : block_size_(block_size),
      pool_(pool != nullptr && pool->block_size() == block_size ? std::move(pool) : nullptr) {
  assert(block_size >= kBlockSize);
}

Arena::~Arena() {
  if (pool_ == nullptr) return;
  for (auto& block : blocks_) pool_->Give(std::move(block));
}

char* Arena::Allocate(size_t bytes) {
  if (bytes <= alloc_bytes_remaining_) {
    char* result = alloc_ptr_;
    alloc_ptr_ += bytes;
    alloc_bytes_remaining_ -= bytes;
    return result;
  }
  return AllocateFallback(bytes);
}

char* Arena::AllocateAligned(size_t bytes) {
  const size_t pad = Padding(alloc_ptr_, kAlignment);
  if (alloc_ptr_ != nullptr && bytes + pad <= alloc_bytes_remaining_) {
    char* result = alloc_ptr_ + pad;
    alloc_ptr_ += bytes + pad;
    alloc_bytes_remaining_ -= bytes + pad;
    return result;
  }
  return AllocateFallback(bytes);
}

char* Arena::AllocateFallback(size_t bytes) {
  // new char[] returns memory aligned for any fundamental type, so a fresh
  // block's start already satisfies kAlignment.
  if (bytes > block_size_ / 4) {
    // A large object gets its own block; the current block keeps serving
    // small allocations, so its unused tail is not thrown away.
    own_blocks_.push_back(std::make_unique_for_overwrite<char[]>(bytes));
    memory_usage_.fetch_add(bytes + sizeof(std::unique_ptr<char[]>), std::memory_order_relaxed);
    return own_blocks_.back().get();
  }
  // Abandon the rest of the current block (under a quarter block is lost).
  alloc_ptr_ = NewBlock();
  alloc_bytes_remaining_ = block_size_;
  char* result = alloc_ptr_;
  alloc_ptr_ += bytes;
  alloc_bytes_remaining_ -= bytes;
  return result;
}

char* Arena::NewBlock() {
  std::unique_ptr<char[]> block = pool_ != nullptr ? pool_->Take() : nullptr;
  if (block == nullptr) block = std::make_unique_for_overwrite<char[]>(block_size_);
  blocks_.push_back(std::move(block));
  memory_usage_.fetch_add(block_size_ + sizeof(std::unique_ptr<char[]>), std::memory_order_relaxed);
  return blocks_.back().get();
}

}  // namespace cairn::lsm
