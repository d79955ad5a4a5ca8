// Arena is a bump allocator for the memtable: it hands out memory from blocks
// (4 KiB unless the constructor says otherwise) and frees it all at once when
// the Arena is destroyed. Allocations larger than a quarter block get a block
// of their own, so a big value wastes at most the tail of the current block
// rather than the rest of it.
//
// An Arena may draw its normal blocks from an ArenaBlockPool and give them
// back when it is destroyed, so that one memtable after another reuses the
// same memory instead of taking fresh pages from the system for each.
//
// Thread safety: Allocate and AllocateAligned need external synchronization
// (the memtable's single writer). MemoryUsage may be read from any thread.
// ArenaBlockPool is thread-safe.
#ifndef CAIRN_LSM_ARENA_H_
#define CAIRN_LSM_ARENA_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace cairn::lsm {

// Blocks of one size that destroyed arenas left behind, kept for the next
// arenas. Memory the system hands out for a fresh block is mapped on first
// touch, a page fault per 4 KiB page; with 1 MiB blocks freed by each flushed
// memtable, the C library gives them back to the system, and the next
// memtable faulted its way through them again on the writer's thread
// (docs/decisions/20261204_memtable_block_reuse.md). The pool keeps at most
// capacity_bytes, so a database holds at most about one memtable more than
// its memtables (when idle after a flush).
class ArenaBlockPool {
 public:
  // REQUIRES: block_size > 0.
  ArenaBlockPool(size_t block_size, size_t capacity_bytes);
  ~ArenaBlockPool();
  ArenaBlockPool(const ArenaBlockPool&) = delete;
  ArenaBlockPool& operator=(const ArenaBlockPool&) = delete;

  size_t block_size() const { return block_size_; }
  // A kept block, or null when none is kept.
  std::unique_ptr<char[]> Take();
  // Keeps the block, or frees it when the pool is full.
  // REQUIRES: the block holds block_size() bytes.
  void Give(std::unique_ptr<char[]> block);
  // Bytes kept now.
  size_t bytes() const;
  // Blocks handed out by Take so far (reused, not newly allocated).
  uint64_t reused() const;

 private:
  const size_t block_size_;
  const size_t max_blocks_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<char[]>> blocks_ ABSL_GUARDED_BY(mu_);
  uint64_t reused_ ABSL_GUARDED_BY(mu_) = 0;
};

class Arena {
 public:
  // Size of a normal block, unless the constructor is given another.
  static constexpr size_t kBlockSize = 4096;
  // Alignment of AllocateAligned: enough for pointers and std::atomic words.
  static constexpr size_t kAlignment = alignof(std::max_align_t) > 8 ? alignof(std::max_align_t)
                                                                     : 8;

  // REQUIRES: block_size >= kBlockSize. With a pool whose block size is
  // block_size, normal blocks come from it when it has one and go back to
  // it when the Arena is destroyed; a pool of another block size is not
  // used. The pool must outlive the Arena (the shared pointer sees to it).
  explicit Arena(size_t block_size = kBlockSize, std::shared_ptr<ArenaBlockPool> pool = nullptr);
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();

  // Returns `bytes` bytes of memory that live as long as the Arena.
  // REQUIRES: bytes > 0.
  char* Allocate(size_t bytes);

  // Like Allocate, but the result is aligned to kAlignment.
  char* AllocateAligned(size_t bytes);

  // Bytes reserved from the system so far (blocks plus bookkeeping), which is
  // what the memtable's size limit is measured against.
  size_t MemoryUsage() const { return memory_usage_.load(std::memory_order_relaxed); }

 private:
  // Serves an allocation that does not fit in the current block. Blocks
  // come from new[] (a pool's too), so they start aligned to kAlignment.
  char* AllocateFallback(size_t bytes);
  // A normal block, from the pool when it has one.
  char* NewBlock();

  const size_t block_size_;
  const std::shared_ptr<ArenaBlockPool> pool_;  // null: none, or another block size
  char* alloc_ptr_ = nullptr;
  size_t alloc_bytes_remaining_ = 0;
  std::vector<std::unique_ptr<char[]>> blocks_;      // normal blocks, back to pool_
  std::vector<std::unique_ptr<char[]>> own_blocks_;  // large allocations, never pooled
  std::atomic<size_t> memory_usage_{0};
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_ARENA_H_
