// SuperVersion is what a read needs of the DB's state in one reference
// counted object: the memtable, the immutable memtables, the LSM version and
// the read epoch that keeps collected value-log segments on disk (RocksDB's
// SuperVersion). The DB installs a new one whenever any of them changes.
//
// SuperVersionCache hands the current one to readers without a lock in the
// common case. Each thread owns a slot (threads beyond kSlots share them)
// that caches a referenced SuperVersion: a reader swaps the slot's pointer
// for kInUse, checks the number against the current one and, when it
// matches, reads through it; afterwards it swaps the pointer back. An
// install bumps the number and empties every slot, releasing the references
// the slots held; a reader whose slot was emptied while it read releases
// its own. Only a reader that finds its slot empty or stale takes the
// cache's mutex, once per install.
//
// Thread safety: all methods are thread-safe. A SuperVersion is immutable
// once installed.
#ifndef CAIRN_CORE_SUPER_VERSION_H_
#define CAIRN_CORE_SUPER_VERSION_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "lsm/memtable.h"
#include "lsm/version_set.h"

namespace cairn {

// Read views are counted by epoch. Each epoch keeps the next one alive, so
// an epoch expires only once no view of it or of any earlier epoch remains
// (the garbage collector deletes a victim segment when the epoch current at
// its rewrite has expired).
struct ReadEpoch {
  std::shared_ptr<const ReadEpoch> next;
};

class SuperVersion {
 public:
  std::shared_ptr<lsm::MemTable> mem;
  std::vector<std::shared_ptr<lsm::MemTable>> imm;  // newest first
  std::shared_ptr<const lsm::Version> version;
  std::shared_ptr<const ReadEpoch> epoch;
  // Set by SuperVersionCache::Install: 1 for the first, +1 for each later.
  uint64_t number = 0;

  // Reference counting; a new SuperVersion holds one reference.
  void Ref() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  // Drops one reference and deletes this on the last.
  void Unref() const;
  int64_t refs_for_testing() const { return refs_.load(std::memory_order_acquire); }

 private:
  mutable std::atomic<int64_t> refs_{1};
};

// A referenced SuperVersion: releases its reference (to the slot it came
// from, or by Unref) when destroyed. Movable, not copyable.
class SuperVersionRef {
 public:
  SuperVersionRef() = default;
  SuperVersionRef(SuperVersionRef&& other) noexcept { *this = std::move(other); }
  SuperVersionRef& operator=(SuperVersionRef&& other) noexcept;
  ~SuperVersionRef() { Reset(); }

  const SuperVersion* get() const { return sv_; }
  const SuperVersion* operator->() const { return sv_; }
  const SuperVersion& operator*() const { return *sv_; }
  explicit operator bool() const { return sv_ != nullptr; }
  void Reset();

 private:
  friend class SuperVersionCache;
  class SuperVersionCache* cache_ = nullptr;  // non-null: borrowed from slot_
  size_t slot_ = 0;
  const SuperVersion* sv_ = nullptr;
};

class SuperVersionCache {
 public:
  static constexpr size_t kSlots = 64;

  SuperVersionCache() = default;
  ~SuperVersionCache();  // REQUIRES: no SuperVersionRef of this cache is alive
  SuperVersionCache(const SuperVersionCache&) = delete;
  SuperVersionCache& operator=(const SuperVersionCache&) = delete;

  // Makes sv current (the cache takes its one reference), numbers it and
  // empties every slot. Installs are serialized by the cache's mutex.
  void Install(std::unique_ptr<SuperVersion> sv) ABSL_LOCKS_EXCLUDED(mu_);

  // The current SuperVersion for a short read on this thread, through the
  // thread's slot; give it back soon (the slot is busy meanwhile, so a
  // second Acquire on the same thread takes the locked path).
  // REQUIRES: Install was called.
  SuperVersionRef Acquire() ABSL_LOCKS_EXCLUDED(mu_);
  // The current SuperVersion with a reference of its own, for holders that
  // live long (iterators, batches): never pins the thread's slot.
  SuperVersionRef AcquireOwned() ABSL_LOCKS_EXCLUDED(mu_);

  // The number of the current SuperVersion (0 before the first Install).
  uint64_t number() const { return number_.load(std::memory_order_acquire); }
  // How many Acquire calls took the mutex because their slot was empty,
  // stale or busy (for tests and the stats).
  uint64_t slow_acquires() const { return slow_acquires_.load(std::memory_order_relaxed); }

 private:
  friend class SuperVersionRef;
  struct alignas(64) Slot {
    std::atomic<const SuperVersion*> sv{nullptr};
  };
  static size_t ThisThreadSlot();
  const SuperVersion* RefCurrent() ABSL_LOCKS_EXCLUDED(mu_);
  void Return(size_t slot, const SuperVersion* sv);

  absl::Mutex mu_;
  const SuperVersion* current_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::atomic<uint64_t> number_{0};
  std::atomic<uint64_t> slow_acquires_{0};
  std::array<Slot, kSlots> slots_;
};

}  // namespace cairn

#endif  // CAIRN_CORE_SUPER_VERSION_H_
