#include "vlog/value_cache.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cairn::vlog {

namespace {

// This thread's recycled value buffers (ValueCache::NewValue). Made on a
// thread's first NewValue; a release on a thread without one, or after its
// thread began to exit, frees the string as usual.
class ValuePool {
 public:
  ~ValuePool() {
    gone_ = true;
    current_ = nullptr;
    for (std::string* s : free_) delete s;
  }

  // This thread's pool, made when make and the thread has none yet; null
  // when it has none (or is exiting).
  static ValuePool* Get(bool make) {
    if (current_ == nullptr && make && !gone_) {
      // Constructed once per thread, destroyed at its exit, after which
      // gone_ (trivially destructible, so still readable) says so.
      thread_local ValuePool pool;
      current_ = &pool;
    }
    return current_;
  }

  // A pooled string whose capacity fits size (at least size, at most a
  // quarter more, so that a cached value never holds much more memory than
  // the cache charges it), else a new one with room for size.
  std::string* Take(size_t size) {
    const size_t most = size + size / 4 + 64;
    for (size_t i = free_.size(); i-- > 0;) {
      std::string* s = free_[i];
      const size_t capacity = s->capacity();
      if (capacity < size || capacity > most) continue;
      free_[i] = free_.back();
      free_.pop_back();
      bytes_ -= capacity;
      return s;
    }
    auto* s = new std::string();
    s->reserve(size);
    return s;
  }

  // Keeps s when it fits the bounds; frees it otherwise.
  void Give(std::string* s) {
    const size_t capacity = s->capacity();
    if (capacity > ValueCache::kMaxPooledCapacity || free_.size() >= kMaxPooled ||
        bytes_ + capacity > ValueCache::kMaxPooledBytes) {
      delete s;
      return;
    }
    s->clear();  // keeps the capacity
    free_.push_back(s);
    bytes_ += capacity;
  }

  size_t size() const { return free_.size(); }

 private:
  // Strings kept at most (Take looks through them all).
  static constexpr size_t kMaxPooled = 32;
  static thread_local ValuePool* current_;  // null until made, and once gone
  static thread_local bool gone_;           // the thread is exiting

  std::vector<std::string*> free_;
  size_t bytes_ = 0;  // the capacity of the strings in free_
};

thread_local ValuePool* ValuePool::current_ = nullptr;
thread_local bool ValuePool::gone_ = false;

// The deleter of NewValue's strings: the string's last owner runs it, on
// its own thread, after shared_ptr's release ordering, so no reader still
// sees the bytes.
struct Recycle {
  void operator()(std::string* s) const {
    if (ValuePool* pool = ValuePool::Get(/*make=*/false)) {
      pool->Give(s);
    } else {
      delete s;
    }
  }
};

}  // namespace

std::shared_ptr<std::string> ValueCache::NewValue(size_t size) {
  ValuePool* pool = ValuePool::Get(/*make=*/true);
  std::string* s = nullptr;
  if (pool != nullptr) {
    s = pool->Take(size);
  } else {
    s = new std::string();
    s->reserve(size);
  }
  return std::shared_ptr<std::string>(s, Recycle());
}

size_t ValueCache::PooledOnThisThread() {
  const ValuePool* pool = ValuePool::Get(/*make=*/false);
  return pool == nullptr ? 0 : pool->size();
}

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
