#include "vlog/vlog_format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/checksum.h"
#include "io/coding.h"
#include "io/compression.h"

namespace cairn::vlog {

bool IsValidSegmentKind(uint32_t kind) {
  return kind == static_cast<uint32_t>(SegmentKind::kFresh) ||
         kind == static_cast<uint32_t>(SegmentKind::kGcOutput);
}

const char* SegmentKindName(SegmentKind kind) {
  switch (kind) {
    case SegmentKind::kFresh:
      return "fresh";
    case SegmentKind::kGcOutput:
      return "gc";
  }
  return "unknown";
}

void EncodeSegmentHeader(const SegmentHeader& header, std::string* dst) {
  const size_t start = dst->size();
  io::PutFixed64(dst, kSegmentMagic);
  io::PutFixed32(dst, header.version);
  io::PutFixed32(dst, static_cast<uint32_t>(header.kind));
  io::PutFixed64(dst, header.segment_id);
  io::PutFixed32(dst, io::Checksum32(std::string_view(*dst).substr(start)));
}

absl::StatusOr<SegmentHeader> DecodeSegmentHeader(std::string_view data,
                                                  const std::string& path) {
  if (data.size() < kSegmentHeaderSize) {
    return absl::DataLossError(absl::StrCat(path, ": segment header truncated at offset 0 (",
                                            data.size(), " of ", kSegmentHeaderSize,
                                            " bytes)"));
  }
  const char* p = data.data();
  const uint64_t magic = io::DecodeFixed64(p);
  if (magic != kSegmentMagic) {
    return absl::DataLossError(absl::StrFormat(
        "%s: not a value-log segment: bad magic 0x%016x at offset 0", path, magic));
  }
  SegmentHeader header;
  header.version = io::DecodeFixed32(p + 8);
  if (header.version != kSegmentFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": value-log segment format version ", header.version,
        " is not supported (this build reads version ", kSegmentFormatVersion, ")"));
  }
  const uint32_t stored = io::DecodeFixed32(p + 24);
  const uint32_t actual = io::Checksum32(data.substr(0, 24));
  if (stored != actual) {
    return absl::DataLossError(absl::StrFormat(
        "%s: segment header checksum mismatch at offset 0 (stored %08x, computed %08x)", path,
        stored, actual));
  }
  const uint32_t kind = io::DecodeFixed32(p + 12);
  if (!IsValidSegmentKind(kind)) {
    return absl::DataLossError(
        absl::StrCat(path, ": unknown segment kind ", kind, " at offset 12"));
  }
  header.kind = static_cast<SegmentKind>(kind);
  header.segment_id = io::DecodeFixed64(p + 16);
  return header;
}

void EncodeRecord(std::string_view key, std::string_view stored_value, uint8_t flags,
                  std::string* dst) {
  const size_t start = dst->size();
  dst->resize(start + kRecordHeaderSize);
  char* h = dst->data() + start;
  io::EncodeFixed32(h + 4, static_cast<uint32_t>(key.size()));
  io::EncodeFixed32(h + 8, static_cast<uint32_t>(stored_value.size()));
  h[12] = static_cast<char>(flags);
  dst->append(key);
  dst->append(stored_value);
  // The checksum covers everything after itself: lengths, flags, key, value.
  const std::string_view covered = std::string_view(*dst).substr(start + 4);
  io::EncodeFixed32(dst->data() + start, io::Checksum32(covered));
}

const char* RecordCheckName(RecordCheck check) {
  switch (check) {
    case RecordCheck::kOk:
      return "ok";
    case RecordCheck::kTruncated:
      return "truncated record";
    case RecordCheck::kBadChecksum:
      return "record checksum mismatch";
    case RecordCheck::kBadFlags:
      return "unknown record flags";
    case RecordCheck::kBadLength:
      return "record length out of range";
  }
  return "unknown";
}

RecordCheck ParseRecord(std::string_view data, ParsedRecord* record) {
  if (data.size() < kRecordHeaderSize) return RecordCheck::kTruncated;
  const uint64_t key_len = io::DecodeFixed32(data.data() + 4);
  const uint64_t value_len = io::DecodeFixed32(data.data() + 8);
  if (key_len > kMaxRecordKeySize || value_len > kMaxRecordValueSize) {
    return RecordCheck::kBadLength;
  }
  const uint64_t size = RecordSize(key_len, value_len);
  if (size > data.size()) return RecordCheck::kTruncated;
  const uint32_t stored = io::DecodeFixed32(data.data());
  if (io::Checksum32(data.substr(4, size - 4)) != stored) return RecordCheck::kBadChecksum;
  const uint8_t flags = static_cast<uint8_t>(data[12]);
  if ((flags & ~kKnownRecordFlags) != 0) return RecordCheck::kBadFlags;
  record->size = static_cast<uint32_t>(size);
  record->flags = flags;
  record->key = data.substr(kRecordHeaderSize, key_len);
  record->stored_value = data.substr(kRecordHeaderSize + key_len, value_len);
  return RecordCheck::kOk;
}

absl::Status RecordValue(const ParsedRecord& record, std::string* value) {
  if (!record.compressed()) {
    value->assign(record.stored_value);
    return absl::OkStatus();
  }
  return io::ZstdUncompress(record.stored_value, kMaxRecordValueSize, value);
}

}  // namespace cairn::vlog
