#include "core/compaction_filter_adapter.h"

#include <exception>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "vlog/vlog_format.h"
#include "vlog/value_pointer.h"

namespace cairn {
namespace {

// The entry's value behind CompactionFilter::Value: an inline one as it is,
// a separated one read at the first Read().
class LazyValue : public CompactionFilter::Value {
 public:
  LazyValue(std::string_view key, lsm::ValueType type, std::string_view payload,
            const CompactionFilterAdapter::ReadValue& read_value,
            std::atomic<uint64_t>* values_read, std::atomic<uint64_t>* bytes_read)
      : key_(key),
        separated_(type == lsm::ValueType::kValuePointer),
        payload_(payload),
        read_value_(read_value),
        values_read_(values_read),
        bytes_read_(bytes_read) {}

  uint64_t size() const override {
    if (!separated_) return payload_.size();
    // The stored size from the pointer, as Iterator::value_size gives it
    // (a compressed value's stored length).
    absl::StatusOr<vlog::ValuePointer> p = vlog::DecodeValuePointer(payload_);
    const uint64_t header = vlog::kRecordHeaderSize + key_.size();
    return p.ok() && p->size >= header ? p->size - header : 0;
  }
  bool separated() const override { return separated_; }

  absl::StatusOr<std::string_view> Read() override {
    if (!separated_) return payload_;
    if (!read_.has_value()) {
      std::string value;
      absl::Status s = read_value_(key_, payload_, &value);
      values_read_->fetch_add(1, std::memory_order_relaxed);
      if (!s.ok()) {
        read_ = std::move(s);
      } else {
        bytes_read_->fetch_add(value.size(), std::memory_order_relaxed);
        value_ = std::move(value);
        read_ = absl::OkStatus();
      }
    }
    if (!read_->ok()) return *read_;
    return std::string_view(value_);
  }

 private:
  const std::string_view key_;
  const bool separated_;
  const std::string_view payload_;
  const CompactionFilterAdapter::ReadValue& read_value_;
  std::atomic<uint64_t>* const values_read_;
  std::atomic<uint64_t>* const bytes_read_;
  std::optional<absl::Status> read_;  // set by the first Read of a separated value
  std::string value_;
};

}  // namespace

CompactionFilterAdapter::CompactionFilterAdapter(CompactionFilter* filter,
                                                 CompactionFilter::Context context,
                                                 ReadValue read_value)
    : filter_(filter), context_(context), read_value_(std::move(read_value)) {}

absl::Status CompactionFilterAdapter::Filter(std::string_view user_key, lsm::ValueType type,
                                             std::string_view payload, uint64_t expiry_micros,
                                             Verdict* verdict, std::string* new_value) {
  LazyValue value(user_key, type, payload, read_value_, &values_read_, &value_bytes_read_);
  CompactionFilter::Decision decision;
  try {
    decision = filter_->Filter(context_, user_key, value, expiry_micros, new_value);
  } catch (const std::exception& e) {
    return absl::AbortedError(absl::StrCat("compaction filter '", filter_->Name(),
                                           "' threw an exception: ", e.what()));
  } catch (...) {
    return absl::AbortedError(
        absl::StrCat("compaction filter '", filter_->Name(), "' threw a non-std exception"));
  }
  switch (decision) {
    case CompactionFilter::Decision::kKeep:
      *verdict = Verdict::kKeep;
      return absl::OkStatus();
    case CompactionFilter::Decision::kRemove:
      *verdict = Verdict::kRemove;
      return absl::OkStatus();
    case CompactionFilter::Decision::kChangeValue:
      *verdict = Verdict::kChangeValue;
      if (new_value->size() > kMaxValueSize) {
        return absl::InvalidArgumentError(absl::StrCat(
            "compaction filter '", filter_->Name(), "' changed a value to ", new_value->size(),
            " bytes, over the limit of ", kMaxValueSize));
      }
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("compaction filter '", filter_->Name(), "' returned decision ",
                   static_cast<int>(decision), ", which is none of kKeep, kRemove, kChangeValue"));
}

}  // namespace cairn
