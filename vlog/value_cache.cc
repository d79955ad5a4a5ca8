#include "vlog/value_cache.h"

#include <utility>

namespace cairn::vlog {

ValueCache::ValueCache(size_t capacity_bytes, int num_shard_bits)
    : cache_(std::make_shared<io::Cache>(capacity_bytes, num_shard_bits)) {}

ValueCache::ValueCache(std::shared_ptr<io::Cache> cache) : cache_(std::move(cache)) {}

ValueCache::~ValueCache() = default;

void ValueCache::Insert(uint64_t segment_id, uint64_t offset,
                        std::shared_ptr<const std::string> value) {
  if (value == nullptr) return;
  const size_t charge = Charge(value->size());
  cache_->Insert(segment_id, offset, std::move(value), charge, io::kCacheKindValue);
}

std::shared_ptr<const std::string> ValueCache::Lookup(uint64_t segment_id, uint64_t offset,
                                                      bool count_miss) {
  std::shared_ptr<const std::string> value = std::static_pointer_cast<const std::string>(
      cache_->Lookup(segment_id, offset, io::kCacheKindValue));
  if (value != nullptr) {
    hits_.fetch_add(1, std::memory_order_relaxed);
  } else if (count_miss) {
    misses_.fetch_add(1, std::memory_order_relaxed);
  }
  return value;
}

void ValueCache::Erase(uint64_t segment_id, uint64_t offset) {
  cache_->Erase(segment_id, offset, io::kCacheKindValue);
}

size_t ValueCache::usage() const { return cache_->usage(io::kCacheKindValue); }

size_t ValueCache::entries() const { return cache_->entries(io::kCacheKindValue); }

}  // namespace cairn::vlog
