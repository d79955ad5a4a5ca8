// RunCompaction carries out one Compaction (lsm/compaction.h): it merges the
// input files, keeps what a reader at the latest state or at a live snapshot
// can still see (lsm/compaction_iterator.h), writes the result as new tables
// in the output level and describes the change in a VersionEdit. A trivial
// move writes nothing: the edit moves the file down a level.
//
// Protocol for the caller (the DB's compaction scheduler):
//   1. under its lock: pick, then c->SetInputsBeingCompacted(true);
//   2. without the lock: RunCompaction(*c, *version_picked_from, env, &edit,
//      &stats); env.listener hears of every value dropped, during the call;
//   3. on success: add what the listener gathered to the same edit (e.g.
//      garbage counts as VersionEdit extensions), then LogAndApply(&edit),
//      so the tree change and the garbage it made are durable together; on
//      error: discard what the listener gathered and record nothing;
//   4. under its lock: c->SetInputsBeingCompacted(false); release the
//      output file numbers from its pending-outputs set.
//
// Output tables are named TableFileName(dbname, env.new_file_number()),
// written with category kCompaction, synced, closed and opened once through
// the table cache before RunCompaction returns. The caller must keep the
// numbers it hands out safe from obsolete-file deletion until step 4.
//
// Subcompactions (lsm/subcompaction.h): with env.max_subcompactions > 1 a
// compaction of at least two output files' worth of input is split into
// key ranges of about equal input bytes, run on that many threads (the
// caller's and new ones) and joined before RunCompaction returns. The edit
// holds every range's outputs, in key order, or nothing when any range
// failed; then the other ranges stop at their next entry, the outputs of
// every range are removed and the error of the range that failed first is
// returned. The result is the unsplit job's, except that output files may
// be cut at other keys.
//
// Thread safety: RunCompaction may run on any thread, several at once on
// disjoint compactions; it reads the Version and the Compaction but never
// their being_compacted flags. It calls env's functions and listener one at
// a time, though from more than one thread when it splits.
#ifndef CAIRN_LSM_COMPACTION_JOB_H_
#define CAIRN_LSM_COMPACTION_JOB_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "io/file_system.h"
#include "lsm/compaction.h"
#include "lsm/compaction_iterator.h"
#include "lsm/dbformat.h"
#include "lsm/table_builder.h"
#include "lsm/table_cache.h"
#include "lsm/version.h"
#include "lsm/version_edit.h"

namespace cairn::lsm {

// What a compaction job needs from the database.
struct CompactionJobEnv {
  io::FileSystem* fs = nullptr;       // required
  std::string dbname;                 // the database directory
  TableCache* table_cache = nullptr;  // required; reads inputs, checks outputs
  TableOptions table_options;         // for the output tables
  // Allocates an output file number (VersionSet::NewFileNumber, recorded as
  // a pending output). Required.
  std::function<uint64_t()> new_file_number;
  // Sequence numbers of the live snapshots, sorted ascending.
  std::vector<SequenceNumber> snapshots;
  // The newest sequence number in the database when the job starts.
  SequenceNumber latest_sequence = kMaxSequenceNumber;
  // Hears of every value the job drops; may be null.
  CompactionListener* listener = nullptr;
  // Entries expired at this time are dropped (0: none), and the filter (may
  // be null) decides on the others no snapshot sees
  // (lsm/compaction_iterator.h). The filter is called from every key
  // range's thread at once.
  uint64_t now_micros = 0;
  CompactionEntryFilter* filter = nullptr;
  // Told of each output file once it exists, before anything is written
  // to it (the caller may start syncing its directory entry then); may be
  // empty.
  std::function<void(uint64_t file_number)> output_created;
  // The data-block sink of each output table, by its file number; may be
  // empty, and may return an empty sink.
  std::function<TableBuilder::DataBlockSink(uint64_t file_number)> block_sink;
  // Threads one compaction may run on, each merging one key range; 1 runs
  // every compaction on the caller's thread alone.
  int max_subcompactions = 1;
  // Bytes each device read of an input table covers at least
  // (TableReadOptions::readahead_size; 0: an iterator's own readahead).
  size_t input_readahead = 2u << 20;
};

struct CompactionJobStats {
  int level = 0;
  int output_level = 0;
  // The file moved down without being read or rewritten; input_* say what
  // moved, and nothing was read, written or dropped.
  bool trivial_move = false;
  // [0]: files of level, [1]: files of output_level.
  std::array<uint64_t, 2> input_files{};
  std::array<uint64_t, 2> input_bytes{};
  uint64_t output_files = 0;
  uint64_t output_bytes = 0;
  uint64_t input_entries = 0;
  uint64_t output_entries = 0;
  // Entries hidden by a newer one visible at the same snapshots.
  uint64_t dropped_obsolete = 0;
  // Tombstones dropped at the bottom of their key's history.
  uint64_t dropped_tombstones = 0;
  // Entries dropped under a range tombstone (within dropped_obsolete), and
  // range tombstones dropped at the bottom.
  uint64_t dropped_by_range = 0;
  uint64_t dropped_range_tombstones = 0;
  // Values (kValue, kValuePointer) handed to the listener, and their bytes.
  uint64_t dropped_values = 0;
  uint64_t dropped_value_bytes = 0;
  // Expired entries dropped; entries a filter removed and changed.
  uint64_t expired = 0;
  uint64_t filter_removed = 0;
  uint64_t filter_changed = 0;
  uint64_t micros = 0;
  // Key ranges the job ran as (1: not split).
  uint64_t subcompactions = 1;

  // One line for logs.
  std::string DebugString() const;
};

// Runs c, picked from base (which the caller keeps alive meanwhile), and on
// success adds to *edit the removal of every input file and the addition of
// every output file at c.output_level(). On error the edit is unchanged,
// every output file written so far is removed (best effort) and the error is
// returned: InvalidArgument for an env without fs, table_cache or
// new_file_number; DataLoss (naming the file) for bad input bytes; I/O
// errors as the file system reports them. *stats (may be null) is filled in
// either case.
absl::Status RunCompaction(const Compaction& c, const Version& base, const CompactionJobEnv& env,
                           VersionEdit* edit, CompactionJobStats* stats);

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_COMPACTION_JOB_H_
