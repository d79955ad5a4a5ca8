// CompactionFilter: a user callback that compactions call for each entry no
// live snapshot can see, to keep it, remove it or change its value (issue
// 60; RocksDB's CompactionFilter is the model, MVCC layers its main users).
//
// What a filter is given: the user key and the value behind a lazy accessor.
// A separated value (one in the value log) is not read unless the filter
// calls Value::Read(), so a filter that decides by key or size alone reads
// no value-log byte. What it removes or replaces becomes value-log garbage at
// once, in the compaction's own manifest edit, exactly as an overwritten
// value that the compaction drops.
//
// Rules (docs/decisions/20261207_compaction_filter.md):
// - Only compactions call it, not flushes; a trivial move (a table moved
//   down a level unread) calls it for nothing.
// - Entries that a live snapshot can see are never offered; deletions and
//   expired entries are never offered.
// - kRemove turns the entry into a deletion, so an older version of the key
//   in a level below does not come back; the deletion goes once nothing
//   older can remain, as any deletion does.
// - kChangeValue replaces the value with *new_value, which is stored inline
//   in the LSM whatever its size (it does not go to the value log) and keeps
//   the entry's expiry, if any.
// - A filter that throws, or returns a decision outside the enum, fails the
//   compaction: nothing of it is installed, its inputs stay as they were,
//   and the failure becomes the DB's background error (writes stop with it,
//   reads go on, a reopen clears it).
//
// Thread safety: Filter may be called from several threads at once (the key
// ranges of one compaction, and concurrent compactions).
#ifndef CAIRN_COMPACTION_FILTER_H_
#define CAIRN_COMPACTION_FILTER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace cairn {

class CompactionFilter {
 public:
  enum class Decision : uint8_t {
    kKeep = 0,
    kRemove = 1,
    kChangeValue = 2,
  };

  // Where the call comes from.
  struct Context {
    int level = 0;         // the compaction's input level
    int output_level = 0;  // where its output goes
  };

  // The entry's value, read on demand.
  class Value {
   public:
    virtual ~Value() = default;
    // The value's size in bytes; never reads the value log.
    virtual uint64_t size() const = 0;
    // Whether the value is in the value log (reading it costs a read).
    virtual bool separated() const = 0;
    // The value's bytes: an inline value at no cost, a separated one read
    // from the value log at the first call (later calls return the same
    // bytes). Valid until Filter returns. A failed read is returned as its
    // status; the filter may then decide anyway or return kKeep.
    virtual absl::StatusOr<std::string_view> Read() = 0;
  };

  virtual ~CompactionFilter() = default;

  // Decides on one entry. For kChangeValue, sets *new_value (empty on
  // entry). expiry_micros is the entry's expiry (0: none).
  virtual Decision Filter(const Context& context, std::string_view key, Value& value,
                          uint64_t expiry_micros, std::string* new_value) = 0;

  // Shown in the info log.
  virtual const char* Name() const = 0;
};

}  // namespace cairn

#endif  // CAIRN_COMPACTION_FILTER_H_
