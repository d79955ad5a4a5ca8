// MemTable is the in-memory write buffer of the LSM tree: a skip list of
// entries, each encoded once in an arena as
//
//   varint32 internal_key_size | internal key | varint32 value_size | value
//
// and ordered by internal key (lsm/dbformat.h): user key ascending, then
// sequence descending. Values are the LSM's tagged bytes (an inline value or
// an opaque value pointer); a deletion carries an empty value. A value longer
// than kMaxValueInEntry bytes lives in a second arena, and the entry holds
// its address (8 bytes) in its place: the entries and skip-list nodes that
// a search visits then stay close together, instead of one per 4 KiB value
// (values the flush separates are kept whole until the flush), which made
// every comparison of an insert or a lookup a cache and TLB miss.
//
// Thread safety: one writer at a time (the caller's lock serializes Add);
// readers (Get, iterators, the counters) may run concurrently with the writer
// and each other without locks.
#ifndef CAIRN_LSM_MEMTABLE_H_
#define CAIRN_LSM_MEMTABLE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lsm/arena.h"
#include "lsm/dbformat.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "lsm/internal_iterator.h"
#include "lsm/range_tombstone.h"
#include "lsm/skiplist.h"

namespace cairn::lsm {

class MemTable {
 private:
  // Orders encoded entries (or seek keys in the same length-prefixed form) by
  // their internal keys.
  struct KeyComparator {
    int operator()(const char* a, const char* b) const;
  };
  using Table = SkipList<const char*, KeyComparator>;

 public:
  // write_buffer_size (Options::memtable_size; 0: unknown) sizes the arenas'
  // blocks: a 64th of it, from 4 KiB up to 1 MiB (ArenaBlockSize). Small
  // blocks cost a malloc, and fresh pages, every few values: with 4 KiB
  // blocks every value of a kilobyte or more was an allocation of its own.
  // With a pool of that block size (the DB's, lsm/arena.h), both arenas
  // reuse the blocks earlier memtables gave back.
  explicit MemTable(size_t write_buffer_size = 0, std::shared_ptr<ArenaBlockPool> pool = nullptr);
  MemTable(const MemTable&) = delete;
  MemTable& operator=(const MemTable&) = delete;
  ~MemTable() = default;

  // Where the last Add or Get of a run through it ended, so that the next
  // one, for a later key, searches from there (SkipList::Finger): a sorted
  // batch of lookups or inserts costs about the gap between neighbouring
  // keys each, not a descent from the head. Any order is correct; a key
  // before the previous one searches from the head. One cursor per run and
  // memtable, on one thread; for Adds, the writer's, with no Add outside it
  // meanwhile.
  class Cursor {
   public:
    Cursor() = default;
    Cursor(const Cursor&) = delete;
    Cursor& operator=(const Cursor&) = delete;

   private:
    friend class MemTable;
    Table::Finger finger_;
    std::string scratch_;  // Get's encoded lookup key
  };

  // Adds an entry. A kRangeDeletion entry (key = begin, value = end) goes to
  // the range tombstones (AddRangeTombstone). REQUIRES: external synchronization among writers (one Add
  // at a time); seq <= kMaxSequenceNumber; (user_key, seq) not already added
  // (the DB gives every update its own sequence number). Readers may run
  // concurrently. With a cursor, the search starts from it (see Cursor).
  void Add(SequenceNumber seq, ValueType type, std::string_view user_key, std::string_view value,
           Cursor* cursor = nullptr);
  // The newest entry an Add put a newer one in front of.
  struct Superseded {
    ValueType type;
    // The tagged bytes (empty for a deletion); they point into the arena
    // and stay valid while the MemTable lives.
    std::string_view value;
  };
  // Add, and also finds the entry for user_key the new one supersedes (the
  // newest before it), from the insert's own search: true and *superseded
  // set when there is one.
  bool AddAndFindSuperseded(SequenceNumber seq, ValueType type, std::string_view user_key,
                            std::string_view value, Superseded* superseded,
                            Cursor* cursor = nullptr);

  // Adds a range tombstone [begin, end) at seq (lsm/range_tombstone.h).
  // Same requirements as Add; begin < end (the write path checks it).
  void AddRangeTombstone(SequenceNumber seq, std::string_view begin, std::string_view end);
  // The range tombstones in fragmented form, built when first asked for
  // after a change and cached; null when there are none.
  RangeTombstonesPtr RangeTombstones() const;
  // The range tombstones as added, oldest first (the flush writes them).
  std::vector<RangeTombstone> RangeTombstoneList() const;
  uint64_t num_range_deletions() const {
    return num_range_deletions_.load(std::memory_order_acquire);
  }

  // Finds the newest entry for user_key with sequence <= snapshot. Returns
  // false if there is none; else sets *type (kValue, kValuePointer or
  // kDeletion), *seq and, unless a deletion, *value (the tagged bytes).
  // REQUIRES: snapshot <= kMaxSequenceNumber.
  bool Get(std::string_view user_key, SequenceNumber snapshot, ValueType* type, SequenceNumber* seq,
           std::string* value, Cursor* cursor = nullptr) const;

  // Iterates (internal key, value) in internal-key order. key() and value()
  // point into the arena and stay valid while the MemTable lives. The
  // iterator's status is always OK. The MemTable must outlive the iterator.
  std::unique_ptr<InternalIterator> NewIterator() const;

  // The arenas' block size for a memtable of write_buffer_size bytes.
  static size_t ArenaBlockSize(size_t write_buffer_size);

  // Values longer than this are kept out of the entry (see above).
  static constexpr size_t kMaxValueInEntry = 64;

  // Bytes held by the arenas (entries, skip-list nodes and long values); the
  // flush trigger.
  size_t ApproximateMemoryUsage() const {
    return arena_.MemoryUsage() + value_arena_.MemoryUsage();
  }
  uint64_t num_entries() const { return num_entries_.load(std::memory_order_relaxed); }
  uint64_t num_deletes() const { return num_deletes_.load(std::memory_order_relaxed); }
  // No point entry and no range tombstone.
  bool empty() const { return num_entries() == 0 && num_range_deletions() == 0; }

 private:
  class Iterator;

  // Add's work; returns the entry now after the new one (null at the end).
  const char* const* Insert(SequenceNumber seq, ValueType type, std::string_view user_key,
                            std::string_view value, Cursor* cursor);

  Arena arena_;        // entries and skip-list nodes
  Arena value_arena_;  // values longer than kMaxValueInEntry
  Table table_;
  std::atomic<uint64_t> num_entries_{0};
  std::atomic<uint64_t> num_deletes_{0};
  // Range tombstones: few next to the point entries, so kept in a plain
  // list under a mutex (the writer appends, readers copy the cached
  // fragmented form's pointer).
  mutable absl::Mutex range_mu_;
  std::vector<RangeTombstone> range_tombstones_ ABSL_GUARDED_BY(range_mu_);
  mutable RangeTombstonesPtr fragmented_ ABSL_GUARDED_BY(range_mu_);
  std::atomic<uint64_t> num_range_deletions_{0};
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_MEMTABLE_H_
