#include "vlog/segment_reader_cache.h"

#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "io/status_macros.h"

namespace cairn::vlog {

SegmentReaderCache::SegmentReaderCache(io::FileSystem* fs, PathFunction path_of,
                                       bool direct_reads, size_t max_open,
                                       std::shared_ptr<io::FdBudget> budget)
    : fs_(fs),
      path_of_(std::move(path_of)),
      direct_reads_(direct_reads),
      max_open_(max_open < 1 ? 1 : max_open),
      budget_(std::move(budget)) {
  if (budget_ != nullptr) reclaimer_id_ = budget_->AddReclaimer([this] { return CloseIdle(); });
}

SegmentReaderCache::~SegmentReaderCache() {
  if (budget_ != nullptr) budget_->RemoveReclaimer(reclaimer_id_);
}

bool SegmentReaderCache::CloseIdle() {
  std::shared_ptr<const SegmentReader> closed;  // closes outside the lock
  absl::MutexLock lock(&mu_);
  // Only the cache holds an idle reader, and only the cache (under mu_)
  // hands out new holds, so a count of 1 stays 1 while the lock is held.
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    if (it->reader.use_count() != 1) continue;
    closed = std::move(it->reader);
    index_.erase(it->segment_id);
    lru_.erase(std::next(it).base());
    return true;
  }
  return false;
}

absl::StatusOr<std::shared_ptr<const SegmentReader>> SegmentReaderCache::Get(
    uint64_t segment_id, bool wait) {
  {
    absl::MutexLock lock(&mu_);
    auto it = index_.find(segment_id);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->reader;
    }
  }
  // Open outside the lock so a slow open does not stall readers of other
  // segments. Two threads may race to open the same segment; the first to
  // insert wins and the other's reader is dropped.
  std::shared_ptr<const SegmentReader> reader;
  if (budget_ != nullptr) {
    // An eighth of the budget stays for the tables: reads of values must
    // not keep a flush or a compaction from opening its table.
    CAIRN_RETURN_IF_ERROR(budget_->Acquire(wait, budget_->limit() / 8));
    absl::StatusOr<std::unique_ptr<SegmentReader>> opened =
        SegmentReader::Open(fs_, path_of_(segment_id), segment_id, direct_reads_);
    if (!opened.ok()) {
      budget_->Release();
      return opened.status();
    }
    reader = io::FdBudget::Attach<const SegmentReader>(budget_, *std::move(opened));
  } else {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<SegmentReader> opened,
                           SegmentReader::Open(fs_, path_of_(segment_id), segment_id,
                                               direct_reads_));
    reader = std::move(opened);
  }
  // Readers dropped here close after the lock is released (declared first).
  std::vector<std::shared_ptr<const SegmentReader>> closed;
  absl::MutexLock lock(&mu_);
  auto it = index_.find(segment_id);
  if (it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->reader;
  }
  lru_.push_front(Entry{segment_id, reader});
  index_[segment_id] = lru_.begin();
  while (lru_.size() > max_open_) {
    closed.push_back(std::move(lru_.back().reader));
    index_.erase(lru_.back().segment_id);
    lru_.pop_back();
  }
  return reader;
}

void SegmentReaderCache::Evict(uint64_t segment_id) {
  std::shared_ptr<const SegmentReader> dropped;  // closes outside the lock
  absl::MutexLock lock(&mu_);
  auto it = index_.find(segment_id);
  if (it == index_.end()) return;
  dropped = std::move(it->second->reader);
  lru_.erase(it->second);
  index_.erase(it);
}

absl::Status SegmentReaderCache::Read(const ValuePointer& pointer,
                                      std::string_view expected_key, std::string* value) {
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const SegmentReader> reader,
                         Get(pointer.segment_id));
  return reader->Read(pointer, expected_key, value);
}

absl::Status SegmentReaderCache::MultiRead(absl::Span<const ValuePointer> pointers,
                                           absl::Span<const std::string_view> keys,
                                           std::vector<std::string>* values,
                                           std::vector<absl::Status>* statuses) {
  if (pointers.size() != keys.size()) {
    return absl::InvalidArgumentError(absl::StrCat("MultiRead: ", pointers.size(),
                                                   " pointers but ", keys.size(), " keys"));
  }
  const size_t n = pointers.size();
  values->assign(n, std::string());
  statuses->assign(n, absl::OkStatus());
  // One batch across every segment: all the reads in flight together. Where
  // the budget runs short, the readers held so far read first and let go,
  // and the rest follow in another batch: a group of hundreds of segments
  // would otherwise hold past the budget, or wait on itself.
  std::vector<std::shared_ptr<const SegmentReader>> readers(n);
  std::vector<io::ReadRequest> requests(n);
  std::vector<io::FileReadRequest> batch;
  std::vector<size_t> index;
  size_t i = 0;
  while (i < n) {
    for (; i < n; ++i) {
      absl::StatusOr<std::shared_ptr<const SegmentReader>> reader =
          Get(pointers[i].segment_id, /*wait=*/batch.empty());
      if (!reader.ok() && io::IsFdShortage(reader.status()) && !batch.empty()) break;
      if (!reader.ok()) {
        (*statuses)[i] = reader.status();
        continue;
      }
      readers[i] = *std::move(reader);
      (*statuses)[i] = readers[i]->PrepareRead(pointers[i], &(*values)[i], &requests[i]);
      if (!(*statuses)[i].ok()) continue;
      batch.push_back({readers[i]->file(), &requests[i]});
      index.push_back(i);
    }
    if (!batch.empty()) {
      // Each request carries its own status; the aggregate adds nothing.
      fs_->MultiReadFiles(batch).IgnoreError();
    }
    for (size_t j : index) {
      (*statuses)[j] = readers[j]->FinishRead(pointers[j], keys[j], requests[j], &(*values)[j]);
    }
    for (std::shared_ptr<const SegmentReader>& r : readers) r.reset();
    batch.clear();
    index.clear();
  }
  for (const absl::Status& s : *statuses) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

size_t SegmentReaderCache::open_readers() const {
  absl::MutexLock lock(&mu_);
  return lru_.size();
}

}  // namespace cairn::vlog
