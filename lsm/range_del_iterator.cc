#include "lsm/range_del_iterator.h"

#include <utility>
#include <vector>

namespace cairn::lsm {
namespace {

class RangeDelFilterIterator final : public InternalIterator {
 public:
  RangeDelFilterIterator(std::unique_ptr<InternalIterator> input, RangeTombstoneSet set,
                         SequenceNumber snapshot)
      : input_(std::move(input)),
        set_(std::move(set)),
        snapshot_(snapshot),
        hints_(set_.lists().size(), -1) {}

  bool Valid() const override { return input_->Valid(); }
  void SeekToFirst() override {
    input_->SeekToFirst();
    SkipForward();
  }
  void SeekToLast() override {
    input_->SeekToLast();
    SkipBackward();
  }
  void Seek(std::string_view target) override {
    input_->Seek(target);
    SkipForward();
  }
  void PrepareSeek(std::string_view target, SeekBatch* batch) override {
    input_->PrepareSeek(target, batch);
  }
  void SeekForPrev(std::string_view target) override {
    input_->SeekForPrev(target);
    SkipBackward();
  }
  void Next() override {
    input_->Next();
    SkipForward();
  }
  void Prev() override {
    input_->Prev();
    SkipBackward();
  }
  std::string_view key() const override { return input_->key(); }
  std::string_view value() const override { return input_->value(); }
  absl::Status status() const override { return input_->status(); }

 private:
  bool Covered() {
    ParsedInternalKey ikey;
    // A malformed key is left for the consumer to report.
    if (!ParseInternalKey(input_->key(), &ikey)) return false;
    if (ikey.sequence > snapshot_) return false;  // invisible anyway
    const auto& lists = set_.lists();
    for (size_t i = 0; i < lists.size(); ++i) {
      const int f = lists[i]->FindFragment(ikey.user_key, hints_[i]);
      if (f < 0) continue;
      hints_[i] = f;
      if (lists[i]->NewestAtOrBelow(f, snapshot_) > ikey.sequence) return true;
    }
    return false;
  }
  void SkipForward() {
    while (input_->Valid() && Covered()) input_->Next();
  }
  void SkipBackward() {
    while (input_->Valid() && Covered()) input_->Prev();
  }

  std::unique_ptr<InternalIterator> input_;
  const RangeTombstoneSet set_;
  const SequenceNumber snapshot_;
  std::vector<int> hints_;
};

}  // namespace

std::unique_ptr<InternalIterator> NewRangeDelFilterIterator(std::unique_ptr<InternalIterator> input,
                                                            RangeTombstoneSet set,
                                                            SequenceNumber snapshot) {
  if (set.empty()) return input;
  return std::make_unique<RangeDelFilterIterator>(std::move(input), std::move(set), snapshot);
}

}  // namespace cairn::lsm
