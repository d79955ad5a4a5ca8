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
// Seeks: with a file system (the one the tables' files were opened with), a
// Seek first gathers the block reads every child needs and makes them
// together (lsm/seek_batch.h), so that a seek over n sorted runs waits for
// one device round trip instead of n. Without one, children seek in turn.
//
// Thread safety: like any iterator, one thread at a time.
#ifndef CAIRN_LSM_MERGING_ITERATOR_H_
#define CAIRN_LSM_MERGING_ITERATOR_H_

#include <memory>
#include <vector>

#include "io/file_system.h"
#include "lsm/internal_iterator.h"

namespace cairn::lsm {

// Takes ownership of children. With no children the result is empty; with one
// it is that child itself. fs may be null (see Seeks above).
std::unique_ptr<InternalIterator> NewMergingIterator(
    std::vector<std::unique_ptr<InternalIterator>> children, io::FileSystem* fs = nullptr);

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_MERGING_ITERATOR_H_
