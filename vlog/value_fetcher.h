// ValueFetcher: the asynchronous value reads of one iterator. Its
// implementation is the value log's (value_fetcher.cc); core's iterators
// use it through this interface to keep value reads in flight ahead of a
// scan.
#ifndef CAIRN_VLOG_VALUE_FETCHER_H_
#define CAIRN_VLOG_VALUE_FETCHER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "vlog/value_pointer.h"

namespace cairn::vlog {

// A fetcher merges the reads of records that lie at most kMaxFetchGap bytes
// apart in one segment into one read of at most kMaxMergedFetch bytes (a
// 4 KiB gap costs at most one more block).
inline constexpr uint64_t kMaxFetchGap = 4096;
inline constexpr uint64_t kMaxMergedFetch = 256 << 10;

// Reads values behind pointers asynchronously for an iterator: Start puts
// reads in flight and returns; Take waits for one and hands its value over.
// A fetch that is never taken is dropped when its read completes.
// Thread safety: one thread at a time, like the iterator that owns it.
class ValueFetcher {
 public:
  virtual ~ValueFetcher() = default;  // waits for reads still in flight
  // Starts reading the values of stored[i] (pointers), with keys[i] the key
  // each record must hold. Pointers already started are skipped. A record
  // that lies inside a read this fetcher already made (or has in flight) of
  // its segment (the latest one) is served from that read; reads are of
  // whole 4 KiB blocks, so a record that shares a block with one read
  // before is often served so. With readahead[i] > 0 (empty: none), a read
  // that holds stored[i]'s record covers at least readahead[i] bytes (at
  // most kMaxMergedFetch) from its start, so that the
  // records that follow it in the segment (values a flush or GC wrote in
  // key order) need no read of their own.
  virtual void Start(absl::Span<const std::string_view> keys,
                     absl::Span<const std::string_view> stored,
                     absl::Span<const uint64_t> readahead = {}) = 0;
  // Whether a Start of the pointer ptr (decoded by the caller, which has
  // it) would now be served by a read already made or in flight: it would
  // cost no device read of its own.
  virtual bool Covered(const ValuePointer& ptr) const = 0;
  // Whether stored was started and not yet taken or dropped.
  virtual bool Started(std::string_view stored) const = 0;
  // Waits for stored's read, checks it as a Get would and moves the value
  // into *value. NotFound when stored was not started.
  virtual absl::Status Take(std::string_view stored, std::string* value) = 0;
  // As Take, without a copy: *value stays valid while *pin is held (the
  // read's buffer, or the value cache's copy).
  virtual absl::Status TakeView(std::string_view stored, std::string_view* value,
                                std::shared_ptr<const void>* pin) = 0;
  // Forgets a started fetch (its read, if in flight, completes unseen).
  virtual void Drop(std::string_view stored) = 0;
  // Started and neither taken nor dropped.
  virtual size_t pending() const = 0;
  // Whether some scan of this value log has found segment_id's records in
  // key order (NoteInKeyOrder): a hint every scan shares, so that a scan's
  // first read of such a segment (a flush's or a GC job's output) reads
  // ahead at once, instead of one read of a record alone before it finds
  // the segment sequential itself.
  virtual bool KnownInKeyOrder(uint64_t segment_id) const = 0;
  virtual void NoteInKeyOrder(uint64_t segment_id) = 0;
  // A scan found two of segment_id's records that follow each other in key
  // order apart: the hint, if any, goes.
  virtual void ForgetKeyOrder(uint64_t segment_id) = 0;
};

// The shared hints behind ValueFetcher::KnownInKeyOrder: a bounded set of
// segment ids (a segment's id is never reused, so a deleted segment's hint
// is only dead weight until the set is cleared once full). Thread-safe.
class KeyOrderHints {
 public:
  bool Contains(uint64_t segment_id) const {
    absl::ReaderMutexLock l(&mu_);
    return ids_.contains(segment_id);
  }
  void Add(uint64_t segment_id) {
    absl::MutexLock l(&mu_);
    if (ids_.size() >= kMaxIds) ids_.clear();
    ids_.insert(segment_id);
  }
  void Remove(uint64_t segment_id) {
    absl::MutexLock l(&mu_);
    ids_.erase(segment_id);
  }
  static constexpr size_t kMaxIds = 4096;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_set<uint64_t> ids_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_VALUE_FETCHER_H_
