// DBIter turns a merged stream of internal entries (every version of every
// key, newest first per key) into the user's view as of one sequence number:
// one entry per live key, deletions and newer versions hidden.
#ifndef CAIRN_CORE_DB_ITER_H_
#define CAIRN_CORE_DB_ITER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"

#include "absl/functional/any_invocable.h"
#include "cairn/iterator.h"
#include "lsm/dbformat.h"
#include "lsm/internal_iterator.h"
#include "vlog/value_fetcher.h"

namespace cairn {

// Resolves a stored value (inline or pointer) into the user's value.
// Inline values come back unchanged; the value log resolves pointers.
using ValueResolver = absl::AnyInvocable<absl::Status(
    std::string_view user_key, lsm::ValueType type, std::string_view stored, std::string* out)>;

// The value log's asynchronous reads for one iterator (vlog/value_fetcher.h).
using ValueFetcher = vlog::ValueFetcher;

// Value prefetching for forward scans: a second internal iterator over the
// same sources looks ahead for the next pointer entries and keeps their
// reads in flight (a sliding window), so that the values are there when the
// scan reaches them. Bounded above, the window opens after
// kPrefetchAfterValues values (read one at a time; none now, at the first
// value the value cache does not hold) and grows by two reads
// per value taken, never past the bound; unbounded, it holds one read per
// kUnboundedValuesPerPrefetch values taken plus reads of a quarter of the
// bytes taken (kUnboundedPrefetchBytes at most). Both stop at max_depth reads and
// max_bytes of value records.
struct ValuePrefetch {
  absl::AnyInvocable<std::unique_ptr<lsm::InternalIterator>()> new_lookahead;
  absl::AnyInvocable<std::unique_ptr<ValueFetcher>()> new_fetcher;
  // A pointer's value from the value cache (a read of it then costs no
  // device read), or null: the window opens only at a value the cache does
  // not hold. Null function: the window opens without asking.
  std::function<std::shared_ptr<const std::string>(std::string_view stored)> cached;
  int max_depth = 32;
  uint64_t max_bytes = uint64_t{4} << 20;
};

// The user-key range an iterator shows: [lower, upper); nullopt is
// unbounded on that side.
struct IterateBounds {
  std::optional<std::string> lower;
  std::optional<std::string> upper;
};

// keep_alive holds whatever the internal iterator reads from (memtables,
// versions); it is destroyed after the iterator. prefetch may be empty
// (null new_lookahead): values are then resolved one at a time. keys_only
// (ReadOptions::keys_only): a pointer's value is resolved only when value()
// asks, alone, and never prefetched. An expiring entry whose expiry is at or
// before now_micros (the time of the iterator's creation) reads as a
// deletion, hiding older versions of its key; 0 expires nothing.
std::unique_ptr<Iterator> NewDBIterator(std::unique_ptr<lsm::InternalIterator> internal,
                                        lsm::SequenceNumber sequence,
                                        std::shared_ptr<void> keep_alive,
                                        ValueResolver resolver, ValuePrefetch prefetch = {},
                                        IterateBounds bounds = {}, bool keys_only = false,
                                        uint64_t now_micros = 0);

}  // namespace cairn

#endif  // CAIRN_CORE_DB_ITER_H_
