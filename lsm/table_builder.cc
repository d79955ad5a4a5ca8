#include "lsm/table_builder.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "io/compression.h"
#include "io/status_macros.h"
#include "lsm/dbformat.h"

namespace cairn::lsm {
namespace {

// An internal key k with last <= k < next, as short as cheaply possible: when
// the user keys differ at byte i and last's byte can be bumped without
// reaching next's, the separator is last's user key cut after byte i, bumped,
// with the tag that sorts first. Otherwise it is last itself. next empty
// means "no next block".
std::string IndexSeparator(std::string_view last, std::string_view next) {
  if (!next.empty()) {
    const std::string_view lu = ExtractUserKey(last), nu = ExtractUserKey(next);
    const size_t min_len = std::min(lu.size(), nu.size());
    size_t i = 0;
    while (i < min_len && lu[i] == nu[i]) ++i;
    if (i + 1 < lu.size() && i < min_len) {
      const auto b = static_cast<unsigned char>(lu[i]);
      if (b < 0xff && b + 1 < static_cast<unsigned char>(nu[i])) {
        std::string user(lu.substr(0, i + 1));
        user.back() = static_cast<char>(b + 1);
        std::string sep;
        // The separator only bounds user keys (no entry has the largest
        // sequence), so its type is the one it had before the expiring
        // types (2026-12-07): index bytes, and the golden table, unchanged.
        AppendInternalKey(&sep, user, kMaxSequenceNumber, ValueType::kValuePointer);
        return sep;
      }
    }
  }
  return std::string(last);
}

}  // namespace

TableBuilder::TableBuilder(const TableOptions& options, io::WritableFile* file)
    : options_(options),
      file_(file),
      // Index entries are few and looked up by binary search over restarts;
      // a restart at every entry keeps that search exact.
      index_block_(1) {
  props_.has_value_pointer_bytes = static_cast<bool>(options_.value_pointer_bytes);
  if (options_.bloom_bits_per_key > 0) {
    filter_ = std::make_unique<BloomFilterBuilder>(options_.bloom_bits_per_key,
                                                   options_.bloom_hash_pool);
  }
}

TableBuilder::~TableBuilder() = default;

absl::Status TableBuilder::Add(std::string_view internal_key, std::string_view value) {
  if (closed_) return absl::FailedPreconditionError("TableBuilder::Add after Finish or Abandon");
  CAIRN_RETURN_IF_ERROR(status_);
  ParsedInternalKey parsed;
  if (!ParseInternalKey(internal_key, &parsed)) {
    return absl::InvalidArgumentError("TableBuilder::Add: malformed internal key");
  }
  const bool first = props_.num_entries == 0;
  if (!first && CompareInternalKeys(internal_key, last_key_) <= 0) {
    return absl::InvalidArgumentError(
        "TableBuilder::Add: keys must be added in strictly increasing order");
  }
  if (pending_index_entry_) AddIndexEntry(internal_key);
  if (filter_ != nullptr &&
      (first || parsed.user_key != ExtractUserKey(last_key_))) {
    filter_->AddKey(parsed.user_key);
  }

  if (first) {
    smallest_key_.assign(internal_key);
    props_.smallest_sequence = parsed.sequence;
    props_.largest_sequence = parsed.sequence;
  }
  props_.smallest_sequence = std::min(props_.smallest_sequence, parsed.sequence);
  props_.largest_sequence = std::max(props_.largest_sequence, parsed.sequence);
  ++props_.num_entries;
  if (parsed.type == ValueType::kDeletion) ++props_.num_deletions;
  if (HasExpiry(parsed.type)) ++props_.num_expiring;
  if (WithoutExpiry(parsed.type) == ValueType::kValuePointer) {
    ++props_.num_value_pointers;
    StoredValue sv;
    if (options_.value_pointer_bytes && SplitStoredValue(parsed.type, value, &sv)) {
      props_.value_pointer_bytes += options_.value_pointer_bytes(sv.payload);
    }
  }
  props_.raw_key_bytes += internal_key.size();
  props_.raw_value_bytes += value.size();
  last_key_.assign(internal_key);

  data_block_.Add(internal_key, value);
  if (data_block_.CurrentSizeEstimate() >= options_.block_size) {
    status_ = FlushDataBlock();
  }
  return status_;
}

void TableBuilder::AddIndexEntry(std::string_view next_key) {
  std::string handle;
  pending_handle_.EncodeVarintTo(&handle);
  index_block_.Add(IndexSeparator(last_key_, next_key), handle);
  pending_index_entry_ = false;
}

absl::Status TableBuilder::FlushDataBlock() {
  if (data_block_.empty()) return absl::OkStatus();
  const std::string_view contents = data_block_.Finish();
  CAIRN_RETURN_IF_ERROR(WriteBlock(contents, /*allow_compression=*/true, &pending_handle_));
  if (sink_) sink_(pending_handle_.offset, contents);
  data_block_.Reset();
  pending_index_entry_ = true;
  ++props_.num_data_blocks;
  return absl::OkStatus();
}

absl::Status TableBuilder::WriteBlock(std::string_view contents, bool allow_compression,
                                      BlockHandle* handle) {
  std::string_view stored = contents;
  BlockCompression type = BlockCompression::kNone;
  if (allow_compression && options_.compress) {
    compressed_.clear();
    CAIRN_RETURN_IF_ERROR(io::ZstdCompress(contents, options_.zstd_level, &compressed_));
    // Decompression costs CPU on every cache miss; keep it only when it pays.
    if (compressed_.size() < contents.size() - contents.size() / 8) {
      stored = compressed_;
      type = BlockCompression::kZstd;
    }
  }
  std::string trailer;
  AppendBlockTrailer(stored, type, &trailer);
  CAIRN_RETURN_IF_ERROR(file_->Append(stored));
  CAIRN_RETURN_IF_ERROR(file_->Append(trailer));
  handle->offset = offset_;
  handle->size = stored.size();
  offset_ += stored.size() + trailer.size();
  return absl::OkStatus();
}

absl::Status TableBuilder::Finish() {
  if (closed_) return absl::FailedPreconditionError("TableBuilder::Finish called twice");
  closed_ = true;
  CAIRN_RETURN_IF_ERROR(status_);
  status_ = [&]() -> absl::Status {
    CAIRN_RETURN_IF_ERROR(FlushDataBlock());
    Footer footer;
    if (filter_ != nullptr) {
      CAIRN_RETURN_IF_ERROR(
          WriteBlock(filter_->Finish(), /*allow_compression=*/false, &footer.filter_handle));
    }
    if (!range_tombstones_.empty()) {
      // Format 2: the range-deletion block follows the filter, and the
      // properties say where it is.
      std::string block;
      EncodeRangeDeletionBlock(range_tombstones_, &block);
      CAIRN_RETURN_IF_ERROR(
          WriteBlock(block, /*allow_compression=*/true, &props_.range_deletion_handle));
      props_.num_range_deletions = range_tombstones_.size();
      footer.version = kRangeDeletionTableFormatVersion;
    } else {
      footer.version = kOldestTableFormatVersion;
    }
    // Version 3 only for a table that needs it (lsm/table_format.h); it may
    // carry the range-deletion block as well.
    if (props_.num_expiring > 0) footer.version = kExpiryTableFormatVersion;
    std::string props;
    props_.EncodeTo(&props);
    CAIRN_RETURN_IF_ERROR(WriteBlock(props, /*allow_compression=*/true,
                                     &footer.properties_handle));
    if (pending_index_entry_) AddIndexEntry(std::string_view());
    CAIRN_RETURN_IF_ERROR(
        WriteBlock(index_block_.Finish(), /*allow_compression=*/true, &footer.index_handle));
    std::string encoded;
    footer.EncodeTo(&encoded);
    CAIRN_RETURN_IF_ERROR(file_->Append(encoded));
    offset_ += encoded.size();
    return absl::OkStatus();
  }();
  return status_;
}

void TableBuilder::Abandon() { closed_ = true; }

void TableBuilder::AddRangeTombstone(const RangeTombstone& t) {
  // The table's key range spans the tombstone, as internal keys that sort
  // before every entry of their user key: begin's, and end's (exclusive, so
  // the file's range ends just before end's first entry).
  std::string lo, hi;
  // lo's type (kValue) sorts after hi's (kValuePointer) at the same user key
  // and sequence: a table whose tombstones were clipped to end at c and the
  // next one, whose tombstones begin at c, do not overlap.
  AppendInternalKey(&lo, t.begin, kMaxSequenceNumber, ValueType::kValue);
  AppendInternalKey(&hi, t.end, kMaxSequenceNumber, kValueTypeForSeek);
  if (range_smallest_.empty() || CompareInternalKeys(lo, range_smallest_) < 0) range_smallest_ = lo;
  if (range_largest_.empty() || CompareInternalKeys(hi, range_largest_) > 0) range_largest_ = hi;
  // The sequence properties stay the data entries' (VerifyAll checks them
  // against the data); FileMetaData's span the tombstones too.
  range_tombstones_.push_back(t);
}

std::string TableBuilder::smallest_key() const {
  if (range_smallest_.empty()) return smallest_key_;
  if (smallest_key_.empty()) return range_smallest_;
  return CompareInternalKeys(range_smallest_, smallest_key_) < 0 ? range_smallest_ : smallest_key_;
}

std::string TableBuilder::largest_key() const {
  if (range_largest_.empty()) return last_key_;
  if (last_key_.empty()) return range_largest_;
  return CompareInternalKeys(range_largest_, last_key_) > 0 ? range_largest_ : last_key_;
}

}  // namespace cairn::lsm
