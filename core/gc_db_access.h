// GcDbAccess is everything the GC coordinator (core/gc_coordinator.h) needs
// of the DB, and nothing more: read views and batched lookups, pointer
// rewrites through the write queue, WAL syncs, memtable switches, sealing
// the active value-log segment, manifest edits, the read epoch's
// SuperVersion, the oldest snapshot, and the DB's background-error and
// closing state. DBImpl implements it privately; the coordinator never sees
// DBImpl itself, so what GC may touch of the DB is this list.
//
// Thread safety: the methods named *Locked run with the DB's mutex held
// (the one the coordinator was built with; it asserts that before each
// call); every other method takes the DB's locks it needs itself and is
// called without the DB's mutex.
#ifndef CAIRN_CORE_GC_DB_ACCESS_H_
#define CAIRN_CORE_GC_DB_ACCESS_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "lsm/dbformat.h"
#include "lsm/memtable.h"
#include "vlog/segment_edit.h"
#include "vlog/value_log.h"
#include "vlog/value_pointer.h"

namespace cairn {

class FileDeleter;
class InfoLog;

// A conditional pointer write-back from the garbage collector: each key is
// rewritten to its new pointer only while it still points at its old one.
struct GcPointerRewrite {
  absl::Span<const std::string_view> keys;
  absl::Span<const vlog::ValuePointer> old_pointers;
  absl::Span<const vlog::ValuePointer> new_pointers;
  std::vector<bool>* replaced;
  // Every key was seen pointing at its old pointer in a read view at or
  // after base_sequence, whose mutable memtable was base_mem: while
  // base_mem is still in the current SuperVersion, every later write is
  // in its memtables, and the leader looks only there. Null: look the
  // keys up in the whole LSM.
  lsm::SequenceNumber base_sequence = 0;
  const lsm::MemTable* base_mem = nullptr;
  // The DB's own (the coordinator leaves it empty): each key's expiry as
  // found before the rewrite entered the write queue (0: none), which its
  // rewrite keeps. Empty: no key expires.
  absl::Span<const uint64_t> expiries;
};

// The read view a batch of liveness checks used: its sequence and its
// mutable memtable.
struct GcReadBase {
  lsm::SequenceNumber sequence = 0;
  std::shared_ptr<lsm::MemTable> mem;
};

class GcDbAccess {
 public:
  virtual ~GcDbAccess() = default;

  // Read views and lookups.
  // Takes a read view; when unless_holding is null or no longer one of its
  // memtables, looks every keys[i] up in it (in key order, batched as
  // MultiGet does) and sets (*live)[i] to whether it points at pointers[i],
  // and *looked to true. *view is the view's base either way (set before
  // any lookup, also when one fails). Otherwise (the memtables
  // still hold every write since unless_holding's base) *looked is false
  // and nothing is looked up.
  virtual absl::Status CheckPointers(absl::Span<const std::string_view> keys,
                                     absl::Span<const vlog::ValuePointer> pointers,
                                     const lsm::MemTable* unless_holding, std::vector<bool>* live,
                                     GcReadBase* view, bool* looked) = 0;
  // The highest sequence visible to readers.
  virtual lsm::SequenceNumber LastSequence() = 0;
  // The manifest's last sequence: every write at or below it is durable
  // (synced, or flushed into a table).
  virtual lsm::SequenceNumber DurableSequence() = 0;

  // The write queue: a rewrite alone in its group (synced when sync), a
  // synced group of no writes, a memtable switch, the active segment sealed
  // (a failure is the background error).
  virtual absl::Status WritePointerRewrite(const GcPointerRewrite& rewrite, bool sync) = 0;
  virtual absl::Status SyncWal() = 0;
  virtual absl::Status SwitchMemTable() = 0;
  virtual absl::Status SealActiveSegment() = 0;
  // DB::Flush (an error is sticky in the background error, or the close).
  virtual absl::Status Flush() = 0;
  // Tests only: DBImpl::before_gc_rewrite_for_testing, when set.
  virtual void BeforeRewriteForTesting() = 0;

  // The manifest and the files.
  virtual uint64_t NewFileNumber() = 0;
  virtual absl::Status LogAndApply(const vlog::SegmentEdit& edit) = 0;
  virtual vlog::ValueLog& value_log() = 0;
  virtual FileDeleter& deleter() = 0;
  virtual InfoLog& info_log() = 0;

  // Under the DB's mutex.
  virtual bool ShuttingDownLocked() = 0;
  virtual absl::Status BackgroundErrorLocked() = 0;
  virtual void SetBackgroundErrorLocked(const absl::Status& s) = 0;
  // Publishes a SuperVersion with the current read epoch (after the
  // coordinator's Retention ended one).
  virtual void InstallSuperVersionLocked() = 0;
  // The oldest snapshot's sequence (the last sequence when there is none).
  virtual lsm::SequenceNumber OldestSnapshotLocked() = 0;
  // What a victim release weighs a sync against: the newest sequence an
  // immutable memtable (queued for its flush) holds (0: none), their
  // count, and the mutable memtable's memory.
  struct MemTables {
    lsm::SequenceNumber queued_through = 0;
    size_t immutable = 0;
    uint64_t mutable_bytes = 0;
  };
  virtual MemTables MemTablesLocked() = 0;
  // The WAL bytes written since its last sync (at most).
  virtual uint64_t WalUnsyncedBytes() = 0;
  // Waits on the DB's condition variable while busy() holds (re-asking at
  // least every 100 ms); the background error, or Aborted once closing.
  virtual absl::Status WaitWhileLocked(absl::FunctionRef<bool()> busy) = 0;
};

}  // namespace cairn

#endif  // CAIRN_CORE_GC_DB_ACCESS_H_
