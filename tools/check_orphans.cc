// `cairn check`'s last two steps: orphans, and the space ledger of the value
// log (tools/check_command.cc lists every step).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/check_checker.h"
#include "tools/commands.h"

namespace cairn::tools::check_internal {

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
        if (number < versions_.LogNumber() && WalsKeptForTheFeed()) {
          absl::PrintF("kept: %s: a WAL the tables hold, kept for the change feed "
                       "(wal_ttl_seconds or wal_size_limit_bytes); never replayed\n",
                       name);
        } else if (number < versions_.LogNumber()) {
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

}  // namespace cairn::tools::check_internal
