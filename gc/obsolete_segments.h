// ObsoleteSegments is the rule that decides when a collected segment may be
// deleted. A victim's records have been moved, but its file must stay while
// anything could still read it or bring its pointers back:
//   - a read view taken before the move (an iterator, a Get in flight): it
//     holds the read epoch that was current then, and the epoch's end is
//     seen through a weak pointer;
//   - a snapshot older than the move, which reads the old pointers;
//   - a crash that loses the writes which made its records dead or moved
//     them: recovery would then bring the old pointers back. The victim
//     waits until those writes are durable, either synced in the WAL
//     (recovery accepts a pointer into a collected segment from a WAL when
//     a later replayed write supersedes it, docs/durability.md) or flushed
//     to a table.
// core/ supplies the facts (the epoch, the oldest snapshot, the synced
// sequence, the oldest WAL the manifest still names) and deletes the
// files; this class holds the list and the rule (docs/gc.md, "When a
// victim is deleted").
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
    // Every write that made one of its records dead, or moved one, is at or
    // below this sequence.
    uint64_t durable_at = 0;
    // The newest WAL that may hold those writes, 0 for none.
    uint64_t log_number = 0;
    // The read epoch current at the move (readers from before it hold it
    // or an older one, which holds it); an empty one means no reader can
    // exist.
    std::weak_ptr<const void> epoch;
  };
  void Add(Victim victim);

  struct Ready {
    std::vector<uint64_t> deletable;  // removed from the list
    // Unreachable by any reader, kept only until the writes that
    // superseded its records are durable: a sync of the WAL (any sync
    // write, or the switch to a new WAL) or a flush frees them.
    size_t waiting_for_wal = 0;
  };
  // Takes the segments no reader, snapshot or crash can reach any more:
  // their epoch is gone, oldest_snapshot (the oldest sequence a snapshot
  // reads at, or the last sequence when there is none) is at or past their
  // move, and either synced_sequence (the last sequence synced in the WAL)
  // is at or past durable_at or their WAL is older than replayed_from (the
  // oldest WAL the manifest names for replay).
  Ready TakeDeletable(uint64_t oldest_snapshot, uint64_t synced_sequence,
                      uint64_t replayed_from);

  size_t size() const { return segments_.size(); }
  bool empty() const { return segments_.empty(); }

 private:
  std::vector<Victim> segments_;
};

}  // namespace cairn::gc

#endif  // CAIRN_GC_OBSOLETE_SEGMENTS_H_
