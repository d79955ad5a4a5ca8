// `cairn check <db-dir>`: verifies a closed database without taking its LOCK
// and without writing a byte (VersionSet::Recover only reads; every file is
// opened for reading). In order:
//   0. the database opens with DB::OpenForReadOnly (the open's own rules,
//      including the OPTIONS file's format check);
//   1. CURRENT and the manifest decode and their edits fit together; the
//      value log's extension records replay into a SegmentSet;
//   2. every segment in the set scans cleanly (a torn tail only on a segment
//      not yet sealed) and a sealed one has the size and record count sealed;
//   3. every WAL from the log number on reads to a clean end (a torn tail
//      only on the newest) and its batches decode; a closed format 2 WAL
//      without its end record is a cut recovery stops at (a note), and the
//      WALs after it are not checked;
//   4. every SST of the current version opens, passes Table::VerifyAll, and
//      its entries are valid internal keys, strictly ordered, within the
//      file's smallest..largest and no newer than the manifest's last sequence;
//   5. every value pointer (in SSTs and WALs) decodes and reads back through
//      SegmentReader with the right key. A pointer into a segment whose file
//      is gone is dangling if the segment is still live in the set, or if the
//      entry is the newest for its key (a shadowed entry may keep a pointer
//      into a segment the garbage collector already removed);
//   6. orphans: SSTs and segments on disk that nothing references, .tmp files;
//   7. the space ledger: every byte of every segment not obsolete is its
//      header, a record some SST or WAL entry points at, garbage the
//      manifest counts (vlog::SegmentAccounting), or the value-log copy of
//      a value that a synced group's WAL record carries itself (garbage
//      from the next open on). A byte that is none of these is a leak the
//      next open counts as garbage; one counted twice is wrong bookkeeping.
// What a crash leaves and the next open cleans up (orphans, torn tails, a
// leak) is a "cleanup:" line, not damage: the database is as the open's
// rules expect after a crash. Damage is a "problem:" line. Prints each as it
// is found, then a summary. Exit 0 when no problem was found, cleanups or
// not (docs/tools.md, "cairn check after each kind of crash leftover").
#include <algorithm>
#include <cstdio>
#include <iterator>
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
#include "tools/commands.h"
#include "vlog/segment_accounting.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_reader.h"
#include "vlog/segment_scanner.h"
#include "vlog/segment_set.h"
#include "vlog/value_pointer.h"

namespace cairn::tools {
namespace {

constexpr std::string_view kCommand = "check";

// The maps' heterogeneous lookups take absl's string_view, which this
// build's absl does not alias to std's.
absl::string_view AbslView(std::string_view s) { return {s.data(), s.size()}; }

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

bool Checker::CheckManifest() {
  const std::string current = lsm::CurrentFileName(dbname_);
  absl::StatusOr<uint64_t> number = lsm::ReadCurrentFile(fs_, dbname_);
  if (!number.ok()) {
    Problem("CURRENT", number.status().ToString());
    return false;
  }
  manifest_number_ = *number;
  const std::string manifest = lsm::ManifestFileName(dbname_, manifest_number_);
  absl::Status s = versions_.Recover([this, &manifest](uint32_t tag, std::string_view payload) {
    if (!vlog::IsSegmentEditTag(tag)) {
      Problem(BaseName(manifest),
              absl::StrFormat("unknown extension record tag %d (%d bytes)", tag, payload.size()));
    } else {
      vlog::SegmentEdit edit;
      if (absl::Status a = segments_.DecodeAndApply(tag, payload, &edit); !a.ok()) {
        Problem(BaseName(manifest), absl::StrCat("value-log record: ", a.ToString()));
      }
      for (const vlog::SegmentEdit::Change& c : edit.changes()) {
        if (c.tag == vlog::SegmentEditTag::kNewSegment) listed_segments_.insert(c.segment_id);
      }
    }
    return absl::OkStatus();  // keep going: report everything
  });
  if (!s.ok()) {
    Problem(BaseName(manifest), s.ToString());
    return false;
  }
  version_ = versions_.current();
  table_cache_ = std::make_unique<lsm::TableCache>(fs_, dbname_, lsm::TableOptions(),
                                                   /*block_cache=*/nullptr,
                                                   /*counters=*/nullptr, /*max_open_files=*/64);
  // Recover skips a torn last record silently; say so.
  absl::StatusOr<std::unique_ptr<lsm::LogReader>> reader =
      lsm::LogReader::Open(fs_, manifest, manifest_number_, io::IoCategory::kManifest);
  if (reader.ok()) {
    std::string scratch;
    std::string_view record;
    while ((*reader)->ReadRecord(&record, &scratch)) ++manifest_records_;
    if ((*reader)->hit_torn_tail()) {
      manifest_torn_ = true;
      Cleanup(BaseName(manifest),
              absl::StrFormat("ends in a torn record at offset %d (an edit a crash cut, never "
                              "acknowledged): the next open drops it and writes a new manifest",
                              (*reader)->valid_end_offset()));
    }
  }
  absl::PrintF("manifest %s: %d records, log number %d, next file %d, last sequence %d\n",
               BaseName(manifest), manifest_records_, versions_.LogNumber(),
               versions_.NextFileNumber(), versions_.LastSequence());
  return true;
}

void Checker::CheckSegments() {
  for (const vlog::SegmentInfo& info : segments_.Segments()) {
    const std::string path = lsm::ValueLogFileName(dbname_, info.segment_id);
    const std::string name(BaseName(path));
    if (!fs_->FileExists(path)) {
      if (info.obsolete) {
        Note(absl::StrCat("obsolete segment ", name, " is already deleted"));
      } else {
        Problem(name, "in the segment set, but the file is missing");
      }
      continue;
    }
    ++segments_checked_;
    vlog::SegmentScannerOptions options;
    options.category = io::IoCategory::kValueLog;
    options.allow_torn_tail = !info.sealed;  // only the active segment may be torn
    options.skip_runs = segments_.PunchedRuns(info.segment_id);  // read as zeros
    absl::StatusOr<std::unique_ptr<vlog::SegmentScanner>> scanner =
        vlog::SegmentScanner::Open(fs_, path, info.segment_id, options);
    if (!scanner.ok()) {
      Problem(name, scanner.status().ToString());
      continue;
    }
    vlog::ScannedRecord r;
    while ((*scanner)->Next(&r)) {
    }
    segment_records_ += (*scanner)->records_read();
    if (!(*scanner)->status().ok()) {
      Problem(name, (*scanner)->status().ToString());
      continue;
    }
    if (!info.sealed && info.kind == vlog::SegmentKind::kFresh) {
      // The active segment of fresh writes is on the ledger up to its last
      // whole record.
      active_sizes_[info.segment_id] = {(*scanner)->valid_end_offset(),
                                        (*scanner)->records_read()};
    } else if (!info.sealed && !info.obsolete) {
      // A collection seals its output before it moves any pointer into it.
      Cleanup(name,
              "a GC output a crash left unsealed (only garbage): the next open marks it "
              "obsolete and deletes it");
    }
    if ((*scanner)->torn_tail()) {
      Cleanup(name, absl::StrFormat("the active segment ends in a torn tail at offset %d (a "
                                    "write a crash cut): the next open cuts it off",
                                    (*scanner)->valid_end_offset()));
    }
    // The records inside punched runs are stepped over, not counted.
    const bool punched = (*scanner)->skipped_bytes() > 0;
    if (info.sealed &&
        ((*scanner)->file_size() != info.size ||
         (punched ? (*scanner)->records_read() > info.records
                  : (*scanner)->records_read() != info.records))) {
      Problem(name, absl::StrFormat("sealed with %d bytes and %d records, but holds %d bytes "
                                    "and %d records",
                                    info.size, info.records, (*scanner)->file_size(),
                                    (*scanner)->records_read()));
    }
  }
}

void Checker::CheckWals() {
  absl::StatusOr<std::vector<std::string>> names = fs_->ListDir(dbname_);
  if (!names.ok()) {
    Problem(dbname_, names.status().ToString());
    return;
  }
  std::vector<uint64_t> logs;
  for (const std::string& name : *names) {
    uint64_t number;
    lsm::FileType type;
    if (lsm::ParseFileName(name, &number, &type) && type == lsm::FileType::kLog &&
        number >= versions_.LogNumber()) {
      logs.push_back(number);
    }
  }
  std::sort(logs.begin(), logs.end());
  for (size_t i = 0; i < logs.size(); ++i) {
    if (CheckWal(logs[i], i + 1 == logs.size())) continue;
    for (size_t j = i + 1; j < logs.size(); ++j) {
      const std::string name(BaseName(lsm::LogFileName(dbname_, logs[j])));
      // A sync record saying the older WALs were synced whole (format 4)
      // makes the cut one damage, as the open rules (docs/wal_format.md).
      if (std::optional<uint64_t> at = OlderWalsWholeRecord(logs[j]); at.has_value()) {
        Problem(std::string(BaseName(lsm::LogFileName(dbname_, logs[i]))),
                absl::StrCat("ends without its end record, but ", name, " at offset ", *at,
                             " holds a sync record written once it was synced whole: damage, "
                             "and the open refuses it"));
      } else {
        Cleanup(name,
                "after a WAL a crash cut before any sync: never synced, so the next open does "
                "not replay it, and deletes it");
      }
    }
    break;
  }
}

std::optional<uint64_t> Checker::OlderWalsWholeRecord(uint64_t number) {
  absl::StatusOr<std::unique_ptr<lsm::LogReader>> reader =
      lsm::LogReader::Open(fs_, lsm::LogFileName(dbname_, number), number);
  if (!reader.ok() || (*reader)->format_version() < lsm::kSyncRecordLogFormatVersion) {
    return std::nullopt;
  }
  std::string scratch;
  std::string_view record;
  while ((*reader)->ReadRecord(&record, &scratch)) {
    WriteBatchInternal::SyncKind kind;
    uint64_t synced = 0;
    if (WriteBatchInternal::ParseSyncRecord(record, &kind, &synced) &&
        kind == WriteBatchInternal::SyncKind::kOlderWalsWhole) {
      return (*reader)->last_record_offset();
    }
  }
  return std::nullopt;
}

bool Checker::CheckWal(uint64_t number, bool newest) {
  ++wals_;
  const std::string path = lsm::LogFileName(dbname_, number);
  const std::string name(BaseName(path));
  absl::StatusOr<std::unique_ptr<lsm::LogReader>> reader = lsm::LogReader::Open(fs_, path, number);
  if (!reader.ok()) {
    Problem(name, reader.status().ToString());
    index_unread_ = true;
    return true;
  }
  std::string scratch;
  std::string_view record;
  bool ended = false;  // the last record is an end record (format 2)
  while ((*reader)->ReadRecord(&record, &scratch)) {
    WriteBatchInternal::SyncKind kind;
    uint64_t synced = 0;
    if ((*reader)->format_version() >= lsm::kSyncRecordLogFormatVersion &&
        WriteBatchInternal::ParseSyncRecord(record, &kind, &synced)) {
      ended = false;  // a sync record holds no write
      continue;
    }
    ++wal_batches_;
    ended = WriteBatchInternal::IsEndRecord(record);
    const uint64_t offset = (*reader)->last_record_offset();
    const std::string where = absl::StrFormat("batch at offset %d", offset);
    absl::Status s =
        WriteBatchInternal::ForEach(record, [&](lsm::SequenceNumber seq, lsm::ValueType type,
                                                std::string_view key, std::string_view stored) {
          ++wal_entries_;
          // Checked by the value, without an expiry (ForEach checked it).
          lsm::StoredValue sv;
          lsm::SplitStoredValue(type, stored, &sv);
          type = sv.type;
          const std::string_view value = sv.payload;
          lsm::SequenceNumber& newest_seq = wal_keys_[std::string(key)];
          newest_seq = std::max(newest_seq, seq);
          if (type == lsm::ValueType::kValue) {
            wal_values_[std::string(key)].push_back(absl::HashOf(value));
          }
          if (type == lsm::ValueType::kValuePointer) {
            CheckPointer(name, where, key, seq, value, /*from_wal=*/true);
          }
          return absl::OkStatus();
        });
    if (!s.ok()) {
      Problem(name, absl::StrCat("batch at offset ", offset, ": ", s.ToString()));
      index_unread_ = true;
    }
  }
  if (!(*reader)->status().ok()) {
    Problem(name, (*reader)->status().ToString());
    index_unread_ = true;
  } else if (!newest && (*reader)->format_version() >= 2 && !ended) {
    // A closed WAL is synced only when a later sync comes; without its end
    // record a crash cut it before that (docs/durability.md, "WAL switches").
    Cleanup(name, absl::StrCat("ends at offset ", (*reader)->valid_end_offset(),
                               " without its end record (cut before any sync): the next open "
                               "replays it up to there and stops"));
    return false;
  } else if ((*reader)->hit_torn_tail()) {
    const std::string msg =
        absl::StrFormat("torn tail at offset %d", (*reader)->valid_end_offset());
    if (newest) {
      Cleanup(name, absl::StrCat(msg,
                                 " (the newest WAL, a write a crash cut): the next open "
                                 "cuts it off"));
    } else {
      Problem(name, absl::StrCat(msg, " in a WAL that is not the newest"));
    }
  }
  return true;
}

void Checker::CheckTables() {
  for (int level = 0; level < lsm::kNumLevels; ++level) {
    for (const auto& f : version_->files(level)) CheckTable(level, *f);
  }
}

void Checker::CheckTable(int level, const lsm::FileMetaData& f) {
  ++tables_;
  const std::string path = lsm::TableFileName(dbname_, f.number);
  const std::string name(BaseName(path));
  absl::StatusOr<uint64_t> size = fs_->GetFileSize(path);
  if (!size.ok()) {
    Problem(name, absl::StrCat("in the version at L", level, ", but: ", size.status().ToString()));
    index_unread_ = true;
    return;
  }
  if (*size != f.file_size) {
    Problem(name, absl::StrFormat("%d bytes, but the manifest says %d", *size, f.file_size));
  }
  absl::StatusOr<std::shared_ptr<lsm::Table>> table =
      table_cache_->FindTable(f.number, f.file_size);
  if (!table.ok()) {
    Problem(name, table.status().ToString());
    index_unread_ = true;
    return;
  }
  const absl::Status verified = (*table)->VerifyAll();
  if (!verified.ok()) {
    Problem(name, verified.ToString());
    index_unread_ = true;
  }

  std::unique_ptr<lsm::InternalIterator> it =
      (*table)->NewIterator({.verify_checksums = true, .fill_cache = false});
  std::string prev;
  uint64_t entries = 0;
  bool reported_key = false;  // one key problem per file is enough
  auto key_problem = [&](uint64_t index, std::string_view ikey, std::string_view what) {
    if (reported_key) return;
    reported_key = true;
    Problem(name,
            absl::StrFormat("entry %d (key '%s'): %s", index, Escape(ikey), std::string(what)));
  };
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const uint64_t index = entries++;
    const std::string_view ikey = it->key();
    lsm::ParsedInternalKey p;
    if (!lsm::ParseInternalKey(ikey, &p)) {
      key_problem(index, ikey, "not a valid internal key");
      continue;
    }
    if (index > 0 && lsm::CompareInternalKeys(prev, ikey) >= 0) {
      key_problem(index, ikey, "not after the previous key");
    }
    if (lsm::CompareInternalKeys(ikey, f.smallest) < 0 ||
        lsm::CompareInternalKeys(ikey, f.largest) > 0) {
      key_problem(index, ikey, "outside the file's smallest..largest in the manifest");
    }
    if (p.sequence > versions_.LastSequence()) {
      key_problem(index, ikey, "sequence is past the manifest's last sequence");
    }
    prev.assign(ikey);
    ++table_entries_;
    lsm::StoredValue sv;
    if (!lsm::SplitStoredValue(p.type, it->value(), &sv)) {
      key_problem(index, ikey, "expiring entry without its expiry");
    } else if (sv.type == lsm::ValueType::kValuePointer) {
      CheckPointer(name, absl::StrFormat("entry %d", index), p.user_key, p.sequence, sv.payload,
                   /*from_wal=*/false);
    }
  }
  if (!it->status().ok()) {
    // Iterating stops at the first bad block, which VerifyAll has usually
    // reported already.
    if (it->status() != verified) Problem(name, it->status().ToString());
    index_unread_ = true;
  } else if (f.num_entries != 0 && entries != f.num_entries) {
    Problem(name,
            absl::StrFormat("holds %d entries, but the manifest says %d", entries, f.num_entries));
  }
}

void Checker::CheckPointer(const std::string& file, const std::string& where,
                           std::string_view user_key, lsm::SequenceNumber seq,
                           std::string_view bytes, bool from_wal) {
  absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(bytes);
  if (!ptr.ok()) {
    Problem(file, absl::StrCat(where, ": key '", Escape(user_key), "': ", ptr.status().ToString()));
    return;
  }
  if (from_wal) wal_segments_.insert(ptr->segment_id);
  if (from_wal || wal_values_.contains(AbslView(user_key))) {
    wal_value_refs_.insert({ptr->segment_id, ptr->offset});
  }
  accounting_.AddReference(*ptr);
  // Only records counted dead are punched: a pointer into a punched run
  // names a value whose bytes are gone (docs/gc.md, "Punched runs").
  auto [runs, fresh] = punched_runs_.try_emplace(ptr->segment_id);
  if (fresh) runs->second = segments_.PunchedRuns(ptr->segment_id);
  auto after = std::upper_bound(
      runs->second.begin(), runs->second.end(), ptr->offset,
      [](uint64_t offset, const vlog::PunchRun& r) { return offset < r.begin; });
  if (after != runs->second.begin() && ptr->offset < std::prev(after)->end) {
    ++pointers_checked_;
    Problem(file, absl::StrFormat("%s: key '%s': %s points into punched run %d-%d of %s (its "
                                  "record was counted dead, and its blocks are freed)",
                                  where, Escape(user_key), ptr->DebugString(),
                                  std::prev(after)->begin, std::prev(after)->end,
                                  BaseName(lsm::ValueLogFileName(dbname_, ptr->segment_id))));
    return;
  }
  const std::string path = lsm::ValueLogFileName(dbname_, ptr->segment_id);
  if (!fs_->FileExists(path)) {
    std::optional<vlog::SegmentInfo> info = segments_.Get(ptr->segment_id);
    if (info && !info->obsolete) {
      ++pointers_checked_;
      Problem(file, absl::StrFormat("%s: dangling pointer for key '%s': %s: missing segment %s",
                                    where, Escape(user_key), ptr->DebugString(), BaseName(path)));
    } else {
      suspects_.push_back({file, where, std::string(user_key), seq, *ptr, from_wal});
    }
    return;
  }
  ++pointers_checked_;
  absl::Status s;
  if (auto error = reader_errors_.find(ptr->segment_id); error != reader_errors_.end()) {
    s = error->second;
  } else {
    std::shared_ptr<const vlog::SegmentReader>& reader = readers_[ptr->segment_id];
    if (reader == nullptr) {
      auto opened = vlog::SegmentReader::Open(fs_, path, ptr->segment_id, /*direct_reads=*/false);
      if (opened.ok()) {
        reader = *std::move(opened);
      } else {
        readers_.erase(ptr->segment_id);
        reader_errors_.emplace(ptr->segment_id, opened.status());
        s = opened.status();
      }
    }
    if (s.ok()) s = readers_[ptr->segment_id]->Read(*ptr, user_key, &value_scratch_);
  }
  if (!s.ok()) {
    Problem(file, absl::StrFormat("%s: dangling pointer for key '%s': %s: %s", where,
                                  Escape(user_key), ptr->DebugString(), s.ToString()));
  }
}

void Checker::ResolveSuspects() {
  for (const Suspect& s : suspects_) {
    bool newest;
    auto wal = wal_keys_.find(s.user_key);
    if (s.from_wal) {
      newest = wal != wal_keys_.end() && wal->second == s.sequence;
    } else if (wal != wal_keys_.end()) {
      newest = false;  // a WAL entry is newer than every SST entry
    } else {
      lsm::TableGetResult result;
      absl::Status st =
          version_->Get({.verify_checksums = true, .fill_cache = false}, table_cache_.get(),
                        lsm::MakeLookupKey(s.user_key, lsm::kMaxSequenceNumber), &result);
      if (!st.ok()) {
        Problem(s.file, absl::StrCat(s.where, ": looking up key '", Escape(s.user_key),
                                     "': ", st.ToString()));
        continue;
      }
      newest = result.found && result.sequence == s.sequence;
    }
    if (!newest) {
      ++stale_pointers_;
      continue;
    }
    ++pointers_checked_;
    Problem(s.file,
            absl::StrFormat(
                "%s: dangling pointer for key '%s' (its newest entry): %s: segment %d is %s",
                s.where, Escape(s.user_key), s.pointer.DebugString(), s.pointer.segment_id,
                segments_.Contains(s.pointer.segment_id) ? "obsolete and deleted"
                                                         : "not in the segment set"));
  }
}

void Checker::CheckOrphans() {
  absl::StatusOr<std::vector<std::string>> names = fs_->ListDir(dbname_);
  if (!names.ok()) return;  // reported by CheckWals
  absl::flat_hash_set<uint64_t> tables;
  for (int level = 0; level < lsm::kNumLevels; ++level) {
    for (const auto& f : version_->files(level)) tables.insert(f->number);
  }
  std::sort(names->begin(), names->end());
  for (const std::string& name : *names) {
    uint64_t number = 0;
    lsm::FileType type = lsm::FileType::kUnknown;
    if (!lsm::ParseFileName(name, &number, &type)) {
      Note(absl::StrCat("unrecognized file ", name, " (ignored)"));
      continue;
    }
    // The next open refuses a file a lost manifest record may have named;
    // it deletes every other orphan.
    const std::string lost_record = absl::StrFormat(
        ", and the manifest ends in a torn record: a record it lost named this file (numbered "
        "below %s), so the next open refuses it",
        BaseName(lsm::ManifestFileName(dbname_, manifest_number_)));
    switch (type) {
      case lsm::FileType::kTable:
        if (!tables.contains(number)) {
          ++orphans_;
          if (OrphanMayBeNamedByALostRecord(number) && !versions_.ManifestListedTable(number)) {
            Problem(name, absl::StrCat("orphan SST, not in the current version", lost_record));
          } else {
            Cleanup(name, "orphan SST, not in the current version: the next open deletes it");
          }
        }
        break;
      case lsm::FileType::kValueLog:
        if (!segments_.Contains(number) && !wal_segments_.contains(number)) {
          ++orphans_;
          if (OrphanMayBeNamedByALostRecord(number) && !listed_segments_.contains(number)) {
            Problem(name,
                    absl::StrCat("orphan value-log segment, not in the segment set", lost_record));
          } else {
            Cleanup(name,
                    "orphan value-log segment, not in the segment set and no WAL needs it: "
                    "the next open deletes it");
          }
        }
        break;
      case lsm::FileType::kTemp:
        ++orphans_;
        Cleanup(name, "temporary file (a write a crash cut): the next open deletes it");
        break;
      case lsm::FileType::kLog:
        if (number < versions_.LogNumber()) {
          Cleanup(name,
                  "obsolete WAL, below the log number (its writes are in tables): the next "
                  "open deletes it");
        }
        break;
      case lsm::FileType::kManifest:
        if (number != manifest_number_) {
          Cleanup(name, "stale manifest (CURRENT names another): the next open deletes it");
        }
        break;
      case lsm::FileType::kCurrent:
      case lsm::FileType::kLock:
      case lsm::FileType::kOptions:
      case lsm::FileType::kInfoLog:
      case lsm::FileType::kUnknown:
        break;
    }
  }
}

void Checker::CheckLedger() {
  for (vlog::SegmentAccounting::Imbalance b : accounting_.Check(segments_, active_sizes_)) {
    const std::string name(BaseName(lsm::ValueLogFileName(dbname_, b.segment_id)));
    if (b.unaccounted_bytes() > 0 && !wal_values_.empty()) {
      const auto [bytes, records] = ValuesTheWalCarries(*segments_.Get(b.segment_id));
      // More than the leak would mean a match by chance: leave it out.
      if (bytes > 0 && bytes <= static_cast<uint64_t>(b.unaccounted_bytes())) {
        Note(
            absl::StrFormat("%s: %d records (%d bytes) whose values a WAL record carries too (a "
                            "synced group's): on the ledger as garbage, which the next open "
                            "counts once it replays that record",
                            name, records, bytes));
        b.garbage_bytes += bytes;
        b.garbage_records += records;
        if (b.unaccounted_bytes() == 0) continue;
      }
    }
    ++unbalanced_segments_;
    if (b.unaccounted_bytes() > 0 && index_unread_) {
      // The pointers of what could not be read may name these bytes.
      Problem(name, absl::StrCat(b.DebugString(),
                                 ", or named by the entries of a table or WAL "
                                 "that could not be read (above)"));
    } else if (b.unaccounted_bytes() > 0) {
      // A crash between a value's write and its WAL record's, or before a
      // garbage count reached the manifest; the open recounts the ledger
      // (DBImpl::CountUnaccountedGarbage).
      Cleanup(name, absl::StrCat(b.DebugString(), ": the next open counts them as garbage"));
    } else {
      Problem(name, b.DebugString());
    }
  }
}

std::pair<uint64_t, uint64_t> Checker::ValuesTheWalCarries(const vlog::SegmentInfo& info) {
  vlog::SegmentScannerOptions options;
  options.category = io::IoCategory::kValueLog;
  options.allow_torn_tail = !info.sealed;
  options.skip_runs = segments_.PunchedRuns(info.segment_id);
  absl::StatusOr<std::unique_ptr<vlog::SegmentScanner>> scanner = vlog::SegmentScanner::Open(
      fs_, lsm::ValueLogFileName(dbname_, info.segment_id), info.segment_id, options);
  if (!scanner.ok()) return {0, 0};  // reported by CheckSegments
  uint64_t bytes = 0, records = 0;
  vlog::ScannedRecord r;
  while ((*scanner)->Next(&r)) {
    auto values = wal_values_.find(AbslView(r.key));
    if (values == wal_values_.end() || wal_value_refs_.contains({info.segment_id, r.offset})) {
      continue;
    }
    if (absl::c_linear_search(values->second, absl::HashOf(r.value))) {
      bytes += r.size;
      ++records;
    }
  }
  return {bytes, records};
}

}  // namespace

int RunCheck(const Args& args) {
  if (args.size() != 1) return UsageError(kCommand, "expects exactly one database directory");
  absl::StatusOr<std::shared_ptr<io::FileSystem>> fs = OpenFileSystem();
  if (!fs.ok()) return Fail(kCommand, fs.status());
  if (!(*fs)->FileExists(args[0])) {
    return Fail(kCommand, absl::NotFoundError(absl::StrCat(args[0], ": does not exist")));
  }
  absl::PrintF("checking %s (read-only; the LOCK is not taken)\n", args[0]);
  Checker checker(fs->get(), args[0]);
  return checker.Run();
}

}  // namespace cairn::tools
