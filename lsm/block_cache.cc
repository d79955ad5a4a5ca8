#include "lsm/block_cache.h"

#include <algorithm>
#include <utility>

#include "absl/hash/hash.h"

namespace cairn::lsm {

BlockCache::BlockCache(size_t capacity_bytes, int num_shard_bits) : capacity_(capacity_bytes) {
  const int bits = std::clamp(num_shard_bits, 0, 8);
  const size_t n = size_t{1} << bits;
  shards_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    shards_.push_back(std::make_unique<Shard>());
    // Round up so the shards together hold at least capacity_bytes.
    shards_.back()->capacity = (capacity_bytes + n - 1) / n;
  }
}

BlockCache::~BlockCache() = default;

BlockCache::Shard& BlockCache::ShardFor(const Key& key) {
  // The low bits of absl::Hash feed the hash table; take the high ones.
  const size_t h = absl::Hash<Key>{}(key);
  return *shards_[(h >> 32) & (shards_.size() - 1)];
}

void BlockCache::EraseLocked(Shard& shard, std::list<Entry>::iterator it) {
  shard.usage -= it->charge;
  shard.index.erase(it->key);
  shard.lru.erase(it);
}

void BlockCache::Insert(uint64_t file_number, uint64_t offset,
                        std::shared_ptr<const Block> block, size_t charge) {
  const Key key{file_number, offset};
  Shard& shard = ShardFor(key);
  if (capacity_ == 0 || charge > shard.capacity || block == nullptr) return;
  // Blocks dropped here are released after the lock, outside it.
  std::vector<std::shared_ptr<const Block>> dropped;
  absl::MutexLock lock(&shard.mu);
  if (auto found = shard.index.find(key); found != shard.index.end()) {
    dropped.push_back(std::move(found->second->block));
    EraseLocked(shard, found->second);
  }
  while (shard.usage + charge > shard.capacity && !shard.lru.empty()) {
    dropped.push_back(std::move(shard.lru.back().block));
    EraseLocked(shard, std::prev(shard.lru.end()));
  }
  shard.lru.push_front(Entry{key, std::move(block), charge});
  shard.index[key] = shard.lru.begin();
  shard.usage += charge;
}

std::shared_ptr<const Block> BlockCache::Lookup(uint64_t file_number, uint64_t offset) {
  const Key key{file_number, offset};
  Shard& shard = ShardFor(key);
  absl::MutexLock lock(&shard.mu);
  auto found = shard.index.find(key);
  if (found == shard.index.end()) return nullptr;
  shard.lru.splice(shard.lru.begin(), shard.lru, found->second);
  return found->second->block;
}

void BlockCache::Erase(uint64_t file_number, uint64_t offset) {
  const Key key{file_number, offset};
  Shard& shard = ShardFor(key);
  std::shared_ptr<const Block> dropped;
  absl::MutexLock lock(&shard.mu);
  auto found = shard.index.find(key);
  if (found == shard.index.end()) return;
  dropped = std::move(found->second->block);
  EraseLocked(shard, found->second);
}

size_t BlockCache::usage() const {
  size_t total = 0;
  for (const auto& shard : shards_) {
    absl::MutexLock lock(&shard->mu);
    total += shard->usage;
  }
  return total;
}

size_t BlockCache::entries() const {
  size_t total = 0;
  for (const auto& shard : shards_) {
    absl::MutexLock lock(&shard->mu);
    total += shard->lru.size();
  }
  return total;
}

}  // namespace cairn::lsm
