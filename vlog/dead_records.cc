#include "vlog/dead_records.h"

#include <algorithm>
#include <limits>

namespace cairn::vlog {

void DeadRecords::Add(const Batch& batch) {
  absl::MutexLock l(&mu_);
  for (const auto& [segment, records] : batch) {
    std::vector<std::pair<uint32_t, uint32_t>>* list = nullptr;
    for (const Record& r : records) {
      if (size_ >= max_records_ || r.offset > std::numeric_limits<uint32_t>::max()) {
        ++overflowed_;
        continue;
      }
      if (list == nullptr) list = &offsets_[segment];
      list->emplace_back(static_cast<uint32_t>(r.offset), r.size);
      ++size_;
    }
  }
}

std::vector<uint64_t> DeadRecords::Offsets(uint64_t segment_id) const {
  std::vector<uint64_t> out;
  {
    absl::MutexLock l(&mu_);
    auto it = offsets_.find(segment_id);
    if (it == offsets_.end()) return out;
    out.reserve(it->second.size());
    for (const auto& [offset, size] : it->second) out.push_back(offset);
  }
  // Kept in arrival order (an append per record); sorted for the reader,
  // who walks the segment front to back.
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<DeadRecords::Record> DeadRecords::Records(uint64_t segment_id) const {
  std::vector<std::pair<uint32_t, uint32_t>> list;
  {
    absl::MutexLock l(&mu_);
    auto it = offsets_.find(segment_id);
    if (it == offsets_.end()) return {};
    list = it->second;
  }
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end(),
                         [](const auto& a, const auto& b) { return a.first == b.first; }),
             list.end());
  std::vector<Record> out;
  out.reserve(list.size());
  for (const auto& [offset, size] : list) out.push_back({offset, size});
  return out;
}

void DeadRecords::Forget(uint64_t segment_id) {
  absl::MutexLock l(&mu_);
  auto it = offsets_.find(segment_id);
  if (it == offsets_.end()) return;
  size_ -= it->second.size();
  offsets_.erase(it);
}

void DeadRecords::ForgetAllBut(const std::function<bool(uint64_t)>& keep) {
  absl::MutexLock l(&mu_);
  for (auto it = offsets_.begin(); it != offsets_.end();) {
    if (keep(it->first)) {
      ++it;
      continue;
    }
    size_ -= it->second.size();
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
