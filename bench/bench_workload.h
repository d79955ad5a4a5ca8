// Workload generators for cairn_bench: fixed-size keys, values cut from a
// pre-filled buffer of chosen compressibility, YCSB's scrambled zipfian and
// latest distributions, a load-order permutation, and the bench's own count
// of live user bytes.
//
// Thread safety: KeyFormatter, ValueSource and Permutation are immutable
// after construction and shared by all threads; each thread owns its own
// ZipfianGenerator; LiveTracker is safe for concurrent use.
#ifndef CAIRN_BENCH_BENCH_WORKLOAD_H_
#define CAIRN_BENCH_BENCH_WORKLOAD_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/random/bit_gen_ref.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace cairn::bench {

// Keys are the zero-padded decimal of an index, key_size bytes long (the
// index's low digits when it does not fit), so key order is index order.
class KeyFormatter {
 public:
  explicit KeyFormatter(size_t key_size) : key_size_(key_size) {}
  // Writes the key for index into *out (resized to key_size).
  void Format(uint64_t index, std::string* out) const;
  size_t key_size() const { return key_size_; }

 private:
  size_t key_size_;
};

// ValueSource hands out values whose sizes are uniform in [min, max] and
// whose bytes compress to about compression_ratio of their size: a random
// run of ratio * 64 bytes repeated. Values are views into a buffer filled
// once, so the benchmark does not time random-number generation.
class ValueSource {
 public:
  // REQUIRES: 0 < min <= max; 0 < compression_ratio <= 1.
  ValueSource(size_t min, size_t max, double compression_ratio, uint64_t seed);
  // A value for the given random draw; valid while the source lives.
  std::string_view Next(absl::BitGenRef gen) const;
  size_t min() const { return min_; }
  size_t max() const { return max_; }

 private:
  size_t min_, max_;
  std::string data_;
};

// Parses a size flag: "N" or "MIN-MAX", with min_allowed <= MIN <= MAX.
// InvalidArgument naming flag otherwise.
absl::StatusOr<std::pair<size_t, size_t>> ParseRange(std::string_view flag, std::string_view spec,
                                                     size_t min_allowed);

// ZipfianGenerator draws ranks in [0, n) with YCSB's zipfian constant
// (theta 0.99; Gray et al., "Quickly generating billion-record synthetic
// databases"): rank 0 is the most popular. n may grow (YCSB D and E insert);
// the zeta sum is then extended, not recomputed.
class ZipfianGenerator {
 public:
  explicit ZipfianGenerator(uint64_t n, double theta = 0.99);
  // REQUIRES: n >= the n of every earlier call.
  uint64_t Next(absl::BitGenRef gen, uint64_t n);

 private:
  void Grow(uint64_t n);
  double theta_, alpha_, zeta2_;
  uint64_t n_ = 0;
  double zetan_ = 0, eta_ = 0;
};

// Scrambles a zipfian rank over [0, n) so the popular keys are spread over
// the key space (YCSB's "scrambled zipfian").
uint64_t ScrambleRank(uint64_t rank, uint64_t n);

// Permutation is the bijection i -> (a * i + b) mod n on [0, n), for loading
// every index once in an order that is not the key order (YCSB's hashed
// insert order).
class Permutation {
 public:
  Permutation(uint64_t n, uint64_t seed);
  uint64_t operator()(uint64_t i) const;

 private:
  uint64_t n_, a_, b_;
};

// LiveTracker is the bench's own count of live user bytes (key + value of
// every key whose last write was a Put), so space amplification can be
// computed for engines that do not measure it.
class LiveTracker {
 public:
  // Indices below dense_limit are tracked in an array; the rest in a map.
  explicit LiveTracker(uint64_t dense_limit);
  void Put(uint64_t index, size_t key_size, size_t value_size);
  void Delete(uint64_t index);
  uint64_t live_bytes() const { return live_bytes_.load(std::memory_order_relaxed); }

 private:
  // Replaces the entry's size (0 = absent) and adjusts the total.
  void Set(uint64_t index, uint32_t bytes);

  const uint64_t dense_limit_;
  std::unique_ptr<std::atomic<uint32_t>[]> dense_;
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, uint32_t> sparse_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> live_bytes_{0};
};

}  // namespace cairn::bench

#endif  // CAIRN_BENCH_BENCH_WORKLOAD_H_
