#include "vlog/vlog_format.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/checksum.h"
#include "io/coding.h"
#include "io/compression.h"
#include "io/status_macros.h"

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
  if (header.version < kOldestReadableSegmentVersion || header.version > kSegmentFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": value-log segment format version ", header.version,
        " is not supported (this build reads versions ", kOldestReadableSegmentVersion, " to ",
        kSegmentFormatVersion, ")"));
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

namespace {

// A record header's fields after its checksum: the lengths and the flags.
void EncodeLengthsAndFlags(size_t key_size, size_t value_size, uint8_t flags, char* h) {
  io::EncodeFixed32(h + 4, static_cast<uint32_t>(key_size));
  io::EncodeFixed32(h + 8, static_cast<uint32_t>(value_size));
  h[12] = static_cast<char>(flags);
}

// Fills in the header of the record that starts at (*dst)[start] and runs to
// the end of *dst: its lengths, flags and checksum.
void FinishRecord(size_t start, size_t key_size, uint8_t flags, std::string* dst) {
  const size_t value_size = dst->size() - start - kRecordHeaderSize - key_size;
  EncodeLengthsAndFlags(key_size, value_size, flags, dst->data() + start);
  // The checksum covers everything after itself: lengths, flags, key, value.
  const std::string_view covered = std::string_view(*dst).substr(start + 4);
  io::EncodeFixed32(dst->data() + start, io::Checksum32(covered));
}

}  // namespace

void EncodeRecord(std::string_view key, std::initializer_list<std::string_view> stored_value,
                  uint8_t flags, std::string* dst) {
  size_t value_size = 0;
  for (std::string_view part : stored_value) value_size += part.size();
  const size_t start = dst->size();
  dst->reserve(start + kRecordHeaderSize + key.size() + value_size);
  dst->resize(start + kRecordHeaderSize);
  dst->append(key);
  for (std::string_view part : stored_value) dst->append(part);
  FinishRecord(start, key.size(), flags, dst);
}

absl::Status EncodeValueRecord(std::string_view key, std::string_view value,
                               const RecordEncoding& encoding, std::string* dst,
                               std::string* table, std::string* body) {
  if (encoding.chunk_size != 0 && value.size() > encoding.chunk_size) {
    // Refused rather than written, as a reader would take the record for
    // damage. A chunk is compressed only when that makes it shorter, so the
    // table and the raw value bound the stored size: checked before any
    // compression, and the same whatever the bytes.
    const uint64_t most = ChunkTableSize(value.size(), encoding.chunk_size) + value.size();
    if (most > kMaxRecordStoredSize) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a ", value.size(), "-byte value in ", encoding.chunk_size, "-byte chunks can store as ",
          most, " bytes, over the stored-value limit of ", kMaxRecordStoredSize));
    }
    table->clear();
    bool body_is_value = false;
    CAIRN_RETURN_IF_ERROR(EncodeChunkedValue(value, encoding.chunk_size, encoding.compress,
                                             encoding.compression_level, table, body,
                                             &body_is_value));
    EncodeRecord(key, {*table, body_is_value ? value : std::string_view(*body)},
                 kRecordFlagChunked, dst);
    return absl::OkStatus();
  }
  if (!encoding.compress || value.empty()) {
    EncodeRecord(key, {value}, 0, dst);
    return absl::OkStatus();
  }
  // zstd writes its frame straight into the record; when the frame is no
  // smaller, the value replaces it.
  const size_t start = dst->size();
  dst->resize(start + kRecordHeaderSize);
  dst->append(key);
  const size_t value_start = dst->size();
  absl::Status s = io::ZstdCompress(value, encoding.compression_level, dst);
  if (!s.ok()) {
    dst->resize(start);
    return s;
  }
  uint8_t flags = kRecordFlagZstd;
  if (dst->size() - value_start >= value.size()) {
    dst->resize(value_start);
    dst->append(value);
    flags = 0;
  }
  FinishRecord(start, key.size(), flags, dst);
  return absl::OkStatus();
}

namespace {

uint64_t ChunkSeed(uint32_t index, uint8_t flags) { return uint64_t{index} * 256 + flags; }

}  // namespace

absl::Status EncodeChunkedValue(std::string_view value, uint32_t chunk_size, bool compress,
                                int level, std::string* table, std::string* body,
                                bool* body_is_value) {
  const uint32_t count =
      static_cast<uint32_t>(value.empty() ? 0 : (value.size() + chunk_size - 1) / chunk_size);
  const size_t table_start = table->size();
  io::PutFixed32(table, 0);  // checksum, filled in below
  io::PutFixed32(table, static_cast<uint32_t>(value.size()));
  io::PutFixed32(table, chunk_size);
  io::PutFixed32(table, count);
  io::EncodeFixed32(table->data() + table_start,
                    io::Checksum32(std::string_view(*table).substr(table_start + 4, 12)));
  body->clear();
  *body_is_value = true;
  uint64_t end = kChunkTableHeaderSize + uint64_t{count} * kChunkEntrySize;
  std::string frame;
  for (uint32_t i = 0; i < count; ++i) {
    const std::string_view raw = value.substr(uint64_t{i} * chunk_size, chunk_size);
    std::string_view stored = raw;
    uint8_t flags = 0;
    if (compress) {
      frame.clear();
      CAIRN_RETURN_IF_ERROR(io::ZstdCompress(raw, level, &frame));
      if (frame.size() < raw.size()) {
        stored = frame;
        flags = kChunkFlagZstd;
        if (*body_is_value) {
          // The first compressed chunk: the raw chunks before it go in too.
          body->assign(value.substr(0, uint64_t{i} * chunk_size));
          *body_is_value = false;
        }
      }
    }
    if (!*body_is_value) body->append(stored);
    end += stored.size();
    io::PutFixed32(table, static_cast<uint32_t>(end));
    io::PutFixed32(table, io::Checksum32(stored, ChunkSeed(i, flags)));
    table->push_back(static_cast<char>(flags));
  }
  return absl::OkStatus();
}

absl::Status ParseChunkTableHeader(std::string_view data, uint64_t stored_size,
                                   ChunkTableHeader* header) {
  if (data.size() < kChunkTableHeaderSize || stored_size < kChunkTableHeaderSize) {
    return absl::DataLossError("chunk table header cut short");
  }
  const char* p = data.data();
  if (io::Checksum32(data.substr(4, 12)) != io::DecodeFixed32(p)) {
    return absl::DataLossError("chunk table header checksum mismatch");
  }
  header->raw_size = io::DecodeFixed32(p + 4);
  header->chunk_size = io::DecodeFixed32(p + 8);
  header->count = io::DecodeFixed32(p + 12);
  if (header->raw_size > kMaxRecordValueSize || header->chunk_size < kMinValueChunkSize ||
      header->chunk_size > kMaxValueChunkSize ||
      header->count != (uint64_t{header->raw_size} + header->chunk_size - 1) / header->chunk_size ||
      header->table_size() > stored_size) {
    return absl::DataLossError(absl::StrCat("chunk table claims ", header->count, " chunks of ",
                                            header->chunk_size, " bytes for a ",
                                            header->raw_size, "-byte value in ", stored_size,
                                            " stored bytes"));
  }
  return absl::OkStatus();
}

ChunkEntrySpan EntriesFor(uint32_t first, uint32_t last) {
  const uint32_t from = first == 0 ? 0 : first - 1;
  return {kChunkTableHeaderSize + uint64_t{from} * kChunkEntrySize,
          (uint64_t{last} - from + 1) * kChunkEntrySize};
}

absl::Status ParseChunkEntries(const ChunkTableHeader& header, uint64_t stored_size,
                               uint32_t first, uint32_t last, std::string_view span,
                               std::vector<ChunkRef>* chunks) {
  chunks->clear();
  if (first > last || last >= header.count) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunks ", first, "..", last, " of ", header.count));
  }
  const ChunkEntrySpan want = EntriesFor(first, last);
  if (span.size() != want.size) {
    return absl::DataLossError(absl::StrCat("chunk entries cut short (", span.size(), " of ",
                                            want.size, " bytes)"));
  }
  const char* p = span.data();
  uint64_t start = header.table_size();
  if (first > 0) {
    start = io::DecodeFixed32(p);
    p += kChunkEntrySize;
  }
  chunks->reserve(last - first + 1);
  for (uint32_t i = first; i <= last; ++i, p += kChunkEntrySize) {
    ChunkRef c;
    c.index = i;
    const uint64_t end = io::DecodeFixed32(p);
    c.checksum = io::DecodeFixed32(p + 4);
    c.flags = static_cast<uint8_t>(p[8]);
    c.raw_offset = uint64_t{i} * header.chunk_size;
    c.raw_size = static_cast<uint32_t>(
        std::min<uint64_t>(header.chunk_size, header.raw_size - c.raw_offset));
    if ((c.flags & ~kChunkFlagZstd) != 0) {
      return absl::DataLossError(absl::StrCat("chunk ", i, " has unknown flags ", c.flags));
    }
    if (start < header.table_size() || end < start || end > stored_size) {
      return absl::DataLossError(absl::StrCat("chunk ", i, " runs from stored byte ", start,
                                              " to ", end, " of ", stored_size));
    }
    c.stored_offset = start;
    c.stored_size = static_cast<uint32_t>(end - start);
    if (!c.compressed() && c.stored_size != c.raw_size) {
      return absl::DataLossError(absl::StrCat("raw chunk ", i, " stores ", c.stored_size,
                                              " bytes of a ", c.raw_size, "-byte chunk"));
    }
    chunks->push_back(c);
    start = end;
  }
  return absl::OkStatus();
}

absl::Status ParseChunkTable(std::string_view stored, ChunkTableHeader* header,
                             std::vector<ChunkRef>* chunks) {
  CAIRN_RETURN_IF_ERROR(ParseChunkTableHeader(stored, stored.size(), header));
  chunks->clear();
  if (header->count == 0) {
    if (stored.size() != header->table_size()) {
      return absl::DataLossError("an empty chunked value with bytes after its table");
    }
    return absl::OkStatus();
  }
  const ChunkEntrySpan span = EntriesFor(0, header->count - 1);
  CAIRN_RETURN_IF_ERROR(ParseChunkEntries(*header, stored.size(), 0, header->count - 1,
                                          stored.substr(span.offset, span.size), chunks));
  const ChunkRef& last = chunks->back();
  if (last.stored_offset + last.stored_size != stored.size()) {
    return absl::DataLossError(absl::StrCat("chunks end at stored byte ",
                                            last.stored_offset + last.stored_size, " of ",
                                            stored.size()));
  }
  return absl::OkStatus();
}

absl::Status DecodeChunk(const ChunkRef& chunk, std::string_view stored, bool verify,
                         std::string* out) {
  if (stored.size() != chunk.stored_size) {
    return absl::DataLossError(absl::StrCat("chunk ", chunk.index, " of ", chunk.stored_size,
                                            " bytes given ", stored.size()));
  }
  if (verify && io::Checksum32(stored, ChunkSeed(chunk.index, chunk.flags)) != chunk.checksum) {
    return absl::DataLossError(absl::StrCat("chunk ", chunk.index, " checksum mismatch"));
  }
  if (!chunk.compressed()) {
    out->append(stored);
    return absl::OkStatus();
  }
  const size_t before = out->size();
  CAIRN_RETURN_IF_ERROR(io::ZstdUncompressAppend(stored, chunk.raw_size, out));
  if (out->size() - before != chunk.raw_size) {
    const size_t got = out->size() - before;
    out->resize(before);
    return absl::DataLossError(absl::StrCat("chunk ", chunk.index, " decodes to ", got,
                                            " bytes, not ", chunk.raw_size));
  }
  return absl::OkStatus();
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
  if (key_len > kMaxRecordKeySize || value_len > kMaxRecordStoredSize) {
    return RecordCheck::kBadLength;
  }
  const uint64_t size = RecordSize(key_len, value_len);
  if (size > data.size()) return RecordCheck::kTruncated;
  const uint32_t stored = io::DecodeFixed32(data.data());
  if (io::Checksum32(data.substr(4, size - 4)) != stored) return RecordCheck::kBadChecksum;
  const uint8_t flags = static_cast<uint8_t>(data[12]);
  if (!ValidRecordFlags(flags)) return RecordCheck::kBadFlags;
  record->size = static_cast<uint32_t>(size);
  record->flags = flags;
  record->key = data.substr(kRecordHeaderSize, key_len);
  record->stored_value = data.substr(kRecordHeaderSize + key_len, value_len);
  return RecordCheck::kOk;
}

absl::Status RecordValue(const ParsedRecord& record, std::string* value) {
  if (record.plain()) {
    value->assign(record.stored_value);
    return absl::OkStatus();
  }
  if (record.compressed()) return io::ZstdUncompress(record.stored_value, kMaxRecordValueSize, value);
  return ChunkedValue(record.stored_value, value);
}

absl::Status ChunkedValue(std::string_view stored, std::string* value) {
  ChunkTableHeader header;
  std::vector<ChunkRef> chunks;
  CAIRN_RETURN_IF_ERROR(ParseChunkTable(stored, &header, &chunks));
  value->clear();
  value->reserve(header.raw_size);
  // The record's checksum already covers every chunk.
  for (const ChunkRef& c : chunks) {
    CAIRN_RETURN_IF_ERROR(
        DecodeChunk(c, stored.substr(c.stored_offset, c.stored_size), /*verify=*/false, value));
  }
  return absl::OkStatus();
}

}  // namespace cairn::vlog
