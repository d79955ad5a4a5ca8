// SegmentReader::ReadValueRange: part of one value, without reading the rest
// of its record. Kept apart from segment_reader.cc, whose reads take whole
// records.
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "io/coding.h"
#include "io/status_macros.h"
#include "vlog/segment_reader.h"

namespace cairn::vlog {

namespace {

// Table entries the first read takes beyond the record's header and key on
// a guess that the value is chunked at the default size: enough for the
// whole table of an incompressible value, so most ranged reads of a chunked
// value make two device reads (table, chunks) instead of three.
uint64_t GuessTableBytes(uint64_t record_size) {
  const uint64_t chunks = record_size / kDefaultValueChunkSize + 1;
  return kChunkTableHeaderSize + chunks * kChunkEntrySize;
}

}  // namespace

absl::Status SegmentReader::ReadPlainRange(const ValuePointer& pointer, uint64_t file_offset,
                                           uint64_t n, std::string* out) const {
  out->resize(static_cast<size_t>(n));
  std::string_view got;
  CAIRN_RETURN_IF_ERROR(file_->Read(file_offset, out->size(), out->data(), &got));
  if (got.size() < n) {
    out->clear();
    return Corrupt(pointer, absl::StrCat("value cut short by the end of the file (", got.size(),
                                         " of ", n, " bytes at file offset ", file_offset, ")"));
  }
  if (got.data() != out->data()) std::memmove(out->data(), got.data(), out->size());
  return absl::OkStatus();
}

absl::Status SegmentReader::ReadValueRange(const ValuePointer& pointer,
                                           std::string_view expected_key, uint64_t offset,
                                           uint64_t length, bool verify, std::string* out,
                                           bool* read_whole) const {
  out->clear();
  *read_whole = false;
  CAIRN_RETURN_IF_ERROR(CheckPointer(pointer));
  // The header, the key and a guess at the chunk table (for a plain record
  // read unverified, the guess is bytes of the value that may go unused:
  // at most 9 per 64 KiB of value).
  const uint64_t key_end = kRecordHeaderSize + expected_key.size();
  const size_t head_size =
      std::min<uint64_t>(pointer.size, key_end + GuessTableBytes(pointer.size));
  std::string head(head_size, '\0');
  std::string_view got;
  CAIRN_RETURN_IF_ERROR(file_->Read(pointer.offset, head_size, head.data(), &got));
  if (got.size() < head_size) {
    return Corrupt(pointer, absl::StrCat("record cut short by the end of the file (", got.size(),
                                         " of ", head_size, " header bytes)"));
  }
  const uint64_t key_len = io::DecodeFixed32(got.data() + 4);
  const uint64_t value_len = io::DecodeFixed32(got.data() + 8);
  const uint8_t flags = static_cast<uint8_t>(got[12]);
  if (key_len > kMaxRecordKeySize || value_len > kMaxRecordStoredSize ||
      RecordSize(key_len, value_len) != pointer.size) {
    return Corrupt(pointer, absl::StrCat("record header claims a ", key_len, "-byte key and a ",
                                         value_len, "-byte value; the pointer says ",
                                         pointer.size, " bytes"));
  }
  if (!ValidRecordFlags(flags)) return Corrupt(pointer, "unknown record flags");
  if (key_len != expected_key.size() || got.substr(kRecordHeaderSize, key_len) != expected_key) {
    return Corrupt(pointer, "record holds another key");
  }
  const uint64_t value_start = pointer.offset + key_end;  // of the stored value
  if ((flags & kRecordFlagChunked) == 0) {
    if ((flags & kRecordFlagZstd) != 0 || verify) {
      *read_whole = true;
      return absl::OkStatus();
    }
    if (offset >= value_len || length == 0) return absl::OkStatus();
    return ReadPlainRange(pointer, value_start + offset, std::min(length, value_len - offset),
                          out);
  }

  // Chunked: the table's header, then the entries of the chunks wanted.
  const std::string_view in_head = std::string_view(head).substr(key_end);
  ChunkTableHeader table;
  absl::Status s = ParseChunkTableHeader(in_head, value_len, &table);
  if (!s.ok()) return Corrupt(pointer, s.message());
  if (offset >= table.raw_size || length == 0) return absl::OkStatus();
  const uint64_t end = offset + std::min<uint64_t>(length, table.raw_size - offset);
  const uint32_t first = table.ChunkOf(offset);
  const uint32_t last = table.ChunkOf(end - 1);
  const ChunkEntrySpan span = EntriesFor(first, last);
  std::string entries;
  std::string_view entry_bytes;
  if (span.offset + span.size <= in_head.size()) {
    entry_bytes = in_head.substr(span.offset, span.size);
  } else {
    entries.resize(span.size);
    CAIRN_RETURN_IF_ERROR(file_->Read(value_start + span.offset, span.size, entries.data(), &got));
    if (got.size() < span.size) {
      return Corrupt(pointer, absl::StrCat("chunk table cut short by the end of the file (",
                                           got.size(), " of ", span.size, " bytes)"));
    }
    entry_bytes = got;
  }
  std::vector<ChunkRef> chunks;
  s = ParseChunkEntries(table, value_len, first, last, entry_bytes, &chunks);
  if (!s.ok()) return Corrupt(pointer, s.message());

  // Unverified and stored raw: the range's own bytes, nothing more (raw
  // chunks hold the value's bytes back to back).
  if (!verify && !AnyCompressed(chunks)) {
    const uint64_t at = chunks.front().stored_offset + (offset - chunks.front().raw_offset);
    return ReadPlainRange(pointer, value_start + at, end - offset, out);
  }

  // The chunks, back to back in one read, each checked and decoded.
  const uint64_t from = chunks.front().stored_offset;
  const uint64_t to = chunks.back().stored_offset + chunks.back().stored_size;
  std::string stored(to - from, '\0');
  CAIRN_RETURN_IF_ERROR(file_->Read(value_start + from, stored.size(), stored.data(), &got));
  if (got.size() < stored.size()) {
    return Corrupt(pointer, absl::StrCat("chunks cut short by the end of the file (", got.size(),
                                         " of ", stored.size(), " bytes)"));
  }
  std::string value;
  value.reserve(static_cast<size_t>(chunks.back().raw_offset + chunks.back().raw_size -
                                    chunks.front().raw_offset));
  for (const ChunkRef& c : chunks) {
    s = DecodeChunk(c, got.substr(c.stored_offset - from, c.stored_size), /*verify=*/true, &value);
    if (!s.ok()) return Corrupt(pointer, s.message());
  }
  out->assign(value, static_cast<size_t>(offset - chunks.front().raw_offset),
              static_cast<size_t>(end - offset));
  return absl::OkStatus();
}

}  // namespace cairn::vlog
