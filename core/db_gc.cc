// Value-log garbage collection, the DB's side: GcDbAccess, what the GC
// coordinator (core/gc_coordinator.h) may ask of the DB (liveness checks
// through read views, pointer rewrites checked again by the write leader),
// RunGC, and the open's count of garbage nothing counted. The protocol and
// victim choice: docs/gc.md.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "core/write_batch_internal.h"
#include "io/coding.h"
#include "io/status_macros.h"
#include "lsm/dbformat.h"
#include "lsm/filename.h"
#include "vlog/segment_accounting.h"

namespace cairn {

using lsm::SequenceNumber;
using lsm::ValueType;

namespace {

bool SamePlace(const vlog::ValuePointer& a, const vlog::ValuePointer& b) {
  return a.segment_id == b.segment_id && a.offset == b.offset;
}

// Whether an LSM entry (type, stored) is a pointer to ptr's record; sets
// *expiry_micros (may be null) to the entry's expiry (0: none). An expiring
// pointer counts as live even once expired: reads hide it, but until a
// compaction drops it the LSM still names the record, and a clock set back
// after a reopen would show it again (docs/decisions/20261207_ttl_expiry.md).
bool IsPointerTo(ValueType type, std::string_view stored, const vlog::ValuePointer& ptr,
                 uint64_t* expiry_micros = nullptr) {
  lsm::StoredValue sv;
  if (!lsm::SplitStoredValue(type, stored, &sv) || sv.type != ValueType::kValuePointer) {
    return false;
  }
  absl::StatusOr<vlog::ValuePointer> current = vlog::DecodeValuePointer(sv.payload);
  if (expiry_micros != nullptr) *expiry_micros = sv.expiry_micros;
  return current.ok() && SamePlace(*current, ptr);
}

}  // namespace

absl::Status DBImpl::CheckPointers(absl::Span<const std::string_view> keys,
                                   absl::Span<const vlog::ValuePointer> pointers,
                                   const lsm::MemTable* unless_holding, std::vector<bool>* live,
                                   GcReadBase* base, bool* looked) {
  ReadView view = GetReadView(ReadOptions());
  view.table_read.expect_hits = true;  // a victim's keys are nearly all there
  base->sequence = view.sequence;
  base->mem = view.sv->mem;
  *looked = unless_holding == nullptr || !HoldsMemTable(*view.sv, unless_holding);
  if (!*looked) return absl::OkStatus();
  return LookPointersUp(view, keys, pointers, live, nullptr);
}

absl::Status DBImpl::LookPointersUp(const ReadView& view, absl::Span<const std::string_view> keys,
                                    absl::Span<const vlog::ValuePointer> pointers,
                                    std::vector<bool>* live, std::vector<uint64_t>* expiries) {
  // (*live)[i]: whether keys[i] points at pointers[i] in view; (*expiries)[i]
  // that entry's expiry. Sorted lookups, as MultiGet's: the memtables
  // first, then the tables from the block cache alone, then the blocks that
  // missed, read in one batch (LookupBatchInView).
  live->assign(keys.size(), false);
  if (expiries != nullptr) expiries->assign(keys.size(), 0);
  std::vector<uint32_t> order(keys.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  std::vector<ValueType> types(keys.size(), ValueType::kDeletion);
  std::vector<std::string> stored(keys.size());
  std::vector<absl::Status> statuses(keys.size());
  LookupBatchInView(view, keys, order, &types, &stored, &statuses);
  for (uint32_t i : order) {
    CAIRN_RETURN_IF_ERROR(statuses[i]);
    (*live)[i] = IsPointerTo(types[i], stored[i], pointers[i],
                             expiries == nullptr ? nullptr : &(*expiries)[i]);
  }
  return absl::OkStatus();
}

GcDbAccess::MemTables DBImpl::MemTablesLocked() {
  return {.queued_through = imm_.empty() ? 0 : imm_.back().last_sequence,
          .immutable = imm_.size(),
          .mutable_bytes = mem_->ApproximateMemoryUsage()};
}

absl::StatusOr<bool> DBImpl::PointsAt(const ReadView& view, std::string_view key,
                                      const vlog::ValuePointer& ptr, uint64_t* expiry_micros) {
  ValueType type;
  std::string stored;
  CAIRN_RETURN_IF_ERROR(LookupInView(view, key, &type, &stored));
  return IsPointerTo(type, stored, ptr, expiry_micros);
}

bool DBImpl::HoldsMemTable(const SuperVersion& sv, const lsm::MemTable* mem) {
  if (sv.mem.get() == mem) return true;
  for (const auto& imm : sv.imm) {
    if (imm.get() == mem) return true;
  }
  return false;
}

bool DBImpl::StillPointsAt(const ReadView& view, SequenceNumber base_sequence,
                           std::string_view key, const vlog::ValuePointer& ptr,
                           MemTableCursors* cursors, uint64_t* expiry_micros) {
  ValueType type;
  SequenceNumber seq = 0;
  std::string stored;
  // A range deletion since the base deleted it, though no entry of the key
  // is newer (the tombstones are not in the memtables' skip lists).
  if (!view.range_dels.empty() &&
      view.range_dels.MaxCoveringSeq(key, view.sequence) > base_sequence) {
    return false;
  }
  // No write to the key since the base: it still points where it did.
  if (!LookupInMemtables(view, key, &type, &stored, &seq, cursors) || seq <= base_sequence) {
    return true;
  }
  return IsPointerTo(type, stored, ptr, expiry_micros);
}

absl::Status DBImpl::BuildRewriteBatch(const PointerRewrite& rewrite, const ReadView& view,
                                       WriteBatch* batch) {
  // Runs as the write leader, alone in its group: every earlier write is in
  // the memtable, and no later one can slip in before this batch. User
  // writes wait meanwhile, so the memtables alone answer when they hold
  // every write since the base (a flush can complete between the caller's
  // check and this one; then the whole LSM does).
  // With a compaction filter, a compaction may change a key without a
  // write, which the memtables would not show: the whole LSM answers.
  const bool memtables_answer = rewrite.base_mem != nullptr &&
                                options_.compaction_filter == nullptr &&
                                HoldsMemTable(*view.sv, rewrite.base_mem);
  // A job's keys come in key order: each memtable search starts from the
  // last one.
  MemTableCursors cursors(*view.sv);
  for (size_t i = 0; i < rewrite.keys.size(); ++i) {
    bool still;
    // The rewrite keeps the entry's expiry (moving a value never extends
    // its life): as WritePointerRewrite found it, or as the lookup below
    // finds it.
    uint64_t expiry = rewrite.expiries.empty() ? 0 : rewrite.expiries[i];
    if (expiry == kSkipRewrite) continue;  // FindRewriteExpiries saw it change
    if (memtables_answer) {
      still = StillPointsAt(view, rewrite.base_sequence, rewrite.keys[i], rewrite.old_pointers[i],
                            &cursors, &expiry);
    } else {
      CAIRN_ASSIGN_OR_RETURN(still,
                             PointsAt(view, rewrite.keys[i], rewrite.old_pointers[i], &expiry));
    }
    if (!still) continue;  // a newer Put or a Delete won
    std::string stored;
    if (expiry != 0) io::PutFixed64(&stored, expiry);
    stored.append(vlog::EncodeValuePointer(rewrite.new_pointers[i]));
    WriteBatchInternal::AddEntry(
        batch, expiry != 0 ? ValueType::kValuePointerWithExpiry : ValueType::kValuePointer,
        rewrite.keys[i], stored);
    (*rewrite.replaced)[i] = true;
  }
  return absl::OkStatus();
}

absl::Status DBImpl::FindRewriteExpiries(const PointerRewrite& rewrite,
                                         std::vector<uint64_t>* expiries) {
  // Outside the write queue, in one batch as CheckPointers looks: the
  // leader then needs no lookup in the tables for a key its memtables do
  // not hold.
  ReadView view = GetReadView(ReadOptions());
  view.table_read.expect_hits = true;
  std::vector<bool> live;
  CAIRN_RETURN_IF_ERROR(LookPointersUp(view, rewrite.keys, rewrite.old_pointers, &live, expiries));
  // A key that no longer points at its old record was changed since GC
  // checked it: by a write, which the leader sees in its memtables, or by
  // a compaction that turned its expired entry into a tombstone or applied
  // a filter, which the leader's memtables do not show. Rewriting it would
  // bring the entry back (found by the model test, 2026-12-07).
  for (size_t i = 0; i < live.size(); ++i) {
    if (!live[i]) (*expiries)[i] = kSkipRewrite;
  }
  return absl::OkStatus();
}

absl::StatusOr<GcResult> DBImpl::RunGC() {
  CAIRN_RETURN_IF_ERROR(CheckWritable("RunGC"));
  const uint64_t freed_before = gc_.counters().segments_freed.load();
  CAIRN_ASSIGN_OR_RETURN(GcResult r, gc_.Collect(/*manual=*/true));
  gc_.PunchReadyRuns(/*wait=*/true);
  deleter_->WaitIdle();  // the victims' files are gone on return
  {
    // A failure deleting the victims (the manifest write) stops the DB.
    absl::MutexLock l(&mu_);
    if (!bg_error_.ok()) return bg_error_;
  }
  r.segments_freed = gc_.counters().segments_freed.load() - freed_before;
  return r;
}

absl::Status DBImpl::CountUnaccountedGarbage() {
  if (vlog_->segment_set().size() == 0) return absl::OkStatus();
  // Every pointer of every version in the LSM: at open the memtables are
  // empty (replay went to L0), so the tables hold every reference.
  vlog::SegmentAccounting accounting;
  const std::shared_ptr<const lsm::Version> v = versions_->current();
  const lsm::TableReadOptions ro{.verify_checksums = true, .fill_cache = false};
  for (int level = 0; level < lsm::kNumLevels; ++level) {
    for (const auto& f : v->files(level)) {
      std::unique_ptr<lsm::InternalIterator> it =
          table_cache_->NewIterator(ro, f->number, f->file_size);
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        lsm::ParsedInternalKey p;
        lsm::StoredValue sv;
        if (!lsm::ParseInternalKey(it->key(), &p) ||
            !lsm::SplitStoredValue(p.type, it->value(), &sv) ||
            sv.type != ValueType::kValuePointer) {
          continue;
        }
        absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(sv.payload);
        if (!ptr.ok()) {
          return absl::DataLossError(absl::StrCat(lsm::TableFileName(dbname_, f->number),
                                                  ": undecodable value pointer: ",
                                                  ptr.status().message()));
        }
        accounting.AddReference(*ptr);
      }
      CAIRN_RETURN_IF_ERROR(it->status());
    }
  }
  const vlog::SegmentEdit edit = vlog::SegmentAccounting::LeakEdit(
      accounting.Check(vlog_->segment_set(), vlog_->ActiveSizes()));
  if (edit.empty()) return absl::OkStatus();
  for (const vlog::SegmentEdit::Change& c : edit.changes()) {
    gc_.RecountedLeak(c.bytes);
  }
  lsm::VersionEdit ve;
  return LogAndApply(&ve, &edit);
}

}  // namespace cairn
