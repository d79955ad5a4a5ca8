#include "lsm/subcompaction.h"

#include <algorithm>
#include <utility>

#include "lsm/dbformat.h"

namespace cairn::lsm {
namespace {

// Candidate split keys taken from each input table per range wanted: enough
// that a quantile lands within a few percent of its target.
constexpr size_t kSamplesPerPart = 32;

class UserKeyRangeIterator final : public InternalIterator {
 public:
  UserKeyRangeIterator(std::unique_ptr<InternalIterator> input, const std::string* start,
                       const std::string* end)
      : input_(std::move(input)), start_(start), end_(end) {}

  bool Valid() const override { return status_.ok() && input_->Valid() && !PastEnd(); }
  void SeekToFirst() override {
    if (start_ == nullptr) {
      input_->SeekToFirst();
    } else {
      input_->Seek(MakeLookupKey(*start_, kMaxSequenceNumber));
    }
  }
  void Next() override { input_->Next(); }
  std::string_view key() const override { return input_->key(); }
  std::string_view value() const override { return input_->value(); }
  absl::Status status() const override {
    return status_.ok() ? input_->status() : status_;
  }

  // A compaction reads forward from the start only.
  void SeekToLast() override { Unsupported(); }
  void Seek(std::string_view) override { Unsupported(); }
  void SeekForPrev(std::string_view) override { Unsupported(); }
  void Prev() override { Unsupported(); }

 private:
  bool PastEnd() const {
    if (end_ == nullptr) return false;
    const std::string_view k = input_->key();
    // A malformed key is left for the compaction iterator to report.
    return k.size() >= 8 && ExtractUserKey(k) >= *end_;
  }
  void Unsupported() {
    status_ = absl::UnimplementedError("a key-range compaction input reads forward only");
  }

  const std::unique_ptr<InternalIterator> input_;
  const std::string* const start_;
  const std::string* const end_;
  absl::Status status_;
};

}  // namespace

int SubcompactionCount(const Compaction& c, int max_parts) {
  if (max_parts <= 1 || c.IsTrivialMove()) return 1;
  const uint64_t per_part = std::max<uint64_t>(1, c.MaxOutputFileSize());
  const uint64_t by_size = c.InputBytes() / per_part;
  return static_cast<int>(std::clamp<uint64_t>(by_size, 1, static_cast<uint64_t>(max_parts)));
}

std::vector<std::string> SubcompactionBoundaries(const Compaction& c, TableCache* table_cache,
                                                 int parts) {
  std::vector<std::string> boundaries;
  if (parts < 2) return boundaries;
  struct Input {
    const FileMetaData* meta;
    std::shared_ptr<Table> table;
    uint64_t data_bytes;  // the table's data blocks; its index and filter do not count
  };
  std::vector<Input> inputs;
  std::vector<std::string> candidates;
  for (int which = 0; which < 2; ++which) {
    for (const auto& f : c.inputs(which)) {
      absl::StatusOr<std::shared_ptr<Table>> table = table_cache->FindTable(f->number, f->file_size);
      if (!table.ok()) return {};
      for (const std::string& k : (*table)->SampleIndexKeys(kSamplesPerPart * parts)) {
        if (k.size() >= 8) candidates.emplace_back(ExtractUserKey(k));
      }
      std::string past_last(f->largest_user_key());
      past_last.push_back('\0');
      const uint64_t data_bytes =
          (*table)->ApproximateOffsetOf(MakeLookupKey(past_last, kMaxSequenceNumber));
      inputs.push_back({f.get(), *std::move(table), data_bytes});
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

  // Input bytes before user key k, summed over the inputs.
  auto bytes_below = [&inputs](const std::string& k) {
    const std::string seek = MakeLookupKey(k, kMaxSequenceNumber);
    uint64_t sum = 0;
    for (const Input& in : inputs) {
      if (in.meta->largest_user_key() < k) {
        sum += in.data_bytes;
      } else if (in.meta->smallest_user_key() < k) {
        sum += in.table->ApproximateOffsetOf(seek);
      }
    }
    return sum;
  };
  uint64_t total = 0;
  for (const Input& in : inputs) total += in.data_bytes;
  int next = 1;  // the quantile the next boundary is for
  for (const std::string& k : candidates) {
    if (next >= parts) break;
    if (k <= c.smallest_user_key() || k > c.largest_user_key()) continue;
    // Past next/parts of the input: cut here.
    if (bytes_below(k) * static_cast<uint64_t>(parts) >= total * static_cast<uint64_t>(next)) {
      boundaries.push_back(k);
      ++next;
    }
  }
  return boundaries;
}

std::unique_ptr<InternalIterator> NewUserKeyRangeIterator(std::unique_ptr<InternalIterator> input,
                                                          const std::string* start,
                                                          const std::string* end) {
  return std::make_unique<UserKeyRangeIterator>(std::move(input), start, end);
}

}  // namespace cairn::lsm
