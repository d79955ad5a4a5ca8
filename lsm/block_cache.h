// BlockCache keeps recently used, uncompressed SST data blocks in memory,
// keyed by (file number, block offset) and charged by block size. It is a
// view of an io::Cache: one of its own, or the DB's cache shared with the
// value log's values (Options::cache_size), where blocks and values compete
// in one LRU for one budget. A block evicted while an iterator still reads
// it stays alive until the iterator lets go. File numbers are never reused,
// so blocks of a deleted file simply age out.
//
// Thread safety: every method may be called from any thread.
#ifndef CAIRN_LSM_BLOCK_CACHE_H_
#define CAIRN_LSM_BLOCK_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "io/sharded_lru_cache.h"
#include "lsm/block.h"

namespace cairn::lsm {

inline constexpr int kDefaultBlockCacheShardBits = 4;  // 16 shards

class BlockCache {
 public:
  // A cache of its own of capacity_bytes (0: caches nothing).
  explicit BlockCache(size_t capacity_bytes, int num_shard_bits = kDefaultBlockCacheShardBits)
      : cache_(std::make_shared<io::Cache>(capacity_bytes, num_shard_bits)) {}
  // Blocks in a cache shared with other kinds of entries. REQUIRES: cache.
  explicit BlockCache(std::shared_ptr<io::Cache> cache) : cache_(std::move(cache)) {}

  // As io::ShardedLruCache::Insert, under kCacheKindBlock.
  void Insert(uint64_t file_number, uint64_t offset, std::shared_ptr<const Block> block,
              size_t charge) {
    cache_->Insert(file_number, offset, std::move(block), charge, io::kCacheKindBlock);
  }
  // The cached block, marked most recently used; null when absent.
  std::shared_ptr<const Block> Lookup(uint64_t file_number, uint64_t offset) {
    return std::static_pointer_cast<const Block>(
        cache_->Lookup(file_number, offset, io::kCacheKindBlock));
  }
  void Erase(uint64_t file_number, uint64_t offset) {
    cache_->Erase(file_number, offset, io::kCacheKindBlock);
  }

  // Bytes charged by the blocks cached now, and their number.
  size_t usage() const { return cache_->usage(io::kCacheKindBlock); }
  size_t entries() const { return cache_->entries(io::kCacheKindBlock); }
  // The capacity of the cache the blocks live in (shared or not).
  size_t capacity() const { return cache_->capacity(); }

 private:
  std::shared_ptr<io::Cache> cache_;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_BLOCK_CACHE_H_
