// DB::IngestExternalFiles: adds file sets written by ExternalFileWriter,
// all or none, at one sequence number (docs/ingestion.md; the design is
// docs/decisions/20261207_ingestion_file_sets.md).
//
// The order of the steps is what makes a crash anywhere leave all or none:
//  1. read every FILESET and verify every file it names (read only);
//  2. adopt each value-log segment into the database directory under a new
//     file number (a hard link whose header is rebound to that number, or
//     a copy), synced, with the directory;
//  3. at the front of the writer queue: flush the memtables if they hold
//     writes, pause compactions, take sequence S = last + 1, write each key
//     table under a new number (entries at S, pointers renamed), synced;
//  4. one manifest edit adds the tables, the segments (sealed) and the
//     last sequence S; only then do readers see S;
//  5. with move_files, remove the file sets' files.
// Before 4 the new files are orphans: tables no version names and segments
// the manifest never logged, which the next open removes (and a failed
// ingestion removes at once). After 4 every file is the database's.
#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "core/ingest_source.h"
#include "io/status_macros.h"
#include "lsm/dbformat.h"
#include "lsm/filename.h"
#include "lsm/internal_iterator.h"
#include "lsm/table_builder.h"
#include "vlog/segment_edit.h"
#include "vlog/value_pointer.h"
#include "vlog/vlog_format.h"

namespace cairn {

using lsm::SequenceNumber;

struct DBImpl::IngestPlan {
  IngestOptions options;
  std::vector<IngestSource> sources;  // by smallest key
  std::vector<size_t> given_order;    // sources[i] was dirs[given_order[i]]
  // Per source: local segment id -> the adopted segment's number.
  std::vector<absl::flat_hash_map<uint64_t, uint64_t>> segment_numbers;
  struct Adopted {
    uint64_t number, size, records;
  };
  std::vector<Adopted> adopted;
  std::vector<uint64_t> tables;  // numbers of the key tables written
  bool logged = false;           // the manifest edit was attempted
  IngestResult result;
};

namespace {

// Reads path (past its header) into a new segment file at dst whose header
// names number: the copy a link cannot replace. Returns the bytes written.
absl::StatusOr<uint64_t> CopySegment(io::FileSystem* fs, const std::string& src,
                                     const std::string& dst, const vlog::SegmentHeader& header) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> in,
                         fs->NewRandomAccessFile(src, {.category = io::IoCategory::kValueLog}));
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, in->Size());
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> out,
                         fs->NewWritableFile(dst, {.category = io::IoCategory::kValueLog}));
  std::string buf;
  vlog::EncodeSegmentHeader(header, &buf);
  CAIRN_RETURN_IF_ERROR(out->Append(buf));
  constexpr size_t kChunk = size_t{4} << 20;
  std::string scratch(kChunk, '\0');
  for (uint64_t offset = vlog::kSegmentHeaderSize; offset < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, size - offset));
    std::string_view got;
    CAIRN_RETURN_IF_ERROR(in->Read(offset, n, scratch.data(), &got));
    if (got.size() != n) {
      return absl::DataLossError(absl::StrCat(src, ": short read at offset ", offset));
    }
    CAIRN_RETURN_IF_ERROR(out->Append(got));
    offset += n;
  }
  CAIRN_RETURN_IF_ERROR(out->Sync());
  CAIRN_RETURN_IF_ERROR(out->Close());
  return size;
}

// Makes dst the segment src under header (its number in the database): a
// hard link rebound in place when move and the file system allows, else a
// copy. Returns the bytes copied (0 for a link).
absl::StatusOr<uint64_t> AdoptSegment(io::FileSystem* fs, const std::string& src,
                                      const std::string& dst, const vlog::SegmentHeader& header,
                                      bool move) {
  if (move) {
    absl::Status s = fs->LinkFile(src, dst);
    if (s.ok()) {
      std::string bytes;
      vlog::EncodeSegmentHeader(header, &bytes);
      s = fs->OverwriteSynced(dst, 0, bytes);
      if (s.ok()) return 0;
      fs->RemoveFile(dst).IgnoreError();
    }
    if (!absl::IsUnimplemented(s)) return s;
  }
  return CopySegment(fs, src, dst, header);
}

// The lowest level the range [smallest, largest] can go to: above the
// first level (from the top) holding a file it overlaps, so that every
// older version of its keys lies below it; L0 when L0 holds one.
int PickIngestLevel(const lsm::Version& v, std::string_view smallest, std::string_view largest) {
  for (int level = 0; level < lsm::kNumLevels; ++level) {
    lsm::FileList overlapping;
    v.GetOverlappingInputs(level, smallest, largest, &overlapping);
    if (!overlapping.empty()) return std::max(0, level - 1);
  }
  return lsm::kNumLevels - 1;
}

}  // namespace

absl::StatusOr<IngestResult> DBImpl::IngestExternalFiles(const std::vector<std::string>& dirs,
                                                         const IngestOptions& options) {
  CAIRN_RETURN_IF_ERROR(CheckWritable("IngestExternalFiles"));
  if (dirs.empty()) return absl::InvalidArgumentError("IngestExternalFiles: no file sets given");
  IngestPlan plan;
  plan.options = options;
  absl::flat_hash_set<std::string> seen;
  for (const std::string& dir : dirs) {
    if (!seen.insert(dir).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("IngestExternalFiles: ", dir, " is given twice"));
    }
    CAIRN_ASSIGN_OR_RETURN(IngestSource source, IngestSource::Open(fs_.get(), dir));
    plan.sources.push_back(std::move(source));
  }
  // Sets are taken in any order and sorted here; two whose ranges meet
  // would give one key two versions at one sequence.
  plan.given_order.resize(dirs.size());
  std::iota(plan.given_order.begin(), plan.given_order.end(), 0);
  std::sort(plan.given_order.begin(), plan.given_order.end(), [&](size_t a, size_t b) {
    return plan.sources[a].set.smallest_key < plan.sources[b].set.smallest_key;
  });
  {
    std::vector<IngestSource> sorted;
    for (size_t i : plan.given_order) sorted.push_back(std::move(plan.sources[i]));
    plan.sources = std::move(sorted);
  }
  for (size_t i = 1; i < plan.sources.size(); ++i) {
    const IngestSource& a = plan.sources[i - 1];
    const IngestSource& b = plan.sources[i];
    if (b.set.smallest_key <= a.set.largest_key) {
      return absl::InvalidArgumentError(
          absl::StrCat("IngestExternalFiles: the key ranges of ", a.dir, " and ", b.dir,
                       " overlap (one ingestion gives each key one version)"));
    }
  }
  for (const IngestSource& source : plan.sources) {
    CAIRN_RETURN_IF_ERROR(source.Verify(fs_.get(), table_options_));
  }

  absl::Status s = [&]() -> absl::Status {
    // Adopt the segments (step 2): new numbers, pending until logged.
    plan.segment_numbers.resize(plan.sources.size());
    for (size_t i = 0; i < plan.sources.size(); ++i) {
      for (const ExternalFileSet::Segment& seg : plan.sources[i].set.segments) {
        const uint64_t number = versions_->NewFileNumber();
        {
          absl::MutexLock l(&mu_);
          pending_outputs_.insert(number);
        }
        plan.adopted.push_back({number, seg.size, seg.records});
        plan.segment_numbers[i][seg.id] = number;
        const std::string src = FileSetSegmentPath(plan.sources[i].dir, seg.id);
        // The header keeps the set's format version: its records are in it.
        CAIRN_ASSIGN_OR_RETURN(vlog::SegmentHeader header, ReadSegmentHeader(fs_.get(), src));
        header.segment_id = number;
        header.kind = vlog::SegmentKind::kFresh;
        CAIRN_ASSIGN_OR_RETURN(uint64_t copied,
                               AdoptSegment(fs_.get(), src, lsm::ValueLogFileName(dbname_, number),
                                            header, options.move_files));
        plan.result.segment_bytes += seg.size;
        plan.result.copied_bytes += copied;
      }
    }
    CAIRN_RETURN_IF_ERROR(fs_->SyncDir(dbname_));
    CAIRN_RETURN_IF_ERROR(IngestStep("adopted"));
    return RunExclusiveInQueue([&]()
                                   ABSL_NO_THREAD_SAFETY_ANALYSIS { return IngestInQueue(&plan); });
  }();

  {
    absl::MutexLock l(&mu_);
    for (const IngestPlan::Adopted& a : plan.adopted) pending_outputs_.erase(a.number);
    for (uint64_t n : plan.tables) pending_outputs_.erase(n);
  }
  if (!s.ok()) {
    // Not logged: the new files are orphans, removed now (what a crash
    // leaves instead, the next open removes). Logged but failed: the
    // manifest may hold the edit, so they stay for the next open to judge.
    if (!plan.logged) {
      for (const IngestPlan::Adopted& a : plan.adopted) {
        fs_->RemoveFile(lsm::ValueLogFileName(dbname_, a.number)).IgnoreError();
      }
      for (uint64_t n : plan.tables) fs_->RemoveFile(lsm::TableFileName(dbname_, n)).IgnoreError();
    }
    return s;
  }
  if (options.move_files) {
    // The sets are the database's now. The descriptor goes first: without
    // it a directory is no file set, so a crash midway leaves nothing that
    // could be ingested a second time.
    for (const IngestSource& source : plan.sources) {
      fs_->RemoveFile(FileSetDescriptorPath(source.dir)).IgnoreError();
      fs_->RemoveFile(FileSetTablePath(source.dir)).IgnoreError();
      for (const ExternalFileSet::Segment& seg : source.set.segments) {
        fs_->RemoveFile(FileSetSegmentPath(source.dir, seg.id)).IgnoreError();
      }
      fs_->RemoveDir(source.dir).IgnoreError();
    }
  }
  RemoveObsoleteFiles();
  info_log_->Log(
      "ingest: %d file sets, %d entries at sequence %d; %d table bytes, %d segment "
      "bytes adopted (%d copied)%s",
      plan.sources.size(), plan.result.entries, plan.result.sequence, plan.result.table_bytes,
      plan.result.segment_bytes, plan.result.copied_bytes,
      plan.result.flushed_memtable ? "; the memtable was flushed first" : "");
  // Levels in the caller's order.
  IngestResult result = plan.result;
  result.levels.assign(plan.sources.size(), 0);
  for (size_t i = 0; i < plan.sources.size(); ++i) {
    result.levels[plan.given_order[i]] = plan.result.levels[i];
  }
  return result;
}

absl::Status DBImpl::IngestInQueue(IngestPlan* plan) {
  // Why the memtables must be empty: docs/ingestion.md, "Why the memtable
  // is flushed first".
  if (!mem_->empty() || !imm_.empty()) {
    if (!plan->options.allow_blocking_flush) {
      return absl::FailedPreconditionError(
          "IngestExternalFiles: the memtable holds writes and allow_blocking_flush is false");
    }
    if (!mem_->empty()) CAIRN_RETURN_IF_ERROR(MakeRoomForWrite(/*force=*/true));
    while ((!imm_.empty() || flush_running_) && bg_error_.ok() && !shutting_down_) {
      background_cv_.Wait(&mu_);
    }
    CAIRN_RETURN_IF_ERROR(bg_error_);
    if (!imm_.empty()) return absl::AbortedError("the database is closing");
    plan->result.flushed_memtable = true;
  }
  ingest_running_ = true;
  while (compactions_running_ > 0 && bg_error_.ok() && !shutting_down_) {
    background_cv_.Wait(&mu_);
  }
  absl::Status s = bg_error_;
  if (s.ok() && shutting_down_) s = absl::AbortedError("the database is closing");
  const SequenceNumber seq = last_sequence_.load() + 1;
  plan->result.sequence = seq;
  if (s.ok()) {
    mu_.Unlock();
    lsm::VersionEdit edit;
    vlog::SegmentEdit segments;
    std::vector<std::pair<int, lsm::FileMetaData>> placed;
    for (size_t i = 0; i < plan->sources.size() && s.ok(); ++i) {
      const uint64_t number = versions_->NewFileNumber();
      {
        absl::MutexLock l(&mu_);
        pending_outputs_.insert(number);
      }
      plan->tables.push_back(number);
      lsm::FileMetaData meta;
      s = WriteIngestedTable(*plan, i, seq, number, &meta);
      if (s.ok()) placed.emplace_back(0, std::move(meta));
    }
    if (s.ok()) s = IngestStep("tables");
    if (s.ok()) {
      // No flush or compaction runs now: the version stays as it is read.
      const std::shared_ptr<const lsm::Version> v = versions_->current();
      for (auto& [level, meta] : placed) {
        level = PickIngestLevel(*v, meta.smallest_user_key(), meta.largest_user_key());
        edit.AddFile(level, meta);
        plan->result.levels.push_back(level);
        plan->result.entries += meta.num_entries;
        plan->result.table_bytes += meta.file_size;
      }
      for (const IngestPlan::Adopted& a : plan->adopted) {
        segments.AddSegment(a.number, vlog::SegmentKind::kFresh);
        segments.SealSegment(a.number, a.size, a.records);
      }
      edit.SetLastSequence(seq);
      // The change feed's event for this ingestion (docs/wal_format.md,
      // "Ingestion events"): the file sets' directories, at sequence seq,
      // written and synced into the WAL before the edit makes the files
      // visible; WriteIngestionEvent then installs the edit.
      std::vector<std::string> names;
      for (const IngestSource& source : plan->sources) names.push_back(source.dir);
      auto install = [&](SequenceNumber at) -> absl::Status {
        if (at != seq) {
          return absl::InternalError(absl::StrCat("ingestion: the event's sequence ", at,
                                                  " is not the tables' ", seq));
        }
        plan->logged = true;
        return LogAndApply(&edit, &segments);
      };
      absl::FunctionRef<absl::Status(SequenceNumber)> install_ref(install);
      IngestionEventWrite event{.files = &names, .install = &install_ref};
      mu_.Lock();
      s = WriteIngestionEvent(&event);
      mu_.Unlock();
    }
    if (s.ok()) s = IngestStep("logged");
    mu_.Lock();
    if (s.ok()) {
      // Readers see every ingested entry from here on, all at once.
      last_sequence_.store(seq);
      // GC's pointer rewrites trust the memtables to hold every write
      // since a liveness check whose mutable memtable is still current
      // (core/gc_db_access.h, GcPointerRewrite); the ingestion wrote
      // around them, so no memtable from before it may stay current. The
      // one here is empty (writes have waited since the flush above).
      mem_ = NewMemTable();
      for (size_t i = 0; i < placed.size(); ++i) {
        // A table in L0 may hide older versions below, as a flushed one:
        // what its pointers name and its deletions.
        if (placed[i].first != 0) continue;
        const ExternalFileSet& set = plan->sources[i].set;
        uint64_t named = 0;
        for (const ExternalFileSet::Segment& seg : set.segments) {
          named += seg.size - vlog::kSegmentHeaderSize;
        }
        ledger_.TableFlushed(placed[i].second.number, named, set.deletions, std::nullopt);
      }
      InstallSuperVersionLocked();
    } else if (plan->logged) {
      // What reached the manifest is unknown: writes stop until a reopen
      // decides, as after any failed manifest write.
      SetBackgroundError(s);
    }
  }
  ingest_running_ = false;
  UpdatePendingCompactionBytes();
  background_cv_.SignalAll();
  return s;
}

absl::Status DBImpl::WriteIngestedTable(const IngestPlan& plan, size_t i, SequenceNumber seq,
                                        uint64_t number, lsm::FileMetaData* meta) {
  const IngestSource& source = plan.sources[i];
  const auto& numbers = plan.segment_numbers[i];
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<lsm::Table> table,
                         source.OpenTable(fs_.get(), table_options_));
  const std::string path = lsm::TableFileName(dbname_, number);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file,
                         fs_->NewWritableFile(path, {.category = io::IoCategory::kFlush}));
  lsm::TableBuilder builder(table_options_, file.get());
  lsm::TableReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<lsm::InternalIterator> it = table->NewIterator(ro);
  std::string key, value;
  absl::Status s;
  for (it->SeekToFirst(); it->Valid() && s.ok(); it->Next()) {
    lsm::ParsedInternalKey ikey;
    if (!lsm::ParseInternalKey(it->key(), &ikey)) {
      s = absl::DataLossError(absl::StrCat(FileSetTablePath(source.dir), ": bad internal key"));
      break;
    }
    key.clear();
    lsm::AppendInternalKey(&key, ikey.user_key, seq, ikey.type);
    std::string_view v = it->value();
    if (ikey.type == lsm::ValueType::kValuePointer) {
      // Verify checked every pointer; the table is read again here, and a
      // file changed since is refused, not trusted.
      absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(v);
      auto n = ptr.ok() ? numbers.find(ptr->segment_id) : numbers.end();
      if (n == numbers.end()) {
        s = absl::DataLossError(absl::StrCat(FileSetTablePath(source.dir),
                                             ": a pointer changed since it was verified"));
        break;
      }
      ptr->segment_id = n->second;
      value.clear();
      ptr->EncodeTo(&value);
      v = value;
    }
    s = builder.Add(key, v);
  }
  if (s.ok()) s = it->status();
  if (s.ok()) s = builder.Finish();
  if (s.ok()) s = file->Sync();
  if (s.ok()) s = file->Close();
  if (s.ok()) s = fs_->SyncDir(dbname_);
  if (!s.ok()) {
    builder.Abandon();
    return s;
  }
  meta->number = number;
  meta->file_size = builder.FileSize();
  meta->num_entries = builder.NumEntries();
  meta->smallest = builder.smallest_key();
  meta->largest = builder.largest_key();
  meta->smallest_seq = meta->largest_seq = seq;
  if (meta->num_entries != source.set.entries) {
    return absl::DataLossError(
        absl::StrCat(FileSetTablePath(source.dir), ": its entries changed since it was verified"));
  }
  // The table must read back.
  return table_cache_->FindTable(meta->number, meta->file_size).status();
}

}  // namespace cairn
