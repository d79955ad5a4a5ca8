#include "vlog/dead_records.h"

#include <algorithm>
#include <limits>

namespace cairn::vlog {

void DeadRecords::Add(const Batch& batch) {
  absl::MutexLock l(&mu_);
  for (const auto& [segment, records] : batch) {
    List* list = nullptr;
    for (const Record& r : records) {
      if (size_ >= max_records_ || r.offset > std::numeric_limits<uint32_t>::max()) {
        ++overflowed_;
        continue;
      }
      if (list == nullptr) list = &offsets_[segment];
      list->items.emplace_back(static_cast<uint32_t>(r.offset), r.size);
      ++size_;
    }
  }
}

void DeadRecords::SortLocked(List* list) const {
  auto& items = list->items;
  if (list->sorted == items.size()) return;
  const auto by_offset = [](const auto& a, const auto& b) { return a.first < b.first; };
  const auto mid = items.begin() + static_cast<ptrdiff_t>(list->sorted);
  std::sort(mid, items.end(), by_offset);
  std::inplace_merge(items.begin(), mid, items.end(), by_offset);
  list->sorted = items.size();
}

std::vector<uint64_t> DeadRecords::Offsets(uint64_t segment_id) const {
  std::vector<uint64_t> out;
  for (const Record& r : Records(segment_id)) out.push_back(r.offset);
  return out;
}

std::vector<DeadRecords::Record> DeadRecords::Records(uint64_t segment_id) const {
  std::vector<Record> out;
  absl::MutexLock l(&mu_);
  auto it = offsets_.find(segment_id);
  if (it == offsets_.end()) return out;
  SortLocked(&it->second);
  out.reserve(it->second.items.size());
  for (const auto& [offset, size] : it->second.items) {
    if (out.empty() || out.back().offset != offset) out.push_back({offset, size});
  }
  return out;
}

std::vector<PunchRun> DeadRecords::Runs(uint64_t segment_id, uint64_t min_bytes) const {
  std::vector<PunchRun> out;
  absl::MutexLock l(&mu_);
  auto it = offsets_.find(segment_id);
  if (it == offsets_.end()) return out;
  SortLocked(&it->second);
  PunchRun run;
  const auto keep = [&] {
    if (run.end > run.begin && run.end - run.begin >= min_bytes) out.push_back(run);
  };
  for (const auto& [offset, size] : it->second.items) {
    if (size == 0) continue;
    if (run.end > run.begin && offset == run.end) {
      run.end += size;
    } else if (run.end > run.begin && offset < run.end) {
      continue;  // a duplicate (or a record inside the run): nothing new
    } else {
      keep();
      run = {offset, uint64_t{offset} + size};
    }
  }
  keep();
  return out;
}

void DeadRecords::Forget(uint64_t segment_id) {
  absl::MutexLock l(&mu_);
  auto it = offsets_.find(segment_id);
  if (it == offsets_.end()) return;
  size_ -= it->second.items.size();
  offsets_.erase(it);
}

void DeadRecords::ForgetAllBut(const std::function<bool(uint64_t)>& keep) {
  absl::MutexLock l(&mu_);
  for (auto it = offsets_.begin(); it != offsets_.end();) {
    if (keep(it->first)) {
      ++it;
      continue;
    }
    size_ -= it->second.items.size();
    offsets_.erase(it++);
  }
}

size_t DeadRecords::size() const {
  absl::MutexLock l(&mu_);
  return size_;
}

uint64_t DeadRecords::overflowed() const {
  absl::MutexLock l(&mu_);
  return overflowed_;
}

}  // namespace cairn::vlog
