#include "vlog/segment_reader.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "io/aligned_buffer.h"
#include "io/compression.h"
#include "io/status_macros.h"

namespace cairn::vlog {

namespace {

// Keys appear in error messages; long or binary ones are shortened to hex.
std::string KeyForMessage(std::string_view key) {
  constexpr size_t kMax = 32;
  const std::string_view head = key.substr(0, kMax);
  std::string hex = absl::BytesToHexString(absl::string_view(head.data(), head.size()));
  if (key.size() > kMax) hex += "...";
  return hex;
}

// Records above this size are checked against the file size before a buffer
// is allocated for them.
constexpr uint32_t kLargeRecord = 1u << 20;

}  // namespace

absl::StatusOr<std::unique_ptr<SegmentReader>> SegmentReader::Open(io::FileSystem* fs,
                                                                   std::string path,
                                                                   uint64_t segment_id,
                                                                   bool direct_reads) {
  io::FileOptions options;
  options.category = io::IoCategory::kValueLog;
  options.direct = direct_reads;
  absl::StatusOr<std::unique_ptr<io::RandomAccessFile>> opened = fs->NewRandomAccessFile(path, options);
  if (absl::IsNotFound(opened.status())) {
    // A pointer names it: a missing segment is lost data, never an absent key.
    return absl::DataLossError(absl::StrCat(path, ": value-log segment missing"));
  }
  CAIRN_RETURN_IF_ERROR(opened.status());
  std::unique_ptr<io::RandomAccessFile> file = *std::move(opened);
  char scratch[kSegmentHeaderSize];
  std::string_view got;
  CAIRN_RETURN_IF_ERROR(file->Read(0, kSegmentHeaderSize, scratch, &got));
  CAIRN_ASSIGN_OR_RETURN(SegmentHeader header, DecodeSegmentHeader(got, path));
  if (header.segment_id != segment_id) {
    return absl::DataLossError(absl::StrCat(path, ": header at offset 0 names segment ",
                                            header.segment_id, ", expected ", segment_id));
  }
  return std::unique_ptr<SegmentReader>(
      new SegmentReader(std::move(file), std::move(path), header));
}

SegmentReader::SegmentReader(std::unique_ptr<io::RandomAccessFile> file, std::string path,
                             SegmentHeader header)
    : file_(std::move(file)), path_(std::move(path)), header_(header) {}

absl::Status SegmentReader::Corrupt(const ValuePointer& pointer, absl::string_view what) const {
  return absl::DataLossError(absl::StrCat(path_, ": ", what, " at offset ", pointer.offset,
                                          " (pointer ", pointer.DebugString(), ")"));
}

absl::Status SegmentReader::CheckPointer(const ValuePointer& pointer) const {
  if (pointer.segment_id != header_.segment_id) {
    return Corrupt(pointer, absl::StrCat("pointer names segment ", pointer.segment_id,
                                         ", not this segment ", header_.segment_id));
  }
  if (pointer.offset < kSegmentHeaderSize) {
    return Corrupt(pointer, "pointer into the segment header");
  }
  if (pointer.size < kRecordHeaderSize || pointer.size > kMaxRecordSize) {
    return Corrupt(pointer, "pointer size out of range");
  }
  // Pointer bytes come from disk: before allocating a large buffer for one,
  // make sure the file is that long.
  if (pointer.size > kLargeRecord) {
    CAIRN_ASSIGN_OR_RETURN(uint64_t file_size, file_->Size());
    if (pointer.offset > file_size || pointer.size > file_size - pointer.offset) {
      return Corrupt(pointer, absl::StrCat("record past the end of the file (", file_size,
                                           " bytes)"));
    }
  }
  return absl::OkStatus();
}

absl::Status SegmentReader::DecodeView(const ValuePointer& pointer,
                                       std::string_view expected_key, std::string_view got,
                                       std::string_view* value, std::string* scratch) const {
  *value = {};
  if (got.size() < pointer.size) {
    return Corrupt(pointer, absl::StrCat("record cut short by the end of the file (", got.size(),
                                         " of ", pointer.size, " bytes)"));
  }
  ParsedRecord record;
  const RecordCheck check = ParseRecord(got.substr(0, pointer.size), &record);
  if (check != RecordCheck::kOk) return Corrupt(pointer, RecordCheckName(check));
  if (record.size != pointer.size) {
    return Corrupt(pointer, absl::StrCat("record is ", record.size,
                                         " bytes but the pointer says ", pointer.size));
  }
  if (record.key != expected_key) {
    return Corrupt(pointer, absl::StrCat("record holds key ", KeyForMessage(record.key),
                                         ", expected ", KeyForMessage(expected_key)));
  }
  if (record.plain()) {
    *value = record.stored_value;  // the value ends the record
    return absl::OkStatus();
  }
  if (record.chunked()) {
    ChunkTableHeader header;
    std::vector<ChunkRef> chunks;
    absl::Status s = ParseChunkTable(record.stored_value, &header, &chunks);
    if (!s.ok()) return Corrupt(pointer, s.message());
    if (!AnyCompressed(chunks)) {
      // Raw chunks, back to back, are the value.
      *value = record.stored_value.substr(header.table_size(), header.raw_size);
      return absl::OkStatus();
    }
    s = ChunkedValue(record.stored_value, scratch);
    if (!s.ok()) return Corrupt(pointer, s.message());
    *value = *scratch;
    return absl::OkStatus();
  }
  absl::Status s = io::ZstdUncompress(record.stored_value, kMaxRecordValueSize, scratch);
  if (!s.ok()) return Corrupt(pointer, s.message());
  *value = *scratch;
  return absl::OkStatus();
}

absl::Status SegmentReader::Decode(const ValuePointer& pointer, std::string_view expected_key,
                                   size_t got, std::string* buf) const {
  std::string_view value;
  std::string scratch;
  CAIRN_RETURN_IF_ERROR(
      DecodeView(pointer, expected_key, std::string_view(*buf).substr(0, got), &value, &scratch));
  if (value.data() == scratch.data()) {
    buf->swap(scratch);
  } else {
    // A part of the record: keep it, in place.
    const size_t skip = static_cast<size_t>(value.data() - buf->data());
    const size_t n = value.size();
    buf->erase(0, skip);
    buf->resize(n);
  }
  return absl::OkStatus();
}

absl::Status SegmentReader::Read(const ValuePointer& pointer, std::string_view expected_key,
                                 std::string* value) const {
  CAIRN_RETURN_IF_ERROR(CheckPointer(pointer));
  // The record's span widened to the file's read granularity, into an
  // aligned buffer: an O_DIRECT file reads it in place, and the value is
  // copied once, into *value (reading into *value itself cost a zero fill,
  // a bounce buffer's copy and a move of the value over the header).
  const size_t align = file_->read_alignment();
  const uint64_t start = io::AlignDown(pointer.offset, align);
  const uint64_t end = io::AlignUp(pointer.offset + pointer.size, align);
  const size_t len = static_cast<size_t>(end - start);
  io::AlignedBuffer buf(len);  // not zeroed: the read fills it
  std::string_view got;
  CAIRN_RETURN_IF_ERROR(file_->Read(start, len, buf.data(), &got));
  const size_t skip = static_cast<size_t>(pointer.offset - start);
  const std::string_view record = got.size() > skip ? got.substr(skip) : std::string_view();
  std::string_view v;
  std::string scratch;
  absl::Status s = DecodeView(pointer, expected_key, record, &v, &scratch);
  if (!s.ok()) {
    value->clear();
    return s;
  }
  if (v.data() == scratch.data()) {
    value->swap(scratch);
  } else {
    value->assign(v);
  }
  return absl::OkStatus();
}

absl::Status SegmentReader::PrepareRead(const ValuePointer& pointer, std::string* buf,
                                        io::ReadRequest* req) const {
  CAIRN_RETURN_IF_ERROR(CheckPointer(pointer));
  buf->resize(pointer.size);
  req->offset = pointer.offset;
  req->len = pointer.size;
  req->buf = buf->data();
  return absl::OkStatus();
}

absl::Status SegmentReader::FinishRead(const ValuePointer& pointer, std::string_view expected_key,
                                       const io::ReadRequest& req, std::string* buf) const {
  absl::Status s = req.status;
  if (s.ok()) s = Decode(pointer, expected_key, req.result, buf);
  if (!s.ok()) buf->clear();
  return s;
}

absl::Status SegmentReader::MultiRead(absl::Span<const ValuePointer> pointers,
                                      absl::Span<const std::string_view> keys,
                                      std::vector<std::string>* values,
                                      std::vector<absl::Status>* statuses) const {
  if (pointers.size() != keys.size()) {
    return absl::InvalidArgumentError(absl::StrCat("MultiRead: ", pointers.size(),
                                                   " pointers but ", keys.size(), " keys"));
  }
  const size_t n = pointers.size();
  values->assign(n, std::string());
  statuses->assign(n, absl::OkStatus());
  std::vector<io::ReadRequest> requests;
  std::vector<size_t> index;  // requests[j] reads pointers[index[j]]
  requests.reserve(n);
  index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    io::ReadRequest req;
    (*statuses)[i] = PrepareRead(pointers[i], &(*values)[i], &req);
    if (!(*statuses)[i].ok()) continue;
    requests.push_back(std::move(req));
    index.push_back(i);
  }
  if (!requests.empty()) {
    // Each request carries its own status; the aggregate adds nothing.
    file_->MultiRead(absl::MakeSpan(requests)).IgnoreError();
  }
  for (size_t j = 0; j < requests.size(); ++j) {
    const size_t i = index[j];
    (*statuses)[i] = FinishRead(pointers[i], keys[i], requests[j], &(*values)[i]);
  }
  for (const absl::Status& s : *statuses) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace cairn::vlog
