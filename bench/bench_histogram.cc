// Histogram bucket arithmetic.
#include "bench/bench_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace cairn::bench {

// Values below 16 get a bucket each; a larger v with highest bit e (>= 4)
// lands in group e - 3, at the sub-bucket named by the 4 bits below e.
int Histogram::BucketFor(uint64_t v) {
  if (v < (1u << kSubBits)) return static_cast<int>(v);
  const int e = 63 - std::countl_zero(v);
  const int sub = static_cast<int>((v >> (e - kSubBits)) & ((1u << kSubBits) - 1));
  return ((e - kSubBits + 1) << kSubBits) + sub;
}

uint64_t Histogram::BucketLow(int bucket) {
  if (bucket < (1 << kSubBits)) return static_cast<uint64_t>(bucket);
  const int e = (bucket >> kSubBits) + kSubBits - 1;
  const uint64_t sub = static_cast<uint64_t>(bucket & ((1 << kSubBits) - 1));
  return (uint64_t{1} << e) | (sub << (e - kSubBits));
}

void Histogram::Add(uint64_t nanos) {
  ++buckets_[BucketFor(nanos)];
  ++count_;
  sum_ += nanos;
  max_ = std::max(max_, nanos);
}

void Histogram::Merge(const Histogram& other) {
  for (int i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
}

double Histogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  const double rank = std::ceil(count_ * p / 100.0);
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (buckets_[i] != 0 && static_cast<double>(seen) >= rank) {
      // Report the bucket's midpoint, but never above the largest sample.
      const double low = static_cast<double>(BucketLow(i));
      const double high = i + 1 < kBuckets ? static_cast<double>(BucketLow(i + 1)) : low;
      return std::min((low + high) / 2, static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

}  // namespace cairn::bench
