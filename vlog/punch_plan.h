// Which runs of a segment's dead records to punch out of its file, and the
// byte ranges that frees (docs/gc.md, "Punched runs").
//
// A record that a flush or compaction counted as garbage can never be read
// again once the readers from before that count are gone, but the garbage
// collector frees its bytes only when it copies the segment's live records
// out and deletes the file. Punching frees the whole file-system blocks
// that lie inside runs of adjacent dead records at once, without a copy.
// A 4 KiB value's record spans two blocks, so about g^2 of a segment whose
// garbage share is g comes free this way.
//
// Thread safety: pure functions.
#ifndef CAIRN_VLOG_PUNCH_PLAN_H_
#define CAIRN_VLOG_PUNCH_PLAN_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "vlog/dead_records.h"
#include "vlog/segment_edit.h"

namespace cairn::vlog {

// The runs to add to a segment whose punched runs are `punched` (ascending,
// merged), given runs of its dead records `dead` (ascending, disjoint,
// each of whole records; DeadRecords::Runs): each run less what is punched
// already, wherever joining it to the punched runs frees at least min_gain
// more bytes of whole kPunchBlockSize blocks. The result is ascending,
// disjoint, and overlaps no punched run.
std::vector<PunchRun> PlanPunchRuns(absl::Span<const PunchRun> dead,
                                    absl::Span<const PunchRun> punched, uint64_t min_gain);

// runs sorted by their start, with overlapping or adjacent runs made one.
std::vector<PunchRun> MergedRuns(std::vector<PunchRun> runs);

// The runs of `runs` (ascending, disjoint) that `punched` (ascending,
// merged) does not cover already: record-aligned as both are.
std::vector<PunchRun> SubtractRuns(absl::Span<const PunchRun> runs,
                                   absl::Span<const PunchRun> punched);

// The (offset, length) ranges of whole kPunchBlockSize blocks to punch for
// the runs just added, `added`, once the segment's runs are `merged`
// (ascending, merged, covering every added run): the whole blocks of each
// merged run that touch an added one, so a block that two runs share is
// punched once both are dead.
std::vector<std::pair<uint64_t, uint64_t>> PunchRanges(absl::Span<const PunchRun> merged,
                                                       absl::Span<const PunchRun> added);

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_PUNCH_PLAN_H_
