// BlockCache keeps recently used, uncompressed SST data blocks in memory,
// keyed by (file number, block offset): an io::ShardedLruCache of Blocks,
// charged by block size. A block evicted while an iterator still reads it
// stays alive until the iterator lets go. File numbers are never reused, so
// blocks of a deleted file simply age out.
//
// Thread safety: every method may be called from any thread.
#ifndef CAIRN_LSM_BLOCK_CACHE_H_
#define CAIRN_LSM_BLOCK_CACHE_H_

#include "io/sharded_lru_cache.h"
#include "lsm/block.h"

namespace cairn::lsm {

inline constexpr int kDefaultBlockCacheShardBits = 4;  // 16 shards

// Insert(file_number, offset, block, charge), Lookup(file_number, offset),
// Erase, usage, capacity, entries: see io::ShardedLruCache.
class BlockCache : public io::ShardedLruCache<Block> {
 public:
  explicit BlockCache(size_t capacity_bytes, int num_shard_bits = kDefaultBlockCacheShardBits)
      : ShardedLruCache(capacity_bytes, num_shard_bits) {}
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_BLOCK_CACHE_H_
