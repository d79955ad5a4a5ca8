// IndexView is the garbage collector's narrow window onto the database's
// index (the LSM and its write queue) and manifest. gc/ declares it; core/
// implements it, so the collector never includes lsm/ or core/.
//
// The collector relies on four promises (docs/testing.md, invariants 5 and 6):
//   - CheckLive answers from the latest state (memtables included);
//   - RewritePointers is a compare-and-swap ordered with user writes through
//     the write queue; a call with sync is durable (synced) before it
//     returns, and so is every call before it;
//   - LogSegmentEdit is durable in the manifest before it returns;
//   - file numbers are never reused.
//
// Thread safety: implementations must allow calls from a background GC
// thread concurrently with user reads and writes.
#ifndef CAIRN_GC_INDEX_VIEW_H_
#define CAIRN_GC_INDEX_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "vlog/segment_edit.h"
#include "vlog/value_pointer.h"

namespace cairn::gc {

class IndexView {
 public:
  virtual ~IndexView() = default;

  // Batched liveness. Resizes *live to keys.size(); (*live)[i] is true
  // exactly when the current value of keys[i] (latest state, not a
  // snapshot) is a pointer to pointers[i]: same segment and offset.
  // REQUIRES: keys.size() == pointers.size().
  // Errors: the index's read errors; the collector then stops without
  // having written anything.
  virtual absl::Status CheckLive(absl::Span<const std::string_view> keys,
                                 absl::Span<const vlog::ValuePointer> pointers,
                                 std::vector<bool>* live) = 0;

  // Conditional write-back through the write queue: for each i, if keys[i]
  // still points at old_pointers[i]
  // at the moment of the write, it is made to point at new_pointers[i];
  // otherwise (a newer Put or a Delete won) it is left alone and a deleted
  // key never comes back. Resizes *replaced to keys.size() and sets
  // (*replaced)[i] to whether keys[i] was replaced; returns how many were.
  // With sync, the write is durable (synced) before this returns, and every
  // earlier call's with it (they share one ordered log). Without, it is
  // written in order and becomes durable with the next sync: a job syncs
  // only its last call, once per victim instead of once per batch.
  // REQUIRES: the three spans have equal sizes.
  // Errors: Aborted when the index refused the batch before writing any of
  // it (the DB is closing); otherwise the write path's, and then any subset
  // of the batch may be durable.
  virtual absl::StatusOr<size_t> RewritePointers(
      absl::Span<const std::string_view> keys,
      absl::Span<const vlog::ValuePointer> old_pointers,
      absl::Span<const vlog::ValuePointer> new_pointers, std::vector<bool>* replaced,
      bool sync) = 0;

  // Persists a segment edit in the manifest, then applies it to the DB's
  // in-memory segment set. The edit is atomic: all its changes or none.
  virtual absl::Status LogSegmentEdit(const vlog::SegmentEdit& edit) = 0;

  // A new file number (the DB's shared number space) for an output segment.
  virtual uint64_t NewFileNumber() = 0;

  // The job wrote a copy of bytes of live records to its output. Until its
  // victims go (the edit that marks them obsolete), the copies and their
  // originals are both on disk: the DB's space figure counts the copies as
  // garbage, and, until the edit that adds the output, as bytes too.
  virtual void Copied(uint64_t /*bytes*/) {}

  // segment_id's records that are dead for good, ascending by offset, each
  // [begin, end) as its pointer named it: no key's current value points at
  // them, and none ever will again (a flush or compaction dropped their
  // pointers). The collector's scan steps over these records without
  // verifying them, and drops them without CheckLive. The list may miss
  // dead records (those are checked) but must never name a live one.
  virtual std::vector<vlog::PunchRun> KnownDeadRecords(uint64_t /*segment_id*/) { return {}; }

  // The segment's punched runs (vlog::SegmentSet::PunchedRuns), which the
  // scan of the victim steps over: its blocks read as zeros. None may be
  // added while the segment is claimed by a job.
  virtual std::vector<vlog::PunchRun> PunchedRuns(uint64_t /*segment_id*/) { return {}; }
};

}  // namespace cairn::gc

#endif  // CAIRN_GC_INDEX_VIEW_H_
