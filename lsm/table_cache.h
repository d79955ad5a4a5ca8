// TableCache keeps recently used SST files open: a Table (open file, index,
// filter, properties) per file number, up to max_open_files, least recently
// used closed first. Table files live at TableFileName(dbname, number)
// (lsm/filename.h) and are opened with category kTable and
// direct = options.direct_reads.
//
// Tables are handed out as shared_ptr, so a table evicted or Evict()ed while
// a Get or an iterator uses it stays open until they finish.
//
// With an io::FdBudget, every table open, cached or not, holds one of its
// units until its last user lets go; an open past the budget first closes
// idle tables and segment readers (CloseIdle is this cache's reclaimer),
// then waits a while for one to come free.
//
// Thread safety: every method may be called from any thread.
#ifndef CAIRN_LSM_TABLE_CACHE_H_
#define CAIRN_LSM_TABLE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "io/fd_budget.h"
#include "io/file_system.h"
#include "lsm/block_cache.h"
#include "lsm/internal_iterator.h"
#include "lsm/read_counters.h"
#include "lsm/table.h"
#include "lsm/table_builder.h"

namespace cairn::lsm {

class TableCache {
 public:
  // fs, block_cache and counters must outlive the cache; block_cache and
  // counters may be null, and so may budget (no budget).
  // REQUIRES: max_open_files >= 1.
  TableCache(io::FileSystem* fs, std::string dbname, const TableOptions& options,
             BlockCache* block_cache, ReadCounters* counters, size_t max_open_files = 1000,
             std::shared_ptr<io::FdBudget> budget = nullptr);
  ~TableCache();

  TableCache(const TableCache&) = delete;
  TableCache& operator=(const TableCache&) = delete;

  // The open table for file_number, opening it if needed. Errors from
  // opening (DataLoss naming the file when it is missing, I/O errors, ...)
  // are returned and not cached, so a later call tries again; so is the
  // budget's ResourceExhausted (io::IsFdShortage).
  absl::StatusOr<std::shared_ptr<Table>> FindTable(uint64_t file_number, uint64_t file_size);

  // Table::Get on the file's table.
  absl::Status Get(const TableReadOptions& ro, uint64_t file_number, uint64_t file_size,
                   std::string_view lookup_key, TableGetResult* result);

  // An iterator over the file's table that keeps the table open while it
  // lives. If the table cannot be opened, an empty iterator carrying the error.
  std::unique_ptr<InternalIterator> NewIterator(const TableReadOptions& ro, uint64_t file_number,
                                                uint64_t file_size);

  // Forgets the file's table (call when the file is deleted). Users holding
  // it keep it until they let go.
  void Evict(uint64_t file_number);

  // Closes the least recently used table no user holds: true, or false
  // when every open table is in use.
  bool CloseIdle();

  // Tables currently held open by the cache.
  size_t open_tables() const;

 private:
  // Opens the file's table (FindTable's open, outside the lock).
  absl::StatusOr<std::unique_ptr<Table>> Open(uint64_t file_number, uint64_t file_size) const;

  struct Entry {
    uint64_t file_number;
    std::shared_ptr<Table> table;
  };

  io::FileSystem* const fs_;
  const std::string dbname_;
  const TableOptions options_;
  BlockCache* const block_cache_;
  ReadCounters* const counters_;
  const size_t max_open_files_;
  const std::shared_ptr<io::FdBudget> budget_;
  uint64_t reclaimer_id_ = 0;

  mutable absl::Mutex mu_;
  std::list<Entry> lru_ ABSL_GUARDED_BY(mu_);  // front = most recently used
  absl::flat_hash_map<uint64_t, std::list<Entry>::iterator> index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_TABLE_CACHE_H_
