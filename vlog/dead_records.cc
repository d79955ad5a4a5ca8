#include "vlog/dead_records.h"

#include <algorithm>
#include <limits>

namespace cairn::vlog {

void DeadRecords::Add(const Batch& batch) {
  absl::MutexLock l(&mu_);
  for (const auto& [segment, offsets] : batch) {
    std::vector<uint32_t>* list = nullptr;
    for (uint64_t offset : offsets) {
      if (size_ >= max_records_ || offset > std::numeric_limits<uint32_t>::max()) {
        ++overflowed_;
        continue;
      }
      if (list == nullptr) list = &offsets_[segment];
      list->push_back(static_cast<uint32_t>(offset));
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
    out.assign(it->second.begin(), it->second.end());
  }
  // Kept in arrival order (an append per record); sorted for the reader,
  // who walks the segment front to back.
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
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
