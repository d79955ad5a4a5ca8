// ValueCache keeps recently read value-log values in memory, keyed by the
// record's location (segment id, offset). It is a view of an io::Cache (an
// LRU bounded by bytes, split into shards, each with its own lock): one of
// its own, or the DB's cache shared with the SST blocks (Options::
// cache_size), where values and blocks compete for one budget.
//
// Each entry is charged the value's size plus kEntryOverhead, so many tiny
// values cannot grow the cache without bound. Values are
// shared_ptr<const std::string>: one evicted while a reader holds it stays
// alive until the reader lets go. A location never holds another value
// (records are immutable and segment ids are never reused), so entries of a
// deleted segment simply age out; Erase exists for tests and for callers that
// want the memory back early.
//
// Thread safety: every method may be called from any thread.
#ifndef CAIRN_VLOG_VALUE_CACHE_H_
#define CAIRN_VLOG_VALUE_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/sharded_lru_cache.h"

namespace cairn::vlog {

class ValueCache {
 public:
  // Bytes charged per entry on top of the value (list node, index slot,
  // shared_ptr control block and string header, roughly).
  static constexpr size_t kEntryOverhead = 96;
  static constexpr int kDefaultShardBits = 4;  // 16 shards

  // capacity_bytes of 0 disables the cache: Insert keeps nothing and Lookup
  // finds nothing (and counts a miss). num_shard_bits (0..8) splits it into
  // 2^bits shards.
  explicit ValueCache(size_t capacity_bytes, int num_shard_bits = kDefaultShardBits);
  // Values in a cache shared with other kinds of entries. REQUIRES: cache.
  explicit ValueCache(std::shared_ptr<io::Cache> cache);
  ~ValueCache();

  ValueCache(const ValueCache&) = delete;
  ValueCache& operator=(const ValueCache&) = delete;

  // Caches value under (segment_id, offset), replacing any entry there, as the
  // most recently used entry of its shard, then evicts the shard's least
  // recently used entries until it fits. A value whose charge exceeds a
  // shard's capacity is not cached. A null value is ignored.
  void Insert(uint64_t segment_id, uint64_t offset, std::shared_ptr<const std::string> value);

  // The cached value, marked most recently used; null when absent. Counts a
  // hit, and a miss unless count_miss is false (a probe whose miss the read
  // that follows counts).
  std::shared_ptr<const std::string> Lookup(uint64_t segment_id, uint64_t offset,
                                            bool count_miss = true);

  // Drops the entry if present.
  void Erase(uint64_t segment_id, uint64_t offset);

  // Bytes charged by the values now cached, and their number.
  size_t usage() const;
  size_t entries() const;
  // The capacity of the cache the values live in (shared or not).
  size_t capacity() const { return cache_->capacity(); }
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

  // The charge of a value of value_size bytes.
  static size_t Charge(size_t value_size) { return value_size + kEntryOverhead; }

  // An empty string with room for size bytes, to read or copy a value into
  // before Insert, whose bytes are recycled: when the last reference to it
  // goes (the cache evicts it and no reader holds it), its buffer joins a
  // small pool of the thread that let go, instead of going back to malloc;
  // a later NewValue on that thread takes it when its capacity fits (at
  // least size, at most a quarter more: a cached value never holds much
  // more memory than the cache charges it). A reader that fills the cache
  // as it evicts from it (a scan, a stream of Gets) thus allocates nothing
  // for the bytes of the values it caches. The pool keeps at most
  // kMaxPooledBytes of buffers of at most kMaxPooledCapacity each per thread
  // that has called NewValue, outside the cache's capacity
  // (docs/decisions/20261205_recycled_value_buffers.md).
  static std::shared_ptr<std::string> NewValue(size_t size);
  static constexpr size_t kMaxPooledCapacity = size_t{64} << 10;
  static constexpr size_t kMaxPooledBytes = size_t{256} << 10;
  // Buffers in this thread's pool now (for tests).
  static size_t PooledOnThisThread();

 private:
  std::shared_ptr<io::Cache> cache_;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_VALUE_CACHE_H_
