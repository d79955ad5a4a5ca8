#include "vlog/value_cache.h"

#include <algorithm>
#include <utility>

#include "absl/hash/hash.h"

namespace cairn::vlog {

ValueCache::ValueCache(size_t capacity_bytes, int num_shard_bits)
    : capacity_(capacity_bytes), shard_bits_(std::clamp(num_shard_bits, 0, 8)) {
  const size_t num_shards = size_t{1} << shard_bits_;
  shards_.reserve(num_shards);
  for (size_t i = 0; i < num_shards; ++i) {
    auto shard = std::make_unique<Shard>();
    // Spread the remainder so the shards add up to exactly the capacity.
    shard->capacity = capacity_bytes / num_shards + (i < capacity_bytes % num_shards ? 1 : 0);
    shards_.push_back(std::move(shard));
  }
}

ValueCache::~ValueCache() = default;

ValueCache::Shard& ValueCache::ShardFor(const Key& key) {
  if (shard_bits_ == 0) return *shards_[0];
  // The top bits of the hash pick the shard; flat_hash_map uses the low ones.
  const uint64_t h = absl::Hash<Key>{}(key);
  return *shards_[h >> (64 - shard_bits_)];
}

std::shared_ptr<const std::string> ValueCache::EraseLocked(Shard& shard,
                                                           std::list<Entry>::iterator it) {
  std::shared_ptr<const std::string> value = std::move(it->value);
  shard.usage -= it->charge;
  shard.index.erase(it->key);
  shard.lru.erase(it);
  return value;
}

void ValueCache::Insert(uint64_t segment_id, uint64_t offset,
                        std::shared_ptr<const std::string> value) {
  if (value == nullptr || capacity_ == 0) return;
  const Key key{segment_id, offset};
  const size_t charge = Charge(value->size());
  Shard& shard = ShardFor(key);
  // Values leaving the cache are released after the lock is dropped: the
  // last reference to a large string should not be freed under it.
  std::vector<std::shared_ptr<const std::string>> released;
  absl::MutexLock lock(&shard.mu);
  if (auto it = shard.index.find(key); it != shard.index.end()) {
    released.push_back(EraseLocked(shard, it->second));
  }
  if (charge > shard.capacity) return;
  while (shard.usage + charge > shard.capacity) {
    released.push_back(EraseLocked(shard, std::prev(shard.lru.end())));
  }
  shard.lru.push_front(Entry{key, std::move(value), charge});
  shard.index.emplace(key, shard.lru.begin());
  shard.usage += charge;
}

std::shared_ptr<const std::string> ValueCache::Lookup(uint64_t segment_id, uint64_t offset) {
  const Key key{segment_id, offset};
  Shard& shard = ShardFor(key);
  absl::MutexLock lock(&shard.mu);
  auto it = shard.index.find(key);
  if (it == shard.index.end()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  shard.lru.splice(shard.lru.begin(), shard.lru, it->second);
  return it->second->value;
}

void ValueCache::Erase(uint64_t segment_id, uint64_t offset) {
  const Key key{segment_id, offset};
  Shard& shard = ShardFor(key);
  std::shared_ptr<const std::string> released;
  absl::MutexLock lock(&shard.mu);
  if (auto it = shard.index.find(key); it != shard.index.end()) {
    released = EraseLocked(shard, it->second);
  }
}

size_t ValueCache::usage() const {
  size_t total = 0;
  for (const auto& shard : shards_) {
    absl::MutexLock lock(&shard->mu);
    total += shard->usage;
  }
  return total;
}

size_t ValueCache::entries() const {
  size_t total = 0;
  for (const auto& shard : shards_) {
    absl::MutexLock lock(&shard->mu);
    total += shard->index.size();
  }
  return total;
}

}  // namespace cairn::vlog
