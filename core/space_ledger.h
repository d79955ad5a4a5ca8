// SpaceLedger keeps the value log's space figures between the manifest's
// counts (docs/gc.md, "Counting garbage in time"): what the mutable
// memtable names and hides, what each L0 table may hide below it, the yield
// L0 compactions show, and the copies of running GC jobs. It takes events
// (a group inserted, a memtable switched, a table flushed, L0 compacted, a
// GC job copying and ending) and answers the questions GC, the write path
// and compaction ask: the space figure GC steers by, whether the memtable
// is full for what it hides, whether L0 needs a compaction so that its
// garbage gets counted, and whether hidden garbage may pass a mark.
//
// It reads the rest of the engine through Sources (the segment set's
// totals, the immutable memtables' figures, the current version), so that
// its unit tests need no DB (core/space_ledger_test.cc).
//
// Thread safety: the write leader alone calls GroupInserted; the counters it
// keeps are atomics read by everyone. Every other method, and Sources'
// functions, run under the DB's mutex (the caller holds it).
#ifndef CAIRN_CORE_SPACE_LEDGER_H_
#define CAIRN_CORE_SPACE_LEDGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "core/db_records.h"
#include "lsm/version_set.h"
#include "vlog/segment_set.h"

namespace cairn {

class SpaceLedger {
 public:
  using ValueLogSpace = db_records::ValueLogSpace;
  using Level0Hidden = db_records::Level0Hidden;

  struct Settings {
    double gc_space_amp_trigger = 0;  // Options::gc_space_amp_trigger
    uint64_t memtable_size = 0;
    uint64_t max_memtable_value_bytes = 0;
  };
  // What the ledger reads of the engine at a question.
  struct Figures {
    vlog::SegmentSet::Totals set;
    uint64_t active_bytes = 0;  // the active segment's, unsealed
    // Victims waiting for durability: collected already as far as GC goes.
    uint64_t pending_victim_bytes = 0, pending_victim_garbage = 0;
    uint64_t foreseen_bytes = 0;  // garbage foreseen at flush, not counted yet
    // The immutable memtables', summed: value-log bytes their flushes will
    // separate, value bytes they name (with their deletions' estimate), and
    // of those the deletions' estimate.
    uint64_t imm_flush_value_bytes = 0, imm_value_bytes = 0, imm_deleted_bytes = 0;
  };
  struct Sources {
    std::function<Figures()> figures;
    std::function<std::shared_ptr<const lsm::Version>()> current_version;
    // The mean value-log record over every segment, for L0 tables flushed
    // before this open (asked once).
    std::function<uint64_t()> average_record;
  };
  // What a memtable named and hid when it was switched out, for its
  // immutable entry (ImmutableMemTable's value_bytes, deleted_bytes,
  // flush_value_bytes).
  struct SwitchedMemTable {
    uint64_t value_bytes = 0, deleted_bytes = 0, flush_value_bytes = 0;
  };
  // One write group's counts (DBImpl::InsertGroup).
  struct Group {
    uint64_t named = 0;       // value-log bytes its pointers name
    bool gc_rewrite = false;  // GC's rewrites: they hide no garbage
    uint64_t superseded = 0;  // bytes of pointers its entries superseded in the memtable
    uint64_t deletions = 0;   // deletions that may hide a value below
    uint64_t for_flush = 0;   // records the flush will write for values left inline
  };

  SpaceLedger(Settings settings, Sources sources)
      : settings_(settings), sources_(std::move(sources)) {}
  SpaceLedger(const SpaceLedger&) = delete;
  SpaceLedger& operator=(const SpaceLedger&) = delete;

  // Events.
  // The write leader inserted a group into the mutable memtable.
  void GroupInserted(const Group& g);
  // The mutable memtable was switched out: its figures, and a fresh start.
  SwitchedMemTable MemTableSwitched();
  // A flush wrote table file_number from a memtable whose pointers name
  // named bytes (GC's rewrites left out) and which held deletions. With
  // found engaged, the flush listed exactly the garbage it shadows below
  // (garbage foreseen at flush): nothing is left to estimate, and the yield
  // is learnt from it.
  void TableFlushed(uint64_t file_number, uint64_t named, uint64_t deletions,
                    std::optional<uint64_t> found);
  // An L0 compaction of inputs counted counted garbage bytes.
  void Level0Compacted(absl::Span<const uint64_t> inputs, uint64_t counted);
  // A GC job copied bytes whose victims are still in the figure (in an
  // output not yet in the set: unlisted too); its output joined the set
  // (unlisted bytes leave the figure); its victims left the figure or the
  // job ended (its copies leave it).
  void GcCopied(uint64_t bytes) {
    gc_copies_.fetch_add(bytes, std::memory_order_relaxed);
    gc_copies_unlisted_.fetch_add(bytes, std::memory_order_relaxed);
  }
  void GcUnlistedReleased(uint64_t bytes) {
    gc_copies_unlisted_.fetch_sub(bytes, std::memory_order_relaxed);
  }
  void GcCopiesReleased(uint64_t bytes) { gc_copies_.fetch_sub(bytes, std::memory_order_relaxed); }

  // Questions.
  // What GC steers by; uncounted is filled only with with_estimate.
  ValueLogSpace Space(bool with_estimate);
  // The mutable memtable should be flushed for what it names or hides
  // (Options::max_memtable_value_bytes; docs/gc.md).
  bool MemTableFull();
  // A compaction of every L0 file is due so that the garbage L0 hides gets
  // counted (docs/gc.md, "Garbage compaction of L0").
  bool NeedsGarbageCompaction();
  // A settle step: whether the garbage the memtables and L0 may hide (every
  // pointer taken to hide a live record) could put the value log past mark.
  bool HiddenGarbageMayPass(double mark);
  // The garbage the mutable memtable hides (at least what it superseded in
  // itself; under overwrites about what it names, at the yield).
  uint64_t MemTableGarbageEstimate();
  // Recent flushes' and L0 compactions' share of named bytes that hid
  // garbage below (0 while loading, about 1 under overwrites).
  double yield() const { return garbage_yield_; }
  // The mutable memtable names value-log pointers (inline mode never does).
  bool MemHasPointers() const { return mem_value_bytes_.load(std::memory_order_relaxed) > 0; }

 private:
  // Value-log bytes the mutable memtable names that may hide garbage below
  // it: what it names less GC's rewrites.
  uint64_t MemHiddenValueBytes() const {
    const uint64_t named = mem_value_bytes_.load(std::memory_order_relaxed);
    return named - std::min(named, mem_gc_value_bytes_.load(std::memory_order_relaxed));
  }
  uint64_t HiddenEstimate(uint64_t value_bytes, uint64_t deleted_bytes) const;
  bool HidesQuarterOfAllowance(uint64_t named, uint64_t hidden);
  uint64_t DeletedValueEstimate(uint64_t deletions);
  // What v's L0 tables may hide; nullopt while one is being compacted.
  std::optional<Level0Hidden> Level0HiddenBytes(const lsm::Version& v);

  const Settings settings_;
  const Sources sources_;
  // Of the mutable memtable, kept by the write leader and reset at its
  // switch: value-log bytes its pointers name, and of them GC's rewrites';
  // bytes of pointers newer entries superseded in it (garbage once
  // flushed); deletions; records its flush will write.
  std::atomic<uint64_t> mem_value_bytes_{0}, mem_gc_value_bytes_{0};
  std::atomic<uint64_t> mem_superseded_bytes_{0}, mem_deletions_{0}, mem_flush_value_bytes_{0};
  // Bytes running GC jobs copied whose victims are still in the figure,
  // and of them those in outputs not in the set yet.
  std::atomic<uint64_t> gc_copies_{0}, gc_copies_unlisted_{0};
  // Value-log bytes named by each L0 table this process flushed (tables
  // from before the open are estimated); dropped when the table leaves L0.
  absl::flat_hash_map<uint64_t, Level0Hidden> l0_hidden_;
  // The average value-log record, taken once at the first estimate for a
  // table from before the open (every write asks, and it walks every
  // segment).
  uint64_t recovered_average_record_ = 0;
  // Garbage counted per value-log byte named by the L0 tables compacted
  // (or found at flush), as a moving average; 0 until the first: assuming
  // the worst made every load look like overwrites.
  double garbage_yield_ = 0.0;
  // DeletedValueEstimate's table entries, and the version they are of
  // (compared only, never dereferenced).
  const lsm::Version* entries_version_ = nullptr;
  uint64_t table_entries_ = 0;
};

}  // namespace cairn

#endif  // CAIRN_CORE_SPACE_LEDGER_H_
