// The write path: writers queue, the front one leads a group, writes the
// group's WAL record (syncing once when any member asked), applies it to the
// memtable and wakes the others (group commit, as in LevelDB).
#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "core/write_batch_internal.h"
#include "io/status_macros.h"

namespace cairn {

using lsm::SequenceNumber;
using lsm::ValueType;

struct DBImpl::Writer {
  Writer(const WriteBatch* b, bool s, const PointerRewrite* r) : batch(b), sync(s), rewrite(r) {}
  const WriteBatch* batch;  // null: a memtable switch or a pointer rewrite
  const bool sync;
  const PointerRewrite* rewrite;
  bool done = false;
  absl::Status status;
  absl::CondVar cv;
};

// A group stops growing at this many bytes, so one large write does not make
// many small ones wait for it (and the reverse).
constexpr size_t kMaxGroupBytes = 1 << 20;

absl::Status DBImpl::Put(const WriteOptions& options, std::string_view key,
                         std::string_view value) {
  WriteBatch batch;
  batch.Put(key, value);
  return Write(options, batch);
}

absl::Status DBImpl::Delete(const WriteOptions& options, std::string_view key) {
  WriteBatch batch;
  batch.Delete(key);
  return Write(options, batch);
}

absl::Status DBImpl::CheckBatch(const WriteBatch& batch) const {
  CAIRN_RETURN_IF_ERROR(batch.status());
  // A batch rebuilt with WriteBatchInternal (SetContents) bypasses Put.
  return WriteBatchInternal::ForEach(
      batch, [](SequenceNumber, ValueType type, std::string_view key,
                std::string_view value) -> absl::Status {
        CAIRN_RETURN_IF_ERROR(WriteBatchInternal::CheckSizes(key, value));
        if (type == ValueType::kValuePointer) {
          return absl::InvalidArgumentError("write batch holds an internal value pointer");
        }
        return absl::OkStatus();
      });
}

absl::Status DBImpl::Write(const WriteOptions& options, const WriteBatch& batch) {
  CAIRN_RETURN_IF_ERROR(CheckWritable("write"));
  CAIRN_RETURN_IF_ERROR(CheckBatch(batch));
  if (batch.Count() == 0) return absl::OkStatus();
  return WriteImpl(options, &batch);
}

absl::Status DBImpl::WriteImpl(const WriteOptions& options, const WriteBatch* batch,
                               const PointerRewrite* rewrite) {
  Writer w(batch, options.sync, rewrite);
  absl::MutexLock l(&mu_);
  // Before joining the queue: a user write held for value-log space must not
  // hold up GC's rewrites, which queue here too and are what ends the stall.
  if (batch != nullptr) CAIRN_RETURN_IF_ERROR(WaitForValueLogSpace(batch->ApproximateSize()));
  writers_.push_back(&w);
  while (!w.done && &w != writers_.front()) w.cv.Wait(&mu_);
  if (w.done) return w.status;

  // This writer leads a group.
  absl::Status status = MakeRoomForWrite(/*force=*/batch == nullptr && rewrite == nullptr);
  Writer* last_writer = &w;
  if (status.ok() && (batch != nullptr || rewrite != nullptr)) {
    WriteBatch* group;
    ReadView view;
    if (rewrite != nullptr) {
      // Alone in its group; the batch is built from the state as of now.
      group_batch_.Clear();
      group = &group_batch_;
      // mem_ is installed in the current SuperVersion whenever it changes
      // under mu_ (held here), so the view has every earlier write.
      view = GetReadView(ReadOptions(), /*owned=*/true);
    } else {
      group = BuildBatchGroup(&last_writer);
    }
    const SequenceNumber first = last_sequence_.load() + 1;
    bool sync = false;
    for (Writer* x : writers_) {
      sync |= x->sync;
      if (x == last_writer) break;
    }
    lsm::LogWriter* log = log_.get();
    std::shared_ptr<lsm::MemTable> mem = mem_;
    {
      // Later writers queue behind us meanwhile; only the leader touches the
      // logs and inserts into the memtable, so mu_ is not needed here.
      mu_.Unlock();
      if (rewrite != nullptr) status = BuildRewriteBatch(*rewrite, view, group);
      WriteBatchInternal::SetSequence(group, first);
      const uint64_t user_bytes = rewrite != nullptr ? 0 : UserBytes(*group);
      if (status.ok()) status = SeparateValues(group);
      // Values reach the kernel before the WAL record that points to them.
      if (status.ok()) status = vlog_->Flush();
      if (status.ok() && group->Count() > 0) {
        status = log->AddRecord(WriteBatchInternal::Contents(*group));
      }
      if (status.ok()) {
        if (!sync) {
          // Still reaches the kernel before it is acknowledged, so it
          // survives a crash of this process.
          status = log->Flush();
        } else if (io::WritableFile* vfile = vlog_->active_file()) {
          // Both fdatasyncs in flight together; every value any WAL record
          // points to is covered, not only this group's.
          io::WritableFile* files[] = {log->file(), vfile};
          status = fs_->SyncFiles(files);
        } else {
          status = log->Sync();
        }
      }
      if (status.ok()) CountMemTableValueBytes(*mem, *group);
      if (status.ok()) status = InsertInto(mem.get(), *group);
      if (status.ok()) user_bytes_written_.fetch_add(user_bytes, std::memory_order_relaxed);
      mu_.Lock();
    }
    if (status.ok()) {
      if (group->Count() > 0) {
        last_sequence_.store(first + group->Count() - 1, std::memory_order_release);
      }
      // The manifest's last sequence counts only synced writes: recovery
      // refuses a WAL that ends before it (docs/durability.md, "Recovery").
      // A synced group covers every earlier write, even when it wrote
      // nothing itself (GC's last rewrite of a job, all lost to newer
      // writes).
      if (sync) versions_->SetLastSequence(last_sequence_.load());
    } else {
      // The WAL may now hold a record the memtable does not (or a sync
      // failed): stop accepting writes until the DB is reopened.
      SetBackgroundError(status);
    }
    group_batch_.Clear();
  }

  while (true) {
    Writer* ready = writers_.front();
    writers_.pop_front();
    if (ready != &w) {
      ready->status = status;
      ready->done = true;
      ready->cv.Signal();
    }
    if (ready == last_writer) break;
  }
  if (!writers_.empty()) writers_.front()->cv.Signal();
  return status;
}

WriteBatch* DBImpl::BuildBatchGroup(Writer** last_writer) {
  // The group is always a copy: the callers' batches are const, and the
  // sequence number is written into the group's header.
  Writer* first = writers_.front();
  group_batch_.Clear();
  WriteBatchInternal::Append(&group_batch_, *first->batch);
  size_t size = first->batch->ApproximateSize();
  // A small first write does not wait behind a big group.
  const size_t max_size = size <= (128 << 10) ? size + (128 << 10) : kMaxGroupBytes;
  *last_writer = first;
  for (auto it = writers_.begin() + 1; it != writers_.end(); ++it) {
    Writer* w = *it;
    if (w->batch == nullptr) break;  // a memtable switch or a rewrite goes alone
    // A sync write does not join a non-sync leader's group, which is not
    // synced.
    if (w->sync && !first->sync) break;
    size += w->batch->ApproximateSize();
    if (size > max_size) break;
    WriteBatchInternal::Append(&group_batch_, *w->batch);
    *last_writer = w;
  }
  return &group_batch_;
}

uint64_t DBImpl::UserBytes(const WriteBatch& batch) {
  uint64_t bytes = 0;
  // The batch was checked on entry; ForEach cannot fail on it.
  WriteBatchInternal::ForEach(batch, [&](SequenceNumber, ValueType t, std::string_view k,
                                         std::string_view v) {
    bytes += k.size() + v.size();
    (t == ValueType::kDeletion ? deletes_ : puts_).fetch_add(1, std::memory_order_relaxed);
    return absl::OkStatus();
  }).IgnoreError();
  return bytes;
}

absl::Status DBImpl::SeparateValues(WriteBatch* group) {
  const size_t threshold = options_.value_separation_threshold;
  if (threshold == kInlineValues) return absl::OkStatus();
  bool any = false;
  CAIRN_RETURN_IF_ERROR(WriteBatchInternal::ForEach(
      *group, [&](SequenceNumber, ValueType t, std::string_view, std::string_view v) {
        any |= t == ValueType::kValue && v.size() >= threshold;
        return absl::OkStatus();
      }));
  if (!any) return absl::OkStatus();
  // Rebuild the group with large values replaced by pointers; each value's
  // bytes are written once, to the value log.
  WriteBatch rewritten;
  WriteBatchInternal::SetSequence(&rewritten, WriteBatchInternal::Sequence(*group));
  CAIRN_RETURN_IF_ERROR(WriteBatchInternal::ForEach(
      *group, [&](SequenceNumber, ValueType t, std::string_view k,
                  std::string_view v) -> absl::Status {
        if (t == ValueType::kValue && v.size() >= threshold) {
          CAIRN_ASSIGN_OR_RETURN(std::string ptr, vlog_->Append(k, v));
          WriteBatchInternal::AddEntry(&rewritten, ValueType::kValuePointer, k, ptr);
        } else {
          WriteBatchInternal::AddEntry(&rewritten, t, k, v);
        }
        return absl::OkStatus();
      }));
  *group = std::move(rewritten);
  return absl::OkStatus();
}

void DBImpl::CountMemTableValueBytes(const lsm::MemTable& mem, const WriteBatch& group) {
  // Only a memtable that holds pointers can hide value-log garbage; inline
  // mode pays nothing here.
  const bool mem_has_pointers = mem_value_bytes_.load(std::memory_order_relaxed) > 0;
  uint64_t named = 0, superseded = 0;
  std::string old;
  // The group's pointers were made by this process and its entries
  // checked on entry; a pointer that does not decode names nothing.
  WriteBatchInternal::ForEach(group, [&](SequenceNumber, ValueType t, std::string_view k,
                                         std::string_view v) {
    if (mem_has_pointers) {
      ValueType old_type;
      SequenceNumber old_seq;
      if (mem.Get(k, lsm::kMaxSequenceNumber, &old_type, &old_seq, &old) &&
          old_type == ValueType::kValuePointer) {
        if (auto p = vlog::DecodeValuePointer(old); p.ok()) superseded += p->size;
      }
    }
    if (t == ValueType::kValuePointer) {
      if (auto p = vlog::DecodeValuePointer(v); p.ok()) named += p->size;
    }
    return absl::OkStatus();
  }).IgnoreError();
  if (named > 0) mem_value_bytes_.fetch_add(named, std::memory_order_relaxed);
  if (superseded > 0) mem_superseded_bytes_.fetch_add(superseded, std::memory_order_relaxed);
}

bool DBImpl::MemTableValueBytesFull() {
  const uint64_t named = mem_value_bytes_.load(std::memory_order_relaxed);
  if (named == 0) return false;
  if (named >= options_.max_memtable_value_bytes) return true;
  // Garbage the memtable holds itself (a small set of keys overwritten
  // again and again) is invisible to GC until a flush counts it: flush
  // once it passes a quarter of the garbage the trigger allows over the
  // live value log, or 256 KiB, whichever is more.
  const uint64_t superseded = mem_superseded_bytes_.load(std::memory_order_relaxed);
  if (superseded < (256u << 10)) return false;
  const double t = options_.gc_space_amp_trigger > 1 ? options_.gc_space_amp_trigger : 1.5;
  const ValueLogSpace space = GetValueLogSpaceLocked(/*with_estimate=*/true);
  const uint64_t dead = std::min(space.bytes, space.garbage + space.uncounted);
  const double live = static_cast<double>(space.bytes - dead);
  return static_cast<double>(superseded) >= 0.25 * (t - 1) * live;
}

absl::Status DBImpl::InsertInto(lsm::MemTable* mem, const WriteBatch& batch) {
  return WriteBatchInternal::ForEach(
      batch, [mem](SequenceNumber seq, ValueType type, std::string_view key,
                   std::string_view value) {
        mem->Add(seq, type, key, value);
        return absl::OkStatus();
      });
}

absl::Status DBImpl::WaitForValueLogSpace(uint64_t bytes) {
  if (!bg_error_.ok()) return bg_error_;
  if (shutting_down_) return absl::AbortedError("the database is closing");
  if (!gc_controller_.enabled() || options_.value_separation_threshold == kInlineValues) {
    return absl::OkStatus();
  }
  // GC is behind: the write waits its turn at the delayed-write rate, at
  // most max_write_delay (gc/gc_controller.h). The figure is kept per edit,
  // so this reads counters, never every segment.
  const double amp = GetValueLogSpaceLocked(/*with_estimate=*/true).amplification();
  const absl::Duration delay =
      gc_controller_.WriteDelay(amp, bytes, absl::Now(), GcCanCollect());
  write_delayed_ = delay > absl::ZeroDuration() || amp > gc_controller_.slowdown_mark();
  if (delay <= absl::ZeroDuration()) return absl::OkStatus();
  SetStallCondition(StallCondition::kDelayed, "value-log space: GC is behind");
  stall_slowdowns_.fetch_add(1, std::memory_order_relaxed);
  mu_.Unlock();
  const auto start = std::chrono::steady_clock::now();
  absl::SleepFor(delay);
  RecordStall(start);
  mu_.Lock();
  return absl::OkStatus();
}

void DBImpl::RecordStall(std::chrono::steady_clock::time_point start) {
  const uint64_t micros = std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count();
  stall_micros_.fetch_add(micros, std::memory_order_relaxed);
  uint64_t longest = stall_max_micros_.load(std::memory_order_relaxed);
  while (micros > longest &&
         !stall_max_micros_.compare_exchange_weak(longest, micros, std::memory_order_relaxed)) {
  }
}

void DBImpl::SlowDownWrite() {
  stall_slowdowns_.fetch_add(1, std::memory_order_relaxed);
  mu_.Unlock();
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  RecordStall(start);
  mu_.Lock();
}

absl::Status DBImpl::MakeRoomForWrite(bool force) {
  bool allow_delay = !force;
  while (true) {
    if (!bg_error_.ok()) return bg_error_;
    // The background threads are gone or going: waiting for a flush would
    // never end (a GC rewrite can still be writing during close).
    if (shutting_down_) return absl::AbortedError("the database is closing");
    const int l0_files = static_cast<int>(versions_->current()->NumFiles(0));
    if (allow_delay && (l0_files >= options_.level0_slowdown_trigger ||
                        pending_compaction_bytes_ >= options_.soft_pending_compaction_bytes_limit)) {
      // Near the stop trigger: give each write a 1 ms delay rather than stop
      // one write for seconds later.
      SetStallCondition(StallCondition::kDelayed,
                        l0_files >= options_.level0_slowdown_trigger
                            ? "level-0 files at the slowdown trigger"
                            : "pending compaction bytes at the soft limit");
      SlowDownWrite();
      allow_delay = false;
      continue;
    }
    if (!force && mem_->ApproximateMemoryUsage() < options_.memtable_size &&
        !MemTableValueBytesFull()) {
      if (allow_delay && !write_delayed_) SetStallCondition(StallCondition::kNormal, "");
      return absl::OkStatus();
    }
    if (imm_.size() >= 2 || l0_files >= options_.level0_stop_trigger ||
        pending_compaction_bytes_ >= options_.hard_pending_compaction_bytes_limit) {
      // Flushes (or L0 compactions) are behind: wait for them.
      SetStallCondition(StallCondition::kStopped,
                        imm_.size() >= 2 ? "memtables waiting for their flush"
                        : l0_files >= options_.level0_stop_trigger
                            ? "level-0 files at the stop trigger"
                            : "pending compaction bytes at the hard limit");
      stall_stops_.fetch_add(1, std::memory_order_relaxed);
      const auto start = std::chrono::steady_clock::now();
      background_cv_.Wait(&mu_);
      RecordStall(start);
      continue;
    }
    if (force && mem_->empty()) return absl::OkStatus();
    // Switch to a fresh memtable and WAL. A failure here (a sync of the old
    // WAL or value log, or the new WAL's creation) stops writes: the old
    // WAL's durability is unknown.
    absl::Status s = NewLog();
    if (!s.ok()) {
      SetBackgroundError(s);
      return bg_error_;
    }
    return absl::OkStatus();
  }
}

}  // namespace cairn
