// SegmentSet is the value log's persistent list of segments: for each, its
// id (file number), kind (fresh writes or GC output), whether it is sealed
// and with what size and record count, how many of its bytes and records are
// garbage (overwritten or deleted values, counted when compaction drops their
// pointers), and whether it is obsolete (its live records were relocated by
// GC and it awaits deletion). The garbage collector picks victims from these
// exact counts.
//
// It persists through the LSM manifest: every change is a SegmentEdit written
// to the manifest as extension records (segment_edit.h) and then applied here;
// recovery replays those records through DecodeAndApply in order; a new
// manifest starts with Snapshot(). The set changes only through edits, so
// what is in memory is always what the manifest says.
//
// Rules an edit must follow (else Apply fails and changes nothing):
//   - a new segment's id is not in the set;
//   - sealing names a segment in the set that is not yet sealed (sealing
//     again with the same size and record count is a no-op);
//   - marking obsolete names a segment in the set;
//   - removing names an obsolete segment (docs/testing.md, invariant 5);
//   - punched runs name a sealed segment, lie between its header and its
//     size, and come ascending and disjoint; they merge with the runs it
//     has (an overlap is their union: every byte in either is garbage).
// Garbage for a segment not in the set is ignored: it was removed, and
// pointers into it can still be dropped by later compactions. So is a
// synced size for a segment not in the set or already sealed; a smaller
// synced size than the one recorded changes nothing.
//
// Thread safety: every method may be called from any thread.
#ifndef CAIRN_VLOG_SEGMENT_SET_H_
#define CAIRN_VLOG_SEGMENT_SET_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "vlog/segment_edit.h"
#include "vlog/vlog_format.h"

namespace cairn::vlog {

struct SegmentInfo {
  uint64_t segment_id = 0;
  SegmentKind kind = SegmentKind::kFresh;
  bool sealed = false;
  bool obsolete = false;
  uint64_t size = 0;     // bytes on disk once sealed; 0 while being written
  uint64_t records = 0;  // records once sealed; 0 while being written
  // While being written: the bytes known synced (kSyncedTo), below which
  // recovery never cuts the file. 0 when none were recorded, and once
  // sealed (size bounds it then).
  uint64_t synced_size = 0;
  uint64_t garbage_bytes = 0;
  uint64_t garbage_records = 0;
  // Of the garbage, the bytes punched out of the file (the whole blocks of
  // its punched runs): the file holds size less these on the device.
  uint64_t punched_bytes = 0;

  // Bytes the file takes on the device: size less punched_bytes.
  uint64_t allocated_bytes() const { return size - std::min(size, punched_bytes); }
  // Garbage share of the segment's bytes, in [0, 1]; 0 until sealed.
  double garbage_ratio() const;
  // Bytes still referenced: size less garbage (never below 0).
  uint64_t live_bytes() const;
  bool operator==(const SegmentInfo&) const = default;
};

class SegmentSet {
 public:
  struct Totals {
    uint64_t segments = 0;           // every segment in the set
    uint64_t sealed_segments = 0;
    uint64_t obsolete_segments = 0;
    uint64_t bytes = 0;              // sealed sizes, obsolete segments included
    uint64_t garbage_bytes = 0;      // of segments not obsolete
    uint64_t live_bytes = 0;         // of sealed segments not obsolete
    uint64_t obsolete_bytes = 0;     // waiting for deletion
    uint64_t punched_bytes = 0;      // of segments not obsolete (part of garbage_bytes)
  };

  SegmentSet() = default;
  SegmentSet(const SegmentSet&) = delete;
  SegmentSet& operator=(const SegmentSet&) = delete;

  // Applies every change of edit, or none.
  // Errors: FailedPrecondition naming the change that breaks a rule above.
  absl::Status Apply(const SegmentEdit& edit);

  // Decodes one extension record from the manifest and applies it; the
  // decoded edit goes to *decoded when it is given.
  // Errors: DataLoss for a malformed record or one that breaks a rule above
  // (the manifest contradicts itself). Never crashes on any input.
  absl::Status DecodeAndApply(uint32_t tag, std::string_view payload,
                              SegmentEdit* decoded = nullptr);

  // The whole set as extension records (per segment by id: new, then seal,
  // garbage and obsolete as they apply), for a new manifest's first record.
  // Replaying them into an empty set yields an equal set.
  std::vector<ExtensionRecord> Snapshot() const;

  std::optional<SegmentInfo> Get(uint64_t segment_id) const;
  // The segment's punched runs, ascending and merged (adjacent runs are
  // one); empty for a segment that has none or is not in the set.
  std::vector<PunchRun> PunchedRuns(uint64_t segment_id) const;
  bool Contains(uint64_t segment_id) const;
  // Every segment, by id.
  std::vector<SegmentInfo> Segments() const;
  size_t size() const;
  // Kept up to date by each edit: O(1), never a walk over the segments.
  Totals GetTotals() const;

  // One line per segment, then the totals.
  std::string DebugString() const;

  bool operator==(const SegmentSet& other) const;

 private:
  absl::Status ApplyLocked(const SegmentEdit& edit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds info's share of the totals to *t, or takes it away.
  static void Count(const SegmentInfo& info, bool add, Totals* t);

  mutable absl::Mutex mu_;
  absl::btree_map<uint64_t, SegmentInfo> segments_ ABSL_GUARDED_BY(mu_);
  // Kept apart from SegmentInfo so that copies of the infos stay small.
  absl::btree_map<uint64_t, std::vector<PunchRun>> runs_ ABSL_GUARDED_BY(mu_);
  Totals totals_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_SEGMENT_SET_H_
