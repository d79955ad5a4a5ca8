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

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/check_checker.h"
#include "tools/commands.h"

namespace cairn::tools {
namespace check_internal {

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
    if ((*reader)->format_version() >= lsm::kIngestionEventLogFormatVersion &&
        WriteBatchInternal::IsIngestionEvent(record)) {
      ended = false;  // an ingestion event (format 7) holds no entry; its names must parse
      uint64_t sequence = 0;
      std::vector<std::string> files;
      absl::Status s = WriteBatchInternal::ParseIngestionEvent(record, &sequence, &files);
      const uint64_t at = (*reader)->last_record_offset();
      if (!s.ok()) Problem(name, absl::StrCat("offset ", at, ": ", s.ToString()));
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
          if (type == lsm::ValueType::kRangeDeletion) range_dels_.AddWal(key, value, seq);
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
    if (range_dels_.Covers(version_.get(), table_cache_.get(), user_key, seq)) return;
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
      if (range_dels_.Covers(version_.get(), table_cache_.get(), user_key, seq)) return;
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
    if (!newest ||
        range_dels_.Covers(version_.get(), table_cache_.get(), s.user_key, s.sequence)) {
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

}  // namespace check_internal

namespace {
constexpr std::string_view kCommand = "check";
}  // namespace

int RunCheck(const Args& args) {
  if (args.size() != 1) return UsageError(kCommand, "expects exactly one database directory");
  absl::StatusOr<std::shared_ptr<io::FileSystem>> fs = OpenFileSystem();
  if (!fs.ok()) return Fail(kCommand, fs.status());
  if (!(*fs)->FileExists(args[0])) {
    return Fail(kCommand, absl::NotFoundError(absl::StrCat(args[0], ": does not exist")));
  }
  absl::PrintF("checking %s (read-only; the LOCK is not taken)\n", args[0]);
  check_internal::Checker checker(fs->get(), args[0]);
  return checker.Run();
}

}  // namespace cairn::tools
