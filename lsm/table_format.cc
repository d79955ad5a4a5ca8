#include "lsm/table_format.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "io/checksum.h"
#include "io/coding.h"
#include "io/compression.h"
#include "io/status_macros.h"

namespace cairn::lsm {
namespace {

uint32_t BlockChecksum(std::string_view contents, char type) {
  io::Checksummer c;
  c.Update(contents);
  c.Update(std::string_view(&type, 1));
  return c.Digest32();
}

enum PropertyTag : uint32_t {
  kNumEntries = 1,
  kNumDeletions = 2,
  kRawKeyBytes = 3,
  kRawValueBytes = 4,
  kSmallestSequence = 5,
  kLargestSequence = 6,
  kNumDataBlocks = 7,
  kNumValuePointers = 8,
  kValuePointerBytes = 9,
  kNumRangeDeletions = 10,
  kRangeDeletionOffset = 11,
  kRangeDeletionSize = 12,
  kNumExpiring = 13,
};

}  // namespace

void BlockHandle::EncodeVarintTo(std::string* dst) const {
  io::PutVarint64(dst, offset);
  io::PutVarint64(dst, size);
}

bool BlockHandle::DecodeVarintFrom(std::string_view* input) {
  return io::GetVarint64(input, &offset) && io::GetVarint64(input, &size);
}

void TableProperties::EncodeTo(std::string* dst) const {
  auto put = [dst](uint32_t tag, uint64_t v) {
    io::PutVarint32(dst, tag);
    io::PutVarint64(dst, v);
  };
  put(kNumEntries, num_entries);
  put(kNumDeletions, num_deletions);
  put(kRawKeyBytes, raw_key_bytes);
  put(kRawValueBytes, raw_value_bytes);
  put(kSmallestSequence, smallest_sequence);
  put(kLargestSequence, largest_sequence);
  put(kNumDataBlocks, num_data_blocks);
  put(kNumValuePointers, num_value_pointers);
  if (has_value_pointer_bytes) put(kValuePointerBytes, value_pointer_bytes);
  if (num_range_deletions != 0) {
    put(kNumRangeDeletions, num_range_deletions);
    put(kRangeDeletionOffset, range_deletion_handle.offset);
    put(kRangeDeletionSize, range_deletion_handle.size);
  }
  if (num_expiring > 0) put(kNumExpiring, num_expiring);
}

absl::Status TableProperties::DecodeFrom(std::string_view input, const std::string& origin) {
  *this = TableProperties();
  const size_t total = input.size();
  while (!input.empty()) {
    const size_t at = total - input.size();
    uint32_t tag;
    uint64_t v;
    if (!io::GetVarint32(&input, &tag) || !io::GetVarint64(&input, &v)) {
      return absl::DataLossError(
          absl::StrCat(origin, ": malformed property at block offset ", at));
    }
    switch (tag) {
      case kNumEntries: num_entries = v; break;
      case kNumDeletions: num_deletions = v; break;
      case kRawKeyBytes: raw_key_bytes = v; break;
      case kRawValueBytes: raw_value_bytes = v; break;
      case kSmallestSequence: smallest_sequence = v; break;
      case kLargestSequence: largest_sequence = v; break;
      case kNumDataBlocks: num_data_blocks = v; break;
      case kNumValuePointers: num_value_pointers = v; break;
      case kValuePointerBytes:
        value_pointer_bytes = v;
        has_value_pointer_bytes = true;
        break;
      case kNumRangeDeletions: num_range_deletions = v; break;
      case kRangeDeletionOffset: range_deletion_handle.offset = v; break;
      case kRangeDeletionSize: range_deletion_handle.size = v; break;
      case kNumExpiring: num_expiring = v; break;
      default: break;  // written by a newer build; skipped on purpose
    }
  }
  return absl::OkStatus();
}

void Footer::EncodeTo(std::string* dst) const {
  const size_t start = dst->size();
  for (const BlockHandle* h : {&index_handle, &filter_handle, &properties_handle}) {
    io::PutFixed64(dst, h->offset);
    io::PutFixed64(dst, h->size);
  }
  io::PutFixed32(dst, version);
  io::PutFixed32(dst, io::Checksum32(std::string_view(dst->data() + start, 52)));
  io::PutFixed64(dst, kTableMagicNumber);
}

absl::Status Footer::DecodeFrom(std::string_view input, const std::string& file_name,
                                uint64_t footer_offset) {
  if (input.size() != kFooterSize) {
    return absl::DataLossError(absl::StrCat(file_name, ": footer at offset ", footer_offset,
                                            " is ", input.size(), " bytes, want ", kFooterSize));
  }
  const uint64_t magic = io::DecodeFixed64(input.data() + 56);
  if (magic != kTableMagicNumber) {
    return absl::DataLossError(absl::StrCat(file_name, ": not an SST file (bad magic at offset ",
                                            footer_offset + 56, ")"));
  }
  const uint32_t stored = io::DecodeFixed32(input.data() + 52);
  if (stored != io::Checksum32(input.substr(0, 52))) {
    return absl::DataLossError(
        absl::StrCat(file_name, ": footer checksum mismatch at offset ", footer_offset));
  }
  version = io::DecodeFixed32(input.data() + 48);
  if (version < kOldestTableFormatVersion || version > kTableFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        file_name, ": SST format version ", version, " is not supported (this build reads versions ",
        kOldestTableFormatVersion, " to ", kTableFormatVersion, ")"));
  }
  const char* p = input.data();
  for (BlockHandle* h : {&index_handle, &filter_handle, &properties_handle}) {
    h->offset = io::DecodeFixed64(p);
    h->size = io::DecodeFixed64(p + 8);
    p += 16;
  }
  return absl::OkStatus();
}

void AppendBlockTrailer(std::string_view contents, BlockCompression type, std::string* dst) {
  const char t = static_cast<char>(type);
  dst->push_back(t);
  io::PutFixed32(dst, BlockChecksum(contents, t));
}

absl::Status CheckBlockHandle(const std::string& path, uint64_t data_end,
                              const BlockHandle& handle) {
  if (handle.offset > data_end || handle.size > data_end - handle.offset ||
      kBlockTrailerSize > data_end - handle.offset - handle.size) {
    return absl::DataLossError(absl::StrCat(path, ": block at offset ", handle.offset, ": size ",
                                            handle.size, " runs past the block area (", data_end,
                                            " bytes)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> DecodeBlockContents(std::string raw, const std::string& path,
                                                const BlockHandle& handle) {
  auto bad = [&](absl::string_view what) {
    return absl::DataLossError(
        absl::StrCat(path, ": block at offset ", handle.offset, ": ", what));
  };
  const size_t n = static_cast<size_t>(handle.size) + kBlockTrailerSize;
  if (raw.size() != n) return bad(absl::StrCat("short read of ", raw.size(), " bytes"));
  const std::string_view stored(raw.data(), handle.size);
  const char type = raw[handle.size];
  const uint32_t checksum = io::DecodeFixed32(raw.data() + handle.size + 1);
  if (checksum != BlockChecksum(stored, type)) return bad("checksum mismatch");
  switch (static_cast<BlockCompression>(type)) {
    case BlockCompression::kNone:
      raw.resize(handle.size);
      return raw;
    case BlockCompression::kZstd: {
      std::string out;
      absl::Status s = io::ZstdUncompress(stored, kMaxUncompressedBlockSize, &out);
      if (!s.ok()) return bad(s.message());
      return out;
    }
  }
  return bad(absl::StrCat("unknown compression type ", static_cast<int>(type)));
}

absl::StatusOr<std::string> ReadBlockContents(const io::RandomAccessFile& file, uint64_t data_end,
                                              const BlockHandle& handle, ReadCounters* counters) {
  CAIRN_RETURN_IF_ERROR(CheckBlockHandle(file.path(), data_end, handle));
  const size_t n = static_cast<size_t>(handle.size) + kBlockTrailerSize;
  std::string buf(n, '\0');
  std::string_view got;
  CAIRN_RETURN_IF_ERROR(file.Read(handle.offset, n, buf.data(), &got));
  BumpCounter(counters, &ReadCounters::block_reads);
  BumpCounter(counters, &ReadCounters::block_bytes_read, got.size());
  if (got.data() != buf.data()) std::memmove(buf.data(), got.data(), got.size());
  buf.resize(got.size());
  return DecodeBlockContents(std::move(buf), file.path(), handle);
}

}  // namespace cairn::lsm

namespace cairn::lsm {

void EncodeRangeDeletionBlock(const std::vector<RangeTombstone>& tombstones, std::string* dst) {
  io::PutVarint64(dst, tombstones.size());
  for (const RangeTombstone& t : tombstones) {
    io::PutLengthPrefixed(dst, t.begin);
    io::PutLengthPrefixed(dst, t.end);
    io::PutVarint64(dst, t.seq);
  }
}

absl::StatusOr<std::vector<RangeTombstone>> DecodeRangeDeletionBlock(std::string_view input,
                                                                     const std::string& origin) {
  uint64_t count = 0;
  if (!io::GetVarint64(&input, &count)) {
    return absl::DataLossError(absl::StrCat(origin, ": range-deletion block has no count"));
  }
  std::vector<RangeTombstone> out;
  for (uint64_t i = 0; i < count; ++i) {
    std::string_view b, e;
    uint64_t seq = 0;
    if (!io::GetLengthPrefixed(&input, &b) || !io::GetLengthPrefixed(&input, &e) ||
        !io::GetVarint64(&input, &seq)) {
      return absl::DataLossError(
          absl::StrCat(origin, ": range-deletion block: tombstone ", i, " is truncated"));
    }
    if (b >= e || seq == 0 || seq > kMaxSequenceNumber) {
      return absl::DataLossError(absl::StrCat(
          origin, ": range-deletion block: tombstone ", i,
          " is malformed (begin >= end, or sequence 0 or over 2^56-1)"));
    }
    out.push_back({std::string(b), std::string(e), seq});
  }
  if (!input.empty()) {
    return absl::DataLossError(absl::StrCat(origin, ": range-deletion block has ", input.size(),
                                            " bytes after its ", count, " tombstones"));
  }
  return out;
}

}  // namespace cairn::lsm
