// Iterator walks the database's keys in bytewise order as of one snapshot.
//
// key() and value() are valid until the next move. When Valid() turns false,
// status() tells the end of data from an error. Valid() means the entry's
// value was read: an entry whose value cannot be read (say DataLoss from a
// damaged value-log record) is never shown; the iterator turns invalid at
// it with the error in status().
//
// Thread safety: one thread at a time.
#ifndef CAIRN_ITERATOR_H_
#define CAIRN_ITERATOR_H_

#include <string_view>

#include "absl/status/status.h"

namespace cairn {

class Iterator {
 public:
  virtual ~Iterator() = default;
  virtual bool Valid() const = 0;
  virtual void SeekToFirst() = 0;
  virtual void SeekToLast() = 0;
  // First key >= target.
  virtual void Seek(std::string_view target) = 0;
  // Last key <= target.
  virtual void SeekForPrev(std::string_view target) = 0;
  virtual void Next() = 0;
  virtual void Prev() = 0;
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  virtual absl::Status status() const = 0;
};

}  // namespace cairn

#endif  // CAIRN_ITERATOR_H_
