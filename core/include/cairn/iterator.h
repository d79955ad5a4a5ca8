// Iterator walks the database's keys in bytewise order as of one snapshot.
//
// key() and value() are valid until the next move. When Valid() turns false,
// status() tells the end of data from an error. Valid() means the entry's
// value was read: an entry whose value cannot be read (say DataLoss from a
// damaged value-log record) is never shown; the iterator turns invalid at
// it with the error in status(). Under ReadOptions::keys_only a separated
// value is read only when value() asks for it, and that read's failure
// turns the iterator invalid then.
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
  // The size of value() without reading it where the entry says it: an
  // inline value's size, and under ReadOptions::keys_only a separated
  // value's length as its value-log record stores it (the pointer's record
  // size less the 13-byte record header and the key). That is the value's
  // size unless the value log stored it compressed
  // (Options::value_compression) or chunked (a value over 64 KiB, written
  // since 2026-12-01, carries a chunk table of 16 + 9 bytes per 64 KiB
  // chunk: 160 bytes on 1 MiB), as BlobDB's blob index gives its blob's
  // stored size; value().size() is exact and reads. Without keys_only the
  // value has been read and this is value().size().
  virtual uint64_t value_size() const { return value().size(); }
  virtual absl::Status status() const = 0;
};

}  // namespace cairn

#endif  // CAIRN_ITERATOR_H_
