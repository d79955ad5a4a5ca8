#include "core/super_version.h"

#include <utility>

namespace cairn {

namespace {

// The value a slot holds while its thread reads through the SuperVersion it
// took out; never dereferenced.
const char kInUseMarker = 0;
const SuperVersion* const kInUse = reinterpret_cast<const SuperVersion*>(&kInUseMarker);

}  // namespace

void SuperVersion::Unref() const {
  // acq_rel: the last holder must see every other holder's reads finished
  // before it destroys the members.
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

SuperVersionRef& SuperVersionRef::operator=(SuperVersionRef&& other) noexcept {
  if (this != &other) {
    Reset();
    cache_ = std::exchange(other.cache_, nullptr);
    slot_ = other.slot_;
    sv_ = std::exchange(other.sv_, nullptr);
  }
  return *this;
}

void SuperVersionRef::Reset() {
  if (sv_ == nullptr) return;
  if (cache_ != nullptr) {
    cache_->Return(slot_, sv_);
  } else {
    sv_->Unref();
  }
  cache_ = nullptr;
  sv_ = nullptr;
}

SuperVersionCache::~SuperVersionCache() {
  for (Slot& slot : slots_) {
    const SuperVersion* sv = slot.sv.exchange(nullptr, std::memory_order_acq_rel);
    if (sv != nullptr && sv != kInUse) sv->Unref();
  }
  absl::MutexLock l(&mu_);
  if (current_ != nullptr) current_->Unref();
  current_ = nullptr;
}

size_t SuperVersionCache::ThisThreadSlot() {
  // Threads get consecutive slots in the order they first read, so up to
  // kSlots threads never share one.
  static std::atomic<size_t> next_thread{0};
  thread_local const size_t slot =
      next_thread.fetch_add(1, std::memory_order_relaxed) % kSlots;
  return slot;
}

void SuperVersionCache::Install(std::unique_ptr<SuperVersion> sv) {
  const SuperVersion* old;
  {
    absl::MutexLock l(&mu_);
    sv->number = number_.load(std::memory_order_relaxed) + 1;
    old = current_;
    current_ = sv.release();
    number_.store(current_->number, std::memory_order_release);
  }
  // Every slot now holds a stale SuperVersion (or is busy, or empty): take
  // them back so that the memtables and versions they pin can go. A reader
  // that is using its slot's one finds the slot empty when it returns it
  // and releases the reference itself.
  for (Slot& slot : slots_) {
    const SuperVersion* cached = slot.sv.load(std::memory_order_relaxed);
    if (cached == nullptr) continue;
    cached = slot.sv.exchange(nullptr, std::memory_order_acq_rel);
    if (cached != nullptr && cached != kInUse) cached->Unref();
  }
  if (old != nullptr) old->Unref();
}

const SuperVersion* SuperVersionCache::RefCurrent() {
  absl::MutexLock l(&mu_);
  current_->Ref();
  return current_;
}

SuperVersionRef SuperVersionCache::Acquire() {
  const size_t index = ThisThreadSlot();
  Slot& slot = slots_[index];
  const SuperVersion* sv = slot.sv.exchange(kInUse, std::memory_order_acq_rel);
  if (sv == kInUse) {
    // Another thread sharing this slot is reading through it: do not touch
    // the slot at all.
    slow_acquires_.fetch_add(1, std::memory_order_relaxed);
    SuperVersionRef ref;
    ref.sv_ = RefCurrent();
    return ref;
  }
  if (sv == nullptr || sv->number != number_.load(std::memory_order_acquire)) {
    if (sv != nullptr) sv->Unref();
    slow_acquires_.fetch_add(1, std::memory_order_relaxed);
    sv = RefCurrent();
  }
  SuperVersionRef ref;
  ref.cache_ = this;
  ref.slot_ = index;
  ref.sv_ = sv;
  return ref;
}

SuperVersionRef SuperVersionCache::AcquireOwned() {
  SuperVersionRef borrowed = Acquire();
  borrowed.sv_->Ref();
  SuperVersionRef owned;
  owned.sv_ = borrowed.sv_;
  return owned;
}

void SuperVersionCache::Return(size_t index, const SuperVersion* sv) {
  // The slot still says kInUse unless an install emptied it (or a thread
  // sharing the slot refilled it) meanwhile: then the slot no longer wants
  // this reference.
  const SuperVersion* expected = kInUse;
  if (!slots_[index].sv.compare_exchange_strong(expected, sv, std::memory_order_acq_rel,
                                                std::memory_order_acquire)) {
    sv->Unref();
  }
}

}  // namespace cairn
