// ObsoleteSegments is the rule that decides when a collected segment may be
// deleted. A victim's records have been moved, but its file must stay while
// anything could still read it or bring its pointers back:
//   - a read view taken before the move (an iterator, a Get in flight): it
//     holds the read epoch that was current then, and the epoch's end is
//     seen through a weak pointer;
//   - a snapshot older than the move, which reads the old pointers.
// A crash cannot bring the old pointers back: the job's final manifest
// edit, which marks the victim obsolete, comes only once every write that
// made one of its records dead, or moved one, is synced
// (core/gc_job_index.cc, LogSegmentEdit), so a victim is added here durable.
// core/ supplies the facts (the epoch, the oldest snapshot) and deletes the
// files; this class holds the list and the rule (docs/gc.md, "When a
// collected segment may be deleted").
//
// Thread safety: none; core/ calls it under its DB mutex.
#ifndef CAIRN_GC_OBSOLETE_SEGMENTS_H_
#define CAIRN_GC_OBSOLETE_SEGMENTS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace cairn::gc {

class ObsoleteSegments {
 public:
  struct Victim {
    uint64_t segment_id = 0;
    // The last sequence once its pointers moved: a snapshot older than it
    // reads the old pointers.
    uint64_t sequence = 0;
    // The read epoch current at the move (readers from before it hold it
    // or an older one, which holds it); an empty one means no reader can
    // exist.
    std::weak_ptr<const void> epoch;
  };
  void Add(Victim victim);

  // Takes (removes from the list and returns) the segments no reader or
  // snapshot can reach any more: their epoch is gone, and oldest_snapshot
  // (the oldest sequence a snapshot reads at, or the last sequence when
  // there is none) is at or past their move.
  std::vector<uint64_t> TakeDeletable(uint64_t oldest_snapshot);

  size_t size() const { return segments_.size(); }
  bool empty() const { return segments_.empty(); }

 private:
  std::vector<Victim> segments_;
};

}  // namespace cairn::gc

#endif  // CAIRN_GC_OBSOLETE_SEGMENTS_H_
