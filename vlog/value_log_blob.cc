// ValueLog reads for blob-sized values: a Get that shares the cached value
// instead of copying it, and a read of part of a value (docs/blob_reads.md).
#include <algorithm>
#include <memory>
#include <string>

#include "vlog/value_log.h"
#include "io/status_macros.h"

namespace cairn::vlog {

absl::Status ValueLog::GetShared(std::string_view key, std::string_view stored,
                                 std::shared_ptr<const std::string>* shared, std::string* owned,
                                 bool fill_cache) {
  CAIRN_ASSIGN_OR_RETURN(vlog::ValuePointer ptr, vlog::DecodeValuePointer(stored));
  if (std::shared_ptr<const std::string> hit = cache_.Lookup(ptr.segment_id, ptr.offset)) {
    *shared = std::move(hit);
    return absl::OkStatus();
  }
  if (cache_.capacity() == 0 || !fill_cache) return readers_.Read(ptr, key, owned);
  // Read into a string the cache can own, then share it: no copy.
  std::shared_ptr<std::string> read = ValueCache::NewValue(ptr.size);
  CAIRN_RETURN_IF_ERROR(readers_.Read(ptr, key, read.get()));
  cache_.Insert(ptr.segment_id, ptr.offset, read);
  *shared = std::move(read);
  return absl::OkStatus();
}

absl::Status ValueLog::GetRange(std::string_view key, std::string_view stored, uint64_t offset,
                                uint64_t length, bool verify, std::string* out,
                                bool fill_cache) {
  CAIRN_ASSIGN_OR_RETURN(vlog::ValuePointer ptr, vlog::DecodeValuePointer(stored));
  if (std::shared_ptr<const std::string> hit = cache_.Lookup(ptr.segment_id, ptr.offset)) {
    out->assign(ValueRange(*hit, offset, length));
    return absl::OkStatus();
  }
  // A record too small to be chunked is read whole when verified, without
  // first reading its header to find that out.
  if (!verify || ptr.size > kDefaultValueChunkSize) {
    CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const vlog::SegmentReader> reader,
                           readers_.Get(ptr.segment_id));
    bool read_whole = false;
    CAIRN_RETURN_IF_ERROR(
        reader->ReadValueRange(ptr, key, offset, length, verify, out, &read_whole));
    if (!read_whole) return absl::OkStatus();
  }
  // A zstd frame (decoded only whole), or verified and not chunked: the
  // whole record.
  std::string whole;
  CAIRN_RETURN_IF_ERROR(Get(key, stored, &whole, fill_cache));
  out->assign(ValueRange(whole, offset, length));
  return absl::OkStatus();
}

}  // namespace cairn::vlog
