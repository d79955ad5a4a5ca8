// DeadRecords remembers where the records that flushes and compactions have
// counted as garbage lie, so that GC skips them in a victim without asking
// the LSM whether they are live (docs/gc.md, "Records known dead").
//
// A flush or compaction drops a value pointer only when a newer version of
// its key (or a deletion) shadows it for every reader, snapshots included;
// the record it names can never be any key's current value again (segment
// ids are never reused and a segment's records never move). So a record
// listed here is dead for good, and GC may drop it as its liveness check
// would. What is not listed is simply checked: the list lives in memory
// only (empty after an open), is bounded, and may miss records.
//
// Thread safety: every method may be called from any thread.
#ifndef CAIRN_VLOG_DEAD_RECORDS_H_
#define CAIRN_VLOG_DEAD_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "vlog/segment_edit.h"

namespace cairn::vlog {

class DeadRecords {
 public:
  // One record: where it starts and how many bytes it takes (its pointer's
  // offset and size).
  struct Record {
    uint64_t offset = 0;
    uint32_t size = 0;
    bool operator==(const Record&) const = default;
  };
  // The records one flush or compaction dropped, by segment.
  using Batch = absl::flat_hash_map<uint64_t, std::vector<Record>>;

  // Holds at most max_records records (8 bytes each); past that, further
  // records are not listed (GC checks them as before).
  explicit DeadRecords(size_t max_records) : max_records_(max_records) {}

  DeadRecords(const DeadRecords&) = delete;
  DeadRecords& operator=(const DeadRecords&) = delete;

  // Lists the records of batch. REQUIRES: each was counted as garbage of
  // its segment by an edit that is now applied. The caller leaves out
  // segments already gone (a table's old pointer may name a segment GC
  // collected long ago), or they stay listed until ForgetAllBut.
  void Add(const Batch& batch);

  // The listed offsets of segment_id's records, ascending, without
  // duplicates.
  std::vector<uint64_t> Offsets(uint64_t segment_id) const;
  // The listed records of segment_id, by offset, without duplicates.
  std::vector<Record> Records(uint64_t segment_id) const;
  // The maximal runs of adjacent listed records of segment_id (each starting
  // where the one before ends) that span at least min_bytes, ascending:
  // what punching may free (docs/gc.md, "Punched runs"). One pass over the
  // list, which holds no copy of it.
  std::vector<PunchRun> Runs(uint64_t segment_id, uint64_t min_bytes) const;

  // Forgets a segment (collected or deleted): its records are of no more use.
  void Forget(uint64_t segment_id);
  // Forgets every segment for which keep(id) is false.
  void ForgetAllBut(const std::function<bool(uint64_t)>& keep);

  size_t size() const;
  // Records not listed because the bound was reached.
  uint64_t overflowed() const;

 private:
  const size_t max_records_;
  mutable absl::Mutex mu_;
  // Offsets fit 32 bits: a segment is at most 4 GiB (Options validation).
  // One segment's records as (offset, size): the first `sorted` by offset,
  // the rest as they arrived. Each read sorts only
  // the new ones and merges them in, so a segment read again and again
  // (planned for punching after each count, docs/gc.md) costs a merge,
  // not a sort of everything.
  struct List {
    std::vector<std::pair<uint32_t, uint32_t>> items;
    size_t sorted = 0;
  };
  // Sorts list's new records into its sorted prefix. Reads do it: the
  // order is not part of what the list holds.
  void SortLocked(List* list) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  mutable absl::flat_hash_map<uint64_t, List> offsets_ ABSL_GUARDED_BY(mu_);
  size_t size_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t overflowed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_DEAD_RECORDS_H_
