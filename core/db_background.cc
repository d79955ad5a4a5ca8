// Background work: flushing immutable memtables to L0 tables, scheduling
// compactions, and deleting files no version needs.
#include <algorithm>
#include <future>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "cairn/compaction_filter.h"
#include "core/background_retry.h"
#include "core/compaction_filter_adapter.h"
#include "core/db_impl.h"
#include "core/flush_segments.h"
#include "io/dir_sync.h"
#include "io/status_macros.h"
#include "lsm/block.h"
#include "lsm/compaction_iterator.h"
#include "lsm/filename.h"
#include "lsm/table_builder.h"

namespace cairn {

using lsm::FileType;
using lsm::SequenceNumber;

void DBImpl::SetBackgroundError(const absl::Status& s) {
  if (bg_error_.ok() && !s.ok()) {
    bg_error_ = absl::Status(s.code(), absl::StrCat("writes stopped until the database is reopened: ",
                                                    s.message()));
    background_cv_.SignalAll();
    info_log_->Log("background error: %s", bg_error_.ToString());
    NotifyListeners([&](EventListener& l) { l.OnBackgroundError(bg_error_); });
  }
}

void DBImpl::SetStallCondition(StallCondition condition, std::string_view cause) {
  if (condition == stall_condition_) return;
  StallConditionInfo info{.previous = stall_condition_, .current = condition,
                          .cause = std::string(cause)};
  stall_condition_ = condition;
  static constexpr const char* kNames[] = {"normal", "delayed", "stopped"};
  info_log_->Log("stall: %s -> %s%s%s", kNames[static_cast<int>(info.previous)],
                 kNames[static_cast<int>(condition)], cause.empty() ? "" : ": ", info.cause);
  NotifyListeners([&](EventListener& l) { l.OnStallConditionsChanged(info); });
}

void DBImpl::BackgroundThread() {
  absl::MutexLock l(&mu_);
  int retries = 0;
  while (true) {
    while (!shutting_down_ && (imm_.empty() || !bg_error_.ok())) background_cv_.Wait(&mu_);
    if (shutting_down_) return;
    mu_.Unlock();
    absl::Status s = FlushOldestImmutable();
    if (IsRetryable(s)) fd_budget_->CloseIdle();
    mu_.Lock();
    if (IsRetryable(s)) {
      info_log_->Log("flush: %s; retrying", s.ToString());
      background_cv_.WaitWithTimeout(&mu_, RetryPause(retries++));
      continue;
    }
    retries = 0;
    if (!s.ok()) SetBackgroundError(s);
    background_cv_.SignalAll();
  }
}

absl::Status DBImpl::FlushOldestImmutable() {
  std::shared_ptr<lsm::MemTable> mem;
  lsm::SequenceNumber flushed_through;
  bool overwrites;  // recent flushes' keys were nearly all below already
  {
    absl::MutexLock l(&mu_);
    if (imm_.empty()) return absl::OkStatus();
    mem = imm_.front().mem;
    flushed_through = imm_.front().last_sequence;
    flush_running_ = true;
    overwrites = ledger_.yield() > 0.5;
  }
  if (before_flush_for_testing) before_flush_for_testing();
  const auto start = std::chrono::steady_clock::now();
  lsm::VersionEdit edit;
  GarbageMeter garbage;
  uint64_t value_bytes = 0, deletions = 0, gc_value_bytes = 0;
  // The tables below this memtable's: no other flush runs meanwhile, and a
  // compaction changes how they lie, not which version of a key is newest.
  const std::shared_ptr<const lsm::Version> below = versions_->current();
  std::optional<std::vector<FlushedKey>> foresee;
  if (vlog_->segment_set().GetTotals().segments > 0) foresee.emplace();
  // A segment of values moved out of the memtable joins the set in the edit
  // that adds the table pointing into it, complete and sealed (ahead of the
  // garbage counts, which GarbageMeter::Finish appends).
  std::vector<uint64_t> flush_claimed;  // its new segments, while GC must not pick them
  absl::Status s = WriteLevel0Table(mem.get(), &edit, &garbage, &value_bytes,
                                    garbage.mutable_edit(), /*at_open=*/false, &deletions,
                                    &gc_value_bytes, &foresee);
  s = RetryableBeforeEdit(std::move(s));
  uint64_t foreseen_bytes = 0, found_bytes = 0, foresee_micros = 0;
  if (s.ok() && foresee.has_value()) {
    // Listed before the table is installed, so before any compaction of
    // it can count (and unlist) what it shadows.
    const auto foresee_start = std::chrono::steady_clock::now();
    vlog::DeadRecords::Batch batch =
        FindShadowedRecords(*below, table_cache_.get(), *foresee, overwrites);
    // And what the memtable's range tombstones delete below, from the
    // tables' keys and pointers alone.
    AddRangeShadowedRecords(*below, table_cache_.get(), mem->RangeTombstoneList(),
                            kMaxFlushedKeys, &batch);
    foresee_micros = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                               std::chrono::steady_clock::now() - foresee_start)
                                               .count());
    for (const auto& [id, records] : batch) {
      for (const vlog::DeadRecords::Record& r : records) found_bytes += r.size;
    }
    absl::MutexLock l(&mu_);
    bool overflowed = false;
    foreseen_bytes = gc_.ForeseeLocked(batch, &overflowed);
    // Past the list's bound some went unlisted: the table is estimated.
    if (overflowed) foresee.reset();
  }
  if (s.ok()) {
    uint64_t oldest_needed_log;
    {
      absl::MutexLock l(&mu_);
      oldest_needed_log = imm_.size() > 1 ? imm_[1].log_number : log_number_;
    }
    edit.SetLogNumber(oldest_needed_log);
    // Every write up to the memtable's newest is in a table now (older
    // memtables were flushed first), so durable whether or not its WAL was
    // ever synced: the manifest's last sequence counts durable writes.
    edit.SetLastSequence(flushed_through);
    garbage.Finish();
    // The switch away from the memtable's WAL synced the active segment:
    // the table's pointers into it lie below that size, which the manifest
    // records before the WAL that also held them is dropped.
    vlog_->AddSyncedSize(garbage.mutable_edit());
    // The flush's new segments are claimed until the memtable leaves the
    // SuperVersion: until then a GC liveness check finds each value inline
    // in the memtable, at the sequence of the table's pointer, and would
    // take every record for dead (the race that took small-segment merging
    // out in e56f6a5).
    absl::MutexLock l(&mu_);
    for (const vlog::SegmentEdit::Change& c : garbage.edit().changes()) {
      if (c.tag == vlog::SegmentEditTag::kNewSegment) {
        gc_.ClaimLocked(c.segment_id);
        flush_claimed.push_back(c.segment_id);
      }
    }
  }
  if (s.ok()) {
    // On failure the manifest may or may not hold the edit: the segment,
    // like the table, stays; the next open removes it if it is an orphan.
    s = LogAndApply(&edit, &garbage.edit());
  }
  if (s.ok() && after_flush_logged_for_testing) after_flush_logged_for_testing();
  if (s.ok()) {
    gc_.DeadRecordsCounted(garbage.TakeDead());
    // Before the flush is seen as done (Flush returns once imm_ shrinks).
    FlushJobInfo info;
    info.value_log_bytes = value_bytes;
    info.micros = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                            std::chrono::steady_clock::now() - start)
                                            .count());
    for (const auto& [level, f] : edit.new_files()) {
      info.file_number = f.number;
      info.file_bytes = f.file_size;
    }
    info_log_->Log("flush: table %06d, %d bytes, naming %d value-log bytes, in %d us; "
                   "%d keys foresaw %d bytes of garbage below in %d us",
                   info.file_number, info.file_bytes, info.value_log_bytes, info.micros,
                   foresee.has_value() ? foresee->size() : 0, foreseen_bytes, foresee_micros);
    NotifyListeners([&](EventListener& l) { l.OnFlushCompleted(info); });
  }
  {
    absl::MutexLock l(&mu_);
    for (const auto& [level, f] : edit.new_files()) {
      pending_outputs_.erase(f.number);
      // What the table may hide below it: the values its pointers
      // supersede (but GC's rewrites', which supersede records of collected
      // victims), and those its deletions do.
      const uint64_t named = value_bytes - std::min(value_bytes, gc_value_bytes);
      if (s.ok()) {
        ledger_.TableFlushed(f.number, named, deletions,
                             foresee.has_value() ? std::optional<uint64_t>(found_bytes)
                                                 : std::nullopt);
      }
    }
    if (s.ok()) {
      imm_.pop_front();
      InstallSuperVersionLocked();
    }
    for (uint64_t id : flush_claimed) gc_.UnclaimLocked(id);
    UpdatePendingCompactionBytes();
    background_cv_.SignalAll();
  }
  if (s.ok()) {
    RemoveObsoleteFiles();
    // The flush is durable: GC releases the victims that waited on it.
    s = gc_.FlushDurable();
  }
  // Only now is the flush over: WaitForBackgroundWork must not return while
  // the files it made obsolete (its WAL) are still being removed.
  absl::MutexLock l(&mu_);
  flush_running_ = false;
  background_cv_.SignalAll();
  return s;
}

// The flush at open writes the values it separates to a segment of their
// own only when they come to at least this many bytes (or a quarter of the
// memtable, when that is less); fewer stay inline in the table.
constexpr uint64_t kMinFlushSegmentBytes = 256 << 10;

absl::Status DBImpl::WriteLevel0Table(lsm::MemTable* mem, lsm::VersionEdit* edit,
                                      GarbageMeter* garbage, uint64_t* value_bytes,
                                      vlog::SegmentEdit* new_segment, bool at_open,
                                      uint64_t* deletions, uint64_t* gc_value_bytes,
                                      std::optional<std::vector<FlushedKey>>* foresee) {
  lsm::FileMetaData meta;
  meta.number = versions_->NewFileNumber();
  std::vector<SequenceNumber> snapshots;
  SequenceNumber latest;
  {
    absl::MutexLock l(&mu_);
    pending_outputs_.insert(meta.number);
    snapshots.assign(snapshots_.begin(), snapshots_.end());
    latest = last_sequence_.load();
  }
  // A snapshot may see an older version the flushed one shadows for others.
  if (foresee != nullptr && !snapshots.empty()) foresee->reset();
  if (foresee != nullptr && !foresee->has_value()) foresee = nullptr;
  const std::string path = lsm::TableFileName(dbname_, meta.number);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file,
                         fs_->NewWritableFile(path, {.category = io::IoCategory::kFlush}));
  lsm::TableBuilder builder(table_options_, file.get());
  builder.set_data_block_sink(NewTableBlockSink(meta.number));
  std::unique_ptr<lsm::InternalIterator> input = mem->NewIterator();
  // Versions no snapshot can see are dropped here already (their pointers
  // become garbage now, not at some later compaction); tombstones stay, as
  // older versions may sit in the levels below.
  // The memtable's range tombstones drop the entries they cover in the
  // same snapshot stripe (their values become garbage now), and go into the
  // table for the levels below.
  lsm::CompactionIterator it(input.get(), std::move(snapshots), latest,
                             /*key_may_exist_below=*/{}, garbage, mem->RangeTombstones());
  bool first = true;
  for (const lsm::RangeTombstone& t : mem->RangeTombstoneList()) {
    builder.AddRangeTombstone(t);
    if (first) {
      meta.smallest_seq = meta.largest_seq = t.seq;
      first = false;
    }
    meta.smallest_seq = std::min(meta.smallest_seq, t.seq);
    meta.largest_seq = std::max(meta.largest_seq, t.seq);
  }
  meta.num_range_deletions = builder.NumRangeDeletions();
  absl::Status s;
  uint64_t pointed_bytes = 0, deletion_count = 0, gc_pointed_bytes = 0;
  // Whether a pointer names a GC output segment; a memtable's GC rewrites
  // name a few outputs, so the last answer is kept.
  uint64_t last_segment = 0;
  bool last_is_gc_output = false;
  const auto names_gc_output = [&](uint64_t segment_id) {
    if (segment_id != last_segment || last_segment == 0) {
      const std::optional<vlog::SegmentInfo> info = vlog_->segment_set().Get(segment_id);
      last_segment = segment_id;
      last_is_gc_output = info.has_value() && info->kind == vlog::SegmentKind::kGcOutput;
    }
    return last_is_gc_output;
  };
  // Values the write path left in the memtable for the flush to separate
  // (Options::separate_at_flush_below), and any value a replayed synced
  // group carried in its WAL record, go to a segment of their own here, in
  // key order, so that neighbouring keys' values lie side by side.
  // At open, a memtable replayed with little of them (a short session's)
  // keeps them inline instead, so that short sessions do not leave a small
  // segment each behind.
  const size_t threshold = options_.value_separation_threshold;
  bool separate = new_segment != nullptr && threshold != kInlineValues;
  if (separate && at_open) {
    const uint64_t min_bytes = std::min<uint64_t>(kMinFlushSegmentBytes, options_.memtable_size / 4);
    uint64_t movable = 0;
    std::unique_ptr<lsm::InternalIterator> all = mem->NewIterator();
    for (all->SeekToFirst(); all->Valid() && movable < min_bytes; all->Next()) {
      lsm::ParsedInternalKey ikey;
      lsm::StoredValue sv;
      if (lsm::ParseInternalKey(all->key(), &ikey) &&
          lsm::SplitStoredValue(ikey.type, all->value(), &sv) &&
          sv.type == lsm::ValueType::kValue && sv.payload.size() >= threshold) {
        movable += sv.payload.size();
      }
    }
    separate = movable >= min_bytes;
  }
  FlushSegments segments(fs_.get(), [this] { return vlog_->CreateFlushSegment(); },
                         options_.value_log_segment_size);
  std::string moved_key, moved_pointer;
  for (it.SeekToFirst(); it.Valid() && s.ok(); it.Next()) {
    const SequenceNumber seq = it.ikey().sequence;
    std::string_view key = it.key(), value = it.value();
    bool gc_rewrite = false;
    // An expiring entry is moved or counted by its value, and keeps its
    // expiry (the WAL checked it; a damaged one is left as it is).
    lsm::StoredValue sv;
    if (!lsm::SplitStoredValue(it.ikey().type, value, &sv)) sv.type = lsm::ValueType::kDeletion;
    if (separate && sv.type == lsm::ValueType::kValue && sv.payload.size() >= threshold) {
      absl::StatusOr<vlog::ValuePointer> ptr = segments.Place(it.ikey().user_key, sv.payload);
      if (!ptr.ok()) {
        s = ptr.status();
        break;
      }
      moved_key.clear();
      lsm::AppendInternalKey(&moved_key, it.ikey().user_key, seq,
                             sv.expiry_micros != 0 ? lsm::ValueType::kValuePointerWithExpiry
                                                   : lsm::ValueType::kValuePointer);
      moved_pointer.clear();
      if (sv.expiry_micros != 0) io::PutFixed64(&moved_pointer, sv.expiry_micros);
      ptr->EncodeTo(&moved_pointer);
      key = moved_key;
      value = moved_pointer;
      pointed_bytes += ptr->size;
    } else if (sv.type == lsm::ValueType::kValuePointer) {
      // Only sizes the garbage-counting trigger; a bad pointer is the read
      // path's to report.
      absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(sv.payload);
      if (ptr.ok()) {
        pointed_bytes += ptr->size;
        if (gc_value_bytes != nullptr && names_gc_output(ptr->segment_id)) {
          gc_pointed_bytes += ptr->size;
          gc_rewrite = true;
        }
      }
    } else if (it.ikey().type == lsm::ValueType::kDeletion) {
      ++deletion_count;
    }
    // A GC rewrite supersedes a record of a victim being collected already.
    if (foresee != nullptr && !gc_rewrite) {
      if ((*foresee)->size() < kMaxFlushedKeys) {
        (*foresee)->push_back({std::string(it.ikey().user_key), seq});
      } else {
        foresee->reset();  // too many lookups for one flush: left to the estimate
        foresee = nullptr;
      }
    }
    if (first) {
      meta.smallest_seq = meta.largest_seq = seq;
      first = false;
    }
    meta.smallest_seq = std::min(meta.smallest_seq, seq);
    meta.largest_seq = std::max(meta.largest_seq, seq);
    s = builder.Add(key, value);
  }
  if (s.ok()) s = it.status();
  // Every file of the flush exists now: their directory entries' sync runs
  // on a thread of its own while the table is finished and the files are
  // synced (a device round trip less for each flush; it came after them
  // until 2026-12-05). Waited for below, or, on failure, as the
  // future goes.
  std::future<absl::Status> dir_synced;
  if (s.ok()) {
    dir_synced = io::StartSyncDir(fs_.get(), dbname_);
  }
  if (s.ok()) s = builder.Finish();
  if (s.ok()) s = file->Sync();
  if (s.ok()) s = file->Close();
  // The segments are complete and durable before the manifest names them.
  if (s.ok()) s = segments.Finish();
  // The table's directory entry, and the segments', are durable before the
  // manifest names them.
  if (s.ok()) s = dir_synced.get();
  if (!s.ok()) {
    builder.Abandon();
    fs_->RemoveFile(path).IgnoreError();  // best effort; an orphan goes at next open
    segments.Abandon();                   // likewise
    return s;
  }
  meta.file_size = builder.FileSize();
  meta.num_entries = builder.NumEntries();
  meta.smallest = builder.smallest_key();
  meta.largest = builder.largest_key();
  // The table must read back.
  CAIRN_RETURN_IF_ERROR(table_cache_->FindTable(meta.number, meta.file_size).status());
  edit->AddFile(0, meta);
  if (value_bytes != nullptr) *value_bytes = pointed_bytes;
  if (gc_value_bytes != nullptr) *gc_value_bytes = gc_pointed_bytes;
  if (deletions != nullptr) *deletions = deletion_count;
  if (new_segment != nullptr) segments.AddTo(new_segment);
  return absl::OkStatus();
}

void DBImpl::RemoveObsoleteFiles(bool at_open) {
  // List first: a file created after the listing is not seen, and one
  // created before it is already a pending output or in a version by the
  // time the live set is read below (pending before versions, because an
  // output leaves pending_outputs_ only after its version is installed).
  auto names = fs_->ListDir(dbname_);
  if (!names.ok()) return;  // retried after the next flush
  absl::flat_hash_set<uint64_t> live;
  uint64_t min_log;
  {
    absl::MutexLock l(&mu_);
    if (!bg_error_.ok()) return;  // the state on disk may be ahead of ours
    live = pending_outputs_;
    min_log = imm_.empty() ? log_number_ : imm_.front().log_number;
  }
  versions_->AddLiveFiles(&live);
  min_log = std::min(min_log, versions_->LogNumber());
  const uint64_t manifest = versions_->ManifestFileNumber();
  std::vector<uint64_t> obsolete_logs;
  for (const std::string& name : *names) {
    uint64_t number;
    FileType type;
    if (!lsm::ParseFileName(name, &number, &type)) continue;
    bool keep = true;
    switch (type) {
      case FileType::kLog:
        // The change feed's retention decides below.
        if (number < min_log) obsolete_logs.push_back(number);
        break;
      case FileType::kTable: keep = live.contains(number); break;
      case FileType::kManifest: keep = number >= manifest; break;
      case FileType::kTemp: keep = live.contains(number); break;
      default: break;
    }
    if (keep) continue;
    if (at_open) {
      info_log_->Log("open: removing %s: %s", name,
                     type == FileType::kManifest ? "a manifest a newer one replaced"
                     : type == FileType::kTable    ? "a table no version names"
                                                   : "a temporary file");
    }
    if (type == FileType::kTable) table_cache_->Evict(number);
    // Off this thread (an unlink may wait for the device's discard); a
    // file that fails to go stays until the next attempt.
    deleter_->Remove(io::JoinPath(dbname_, name));
  }
  for (uint64_t number : TakeDeletableWals(obsolete_logs)) {
    if (at_open) {
      info_log_->Log("open: removing %s: a WAL whose writes the tables hold",
                     lsm::LogFileName(dbname_, number));
    }
    deleter_->Remove(lsm::LogFileName(dbname_, number));
  }
}

absl::Status DBImpl::Flush() {
  CAIRN_RETURN_IF_ERROR(CheckWritable("Flush"));
  CAIRN_RETURN_IF_ERROR(SwitchMemTableInQueue());
  absl::MutexLock l(&mu_);
  // Until the flush is over, the files it made obsolete (its WAL) removed
  // too: a caller that lists the directory next sees no file vanish.
  while ((!imm_.empty() || flush_running_) && bg_error_.ok() && !shutting_down_) {
    background_cv_.Wait(&mu_);
  }
  if (bg_error_.ok() && !imm_.empty()) return absl::AbortedError("the database is closing");
  CAIRN_RETURN_IF_ERROR(bg_error_);
  mu_.Unlock();
  deleter_->WaitIdle();
  mu_.Lock();
  return absl::OkStatus();
}

void DBImpl::UpdatePendingCompactionBytes() {
  pending_compaction_bytes_ =
      lsm::EstimatePendingCompactionBytes(*versions_->current(), compaction_options_);
}

bool DBImpl::NeedsCompaction() {
  return PickBackgroundCompaction(*versions_->current()) != nullptr;
}

std::unique_ptr<lsm::Compaction> DBImpl::PickBackgroundCompaction(const lsm::Version& v) {
  std::unique_ptr<lsm::Compaction> c = lsm::PickCompaction(v, compaction_options_);
  if (c == nullptr && ledger_.NeedsGarbageCompaction()) {
    c = lsm::PickRangeCompaction(v, compaction_options_, 0, nullptr, nullptr);
  }
  return c;
}

void DBImpl::CompactionThread() {
  absl::MutexLock l(&mu_);
  while (true) {
    std::unique_ptr<lsm::Compaction> c;
    std::shared_ptr<const lsm::Version> base;
    while (!shutting_down_) {
      // Manual compactions go first; automatic ones wait for them.
      if (bg_error_.ok() && manual_compactions_ == 0 && !ingest_running_) {
        base = versions_->current();
        c = PickBackgroundCompaction(*base);
        if (c != nullptr) break;
        // An idle thread must not pin a version: its tables could not be
        // deleted until the next compaction.
        base.reset();
      }
      background_cv_.Wait(&mu_);
    }
    if (shutting_down_) return;
    c->SetInputsBeingCompacted(true);
    ++compactions_running_;
    mu_.Unlock();
    absl::Status s = DoCompaction(*c, std::move(base));
    mu_.Lock();
    c->SetInputsBeingCompacted(false);
    --compactions_running_;
    if (IsRetryable(s)) {
      info_log_->Log("compaction: %s; retrying", s.ToString());
      background_cv_.WaitWithTimeout(&mu_, RetryPause(0) * 10);
    } else if (!s.ok()) {
      SetBackgroundError(s);
    }
    background_cv_.SignalAll();
  }
}

lsm::TableBuilder::DataBlockSink DBImpl::NewTableBlockSink(uint64_t file_number) {
  if (!options_.cache_new_table_blocks || block_cache_->capacity() == 0) return {};
  uint64_t table_bytes = 0;
  const std::shared_ptr<const lsm::Version> v = versions_->current();
  for (int level = 0; level < lsm::kNumLevels; ++level) {
    for (const auto& f : v->files(level)) table_bytes += f->file_size;
  }
  const uint64_t half = block_cache_->capacity() / 2;
  if (table_bytes > half) return {};
  // A table that never gets installed leaves blocks that simply age out:
  // file numbers are never reused. The table being written counts too: once
  // its own blocks would take the tables past half the cache, the sink stops,
  // instead of copying blocks that only evict each other (a 64 MiB flush into
  // a 64 MiB cache cost the flush thread half its CPU).
  return [cache = block_cache_.get(), file_number, path = lsm::TableFileName(dbname_, file_number),
          room = half - table_bytes](uint64_t offset, std::string_view contents) mutable {
    if (contents.size() > room) {
      room = 0;
      return;
    }
    room -= contents.size();
    absl::StatusOr<std::shared_ptr<const lsm::Block>> block =
        lsm::Block::Create(std::string(contents), absl::StrCat(path, " block at offset ", offset));
    if (block.ok()) cache->Insert(file_number, offset, *block, (*block)->size());
  };
}

absl::Status DBImpl::DoCompaction(const lsm::Compaction& c,
                                  std::shared_ptr<const lsm::Version> base) {
  lsm::CompactionJobEnv env;
  env.fs = fs_.get();
  env.dbname = dbname_;
  env.table_cache = table_cache_.get();
  env.table_options = table_options_;
  env.new_file_number = [this] {
    const uint64_t n = versions_->NewFileNumber();
    absl::MutexLock l(&mu_);
    pending_outputs_.insert(n);
    return n;
  };
  {
    absl::MutexLock l(&mu_);
    env.snapshots.assign(snapshots_.begin(), snapshots_.end());
    env.latest_sequence = last_sequence_.load();
  }
  // Every pointer the compaction drops becomes garbage of its segment, in
  // the same manifest edit as the compaction's result.
  GarbageMeter garbage;
  env.listener = &garbage;
  // Expiry is judged at the job's start; the filter reads a separated value
  // only when it asks, through a read view of its own (whose epoch keeps
  // the segment on disk while the value is read).
  env.now_micros = expiry_clock_.NowMicros();
  std::optional<CompactionFilterAdapter> filter;
  if (options_.compaction_filter != nullptr) {
    filter.emplace(options_.compaction_filter.get(),
                   CompactionFilter::Context{.level = c.level(), .output_level = c.output_level()},
                   [this](std::string_view key, std::string_view pointer, std::string* out) {
                     const ReadView view = GetReadView(ReadOptions());
                     return vlog_->Get(key, pointer, out, /*fill_cache=*/false);
                   });
    env.filter = &*filter;
  }
  env.block_sink = [this](uint64_t number) { return NewTableBlockSink(number); };
  // Outputs' directory entries must be durable before the manifest names
  // them. Each output's sync starts on a thread of its own once the file
  // exists (a sync started after a creation covers its entry) and runs
  // beside the job; it came after the job until 2026-12-05. The
  // job's ranges call this one at a time (SerializedEnv).
  std::vector<std::future<absl::Status>> dir_syncs;
  env.output_created = [this, &dir_syncs](uint64_t) {
    dir_syncs.push_back(io::StartSyncDir(fs_.get(), dbname_));
  };
  env.max_subcompactions = options_.max_subcompactions;
  env.input_readahead = options_.compaction_readahead_size;
  lsm::VersionEdit edit;
  lsm::CompactionJobStats stats;
  absl::Status s = lsm::RunCompaction(c, *base, env, &edit, &stats);
  if (filter.has_value()) {
    counters_.filter_values_read.fetch_add(filter->values_read(), std::memory_order_relaxed);
    counters_.filter_value_bytes_read.fetch_add(filter->value_bytes_read(),
                                                std::memory_order_relaxed);
  }
  if (!s.ok() && filter.has_value() && !IsRetryable(s)) {
    info_log_->Log("compaction L%d -> L%d failed with compaction filter '%s': %s", c.level(),
                   c.output_level(), options_.compaction_filter->Name(), s.ToString());
  }
  base.reset();  // so the inputs count as obsolete below
  for (std::future<absl::Status>& synced : dir_syncs) {
    const absl::Status d = synced.get();
    if (s.ok()) s = d;
  }
  s = RetryableBeforeEdit(std::move(s));
  if (s.ok()) {
    garbage.Finish();
    s = LogAndApply(&edit, &garbage.edit());
  }
  if (s.ok()) gc_.DeadRecordsCounted(garbage.TakeDead());
  {
    absl::MutexLock l(&mu_);
    for (const auto& [level, f] : edit.new_files()) pending_outputs_.erase(f.number);
    if (s.ok()) {
      if (c.level() == 0) {
        std::vector<uint64_t> inputs;
        for (const auto& f : c.inputs(0)) inputs.push_back(f->number);
        uint64_t counted = 0;
        for (const vlog::SegmentEdit::Change& ch : garbage.edit().changes()) {
          if (ch.tag == vlog::SegmentEditTag::kAddGarbage) counted += ch.bytes;
        }
        ledger_.Level0Compacted(inputs, counted);
      }
      counters_.expired_dropped.fetch_add(stats.expired, std::memory_order_relaxed);
      counters_.filter_removed.fetch_add(stats.filter_removed, std::memory_order_relaxed);
      counters_.filter_changed.fetch_add(stats.filter_changed, std::memory_order_relaxed);
      LevelCompactionStats& ls = level_stats_[stats.output_level];
      ++ls.compactions;
      ls.micros += stats.micros;
      if (stats.trivial_move) {
        ++ls.trivial_moves;
      } else {
        ls.bytes_read_upper += stats.input_bytes[0];
        ls.bytes_read_lower += stats.input_bytes[1];
        ls.bytes_written += stats.output_bytes;
      }
    }
    UpdatePendingCompactionBytes();
  }
  if (s.ok()) {
    CompactionJobInfo info{.level = stats.level,
                           .output_level = stats.output_level,
                           .trivial_move = stats.trivial_move,
                           .input_files = stats.input_files[0] + stats.input_files[1],
                           .input_bytes = stats.input_bytes[0] + stats.input_bytes[1],
                           .output_files = stats.output_files,
                           .output_bytes = stats.output_bytes,
                           .micros = stats.micros};
    info_log_->Log("compaction: L%d -> L%d%s, %d files (%d bytes) in, %d files (%d bytes) out, "
                   "%d key ranges, in %d us",
                   info.level, info.output_level, info.trivial_move ? " (trivial move)" : "",
                   info.input_files, info.input_bytes, info.output_files, info.output_bytes,
                   stats.subcompactions, info.micros);
    NotifyListeners([&](EventListener& l) { l.OnCompactionCompleted(info); });
    // Outputs of a failed job were removed by the job; the inputs of a good
    // one are now obsolete.
    RemoveObsoleteFiles();
  }
  return s;
}

absl::Status DBImpl::CompactLevelLocked(int level, const std::string* begin,
                                        const std::string* end) {
  while (true) {
    if (!bg_error_.ok()) return bg_error_;
    if (ingest_running_) {
      background_cv_.Wait(&mu_);  // an ingestion is placing its tables
      continue;
    }
    bool blocked = false;
    std::shared_ptr<const lsm::Version> base = versions_->current();
    std::unique_ptr<lsm::Compaction> c =
        lsm::PickRangeCompaction(*base, compaction_options_, level, begin, end, &blocked);
    if (c == nullptr) {
      if (!blocked) return absl::OkStatus();
      background_cv_.Wait(&mu_);  // an automatic compaction holds the files
      continue;
    }
    c->SetInputsBeingCompacted(true);
    ++compactions_running_;
    mu_.Unlock();
    const absl::Status s = DoCompaction(*c, std::move(base));
    mu_.Lock();
    c->SetInputsBeingCompacted(false);
    --compactions_running_;
    background_cv_.SignalAll();
    // The last level compacts into itself: once is enough.
    if (!s.ok() || c->output_level() == c->level()) return s;
  }
}

absl::Status DBImpl::CompactRange(const std::string* begin, const std::string* end) {
  CAIRN_RETURN_IF_ERROR(CheckWritable("CompactRange"));
  CAIRN_RETURN_IF_ERROR(Flush());
  absl::MutexLock l(&mu_);
  ++manual_compactions_;
  absl::Status s;
  for (int level = 0; level < lsm::kNumLevels && s.ok(); ++level) {
    s = CompactLevelLocked(level, begin, end);
  }
  --manual_compactions_;
  if (!s.ok() && !IsRetryable(s)) SetBackgroundError(s);
  background_cv_.SignalAll();
  if (s.ok()) {
    // Its inputs are gone on return.
    mu_.Unlock();
    deleter_->WaitIdle();
    mu_.Lock();
  }
  return s;
}

}  // namespace cairn
