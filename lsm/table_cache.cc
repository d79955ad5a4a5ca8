#include "lsm/table_cache.h"

#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "io/status_macros.h"
#include "lsm/filename.h"

namespace cairn::lsm {
namespace {

// Forwards to a table's iterator and holds the table open meanwhile.
class TableHoldingIterator final : public InternalIterator {
 public:
  TableHoldingIterator(std::shared_ptr<Table> table, const TableReadOptions& ro)
      : table_(std::move(table)), iter_(table_->NewIterator(ro)) {}

  bool Valid() const override { return iter_->Valid(); }
  void SeekToFirst() override { iter_->SeekToFirst(); }
  void SeekToLast() override { iter_->SeekToLast(); }
  void Seek(std::string_view target) override { iter_->Seek(target); }
  void PrepareSeek(std::string_view target, SeekBatch* batch) override {
    iter_->PrepareSeek(target, batch);
  }
  void SeekForPrev(std::string_view target) override { iter_->SeekForPrev(target); }
  void Next() override { iter_->Next(); }
  void Prev() override { iter_->Prev(); }
  std::string_view key() const override { return iter_->key(); }
  std::string_view value() const override { return iter_->value(); }
  absl::Status status() const override { return iter_->status(); }

 private:
  const std::shared_ptr<Table> table_;  // declared first: outlives iter_
  const std::unique_ptr<InternalIterator> iter_;
};

}  // namespace

TableCache::TableCache(io::FileSystem* fs, std::string dbname, const TableOptions& options,
                       BlockCache* block_cache, ReadCounters* counters, size_t max_open_files,
                       std::shared_ptr<io::FdBudget> budget)
    : fs_(fs),
      dbname_(std::move(dbname)),
      options_(options),
      block_cache_(block_cache),
      counters_(counters),
      max_open_files_(max_open_files < 1 ? 1 : max_open_files),
      budget_(std::move(budget)) {
  if (budget_ != nullptr) reclaimer_id_ = budget_->AddReclaimer([this] { return CloseIdle(); });
}

TableCache::~TableCache() {
  if (budget_ != nullptr) budget_->RemoveReclaimer(reclaimer_id_);
}

bool TableCache::CloseIdle() {
  std::shared_ptr<Table> closed;  // released after the lock
  absl::MutexLock lock(&mu_);
  // Only the cache holds an idle table, and only the cache (under mu_)
  // hands out new holds, so a count of 1 stays 1 while the lock is held.
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    if (it->table.use_count() != 1) continue;
    closed = std::move(it->table);
    index_.erase(it->file_number);
    lru_.erase(std::next(it).base());
    return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Table>> TableCache::Open(uint64_t file_number,
                                                       uint64_t file_size) const {
  io::FileOptions file_options;
  file_options.category = io::IoCategory::kTable;
  file_options.direct = options_.direct_reads;
  absl::StatusOr<std::unique_ptr<io::RandomAccessFile>> opened_file =
      fs_->NewRandomAccessFile(TableFileName(dbname_, file_number), file_options);
  if (absl::IsNotFound(opened_file.status())) {
    // The version lists it: a missing table is lost data, never an absent key.
    return absl::DataLossError(absl::StrCat(TableFileName(dbname_, file_number),
                                            ": missing, but the current version lists it"));
  }
  CAIRN_RETURN_IF_ERROR(opened_file.status());
  return Table::Open(options_, *std::move(opened_file), file_size, file_number, block_cache_,
                     counters_);
}

absl::StatusOr<std::shared_ptr<Table>> TableCache::FindTable(uint64_t file_number,
                                                             uint64_t file_size) {
  {
    absl::MutexLock lock(&mu_);
    if (auto it = index_.find(file_number); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->table;
    }
  }
  // Open outside the lock: it reads the device, and other files' lookups
  // should not wait for it. Two threads may race to open the same file; the
  // first to insert wins and the other's table is dropped.
  if (budget_ != nullptr) CAIRN_RETURN_IF_ERROR(budget_->Acquire(/*wait=*/true));
  absl::StatusOr<std::unique_ptr<Table>> opened = Open(file_number, file_size);
  std::shared_ptr<Table> table;
  if (budget_ == nullptr) {
    CAIRN_RETURN_IF_ERROR(opened.status());
    table = *std::move(opened);
  } else if (!opened.ok()) {
    budget_->Release();
    return opened.status();
  } else {
    table = io::FdBudget::Attach(budget_, *std::move(opened));
  }

  std::vector<std::shared_ptr<Table>> closed;  // released after the lock
  absl::MutexLock lock(&mu_);
  if (auto it = index_.find(file_number); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    closed.push_back(std::move(table));
    return it->second->table;
  }
  lru_.push_front(Entry{file_number, table});
  index_[file_number] = lru_.begin();
  while (lru_.size() > max_open_files_) {
    closed.push_back(std::move(lru_.back().table));
    index_.erase(lru_.back().file_number);
    lru_.pop_back();
  }
  return table;
}

absl::Status TableCache::Get(const TableReadOptions& ro, uint64_t file_number,
                             uint64_t file_size, std::string_view lookup_key,
                             TableGetResult* result) {
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<Table> table, FindTable(file_number, file_size));
  return table->Get(ro, lookup_key, result);
}

std::unique_ptr<InternalIterator> TableCache::NewIterator(const TableReadOptions& ro,
                                                          uint64_t file_number,
                                                          uint64_t file_size) {
  absl::StatusOr<std::shared_ptr<Table>> table = FindTable(file_number, file_size);
  if (!table.ok()) return NewErrorIterator(table.status());
  return std::make_unique<TableHoldingIterator>(*std::move(table), ro);
}

void TableCache::Evict(uint64_t file_number) {
  std::shared_ptr<Table> closed;  // released after the lock
  absl::MutexLock lock(&mu_);
  auto it = index_.find(file_number);
  if (it == index_.end()) return;
  closed = std::move(it->second->table);
  lru_.erase(it->second);
  index_.erase(it);
}

size_t TableCache::open_tables() const {
  absl::MutexLock lock(&mu_);
  return lru_.size();
}

}  // namespace cairn::lsm
