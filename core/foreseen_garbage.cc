#include "core/foreseen_garbage.h"

#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "lsm/dbformat.h"
#include "lsm/merging_iterator.h"
#include "lsm/table_cache.h"
#include "lsm/version.h"
#include "vlog/value_pointer.h"

namespace cairn {

uint64_t ForeseenGarbage::Add(const vlog::DeadRecords::Batch& batch,
                              const std::function<bool(uint64_t)>& keep) {
  uint64_t added = 0;
  absl::MutexLock l(&mu_);
  for (const auto& [segment_id, records] : batch) {
    if (!keep(segment_id)) continue;
    Segment* segment = nullptr;
    for (const vlog::DeadRecords::Record& r : records) {
      if (size_ >= max_records_) {
        ++overflowed_;
        continue;
      }
      if (segment == nullptr) segment = &segments_[segment_id];
      if (!segment->records.emplace(static_cast<uint32_t>(r.offset), r.size).second) continue;
      segment->bytes += r.size;
      added += r.size;
      ++size_;
    }
  }
  total_bytes_.fetch_add(added, std::memory_order_relaxed);
  return added;
}

void ForeseenGarbage::Counted(const vlog::DeadRecords::Batch& batch) {
  uint64_t removed = 0;
  absl::MutexLock l(&mu_);
  for (const auto& [segment_id, records] : batch) {
    auto it = segments_.find(segment_id);
    if (it == segments_.end()) continue;
    Segment& segment = it->second;
    for (const vlog::DeadRecords::Record& r : records) {
      auto rec = segment.records.find(static_cast<uint32_t>(r.offset));
      if (rec == segment.records.end()) continue;
      segment.bytes -= rec->second;
      removed += rec->second;
      segment.records.erase(rec);
      --size_;
    }
    if (segment.records.empty()) segments_.erase(it);
  }
  total_bytes_.fetch_sub(removed, std::memory_order_relaxed);
}

void ForeseenGarbage::ForgetLocked(absl::flat_hash_map<uint64_t, Segment>::iterator it) {
  total_bytes_.fetch_sub(it->second.bytes, std::memory_order_relaxed);
  size_ -= it->second.records.size();
  segments_.erase(it);
}

void ForeseenGarbage::Forget(uint64_t segment_id) {
  absl::MutexLock l(&mu_);
  auto it = segments_.find(segment_id);
  if (it != segments_.end()) ForgetLocked(it);
}

void ForeseenGarbage::ForgetAllBut(const std::function<bool(uint64_t)>& keep) {
  absl::MutexLock l(&mu_);
  std::vector<uint64_t> gone;
  for (const auto& [segment_id, segment] : segments_) {
    if (!keep(segment_id)) gone.push_back(segment_id);
  }
  for (uint64_t id : gone) ForgetLocked(segments_.find(id));
}

uint64_t ForeseenGarbage::Bytes(uint64_t segment_id) const {
  absl::MutexLock l(&mu_);
  auto it = segments_.find(segment_id);
  return it == segments_.end() ? 0 : it->second.bytes;
}

size_t ForeseenGarbage::size() const {
  absl::MutexLock l(&mu_);
  return size_;
}

uint64_t ForeseenGarbage::overflowed() const {
  absl::MutexLock l(&mu_);
  return overflowed_;
}

vlog::DeadRecords::Batch FindShadowedRecords(const lsm::Version& base, lsm::TableCache* tables,
                                             const std::vector<FlushedKey>& keys,
                                             bool overwrites) {
  vlog::DeadRecords::Batch batch;
  lsm::TableReadOptions ro;
  ro.expect_hits = overwrites;
  for (const FlushedKey& k : keys) {
    if (k.sequence == 0) continue;
    lsm::TableGetResult result;
    const std::string lookup = lsm::MakeLookupKey(k.user_key, k.sequence - 1);
    lsm::StoredValue sv;
    if (!base.Get(ro, tables, lookup, &result).ok() || !result.found ||
        !lsm::SplitStoredValue(result.type, result.value, &sv) ||
        sv.type != lsm::ValueType::kValuePointer) {
      continue;
    }
    const absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(sv.payload);
    if (ptr.ok()) batch[ptr->segment_id].push_back({ptr->offset, ptr->size});
  }
  return batch;
}

void AddRangeShadowedRecords(const lsm::Version& base, lsm::TableCache* tables,
                             const std::vector<lsm::RangeTombstone>& tombstones,
                             size_t max_records, vlog::DeadRecords::Batch* batch) {
  if (tombstones.empty()) return;
  absl::flat_hash_set<std::pair<uint64_t, uint64_t>> listed;
  size_t records = 0;
  for (const auto& [id, list] : *batch) {
    for (const vlog::DeadRecords::Record& r : list) listed.insert({id, r.offset});
    records += list.size();
  }
  // What base's own tombstones cover was dead already, and counted then.
  absl::StatusOr<lsm::RangeTombstonesPtr> older = base.RangeTombstones(tables);
  if (!older.ok()) return;  // a count only: left to compaction
  lsm::TableReadOptions ro;
  ro.fill_cache = false;
  std::vector<std::unique_ptr<lsm::InternalIterator>> children;
  base.AddIterators(ro, tables, &children);
  std::unique_ptr<lsm::InternalIterator> it = lsm::NewMergingIterator(std::move(children));
  std::string done_key;
  for (const lsm::RangeTombstone& t : tombstones) {
    bool done = false;
    for (it->Seek(lsm::MakeLookupKey(t.begin, t.seq - 1)); it->Valid(); it->Next()) {
      lsm::ParsedInternalKey p;
      if (!lsm::ParseInternalKey(it->key(), &p)) continue;
      if (p.user_key >= std::string_view(t.end)) break;
      if (p.sequence >= t.seq || (done && p.user_key == done_key)) continue;
      done_key.assign(p.user_key);  // its newest version below the tombstone
      done = true;
      if (p.type != lsm::ValueType::kValuePointer) continue;
      if (*older != nullptr && (*older)->Covers(p.user_key, p.sequence, lsm::kMaxSequenceNumber)) {
        continue;
      }
      const absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(it->value());
      if (!ptr.ok() || !listed.insert({ptr->segment_id, ptr->offset}).second) continue;
      (*batch)[ptr->segment_id].push_back({ptr->offset, ptr->size});
      if (++records >= max_records) return;
    }
  }
}

}  // namespace cairn
