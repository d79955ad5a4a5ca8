// Bloom filter over the user keys of one SST file. A table's Get consults it
// before touching the index, so a lookup of an absent key usually costs no
// block read.
//
// Encoding (docs/table_format.md, "Filter block"): the bit array (a whole
// number of bytes, at least 8) followed by one byte holding k, the number of
// probes. Bit i lives in byte i / 8 at position i % 8. A key's probes come from
// one 64-bit XXH3 hash h by double hashing: h1 = low 32 bits, h2 = high 32
// bits, probe j sets bit (h1 + j * h2) mod (8 * bytes), in 32-bit arithmetic.
// k = round(bits_per_key * ln 2) clamped to [1, 30].
//
// Thread safety: BloomFilterBuilder is single-threaded; BloomFilter is
// immutable and safe to share; BloomHashPool is thread-safe.
#ifndef CAIRN_LSM_BLOOM_FILTER_H_
#define CAIRN_LSM_BLOOM_FILTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace cairn::lsm {

// The largest number of probes a filter may ask for; higher k bytes on disk
// are corruption.
inline constexpr int kMaxBloomProbes = 30;

// The hash lists of finished builders, kept for the next ones. A builder
// holds one 8-byte hash per key until Finish; a compaction's table of a
// quarter million keys grew its list to 2 MiB, in memory the C library took
// fresh from the system and gave back after each table, a page fault per
// 4 KiB (docs/decisions/20261204_memtable_block_reuse.md). The pool keeps
// lists of at most capacity_bytes in all.
class BloomHashPool {
 public:
  explicit BloomHashPool(size_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}
  BloomHashPool(const BloomHashPool&) = delete;
  BloomHashPool& operator=(const BloomHashPool&) = delete;

  // An empty list, with the capacity of a kept one when there is one.
  std::vector<uint64_t> Take();
  // Keeps the list's memory, or frees it when that would pass the capacity.
  void Give(std::vector<uint64_t> hashes);
  // Bytes of capacity kept now.
  size_t bytes() const;

 private:
  const size_t capacity_bytes_;
  mutable absl::Mutex mu_;
  std::vector<std::vector<uint64_t>> lists_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

class BloomFilterBuilder {
 public:
  // REQUIRES: bits_per_key >= 1. With a pool, the hash list comes from it
  // and goes back to it when the builder is destroyed.
  explicit BloomFilterBuilder(int bits_per_key, std::shared_ptr<BloomHashPool> pool = nullptr);
  ~BloomFilterBuilder();
  BloomFilterBuilder(const BloomFilterBuilder&) = delete;
  BloomFilterBuilder& operator=(const BloomFilterBuilder&) = delete;

  // Adds a user key. Adding the same key twice is harmless but sizes the
  // filter as if it were two keys; TableBuilder adds each user key once.
  void AddKey(std::string_view user_key);

  // Returns the encoded filter for every key added so far.
  std::string Finish() const;

  size_t num_keys() const { return hashes_.size(); }
  int num_probes() const { return num_probes_; }

 private:
  const int bits_per_key_;
  const int num_probes_;
  const std::shared_ptr<BloomHashPool> pool_;
  std::vector<uint64_t> hashes_;
};

class BloomFilter {
 public:
  // Parses an encoded filter, keeping a view of it: data must outlive the
  // filter. DataLoss (naming origin) when the bytes cannot be a filter.
  static absl::StatusOr<BloomFilter> Parse(std::string_view data, const std::string& origin);

  // False only when user_key was certainly not added.
  bool KeyMayMatch(std::string_view user_key) const;

  size_t num_bits() const { return bits_.size() * 8; }
  int num_probes() const { return num_probes_; }

 private:
  BloomFilter(std::string_view bits, int num_probes) : bits_(bits), num_probes_(num_probes) {}

  std::string_view bits_;
  int num_probes_;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_BLOOM_FILTER_H_
