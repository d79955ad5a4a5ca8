// Size estimates (issue 60): DB::GetApproximateSizes and
// GetApproximateKeyCount, from metadata only. A table's share of a range
// comes from its index (Table::InterpolatedOffsetOf), its value-log bytes
// from its value_pointer_bytes property (tag 9, docs/table_format.md); the
// memtables are walked in memory. No value and no data block is read.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "io/status_macros.h"
#include "lsm/table.h"
#include "vlog/value_pointer.h"

namespace cairn {

// The default for a DB that does not estimate (the engine's DBImpl does).
absl::Status DB::GetApproximateSizes(const Range*, int, uint64_t*, uint32_t) {
  return absl::UnimplementedError("GetApproximateSizes");
}
absl::StatusOr<uint64_t> DB::GetApproximateKeyCount(const Range&, uint32_t) {
  return absl::UnimplementedError("GetApproximateKeyCount");
}

// One range's estimate, by part.
struct DBImpl::RangeEstimate {
  double table_bytes = 0, table_vlog_bytes = 0, table_keys = 0;
  uint64_t mem_bytes = 0, mem_vlog_bytes = 0, mem_keys = 0;
};

namespace {

constexpr uint32_t kAllSizeFlags = kIncludeMemtables | kIncludeFiles | kIncludeValueLog;

absl::Status CheckFlags(uint32_t flags) {
  if ((flags & ~kAllSizeFlags) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("size approximation flags 0x", absl::Hex(flags), " name an unknown bit"));
  }
  if (flags == 0) {
    return absl::InvalidArgumentError(
        "size approximation flags name nothing to count (kIncludeMemtables, kIncludeFiles, "
        "kIncludeValueLog)");
  }
  return absl::OkStatus();
}

absl::Status CheckRange(const Range& range, int i) {
  if (range.start > range.limit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "range ", i, " is inverted: its start sorts after its limit (ranges are [start, limit))"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DBImpl::EstimateRange(const Range& range, RangeEstimate* out) {
  *out = RangeEstimate();
  if (range.start == range.limit) return absl::OkStatus();
  const ReadView view = GetReadView(ReadOptions());
  // Memtables: their entries in the range, newest first per key as they
  // lie (every version counts; a deletion counts its bytes but no key).
  auto walk = [&](lsm::MemTable& mem) {
    std::unique_ptr<lsm::InternalIterator> it = mem.NewIterator();
    for (it->Seek(lsm::MakeLookupKey(range.start, lsm::kMaxSequenceNumber)); it->Valid();
         it->Next()) {
      lsm::ParsedInternalKey ikey;
      if (!lsm::ParseInternalKey(it->key(), &ikey)) break;
      if (ikey.user_key >= range.limit) break;
      out->mem_bytes += it->key().size() + it->value().size();
      if (ikey.type == lsm::ValueType::kDeletion) continue;
      ++out->mem_keys;
      lsm::StoredValue sv;
      if (lsm::SplitStoredValue(ikey.type, it->value(), &sv) &&
          sv.type == lsm::ValueType::kValuePointer) {
        absl::StatusOr<vlog::ValuePointer> p = vlog::DecodeValuePointer(sv.payload);
        if (p.ok()) out->mem_vlog_bytes += p->size;
      }
    }
  };
  walk(*view.sv->mem);
  for (const auto& m : view.sv->imm) walk(*m);

  // Tables: each overlapping one's share of the range, from its index. The
  // average record size of the tables that record their pointers' bytes
  // stands in for a table written before the property (tag 9).
  struct Share {
    double share;
    uint64_t pointers;
  };
  std::vector<Share> unrecorded;
  double recorded_bytes = 0, recorded_pointers = 0;
  for (int level = 0; level < lsm::kNumLevels; ++level) {
    for (const auto& f : view.sv->version->files(level)) {
      if (f->largest_user_key() < range.start || f->smallest_user_key() >= range.limit) continue;
      CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<lsm::Table> table,
                             table_cache_->FindTable(f->number, f->file_size));
      const uint64_t data_end = table->DataEnd();
      if (data_end == 0) continue;
      const double begin = table->InterpolatedOffsetOf(range.start, f->smallest_user_key());
      const double end = table->InterpolatedOffsetOf(range.limit, f->smallest_user_key());
      const double share = std::clamp((end - begin) / static_cast<double>(data_end), 0.0, 1.0);
      const lsm::TableProperties& props = table->properties();
      out->table_bytes += share * static_cast<double>(f->file_size);
      out->table_keys +=
          share * static_cast<double>(props.num_entries - std::min(props.num_entries,
                                                                   props.num_deletions));
      if (props.has_value_pointer_bytes) {
        out->table_vlog_bytes += share * static_cast<double>(props.value_pointer_bytes);
        recorded_bytes += static_cast<double>(props.value_pointer_bytes);
        recorded_pointers += static_cast<double>(props.num_value_pointers);
      } else if (props.num_value_pointers > 0) {
        unrecorded.push_back({share, props.num_value_pointers});
      }
    }
  }
  if (recorded_pointers > 0) {
    const double average = recorded_bytes / recorded_pointers;
    for (const Share& s : unrecorded) {
      out->table_vlog_bytes += s.share * static_cast<double>(s.pointers) * average;
    }
  }
  return absl::OkStatus();
}

absl::Status DBImpl::GetApproximateSizes(const Range* ranges, int n, uint64_t* sizes,
                                         uint32_t flags) {
  CAIRN_RETURN_IF_ERROR(CheckNotClosed());
  if (n < 0) return absl::InvalidArgumentError(absl::StrCat("range count ", n, " is negative"));
  if (n > 0 && (ranges == nullptr || sizes == nullptr)) {
    return absl::InvalidArgumentError(ranges == nullptr ? "ranges is null" : "sizes is null");
  }
  CAIRN_RETURN_IF_ERROR(CheckFlags(flags));
  for (int i = 0; i < n; ++i) CAIRN_RETURN_IF_ERROR(CheckRange(ranges[i], i));
  for (int i = 0; i < n; ++i) {
    RangeEstimate e;
    CAIRN_RETURN_IF_ERROR(EstimateRange(ranges[i], &e));
    double total = 0;
    if (flags & kIncludeMemtables) total += static_cast<double>(e.mem_bytes);
    if (flags & kIncludeFiles) total += e.table_bytes;
    if (flags & kIncludeValueLog) total += e.table_vlog_bytes + static_cast<double>(e.mem_vlog_bytes);
    sizes[i] = static_cast<uint64_t>(std::llround(total));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> DBImpl::GetApproximateKeyCount(const Range& range, uint32_t flags) {
  CAIRN_RETURN_IF_ERROR(CheckNotClosed());
  CAIRN_RETURN_IF_ERROR(CheckFlags(flags));
  if ((flags & (kIncludeMemtables | kIncludeFiles)) == 0) {
    return absl::InvalidArgumentError(
        "a key count needs kIncludeMemtables or kIncludeFiles (the value log holds no keys "
        "of its own)");
  }
  CAIRN_RETURN_IF_ERROR(CheckRange(range, 0));
  RangeEstimate e;
  CAIRN_RETURN_IF_ERROR(EstimateRange(range, &e));
  double keys = 0;
  if (flags & kIncludeMemtables) keys += static_cast<double>(e.mem_keys);
  if (flags & kIncludeFiles) keys += e.table_keys;
  return static_cast<uint64_t>(std::llround(keys));
}

}  // namespace cairn
