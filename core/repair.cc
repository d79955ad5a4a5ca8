// RepairDB (cairn/repair.h): salvage by rewriting. Rather than patching a
// manifest around damaged files, repair reads every entry it can, keeps the
// newest per key, and writes those into a fresh database through the normal
// write path, so that the result is consistent by construction (its own
// manifest, WALs, segments and space ledger) and passes `cairn check`.
// The price is one rewrite of every value; a salvage is rare and the
// originals stay in lost/ untouched.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cairn/db.h"
#include "cairn/repair.h"
#include "core/db_impl.h"
#include "core/repair_internal.h"
#include "core/write_batch_internal.h"
#include "io/status_macros.h"
#include "lsm/block.h"
#include "lsm/dbformat.h"
#include "lsm/filename.h"
#include "lsm/range_tombstone.h"
#include "lsm/log_format.h"
#include "lsm/log_reader.h"
#include "lsm/table_cache.h"
#include "lsm/version_set.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_set.h"
#include "vlog/segment_reader.h"
#include "vlog/value_pointer.h"

namespace cairn {
namespace {

constexpr char kTempDirName[] = "repair.tmp";
constexpr char kLostDirName[] = "lost";
constexpr size_t kBatchBytes = 4 << 20;

// Printable key for the report: printable ASCII as is, the rest as \xNN.
std::string KeyText(std::string_view key) {
  std::string out;
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    }
  }
  return out;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The newest readable entry of one user key.
struct Salvaged {
  lsm::SequenceNumber sequence = 0;
  lsm::ValueType type = lsm::ValueType::kDeletion;
  std::string value;   // inline value, or the encoded pointer
  std::string source;  // "000012.sst" or "000015.log", for the report
};

class Repairer {
 public:
  Repairer(const Options& options, std::string dbname, std::shared_ptr<io::FileSystem> fs,
           RepairReport* report)
      : options_(options), dbname_(std::move(dbname)), fs_(std::move(fs)), report_(report) {}

  absl::Status Run() {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::FileLock> lock,
                           fs_->LockFile(lsm::LockFileName(dbname_)));
    CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(dbname_));
    std::sort(names.begin(), names.end());
    std::vector<uint64_t> tables, logs;
    for (const std::string& name : names) {
      uint64_t number = 0;
      lsm::FileType type;
      if (!lsm::ParseFileName(name, &number, &type)) continue;
      if (type == lsm::FileType::kLock) continue;
      originals_.push_back(name);
      if (type == lsm::FileType::kTable) tables.push_back(number);
      if (type == lsm::FileType::kLog) logs.push_back(number);
    }
    if (originals_.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(dbname_, ": holds no database file; nothing to repair"));
    }
    table_cache_ = std::make_unique<lsm::TableCache>(fs_.get(), dbname_, lsm::TableOptions(),
                                                     /*block_cache=*/nullptr,
                                                     /*counters=*/nullptr, /*max_open_files=*/16);
    CompareWithManifest(names);
    for (uint64_t number : tables) {
      // A table numbered at or past the manifest's next file number is one
      // the manifest never knew: its edit is what a manifest cut at a record
      // boundary lost, so it is read, never called obsolete.
      if (live_tables_.has_value() && number < next_file_number_ &&
          !live_tables_->contains(number)) {
        Skipped(lsm::TableFileName(dbname_, number), "not in the manifest's current version");
        continue;
      }
      ReadTable(number);
    }
    for (uint64_t number : logs) {
      if (number < min_log_) {
        Skipped(lsm::LogFileName(dbname_, number), "below the manifest's log number");
        continue;
      }
      ReadWal(number);
    }
    table_cache_.reset();
    CAIRN_RETURN_IF_ERROR(BuildNewDatabase());
    lock.reset();
    return SwapIn();
  }

 private:
  void Lost(std::string line) { report_->lost.push_back(std::move(line)); }
  void Skipped(const std::string& path, std::string_view why) {
    report_->skipped.push_back(absl::StrCat(BaseName(path), ": ", std::string(why)));
  }

  void Keep(std::string_view user_key, lsm::SequenceNumber seq, lsm::ValueType type,
            std::string_view value, const std::string& source) {
    ++report_->entries_read;
    if (type == lsm::ValueType::kRangeDeletion) {
      // Applied when the new database is built: a key whose newest entry
      // is older than a tombstone spanning it stays deleted.
      range_tombstones_.push_back({std::string(user_key), std::string(value), seq});
      return;
    }
    Salvaged& s = keys_[std::string(user_key)];
    if (!s.source.empty() && s.sequence >= seq) return;
    s.sequence = seq;
    s.type = type;
    s.value.assign(value);
    s.source = source;
  }

  // Where CURRENT and the manifest still read, what they name that is not
  // in the directory is lost whole: an SST or a live segment, or the live
  // WAL. Where they do not read, that is reported, and repair goes on from
  // the files alone.
  void CompareWithManifest(const std::vector<std::string>& names) {
    lsm::VersionSet versions(fs_.get(), dbname_);
    vlog::SegmentSet segments;
    absl::Status s = versions.Recover([&segments](uint32_t tag, std::string_view payload) {
      if (vlog::IsSegmentEditTag(tag)) segments.DecodeAndApply(tag, payload).IgnoreError();
      return absl::OkStatus();
    });
    if (!s.ok()) {
      Lost(absl::StrCat("CURRENT/MANIFEST unreadable (rebuilt from the files): ", s.ToString()));
      return;
    }
    if (std::optional<uint64_t> torn = versions.RecoveredTornTail()) {
      Lost(absl::StrFormat("%s: bad record at offset %d and everything after it (rebuilt from "
                           "the files)",
                           BaseName(lsm::ManifestFileName(dbname_, versions.ManifestFileNumber())),
                           *torn));
    }
    absl::flat_hash_set<std::string> present(names.begin(), names.end());
    std::shared_ptr<const lsm::Version> v = versions.current();
    for (int level = 0; level < lsm::kNumLevels; ++level) {
      for (const auto& f : v->files(level)) {
        const std::string name = BaseName(lsm::TableFileName(dbname_, f->number));
        if (!present.contains(name)) {
          // The key range tells the operator which keys may now be missing
          // or hold an older value from another file.
          Lost(absl::StrFormat(
              "%s: in the manifest at L%d (%d entries, %d bytes, keys '%s' to '%s'), but missing",
              name, level, f->num_entries, f->file_size, KeyText(f->smallest_user_key()),
              KeyText(f->largest_user_key())));
        }
      }
    }
    for (const vlog::SegmentInfo& info : segments.Segments()) {
      const std::string name = BaseName(lsm::ValueLogFileName(dbname_, info.segment_id));
      if (!info.obsolete && !present.contains(name)) {
        Lost(absl::StrCat(name, ": a live segment of the manifest, but missing"));
      }
    }
    // The manifest read to its end: trust it about which files are live, so
    // that an obsolete table a crash left behind cannot bring back a key
    // whose deletion a compaction already dropped.
    if (!versions.RecoveredTornTail().has_value()) {
      live_tables_.emplace();
      for (int level = 0; level < lsm::kNumLevels; ++level) {
        for (const auto& f : v->files(level)) live_tables_->insert(f->number);
      }
      min_log_ = versions.LogNumber();
      next_file_number_ = versions.NextFileNumber();
    }
    bool live_wal = false;
    for (const std::string& name : names) {
      uint64_t number;
      lsm::FileType type;
      if (lsm::ParseFileName(name, &number, &type) && type == lsm::FileType::kLog &&
          number >= versions.LogNumber()) {
        live_wal = true;
      }
    }
    if (!live_wal) {
      Lost(absl::StrFormat("%s (the manifest's live WAL): missing; the writes after the last "
                           "flush were in it",
                           BaseName(lsm::LogFileName(dbname_, versions.LogNumber()))));
    }
  }

  void ReadTable(uint64_t number) {
    const std::string path = lsm::TableFileName(dbname_, number);
    const std::string name = BaseName(path);
    absl::StatusOr<uint64_t> size = fs_->GetFileSize(path);
    absl::StatusOr<std::shared_ptr<lsm::Table>> table =
        size.ok() ? table_cache_->FindTable(number, *size) : size.status();
    if (!table.ok()) {
      Lost(absl::StrFormat("%s: the whole table (%d bytes): %s", name, size.value_or(0),
                           table.status().ToString()));
      return;
    }
    ++report_->tables_read;
    // Open verified the range-deletion block (table format 2).
    for (const lsm::RangeTombstone& t : (*table)->range_tombstone_list()) {
      Keep(t.begin, t.seq, lsm::ValueType::kRangeDeletion, t.end, name);
    }
    // Block by block, so that a bad block loses only its own entries.
    absl::StatusOr<std::vector<lsm::BlockHandle>> handles = (*table)->DataBlockHandles();
    if (!handles.ok()) {
      Lost(absl::StrFormat("%s: the whole table (%d entries): its index: %s", name,
                           (*table)->num_entries(), handles.status().ToString()));
      return;
    }
    for (const lsm::BlockHandle& h : *handles) {
      absl::StatusOr<std::shared_ptr<const lsm::Block>> block =
          (*table)->ReadDataBlock({.verify_checksums = true, .fill_cache = false}, h);
      absl::Status s = block.status();
      uint64_t entries = 0;
      if (block.ok()) {
        std::unique_ptr<lsm::InternalIterator> it = (*block)->NewIterator();
        for (it->SeekToFirst(); it->Valid(); it->Next(), ++entries) {
          lsm::ParsedInternalKey p;
          if (lsm::ParseInternalKey(it->key(), &p)) Keep(p.user_key, p.sequence, p.type, it->value(), name);
        }
        s = it->status();
      }
      if (!s.ok()) {
        Lost(absl::StrFormat("%s: data block bytes [%d, %d) (entries after the first %d of it): %s",
                             name, h.offset, h.offset + h.size, entries, s.ToString()));
      }
    }
  }

  // Record by record; a bad record is skipped and reading resumes at the
  // next one that verifies, so that damage in the middle loses only what it
  // hit. Applying the records after a gap is safe in any order: Keep keeps
  // the highest sequence per key, whichever file or offset it came from.
  void ReadWal(uint64_t number) {
    const std::string path = lsm::LogFileName(dbname_, number);
    const std::string name = BaseName(path);
    absl::StatusOr<std::unique_ptr<lsm::LogReader>> opened =
        lsm::LogReader::Open(fs_.get(), path, number);
    if (!opened.ok()) {
      Lost(absl::StrCat(name, ": the whole WAL: ", opened.status().ToString()));
      return;
    }
    lsm::LogReader& reader = **opened;
    ++report_->wals_read;
    std::string scratch;
    std::string_view record;
    // The sequence after the last batch read (0 before the first), and the
    // gap passed over since then with why, reported once the batch after
    // it tells which sequences went with it.
    lsm::SequenceNumber next_sequence = 0;
    std::optional<lsm::LogReader::SkippedRange> gap;
    std::string gap_why;
    while (true) {
      while (reader.ReadRecord(&record, &scratch)) {
        const uint64_t offset = reader.last_record_offset();
        WriteBatchInternal::SyncKind kind;
        uint64_t synced = 0;
        // A sync record (format 4) holds no write.
        if (reader.format_version() >= lsm::kSyncRecordLogFormatVersion &&
            WriteBatchInternal::ParseSyncRecord(record, &kind, &synced)) {
          continue;
        }
        lsm::SequenceNumber first = 0;
        uint64_t count = 0;
        absl::Status s = WriteBatchInternal::ForEach(
            record, [&](lsm::SequenceNumber seq, lsm::ValueType type, std::string_view key,
                        std::string_view value) {
              if (count++ == 0) first = seq;
              Keep(key, seq, type, value, name);
              return absl::OkStatus();
            });
        if (!s.ok()) {
          Lost(absl::StrFormat("%s: batch at offset %d: %s", name, offset, s.ToString()));
        }
        if (gap.has_value()) {
          Lost(GapLine(name, *gap, gap_why, next_sequence, count > 0 ? first : 0));
          gap.reset();
        }
        if (count > 0) next_sequence = first + count;
      }
      if (reader.status().ok()) break;
      const std::string why = reader.status().ToString();
      std::optional<lsm::LogReader::SkippedRange> skipped = reader.SkipCorruption();
      if (!skipped.has_value()) break;
      // A record right after a resync can be bad as well; the range then
      // grows (valid_end_offset() has not moved), and the first reason stays.
      if (!gap.has_value()) gap_why = why;
      gap = skipped;
    }
    const uint64_t size = fs_->GetFileSize(path).value_or(0);
    if (!reader.status().ok() || reader.hit_torn_tail()) {
      // From the end of the last good record: this covers a gap still
      // waiting for its next batch.
      const uint64_t end = reader.valid_end_offset();
      Lost(absl::StrFormat("%s: bytes [%d, %d): %s", name, end, size,
                           reader.status().ok() ? "a torn or unreadable tail"
                                                : reader.status().ToString()));
    } else if (gap.has_value()) {
      Lost(GapLine(name, *gap, gap_why, next_sequence, 0));
    }
  }

  // The report line of a WAL gap. before: the sequence after the last batch
  // read before it, after: the first one read after it (0: unknown).
  static std::string GapLine(const std::string& name, const lsm::LogReader::SkippedRange& gap,
                             const std::string& why, lsm::SequenceNumber before,
                             lsm::SequenceNumber after) {
    std::string sequences;
    if (before != 0 && after == before + 1) {
      sequences = absl::StrFormat(" (sequence %d lost)", before);
    } else if (before != 0 && after > before) {
      sequences = absl::StrFormat(" (sequences %d to %d lost)", before, after - 1);
    } else if (after != 0 && before == 0) {
      sequences = absl::StrFormat(" (the WAL's sequences before %d lost)", after);
    } else if (before != 0 && after != 0 && after < before) {
      // Not the order the writer keeps; harmless here (the highest sequence
      // of a key wins), but worth the operator's eye.
      sequences = absl::StrFormat(" (sequence %d follows %d)", after, before - 1);
    }
    return absl::StrFormat("%s: bytes [%d, %d) skipped%s: %s", name, gap.begin, gap.end,
                           sequences, why);
  }

  // The value of a salvaged pointer entry, or why it cannot be read.
  absl::Status ReadPointedValue(const std::string& key, std::string_view pointer,
                                std::string* value) {
    CAIRN_ASSIGN_OR_RETURN(vlog::ValuePointer ptr, vlog::DecodeValuePointer(pointer));
    if (auto e = reader_errors_.find(ptr.segment_id); e != reader_errors_.end()) return e->second;
    std::unique_ptr<vlog::SegmentReader>& reader = readers_[ptr.segment_id];
    if (reader == nullptr) {
      absl::StatusOr<std::unique_ptr<vlog::SegmentReader>> r = vlog::SegmentReader::Open(
          fs_.get(), lsm::ValueLogFileName(dbname_, ptr.segment_id), ptr.segment_id,
          /*direct_reads=*/false);
      if (!r.ok()) {
        readers_.erase(ptr.segment_id);
        reader_errors_.emplace(ptr.segment_id, r.status());
        return r.status();
      }
      reader = *std::move(r);
    }
    CAIRN_RETURN_IF_ERROR(reader->Read(ptr, key, value));
    return absl::OkStatus();
  }

  absl::Status BuildNewDatabase() {
    temp_dir_ = io::JoinPath(dbname_, kTempDirName);
    CAIRN_RETURN_IF_ERROR(RemoveTree(temp_dir_));  // a repair that died before
    Options o = options_;
    o.create_if_missing = true;
    o.error_if_exists = true;
    // Entries keep the expiry they had, no more and no less, and nothing
    // salvaged is filtered.
    o.default_ttl_seconds = 0;
    o.compaction_filter = nullptr;
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<DB> db, OpenWithFileSystem(o, temp_dir_, fs_));
    WriteBatch batch;
    std::string value;
    const lsm::FragmentedRangeTombstones range_dels(range_tombstones_);
    for (const auto& [key, s] : keys_) {
      if (s.type == lsm::ValueType::kDeletion ||
          range_dels.Covers(key, s.sequence, lsm::kMaxSequenceNumber)) {
        ++report_->keys_deleted;
        continue;
      }
      // An expiring entry keeps its expiry (one already past reads as
      // deleted in the repaired database too).
      lsm::StoredValue sv;
      if (!lsm::SplitStoredValue(s.type, s.value, &sv)) {
        ++report_->values_lost;
        Lost(absl::StrFormat("key '%s' (newest entry in %s, sequence %d): expiring entry without "
                             "its expiry",
                             KeyText(key), s.source, s.sequence));
        continue;
      }
      std::string_view v = sv.payload;
      if (sv.type == lsm::ValueType::kValuePointer) {
        if (absl::Status r = ReadPointedValue(key, sv.payload, &value); !r.ok()) {
          ++report_->values_lost;
          Lost(absl::StrFormat("key '%s' (newest entry in %s, sequence %d): value unreadable: %s",
                               KeyText(key), s.source, s.sequence, r.ToString()));
          continue;
        }
        v = value;
      }
      if (sv.expiry_micros != 0) {
        batch.PutWithExpiry(key, v, sv.expiry_micros);
      } else {
        batch.Put(key, v);
      }
      ++report_->keys_salvaged;
      if (batch.ApproximateSize() >= kBatchBytes) {
        CAIRN_RETURN_IF_ERROR(db->Write(WriteOptions(), batch));
        batch.Clear();
      }
    }
    WriteOptions sync;
    sync.sync = true;
    CAIRN_RETURN_IF_ERROR(db->Write(sync, batch));
    CAIRN_RETURN_IF_ERROR(db->Flush());
    readers_.clear();
    keys_.clear();
    range_tombstones_.clear();
    db.reset();
    return absl::OkStatus();
  }

  // Moves the originals to lost/<time>/ and the rebuilt files in; CURRENT
  // last, so that until then the directory holds no CURRENT of either.
  absl::Status SwapIn() {
    const std::string lost_root = io::JoinPath(dbname_, kLostDirName);
    CAIRN_RETURN_IF_ERROR(fs_->CreateDir(lost_root));
    std::string stamp = absl::FormatTime("%Y%m%dT%H%M%S", absl::Now(), absl::UTCTimeZone());
    std::string lost = io::JoinPath(lost_root, stamp);
    for (int n = 1; fs_->FileExists(lost); ++n) {
      lost = io::JoinPath(lost_root, absl::StrCat(stamp, ".", n));
    }
    CAIRN_RETURN_IF_ERROR(fs_->CreateDir(lost));
    report_->lost_dir = lost;
    for (const std::string& name : originals_) {
      CAIRN_RETURN_IF_ERROR(
          fs_->RenameFile(io::JoinPath(dbname_, name), io::JoinPath(lost, name)));
    }
    CAIRN_RETURN_IF_ERROR(fs_->SyncDir(lost));
    CAIRN_RETURN_IF_ERROR(fs_->SyncDir(dbname_));
    CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> built, fs_->ListDir(temp_dir_));
    std::sort(built.begin(), built.end());
    const std::string current = BaseName(lsm::CurrentFileName(dbname_));
    for (const std::string& name : built) {
      if (name == current || name == BaseName(lsm::LockFileName(dbname_))) continue;
      CAIRN_RETURN_IF_ERROR(
          fs_->RenameFile(io::JoinPath(temp_dir_, name), io::JoinPath(dbname_, name)));
    }
    CAIRN_RETURN_IF_ERROR(fs_->SyncDir(dbname_));
    CAIRN_RETURN_IF_ERROR(
        fs_->RenameFile(io::JoinPath(temp_dir_, current), io::JoinPath(dbname_, current)));
    CAIRN_RETURN_IF_ERROR(fs_->SyncDir(dbname_));
    CAIRN_RETURN_IF_ERROR(RemoveTree(temp_dir_));
    report_->report_path = io::JoinPath(lost, "REPAIR.txt");
    return io::WriteStringToFile(fs_.get(), report_->report_path, report_->ToString(),
                                 /*sync=*/true);
  }

  // Removes dir and the files in it (the rebuilt database's leftovers:
  // its LOCK), if it exists.
  absl::Status RemoveTree(const std::string& dir) {
    if (!fs_->FileExists(dir)) return absl::OkStatus();
    CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(dir));
    for (const std::string& name : names) {
      CAIRN_RETURN_IF_ERROR(fs_->RemoveFile(io::JoinPath(dir, name)));
    }
    return fs_->RemoveDir(dir);
  }

  const Options options_;
  const std::string dbname_;
  const std::shared_ptr<io::FileSystem> fs_;
  RepairReport* const report_;
  std::vector<std::string> originals_;  // names of every database file found
  // From a manifest that read to its end: the tables of its current version
  // and its log number. Without one, every table and WAL is read.
  std::optional<absl::flat_hash_set<uint64_t>> live_tables_;
  uint64_t min_log_ = 0;
  uint64_t next_file_number_ = 0;  // the manifest's; tables from here on are unknown to it
  absl::btree_map<std::string, Salvaged> keys_;
  // Every range tombstone found, in tables and WALs (applied at the build).
  std::vector<lsm::RangeTombstone> range_tombstones_;
  // Segment readers opened for salvaged pointers, and the segments that
  // could not be opened (each pointer into them is a lost value).
  std::map<uint64_t, std::unique_ptr<vlog::SegmentReader>> readers_;
  std::map<uint64_t, absl::Status> reader_errors_;
  std::unique_ptr<lsm::TableCache> table_cache_;
  std::string temp_dir_;
};

}  // namespace

std::string RepairReport::ToString() const {
  std::string out = absl::StrFormat(
      "cairn repair: read %d tables and %d WALs (%d entries); %d keys salvaged, %d deleted "
      "keys dropped, %d values lost\n",
      tables_read, wals_read, entries_read, keys_salvaged, keys_deleted, values_lost);
  if (!lost_dir.empty()) absl::StrAppend(&out, "original files moved to ", lost_dir, "\n");
  absl::StrAppend(&out, lost.empty() ? "nothing was lost\n"
                                     : absl::StrCat("lost (", lost.size(), "):\n"));
  for (const std::string& line : lost) absl::StrAppend(&out, "  ", line, "\n");
  if (!skipped.empty()) {
    absl::StrAppend(&out, "not read (obsolete per the manifest; moved with the originals):\n");
    for (const std::string& line : skipped) absl::StrAppend(&out, "  ", line, "\n");
  }
  return out;
}

absl::Status RepairWithFileSystem(const Options& options, const std::string& path,
                                  std::shared_ptr<io::FileSystem> fs, RepairReport* report) {
  *report = RepairReport();
  if (!fs->FileExists(path)) {
    return absl::NotFoundError(absl::StrCat(path, ": does not exist"));
  }
  return Repairer(options, path, std::move(fs), report).Run();
}

absl::Status RepairDB(const Options& options, const std::string& path, RepairReport* report) {
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<io::FileSystem> fs, FileSystemFor(options));
  return RepairWithFileSystem(options, path, std::move(fs), report);
}

}  // namespace cairn
