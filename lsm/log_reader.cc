#include "lsm/log_reader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/checksum.h"
#include "io/coding.h"
#include "io/status_macros.h"
#include "lsm/log_format.h"

namespace cairn::lsm {

namespace {

// Reads a whole file, however long. A RandomAccessFile returns fewer bytes
// than asked only at the end of the file.
absl::StatusOr<std::string> ReadWholeFile(const io::RandomAccessFile& file) {
  constexpr size_t kChunk = 1 << 20;
  std::string contents;
  absl::StatusOr<uint64_t> size_hint = file.Size();
  if (size_hint.ok()) contents.reserve(*size_hint);
  uint64_t offset = 0;
  while (true) {
    contents.resize(offset + kChunk);
    char* dst = contents.data() + offset;
    std::string_view got;
    CAIRN_RETURN_IF_ERROR(file.Read(offset, kChunk, dst, &got));
    if (got.data() != dst) std::memmove(dst, got.data(), got.size());
    offset += got.size();
    if (got.size() < kChunk) break;
  }
  contents.resize(offset);
  return contents;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LogReader>> LogReader::Open(io::FileSystem* fs,
                                                           const std::string& path,
                                                           uint64_t expected_log_number,
                                                           io::IoCategory category) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file,
                         fs->NewRandomAccessFile(path, {.category = category}));
  CAIRN_ASSIGN_OR_RETURN(std::string contents, ReadWholeFile(*file));
  std::unique_ptr<LogReader> reader(new LogReader(path, std::move(contents), expected_log_number));
  CAIRN_RETURN_IF_ERROR(reader->CheckHeader());
  return reader;
}

LogReader::LogReader(std::string path, std::string contents, uint64_t log_number)
    : path_(std::move(path)), contents_(std::move(contents)), log_number_(log_number) {}

absl::Status LogReader::CheckHeader() {
  pos_ = valid_end_ = kLogFileHeaderSize;
  if (contents_.size() < kLogFileHeaderSize) {
    // Cut short: nothing can follow, so this is a log that never synced.
    done_ = torn_tail_ = true;
    valid_end_ = 0;
    return absl::OkStatus();
  }
  const char* h = contents_.data();
  const bool magic_ok = io::DecodeFixed64(h) == kLogMagic;
  const uint32_t version = io::DecodeFixed32(h + 8);
  const uint64_t number = io::DecodeFixed64(h + 12);
  const bool checksum_ok = io::DecodeFixed32(h + 20) == io::Checksum32(std::string_view(h, 20));
  if (magic_ok && !IsKnownLogFormatVersion(version)) {
    // Never read past a version we do not know, whatever else the header
    // says: a newer header might not even checksum the way this one does.
    if (checksum_ok) {
      return absl::FailedPreconditionError(
          absl::StrCat(path_, ": log format version ", version,
                       " is not supported (this build reads versions ", kOldestLogFormatVersion,
                       " to 4 and ", kExpiryLogFormatVersion, ")"));
    }
    return absl::DataLossError(
        absl::StrCat(path_, ": damaged log header at offset 0: version field reads ", version,
                     " and the header checksum does not match"));
  }
  if (magic_ok && checksum_ok) {
    version_ = version;
    if (number != log_number_) {
      return absl::DataLossError(absl::StrCat(path_, ": log header at offset 0 names log ", number,
                                              ", expected log ", log_number_,
                                              " (a stale or misnamed file)"));
    }
    return absl::OkStatus();
  }
  // A damaged header. The first sync covers the header, so if no fragment of
  // this log verifies anywhere after it, nothing here was ever acknowledged:
  // a torn write of a log that never synced.
  const std::string why = magic_ok ? "header checksum mismatch" : "bad magic number";
  if (std::optional<uint64_t> next = FindValidFragment(kLogFileHeaderSize)) {
    return absl::DataLossError(absl::StrCat(path_, ": damaged log header at offset 0 (", why,
                                            ") but a valid fragment follows at offset ", *next));
  }
  done_ = torn_tail_ = true;
  valid_end_ = 0;
  return absl::OkStatus();
}

bool LogReader::FragmentVerifiesAt(uint64_t offset) const {
  const uint64_t in_block = offset % kLogBlockSize;
  if (kLogBlockSize - in_block < kLogFragmentHeaderSize) return false;  // A trailer.
  if (contents_.size() - offset < kLogFragmentHeaderSize) return false;
  const char* p = contents_.data() + offset;
  const size_t length = io::DecodeFixed16(p + 4);
  if (!IsValidLogFragmentType(static_cast<uint8_t>(p[6]))) return false;
  if (in_block + kLogFragmentHeaderSize + length > kLogBlockSize) return false;
  if (contents_.size() - offset - kLogFragmentHeaderSize < length) return false;
  return io::DecodeFixed32(p) ==
         LogFragmentChecksum(log_number_, std::string_view(p + 4, 3),
                             std::string_view(p + kLogFragmentHeaderSize, length));
}

bool LogReader::ZeroTailAt(uint64_t offset) const {
  // A fragment header starts with its checksum, so the first byte decides
  // almost always.
  return std::all_of(contents_.begin() + static_cast<ptrdiff_t>(offset), contents_.end(),
                     [](char c) { return c == 0; });
}

std::optional<uint64_t> LogReader::FindValidFragment(uint64_t from) const {
  // Byte by byte: after a bad fragment its length cannot be trusted, so the
  // next fragment could start anywhere. The cheap tests (type, bounds) reject
  // almost every offset before a checksum is computed.
  for (uint64_t offset = std::max<uint64_t>(from, kLogFileHeaderSize);
       offset + kLogFragmentHeaderSize <= contents_.size(); ++offset) {
    if (FragmentVerifiesAt(offset)) return offset;
  }
  return std::nullopt;
}

std::optional<uint64_t> LogReader::FindRecordStart(uint64_t from) const {
  // A middle or last fragment after a bad spot belongs to a record whose
  // first fragment is lost or bad; reading cannot start there.
  for (std::optional<uint64_t> at = FindValidFragment(from); at.has_value();
       at = FindValidFragment(*at + 1)) {
    // The type byte follows the checksum (4 bytes) and the length (2).
    const auto type = static_cast<LogFragmentType>(contents_[*at + 4 + 2]);
    if (type == LogFragmentType::kFull || type == LogFragmentType::kFirst) return at;
  }
  return std::nullopt;
}

std::optional<LogReader::SkippedRange> LogReader::SkipCorruption() {
  if (status_.ok()) return std::nullopt;
  // Past the bad record's first byte: every fragment between there and the
  // next record start is part of it or of another record that lost its
  // first fragment, and a record start the bad record ran into ("lacks its
  // last fragment") is found again.
  const std::optional<uint64_t> next = FindRecordStart(bad_record_offset_ + 1);
  if (!next.has_value()) return std::nullopt;
  pos_ = *next;
  done_ = false;
  status_ = absl::OkStatus();
  return SkippedRange{.begin = valid_end_, .end = *next};
}

bool LogReader::Stop(uint64_t record_offset, uint64_t scan_from, const std::string& why) {
  done_ = true;
  if (std::optional<uint64_t> next = FindValidFragment(scan_from)) {
    bad_record_offset_ = record_offset;
    status_ = absl::DataLossError(absl::StrCat(path_, ": corrupt log record at offset ",
                                               record_offset, ": ", why,
                                               "; a valid fragment follows at offset ", *next));
  } else {
    torn_tail_ = true;
  }
  return false;
}

bool LogReader::ReadRecord(std::string_view* record, std::string* scratch) {
  scratch->clear();
  if (done_) return false;
  bool in_record = false;  // Between a kFirst and its kLast.
  uint64_t record_offset = 0;
  const uint64_t size = contents_.size();
  while (true) {
    if (kLogBlockSize - pos_ % kLogBlockSize < kLogFragmentHeaderSize) {
      pos_ += kLogBlockSize - pos_ % kLogBlockSize;  // Skip the trailer.
    }
    if (pos_ >= size) {
      if (in_record) return Stop(record_offset, size, "record cut short at the end of the file");
      done_ = true;  // Clean end.
      return false;
    }
    const uint64_t offset = pos_;
    const uint64_t in_block = offset % kLogBlockSize;
    if (!in_record && version_ >= kPrefilledLogFormatVersion && ZeroTailAt(offset)) {
      done_ = true;  // Clean end: the zeros the writer filled ahead.
      return false;
    }
    // A bad fragment inside a record makes the whole record bad.
    const uint64_t bad_record_offset = in_record ? record_offset : offset;
    if (size - offset < kLogFragmentHeaderSize) {
      return Stop(bad_record_offset, offset, "fragment header cut short");
    }
    const char* p = contents_.data() + offset;
    const size_t length = io::DecodeFixed16(p + 4);
    const uint8_t type = static_cast<uint8_t>(p[6]);
    if (!IsValidLogFragmentType(type)) {
      return Stop(bad_record_offset, offset, absl::StrCat("unknown fragment type ", type));
    }
    if (in_block + kLogFragmentHeaderSize + length > kLogBlockSize) {
      return Stop(bad_record_offset, offset,
                  absl::StrCat("fragment length ", length, " crosses a block boundary"));
    }
    if (size - offset - kLogFragmentHeaderSize < length) {
      return Stop(bad_record_offset, offset, "fragment cut short");
    }
    const std::string_view payload(p + kLogFragmentHeaderSize, length);
    if (io::DecodeFixed32(p) !=
        LogFragmentChecksum(log_number_, std::string_view(p + 4, 3), payload)) {
      return Stop(bad_record_offset, offset, "fragment checksum mismatch");
    }
    // The fragment verifies; now its place in the sequence must fit. A
    // misplaced fragment is itself valid data after the bad spot, so Stop
    // reports these as corruption.
    switch (static_cast<LogFragmentType>(type)) {
      case LogFragmentType::kFull:
        if (in_record) return Stop(record_offset, offset, "record lacks its last fragment");
        pos_ = offset + kLogFragmentHeaderSize + length;
        *record = payload;
        last_record_offset_ = offset;
        valid_end_ = pos_;
        return true;
      case LogFragmentType::kFirst:
        if (in_record) return Stop(record_offset, offset, "record lacks its last fragment");
        in_record = true;
        record_offset = offset;
        scratch->assign(payload);
        break;
      case LogFragmentType::kMiddle:
      case LogFragmentType::kLast:
        if (!in_record) return Stop(offset, offset, "fragment without a first fragment");
        scratch->append(payload);
        if (static_cast<LogFragmentType>(type) == LogFragmentType::kLast) {
          pos_ = offset + kLogFragmentHeaderSize + length;
          *record = *scratch;
          last_record_offset_ = record_offset;
          valid_end_ = pos_;
          return true;
        }
        break;
    }
    pos_ = offset + kLogFragmentHeaderSize + length;
  }
}

}  // namespace cairn::lsm
