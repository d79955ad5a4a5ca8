// Workload generators for cairn_bench.
#include "bench/bench_workload.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cairn::bench {

void KeyFormatter::Format(uint64_t index, std::string* out) const {
  out->assign(key_size_, '0');
  for (size_t i = key_size_; i > 0 && index != 0; --i) {
    (*out)[i - 1] = static_cast<char>('0' + index % 10);
    index /= 10;
  }
}

ValueSource::ValueSource(size_t min, size_t max, double compression_ratio, uint64_t seed)
    : min_(min), max_(max) {
  constexpr size_t kChunk = 64;
  const size_t random_run =
      std::clamp<size_t>(static_cast<size_t>(std::ceil(compression_ratio * kChunk)), 1, kChunk);
  absl::InsecureBitGen gen(std::seed_seq{seed});
  data_.resize(max + (1u << 20));
  for (size_t chunk = 0; chunk < data_.size(); chunk += kChunk) {
    char run[kChunk];
    for (size_t i = 0; i < random_run; ++i) run[i] = static_cast<char>(absl::Uniform<int>(gen, 0, 256));
    for (size_t i = 0; i < kChunk && chunk + i < data_.size(); ++i) data_[chunk + i] = run[i % random_run];
  }
}

std::string_view ValueSource::Next(absl::BitGenRef gen) const {
  const size_t size = min_ == max_ ? min_ : absl::Uniform<size_t>(absl::IntervalClosed, gen, min_, max_);
  const size_t offset = absl::Uniform<size_t>(gen, 0, data_.size() - size + 1);
  return std::string_view(data_).substr(offset, size);
}

absl::StatusOr<std::pair<size_t, size_t>> ParseRange(std::string_view flag, std::string_view spec,
                                                     size_t min_allowed) {
  std::vector<std::string> parts = absl::StrSplit(std::string(spec), '-');
  size_t lo = 0, hi = 0;
  bool ok = false;
  if (parts.size() == 1) {
    ok = absl::SimpleAtoi(parts[0], &lo);
    hi = lo;
  } else if (parts.size() == 2) {
    ok = absl::SimpleAtoi(parts[0], &lo) && absl::SimpleAtoi(parts[1], &hi);
  }
  if (!ok || lo < min_allowed || hi < lo) {
    return absl::InvalidArgumentError(absl::StrCat("--", std::string(flag), ": want N or MIN-MAX with ",
                                                   min_allowed, " <= MIN <= MAX, got \"",
                                                   std::string(spec), "\""));
  }
  return std::make_pair(lo, hi);
}

ZipfianGenerator::ZipfianGenerator(uint64_t n, double theta)
    : theta_(theta), alpha_(1.0 / (1.0 - theta)), zeta2_(1.0 + std::pow(0.5, theta)) {
  Grow(std::max<uint64_t>(n, 1));
}

void ZipfianGenerator::Grow(uint64_t n) {
  for (uint64_t i = n_ + 1; i <= n; ++i) zetan_ += 1.0 / std::pow(static_cast<double>(i), theta_);
  n_ = n;
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n_), 1.0 - theta_)) / (1.0 - zeta2_ / zetan_);
}

uint64_t ZipfianGenerator::Next(absl::BitGenRef gen, uint64_t n) {
  if (n > n_) Grow(n);
  const double u = absl::Uniform<double>(gen, 0.0, 1.0);
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < zeta2_) return std::min<uint64_t>(1, n_ - 1);
  const auto rank =
      static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
  return std::min(rank, n_ - 1);
}

uint64_t ScrambleRank(uint64_t rank, uint64_t n) {
  // FNV-1a over the rank's bytes.
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 8; ++i) {
    h ^= (rank >> (8 * i)) & 0xff;
    h *= 0x100000001b3ull;
  }
  return h % n;
}

Permutation::Permutation(uint64_t n, uint64_t seed) : n_(std::max<uint64_t>(n, 1)) {
  // Any a coprime with n makes the map a bijection; walk from a large odd
  // constant to the nearest such a in [1, n).
  a_ = (0x9E3779B97F4A7C15ull ^ seed) % n_;
  if (a_ == 0) a_ = 1;
  while (std::gcd(a_, n_) != 1) a_ = a_ % (n_ - 1) + 1;
  b_ = (seed * 0xBF58476D1CE4E5B9ull) % n_;
}

uint64_t Permutation::operator()(uint64_t i) const {
  const unsigned __int128 x = static_cast<unsigned __int128>(a_) * (i % n_) + b_;
  return static_cast<uint64_t>(x % n_);
}

LiveTracker::LiveTracker(uint64_t dense_limit)
    : dense_limit_(dense_limit), dense_(new std::atomic<uint32_t>[dense_limit]) {
  for (uint64_t i = 0; i < dense_limit; ++i) dense_[i].store(0, std::memory_order_relaxed);
}

void LiveTracker::Set(uint64_t index, uint32_t bytes) {
  uint32_t old;
  if (index < dense_limit_) {
    old = dense_[index].exchange(bytes, std::memory_order_relaxed);
  } else {
    absl::MutexLock lock(&mu_);
    uint32_t& slot = sparse_[index];
    old = slot;
    slot = bytes;
  }
  live_bytes_.fetch_add(static_cast<uint64_t>(bytes) - old, std::memory_order_relaxed);
}

void LiveTracker::Put(uint64_t index, size_t key_size, size_t value_size) {
  Set(index, static_cast<uint32_t>(key_size + value_size));
}

void LiveTracker::Delete(uint64_t index) { Set(index, 0); }

}  // namespace cairn::bench
