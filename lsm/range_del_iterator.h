// An internal iterator that hides the entries range tombstones delete: an
// entry (k, q) is skipped when a tombstone of the set spans k with sequence
// t, q < t <= snapshot. Hiding every version a tombstone covers is exact for
// DB iterators: a tombstone covers all versions of a key older than itself,
// so what stays is what a reader at the snapshot may see.
//
// Each positioning walks on past covered entries in its direction; the
// fragment lookups keep a hint per list, so a scan pays O(1) per entry for
// the tombstones, and a seek one binary search per list.
#ifndef CAIRN_LSM_RANGE_DEL_ITERATOR_H_
#define CAIRN_LSM_RANGE_DEL_ITERATOR_H_

#include <memory>

#include "lsm/internal_iterator.h"
#include "lsm/range_tombstone.h"

namespace cairn::lsm {

// Returns input unchanged when set is empty.
std::unique_ptr<InternalIterator> NewRangeDelFilterIterator(std::unique_ptr<InternalIterator> input,
                                                            RangeTombstoneSet set,
                                                            SequenceNumber snapshot);

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_RANGE_DEL_ITERATOR_H_
