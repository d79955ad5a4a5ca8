#include "core/retention.h"

#include <algorithm>
#include <utility>

namespace cairn {

Retention::SequencePin& Retention::SequencePin::operator=(SequencePin&& other) noexcept {
  if (this != &other) {
    Reset();
    owner_ = std::exchange(other.owner_, nullptr);
    sequence_ = other.sequence_;
  }
  return *this;
}

void Retention::SequencePin::Reset() {
  if (owner_ != nullptr) std::exchange(owner_, nullptr)->Unpin(sequence_);
}

std::shared_ptr<const ReadEpoch> Retention::epoch() const {
  absl::MutexLock l(&mu_);
  return epoch_;
}

std::weak_ptr<const void> Retention::EndEpoch() {
  absl::MutexLock l(&mu_);
  return EndEpochLocked();
}

std::weak_ptr<const void> Retention::EndEpochLocked() {
  std::weak_ptr<const void> ended(epoch_);
  auto next = std::make_shared<ReadEpoch>();
  epoch_->next = next;
  epoch_ = std::move(next);
  return ended;
}

Retention::SequencePin Retention::PinSequence(uint64_t sequence) {
  absl::MutexLock l(&mu_);
  pinned_.insert(sequence);
  SequencePin pin;
  pin.owner_ = this;
  pin.sequence_ = sequence;
  return pin;
}

void Retention::Unpin(uint64_t sequence) {
  absl::MutexLock l(&mu_);
  auto it = pinned_.find(sequence);
  if (it != pinned_.end()) pinned_.erase(it);
}

size_t Retention::pinned_sequences() const {
  absl::MutexLock l(&mu_);
  return pinned_.size();
}

void Retention::AddObsolete(absl::Span<const uint64_t> ids, uint64_t sequence) {
  absl::MutexLock l(&mu_);
  // Readers from before the move hold this epoch or an earlier one.
  const std::weak_ptr<const void> ended = EndEpochLocked();
  for (uint64_t id : ids) obsolete_.Add({.segment_id = id, .sequence = sequence, .epoch = ended});
}

std::vector<uint64_t> Retention::TakeDeletable(uint64_t oldest_snapshot) {
  absl::MutexLock l(&mu_);
  uint64_t oldest =
      pinned_.empty() ? oldest_snapshot : std::min(oldest_snapshot, *pinned_.begin());
  oldest = std::min(oldest, wal_floor_);
  return obsolete_.TakeDeletable(oldest);
}

void Retention::AddObsoleteAtOpen(absl::Span<const uint64_t> ids, uint64_t sequence) {
  absl::MutexLock l(&mu_);
  for (uint64_t id : ids) obsolete_.Add({.segment_id = id, .sequence = sequence});
}

void Retention::SetWalFloor(uint64_t sequence) {
  absl::MutexLock l(&mu_);
  wal_floor_ = sequence;
}

size_t Retention::obsolete_segments() const {
  absl::MutexLock l(&mu_);
  return obsolete_.size();
}

}  // namespace cairn
