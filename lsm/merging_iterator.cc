#include "lsm/merging_iterator.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "lsm/dbformat.h"
#include "lsm/seek_batch.h"

namespace cairn::lsm {

namespace {

// MergingIterator keeps the valid children in a binary heap ordered by the
// direction of travel, so the current entry is the heap's top.
//
// Trade-off: a heap costs O(log n) comparisons per step, a linear scan over
// the children O(n). With the handful of children of a small tree a scan is
// as fast, but L0 alone may hold dozens of files before writes stop, and
// every read-path scan pays this cost per entry, so the heap wins where it
// matters. A direction change re-seeks every other child, a cost paid only
// when a scan turns around.
//
// Order: entries compare by internal key, then by child index, which makes
// the merge a strict total order even if two children hold the same key; that
// is what makes direction changes exact.
class MergingIterator : public InternalIterator {
 public:
  MergingIterator(std::vector<std::unique_ptr<InternalIterator>> children, io::FileSystem* fs)
      : children_(std::move(children)), fs_(fs) {
    heap_.reserve(children_.size());
  }

  bool Valid() const override { return !heap_.empty() && !child_failed_; }

  void SeekToFirst() override {
    for (auto& child : children_) child->SeekToFirst();
    Rebuild(Direction::kForward);
  }
  void SeekToLast() override {
    for (auto& child : children_) child->SeekToLast();
    Rebuild(Direction::kReverse);
  }
  void Seek(std::string_view target) override {
    if (fs_ != nullptr) {
      // The children's first blocks are read together (lsm/seek_batch.h).
      SeekBatch batch;
      for (auto& child : children_) child->PrepareSeek(target, &batch);
      batch.Run(fs_);
      for (auto& child : children_) child->Seek(target);
    } else {
      for (auto& child : children_) child->Seek(target);
    }
    Rebuild(Direction::kForward);
  }
  void PrepareSeek(std::string_view target, SeekBatch* batch) override {
    for (auto& child : children_) child->PrepareSeek(target, batch);
  }
  void SeekForPrev(std::string_view target) override {
    for (auto& child : children_) child->SeekForPrev(target);
    Rebuild(Direction::kReverse);
  }

  void Next() override {
    assert(Valid());
    if (direction_ != Direction::kForward) SwitchDirection(Direction::kForward);
    Advance();
  }
  void Prev() override {
    assert(Valid());
    if (direction_ != Direction::kReverse) SwitchDirection(Direction::kReverse);
    Advance();
  }

  std::string_view key() const override {
    assert(Valid());
    return children_[heap_.front()]->key();
  }
  std::string_view value() const override {
    assert(Valid());
    return children_[heap_.front()]->value();
  }

  absl::Status status() const override {
    for (const auto& child : children_) {
      absl::Status s = child->status();
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  enum class Direction { kForward, kReverse };

  // True when child a's entry comes before child b's in the current direction.
  bool Before(size_t a, size_t b) const {
    const int c = CompareInternalKeys(children_[a]->key(), children_[b]->key());
    if (direction_ == Direction::kForward) return c < 0 || (c == 0 && a < b);
    return c > 0 || (c == 0 && a > b);
  }
  // std:: heap functions keep the greatest element on top; we want the
  // element that comes first.
  auto HeapLess() const {
    return [this](size_t a, size_t b) { return Before(b, a); };
  }

  // Rebuilds the heap from every child's position, for direction d.
  void Rebuild(Direction d) {
    direction_ = d;
    heap_.clear();
    child_failed_ = false;
    for (size_t i = 0; i < children_.size(); ++i) {
      if (children_[i]->Valid()) {
        heap_.push_back(i);
      } else if (!children_[i]->status().ok()) {
        child_failed_ = true;
      }
    }
    std::make_heap(heap_.begin(), heap_.end(), HeapLess());
  }

  // Moves the current child one step in the current direction.
  void Advance() {
    std::pop_heap(heap_.begin(), heap_.end(), HeapLess());
    const size_t c = heap_.back();
    InternalIterator* child = children_[c].get();
    if (direction_ == Direction::kForward) {
      child->Next();
    } else {
      child->Prev();
    }
    if (child->Valid()) {
      std::push_heap(heap_.begin(), heap_.end(), HeapLess());
    } else {
      heap_.pop_back();
      if (!child->status().ok()) child_failed_ = true;
    }
  }

  // Repositions every child except the current one just past the current
  // entry in direction d, so that the heap for d has the current entry on top.
  void SwitchDirection(Direction d) {
    const size_t cur = heap_.front();
    const std::string_view target = children_[cur]->key();  // Stable: cur does not move.
    for (size_t i = 0; i < children_.size(); ++i) {
      if (i == cur) continue;
      InternalIterator* child = children_[i].get();
      if (d == Direction::kForward) {
        // Entries equal to target in a lower-index child were already passed.
        child->Seek(target);
        while (child->Valid() && i < cur && CompareInternalKeys(child->key(), target) == 0) {
          child->Next();
        }
      } else {
        child->SeekForPrev(target);
        while (child->Valid() && i > cur && CompareInternalKeys(child->key(), target) == 0) {
          child->Prev();
        }
      }
    }
    Rebuild(d);
    assert(!heap_.empty() && heap_.front() == cur);
  }

  std::vector<std::unique_ptr<InternalIterator>> children_;
  io::FileSystem* const fs_;  // null: every child seeks on its own
  std::vector<size_t> heap_;  // Indexes of the valid children.
  Direction direction_ = Direction::kForward;
  bool child_failed_ = false;  // A child turned invalid with an error.
};

}  // namespace

std::unique_ptr<InternalIterator> NewMergingIterator(
    std::vector<std::unique_ptr<InternalIterator>> children, io::FileSystem* fs) {
  if (children.empty()) return NewErrorIterator(absl::OkStatus());
  if (children.size() == 1) return std::move(children.front());
  return std::make_unique<MergingIterator>(std::move(children), fs);
}

}  // namespace cairn::lsm
