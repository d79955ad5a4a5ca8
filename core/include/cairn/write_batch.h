// WriteBatch holds updates that DB::Write applies atomically: after any crash
// either all of them are visible or none.
#ifndef CAIRN_WRITE_BATCH_H_
#define CAIRN_WRITE_BATCH_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace cairn {

class WriteBatch {
 public:
  WriteBatch();
  void Put(std::string_view key, std::string_view value);
  void Delete(std::string_view key);
  void Clear();
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
  };
  absl::Status Iterate(Handler* handler) const;

 private:
  friend class WriteBatchInternal;
  std::string rep_;  // Layout: docs/wal_format.md (batch payload).
};

}  // namespace cairn

#endif  // CAIRN_WRITE_BATCH_H_
