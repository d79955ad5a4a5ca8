// CompactionIterator walks the merged inputs of a compaction and yields only
// the entries the output must keep; it is where obsolete versions and
// tombstones are dropped, and where the value log learns which values died.
//
// Visibility: the live snapshots s1 < s2 < ... < sn and the latest sequence
// cut each user key's history into stripes; an entry with sequence q belongs
// to the stripe of the smallest snapshot >= q (or of the latest state when
// no snapshot is). A reader at any snapshot sees the newest entry of its
// stripe, so each stripe keeps exactly its newest entry; older entries of the
// same stripe are obsolete and dropped.
//
// A tombstone that is kept by that rule is dropped too when it lies in the
// oldest stripe (every snapshot already sees the key as deleted) and no level
// below the output can hold an older version of its key; the entries it hid
// go with it, since they are in the same stripe.
//
// Expiry and filters (issue 60): a kept entry whose expiry is at or before
// the job's time becomes a tombstone at its own sequence (every reader, at
// any snapshot, already reads it as deleted, and older versions below must
// stay hidden), its value reported as dropped; the tombstone rule above then
// applies. A kept entry of the newest stripe (no snapshot sees it) is
// offered to the filter, which may keep it, remove it (a tombstone as for
// expiry) or change its value (an inline value at the same sequence, with
// the same expiry; the old value reported as dropped).
//
// Thread safety: one thread at a time, like any iterator.
#ifndef CAIRN_LSM_COMPACTION_ITERATOR_H_
#define CAIRN_LSM_COMPACTION_ITERATOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "lsm/dbformat.h"
#include "lsm/range_tombstone.h"
#include "lsm/internal_iterator.h"

namespace cairn::lsm {

// CompactionListener hears of every kValue and kValuePointer entry that a
// compaction drops (overwritten, deleted, or hidden by a newer entry in its
// snapshot stripe, expired, or removed or changed by a filter), once per
// entry, with its type and stored bytes without any expiry (kValue or
// kValuePointer and the inline value or pointer bytes). Kept entries,
// dropped tombstones and trivial moves report nothing. The value
// log counts garbage per segment from these calls.
//
// Calls happen on the compaction's thread while the job runs, before the
// caller applies the job's VersionEdit, so the caller can record what it
// learnt in that same edit; if the job fails, the caller discards it.
class CompactionListener {
 public:
  virtual ~CompactionListener() = default;
  virtual void OnValueDropped(std::string_view user_key, ValueType type,
                              std::string_view stored_value) = 0;
};

// The compaction's half of a compaction filter (the DB adapts the user's
// cairn::CompactionFilter to it, reading separated values on demand).
class CompactionEntryFilter {
 public:
  enum class Verdict : uint8_t { kKeep, kRemove, kChangeValue };
  virtual ~CompactionEntryFilter() = default;
  // type is kValue or kValuePointer; payload the inline value or the
  // pointer bytes; expiry_micros the entry's expiry (0: none). For
  // kChangeValue sets *new_value (the new inline value). A failure fails
  // the compaction.
  virtual absl::Status Filter(std::string_view user_key, ValueType type, std::string_view payload,
                              uint64_t expiry_micros, Verdict* verdict,
                              std::string* new_value) = 0;
};

struct CompactionIteratorOptions {
  // Entries whose expiry is at or before this are dropped (0: none is).
  uint64_t now_micros = 0;
  CompactionEntryFilter* filter = nullptr;  // may be null
};

struct CompactionIteratorStats {
  uint64_t input_entries = 0;
  // Versions hidden by a newer entry of the same stripe.
  uint64_t dropped_obsolete = 0;
  // Tombstones dropped because nothing older can remain anywhere.
  uint64_t dropped_tombstones = 0;
  // Entries dropped because a range tombstone of the inputs covers them
  // (also counted in dropped_obsolete).
  uint64_t dropped_by_range = 0;
  // Values reported to the listener, and their stored bytes.
  uint64_t dropped_values = 0;
  uint64_t dropped_value_bytes = 0;
  // Expired entries turned into tombstones (their values reported).
  uint64_t expired = 0;
  // Entries the filter removed (turned into tombstones) and changed.
  uint64_t filter_removed = 0;
  uint64_t filter_changed = 0;
};

class CompactionIterator {
 public:
  // Says whether a level below the compaction's output may hold user_key.
  // Called at most once per user key, with ascending user keys.
  using KeyMayExistBelow = std::function<bool(std::string_view user_key)>;

  // input (merged inputs, in internal-key order) must outlive this iterator.
  // snapshots: the live snapshot sequences, sorted ascending. An empty
  // key_may_exist_below counts as always true (tombstones are kept).
  // listener may be null.
  // range_dels (may be null): the range tombstones of the inputs; an
  // entry one of them covers within its snapshot stripe (no live snapshot
  // at or above the entry and below the tombstone) is dropped as obsolete,
  // its value reported to the listener.
  CompactionIterator(InternalIterator* input, std::vector<SequenceNumber> snapshots,
                     SequenceNumber latest_sequence, KeyMayExistBelow key_may_exist_below,
                     CompactionListener* listener, RangeTombstonesPtr range_dels = nullptr,
                     CompactionIteratorOptions options = {});

  CompactionIterator(const CompactionIterator&) = delete;
  CompactionIterator& operator=(const CompactionIterator&) = delete;

  // Positions at the first entry to keep.
  void SeekToFirst();
  // Moves to the next entry to keep. REQUIRES: Valid().
  void Next();
  // False at the end or on error; status() tells them apart.
  bool Valid() const { return valid_; }
  // The entry as the output keeps it: the input's, or the tombstone or
  // changed value that expiry or the filter made of it.
  std::string_view key() const { return rewritten_ ? std::string_view(key_) : input_->key(); }
  std::string_view value() const { return rewritten_ ? std::string_view(value_) : input_->value(); }
  // The parsed form of key(). REQUIRES: Valid().
  const ParsedInternalKey& ikey() const { return ikey_; }
  // The input's error, DataLoss for an input key that is not a valid
  // internal key (or an expiring entry without its expiry), or the filter's
  // error.
  absl::Status status() const { return status_; }

  const CompactionIteratorStats& stats() const { return stats_; }

 private:
  // Index of the stripe holding sequence seq: 0 for the oldest snapshot's.
  size_t StripeOf(SequenceNumber seq) const;
  // Skips dropped entries from the input's position on, stopping at the
  // first entry to keep or at the end.
  void FindNextKept();
  // Reports a value the output drops to the listener and the stats.
  void ReportDropped(ValueType type, std::string_view payload, size_t stored_size);
  // Makes the output entry (user key at ikey_'s sequence) of type t with
  // value v.
  void Rewrite(ValueType t, std::string_view v);
  // Applies expiry and the filter to a kept value entry of stripe; false
  // on error (status_ set).
  bool ExpireOrFilter(size_t stripe);

  InternalIterator* const input_;
  const std::vector<SequenceNumber> snapshots_;
  const SequenceNumber latest_sequence_;
  const KeyMayExistBelow key_may_exist_below_;
  CompactionListener* const listener_;
  const RangeTombstonesPtr range_dels_;
  int range_hint_ = -1;

  // Whether a range tombstone of the same stripe covers the current entry.
  bool CoveredByRange(size_t stripe);
  const CompactionIteratorOptions options_;

  bool valid_ = false;
  absl::Status status_;
  ParsedInternalKey ikey_;
  // The output entry when expiry or the filter changed the input's.
  bool rewritten_ = false;
  std::string key_, value_, new_value_;
  // The user key of the last input entry, and that entry's stripe.
  std::string current_user_key_;
  bool has_current_user_key_ = false;
  size_t last_stripe_ = 0;
  CompactionIteratorStats stats_;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_COMPACTION_ITERATOR_H_
