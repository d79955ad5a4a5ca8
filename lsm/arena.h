// Arena is a bump allocator for the memtable: it hands out memory from blocks
// (4 KiB unless the constructor says otherwise) and frees it all at once when
// the Arena is destroyed. Allocations larger than a quarter block get a block
// of their own, so a big value wastes at most the tail of the current block
// rather than the rest of it.
//
// Thread safety: Allocate and AllocateAligned need external synchronization
// (the memtable's single writer). MemoryUsage may be read from any thread.
#ifndef CAIRN_LSM_ARENA_H_
#define CAIRN_LSM_ARENA_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace cairn::lsm {

class Arena {
 public:
  // Size of a normal block, unless the constructor is given another.
  static constexpr size_t kBlockSize = 4096;
  // Alignment of AllocateAligned: enough for pointers and std::atomic words.
  static constexpr size_t kAlignment = alignof(std::max_align_t) > 8 ? alignof(std::max_align_t)
                                                                     : 8;

  // REQUIRES: block_size >= kBlockSize.
  explicit Arena(size_t block_size = kBlockSize);
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena() = default;

  // Returns `bytes` bytes of memory that live as long as the Arena.
  // REQUIRES: bytes > 0.
  char* Allocate(size_t bytes);

  // Like Allocate, but the result is aligned to kAlignment.
  char* AllocateAligned(size_t bytes);

  // Bytes reserved from the system so far (blocks plus bookkeeping), which is
  // what the memtable's size limit is measured against.
  size_t MemoryUsage() const { return memory_usage_.load(std::memory_order_relaxed); }

 private:
  // Serves an allocation that does not fit in the current block. Fresh blocks
  // come from new[], so they start aligned to kAlignment.
  char* AllocateFallback(size_t bytes);
  char* NewBlock(size_t block_bytes);

  const size_t block_size_;
  char* alloc_ptr_ = nullptr;
  size_t alloc_bytes_remaining_ = 0;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::atomic<size_t> memory_usage_{0};
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_ARENA_H_
