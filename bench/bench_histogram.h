// Histogram records latencies in nanoseconds in log-linear buckets: exact
// below 16 ns, then 16 buckets per power of two, so a percentile is within
// about 3% of the true value. Fixed size, no allocation per sample.
//
// Thread safety: none; each benchmark thread keeps its own and the runner
// merges them.
#ifndef CAIRN_BENCH_BENCH_HISTOGRAM_H_
#define CAIRN_BENCH_BENCH_HISTOGRAM_H_

#include <array>
#include <cstdint>

namespace cairn::bench {

class Histogram {
 public:
  void Add(uint64_t nanos);
  void Merge(const Histogram& other);

  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  double Mean() const { return count_ == 0 ? 0 : static_cast<double>(sum_) / count_; }
  // The p-th percentile (0 < p <= 100) in nanoseconds; 0 when empty.
  double Percentile(double p) const;

 private:
  static constexpr int kSubBits = 4;  // 16 buckets per power of two
  static constexpr int kBuckets = (64 - kSubBits + 1) << kSubBits;
  static int BucketFor(uint64_t v);
  static uint64_t BucketLow(int bucket);

  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

}  // namespace cairn::bench

#endif  // CAIRN_BENCH_BENCH_HISTOGRAM_H_
