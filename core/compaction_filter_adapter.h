// CompactionFilterAdapter: the user's cairn::CompactionFilter
// (cairn/compaction_filter.h) as a compaction's lsm::CompactionEntryFilter.
// A separated value is read from the value log only when the filter asks
// (CompactionFilter::Value::Read); a filter that throws or answers with a
// decision outside the enum fails the compaction with a status naming it.
// Decisions: docs/decisions/20261207_compaction_filter.md.
//
// Thread safety: Filter may run on several threads at once (the key ranges
// of a compaction); the adapter's own state is its atomic counters.
#ifndef CAIRN_CORE_COMPACTION_FILTER_ADAPTER_H_
#define CAIRN_CORE_COMPACTION_FILTER_ADAPTER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "cairn/compaction_filter.h"
#include "lsm/compaction_iterator.h"

namespace cairn {

class CompactionFilterAdapter : public lsm::CompactionEntryFilter {
 public:
  // Reads the value a pointer names (key is the entry's user key).
  using ReadValue =
      std::function<absl::Status(std::string_view key, std::string_view pointer, std::string* out)>;

  // filter must outlive the adapter; context says where the compaction runs.
  CompactionFilterAdapter(CompactionFilter* filter, CompactionFilter::Context context,
                          ReadValue read_value);

  absl::Status Filter(std::string_view user_key, lsm::ValueType type, std::string_view payload,
                      uint64_t expiry_micros, Verdict* verdict, std::string* new_value) override;

  // Value-log reads the filter asked for, and their bytes.
  uint64_t values_read() const { return values_read_.load(std::memory_order_relaxed); }
  uint64_t value_bytes_read() const { return value_bytes_read_.load(std::memory_order_relaxed); }

 private:
  CompactionFilter* const filter_;
  const CompactionFilter::Context context_;
  const ReadValue read_value_;
  std::atomic<uint64_t> values_read_{0}, value_bytes_read_{0};
};

}  // namespace cairn

#endif  // CAIRN_CORE_COMPACTION_FILTER_ADAPTER_H_
