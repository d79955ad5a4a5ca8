// Reads for blob-sized values: Get into a PinnableValue and GetRange
// (docs/blob_reads.md). The LSM lookup is the one Get uses (db_read.cc);
// only the value's resolution differs.
#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "io/status_macros.h"

namespace cairn {

using lsm::ValueType;

// For DB implementations without a ranged read of their own: the whole
// value, then the slice.
absl::Status DB::GetRange(const ReadOptions& options, std::string_view key, uint64_t offset,
                          uint64_t length, std::string* out) {
  std::string whole;
  CAIRN_RETURN_IF_ERROR(Get(options, key, &whole));
  out->assign(vlog::ValueRange(whole, offset, length));
  return absl::OkStatus();
}

absl::Status DBImpl::LookupForValueRead(const ReadOptions& options, std::string_view key,
                                        ReadView* view, ValueType* type, std::string* stored) {
  if (key.size() > kMaxKeySize) {
    return absl::InvalidArgumentError(
        absl::StrCat("key of ", key.size(), " bytes exceeds the limit of ", kMaxKeySize));
  }
  counters_.gets.fetch_add(1, std::memory_order_relaxed);
  *view = GetReadView(options);
  CAIRN_RETURN_IF_ERROR(LookupInView(*view, key, type, stored));
  CAIRN_RETURN_IF_ERROR(ResolveExpiry(key, view->now_micros, type, stored));
  if (after_value_lookup_for_testing) after_value_lookup_for_testing();
  return absl::OkStatus();
}

absl::Status DBImpl::Get(const ReadOptions& options, std::string_view key, PinnableValue* value) {
  ValueType type;
  std::string stored;
  // Held until the value is read: its epoch keeps the segment the pointer
  // names on disk (core/retention.h).
  ReadView view;
  CAIRN_RETURN_IF_ERROR(LookupForValueRead(options, key, &view, &type, &stored));
  absl::Status s;
  if (type == ValueType::kValuePointer) {
    // The cached value is shared, not copied; without a cache the value is
    // read into the PinnableValue's own buffer.
    std::shared_ptr<const std::string> shared;
    s = vlog_->GetShared(key, stored, &shared, value->OwnBuffer(), options.fill_cache);
    if (s.ok() && shared != nullptr) value->Pin(std::move(shared));
  } else {
    s = ResolveStoredValue(key, type, stored, value->OwnBuffer(), options.fill_cache);
  }
  if (s.ok()) counters_.gets_found.fetch_add(1, std::memory_order_relaxed);
  return s;
}

absl::Status DBImpl::GetRange(const ReadOptions& options, std::string_view key, uint64_t offset,
                              uint64_t length, std::string* out) {
  ValueType type;
  std::string stored;
  ReadView view;  // held until the range is read, as in Get above
  CAIRN_RETURN_IF_ERROR(LookupForValueRead(options, key, &view, &type, &stored));
  out->clear();
  absl::Status s;
  switch (type) {
    case ValueType::kValuePointer:
      s = vlog_->GetRange(key, stored, offset, length, options.verify_checksums, out,
                          options.fill_cache);
      break;
    case ValueType::kValue:
      out->assign(vlog::ValueRange(stored, offset, length));
      break;
    case ValueType::kValueWithExpiry:
    case ValueType::kValuePointerWithExpiry:
      // LookupForValueRead resolved expiry.
      s = absl::InternalError("an expiring entry reached GetRange unresolved");
      break;
    case ValueType::kDeletion:
    case ValueType::kRangeDeletion:
      s = absl::NotFoundError("key not found");
      break;
  }
  if (s.ok()) counters_.gets_found.fetch_add(1, std::memory_order_relaxed);
  return s;
}

}  // namespace cairn
