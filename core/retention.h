// Retention is the one place that says when value-log bytes may leave the
// disk: no segment is unlinked, and no run of dead records punched, while
// anything that can still name one of its records lives. What can name a
// record, and what holds it:
//   - a read view: Get, MultiGet, a Get into a PinnableValue and GetRange
//     (from the lookup until the value is read), a GC liveness batch, an
//     iterator with its lookahead and the value reads it has in flight
//     (the fetcher is destroyed before the view). A view holds the read
//     epoch that was current when it was taken (through its SuperVersion);
//   - a snapshot: registered with the DB, it is the oldest sequence any
//     read may use;
//   - an iterator made on a snapshot: it pins the snapshot's sequence for
//     its whole life (PinSequence), so that releasing the snapshot while
//     the iterator lives leaves its reads whole, as in RocksDB;
//   - a checkpoint being copied: it holds the current epoch until its links
//     are made;
//   - a WAL kept for the change feed (Options::wal_ttl_seconds and
//     wal_size_limit_bytes, or a feed iterator reading it): its pointers
//     are read by DB::GetUpdatesSince, so the first sequence of the oldest
//     such WAL counts as a pinned sequence (SetWalFloor), and a segment
//     whose records moved after it stays (docs/replication.md);
//   - a WAL a crash would replay: a victim becomes obsolete only once the
//     writes that moved or superseded its records are durable
//     (core/gc_job_index.cc, JobIndex::LogSegmentEdit, and
//     GcCoordinator::ReleasePendingVictims), so no replayed pointer can name
//     a deleted segment as the newest write to its key.
// The rule for a collected segment is gc::ObsoleteSegments' (its epoch is
// gone, and no snapshot or pinned sequence is older than its move); a
// punched run waits for its epoch the same way
// (core/gc_coordinator_punch.cc).
// docs/gc.md, "When a collected segment may be deleted".
//
// Epochs: each epoch keeps the next one alive, so an epoch expires only once
// no view of it or of any earlier epoch remains. Ending an epoch (EndEpoch)
// hands back a token that expires then; the caller installs a SuperVersion
// with the new epoch, so views taken afterwards do not hold the old one.
//
// Thread safety: every method is thread-safe (mu_ is a leaf: nothing is
// called with it held).
#ifndef CAIRN_CORE_RETENTION_H_
#define CAIRN_CORE_RETENTION_H_

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/super_version.h"
#include "gc/obsolete_segments.h"

namespace cairn {

class Retention {
 public:
  Retention() = default;
  Retention(const Retention&) = delete;
  Retention& operator=(const Retention&) = delete;

  // Holds a sequence for as long as it lives; movable. A pin must not
  // outlive its Retention (an iterator must not outlive its DB).
  class SequencePin {
   public:
    SequencePin() = default;
    SequencePin(SequencePin&& other) noexcept { *this = std::move(other); }
    SequencePin& operator=(SequencePin&& other) noexcept;
    ~SequencePin() { Reset(); }
    void Reset();
    bool pinned() const { return owner_ != nullptr; }

   private:
    friend class Retention;
    Retention* owner_ = nullptr;
    uint64_t sequence_ = 0;
  };

  // The epoch a new SuperVersion carries (and a checkpoint holds).
  std::shared_ptr<const ReadEpoch> epoch() const ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the current epoch and starts the next; the token expires once no
  // view of the ended epoch or an earlier one remains. The caller installs
  // a SuperVersion carrying epoch() next.
  std::weak_ptr<const void> EndEpoch() ABSL_LOCKS_EXCLUDED(mu_);

  // Keeps sequence readable (for an iterator made on a snapshot) until the
  // pin is destroyed.
  SequencePin PinSequence(uint64_t sequence) ABSL_LOCKS_EXCLUDED(mu_);
  size_t pinned_sequences() const ABSL_LOCKS_EXCLUDED(mu_);

  // Segments the manifest now marks obsolete, their records moved by
  // sequence: they wait for the current epoch's readers, older snapshots
  // and older pinned sequences. Ends the epoch (the caller installs a new
  // SuperVersion).
  void AddObsolete(absl::Span<const uint64_t> ids, uint64_t sequence) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes the obsolete segments nothing can reach any more; oldest_snapshot
  // is the DB's oldest snapshot (its last sequence when there is none).
  std::vector<uint64_t> TakeDeletable(uint64_t oldest_snapshot) ABSL_LOCKS_EXCLUDED(mu_);
  // Open: segments the manifest lists as obsolete, which no reader of this
  // process can reach. sequence is 0 when no WAL is kept for the feed;
  // otherwise the last sequence at open, so that the WALs kept from before
  // the open (their pointers may name them) hold them through the floor.
  void AddObsoleteAtOpen(absl::Span<const uint64_t> ids, uint64_t sequence = 0)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The first sequence of the oldest WAL kept for the change feed (0 when
  // it is not known yet; UINT64_MAX when none is kept): collected segments
  // moved after it stay, as for a snapshot at it.
  void SetWalFloor(uint64_t sequence) ABSL_LOCKS_EXCLUDED(mu_);
  size_t obsolete_segments() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  std::weak_ptr<const void> EndEpochLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unpin(uint64_t sequence) ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  std::shared_ptr<ReadEpoch> epoch_ ABSL_GUARDED_BY(mu_) = std::make_shared<ReadEpoch>();
  std::multiset<uint64_t> pinned_ ABSL_GUARDED_BY(mu_);
  uint64_t wal_floor_ ABSL_GUARDED_BY(mu_) = UINT64_MAX;
  gc::ObsoleteSegments obsolete_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn

#endif  // CAIRN_CORE_RETENTION_H_
