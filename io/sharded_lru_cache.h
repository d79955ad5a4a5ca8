// ShardedLruCache<V> keeps recently used values in memory under a key of two
// 64-bit numbers (a file and an offset in it). It is an LRU bounded by the
// bytes callers charge, split into 2^shard_bits shards, each with its own
// lock and an equal share of the capacity, so concurrent readers rarely
// contend.
//
// Entries are std::shared_ptr<const V>: one evicted while a reader holds it
// stays alive until the reader lets go. Evicted values are released after
// the shard's lock.
//
// Each entry also has a kind (0..kMaxKinds-1), part of its key, and usage is
// counted per kind, so that several users can share one budget: io::Cache
// (ShardedLruCache<void>) holds the DB's SST blocks and its separated values
// in one LRU (lsm::BlockCache and vlog::ValueCache, each under its own
// CacheKind, cast back what they inserted).
//
// Thread safety: every method may be called from any thread.
#ifndef CAIRN_IO_SHARDED_LRU_CACHE_H_
#define CAIRN_IO_SHARDED_LRU_CACHE_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/synchronization/mutex.h"

namespace cairn::io {

template <typename V>
class ShardedLruCache {
 public:
  static constexpr int kMaxKinds = 4;

  // capacity_bytes of 0 disables the cache: Insert keeps nothing, Lookup
  // finds nothing. shard_bits is clamped to 0..8.
  explicit ShardedLruCache(size_t capacity_bytes, int shard_bits = 4) : capacity_(capacity_bytes) {
    const size_t n = size_t{1} << std::clamp(shard_bits, 0, 8);
    shards_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      shards_.push_back(std::make_unique<Shard>());
      // Round up so the shards together hold at least capacity_bytes.
      shards_.back()->capacity = (capacity_bytes + n - 1) / n;
    }
  }
  ShardedLruCache(const ShardedLruCache&) = delete;
  ShardedLruCache& operator=(const ShardedLruCache&) = delete;

  // Caches value under (a, b), replacing any entry there, as its shard's
  // most recently used entry charged `charge` bytes, then evicts the shard's
  // least recently used entries until it fits. A value charged more than a
  // shard's capacity, or a null one, is not cached.
  // REQUIRES: 0 <= kind < kMaxKinds (also for Lookup, Erase, usage, entries).
  void Insert(uint64_t a, uint64_t b, std::shared_ptr<const V> value, size_t charge,
              int kind = 0) {
    const Key key{a, b, kind};
    Shard& shard = ShardFor(key);
    if (capacity_ == 0 || charge > shard.capacity || value == nullptr) return;
    // Freed after the lock; rarely more than a few, held without a heap
    // allocation of their own.
    absl::InlinedVector<std::shared_ptr<const V>, 4> dropped;
    absl::MutexLock lock(&shard.mu);
    if (auto found = shard.index.find(key); found != shard.index.end()) {
      dropped.push_back(EraseLocked(shard, found->second));
    }
    while (shard.usage + charge > shard.capacity && !shard.lru.empty()) {
      dropped.push_back(EraseLocked(shard, std::prev(shard.lru.end())));
    }
    shard.lru.push_front(Entry{key, std::move(value), charge});
    shard.index[key] = shard.lru.begin();
    shard.usage += charge;
    shard.kind_usage[kind] += charge;
    ++shard.kind_entries[kind];
  }

  // The cached value, marked most recently used; null when absent.
  std::shared_ptr<const V> Lookup(uint64_t a, uint64_t b, int kind = 0) {
    const Key key{a, b, kind};
    Shard& shard = ShardFor(key);
    absl::MutexLock lock(&shard.mu);
    auto found = shard.index.find(key);
    if (found == shard.index.end()) return nullptr;
    shard.lru.splice(shard.lru.begin(), shard.lru, found->second);
    return found->second->value;
  }

  // Drops the entry if present.
  void Erase(uint64_t a, uint64_t b, int kind = 0) {
    const Key key{a, b, kind};
    Shard& shard = ShardFor(key);
    std::shared_ptr<const V> dropped;  // freed after the lock
    absl::MutexLock lock(&shard.mu);
    auto found = shard.index.find(key);
    if (found != shard.index.end()) dropped = EraseLocked(shard, found->second);
  }

  // Bytes charged by the entries cached now, and their number; of all kinds
  // or of one.
  size_t usage() const {
    return SumOverShards([](const Shard& s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s.usage; });
  }
  size_t capacity() const { return capacity_; }
  size_t entries() const {
    return SumOverShards(
        [](const Shard& s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s.lru.size(); });
  }
  size_t usage(int kind) const {
    return SumOverShards(
        [kind](const Shard& s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s.kind_usage[kind]; });
  }
  size_t entries(int kind) const {
    return SumOverShards(
        [kind](const Shard& s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s.kind_entries[kind]; });
  }

 private:
  struct Key {
    uint64_t a;
    uint64_t b;
    int kind;
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.a, k.b, k.kind);
    }
  };
  struct Entry {
    Key key;
    std::shared_ptr<const V> value;
    size_t charge;
  };
  using EntryList = std::list<Entry>;
  // One LRU list: front = most recently used.
  struct Shard {
    mutable absl::Mutex mu;
    size_t capacity = 0;
    size_t usage ABSL_GUARDED_BY(mu) = 0;
    std::array<size_t, kMaxKinds> kind_usage ABSL_GUARDED_BY(mu) = {};
    std::array<size_t, kMaxKinds> kind_entries ABSL_GUARDED_BY(mu) = {};
    EntryList lru ABSL_GUARDED_BY(mu);
    absl::flat_hash_map<Key, typename EntryList::iterator> index ABSL_GUARDED_BY(mu);
  };

  // Sums f(shard) over the shards, each read under its lock (f runs with
  // the lock held, which the analysis cannot see through the lambda).
  template <typename F>
  size_t SumOverShards(F f) const {
    size_t total = 0;
    for (const auto& shard : shards_) {
      absl::MutexLock lock(&shard->mu);
      total += f(*shard);
    }
    return total;
  }

  Shard& ShardFor(const Key& key) {
    // The low bits of absl::Hash feed the hash table; take the high ones.
    const size_t h = absl::Hash<Key>{}(key);
    return *shards_[(h >> 32) & (shards_.size() - 1)];
  }

  // Unlinks the entry and returns its value, for the caller to free unlocked.
  static std::shared_ptr<const V> EraseLocked(Shard& shard, typename EntryList::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu) {
    std::shared_ptr<const V> value = std::move(it->value);
    shard.usage -= it->charge;
    shard.kind_usage[it->key.kind] -= it->charge;
    --shard.kind_entries[it->key.kind];
    shard.index.erase(it->key);
    shard.lru.erase(it);
    return value;
  }

  const size_t capacity_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

// One memory budget shared by entries of several types (see above).
using Cache = ShardedLruCache<void>;

// The kinds of io::Cache entries. Numbered here, below both users, so that
// lsm/ and vlog/ (which do not know each other) never pick the same one.
enum CacheKind : int {
  kCacheKindBlock = 0,  // lsm::BlockCache: an uncompressed SST block
  kCacheKindValue = 1,  // vlog::ValueCache: one separated value
};

}  // namespace cairn::io

#endif  // CAIRN_IO_SHARDED_LRU_CACHE_H_
