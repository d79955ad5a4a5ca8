#include "lsm/internal_iterator.h"

#include <utility>

namespace cairn::lsm {

namespace {

// EmptyIterator has no entries; it carries an OK or error status, so a reader
// that failed to open (a table with a bad footer) still fits in a merge.
class EmptyIterator : public InternalIterator {
 public:
  explicit EmptyIterator(absl::Status status) : status_(std::move(status)) {}
  bool Valid() const override { return false; }
  void SeekToFirst() override {}
  void SeekToLast() override {}
  void Seek(std::string_view) override {}
  void SeekForPrev(std::string_view) override {}
  void Next() override {}
  void Prev() override {}
  std::string_view key() const override { return {}; }
  std::string_view value() const override { return {}; }
  absl::Status status() const override { return status_; }

 private:
  const absl::Status status_;
};

}  // namespace

std::unique_ptr<InternalIterator> NewErrorIterator(absl::Status status) {
  return std::make_unique<EmptyIterator>(std::move(status));
}

}  // namespace cairn::lsm
