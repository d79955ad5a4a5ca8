#include "vlog/value_log.h"

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "io/status_macros.h"
#include "vlog/segment_scanner.h"

namespace cairn::vlog {

ValueLog::ValueLog(io::FileSystem* fs, std::string dbname, ValueLogOptions options,
                   EditLogger log_edit)
    : fs_(fs),
      dbname_(std::move(dbname)),
      options_(std::move(options)),
      // Values are compressed in the writers' threads, at the fast level:
      // zstd 1 compressed 4 KiB values at about twice the rate of level 3
      // for a few percent more bytes (docs/vlog_format.md).
      encoding_{options_.compress, /*compression_level=*/1, vlog::kDefaultValueChunkSize},
      log_edit_(std::move(log_edit)),
      readers_(fs, options_.segment_path, options_.direct_reads, options_.max_open_segments,
               options_.fd_budget),
      cache_(options_.value_cache_size > 0 ? vlog::ValueCache(options_.value_cache_size)
                                           : vlog::ValueCache(options_.shared_cache)) {}

ValueLog::~ValueLog() {
  absl::MutexLock l(&active_mu_);
  // Every acknowledged record was flushed to the kernel already.
  if (active_ != nullptr) active_->Close().IgnoreError();
}

std::string ValueLog::SegmentPath(uint64_t id) const { return options_.segment_path(id); }

absl::Status ValueLog::ApplyManifestRecord(uint32_t tag, std::string_view payload) {
  vlog::SegmentEdit edit;
  CAIRN_RETURN_IF_ERROR(set_.DecodeAndApply(tag, payload, &edit));
  for (const vlog::SegmentEdit::Change& c : edit.changes()) {
    if (c.tag == vlog::SegmentEditTag::kNewSegment) recovered_listed_.insert(c.segment_id);
  }
  return absl::OkStatus();
}

bool ValueLog::ManifestListedSegment(uint64_t segment_id) const {
  return recovered_listed_.contains(segment_id);
}

absl::Status ValueLog::Apply(const vlog::SegmentEdit& edit) { return set_.Apply(edit); }

absl::Status ValueLog::FinishRecovery(vlog::SegmentEdit* edit,
                                      std::vector<uint64_t>* obsolete) {
  recovered_listed_ = {};  // only the checks before this step ask for it
  // The newest segment of fresh writes left unsealed (the one active at the
  // close or crash) is continued rather than sealed, so that short sessions
  // do not leave a small segment each behind.
  uint64_t reuse_id = 0;
  for (const vlog::SegmentInfo& info : set_.Segments()) {
    if (!info.obsolete && !info.sealed && info.kind == vlog::SegmentKind::kFresh) {
      reuse_id = info.segment_id;
    }
  }
  for (const vlog::SegmentInfo& info : set_.Segments()) {
    if (info.obsolete) {
      // Not deleted here: the WALs just replayed may still point into it
      // (pointers a collection moved away), and until the manifest stops
      // naming those WALs a crash would replay them again.
      obsolete->push_back(info.segment_id);
      continue;
    }
    if (info.sealed) continue;
    // Active at the crash: keep every whole record, cut a torn tail.
    vlog::SegmentScannerOptions so;
    so.category = io::IoCategory::kValueLog;
    so.allow_torn_tail = true;
    so.uncompress_values = false;
    const std::string path = SegmentPath(info.segment_id);
    uint64_t end = 0, records = 0;
    uint32_t version = 0;
    if (fs_->FileExists(path)) {
      CAIRN_ASSIGN_OR_RETURN(auto scanner, vlog::SegmentScanner::Open(fs_, path, info.segment_id, so));
      vlog::ScannedRecord r;
      while (scanner->Next(&r)) ++records;
      CAIRN_RETURN_IF_ERROR(scanner->status());
      end = scanner->valid_end_offset();
      version = scanner->header().version;
      if (end < info.synced_size) {
        // Tables may point anywhere below the synced size: what is damaged
        // there was acknowledged and is no torn tail.
        return absl::DataLossError(absl::StrCat(
            path, ": the value-log segment being written is damaged at offset ", end,
            ", below the ", info.synced_size,
            " bytes the manifest records as synced (records there are referenced)"));
      }
      if (end < scanner->file_size()) {
        if (options_.note) {
          options_.note(absl::StrCat("open: ", path, ": cutting ", scanner->file_size() - end,
                                     " bytes after its last whole record at ", end,
                                     " (a write the crash interrupted)"));
        }
        CAIRN_RETURN_IF_ERROR(fs_->TruncateFile(path, end));
      }
    }
    // Appends go on in a segment of this build's format only: an older
    // segment keeps the records its version allows.
    if (info.segment_id == reuse_id && end >= vlog::kSegmentHeaderSize &&
        end < options_.segment_size && version == vlog::kSegmentFormatVersion) {
      CAIRN_ASSIGN_OR_RETURN(
          std::unique_ptr<vlog::SegmentWriter> writer,
          vlog::SegmentWriter::Reopen(fs_, path, info.segment_id, end, records, WriterOptions()));
      NoteDirectFallback(*writer);
      // Reopen synced what recovery kept, which tables written at this open
      // may point into.
      if (end > info.synced_size) edit->SyncedTo(info.segment_id, end);
      absl::MutexLock l(&active_mu_);
      synced_ = {info.segment_id, end};
      active_ = std::move(writer);
      continue;
    }
    edit->SealSegment(info.segment_id, end, records);
    if (info.kind == vlog::SegmentKind::kGcOutput) {
      // A collection seals its output before it moves any pointer into
      // it: one caught unsealed by the crash holds only garbage.
      edit->MarkObsolete(info.segment_id);
      obsolete->push_back(info.segment_id);
    }
  }
  // Segment files the manifest does not know were created by a crashed
  // session before it logged them: no WAL record can point into them.
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(dbname_));
  for (const std::string& name : names) {
    uint64_t number;
    if (!options_.parse_segment_name(name, &number)) continue;
    if (set_.Contains(number)) continue;
    // A segment recovery's own flush wrote is added by *edit.
    const bool added = std::any_of(
        edit->changes().begin(), edit->changes().end(), [number](const vlog::SegmentEdit::Change& c) {
          return c.tag == vlog::SegmentEditTag::kNewSegment && c.segment_id == number;
        });
    if (added) continue;
    if (options_.note) {
      options_.note(absl::StrCat("open: removing ", name,
                                 ": a value-log segment the manifest never named (created by a "
                                 "session that ended before logging it)"));
    }
    CAIRN_RETURN_IF_ERROR(fs_->RemoveFile(io::JoinPath(dbname_, name)));
  }
  return absl::OkStatus();
}

bool ValueLog::IsCollected(uint64_t segment_id) const {
  const std::optional<vlog::SegmentInfo> info = set_.Get(segment_id);
  if (!info.has_value()) return true;
  return info->obsolete && !fs_->FileExists(SegmentPath(segment_id));
}

absl::StatusOr<bool> ValueLog::PointerIsIntact(std::string_view key, std::string_view stored) {
  absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(stored);
  if (!ptr.ok() || !set_.Contains(ptr->segment_id) ||
      !fs_->FileExists(SegmentPath(ptr->segment_id))) {
    return false;
  }
  std::string value;
  absl::Status s = readers_.Read(*ptr, key, &value);
  if (s.ok()) return true;
  if (absl::IsDataLoss(s)) return false;
  return s;
}

absl::StatusOr<uint64_t> ValueLog::UnsealedValidEnd(uint64_t id) {
  if (auto it = unsealed_valid_end_.find(id); it != unsealed_valid_end_.end()) return it->second;
  vlog::SegmentScannerOptions so;
  so.category = io::IoCategory::kValueLog;
  so.allow_torn_tail = true;
  so.uncompress_values = false;
  CAIRN_ASSIGN_OR_RETURN(auto scanner, vlog::SegmentScanner::Open(fs_, SegmentPath(id), id, so));
  vlog::ScannedRecord r;
  while (scanner->Next(&r)) {
  }
  CAIRN_RETURN_IF_ERROR(scanner->status());
  unsealed_valid_end_[id] = scanner->valid_end_offset();
  return scanner->valid_end_offset();
}

absl::Status ValueLog::ExplainBrokenPointer(std::string_view stored) {
  absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(stored);
  if (!ptr.ok()) return absl::DataLossError(absl::StrCat("undecodable value pointer: ", ptr.status().message()));
  const std::string path = SegmentPath(ptr->segment_id);
  const std::string where = absl::StrCat(path, " at offset ", ptr->offset);
  std::optional<vlog::SegmentInfo> info = set_.Get(ptr->segment_id);
  if (!info.has_value()) {
    // AddSegment is synced in the manifest before any pointer into the
    // segment is written.
    return absl::DataLossError(absl::StrCat(where, ": the segment is not in the manifest"));
  }
  if (!fs_->FileExists(path)) return absl::DataLossError(absl::StrCat(where, ": the segment file is missing"));
  if (info->sealed) {
    return absl::DataLossError(absl::StrCat(where, ": the value record is damaged in a sealed segment"));
  }
  if (ptr->offset < info->synced_size) {
    return absl::DataLossError(absl::StrCat(where, ": the value record is damaged below the ",
                                            info->synced_size,
                                            " bytes the manifest records as synced"));
  }
  CAIRN_ASSIGN_OR_RETURN(uint64_t valid_end, UnsealedValidEnd(ptr->segment_id));
  if (ptr->offset >= valid_end) return absl::OkStatus();  // The unsynced tail a crash tore.
  return absl::DataLossError(absl::StrCat(
      where, ": the value record is damaged, yet whole records of the segment reach offset ",
      valid_end));
}

absl::Status ValueLog::CheckSegmentFiles() {
  for (const vlog::SegmentInfo& info : set_.Segments()) {
    // An obsolete segment may already be gone: it is deleted before the
    // manifest forgets it.
    if (info.obsolete) continue;
    const std::string path = SegmentPath(info.segment_id);
    absl::StatusOr<uint64_t> size = fs_->GetFileSize(path);
    if (absl::IsNotFound(size.status())) {
      return absl::DataLossError(absl::StrCat(path, ": missing; the manifest lists this value-log segment (",
                                              info.sealed ? "sealed" : "being written", ")"));
    }
    CAIRN_RETURN_IF_ERROR(size.status());
    if (info.sealed && *size < info.size) {
      return absl::DataLossError(absl::StrCat(path, ": ", *size, " bytes, but the manifest records ",
                                              info.size, " for this sealed segment"));
    }
    if (!info.sealed && *size < info.synced_size) {
      return absl::DataLossError(absl::StrCat(path, ": ", *size,
                                              " bytes, but the manifest records ", info.synced_size,
                                              " synced bytes for this segment being written"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValueLog::OpenEveryReader() {
  uint64_t unsealed_bytes = 0;
  for (const vlog::SegmentInfo& info : set_.Segments()) {
    if (info.obsolete) continue;
    absl::StatusOr<std::shared_ptr<const vlog::SegmentReader>> reader = readers_.Get(info.segment_id);
    if (absl::IsNotFound(reader.status())) {
      return absl::DataLossError(absl::StrCat(SegmentPath(info.segment_id),
                                              ": missing; the manifest lists this value-log segment"));
    }
    CAIRN_RETURN_IF_ERROR(reader.status());
    // The manifest records no size for a segment being written; a
    // read-write open counts it through its writer. Taken once here, as
    // GetTotals runs often and nothing changes the file for this DB.
    if (info.sealed) continue;
    CAIRN_ASSIGN_OR_RETURN(uint64_t size, (*reader)->FileSize());
    unsealed_bytes += size;
  }
  absl::MutexLock l(&active_mu_);
  unsealed_bytes_at_open_ = unsealed_bytes;
  return absl::OkStatus();
}

absl::Status ValueLog::RollSegment() {
  vlog::SegmentEdit edit;
  if (active_ != nullptr) {
    // Sealed means complete: its bytes are durable before the manifest says
    // so, and the file is exactly its records (Close cuts O_DIRECT's zero
    // padding, durably), as a sealed segment's scan requires.
    CAIRN_RETURN_IF_ERROR(active_->Sync());
    CAIRN_RETURN_IF_ERROR(active_->Close());
    edit.SealSegment(active_->segment_id(), active_->size(), active_->record_count());
  }
  const uint64_t id = options_.new_file_number();
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<vlog::SegmentWriter> writer,
                         vlog::SegmentWriter::Create(fs_, SegmentPath(id), id, WriterOptions()));
  NoteDirectFallback(*writer);
  CAIRN_RETURN_IF_ERROR(fs_->SyncDir(dbname_));
  // The manifest knows the segment before any pointer into it exists.
  edit.AddSegment(id, vlog::SegmentKind::kFresh);
  CAIRN_RETURN_IF_ERROR(log_edit_(edit));
  std::unique_ptr<vlog::SegmentWriter> old;
  {
    absl::MutexLock l(&active_mu_);
    old = std::move(active_);
    active_ = std::move(writer);
  }
  return absl::OkStatus();
}

absl::Status ValueLog::SealActiveSegment() {
  if (active_ == nullptr || active_->record_count() == 0) return absl::OkStatus();
  // As RollSegment seals: durable and exactly its records before the
  // manifest says so.
  CAIRN_RETURN_IF_ERROR(active_->Sync());
  CAIRN_RETURN_IF_ERROR(active_->Close());
  vlog::SegmentEdit edit;
  edit.SealSegment(active_->segment_id(), active_->size(), active_->record_count());
  CAIRN_RETURN_IF_ERROR(log_edit_(edit));
  std::unique_ptr<vlog::SegmentWriter> old;
  {
    absl::MutexLock l(&active_mu_);
    old = std::move(active_);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<vlog::SegmentWriter>> ValueLog::CreateFlushSegment() {
  const uint64_t id = options_.new_file_number();
  vlog::SegmentWriterOptions wo = WriterOptions();
  wo.sync_header = false;  // the flush syncs it whole before the manifest names it
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<vlog::SegmentWriter> writer,
                         vlog::SegmentWriter::Create(fs_, SegmentPath(id), id, wo));
  // Under the default options values below separate_at_flush_below are
  // written only here: the active segment may never be opened to say it.
  NoteDirectFallback(*writer);
  return writer;
}

vlog::SegmentWriterOptions ValueLog::WriterOptions() const {
  vlog::SegmentWriterOptions wo;
  wo.kind = vlog::SegmentKind::kFresh;
  // The writer appends records encoded elsewhere with encoding_; these
  // options say the same, for anything it encodes itself.
  wo.compress = encoding_.compress;
  wo.compression_level = encoding_.compression_level;
  wo.chunk_size = encoding_.chunk_size;
  wo.direct_writes = options_.direct_writes;
  wo.writeback_bytes = options_.writeback_bytes;
  return wo;
}

void ValueLog::NoteDirectFallback(vlog::SegmentWriter& writer) {
  io::WritableFile* file = writer.file();
  if (!options_.direct_writes || file == nullptr || file->direct()) return;
  NoteDirectRefused(writer.path());
}

void ValueLog::NoteDirectRefused(const std::string& path) {
  if (noted_fallback_.exchange(true, std::memory_order_relaxed)) return;
  if (options_.note) {
    options_.note(absl::StrCat("value log: ", fs_->Name(), " refused O_DIRECT for ", path,
                               "; appending through the page cache instead"));
  }
}

uint64_t ValueLog::ActiveBytes() const {
  absl::MutexLock l(&active_mu_);
  return active_ == nullptr ? unsealed_bytes_at_open_ : active_->size();
}

std::optional<std::pair<uint64_t, uint64_t>> ValueLog::ActiveSegment() const {
  absl::MutexLock l(&active_mu_);
  if (active_ == nullptr) return std::nullopt;
  return std::make_pair(active_->segment_id(), active_->size());
}

absl::flat_hash_map<uint64_t, std::pair<uint64_t, uint64_t>> ValueLog::ActiveSizes() const {
  absl::MutexLock l(&active_mu_);
  if (active_ == nullptr) return {};
  return {{active_->segment_id(), {active_->size(), active_->record_count()}}};
}

absl::Status ValueLog::AppendPrepared(absl::Span<const vlog::PreparedRecords* const> prepared,
                                      std::vector<vlog::ValuePointer>* pointers) {
  // The runs bound for the active segment, written with one append.
  absl::InlinedVector<vlog::EncodedRecords, 8> runs;
  auto place = [&]() -> absl::Status {
    if (runs.empty()) return absl::OkStatus();
    absl::Status s = active_->AppendEncoded(runs, pointers);
    runs.clear();
    return s;
  };
  uint64_t end = active_ == nullptr ? 0 : active_->size();
  for (const vlog::PreparedRecords* records : prepared) {
    const absl::Span<const uint32_t> sizes = records->sizes();
    std::string_view bytes = records->bytes();
    size_t i = 0;
    while (i < sizes.size()) {
      if (active_ == nullptr || end >= options_.segment_size) {
        CAIRN_RETURN_IF_ERROR(place());
        CAIRN_RETURN_IF_ERROR(RollSegment());
        end = active_->size();
      }
      // The records that start below the target size: a segment ends past
      // it by at most one record, as when records came one by one.
      size_t n = 0;
      uint64_t len = 0;
      while (i + n < sizes.size() && (n == 0 || end < options_.segment_size)) {
        end += sizes[i + n];
        len += sizes[i + n];
        ++n;
      }
      runs.push_back({bytes.substr(0, len), sizes.subspan(i, n)});
      bytes.remove_prefix(len);
      i += n;
    }
  }
  return place();
}

absl::Status ValueLog::Flush() { return active_ == nullptr ? absl::OkStatus() : active_->Flush(); }
absl::Status ValueLog::Sync() {
  if (active_ == nullptr) return absl::OkStatus();
  // Every byte appended before the sync starts is durable once it returns.
  const uint64_t size = active_->size();
  CAIRN_RETURN_IF_ERROR(active_->Sync());
  absl::MutexLock l(&active_mu_);
  synced_ = {active_->segment_id(), size};
  return absl::OkStatus();
}

void ValueLog::AddSyncedSize(vlog::SegmentEdit* edit) const {
  SyncedSize synced;
  {
    absl::MutexLock l(&active_mu_);
    synced = synced_;
  }
  if (synced.size == 0) return;
  const std::optional<vlog::SegmentInfo> info = set_.Get(synced.segment_id);
  if (!info.has_value() || info->sealed || info->obsolete || info->synced_size >= synced.size) {
    return;
  }
  edit->SyncedTo(synced.segment_id, synced.size);
}
io::WritableFile* ValueLog::active_file() { return active_ == nullptr ? nullptr : active_->file(); }

absl::Status ValueLog::Get(std::string_view key, std::string_view stored, std::string* value,
                           bool fill_cache) {
  CAIRN_ASSIGN_OR_RETURN(vlog::ValuePointer ptr, vlog::DecodeValuePointer(stored));
  // The cache holds one copy of a value, in a reference-counted string that
  // readers share; each Get copies it out once (its API hands out a
  // std::string). A miss reads into the string the cache will keep.
  if (std::shared_ptr<const std::string> hit = cache_.Lookup(ptr.segment_id, ptr.offset)) {
    value->assign(*hit);
    return absl::OkStatus();
  }
  if (cache_.capacity() == 0 || !fill_cache) return readers_.Read(ptr, key, value);
  std::shared_ptr<std::string> read = ValueCache::NewValue(ptr.size);
  CAIRN_RETURN_IF_ERROR(readers_.Read(ptr, key, read.get()));
  value->assign(*read);
  cache_.Insert(ptr.segment_id, ptr.offset, std::move(read));
  return absl::OkStatus();
}

ValueLog::Totals ValueLog::GetTotals() const {
  Totals t;
  const vlog::SegmentSet::Totals st = set_.GetTotals();
  t.segments = st.segments - st.obsolete_segments;
  t.bytes = st.bytes;
  t.garbage_bytes = st.garbage_bytes;
  t.punched_bytes = st.punched_bytes;
  {
    absl::MutexLock l(&active_mu_);
    // A read-only DB has no writer: its unsealed segments' sizes at open.
    t.bytes += active_ == nullptr ? unsealed_bytes_at_open_ : active_->size();
  }
  t.cache_hits = cache_.hits();
  t.cache_misses = cache_.misses();
  t.cache_bytes = cache_.usage();
  t.cache_capacity = cache_.capacity();
  return t;
}

}  // namespace cairn::vlog
