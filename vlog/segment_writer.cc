#include "vlog/segment_writer.h"

#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "io/status_macros.h"

namespace cairn::vlog {

namespace {

io::IoCategory CategoryFor(SegmentKind kind) {
  return kind == SegmentKind::kGcOutput ? io::IoCategory::kGc : io::IoCategory::kValueLog;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SegmentWriter>> SegmentWriter::Create(
    io::FileSystem* fs, std::string path, uint64_t segment_id,
    const SegmentWriterOptions& options) {
  if (!IsValidSegmentKind(static_cast<uint32_t>(options.kind))) {
    return absl::InvalidArgumentError(
        absl::StrCat("segment kind ", static_cast<uint32_t>(options.kind), " is not valid"));
  }
  if (options.compress && (options.compression_level < 1 || options.compression_level > 19)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "zstd compression level ", options.compression_level, " is outside 1..19"));
  }
  if (options.chunk_size != 0 &&
      (options.chunk_size < kMinValueChunkSize || options.chunk_size > kMaxValueChunkSize)) {
    return absl::InvalidArgumentError(absl::StrCat("value chunk size ", options.chunk_size,
                                                   " is outside ", kMinValueChunkSize, "..",
                                                   kMaxValueChunkSize));
  }
  io::FileOptions file_options;
  file_options.category = CategoryFor(options.kind);
  file_options.direct = options.direct_writes;
  file_options.writeback_bytes = options.writeback_bytes;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file,
                         fs->NewWritableFile(path, file_options));
  std::string header;
  EncodeSegmentHeader({kSegmentFormatVersion, options.kind, segment_id}, &header);
  CAIRN_RETURN_IF_ERROR(file->Append(header));
  // Syncing the header once per segment means a damaged header is always
  // corruption, never a torn tail, which keeps recovery's rule simple.
  if (options.sync_header) CAIRN_RETURN_IF_ERROR(file->Sync());
  auto writer = std::unique_ptr<SegmentWriter>(
      new SegmentWriter(std::move(file), std::move(path), segment_id, options));
  writer->size_.store(header.size(), std::memory_order_release);
  return writer;
}

absl::StatusOr<std::unique_ptr<SegmentWriter>> SegmentWriter::Reopen(
    io::FileSystem* fs, std::string path, uint64_t segment_id, uint64_t size, uint64_t records,
    const SegmentWriterOptions& options) {
  if (!IsValidSegmentKind(static_cast<uint32_t>(options.kind)) ||
      (options.compress && (options.compression_level < 1 || options.compression_level > 19)) ||
      (options.chunk_size != 0 &&
       (options.chunk_size < kMinValueChunkSize || options.chunk_size > kMaxValueChunkSize))) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": invalid segment writer options"));
  }
  CAIRN_ASSIGN_OR_RETURN(uint64_t file_size, fs->GetFileSize(path));
  if (file_size != size || size < kSegmentHeaderSize) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": reopening for append at ", size, " bytes, but the file holds ", file_size));
  }
  io::FileOptions file_options;
  file_options.category = CategoryFor(options.kind);
  file_options.direct = options.direct_writes;
  file_options.writeback_bytes = options.writeback_bytes;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file,
                         fs->ReopenWritableFile(path, file_options));
  // What recovery kept (and a truncation of a torn tail) is durable before
  // any new record lands after it.
  CAIRN_RETURN_IF_ERROR(file->Sync());
  auto writer = std::unique_ptr<SegmentWriter>(
      new SegmentWriter(std::move(file), std::move(path), segment_id, options));
  writer->size_.store(size, std::memory_order_release);
  writer->record_count_ = records;
  return writer;
}

SegmentWriter::SegmentWriter(std::unique_ptr<io::WritableFile> file, std::string path,
                             uint64_t segment_id, const SegmentWriterOptions& options)
    : file_(std::move(file)), path_(std::move(path)), segment_id_(segment_id),
      options_(options) {}

SegmentWriter::~SegmentWriter() {
  // Best effort: a caller that cares about the outcome calls Close itself.
  Close().IgnoreError();
}

absl::Status SegmentWriter::Track(absl::Status s) {
  if (!s.ok() && error_.ok()) error_ = s;
  return s;
}

absl::StatusOr<ValuePointer> SegmentWriter::Append(std::string_view key,
                                                   std::string_view value) {
  if (closed_) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": append after close"));
  }
  CAIRN_RETURN_IF_ERROR(error_);
  if (value.size() > kMaxRecordValueSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": value of ", value.size(), " bytes exceeds ", kMaxRecordValueSize));
  }
  if (key.size() > kMaxRecordKeySize) {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": key of ", key.size(), " bytes exceeds ", kMaxRecordKeySize));
  }
  record_.clear();
  absl::Status s =
      EncodeValueRecord(key, value, Encoding(), &record_, &chunk_table_, &compressed_);
  if (absl::IsInvalidArgument(s)) {
    // Over the stored-value limit: nothing was written.
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", s.message()));
  }
  CAIRN_RETURN_IF_ERROR(s);
  return AppendEncodedRecord();
}

RecordEncoding SegmentWriter::Encoding() const {
  return {options_.compress, options_.compression_level, options_.chunk_size};
}

absl::Status SegmentWriter::AppendEncoded(absl::Span<const EncodedRecords> runs,
                                          std::vector<ValuePointer>* pointers) {
  if (closed_) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": append after close"));
  }
  CAIRN_RETURN_IF_ERROR(error_);
  absl::InlinedVector<std::string_view, 8> parts;
  for (const EncodedRecords& run : runs) {
    uint64_t total = 0;
    for (uint32_t size : run.sizes) total += size;
    if (total != run.bytes.size()) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": ", run.sizes.size(),
                                                     " records of ", total,
                                                     " bytes given as ", run.bytes.size()));
    }
    parts.push_back(run.bytes);
  }
  CAIRN_RETURN_IF_ERROR(Track(file_->AppendParts(parts)));
  uint64_t offset = size();
  for (const EncodedRecords& run : runs) {
    for (uint32_t size : run.sizes) {
      pointers->push_back(ValuePointer{segment_id_, offset, size});
      offset += size;
    }
    record_count_ += run.sizes.size();
  }
  size_.store(offset, std::memory_order_release);
  return absl::OkStatus();
}

absl::StatusOr<ValuePointer> SegmentWriter::AppendStored(std::string_view key,
                                                         std::string_view stored_value,
                                                         uint8_t flags) {
  if (closed_) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": append after close"));
  }
  CAIRN_RETURN_IF_ERROR(error_);
  if (stored_value.size() > kMaxRecordStoredSize || key.size() > kMaxRecordKeySize ||
      (flags & ~kKnownRecordFlags) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": stored record too large or with unknown flags ", flags));
  }
  return AppendRecord(key, {stored_value}, flags);
}

absl::StatusOr<ValuePointer> SegmentWriter::AppendRecord(
    std::string_view key, std::initializer_list<std::string_view> stored, uint8_t flags) {
  record_.clear();
  EncodeRecord(key, stored, flags, &record_);
  return AppendEncodedRecord();
}

absl::StatusOr<ValuePointer> SegmentWriter::AppendEncodedRecord() {
  const uint64_t offset = size();
  CAIRN_RETURN_IF_ERROR(Track(file_->Append(record_)));
  size_.store(offset + record_.size(), std::memory_order_release);
  ++record_count_;
  return ValuePointer{segment_id_, offset, static_cast<uint32_t>(record_.size())};
}

absl::Status SegmentWriter::Flush() {
  if (closed_) return absl::FailedPreconditionError(absl::StrCat(path_, ": flush after close"));
  CAIRN_RETURN_IF_ERROR(error_);
  return Track(file_->Flush());
}

absl::Status SegmentWriter::Sync() {
  if (closed_) return absl::FailedPreconditionError(absl::StrCat(path_, ": sync after close"));
  CAIRN_RETURN_IF_ERROR(error_);
  return Track(file_->Sync());
}

absl::Status SegmentWriter::Close() {
  if (closed_) return error_;
  closed_ = true;
  absl::Status s = file_->Close();
  file_.reset();
  if (!error_.ok()) return error_;
  return Track(s);
}

}  // namespace cairn::vlog
