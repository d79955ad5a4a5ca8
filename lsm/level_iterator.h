// The level iterator walks the files of one level from L1 down (sorted,
// non-overlapping) as one sorted run: it opens each file through the
// TableCache only when the walk reaches it, moves both ways, and seeks by
// binary search on the files' largest keys.
//
// Errors: when a file's iterator fails (a table that does not open, a bad
// block), the level iterator turns invalid at that move and status() returns
// the error; it never skips the rest of a bad file silently.
//
// Thread safety: one thread at a time, like any iterator.
#ifndef CAIRN_LSM_LEVEL_ITERATOR_H_
#define CAIRN_LSM_LEVEL_ITERATOR_H_

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "lsm/internal_iterator.h"
#include "lsm/table.h"
#include "lsm/version_edit.h"

namespace cairn::lsm {

class TableCache;

// Index of the first file whose largest key is >= internal_key
// (files.size() when there is none). REQUIRES: files sorted by key,
// non-overlapping.
size_t FindFile(const std::vector<std::shared_ptr<FileMetaData>>& files,
                std::string_view internal_key);

// Iterates files (sorted by key, non-overlapping). The iterator keeps the
// FileMetaData alive; tc must outlive it.
std::unique_ptr<InternalIterator> NewLevelIterator(
    const TableReadOptions& ro, TableCache* tc,
    std::vector<std::shared_ptr<FileMetaData>> files);

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_LEVEL_ITERATOR_H_
