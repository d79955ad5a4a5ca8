// DBIter turns a merged stream of internal entries (every version of every
// key, newest first per key) into the user's view as of one sequence number:
// one entry per live key, deletions and newer versions hidden.
#ifndef CAIRN_CORE_DB_ITER_H_
#define CAIRN_CORE_DB_ITER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"

#include "absl/functional/any_invocable.h"
#include "cairn/iterator.h"
#include "lsm/dbformat.h"
#include "lsm/internal_iterator.h"

namespace cairn {

// Resolves a stored value (inline or pointer) into the user's value.
// Inline values come back unchanged; the value log resolves pointers.
using ValueResolver = absl::AnyInvocable<absl::Status(
    std::string_view user_key, lsm::ValueType type, std::string_view stored, std::string* out)>;

// Resolves many pointers at once (their reads in flight together):
// statuses[i] says whether values[i] is set.
using BatchValueResolver = absl::AnyInvocable<void(
    absl::Span<const std::string_view> user_keys, absl::Span<const std::string_view> stored,
    std::vector<std::string>* values, std::vector<absl::Status>* statuses)>;

// Value prefetching for forward scans: a second internal iterator over the
// same sources looks ahead for the next pointer entries, whose values are
// read in one batch. depth is the most reads kept in flight; it starts at 4
// and doubles with each batch a sequential scan uses up.
struct ValuePrefetch {
  absl::AnyInvocable<std::unique_ptr<lsm::InternalIterator>()> new_lookahead;
  BatchValueResolver resolve_batch;
  int max_depth = 32;
};

// keep_alive holds whatever the internal iterator reads from (memtables,
// versions); it is destroyed after the iterator. prefetch may be empty
// (null new_lookahead): values are then resolved one at a time.
std::unique_ptr<Iterator> NewDBIterator(std::unique_ptr<lsm::InternalIterator> internal,
                                        lsm::SequenceNumber sequence,
                                        std::shared_ptr<void> keep_alive,
                                        ValueResolver resolver, ValuePrefetch prefetch = {});

}  // namespace cairn

#endif  // CAIRN_CORE_DB_ITER_H_
