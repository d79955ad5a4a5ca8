// Subcompactions: one large compaction split into key ranges that run in
// parallel (RocksDB's name and idea). Each range is merged, filtered and
// written on its own; the ranges meet at user keys, so every version of a
// user key lands in one range and the outputs of different ranges never
// overlap. RunCompaction (lsm/compaction_job.h) records all of them in one
// VersionEdit, or none when any range fails.
//
// Thread safety: the functions below are pure given their inputs; the
// iterator is single-threaded like any other.
#ifndef CAIRN_LSM_SUBCOMPACTION_H_
#define CAIRN_LSM_SUBCOMPACTION_H_

#include <memory>
#include <string>
#include <vector>

#include "lsm/compaction.h"
#include "lsm/internal_iterator.h"
#include "lsm/table_cache.h"

namespace cairn::lsm {

// How many ranges c should run as: at most max_parts, and no more than one
// per MaxOutputFileSize() of input (a range smaller than one output file
// saves less than its thread costs). 1 for a trivial move.
int SubcompactionCount(const Compaction& c, int max_parts);

// The user keys that cut c's input into `parts` ranges of about equal input
// bytes: k1 < k2 < ... (at most parts - 1 of them), each > c's smallest user
// key and <= its largest; range i is [k_i, k_{i+1}), the first unbounded
// below and the last above. Candidates are index separators of the input
// tables; the bytes below each are estimated from the tables' indexes, so no
// data block is read. Fewer keys (none: do not split) when the inputs offer
// too few distinct candidates or a table cannot be opened (the compaction
// itself will then report that).
std::vector<std::string> SubcompactionBoundaries(const Compaction& c, TableCache* table_cache,
                                                 int parts);

// input restricted to the user keys [*start, *end) (null: unbounded), read
// forward: SeekToFirst seeks to *start, and the iterator ends before the
// first entry whose user key is >= *end. Only SeekToFirst and Next may move
// it. start and end must outlive it.
std::unique_ptr<InternalIterator> NewUserKeyRangeIterator(std::unique_ptr<InternalIterator> input,
                                                          const std::string* start,
                                                          const std::string* end);

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_SUBCOMPACTION_H_
