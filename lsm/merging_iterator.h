// NewMergingIterator merges sorted InternalIterators into one: the union of
// their entries in internal-key order (lsm/dbformat.h), forwards and
// backwards. It is how a read sees memtables, L0 files and levels as one
// sorted run.
//
// Children should hold distinct internal keys (every update has its own
// sequence number). If two children do hold the same key, both copies are
// yielded, the child with the smaller index first when moving forwards, and
// direction changes stay exact.
//
// Errors: status() is the first non-OK status among the children, in child
// order. When a child fails, the merged iterator turns invalid at that move
// rather than silently skipping the child's remaining entries.
//
// Thread safety: like any iterator, one thread at a time.
#ifndef CAIRN_LSM_MERGING_ITERATOR_H_
#define CAIRN_LSM_MERGING_ITERATOR_H_

#include <memory>
#include <vector>

#include "lsm/internal_iterator.h"

namespace cairn::lsm {

// Takes ownership of children. With no children the result is empty; with one
// it is that child itself.
std::unique_ptr<InternalIterator> NewMergingIterator(
    std::vector<std::unique_ptr<InternalIterator>> children);

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_MERGING_ITERATOR_H_
