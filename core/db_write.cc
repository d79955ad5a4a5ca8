// The write path: each writer checks its batch and encodes its large values
// as value-log records in its own thread, then queues; the front one leads a
// group: places the members' records in the value log, writes the group's
// WAL record with their pointers (syncing once when any member asked; a
// synced group of small values puts the values themselves in the WAL record),
// applies it to the memtable and wakes the others (group commit, as in
// LevelDB).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "core/expiry.h"
#include "core/write_batch_internal.h"
#include "io/coding.h"
#include "io/status_macros.h"
#include "lsm/filename.h"

namespace cairn {

using lsm::SequenceNumber;
using lsm::ValueType;

// One entry of the write queue, tagged with what it is.
struct DBImpl::Writer {
  enum class Kind : uint8_t {
    kUserWrite = 0,       // a checked, prepared user batch; may join a group
    kMemTableSwitch = 1,  // switch to a new memtable (Flush), in queue order
    kGcRewrite = 2,       // GC's conditional pointer write-back; alone in its group
    kSync = 3,            // SyncWAL: a synced group of no writes; alone in its group
    kSealSegment = 4,     // GC seals the active value-log segment; alone
    kIngestionEvent = 5,  // an ingestion's event and install (db_updates.cc); alone
    kExclusive = 6,       // runs work at the front of the queue (ingestion); alone
  };
  static Writer UserWrite(const PreparedBatch* prepared, bool sync) {
    return Writer(Kind::kUserWrite, sync, prepared, nullptr);
  }
  static Writer MemTableSwitch() { return Writer(Kind::kMemTableSwitch, false, nullptr, nullptr); }
  static Writer GcRewrite(const PointerRewrite* rewrite, bool sync) {
    return Writer(Kind::kGcRewrite, sync, nullptr, rewrite);
  }
  static Writer Sync() { return Writer(Kind::kSync, true, nullptr, nullptr); }
  static Writer SealSegment() { return Writer(Kind::kSealSegment, false, nullptr, nullptr); }
  static Writer Ingestion(IngestionEventWrite* ingestion) {
    return Writer(Kind::kIngestionEvent, true, nullptr, nullptr, ingestion);
  }
  // work runs with mu_ held (it may release it) while every later writer
  // waits behind it.
  static Writer Exclusive(std::function<absl::Status()> work) {
    return Writer(Kind::kExclusive, false, nullptr, nullptr, nullptr, std::move(work));
  }

  const Kind kind;
  const bool sync;
  const PreparedBatch* const prepared;  // kUserWrite only
  const PointerRewrite* const rewrite;  // kGcRewrite only
  IngestionEventWrite* const ingestion;  // kIngestionEvent only
  const std::function<absl::Status()> work;  // kExclusive only
  bool done = false;
  absl::Status status;
  // kUserWrite: the sequence number of its batch's first entry, set by the
  // group's leader once the group is written.
  SequenceNumber first_sequence = 0;
  absl::CondVar cv;

 private:
  Writer(Kind k, bool s, const PreparedBatch* p, const PointerRewrite* r,
         IngestionEventWrite* i = nullptr, std::function<absl::Status()> wk = {})
      : kind(k), sync(s), prepared(p), rewrite(r), ingestion(i), work(std::move(wk)) {}
};

// A user batch as its writer prepared it before joining the queue: checked,
// counted, and its separated values already encoded as value-log records, so
// that the leader only places them and writes their pointers.
struct DBImpl::PreparedBatch {
  PreparedBatch(const WriteBatch& b, const vlog::RecordEncoding& encoding)
      : batch(b), records(encoding) {}

  // Where a separated value's entry lies in batch's encoding: [begin, end).
  struct Separated {
    size_t begin, end;
    std::string_view key;
    uint64_t expiry_micros = 0;  // 0: none
  };
  const WriteBatch& batch;
  absl::InlinedVector<Separated, 1> separated;  // in batch order
  vlog::PreparedRecords records;                // their records, in the same order
  uint64_t user_bytes = 0;                      // keys and values as given
  uint64_t puts = 0, deletes = 0, range_deletes = 0;
  // Bytes of its values bound for the value log, now or at their flush.
  uint64_t value_log_bytes = 0;
  bool expiring = false;  // it holds an expiring put
};

// A group stops growing at this many bytes, so one large write does not make
// many small ones wait for it (and the reverse).
constexpr size_t kMaxGroupBytes = 1 << 20;

// A synced group carries its separated values in its WAL record too while
// their entries come to at most this many bytes; larger ones sync the value
// log instead, where writing them twice would cost more than a second sync.
constexpr uint64_t kMaxSyncedValueBytesInWal = 256u << 10;

absl::Status DBImpl::Put(const WriteOptions& options, std::string_view key,
                         std::string_view value) {
  WriteBatch batch;
  batch.Put(key, value);
  return Write(options, batch);
}

absl::Status DB::PutWithTTL(const WriteOptions& options, std::string_view key,
                            std::string_view value, uint64_t ttl_seconds) {
  // The checks Write makes for a DB-wide TTL, made here for this one so that
  // 0 is refused rather than taken as "the default".
  CAIRN_RETURN_IF_ERROR(ExpiryAfter(0, ttl_seconds).status());
  WriteOptions o = options;
  o.ttl_seconds = ttl_seconds;
  return Put(o, key, value);
}

absl::Status DBImpl::Delete(const WriteOptions& options, std::string_view key) {
  WriteBatch batch;
  batch.Delete(key);
  return Write(options, batch);
}

absl::Status DBImpl::PrepareBatch(PreparedBatch* p) const {
  CAIRN_RETURN_IF_ERROR(p->batch.status());
  const size_t threshold = options_.value_separation_threshold;
  // Smaller separated values stay in the batch (WAL and memtable) until
  // their memtable's flush moves them (WriteLevel0Table), except while GC
  // collects (Options::separate_at_flush_during_gc).
  const bool as_written = !options_.separate_at_flush_during_gc && gc_.values_as_written();
  const size_t at_write_from =
      as_written ? threshold : std::max(threshold, options_.separate_at_flush_below);
  const std::string_view rep = WriteBatchInternal::Contents(p->batch);
  size_t begin = kBatchHeaderSize;
  // One pass: the checks (a batch rebuilt with WriteBatchInternal's
  // SetContents bypasses Put's), the counts, and each large value encoded
  // as its value-log record, here in the writer's thread.
  return WriteBatchInternal::ForEach(
      p->batch, [&](SequenceNumber, ValueType type, std::string_view key,
                    std::string_view stored) -> absl::Status {
        if (lsm::WithoutExpiry(type) == ValueType::kValuePointer) {
          return absl::InvalidArgumentError("write batch holds an internal value pointer");
        }
        // The views point into rep: the entry ends where its last field does.
        const std::string_view last = type == ValueType::kDeletion ? key : stored;
        const size_t end = static_cast<size_t>(last.data() + last.size() - rep.data());
        // An expiring put (ForEach checked its expiry) is separated and
        // counted by its value alone.
        lsm::StoredValue sv;
        lsm::SplitStoredValue(type, stored, &sv);
        const std::string_view value = sv.payload;
        if (lsm::HasExpiry(type)) p->expiring = true;
        type = sv.type;
        if (type == ValueType::kRangeDeletion) {
          CAIRN_RETURN_IF_ERROR(WriteBatchInternal::CheckRange(key, value));
        } else {
          CAIRN_RETURN_IF_ERROR(WriteBatchInternal::CheckSizes(key, value));
        }
        p->user_bytes += key.size() + value.size();
        ++(type == ValueType::kDeletion        ? p->deletes
           : type == ValueType::kRangeDeletion ? p->range_deletes
                                               : p->puts);
        if (threshold != kInlineValues && type == ValueType::kValue && value.size() >= threshold) {
          p->value_log_bytes += value.size();
        }
        if (threshold != kInlineValues && type == ValueType::kValue &&
            value.size() >= at_write_from) {
          // Room for every record the rest of the batch can need (headers,
          // zstd's bound and chunk tables are under 1/64 more), so no record
          // is moved once written.
          if (p->records.empty()) p->records.Reserve((rep.size() - begin) * 65 / 64 + 256);
          CAIRN_RETURN_IF_ERROR(p->records.Add(key, value));
          p->separated.push_back({begin, end, key, sv.expiry_micros});
        }
        begin = end;
        return absl::OkStatus();
      });
}

absl::Status DBImpl::Write(const WriteOptions& options, const WriteBatch& batch) {
  return Write(options, batch, nullptr);
}

absl::Status DBImpl::Write(const WriteOptions& options, const WriteBatch& batch,
                           uint64_t* first_sequence) {
  CAIRN_RETURN_IF_ERROR(CheckWritable("write"));
  // A TTL, the write's or the DB's, makes each plain put of the batch
  // expire (a copy of the batch; puts with an expiry of their own keep it).
  const uint64_t ttl =
      options.ttl_seconds != 0 ? options.ttl_seconds : options_.default_ttl_seconds;
  WriteBatch expiring;
  const WriteBatch* to_write = &batch;
  if (ttl != 0) {
    CAIRN_RETURN_IF_ERROR(batch.status());
    CAIRN_ASSIGN_OR_RETURN(const uint64_t expiry, ExpiryAfter(expiry_clock_.NowMicros(), ttl));
    CAIRN_RETURN_IF_ERROR(WriteBatchInternal::WithExpiry(batch, expiry, &expiring));
    to_write = &expiring;
  }
  PreparedBatch prepared(*to_write, vlog_->encoding());
  CAIRN_RETURN_IF_ERROR(PrepareBatch(&prepared));
  if (prepared.expiring) expiring_entries_seen_.store(true, std::memory_order_relaxed);
  if (batch.Count() == 0) {
    if (first_sequence != nullptr) *first_sequence = last_sequence_.load() + 1;
    return absl::OkStatus();
  }
  Writer w = Writer::UserWrite(&prepared, options.sync);
  absl::Status s = WriteImpl(&w);
  if (s.ok() && first_sequence != nullptr) *first_sequence = w.first_sequence;
  return s;
}

uint64_t DBImpl::GetLatestSequenceNumber() { return last_sequence_.load(std::memory_order_acquire); }

absl::Status DBImpl::SwitchMemTableInQueue() {
  Writer w = Writer::MemTableSwitch();
  return WriteImpl(&w);
}

absl::Status DBImpl::RunExclusiveInQueue(std::function<absl::Status()> work) {
  Writer w = Writer::Exclusive(std::move(work));
  return WriteImpl(&w);
}

absl::Status DBImpl::WritePointerRewrite(const PointerRewrite& rewrite, bool sync) {
  // A job syncs its last rewrite only, which makes its earlier ones durable
  // with it, before its final edit marks the victims obsolete
  // (GcCoordinator::JobIndex::LogSegmentEdit, core/gc_job_index.cc).
  if (!expiring_entries_seen_.load(std::memory_order_relaxed) &&
      options_.compaction_filter == nullptr) {
    Writer w = Writer::GcRewrite(&rewrite, sync);
    return WriteImpl(&w);
  }
  // Expiring entries may be among the keys: their rewrites keep their
  // expiry (BuildRewriteBatch). And a compaction may have changed a key
  // since GC saw it live without a write (an expired entry made a
  // tombstone, a filter's removal or change): that key is not rewritten.
  std::vector<uint64_t> expiries;
  CAIRN_RETURN_IF_ERROR(FindRewriteExpiries(rewrite, &expiries));
  PointerRewrite with_expiries = rewrite;
  with_expiries.expiries = expiries;
  Writer w = Writer::GcRewrite(&with_expiries, sync);
  return WriteImpl(&w);
}

absl::Status DBImpl::SyncWAL() {
  CAIRN_RETURN_IF_ERROR(CheckWritable("SyncWAL"));
  return SyncWalInQueue();
}

absl::Status DBImpl::SyncWalInQueue() {
  // Through the queue: only a group's leader touches the WAL and the value
  // log's buffers, and a sync must cover every write acknowledged before it.
  Writer w = Writer::Sync();
  return WriteImpl(&w);
}

absl::StatusOr<SequenceNumber> DBImpl::LogIngestionEvent(
    const std::vector<std::string>& files,
    absl::FunctionRef<absl::Status(SequenceNumber)> install) {
  CAIRN_RETURN_IF_ERROR(CheckWritable("ingestion"));
  IngestionEventWrite ingestion{.files = &files, .install = &install};
  Writer w = Writer::Ingestion(&ingestion);
  CAIRN_RETURN_IF_ERROR(WriteImpl(&w));
  return ingestion.sequence;
}

absl::Status DBImpl::SealActiveSegmentInQueue() {
  // Through the queue: only a group's leader touches the active segment.
  Writer w = Writer::SealSegment();
  return WriteImpl(&w);
}

absl::Status DBImpl::WriteImpl(Writer* w) {
  absl::MutexLock l(&mu_);
  // Before joining the queue: a user write held for value-log space must not
  // hold up GC's rewrites, which queue here too and are what ends the stall.
  // Only a write that adds to the value log waits: deletions and inline
  // values take no space there, and holding them back frees none.
  if (w->kind == Writer::Kind::kUserWrite && w->prepared->value_log_bytes > 0) {
    CAIRN_RETURN_IF_ERROR(WaitForValueLogSpace(w->prepared->batch.ApproximateSize()));
  }
  writers_.push_back(w);
  while (!w->done && w != writers_.front()) w->cv.Wait(&mu_);
  if (w->done) return w->status;

  // This writer leads a group. A sync writes nothing, so it needs no room,
  // nor does a seal.
  absl::Status status =
      w->kind == Writer::Kind::kSync || w->kind == Writer::Kind::kSealSegment ||
              w->kind == Writer::Kind::kIngestionEvent || w->kind == Writer::Kind::kExclusive
          ? bg_error_
          : MakeRoomForWrite(/*force=*/w->kind == Writer::Kind::kMemTableSwitch);
  Writer* last_writer = w;
  if (status.ok() && w->kind == Writer::Kind::kExclusive) {
    status = w->work();
  } else if (status.ok() && w->kind == Writer::Kind::kSealSegment) {
    // Later writers queue behind us meanwhile. The WAL records that point
    // into the segment are covered: its values are synced now.
    mu_.Unlock();
    status = vlog_->SealActiveSegment();
    mu_.Lock();
    if (status.ok()) {
      wal_names_unsynced_values_ = false;
    } else {
      // The segment's durability is unknown, as after a failed sync in a
      // memtable switch: writes stop.
      SetBackgroundError(status);
    }
  } else if (status.ok() && w->kind == Writer::Kind::kIngestionEvent) {
    status = WriteIngestionEvent(w->ingestion);
  } else if (status.ok() && w->kind != Writer::Kind::kMemTableSwitch) {
    status = WriteGroup(w, &last_writer);
  }
  while (true) {
    Writer* ready = writers_.front();
    writers_.pop_front();
    if (ready != w) {
      ready->status = status;
      ready->done = true;
      ready->cv.Signal();
    }
    if (ready == last_writer) break;
  }
  if (!writers_.empty()) writers_.front()->cv.Signal();
  return status;
}

absl::Status DBImpl::WriteGroup(Writer* leader, Writer** last_writer) {
  absl::InlinedVector<const PreparedBatch*, 8> members;
  ReadView view;
  if (leader->kind == Writer::Kind::kGcRewrite) {
    // Alone in its group; the batch is built from the state as of now.
    // mem_ is installed in the current SuperVersion whenever it changes
    // under mu_ (held here), so the view has every earlier write.
    view = GetReadView(ReadOptions(), /*owned=*/true);
    view.table_read.expect_hits = true;  // GC's keys are nearly all there
  } else if (leader->kind == Writer::Kind::kSync) {
    // Alone in its group: an empty, synced one.
  } else {
    *last_writer = PickGroup(&members);
  }
  const SequenceNumber first = last_sequence_.load() + 1;
  bool sync = false;
  for (Writer* x : writers_) {
    sync |= x->sync;
    if (x == *last_writer) break;
  }
  lsm::LogWriter* log = log_.get();
  // A sync covers the closed WALs not yet synced first, oldest first: a
  // synced write must never follow an unsynced one that a power loss could
  // take (recovery stops at the first WAL without its end record).
  std::vector<std::shared_ptr<lsm::LogWriter>> closed_logs;
  if (sync) closed_logs = UnsyncedClosedLogs();
  // Once they are synced, every write they hold is durable (they are a
  // suffix of imm_, so the newest closed WAL is imm_'s last).
  const SequenceNumber closed_through =
      closed_logs.empty() ? 0 : std::max(wal_synced_sequence_, imm_.back().last_sequence);
  std::shared_ptr<lsm::MemTable> mem = mem_;
  WriteBatch* group = &group_batch_;
  absl::Status status;
  {
    // Later writers queue behind us meanwhile; only the leader touches the
    // logs, the group batch and the memtable, so mu_ is not needed here.
    mu_.Unlock();
    group->Clear();
    if (leader->kind == Writer::Kind::kGcRewrite) {
      status = BuildRewriteBatch(*leader->rewrite, view, group);
    } else if (leader->kind == Writer::Kind::kSync) {
      // Nothing to place: the group only syncs.
    } else {
      // Values reach the kernel (below) before the WAL record that points
      // to them.
      status = PlaceGroup(members, group);
    }
    WriteBatchInternal::SetSequence(group, first);
    // A synced group of small separated values also carries the values in
    // its WAL record, so that the WAL's fdatasync alone makes it durable, as
    // RocksDB's does: the value log's copy is then not synced for it. Only
    // while no WAL record written since the last sync of the value log
    // points into it: syncing the WAL makes such records durable, and their
    // values must be too (docs/durability.md, "Synced groups").
    uint64_t separated_bytes = 0;
    for (const PreparedBatch* m : members) {
      for (const PreparedBatch::Separated& x : m->separated) separated_bytes += x.end - x.begin;
    }
    const bool values_in_wal = status.ok() && sync && leader->kind == Writer::Kind::kUserWrite &&
                               !wal_names_unsynced_values_ && separated_bytes > 0 &&
                               separated_bytes <= kMaxSyncedValueBytesInWal;
    const WriteBatch* wal_record = group;
    if (values_in_wal) {
      BuildValuesRecord(members, &wal_values_batch_);
      WriteBatchInternal::SetSequence(&wal_values_batch_, first);
      wal_record = &wal_values_batch_;
    }
    const bool points_to_new_values = separated_bytes > 0 && !values_in_wal;
    // (Placing may have rolled the segment.)
    io::WritableFile* vfile = vlog_->active_file();
    const bool vlog_sync =
        sync && vfile != nullptr && (wal_names_unsynced_values_ || points_to_new_values);
    // A synced group on an O_DIRECT segment puts its values' write and the
    // segment's fdatasync in flight now (one linked pair on the ring), to
    // run while the WAL record is written and synced. Both are complete
    // before any writer is woken.
    const bool overlap_sync = vlog_sync && vfile->direct();
    bool vlog_sync_started = false;
    if (status.ok()) {
      if (overlap_sync) {
        status = vfile->StartSync();
        vlog_sync_started = status.ok();
      } else {
        status = vlog_->Flush();
      }
    }
    for (const std::shared_ptr<lsm::LogWriter>& closed : closed_logs) {
      if (status.ok()) status = closed->Sync();
    }
    if (status.ok() && !closed_logs.empty()) {
      // Only now that their syncs completed: a sync record that survives
      // in the live WAL proves they were durable whole, so recovery takes
      // one of them cut or damaged for lost synced writes, not for a power
      // cut's unsynced suffix (docs/wal_format.md, "Sync records").
      status = log->AddRecord(WriteBatchInternal::SyncRecord(
          WriteBatchInternal::SyncKind::kOlderWalsWhole, closed_through));
    }
    if (status.ok() && wal_record->Count() > 0) {
      const std::string_view contents = WriteBatchInternal::Contents(*wal_record);
      status = log->AddRecord(contents);
      wal_unsynced_bytes_.fetch_add(contents.size(), std::memory_order_relaxed);
    }
    if (status.ok()) {
      if (!sync) {
        // Still reaches the kernel before it is acknowledged, so it
        // survives a crash of this process.
        status = log->Flush();
      } else if (overlap_sync || !vlog_sync) {
        status = log->Sync();
      } else {
        // Both fdatasyncs in flight together; every value any WAL record
        // points to is covered, not only this group's.
        io::WritableFile* files[] = {log->file(), vfile};
        status = fs_->SyncFiles(files);
      }
    }
    if (vlog_sync_started) {
      absl::Status s = vfile->WaitSync();
      if (status.ok()) status = s;
    }
    if (status.ok()) {
      if (vlog_sync) {
        wal_names_unsynced_values_ = false;
      } else if (points_to_new_values) {
        wal_names_unsynced_values_ = true;
      }
    }
    if (status.ok()) {
      status = InsertGroup(mem.get(), *group, leader->kind == Writer::Kind::kGcRewrite);
    }
    if (status.ok()) {
      uint64_t user_bytes = 0, puts = 0, deletes = 0, range_deletes = 0;
      for (const PreparedBatch* m : members) {
        user_bytes += m->user_bytes;
        puts += m->puts;
        deletes += m->deletes;
        range_deletes += m->range_deletes;
      }
      counters_.range_deletes.fetch_add(range_deletes, std::memory_order_relaxed);
      counters_.bytes_written.fetch_add(user_bytes, std::memory_order_relaxed);
      counters_.puts.fetch_add(puts, std::memory_order_relaxed);
      counters_.deletes.fetch_add(deletes, std::memory_order_relaxed);
    }
    mu_.Lock();
  }
  if (status.ok()) {
    if (group->Count() > 0) {
      last_sequence_.store(first + group->Count() - 1, std::memory_order_release);
    }
    // Each member's entries follow the previous member's in the group.
    SequenceNumber next = first;
    for (Writer* x : writers_) {
      if (x->kind == Writer::Kind::kUserWrite && !members.empty()) {
        x->first_sequence = next;
        next += x->prepared->batch.Count();
      }
      if (x == *last_writer) break;
    }
    // The manifest's last sequence counts only synced writes: recovery
    // refuses a WAL that ends before it (docs/durability.md, "Recovery").
    // A synced group covers every earlier write, even when it wrote
    // nothing itself (GC's last rewrite of a job, all lost to newer
    // writes).
    if (sync) {
      versions_->SetLastSequence(last_sequence_.load());
      wal_synced_sequence_ = last_sequence_.load();
      MarkLogsSynced(closed_logs);
      wal_unsynced_bytes_.store(0, std::memory_order_relaxed);
    }
  } else {
    // The WAL may now hold a record the memtable does not (or a sync
    // failed): stop accepting writes until the DB is reopened.
    SetBackgroundError(status);
  }
  group->Clear();
  return status;
}

DBImpl::Writer* DBImpl::PickGroup(absl::InlinedVector<const PreparedBatch*, 8>* members) {
  Writer* first = writers_.front();
  members->push_back(first->prepared);
  size_t size = first->prepared->batch.ApproximateSize();
  // A small first write does not wait behind a big group.
  const size_t max_size = size <= (128 << 10) ? size + (128 << 10) : kMaxGroupBytes;
  Writer* last = first;
  for (auto it = writers_.begin() + 1; it != writers_.end(); ++it) {
    Writer* w = *it;
    // A memtable switch or a rewrite goes alone.
    if (w->kind != Writer::Kind::kUserWrite) break;
    // A sync write does not join a non-sync leader's group, which is not
    // synced.
    if (w->sync && !first->sync) break;
    size += w->prepared->batch.ApproximateSize();
    if (size > max_size) break;
    members->push_back(w->prepared);
    last = w;
  }
  return last;
}

absl::Status DBImpl::PlaceGroup(absl::Span<const PreparedBatch* const> members,
                                WriteBatch* group) {
  // The members' records, one append each; their pointers in the same order.
  absl::InlinedVector<const vlog::PreparedRecords*, 8> records;
  for (const PreparedBatch* m : members) {
    if (!m->records.empty()) records.push_back(&m->records);
  }
  std::vector<vlog::ValuePointer> pointers;
  if (!records.empty()) CAIRN_RETURN_IF_ERROR(vlog_->AppendPrepared(records, &pointers));
  // The group is the members' entries copied as they are, except that each
  // separated value's entry becomes a pointer entry. The callers' batches
  // are const, and the sequence number is written into the group's header.
  size_t next = 0;
  uint32_t count = 0;
  std::string ptr;
  for (const PreparedBatch* m : members) {
    const std::string_view rep = WriteBatchInternal::Contents(m->batch);
    size_t from = kBatchHeaderSize;
    for (const PreparedBatch::Separated& s : m->separated) {
      WriteBatchInternal::AppendEntries(group, rep.substr(from, s.begin - from));
      ptr.clear();
      if (s.expiry_micros != 0) io::PutFixed64(&ptr, s.expiry_micros);
      pointers[next++].EncodeTo(&ptr);
      const ValueType t =
          s.expiry_micros != 0 ? ValueType::kValuePointerWithExpiry : ValueType::kValuePointer;
      WriteBatchInternal::AddEntry(group, t, s.key, ptr);
      from = s.end;
    }
    WriteBatchInternal::AppendEntries(group, rep.substr(from));
    count += m->batch.Count();
  }
  WriteBatchInternal::SetCount(group, count);
  return absl::OkStatus();
}

void DBImpl::BuildValuesRecord(absl::Span<const PreparedBatch* const> members,
                               WriteBatch* record) {
  record->Clear();
  uint32_t count = 0;
  for (const PreparedBatch* m : members) {
    WriteBatchInternal::AppendEntries(
        record, WriteBatchInternal::Contents(m->batch).substr(kBatchHeaderSize));
    count += m->batch.Count();
  }
  WriteBatchInternal::SetCount(record, count);
}

absl::Status DBImpl::InsertGroup(lsm::MemTable* mem, const WriteBatch& group, bool gc_rewrite) {
  // Only a memtable that holds pointers can hide value-log garbage; inline
  // mode pays nothing here.
  const bool mem_has_pointers = ledger_.MemHasPointers();
  const bool separated = options_.value_separation_threshold != kInlineValues;
  const size_t threshold = options_.value_separation_threshold;
  uint64_t named = 0, superseded = 0, deletions = 0, for_flush = 0;
  // GC's rewrites come in key order: each insert searches from the last.
  lsm::MemTable::Cursor cursor;
  // One pass: each entry's insert, which also finds the entry it supersedes
  // (no second search), then its counts. The group's pointers were made by
  // this process and its entries checked on entry; a pointer that does not
  // decode names nothing.
  absl::Status s = WriteBatchInternal::ForEach(
      group, [&](SequenceNumber seq, ValueType t, std::string_view k, std::string_view stored) {
        const bool deletion = t == ValueType::kDeletion && separated;
        if (mem_has_pointers || deletion) {
          lsm::MemTable::Superseded old;
          const bool found = mem->AddAndFindSuperseded(seq, t, k, stored, &old, &cursor);
          lsm::StoredValue old_sv;
          if (found && lsm::SplitStoredValue(old.type, old.value, &old_sv) &&
              old_sv.type == ValueType::kValuePointer) {
            if (auto p = vlog::DecodeValuePointer(old_sv.payload); p.ok()) superseded += p->size;
          }
          // A deletion may hide a value in the tables below only when it is
          // the key's first entry here: what it supersedes in the memtable
          // is counted above, or is a deletion already counted.
          if (deletion && !found) ++deletions;
        } else {
          mem->Add(seq, t, k, stored, &cursor);
        }
        // Counted by the value, without its expiry.
        lsm::StoredValue sv;
        lsm::SplitStoredValue(t, stored, &sv);
        const std::string_view v = sv.payload;
        t = sv.type;
        if (t == ValueType::kValuePointer) {
          if (auto p = vlog::DecodeValuePointer(v); p.ok()) named += p->size;
        } else if (separated && t == ValueType::kValue && v.size() >= threshold) {
          for_flush += vlog::RecordSize(k.size(), v.size());  // the flush's record
        }
        return absl::OkStatus();
      });
  ledger_.GroupInserted({.named = named,
                         .gc_rewrite = gc_rewrite,
                         .superseded = superseded,
                         .deletions = deletions,
                         .for_flush = for_flush});
  return s;
}

absl::Status DBImpl::InsertInto(lsm::MemTable* mem, const WriteBatch& batch) {
  lsm::MemTable::Cursor cursor;  // GC's rewrites replay in key order
  return WriteBatchInternal::ForEach(
      batch, [mem, &cursor](SequenceNumber seq, ValueType type, std::string_view key,
                            std::string_view value) {
        mem->Add(seq, type, key, value, &cursor);
        return absl::OkStatus();
      });
}

absl::Status DBImpl::NewLog() {
  // The values the old WAL points to are synced first: recovery reads a
  // value missing behind any WAL but the newest as damage. The old WAL
  // itself is not synced. It ends in an end record, handed to the kernel,
  // and stays open until a sync covers it (every sync syncs the closed WALs
  // first) or its memtable's flush makes it obsolete. Under non-sync writes
  // its bytes then never need to reach the device: the flush writes the
  // values again anyway. Recovery tells such a WAL cut by a power loss by
  // its missing end record: every write after the cut, in it and in newer
  // WALs, was never synced, and is the suffix a power loss may take
  // (docs/durability.md, "WAL switches").
  //
  // The syncs below wait for the device, so they run without the DB
  // mutex: only this write leader touches the WAL and the value log's
  // active segment, and nothing else changes until the switch below,
  // while flushes, compactions and GC, which take the mutex for their
  // edits, go on meanwhile. The new WAL, numbered above the live one, is
  // no obsolete file to RemoveObsoleteFiles.
  const uint64_t number = versions_->NewFileNumber();
  const std::string path = lsm::LogFileName(dbname_, number);
  const SequenceNumber synced = wal_synced_sequence_;
  switch_running_ = true;
  mu_.Unlock();
  absl::StatusOr<std::unique_ptr<lsm::LogWriter>> created = [&]()
      -> absl::StatusOr<std::unique_ptr<lsm::LogWriter>> {
    CAIRN_RETURN_IF_ERROR(vlog_->Sync());
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file,
                           fs_->NewWritableFile(path, {.category = io::IoCategory::kWal,
                                                       .writeback_bytes = options_.wal_bytes_per_sync,
                                                       .prefill_bytes = options_.wal_prefill_bytes}));
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<lsm::LogWriter> log,
                           lsm::LogWriter::Create(std::move(file), number));
    // What the syncs so far made durable, synced with the header at no
    // extra cost: a cut below it in an older WAL is then damage, not the
    // unsynced suffix a power cut takes (docs/wal_format.md, "Sync records").
    CAIRN_RETURN_IF_ERROR(log->AddRecord(
        WriteBatchInternal::SyncRecord(WriteBatchInternal::SyncKind::kSwitch, synced)));
    // The new WAL's header and directory entry must be durable before any
    // sync write in it is acknowledged; a synced header also means a crash
    // can only tear records, never the header.
    CAIRN_RETURN_IF_ERROR(log->Sync());
    CAIRN_RETURN_IF_ERROR(fs_->SyncDir(dbname_));
    return log;
  }();
  mu_.Lock();
  switch_running_ = false;
  background_cv_.SignalAll();
  // The values the old WAL names are synced (and the new WAL holds no
  // record yet); on failure the flag stays as it was.
  if (created.ok()) wal_names_unsynced_values_ = false;
  if (!created.ok()) {
    // Never leave a WAL numbered above the live one: recovery would take it
    // for the newest.
    fs_->RemoveFile(path).IgnoreError();
    return created.status();
  }
  // Only once the new WAL exists and is durable: recovery takes an end
  // record in the newest WAL for proof that a newer one went missing.
  absl::Status ended = log_->AddRecord(WriteBatchInternal::EndRecord(last_sequence_.load()));
  if (ended.ok()) ended = log_->Flush();
  if (!ended.ok()) {
    // The end record may have reached the old WAL, so the new one (synced,
    // empty) stays: replay finds the old WAL ended, or cut before its end
    // record, and nothing after it. Writes stop here (the caller's
    // background error), so no record follows in either WAL.
    return ended;
  }
  std::shared_ptr<lsm::LogWriter> closed(std::move(log_));
  log_ = *std::move(created);
  const SpaceLedger::SwitchedMemTable switched = ledger_.MemTableSwitched();
  imm_.push_back({std::move(mem_), log_number_, switched.value_bytes, switched.deleted_bytes,
                  std::move(closed), last_sequence_.load(), switched.flush_value_bytes});
  log_number_ = number;
  // The first sequence the new WAL can hold (the change feed's start).
  wal_first_sequence_[number] = last_sequence_.load() + 1;
  mem_ = NewMemTable();
  InstallSuperVersionLocked();
  background_cv_.SignalAll();
  return absl::OkStatus();
}

std::vector<std::shared_ptr<lsm::LogWriter>> DBImpl::UnsyncedClosedLogs() const {
  std::vector<std::shared_ptr<lsm::LogWriter>> logs;
  for (const ImmutableMemTable& imm : imm_) {
    if (imm.unsynced_log != nullptr) logs.push_back(imm.unsynced_log);
  }
  return logs;
}

void DBImpl::MarkLogsSynced(absl::Span<const std::shared_ptr<lsm::LogWriter>> logs) {
  for (ImmutableMemTable& imm : imm_) {
    if (std::find(logs.begin(), logs.end(), imm.unsynced_log) != logs.end()) {
      imm.unsynced_log.reset();
    }
  }
}

}  // namespace cairn
