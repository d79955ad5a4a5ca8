// ObsoleteSegments is the rule that decides when a collected segment may be
// deleted. A victim's records have been moved, but its file must stay while
// anything could still read it or bring its pointers back:
//   - a read view taken before the move (an iterator, a Get in flight): it
//     holds the read epoch that was current then, and the epoch's end is
//     seen through a weak pointer;
//   - a snapshot older than the move, which reads the old pointers;
//   - a WAL that recovery would replay, which may hold pointers into it.
// core/ supplies the three facts (the epoch, the oldest snapshot, the
// oldest WAL the manifest still names) and deletes the files; this class
// holds the list and the rule (docs/gc.md, "When a victim is deleted").
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
  // A victim whose pointers moved away as of sequence. epoch is the read
  // epoch current at the move (readers from before it hold it or an older
  // one, which holds it); an empty one means no reader can exist. log_number
  // is the newest WAL that may hold pointers into it, 0 for none.
  void Add(uint64_t segment_id, uint64_t sequence, uint64_t log_number,
           std::weak_ptr<const void> epoch);

  struct Ready {
    std::vector<uint64_t> deletable;  // removed from the list
    // Unreachable by any reader, kept only for a WAL recovery would replay:
    // a flush of the memtables frees them.
    size_t waiting_for_wal = 0;
  };
  // Takes the segments no reader, snapshot or WAL can reach any more:
  // their epoch is gone, oldest_snapshot (the oldest sequence a snapshot
  // reads at, or the last sequence when there is none) is at or past their
  // move, and their WAL is older than replayed_from (the oldest WAL the
  // manifest names for replay).
  Ready TakeDeletable(uint64_t oldest_snapshot, uint64_t replayed_from);

  size_t size() const { return segments_.size(); }
  bool empty() const { return segments_.empty(); }

 private:
  struct Segment {
    uint64_t id;
    uint64_t sequence;
    uint64_t log_number;
    std::weak_ptr<const void> epoch;
  };
  std::vector<Segment> segments_;
};

}  // namespace cairn::gc

#endif  // CAIRN_GC_OBSOLETE_SEGMENTS_H_
