// ForeseenGarbage: the value-log records a flush's entries supersede in the
// tables below, known at the flush, before any compaction counts them
// (docs/gc.md, "Garbage foreseen at flush").
//
// A flushed entry (a value, a pointer or a deletion) shadows its key's
// newest older version in the tables for good: no snapshot lay between the
// two (the flush foresees nothing while one exists), and an LSM drops a
// version only after the older ones. When that older version is a value
// pointer, its record is garbage that the manifest counts only when a
// compaction drops the pointer, which for a table in L0 may be many
// flushes later. Until then GC, its victim choice and the write throttle
// would steer by a guess; this list tells them exactly.
//
// The list lives in memory only and counts nothing in the manifest: the
// ledger (referenced plus counted bytes, docs/gc.md) is untouched, and GC
// still checks every record it copies. A record leaves the list when the
// flush or compaction that drops its pointer counts it (Counted), or with
// its segment (Forget). Bounded: past max_records, records are not listed.
//
// Thread safety: every method may be called from any thread.
#ifndef CAIRN_CORE_FORESEEN_GARBAGE_H_
#define CAIRN_CORE_FORESEEN_GARBAGE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "lsm/table_cache.h"
#include "lsm/version.h"
#include "vlog/dead_records.h"

namespace cairn {

class ForeseenGarbage {
 public:
  explicit ForeseenGarbage(size_t max_records) : max_records_(max_records) {}

  ForeseenGarbage(const ForeseenGarbage&) = delete;
  ForeseenGarbage& operator=(const ForeseenGarbage&) = delete;

  // Lists the records of batch (by segment), skipping those listed already
  // and the segments keep(id) is false for. Returns the bytes it listed.
  uint64_t Add(const vlog::DeadRecords::Batch& batch, const std::function<bool(uint64_t)>& keep);
  // A flush or compaction counted these in the manifest: those listed leave
  // the list (their bytes are counted garbage now, not foreseen).
  void Counted(const vlog::DeadRecords::Batch& batch);
  // Forgets a segment (collected or deleted).
  void Forget(uint64_t segment_id);
  // Forgets every segment for which keep(id) is false.
  void ForgetAllBut(const std::function<bool(uint64_t)>& keep);

  // Bytes listed for segment_id.
  uint64_t Bytes(uint64_t segment_id) const;
  // Bytes listed, all segments together (a counter: every write reads it).
  uint64_t total_bytes() const { return total_bytes_.load(std::memory_order_relaxed); }
  size_t size() const;
  size_t max_records() const { return max_records_; }
  // Records not listed because the bound was reached.
  uint64_t overflowed() const;

 private:
  struct Segment {
    absl::flat_hash_map<uint32_t, uint32_t> records;  // offset -> size
    uint64_t bytes = 0;
  };
  void ForgetLocked(absl::flat_hash_map<uint64_t, Segment>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_records_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Segment> segments_ ABSL_GUARDED_BY(mu_);
  size_t size_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t overflowed_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> total_bytes_{0};
};

// One entry a flush writes: its key and sequence number. A flush of more
// keys than kMaxFlushedKeys is not looked up (too many lookups for one
// flush: memtables of small inline values).
inline constexpr size_t kMaxFlushedKeys = size_t{1} << 18;
struct FlushedKey {
  std::string user_key;
  lsm::SequenceNumber sequence;
};

// The records keys' entries shadow in base (the tables below the flush):
// each key's newest version older than its entry, where that is a value
// pointer. A failed lookup leaves its key out: the list is only a count.
// overwrites: the keys are expected below (TableReadOptions::expect_hits);
// false for a load, whose new keys the filters turn away.
vlog::DeadRecords::Batch FindShadowedRecords(const lsm::Version& base, lsm::TableCache* tables,
                                             const std::vector<FlushedKey>& keys,
                                             bool overwrites);

// Adds to *batch the records a flushed memtable's range tombstones shadow in
// base (issue 60: a range delete's values are garbage once the tombstone
// is durable): for each tombstone, each key of its range in the tables
// below, its newest version older than the tombstone, where that is a value
// pointer no older tombstone of base already covers. Reads the tables'
// keys and pointers in the ranges, never a value. A record already in
// *batch is not added twice. Stops after max_records records (the rest are
// counted when compaction drops them).
void AddRangeShadowedRecords(const lsm::Version& base, lsm::TableCache* tables,
                             const std::vector<lsm::RangeTombstone>& tombstones,
                             size_t max_records, vlog::DeadRecords::Batch* batch);

}  // namespace cairn

#endif  // CAIRN_CORE_FORESEEN_GARBAGE_H_
