// WriteBatch holds updates that DB::Write applies atomically: after any crash
// either all of them are visible or none.
//
// A key over kMaxKeySize or a value over kMaxValueSize is never copied: Put
// or Delete records InvalidArgument in status() instead of adding the
// update, and DB::Write returns that status without applying any of the
// batch. Clear resets it.
#ifndef CAIRN_WRITE_BATCH_H_
#define CAIRN_WRITE_BATCH_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "cairn/options.h"

namespace cairn {

class WriteBatch {
 public:
  WriteBatch();
  void Put(std::string_view key, std::string_view value);
  // A Put that reads as deleted from expiry_micros (microseconds since the
  // Unix epoch, measured by Options::clock) on; WriteOptions::ttl_seconds
  // and Options::default_ttl_seconds leave it as it is. 0 records
  // InvalidArgument in status() (0 means "never expires": use Put).
  void PutWithExpiry(std::string_view key, std::string_view value, uint64_t expiry_micros);
  void Delete(std::string_view key);
  // Deletes every key in [begin, end) (end exclusive) that exists when the
  // batch is applied. begin >= end, or either over kMaxKeySize, records
  // InvalidArgument in status() and adds nothing. The empty key is a valid
  // begin (the start of the key space), as for Put.
  void DeleteRange(std::string_view begin, std::string_view end);
  // Clear keeps the memory the batch holds, for the next batch built in it.
  void Clear();
  // Room for about bytes more of keys and values (each entry also takes a
  // few bytes of its own), so that a large batch built in known steps is not
  // copied as it grows. Never shrinks the batch.
  void Reserve(size_t bytes);
  // OK, or the first oversize key or value (or bad range) that Put, Delete
  // or DeleteRange refused.
  const absl::Status& status() const { return status_; }
  // Number of updates.
  uint32_t Count() const;
  // Bytes of the batch's encoding (a rough measure of its size).
  size_t ApproximateSize() const { return rep_.size(); }

  // Visits the updates in order.
  class Handler {
   public:
    virtual ~Handler() = default;
    virtual void Put(std::string_view key, std::string_view value) = 0;
    virtual void Delete(std::string_view key) = 0;
    // A range deletion. The default returns Unimplemented, which ends
    // Iterate with that status: a handler written before range deletions
    // (2026-12-07) is told rather than shown a batch with updates missing.
    virtual absl::Status DeleteRange(std::string_view begin, std::string_view end);
    // An expiring Put; by default handed to Put without its expiry.
    virtual void PutWithExpiry(std::string_view key, std::string_view value,
                               uint64_t expiry_micros) {
      (void)expiry_micros;
      Put(key, value);
    }
  };
  absl::Status Iterate(Handler* handler) const;

 private:
  friend class WriteBatchInternal;
  // Records the refusal of a key or value over its limit, before any copy.
  bool CheckSizes(std::string_view key, std::string_view value);

  std::string rep_;  // Layout: docs/wal_format.md (batch payload).
  absl::Status status_;
};

}  // namespace cairn

#endif  // CAIRN_WRITE_BATCH_H_
