// The read path: Get and MultiGet look in the memtable, the immutable
// memtables (newest first), then the version's tables; iterators merge all
// of them. Snapshots pin a sequence number.
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "core/db_iter.h"
#include "io/status_macros.h"
#include "lsm/merging_iterator.h"
#include "lsm/range_del_iterator.h"
#include "lsm/seek_batch.h"

namespace cairn {

using lsm::SequenceNumber;
using lsm::ValueType;

DBImpl::ReadView DBImpl::GetReadView(const ReadOptions& options, bool owned) {
  ReadView view;
  view.sv = owned ? sv_cache_.AcquireOwned() : sv_cache_.Acquire();
  // The sequence is read after the SuperVersion is taken: every write at or
  // below it is then in the SuperVersion's memtables or version, or in a
  // memtable newer than it (a switch raced with this read), which only
  // makes the view see the state as of the switch. Read before, a
  // compaction installed in between could have dropped an old version the
  // sequence still needs.
  view.sequence = options.snapshot != nullptr
                      ? static_cast<const SnapshotImpl*>(options.snapshot)->sequence
                      : last_sequence_.load(std::memory_order_acquire);
  // A view that outlives the call (an iterator) keeps its snapshot's
  // sequence readable even once the snapshot is released (core/retention.h).
  if (owned && options.snapshot != nullptr) view.pin = gc_.retention().PinSequence(view.sequence);
  view.range_dels.Add(view.sv->mem->RangeTombstones());
  for (const auto& m : view.sv->imm) view.range_dels.Add(m->RangeTombstones());
  if (absl::StatusOr<lsm::RangeTombstonesPtr> tables =
          view.sv->version->RangeTombstones(table_cache_.get());
      tables.ok()) {
    view.range_dels.Add(*std::move(tables));
  } else {
    view.range_dels_status = tables.status();
  }
  view.table_read.verify_checksums = options.verify_checksums;
  view.table_read.fill_cache = options.fill_cache;
  view.table_read.readahead_size = options.readahead_size;
  view.now_micros = expiry_clock_.NowMicros();
  return view;
}

void DBImpl::InstallSuperVersionLocked() {
  auto sv = std::make_unique<SuperVersion>();
  sv->mem = mem_;
  for (auto it = imm_.rbegin(); it != imm_.rend(); ++it) sv->imm.push_back(it->mem);
  sv->epoch = gc_.retention().epoch();
  absl::MutexLock l(&sv_install_mu_);
  InstallSuperVersion(std::move(sv));
}

void DBImpl::InstallNewVersion() {
  absl::MutexLock l(&sv_install_mu_);
  if (sv_cache_.number() == 0) return;  // recovery: the first install follows
  SuperVersionRef current = sv_cache_.AcquireOwned();
  auto sv = std::make_unique<SuperVersion>();
  sv->mem = current->mem;
  sv->imm = current->imm;
  sv->epoch = current->epoch;
  current.Reset();
  InstallSuperVersion(std::move(sv));
}

void DBImpl::InstallSuperVersion(std::unique_ptr<SuperVersion> sv) {
  // Under sv_install_mu_, so the version is the newest whatever half of the
  // state changed.
  sv->version = versions_->current();
  sv_cache_.Install(std::move(sv));
}

absl::Status DBImpl::ResolveStoredValue(std::string_view key, ValueType type,
                                        std::string_view stored, std::string* out,
                                        bool fill_cache) {
  switch (type) {
    case ValueType::kValue:
      out->assign(stored);
      return absl::OkStatus();
    case ValueType::kValuePointer:
      return vlog_->Get(key, stored, out, fill_cache);
    case ValueType::kValueWithExpiry:
    case ValueType::kValuePointerWithExpiry:
      // Every caller resolves expiry first (ResolveExpiry, DBIter::Parse).
      return absl::InternalError("an expiring entry reached the value's resolution unresolved");
    case ValueType::kDeletion:
    case ValueType::kRangeDeletion:
      break;
  }
  return absl::NotFoundError("key not found");
}

DBImpl::MemTableCursors::MemTableCursors(const SuperVersion& sv)
    : imm(std::make_unique<lsm::MemTable::Cursor[]>(sv.imm.size())) {}

bool DBImpl::LookupInMemtables(const ReadView& view, std::string_view key, ValueType* type,
                               std::string* stored, SequenceNumber* seq,
                               MemTableCursors* cursors) {
  SequenceNumber found_seq;
  const SuperVersion& sv = *view.sv;
  bool found = sv.mem->Get(key, view.sequence, type, &found_seq, stored,
                           cursors == nullptr ? nullptr : &cursors->mem);
  for (size_t i = 0; !found && i < sv.imm.size(); ++i) {
    found = sv.imm[i]->Get(key, view.sequence, type, &found_seq, stored,
                           cursors == nullptr ? nullptr : &cursors->imm[i]);
  }
  if (found && seq != nullptr) *seq = found_seq;
  // A range tombstone newer than the entry deletes it (and every older one).
  if (found && *type != ValueType::kDeletion && view.Covered(key, found_seq)) {
    *type = ValueType::kDeletion;
  }
  return found;
}

// A table lookup's answer as LookupInView gives it.
void DBImpl::TakeTableResult(const ReadView& view, std::string_view key,
                             lsm::TableGetResult&& result, ValueType* type, std::string* stored) {
  if (!result.found || view.Covered(key, result.sequence)) {
    *type = ValueType::kDeletion;
    return;
  }
  *type = result.type;
  *stored = std::move(result.value);
}

absl::Status DBImpl::LookupInTables(const ReadView& view, std::string_view key, ValueType* type,
                                    std::string* stored) {
  lsm::TableGetResult result;
  CAIRN_RETURN_IF_ERROR(view.sv->version->Get(view.table_read, table_cache_.get(),
                                               lsm::MakeLookupKey(key, view.sequence), &result));
  TakeTableResult(view, key, std::move(result), type, stored);
  return absl::OkStatus();
}

void DBImpl::LookupBatchInView(const ReadView& view, absl::Span<const std::string_view> keys,
                               absl::Span<const uint32_t> which, std::vector<ValueType>* types,
                               std::vector<std::string>* stored,
                               std::vector<absl::Status>* statuses) {
  if (!view.range_dels_status.ok()) {
    for (uint32_t i : which) (*statuses)[i] = view.range_dels_status;
    return;
  }
  std::vector<uint32_t> in_tables;
  MemTableCursors cursors(*view.sv);
  for (uint32_t i : which) {
    if (!LookupInMemtables(view, keys[i], &(*types)[i], &(*stored)[i], nullptr, &cursors)) {
      in_tables.push_back(i);
    }
  }
  std::vector<uint32_t> deferred;
  std::vector<std::string_view> deferred_keys;
  if (block_cache_ != nullptr && view.table_read.fill_cache && in_tables.size() > 1) {
    lsm::TableReadOptions cache_only = view.table_read;
    cache_only.cache_only = true;
    for (uint32_t i : in_tables) {
      lsm::TableGetResult result;
      (*statuses)[i] = view.sv->version->Get(cache_only, table_cache_.get(),
                                             lsm::MakeLookupKey(keys[i], view.sequence), &result);
      if ((*statuses)[i].ok() && result.needs_read) {
        deferred.push_back(i);
        deferred_keys.push_back(keys[i]);
      } else if ((*statuses)[i].ok()) {
        TakeTableResult(view, keys[i], std::move(result), &(*types)[i], &(*stored)[i]);
      }
    }
    ReadTableBlocksAhead(view, deferred_keys);
  } else {
    deferred = std::move(in_tables);
  }
  for (uint32_t i : deferred) {
    (*statuses)[i] = LookupInTables(view, keys[i], &(*types)[i], &(*stored)[i]);
  }
}

absl::Status DBImpl::LookupInView(const ReadView& view, std::string_view key, ValueType* type,
                                  std::string* stored) {
  CAIRN_RETURN_IF_ERROR(view.range_dels_status);
  if (LookupInMemtables(view, key, type, stored)) return absl::OkStatus();
  return LookupInTables(view, key, type, stored);
}

absl::Status DBImpl::GetFromView(const ReadView& view, std::string_view key, std::string* value) {
  ValueType type;
  std::string stored;
  CAIRN_RETURN_IF_ERROR(LookupInView(view, key, &type, &stored));
  CAIRN_RETURN_IF_ERROR(ResolveExpiry(key, view.now_micros, &type, &stored));
  return ResolveStoredValue(key, type, stored, value, view.table_read.fill_cache);
}

absl::Status DBImpl::Get(const ReadOptions& options, std::string_view key, std::string* value) {
  CAIRN_RETURN_IF_ERROR(CheckNotClosed());
  if (key.size() > kMaxKeySize) {
    return absl::InvalidArgumentError(
        absl::StrCat("key of ", key.size(), " bytes exceeds the limit of ", kMaxKeySize));
  }
  counters_.gets.fetch_add(1, std::memory_order_relaxed);
  absl::Status s = GetFromView(GetReadView(options), key, value);
  if (s.ok()) counters_.gets_found.fetch_add(1, std::memory_order_relaxed);
  return s;
}

void DBImpl::ReadTableBlocksAhead(const ReadView& view, const std::vector<std::string_view>& keys) {
  if (keys.size() < 2) return;
  lsm::SeekBatch batch;
  for (std::string_view key : keys) {
    view.sv->version->AddGetReads(view.table_read, table_cache_.get(),
                                  lsm::MakeLookupKey(key, view.sequence), &batch);
  }
  if (batch.reads() == 0) return;
  batch.Run(fs_.get());
  batch.CacheFetched();
}

std::vector<absl::Status> DBImpl::MultiGet(const ReadOptions& options,
                                           const std::vector<std::string_view>& keys,
                                           std::vector<std::string>* values) {
  if (absl::Status closed = CheckNotClosed(); !closed.ok()) {
    values->assign(keys.size(), std::string());
    return std::vector<absl::Status>(keys.size(), closed);
  }
  // One read view for the whole batch, so all keys see the same state. The
  // LSM lookups come first, together (LookupBatchInView); then the
  // value-log reads go out a few at a time, one submission each, and the
  // values are collected.
  const ReadView view = GetReadView(options);
  values->assign(keys.size(), std::string());
  std::vector<absl::Status> statuses(keys.size());
  std::vector<std::string> stored(keys.size());
  std::vector<ValueType> types(keys.size(), ValueType::kDeletion);
  std::vector<uint32_t> valid;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].size() > kMaxKeySize) {
      statuses[i] = absl::InvalidArgumentError(
          absl::StrCat("key of ", keys[i].size(), " bytes exceeds the limit of ", kMaxKeySize));
      continue;
    }
    counters_.gets.fetch_add(1, std::memory_order_relaxed);
    valid.push_back(static_cast<uint32_t>(i));
  }
  LookupBatchInView(view, keys, valid, &types, &stored, &statuses);
  for (uint32_t i : valid) {
    if (!statuses[i].ok()) continue;
    statuses[i] = ResolveExpiry(keys[i], view.now_micros, &types[i], &stored[i]);
  }
  std::vector<size_t> pointer_index;
  // The first index of each pointer: a key asked for twice is read once.
  absl::flat_hash_map<std::string, size_t> first_of_pointer;
  std::unique_ptr<ValueFetcher> fetcher;
  std::vector<std::string_view> group_keys, group_stored;
  auto start_group = [&] {
    if (group_keys.empty()) return;
    if (fetcher == nullptr) fetcher = vlog_->NewFetcher(options.fill_cache);
    fetcher->Start(group_keys, group_stored);
    group_keys.clear();
    group_stored.clear();
  };
  constexpr size_t kReadsPerSubmission = 8;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!statuses[i].ok()) continue;  // a key over the limit, or a failed lookup
    if (types[i] != ValueType::kValuePointer) {
      statuses[i] =
          ResolveStoredValue(keys[i], types[i], stored[i], &(*values)[i], options.fill_cache);
      continue;
    }
    pointer_index.push_back(i);
    if (!first_of_pointer.try_emplace(stored[i], i).second) continue;
    group_keys.push_back(keys[i]);
    group_stored.push_back(stored[i]);
    if (group_keys.size() == kReadsPerSubmission) start_group();
  }
  start_group();
  for (size_t i : pointer_index) {
    const size_t first = first_of_pointer.find(stored[i])->second;
    if (first == i) {
      statuses[i] = fetcher->Take(stored[i], &(*values)[i]);
    } else {
      statuses[i] = statuses[first];
      (*values)[i] = (*values)[first];
    }
  }
  for (const absl::Status& s : statuses) {
    if (s.ok()) counters_.gets_found.fetch_add(1, std::memory_order_relaxed);
  }
  return statuses;
}

std::unique_ptr<lsm::InternalIterator> DBImpl::NewInternalIterator(const ReadView& view) {
  std::vector<std::unique_ptr<lsm::InternalIterator>> children;
  children.push_back(view.sv->mem->NewIterator());
  for (const auto& m : view.sv->imm) children.push_back(m->NewIterator());
  view.sv->version->AddIterators(view.table_read, table_cache_.get(), &children);
  if (!view.range_dels_status.ok()) return lsm::NewErrorIterator(view.range_dels_status);
  // With the file system, a seek reads every sorted run's first block at once.
  return lsm::NewRangeDelFilterIterator(lsm::NewMergingIterator(std::move(children), fs_.get()),
                                        view.range_dels, view.sequence);
}

namespace {

IterateBounds BoundsOf(const ReadOptions& options) {
  IterateBounds bounds;
  if (options.iterate_lower_bound != nullptr) bounds.lower.emplace(*options.iterate_lower_bound);
  if (options.iterate_upper_bound != nullptr) bounds.upper.emplace(*options.iterate_upper_bound);
  return bounds;
}

}  // namespace

std::unique_ptr<Iterator> DBImpl::NewIterator(const ReadOptions& options) {
  if (absl::Status closed = CheckNotClosed(); !closed.ok()) {
    return NewDBIterator(lsm::NewErrorIterator(closed), 0, nullptr, nullptr, ValuePrefetch());
  }
  if (options.readahead_size > kMaxReadaheadSize) {
    return NewDBIterator(lsm::NewErrorIterator(absl::InvalidArgumentError(
                             "ReadOptions::readahead_size must be at most 64 MiB")),
                         0, nullptr, nullptr, ValuePrefetch());
  }
  auto view = std::make_shared<ReadView>(GetReadView(options, /*owned=*/true));
  ValuePrefetch prefetch;
  // keys_only: no window, so nothing reads a value the caller does not ask for.
  if (options.value_prefetch_depth > 1 && !options.keys_only) {
    prefetch.max_depth = options.value_prefetch_depth;
    prefetch.max_bytes = options.value_prefetch_bytes;
    // The iterator's keep_alive holds view for as long as the lookahead lives.
    prefetch.new_lookahead = [this, v = view.get()] { return NewInternalIterator(*v); };
    prefetch.new_fetcher = [this, fill = options.fill_cache] { return vlog_->NewFetcher(fill); };
    prefetch.cached = [this](std::string_view stored) { return vlog_->CachedValue(stored); };
  }
  return NewDBIterator(NewInternalIterator(*view), view->sequence, view,
                       [this, fill = options.fill_cache](std::string_view key, ValueType type,
                                                         std::string_view stored, std::string* out) {
                         return ResolveStoredValue(key, type, stored, out, fill);
                       },
                       std::move(prefetch), BoundsOf(options), options.keys_only,
                       view->now_micros);
}

const Snapshot* DBImpl::GetSnapshot() {
  if (!CheckNotClosed().ok()) return nullptr;
  absl::MutexLock l(&mu_);
  const SequenceNumber seq = last_sequence_.load(std::memory_order_acquire);
  snapshots_.insert(seq);
  auto* snapshot = new SnapshotImpl(seq);
  live_snapshots_.insert(snapshot);
  return snapshot;
}

void DBImpl::ReleaseSnapshot(const Snapshot* snapshot) {
  const SnapshotImpl* impl;
  {
    absl::MutexLock l(&mu_);
    // Null, released already, or not this DB's: nothing to do. The pointer
    // is only compared, never cast or dereferenced, until it is known to
    // be live.
    if (live_snapshots_.erase(snapshot) == 0) return;
    impl = static_cast<const SnapshotImpl*>(snapshot);
    auto it = snapshots_.find(impl->sequence);
    if (it != snapshots_.end()) snapshots_.erase(it);
  }
  delete impl;
}

SequenceNumber DBImpl::OldestSnapshot() const {
  return snapshots_.empty() ? last_sequence_.load() : *snapshots_.begin();
}

}  // namespace cairn
