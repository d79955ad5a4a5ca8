// DBIter turns a merged stream of internal entries (every version of every
// key, newest first per key) into the user's view as of one sequence number:
// one entry per live key, deletions and newer versions hidden.
#ifndef CAIRN_CORE_DB_ITER_H_
#define CAIRN_CORE_DB_ITER_H_

#include <memory>

#include "absl/functional/any_invocable.h"
#include "cairn/iterator.h"
#include "lsm/dbformat.h"
#include "lsm/internal_iterator.h"

namespace cairn {

// Resolves a stored value (inline or pointer) into the user's value.
// Inline values come back unchanged; the value log resolves pointers.
using ValueResolver = absl::AnyInvocable<absl::Status(
    std::string_view user_key, lsm::ValueType type, std::string_view stored, std::string* out)>;

// keep_alive holds whatever the internal iterator reads from (memtables,
// versions); it is destroyed after the iterator.
std::unique_ptr<Iterator> NewDBIterator(std::unique_ptr<lsm::InternalIterator> internal,
                                        lsm::SequenceNumber sequence,
                                        std::shared_ptr<void> keep_alive,
                                        ValueResolver resolver);

}  // namespace cairn

#endif  // CAIRN_CORE_DB_ITER_H_
