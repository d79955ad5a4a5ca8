// InternalIterator walks (internal key, tagged value) pairs in internal-key
// order. Memtables, SST blocks, tables, levels and the merging iterator all
// implement it.
//
// key() and value() stay valid until the next move. After a move, Valid() is
// false at either end or on error; status() says which.
#ifndef CAIRN_LSM_INTERNAL_ITERATOR_H_
#define CAIRN_LSM_INTERNAL_ITERATOR_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace cairn::lsm {

class SeekBatch;

class InternalIterator {
 public:
  virtual ~InternalIterator() = default;
  virtual bool Valid() const = 0;
  virtual void SeekToFirst() = 0;
  virtual void SeekToLast() = 0;
  // Positions at the first entry with key >= target (an internal key).
  virtual void Seek(std::string_view target) = 0;
  // For a merged iterator that makes its children's seek reads together
  // (lsm/seek_batch.h): adds to batch the block reads that Seek(target)
  // will need. The caller then runs the batch and calls Seek(target) before
  // any other call, while the batch lives. Default: adds nothing.
  virtual void PrepareSeek(std::string_view target, SeekBatch* batch) {
    (void)target;
    (void)batch;
  }
  // Positions at the last entry with key <= target.
  virtual void SeekForPrev(std::string_view target) = 0;
  virtual void Next() = 0;
  virtual void Prev() = 0;
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  virtual absl::Status status() const = 0;
};

// An iterator that is empty, carrying status (OK or an error).
std::unique_ptr<InternalIterator> NewErrorIterator(absl::Status status);

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_INTERNAL_ITERATOR_H_
