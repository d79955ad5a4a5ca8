// SegmentAccounting checks the value log's space ledger: every byte of a
// segment is its header, a record that some index entry points at, or
// garbage counted in the segment set. A byte that is none of these is a
// leak (GC could never find it); one counted twice is an error of the
// counts. The index side comes from a full scan of the LSM (and of the WALs
// not yet flushed), which the caller does: vlog/ knows nothing of keys.
//
// Used at open (core/, to count what a crash or an interrupted GC job left
// uncounted) and by `cairn check` (to report it). docs/gc.md, "The space
// ledger".
//
// Thread safety: none; one caller at a time.
#ifndef CAIRN_VLOG_SEGMENT_ACCOUNTING_H_
#define CAIRN_VLOG_SEGMENT_ACCOUNTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_set.h"
#include "vlog/value_pointer.h"

namespace cairn::vlog {

class SegmentAccounting {
 public:
  // One segment whose ledger does not balance.
  struct Imbalance {
    uint64_t segment_id = 0;
    uint64_t size = 0;                 // bytes of the segment file
    uint64_t referenced_bytes = 0;     // records some entry points at
    uint64_t referenced_records = 0;
    uint64_t garbage_bytes = 0;        // counted in the set
    uint64_t garbage_records = 0;
    uint64_t records = 0;              // in the segment
    // size - header - referenced - garbage: positive for a leak, negative
    // for bytes counted twice.
    int64_t unaccounted_bytes() const;
    int64_t unaccounted_records() const;
    std::string DebugString() const;
  };

  // Counts one entry's pointer (call once per index entry, every version).
  void AddReference(const ValuePointer& pointer);

  // Compares the references with the set, for every segment that is not
  // obsolete. A sealed segment's size and record count are the set's; a
  // segment not yet sealed is compared only when active_sizes names it
  // (bytes, records), else skipped.
  std::vector<Imbalance> Check(
      const SegmentSet& set,
      const absl::flat_hash_map<uint64_t, std::pair<uint64_t, uint64_t>>& active_sizes = {}) const;

  // The garbage edit that balances every leak in imbalances (bytes counted
  // twice cannot be taken back and are left alone). Empty when none.
  static SegmentEdit LeakEdit(const std::vector<Imbalance>& imbalances);

  uint64_t referenced_bytes(uint64_t segment_id) const;

 private:
  struct Count {
    uint64_t bytes = 0, records = 0;
  };
  absl::flat_hash_map<uint64_t, Count> references_;
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_SEGMENT_ACCOUNTING_H_
