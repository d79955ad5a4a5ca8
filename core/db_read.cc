// The read path: Get and MultiGet look in the memtable, the immutable
// memtables (newest first), then the version's tables; iterators merge all
// of them. Snapshots pin a sequence number.
#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "core/db_iter.h"
#include "io/status_macros.h"
#include "lsm/merging_iterator.h"

namespace cairn {

using lsm::SequenceNumber;
using lsm::ValueType;

DBImpl::ReadView DBImpl::GetReadView(const ReadOptions& options) {
  absl::MutexLock l(&mu_);
  return GetReadViewLocked(options);
}

DBImpl::ReadView DBImpl::GetReadViewLocked(const ReadOptions& options) {
  ReadView view;
  view.epoch = read_epoch_;
  view.sequence = options.snapshot != nullptr
                      ? static_cast<const SnapshotImpl*>(options.snapshot)->sequence
                      : last_sequence_.load(std::memory_order_acquire);
  view.mem = mem_;
  for (auto it = imm_.rbegin(); it != imm_.rend(); ++it) view.imm.push_back(it->mem);
  view.version = versions_->current();
  view.table_read.verify_checksums = options.verify_checksums;
  view.table_read.fill_cache = options.fill_cache;
  return view;
}

absl::Status DBImpl::ResolveStoredValue(std::string_view key, ValueType type,
                                        std::string_view stored, std::string* out) {
  switch (type) {
    case ValueType::kValue:
      out->assign(stored);
      return absl::OkStatus();
    case ValueType::kValuePointer:
      return vlog_->Get(key, stored, out);
    case ValueType::kDeletion:
      break;
  }
  return absl::NotFoundError("key not found");
}

absl::Status DBImpl::LookupInView(const ReadView& view, std::string_view key, ValueType* type,
                                  std::string* stored) {
  SequenceNumber seq;
  bool found = view.mem->Get(key, view.sequence, type, &seq, stored);
  for (size_t i = 0; !found && i < view.imm.size(); ++i) {
    found = view.imm[i]->Get(key, view.sequence, type, &seq, stored);
  }
  if (found) return absl::OkStatus();
  lsm::TableGetResult result;
  CAIRN_RETURN_IF_ERROR(view.version->Get(view.table_read, table_cache_.get(),
                                          lsm::MakeLookupKey(key, view.sequence), &result));
  if (!result.found) {
    *type = ValueType::kDeletion;
    return absl::OkStatus();
  }
  *type = result.type;
  *stored = std::move(result.value);
  return absl::OkStatus();
}

absl::Status DBImpl::GetFromView(const ReadView& view, std::string_view key, std::string* value) {
  ValueType type;
  std::string stored;
  CAIRN_RETURN_IF_ERROR(LookupInView(view, key, &type, &stored));
  return ResolveStoredValue(key, type, stored, value);
}

absl::Status DBImpl::Get(const ReadOptions& options, std::string_view key, std::string* value) {
  if (key.size() > kMaxKeySize) {
    return absl::InvalidArgumentError(
        absl::StrCat("key of ", key.size(), " bytes exceeds the limit of ", kMaxKeySize));
  }
  gets_.fetch_add(1, std::memory_order_relaxed);
  absl::Status s = GetFromView(GetReadView(options), key, value);
  if (s.ok()) gets_found_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

std::vector<absl::Status> DBImpl::MultiGet(const ReadOptions& options,
                                           const std::vector<std::string_view>& keys,
                                           std::vector<std::string>* values) {
  // One read view for the whole batch, so all keys see the same state. The
  // LSM lookups come first; then every value-log read goes to the device
  // together.
  const ReadView view = GetReadView(options);
  values->assign(keys.size(), std::string());
  std::vector<absl::Status> statuses(keys.size());
  std::vector<std::string> stored(keys.size());
  std::vector<size_t> pointer_index;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].size() > kMaxKeySize) {
      statuses[i] = absl::InvalidArgumentError(
          absl::StrCat("key of ", keys[i].size(), " bytes exceeds the limit of ", kMaxKeySize));
      continue;
    }
    gets_.fetch_add(1, std::memory_order_relaxed);
    ValueType type;
    statuses[i] = LookupInView(view, keys[i], &type, &stored[i]);
    if (!statuses[i].ok()) continue;
    if (type == ValueType::kValuePointer) {
      pointer_index.push_back(i);
    } else {
      statuses[i] = ResolveStoredValue(keys[i], type, stored[i], &(*values)[i]);
    }
  }
  if (!pointer_index.empty()) {
    std::vector<std::string_view> pkeys, pstored;
    for (size_t i : pointer_index) {
      pkeys.push_back(keys[i]);
      pstored.push_back(stored[i]);
    }
    std::vector<std::string> pvalues;
    std::vector<absl::Status> pstatuses;
    vlog_->MultiGet(pkeys, pstored, &pvalues, &pstatuses);
    for (size_t j = 0; j < pointer_index.size(); ++j) {
      statuses[pointer_index[j]] = pstatuses[j];
      if (pstatuses[j].ok()) (*values)[pointer_index[j]] = std::move(pvalues[j]);
    }
  }
  for (const absl::Status& s : statuses) {
    if (s.ok()) gets_found_.fetch_add(1, std::memory_order_relaxed);
  }
  return statuses;
}

std::unique_ptr<lsm::InternalIterator> DBImpl::NewInternalIterator(const ReadView& view) {
  std::vector<std::unique_ptr<lsm::InternalIterator>> children;
  children.push_back(view.mem->NewIterator());
  for (const auto& m : view.imm) children.push_back(m->NewIterator());
  view.version->AddIterators(view.table_read, table_cache_.get(), &children);
  return lsm::NewMergingIterator(std::move(children));
}

std::unique_ptr<Iterator> DBImpl::NewIterator(const ReadOptions& options) {
  auto view = std::make_shared<ReadView>(GetReadView(options));
  ValuePrefetch prefetch;
  if (options.value_prefetch_depth > 1) {
    prefetch.max_depth = options.value_prefetch_depth;
    // The iterator's keep_alive holds view for as long as the lookahead lives.
    prefetch.new_lookahead = [this, v = view.get()] { return NewInternalIterator(*v); };
    prefetch.new_fetcher = [this] { return vlog_->NewFetcher(); };
  }
  return NewDBIterator(NewInternalIterator(*view), view->sequence, view,
                       [this](std::string_view key, ValueType type, std::string_view stored,
                              std::string* out) { return ResolveStoredValue(key, type, stored, out); },
                       std::move(prefetch));
}

const Snapshot* DBImpl::GetSnapshot() {
  absl::MutexLock l(&mu_);
  const SequenceNumber seq = last_sequence_.load(std::memory_order_acquire);
  snapshots_.insert(seq);
  return new SnapshotImpl(seq);
}

void DBImpl::ReleaseSnapshot(const Snapshot* snapshot) {
  if (snapshot == nullptr) return;
  const auto* impl = static_cast<const SnapshotImpl*>(snapshot);
  {
    absl::MutexLock l(&mu_);
    auto it = snapshots_.find(impl->sequence);
    if (it != snapshots_.end()) snapshots_.erase(it);
  }
  delete impl;
}

SequenceNumber DBImpl::OldestSnapshot() const {
  return snapshots_.empty() ? last_sequence_.load() : *snapshots_.begin();
}

}  // namespace cairn
