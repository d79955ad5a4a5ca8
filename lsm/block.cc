#include "lsm/block.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "io/coding.h"
#include "lsm/dbformat.h"

namespace cairn::lsm {

absl::StatusOr<std::shared_ptr<const Block>> Block::Create(std::string contents,
                                                           std::string origin) {
  auto bad = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat(origin, ": ", what));
  };
  if (contents.size() < sizeof(uint32_t)) return bad("block shorter than its restart count");
  if (contents.size() > UINT32_MAX) return bad("block larger than 4 GiB");
  const size_t size = contents.size();
  const uint32_t num_restarts = io::DecodeFixed32(contents.data() + size - 4);
  const size_t max_restarts = (size - 4) / 4;
  if (num_restarts == 0 || num_restarts > max_restarts) {
    return bad(absl::StrCat("bad restart count ", num_restarts));
  }
  const uint32_t restarts_offset = static_cast<uint32_t>(size - 4 - 4 * size_t{num_restarts});
  // Restart points must start at 0 and increase strictly inside the entry
  // area; the iterator's binary search and Prev rely on it. An empty block
  // has the single restart point 0 and no entries.
  uint32_t prev = 0;
  for (uint32_t i = 0; i < num_restarts; ++i) {
    const uint32_t r = io::DecodeFixed32(contents.data() + restarts_offset + 4 * size_t{i});
    const bool ok = (i == 0) ? (r == 0 && (restarts_offset > 0 || num_restarts == 1))
                             : (r > prev && r < restarts_offset);
    if (!ok) return bad(absl::StrCat("bad restart point ", i, " (", r, ")"));
    prev = r;
  }
  return std::shared_ptr<const Block>(
      new Block(std::move(contents), std::move(origin), restarts_offset, num_restarts));
}

Block::Block(std::string contents, std::string origin, uint32_t restarts_offset,
             uint32_t num_restarts)
    : contents_(std::move(contents)),
      origin_(std::move(origin)),
      restarts_offset_(restarts_offset),
      num_restarts_(num_restarts) {}

// Walks one block. current_ is the offset of the entry under the cursor
// (restarts_ when not valid), next_ the offset just past it. An error is
// sticky: the bytes will not get better by seeking again.
class BlockIterator final : public InternalIterator {
 public:
  explicit BlockIterator(const Block* block)
      : block_(block),
        data_(block->contents_.data()),
        restarts_(block->restarts_offset_),
        num_restarts_(block->num_restarts_),
        current_(restarts_),
        next_(restarts_),
        restart_index_(num_restarts_) {}

  bool Valid() const override { return current_ < restarts_ && status_.ok(); }
  std::string_view key() const override { return key_; }
  std::string_view value() const override { return value_; }
  absl::Status status() const override { return status_; }

  void SeekToFirst() override {
    if (!status_.ok()) return;
    SeekToRestartPoint(0);
    ParseNextEntry();
  }

  void SeekToLast() override {
    if (!status_.ok()) return;
    SeekToRestartPoint(num_restarts_ - 1);
    while (ParseNextEntry() && next_ < restarts_) {
    }
  }

  void Seek(std::string_view target) override {
    if (!status_.ok()) return;
    // Find the last restart point whose key is < target, then scan forward.
    uint32_t left = 0, right = num_restarts_ - 1;
    while (left < right) {
      const uint32_t mid = left + (right - left + 1) / 2;
      std::string_view mid_key;
      if (!DecodeRestartKey(mid, &mid_key)) return;
      if (CompareInternalKeys(mid_key, target) < 0) {
        left = mid;
      } else {
        right = mid - 1;
      }
    }
    SeekToRestartPoint(left);
    while (ParseNextEntry()) {
      if (CompareInternalKeys(key_, target) >= 0) return;
    }
  }

  void SeekForPrev(std::string_view target) override {
    Seek(target);
    if (!status_.ok()) return;
    if (!Valid()) {
      SeekToLast();
    } else if (CompareInternalKeys(key_, target) > 0) {
      Prev();
    }
  }

  void Next() override {
    if (!Valid()) return;
    ParseNextEntry();
  }

  void Prev() override {
    if (!Valid()) return;
    const uint32_t original = current_;
    while (RestartPoint(restart_index_) >= original) {
      if (restart_index_ == 0) {
        MarkInvalid();
        return;
      }
      --restart_index_;
    }
    SeekToRestartPoint(restart_index_);
    while (ParseNextEntry() && next_ < original) {
    }
  }

 private:
  uint32_t RestartPoint(uint32_t i) const {
    return io::DecodeFixed32(data_ + restarts_ + 4 * size_t{i});
  }

  void SeekToRestartPoint(uint32_t i) {
    key_.clear();
    value_ = {};
    restart_index_ = i;
    next_ = RestartPoint(i);
  }

  void MarkInvalid() {
    current_ = restarts_;
    next_ = restarts_;
    restart_index_ = num_restarts_;
    key_.clear();
    value_ = {};
  }

  bool Corrupt(uint32_t offset, absl::string_view what) {
    status_ = absl::DataLossError(
        absl::StrCat(block_->origin(), ": ", what, " at block offset ", offset));
    MarkInvalid();
    return false;
  }

  // Decodes the entry header at offset: shared, non-shared and value lengths,
  // checked against the entry area. *rest is what follows the header.
  bool DecodeHeader(uint32_t offset, uint32_t* shared, uint32_t* non_shared,
                    uint32_t* value_len, std::string_view* rest) {
    *rest = std::string_view(data_ + offset, restarts_ - offset);
    if (!io::GetVarint32(rest, shared) || !io::GetVarint32(rest, non_shared) ||
        !io::GetVarint32(rest, value_len)) {
      return Corrupt(offset, "truncated entry header");
    }
    if (uint64_t{*non_shared} + *value_len > rest->size()) {
      return Corrupt(offset, "entry overruns the block");
    }
    return true;
  }

  bool DecodeRestartKey(uint32_t i, std::string_view* key) {
    const uint32_t offset = RestartPoint(i);
    uint32_t shared, non_shared, value_len;
    std::string_view rest;
    if (!DecodeHeader(offset, &shared, &non_shared, &value_len, &rest)) return false;
    if (shared != 0) return Corrupt(offset, "restart entry shares a prefix");
    *key = rest.substr(0, non_shared);
    ParsedInternalKey parsed;
    if (!ParseInternalKey(*key, &parsed)) return Corrupt(offset, "bad internal key");
    return true;
  }

  // Moves to the entry at next_. False at the end of the block or on error.
  bool ParseNextEntry() {
    current_ = next_;
    if (current_ >= restarts_) {
      MarkInvalid();
      return false;
    }
    uint32_t shared, non_shared, value_len;
    std::string_view rest;
    if (!DecodeHeader(current_, &shared, &non_shared, &value_len, &rest)) return false;
    if (shared > key_.size()) return Corrupt(current_, "shared prefix longer than previous key");
    key_.resize(shared);
    key_.append(rest.data(), non_shared);
    ParsedInternalKey parsed;
    if (!ParseInternalKey(key_, &parsed)) return Corrupt(current_, "bad internal key");
    value_ = rest.substr(non_shared, value_len);
    next_ = static_cast<uint32_t>(value_.data() + value_.size() - data_);
    while (restart_index_ + 1 < num_restarts_ && RestartPoint(restart_index_ + 1) <= current_) {
      ++restart_index_;
    }
    return true;
  }

  const Block* block_;
  const char* data_;
  const uint32_t restarts_;
  const uint32_t num_restarts_;
  uint32_t current_;
  uint32_t next_;
  uint32_t restart_index_;
  std::string key_;
  std::string_view value_;
  absl::Status status_;
};

std::unique_ptr<InternalIterator> Block::NewIterator() const {
  return std::make_unique<BlockIterator>(this);
}

}  // namespace cairn::lsm
