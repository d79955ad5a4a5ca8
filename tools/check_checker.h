// The checker behind `cairn check` (tools/check_command.cc describes what
// it checks, in order). Its members are defined in check_command.cc and,
// for the orphan and ledger checks, check_orphans.cc: one file would pass
// the 800-line limit (docs/style.md; split 2026-12-08 when expiry's checks
// joined the range deletions').
#ifndef CAIRN_TOOLS_CHECK_CHECKER_H_
#define CAIRN_TOOLS_CHECK_CHECKER_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/write_batch_internal.h"
#include "lsm/dbformat.h"
#include "lsm/filename.h"
#include "lsm/log_format.h"
#include "lsm/log_reader.h"
#include "lsm/table_cache.h"
#include "lsm/version_set.h"
#include "tools/check_range_tombstones.h"
#include "tools/commands.h"
#include "vlog/segment_accounting.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_reader.h"
#include "vlog/segment_scanner.h"
#include "vlog/segment_set.h"
#include "vlog/value_pointer.h"

namespace cairn::tools::check_internal {

// The maps' heterogeneous lookups take absl's string_view, which this
// build's absl does not alias to std's.
inline absl::string_view AbslView(std::string_view s) { return {s.data(), s.size()}; }

class Checker {
 public:
  Checker(io::FileSystem* fs, std::string dbname)
      : fs_(fs), dbname_(std::move(dbname)), versions_(fs, dbname_) {}

  // Runs every check; returns the exit code after printing the summary.
  int Run() {
    CheckOpens();
    if (CheckManifest()) {
      CheckSegments();
      CheckWals();
      CheckTables();
      ResolveSuspects();
      CheckOrphans();
      CheckLedger();
    }
    PrintHiddenProblems();
    absl::PrintF(
        "summary: %d manifest records, %d tables (%d entries), %d WALs (%d batches, %d "
        "entries), %d segments (%d records), %d value pointers checked (%d shadowed ones "
        "into removed segments skipped), %d orphans, %d segments off the ledger; %d problems; "
        "%d leftovers for the next open to clean up\n",
        manifest_records_, tables_, table_entries_, wals_, wal_batches_, wal_entries_,
        segments_checked_, segment_records_, pointers_checked_, stale_pointers_, orphans_,
        unbalanced_segments_, problems_, cleanups_);
    absl::PrintF("%s\n", problems_ > 0   ? "PROBLEMS FOUND"
                         : cleanups_ > 0 ? "OK (with leftovers the next open cleans up)"
                                         : "OK");
    return problems_ == 0 ? kExitOk : kExitProblems;
  }

 private:
  // A pointer whose segment file is gone and is not live in the set: a
  // problem only when its entry is the newest for the key.
  struct Suspect {
    std::string file;
    std::string where;
    std::string user_key;
    lsm::SequenceNumber sequence;
    vlog::ValuePointer pointer;
    bool from_wal;
  };

  // The open's own verdict: DB::OpenForReadOnly applies the recovery rules
  // (the OPTIONS check, the files the manifest lists, WAL replay) and
  // writes nothing.
  void CheckOpens() {
    absl::StatusOr<std::unique_ptr<DB>> db = DB::OpenForReadOnly(Options(), dbname_);
    if (!db.ok()) {
      Problem(dbname_, absl::StrCat("a read-only open refuses it: ", db.status().ToString()));
    }
  }

  // Counts a problem; prints it unless file already printed kMaxPrinted
  // (a deleted segment would otherwise print one line per pointer).
  void Problem(std::string_view file, std::string_view message) {
    ++problems_;
    if (++problems_per_file_[std::string(file)] > kMaxPrinted) return;
    absl::PrintF("problem: %s: %s\n", std::string(file), std::string(message));
  }
  void PrintHiddenProblems() {
    for (const auto& [file, n] : problems_per_file_) {
      if (n > kMaxPrinted) {
        absl::PrintF("problem: %s: ... %d more problems not shown\n", file, n - kMaxPrinted);
      }
    }
  }
  void Note(std::string_view message) { absl::PrintF("note: %s\n", std::string(message)); }
  // A crash leftover: what the next open does with it is part of message.
  void Cleanup(std::string_view file, std::string_view message) {
    ++cleanups_;
    absl::PrintF("cleanup: %s: %s\n", std::string(file), std::string(message));
  }
  // Whether the open refuses to delete an orphan SST or segment numbered
  // number: when the manifest ended torn and the file is older than it, a
  // lost record named it (DBImpl::CheckRecoveredFiles).
  bool OrphanMayBeNamedByALostRecord(uint64_t number) const {
    return manifest_torn_ && number <= manifest_number_;
  }

  bool WalsKeptForTheFeed() {
    if (!wals_kept_.has_value()) wals_kept_ = WalRetentionSet(fs_, dbname_);
    return *wals_kept_;
  }
  std::optional<bool> wals_kept_;

  bool CheckManifest();
  void CheckSegments();
  void CheckWals();
  // False when recovery would stop after this WAL (a closed one a crash
  // cut before any sync): the newer ones are not replayed.
  bool CheckWal(uint64_t number, bool newest);
  // The offset of the WAL's first sync record saying the older WALs were
  // synced whole, if it has one.
  std::optional<uint64_t> OlderWalsWholeRecord(uint64_t number);
  void CheckTables();
  void CheckTable(int level, const lsm::FileMetaData& f);
  void CheckPointer(const std::string& file, const std::string& where, std::string_view user_key,
                    lsm::SequenceNumber seq, std::string_view bytes, bool from_wal);
  void ResolveSuspects();
  void CheckOrphans();
  void CheckLedger();
  // The bytes and records of segment_id that are copies of values a WAL
  // record carries itself (no entry points at them).
  std::pair<uint64_t, uint64_t> ValuesTheWalCarries(const vlog::SegmentInfo& info);

  io::FileSystem* const fs_;
  const std::string dbname_;
  lsm::VersionSet versions_;
  vlog::SegmentSet segments_;
  std::shared_ptr<const lsm::Version> version_;
  std::unique_ptr<lsm::TableCache> table_cache_;
  uint64_t manifest_number_ = 0;
  bool manifest_torn_ = false;
  // Segments some manifest record added (even if a later one removed them).
  absl::flat_hash_set<uint64_t> listed_segments_;

  // Segment id -> its reader, or why it could not be opened.
  // Open readers by segment, and the open errors of segments that failed.
  absl::flat_hash_map<uint64_t, std::shared_ptr<const vlog::SegmentReader>> readers_;
  absl::flat_hash_map<uint64_t, absl::Status> reader_errors_;
  // Segment id -> its punched runs, read from segments_ once.
  absl::flat_hash_map<uint64_t, std::vector<vlog::PunchRun>> punched_runs_;
  // User key -> newest sequence seen in the WALs (newer than any SST's).
  absl::flat_hash_map<std::string, lsm::SequenceNumber> wal_keys_;
  // Segments that WAL entries point into (not orphans even if not in the set).
  absl::flat_hash_set<uint64_t> wal_segments_;
  // User key -> hashes of the values the WALs carry for it (kValue
  // entries), and the records (segment, offset) that entries of those keys
  // or of the WALs point at: a synced group's WAL record carries its
  // values, and their value-log copies are named by nothing once the next
  // open replays it (docs/durability.md, "Synced groups of small values").
  absl::flat_hash_map<std::string, absl::InlinedVector<size_t, 1>> wal_values_;
  absl::flat_hash_set<std::pair<uint64_t, uint64_t>> wal_value_refs_;
  std::vector<Suspect> suspects_;
  CheckRangeTombstones range_dels_;  // a covered pointer's value may be gone
  // Every decodable pointer of every SST and WAL entry, for the ledger.
  vlog::SegmentAccounting accounting_;
  // Segments not yet sealed: (bytes, records) up to their last whole record.
  absl::flat_hash_map<uint64_t, std::pair<uint64_t, uint64_t>> active_sizes_;
  std::string value_scratch_;  // values read back through pointers

  uint64_t manifest_records_ = 0, tables_ = 0, table_entries_ = 0, wals_ = 0;
  uint64_t wal_batches_ = 0, wal_entries_ = 0, segments_checked_ = 0, segment_records_ = 0;
  uint64_t pointers_checked_ = 0, stale_pointers_ = 0, orphans_ = 0, problems_ = 0;
  uint64_t unbalanced_segments_ = 0, cleanups_ = 0;
  // A table or WAL could not be read whole: the ledger lacks its pointers.
  bool index_unread_ = false;
  static constexpr uint64_t kMaxPrinted = 10;
  absl::btree_map<std::string, uint64_t> problems_per_file_;
};

}  // namespace cairn::tools::check_internal

#endif  // CAIRN_TOOLS_CHECK_CHECKER_H_
