// RepairDB salvages a damaged database: the path to take when DB::Open
// refuses one with DataLoss and no backup is at hand. DB::Open never
// salvages on its own. Manual: docs/tools.md ("cairn repair").
//
// What it does, in order:
//   1. Takes the LOCK (a database open elsewhere is refused).
//   2. Reads every SST and every WAL in the directory (only those the
//      manifest calls live when CURRENT and the manifest read to their end;
//      all of them when they do not), and keeps, per user key,
//      the newest entry that can still be read (highest sequence number;
//      a deletion counts). An SST whose footer or index cannot be read is
//      lost whole; one with a bad data block loses that block's entries
//      (the table's other blocks are still read). A WAL loses only its
//      records that cannot be read: after a bad record, reading resumes at
//      the next record that verifies, and the report names the bytes passed
//      over and the sequences they held; a torn or unreadable tail is lost
//      from its start to the end of the file.
//   3. Reads the value of every kept entry that points into the value log,
//      checking the record as a Get would; a value that cannot be read is
//      reported by key and the key is left out (never an older value of it,
//      which would bring back an overwritten write).
//   4. Writes the salvaged keys and values into a fresh database built in
//      DIR/repair.tmp, synced, then moves every original file into
//      DIR/lost/<time>/ (nothing is deleted) and the new files into DIR.
//   5. Writes the report to DIR/lost/<time>/REPAIR.txt.
//
// Limits: without a whole manifest, entries of an SST that a compaction
// already replaced but a crash left on disk can bring back an older value
// or a deleted key; and wherever the newer entry of a key is the one lost
// (a bad SST block, a skipped WAL record), an older entry of it is what
// remains.
// The report lists what was lost and what was not read so the operator can
// judge. The salvage rewrites every value once, and holds
// the salvaged keys (with inline values) in memory.
#ifndef CAIRN_REPAIR_H_
#define CAIRN_REPAIR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cairn/options.h"

namespace cairn {

// What RepairDB found and what was lost.
struct RepairReport {
  uint64_t tables_read = 0;       // SSTs that opened (wholly or partly read)
  uint64_t wals_read = 0;         // WALs read (wholly or partly)
  uint64_t entries_read = 0;      // SST entries and WAL batch entries read
  uint64_t keys_salvaged = 0;     // keys with a value in the rebuilt database
  uint64_t keys_deleted = 0;      // keys whose newest readable entry is a deletion
  uint64_t values_lost = 0;       // keys left out because their value was unreadable
  // One line per loss: the file, the byte range or entries, and why; and
  // per lost value, the key and the pointer.
  std::vector<std::string> lost;
  // Files not read because a manifest that read to its end calls them
  // obsolete (a table outside its current version, a WAL below its log
  // number); they are moved to lost_dir with the rest.
  std::vector<std::string> skipped;
  std::string lost_dir;     // where the original files went
  std::string report_path;  // the report file written there

  // The report as text (what REPAIR.txt holds and `cairn repair` prints).
  std::string ToString() const;
};

// Salvages the database in path as above; options as for DB::Open (the
// rebuilt database is created with them). OK when the rebuilt database is
// in place, even when something was lost (see report). Errors: the file
// system's; FailedPrecondition when path holds no database file at all or
// the LOCK is held; InvalidArgument for bad options. REQUIRES: report.
absl::Status RepairDB(const Options& options, const std::string& path, RepairReport* report);

}  // namespace cairn

#endif  // CAIRN_REPAIR_H_
