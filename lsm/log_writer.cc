#include "lsm/log_writer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/checksum.h"
#include "io/coding.h"
#include "io/status_macros.h"
#include "lsm/log_format.h"

namespace cairn::lsm {

static_assert(kLogFileHeaderSize + kLogFragmentHeaderSize <= kLogBlockSize);
// A fragment's length field is 16 bits.
static_assert(kLogBlockSize - kLogFragmentHeaderSize <= 0xffff);

absl::StatusOr<std::unique_ptr<LogWriter>> LogWriter::Create(std::unique_ptr<io::WritableFile> file,
                                                             uint64_t log_number) {
  if (file->Size() != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        file->path(), ": a log must start in an empty file; it holds ", file->Size(), " bytes"));
  }
  char header[kLogFileHeaderSize];
  io::EncodeFixed64(header, kLogMagic);
  io::EncodeFixed32(header + 8, kLogFormatVersion);
  io::EncodeFixed64(header + 12, log_number);
  io::EncodeFixed32(header + 20, io::Checksum32(std::string_view(header, 20)));
  CAIRN_RETURN_IF_ERROR(file->Append(std::string_view(header, sizeof(header))));
  return std::unique_ptr<LogWriter>(new LogWriter(std::move(file), log_number));
}

LogWriter::LogWriter(std::unique_ptr<io::WritableFile> file, uint64_t log_number)
    : file_(std::move(file)), log_number_(log_number), block_offset_(kLogFileHeaderSize) {}

absl::Status LogWriter::CheckOpen() const {
  if (!error_.ok()) return error_;
  if (closed_) return absl::FailedPreconditionError(absl::StrCat(file_->path(), ": log is closed"));
  return absl::OkStatus();
}

absl::Status LogWriter::Check(absl::Status s) {
  if (!s.ok() && error_.ok()) error_ = s;
  return s;
}

absl::Status LogWriter::AddRecord(std::string_view payload) {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  // An empty payload still emits one (empty) kFull fragment.
  bool first = true;
  do {
    const size_t leftover = kLogBlockSize - block_offset_;
    if (leftover < kLogFragmentHeaderSize) {
      // The trailer: too small for a fragment header, so pad to the block end.
      static constexpr char kZeros[kLogFragmentHeaderSize] = {};
      if (leftover > 0) {
        CAIRN_RETURN_IF_ERROR(Check(file_->Append(std::string_view(kZeros, leftover))));
      }
      block_offset_ = 0;
    }
    const size_t available = kLogBlockSize - block_offset_ - kLogFragmentHeaderSize;
    const size_t n = std::min(payload.size(), available);
    const bool last = n == payload.size();
    LogFragmentType type;
    if (first && last) {
      type = LogFragmentType::kFull;
    } else if (first) {
      type = LogFragmentType::kFirst;
    } else if (last) {
      type = LogFragmentType::kLast;
    } else {
      type = LogFragmentType::kMiddle;
    }
    CAIRN_RETURN_IF_ERROR(EmitFragment(static_cast<uint8_t>(type), payload.substr(0, n)));
    payload.remove_prefix(n);
    first = false;
    if (last) break;
  } while (true);
  return absl::OkStatus();
}

absl::Status LogWriter::EmitFragment(uint8_t type, std::string_view payload) {
  char header[kLogFragmentHeaderSize];
  io::EncodeFixed16(header + 4, static_cast<uint16_t>(payload.size()));
  header[6] = static_cast<char>(type);
  io::EncodeFixed32(header,
                    LogFragmentChecksum(log_number_, std::string_view(header + 4, 3), payload));
  CAIRN_RETURN_IF_ERROR(Check(file_->Append(std::string_view(header, sizeof(header)))));
  CAIRN_RETURN_IF_ERROR(Check(file_->Append(payload)));
  block_offset_ += kLogFragmentHeaderSize + payload.size();
  return absl::OkStatus();
}

absl::Status LogWriter::Sync() {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  return Check(file_->Sync());
}

absl::Status LogWriter::Flush() {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  return Check(file_->Flush());
}

absl::Status LogWriter::Close() {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  closed_ = true;
  return Check(file_->Close());
}

}  // namespace cairn::lsm
