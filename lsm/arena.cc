#include "lsm/arena.h"

#include <cassert>
#include <cstdint>

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

Arena::Arena(size_t block_size) : block_size_(block_size) { assert(block_size >= kBlockSize); }

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
    return NewBlock(bytes);
  }
  // Abandon the rest of the current block (under a quarter block is lost).
  alloc_ptr_ = NewBlock(block_size_);
  alloc_bytes_remaining_ = block_size_;
  char* result = alloc_ptr_;
  alloc_ptr_ += bytes;
  alloc_bytes_remaining_ -= bytes;
  return result;
}

char* Arena::NewBlock(size_t block_bytes) {
  blocks_.push_back(std::make_unique_for_overwrite<char[]>(block_bytes));
  memory_usage_.fetch_add(block_bytes + sizeof(std::unique_ptr<char[]>), std::memory_order_relaxed);
  return blocks_.back().get();
}

}  // namespace cairn::lsm
