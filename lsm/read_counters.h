// ReadCounters counts what the read path of the SST layer did: bloom-filter
// probes and their outcomes, block-cache hits and misses, and blocks read
// from the device. One instance is shared by every table of a DB and feeds
// the read-amplification part of cairn::Stats.
//
// Thread safety: every field is a relaxed atomic; any thread may bump or read
// them at any time. Readers see each counter exactly, not a consistent
// snapshot across counters.
#ifndef CAIRN_LSM_READ_COUNTERS_H_
#define CAIRN_LSM_READ_COUNTERS_H_

#include <atomic>
#include <cstdint>

namespace cairn::lsm {

struct ReadCounters {
  // Table::Get consulted a bloom filter.
  std::atomic<uint64_t> bloom_probes{0};
  // ...and the filter said the user key is certainly absent.
  std::atomic<uint64_t> bloom_rejections{0};
  // ...or the filter let the probe through but the table had no such user key.
  std::atomic<uint64_t> bloom_false_positives{0};
  // A data block was found in, or missing from, the block cache. A table
  // without a cache counts every data-block fetch as a miss.
  std::atomic<uint64_t> block_cache_hits{0};
  std::atomic<uint64_t> block_cache_misses{0};
  // Device reads of blocks (data, index, filter, properties; a read-ahead
  // read covering several data blocks counts once) and the bytes they
  // read, block trailers included.
  std::atomic<uint64_t> block_reads{0};
  std::atomic<uint64_t> block_bytes_read{0};
};

// Adds n to a counter when counters is not null.
inline void BumpCounter(ReadCounters* counters, std::atomic<uint64_t> ReadCounters::*field,
                        uint64_t n = 1) {
  if (counters != nullptr) (counters->*field).fetch_add(n, std::memory_order_relaxed);
}

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_READ_COUNTERS_H_
