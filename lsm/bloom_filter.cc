#include "lsm/bloom_filter.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "io/checksum.h"

namespace cairn::lsm {
namespace {

// Below 64 bits a filter of one or two keys would be almost all ones.
constexpr size_t kMinFilterBytes = 8;

int ProbesFor(int bits_per_key) {
  const int k = static_cast<int>(std::lround(bits_per_key * 0.69314718056));
  return std::clamp(k, 1, kMaxBloomProbes);
}

// Calls fn(bit) for each of the k probes of hash h in a filter of num_bits.
template <typename Fn>
void ForEachProbe(uint64_t h, int k, uint32_t num_bits, Fn fn) {
  uint32_t h1 = static_cast<uint32_t>(h);
  const uint32_t h2 = static_cast<uint32_t>(h >> 32);
  for (int j = 0; j < k; ++j) {
    if (!fn(h1 % num_bits)) return;
    h1 += h2;
  }
}

}  // namespace

std::vector<uint64_t> BloomHashPool::Take() {
  absl::MutexLock lock(&mu_);
  if (lists_.empty()) return {};
  std::vector<uint64_t> list = std::move(lists_.back());
  lists_.pop_back();
  bytes_ -= list.capacity() * sizeof(uint64_t);
  list.clear();
  return list;
}

void BloomHashPool::Give(std::vector<uint64_t> hashes) {
  const size_t bytes = hashes.capacity() * sizeof(uint64_t);
  if (bytes == 0) return;
  absl::MutexLock lock(&mu_);
  if (bytes_ + bytes > capacity_bytes_) return;  // freed as `hashes` goes
  bytes_ += bytes;
  lists_.push_back(std::move(hashes));
}

size_t BloomHashPool::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

BloomFilterBuilder::BloomFilterBuilder(int bits_per_key, std::shared_ptr<BloomHashPool> pool)
    : bits_per_key_(bits_per_key), num_probes_(ProbesFor(bits_per_key)), pool_(std::move(pool)) {
  assert(bits_per_key >= 1);
  if (pool_ != nullptr) hashes_ = pool_->Take();
}

BloomFilterBuilder::~BloomFilterBuilder() {
  if (pool_ != nullptr) pool_->Give(std::move(hashes_));
}

void BloomFilterBuilder::AddKey(std::string_view user_key) {
  hashes_.push_back(io::Checksum64(user_key));
}

std::string BloomFilterBuilder::Finish() const {
  size_t bytes = (hashes_.size() * static_cast<size_t>(bits_per_key_) + 7) / 8;
  bytes = std::max(bytes, kMinFilterBytes);
  // The probe arithmetic is 32-bit; keep the bit count within it.
  bytes = std::min<size_t>(bytes, UINT32_MAX / 8);
  const uint32_t num_bits = static_cast<uint32_t>(bytes * 8);
  std::string out(bytes, '\0');
  for (uint64_t h : hashes_) {
    ForEachProbe(h, num_probes_, num_bits, [&](uint32_t bit) {
      out[bit / 8] = static_cast<char>(out[bit / 8] | (1 << (bit % 8)));
      return true;
    });
  }
  out.push_back(static_cast<char>(num_probes_));
  return out;
}

absl::StatusOr<BloomFilter> BloomFilter::Parse(std::string_view data, const std::string& origin) {
  if (data.size() < kMinFilterBytes + 1) {
    return absl::DataLossError(
        absl::StrCat(origin, ": bloom filter of ", data.size(), " bytes is too short"));
  }
  const std::string_view bits = data.substr(0, data.size() - 1);
  if (bits.size() > UINT32_MAX / 8) {
    return absl::DataLossError(absl::StrCat(origin, ": bloom filter too large"));
  }
  const int k = static_cast<unsigned char>(data.back());
  if (k < 1 || k > kMaxBloomProbes) {
    return absl::DataLossError(absl::StrCat(origin, ": bloom filter with ", k, " probes"));
  }
  return BloomFilter(bits, k);
}

bool BloomFilter::KeyMayMatch(std::string_view user_key) const {
  const uint32_t num_bits = static_cast<uint32_t>(bits_.size() * 8);
  bool match = true;
  ForEachProbe(io::Checksum64(user_key), num_probes_, num_bits, [&](uint32_t bit) {
    match = (bits_[bit / 8] >> (bit % 8)) & 1;
    return match;
  });
  return match;
}

}  // namespace cairn::lsm
