// Range tombstones: what DeleteRange(begin, end) leaves in the LSM tree. A
// tombstone at sequence t deletes every version of every user key in
// [begin, end) whose sequence is below t; a reader at snapshot s sees it
// only when t <= s.
//
// Memtables and tables keep their tombstones beside their point entries, and
// readers use them in the fragmented form below: the tombstones cut at every
// begin and end into non-overlapping pieces, sorted, each with the
// sequences of every tombstone that spans it. A read then finds the piece
// holding a key with one binary search however many tombstones overlap
// there, so a get that meets 1,000 tombstones costs one search more than a
// get that meets none (bench/range_del_bench.cc). Memtables and tables cache
// their fragmented form (built once per table, and again for a memtable only
// after it gained a tombstone).
#ifndef CAIRN_LSM_RANGE_TOMBSTONE_H_
#define CAIRN_LSM_RANGE_TOMBSTONE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lsm/dbformat.h"

namespace cairn::lsm {

struct RangeTombstone {
  std::string begin;  // inclusive
  std::string end;    // exclusive; begin < end
  SequenceNumber seq = 0;
};

class FragmentedRangeTombstones {
 public:
  struct Fragment {
    std::string begin;
    std::string end;
    // Every spanning tombstone's sequence, newest first, no repeats.
    std::vector<SequenceNumber> seqs;
  };

  FragmentedRangeTombstones() = default;
  // Any tombstones, in any order, overlapping or not. Tombstones with
  // begin >= end are ignored (the write path refuses them).
  explicit FragmentedRangeTombstones(const std::vector<RangeTombstone>& tombstones);

  bool empty() const { return fragments_.empty(); }
  // The tombstones it was built from.
  uint64_t num_tombstones() const { return num_tombstones_; }
  const std::vector<Fragment>& fragments() const { return fragments_; }

  // The newest sequence <= snapshot of a tombstone covering user_key; 0 when
  // none (no entry has sequence 0 below a tombstone: sequences start at 1).
  SequenceNumber MaxCoveringSeq(std::string_view user_key, SequenceNumber snapshot) const;
  // The index of the fragment holding user_key, or -1. A hint (a previous
  // answer, or -1) makes a forward or backward walk cost O(1) per step.
  int FindFragment(std::string_view user_key, int hint = -1) const;
  // The newest sequence <= snapshot in fragment i; 0 when none.
  SequenceNumber NewestAtOrBelow(int i, SequenceNumber snapshot) const;

  // Whether an entry of sequence seq, visible at snapshot (seq <= snapshot),
  // is deleted by a tombstone here: some covering tombstone has seq < t <=
  // snapshot.
  bool Covers(std::string_view user_key, SequenceNumber seq, SequenceNumber snapshot) const {
    return MaxCoveringSeq(user_key, snapshot) > seq;
  }

  // Every fragment's piece of each tombstone as plain tombstones (one per
  // fragment and sequence), clipped to [lower, upper) where those are not
  // empty. Fragmenting the result again gives the same fragments.
  std::vector<RangeTombstone> ToTombstones(std::string_view lower = {},
                                           std::string_view upper = {}) const;

 private:
  std::vector<Fragment> fragments_;
  uint64_t num_tombstones_ = 0;
};

using RangeTombstonesPtr = std::shared_ptr<const FragmentedRangeTombstones>;

// A set of fragmented lists read together (a read view's memtables and
// tables): a key is covered when any of them covers it. Empty lists are not
// kept, so a view without tombstones pays nothing.
class RangeTombstoneSet {
 public:
  void Add(RangeTombstonesPtr list) {
    if (list != nullptr && !list->empty()) lists_.push_back(std::move(list));
  }
  bool empty() const { return lists_.empty(); }
  SequenceNumber MaxCoveringSeq(std::string_view user_key, SequenceNumber snapshot) const {
    SequenceNumber best = 0;
    for (const auto& l : lists_) best = std::max(best, l->MaxCoveringSeq(user_key, snapshot));
    return best;
  }
  bool Covers(std::string_view user_key, SequenceNumber seq, SequenceNumber snapshot) const {
    for (const auto& l : lists_) {
      if (l->MaxCoveringSeq(user_key, snapshot) > seq) return true;
    }
    return false;
  }
  const std::vector<RangeTombstonesPtr>& lists() const { return lists_; }

 private:
  std::vector<RangeTombstonesPtr> lists_;
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_RANGE_TOMBSTONE_H_
