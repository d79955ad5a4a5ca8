#include "lsm/level_iterator.h"

#include <algorithm>
#include <utility>

#include "lsm/dbformat.h"
#include "lsm/table_cache.h"

namespace cairn::lsm {
namespace {

class LevelIterator : public InternalIterator {
 public:
  LevelIterator(const TableReadOptions& ro, TableCache* tc,
                std::vector<std::shared_ptr<FileMetaData>> files)
      : ro_(ro), tc_(tc), files_(std::move(files)), index_(files_.size()) {}

  bool Valid() const override { return file_iter_ != nullptr && file_iter_->Valid(); }

  void SeekToFirst() override {
    if (!OpenFile(0)) return;
    file_iter_->SeekToFirst();
    SkipEmptyFilesForward();
  }

  void SeekToLast() override {
    if (files_.empty()) {
      OpenFile(0);
      return;
    }
    if (!OpenFile(files_.size() - 1)) return;
    file_iter_->SeekToLast();
    SkipEmptyFilesBackward();
  }

  void Seek(std::string_view target) override {
    if (!OpenFile(FindFile(files_, target))) return;
    file_iter_->Seek(target);
    SkipEmptyFilesForward();
  }

  void PrepareSeek(std::string_view target, SeekBatch* batch) override {
    // Seek(target) stays on the file opened here.
    if (!OpenFile(FindFile(files_, target))) return;
    file_iter_->PrepareSeek(target, batch);
  }

  void SeekForPrev(std::string_view target) override {
    // The last entry <= target lies in the first file whose largest key is
    // >= target, or, when that file starts after target, in an earlier one.
    size_t i = FindFile(files_, target);
    if (i == files_.size()) {
      SeekToLast();
      return;
    }
    if (!OpenFile(i)) return;
    file_iter_->SeekForPrev(target);
    SkipEmptyFilesBackward();
  }

  void Next() override {
    file_iter_->Next();
    SkipEmptyFilesForward();
  }

  void Prev() override {
    file_iter_->Prev();
    SkipEmptyFilesBackward();
  }

  std::string_view key() const override { return file_iter_->key(); }
  std::string_view value() const override { return file_iter_->value(); }

  absl::Status status() const override {
    if (!status_.ok()) return status_;
    return file_iter_ != nullptr ? file_iter_->status() : absl::OkStatus();
  }

 private:
  // Positions on file i, reusing the open iterator when it is already there.
  // Past the last file (or on an earlier error) the iterator becomes invalid
  // and false is returned.
  bool OpenFile(size_t i) {
    if (!status_.ok() || i >= files_.size()) {
      file_iter_.reset();
      index_ = files_.size();
      return false;
    }
    if (file_iter_ != nullptr && index_ == i) return true;
    if (!SaveError()) return false;
    index_ = i;
    const FileMetaData& f = *files_[i];
    file_iter_ = tc_->NewIterator(ro_, f.number, f.file_size);
    return true;
  }

  // Keeps the status of the iterator about to be dropped; false (and the
  // level iterator invalid) when it is an error.
  bool SaveError() {
    if (file_iter_ != nullptr && !file_iter_->status().ok()) {
      status_ = file_iter_->status();
      file_iter_.reset();
      index_ = files_.size();
      return false;
    }
    return true;
  }

  void SkipEmptyFilesForward() {
    while (file_iter_ != nullptr && !file_iter_->Valid()) {
      if (!file_iter_->status().ok()) return;  // Stop on errors; status() says why.
      if (index_ + 1 >= files_.size()) {
        file_iter_.reset();
        index_ = files_.size();
        return;
      }
      if (!OpenFile(index_ + 1)) return;
      file_iter_->SeekToFirst();
    }
  }

  void SkipEmptyFilesBackward() {
    while (file_iter_ != nullptr && !file_iter_->Valid()) {
      if (!file_iter_->status().ok()) return;
      if (index_ == 0) {
        file_iter_.reset();
        index_ = files_.size();
        return;
      }
      if (!OpenFile(index_ - 1)) return;
      file_iter_->SeekToLast();
    }
  }

  const TableReadOptions ro_;
  TableCache* const tc_;
  const std::vector<std::shared_ptr<FileMetaData>> files_;
  size_t index_;  // file of file_iter_; files_.size() when none
  std::unique_ptr<InternalIterator> file_iter_;
  absl::Status status_;  // first error of a file iterator already dropped
};

}  // namespace

size_t FindFile(const std::vector<std::shared_ptr<FileMetaData>>& files,
                std::string_view internal_key) {
  auto it = std::partition_point(files.begin(), files.end(), [&](const auto& f) {
    return CompareInternalKeys(f->largest, internal_key) < 0;
  });
  return static_cast<size_t>(it - files.begin());
}

std::unique_ptr<InternalIterator> NewLevelIterator(
    const TableReadOptions& ro, TableCache* tc,
    std::vector<std::shared_ptr<FileMetaData>> files) {
  return std::make_unique<LevelIterator>(ro, tc, std::move(files));
}

}  // namespace cairn::lsm
