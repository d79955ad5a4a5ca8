// BlockCache keeps recently used, uncompressed SST data blocks in memory,
// keyed by (file number, block offset). It is an LRU bounded by bytes and
// split into shards, each with its own lock and an equal share of the
// capacity, so concurrent readers rarely contend.
//
// Entries are std::shared_ptr<const Block>: a block evicted while an
// iterator still reads it stays alive until the iterator lets go. File
// numbers are never reused, so blocks of a deleted file simply age out.
//
// Thread safety: every method may be called from any thread.
#ifndef CAIRN_LSM_BLOCK_CACHE_H_
#define CAIRN_LSM_BLOCK_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "lsm/block.h"

namespace cairn::lsm {

inline constexpr int kDefaultBlockCacheShardBits = 4;  // 16 shards

class BlockCache {
 public:
  // capacity_bytes of 0 disables the cache: Insert keeps nothing, Lookup
  // finds nothing. num_shard_bits (0..8) splits it into 2^bits shards.
  explicit BlockCache(size_t capacity_bytes, int num_shard_bits = kDefaultBlockCacheShardBits);
  ~BlockCache();

  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // Caches block under (file_number, offset), replacing any entry there, and
  // charges it `charge` bytes (usually block->size()). Evicts the least
  // recently used entries of the shard until it fits; a block larger than a
  // shard's capacity is not cached.
  void Insert(uint64_t file_number, uint64_t offset, std::shared_ptr<const Block> block,
              size_t charge);

  // The cached block, marked most recently used; null when absent.
  std::shared_ptr<const Block> Lookup(uint64_t file_number, uint64_t offset);

  // Drops the entry if present.
  void Erase(uint64_t file_number, uint64_t offset);

  // Bytes charged by the entries currently cached.
  size_t usage() const;
  size_t capacity() const { return capacity_; }
  size_t entries() const;

 private:
  struct Key {
    uint64_t file_number;
    uint64_t offset;
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.file_number, k.offset);
    }
  };
  struct Entry {
    Key key;
    std::shared_ptr<const Block> block;
    size_t charge;
  };
  // One LRU list: front = most recently used.
  struct Shard {
    mutable absl::Mutex mu;
    size_t capacity = 0;
    size_t usage ABSL_GUARDED_BY(mu) = 0;
    std::list<Entry> lru ABSL_GUARDED_BY(mu);
    absl::flat_hash_map<Key, std::list<Entry>::iterator> index ABSL_GUARDED_BY(mu);
  };

  Shard& ShardFor(const Key& key);
  static void EraseLocked(Shard& shard, std::list<Entry>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);

  const size_t capacity_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_BLOCK_CACHE_H_
