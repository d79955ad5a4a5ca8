#include "vlog/segment_scanner.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "io/coding.h"
#include "io/status_macros.h"

namespace cairn::vlog {

absl::StatusOr<std::unique_ptr<SegmentScanner>> SegmentScanner::Open(
    io::FileSystem* fs, std::string path, uint64_t segment_id,
    const SegmentScannerOptions& options) {
  if (options.read_size == 0) {
    return absl::InvalidArgumentError("SegmentScanner: read_size must be positive");
  }
  io::FileOptions file_options;
  file_options.category = options.category;
  file_options.direct = options.direct_reads;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file,
                         fs->NewRandomAccessFile(path, file_options));
  CAIRN_ASSIGN_OR_RETURN(uint64_t file_size, file->Size());
  std::unique_ptr<io::ReadQueue> queue;
  if (options.read_ahead) queue = fs->NewReadQueue();
  auto scanner = std::unique_ptr<SegmentScanner>(new SegmentScanner(
      std::move(file), std::move(path), options, file_size, std::move(queue)));
  CAIRN_ASSIGN_OR_RETURN(std::string_view head, scanner->Bytes(0, kSegmentHeaderSize));
  if (head.size() < kSegmentHeaderSize && options.allow_torn_tail) {
    // The header is synced when the segment is created, so a short one means
    // creation never finished and no record was ever acknowledged here.
    scanner->torn_tail_ = true;
    scanner->done_ = true;
    scanner->valid_end_ = 0;
    return scanner;
  }
  CAIRN_ASSIGN_OR_RETURN(scanner->header_, DecodeSegmentHeader(head, scanner->path_));
  if (scanner->header_.segment_id != segment_id) {
    return absl::DataLossError(absl::StrCat(scanner->path_, ": header at offset 0 names segment ",
                                            scanner->header_.segment_id, ", expected ",
                                            segment_id));
  }
  scanner->pos_ = kSegmentHeaderSize;
  return scanner;
}

SegmentScanner::SegmentScanner(std::unique_ptr<io::RandomAccessFile> file, std::string path,
                               const SegmentScannerOptions& options, uint64_t file_size,
                               std::unique_ptr<io::ReadQueue> queue)
    : file_(std::move(file)), path_(std::move(path)), options_(options),
      file_size_(file_size), queue_(std::move(queue)) {}

void SegmentScanner::StartReadAhead() {
  if (queue_ == nullptr || ahead_in_flight_ || ahead_ready_) return;
  const uint64_t from = window_offset_ + window_len_;
  if (from >= file_size_) return;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(options_.read_size, file_size_ - from));
  if (ahead_buf_.capacity() < kAheadHeadroom + n) {
    ahead_buf_ = io::AlignedBuffer(kAheadHeadroom + n);
  }
  ahead_ = io::ReadRequest{from, n, ahead_buf_.data() + kAheadHeadroom, 0, absl::OkStatus()};
  io::FileReadRequest request{file_.get(), &ahead_};
  queue_->Submit(absl::MakeConstSpan(&request, 1));
  ahead_in_flight_ = true;
}

void SegmentScanner::FinishReadAhead() {
  if (!ahead_in_flight_) return;
  queue_->Wait(&ahead_);
  ahead_in_flight_ = false;
  ahead_ready_ = true;
}

absl::Status SegmentScanner::ReadInto(uint64_t offset, size_t n, char* dst, size_t* got) {
  FinishReadAhead();
  if (ahead_ready_) {
    ahead_ready_ = false;
    // Used only when it starts where this read does and its read went well
    // (an error is met again, and reported, by the read below).
    if (ahead_.offset == offset && ahead_.status.ok()) {
      const size_t have = std::min(n, ahead_.result);
      std::memcpy(dst, ahead_buf_.data() + kAheadHeadroom, have);
      *got = have;
      if (have == n || ahead_.result < ahead_.len) return absl::OkStatus();  // or end of file
      size_t more = 0;
      CAIRN_RETURN_IF_ERROR(ReadInto(offset + have, n - have, dst + have, &more));
      *got += more;
      return absl::OkStatus();
    }
  }
  std::string_view result;
  CAIRN_RETURN_IF_ERROR(file_->Read(offset, n, dst, &result));
  if (!result.empty() && result.data() != dst) std::memmove(dst, result.data(), result.size());
  *got = result.size();
  return absl::OkStatus();
}

absl::StatusOr<std::string_view> SegmentScanner::Bytes(uint64_t offset, uint64_t n) {
  n = std::min(n, file_size_ - offset);
  const uint64_t window_end = window_offset_ + window_len_;
  if (offset >= window_offset_ && offset + n <= window_end) {
    return std::string_view(window_.data() + window_pos_ + (offset - window_offset_), n);
  }
  // Keep the bytes from offset that the window already has (the start of a
  // record that straddles two reads), then read the rest.
  size_t keep = 0;
  if (offset >= window_offset_ && offset < window_end) keep = window_end - offset;
  const char* const kept =
      keep > 0 ? window_.data() + window_pos_ + (offset - window_offset_) : window_.data();
  // The read-ahead holds the rest: it becomes the window, the kept bytes
  // copied into its headroom. A scan that steps over records may land past
  // the window's end, inside the read-ahead: it is used from there.
  FinishReadAhead();
  const uint64_t from = offset + keep;  // the first byte wanted from a read
  if (ahead_ready_ && ahead_.status.ok() && keep <= kAheadHeadroom && from >= ahead_.offset &&
      (keep == 0 || from == ahead_.offset) && from - ahead_.offset <= ahead_.result) {
    const size_t skip = static_cast<size_t>(from - ahead_.offset);
    if (keep + (ahead_.result - skip) >= n) {
      ahead_ready_ = false;
      std::memcpy(ahead_buf_.data() + kAheadHeadroom + skip - keep, kept, keep);
      std::swap(window_, ahead_buf_);
      window_pos_ = kAheadHeadroom + skip - keep;
      window_len_ = keep + (ahead_.result - skip);
      window_offset_ = offset;
      StartReadAhead();
      return std::string_view(window_.data() + window_pos_, n);
    }
  }
  const uint64_t want = std::min<uint64_t>(std::max<uint64_t>(n, options_.read_size),
                                           file_size_ - offset);
  if (window_.capacity() < want) {
    // A larger window (a record longer than read_size), uninitialized: the
    // read fills it. Only the kept bytes move over.
    io::AlignedBuffer larger(want);
    if (keep > 0) std::memcpy(larger.data(), kept, keep);
    window_ = std::move(larger);
  } else if (keep > 0) {
    std::memmove(window_.data(), kept, keep);
  }
  window_pos_ = 0;
  window_len_ = want;
  window_offset_ = offset;
  size_t got = 0;
  absl::Status s = ReadInto(offset + keep, want - keep, window_.data() + keep, &got);
  if (!s.ok()) {
    window_len_ = 0;
    return s;
  }
  if (got < want - keep) {
    // The file shrank under us: scan only what is there.
    window_len_ = keep + got;
    file_size_ = offset + window_len_;
  }
  StartReadAhead();
  return std::string_view(window_.data(), std::min<uint64_t>(n, window_len_));
}

absl::StatusOr<RecordCheck> SegmentScanner::CheckAt(uint64_t offset, ParsedRecord* record) {
  CAIRN_ASSIGN_OR_RETURN(std::string_view head, Bytes(offset, kRecordHeaderSize));
  if (head.size() < kRecordHeaderSize) return RecordCheck::kTruncated;
  const uint64_t key_len = io::DecodeFixed32(head.data() + 4);
  const uint64_t value_len = io::DecodeFixed32(head.data() + 8);
  if (key_len > kMaxRecordKeySize || value_len > kMaxRecordStoredSize) {
    return RecordCheck::kBadLength;
  }
  const uint64_t size = RecordSize(key_len, value_len);
  if (size > file_size_ - offset) return RecordCheck::kTruncated;
  CAIRN_ASSIGN_OR_RETURN(std::string_view bytes, Bytes(offset, size));
  return ParseRecord(bytes, record);
}

void SegmentScanner::Stop(absl::Status status) {
  done_ = true;
  status_ = std::move(status);
}

void SegmentScanner::HandleBadRecord(uint64_t offset, RecordCheck check) {
  if (!options_.allow_torn_tail) {
    Stop(absl::DataLossError(absl::StrCat(path_, ": ", RecordCheckName(check), " at offset ",
                                          offset, " in a sealed segment of ", file_size_,
                                          " bytes")));
    return;
  }
  // A torn write leaves nothing valid behind it; a bad record with a valid
  // one after it is damage in the middle. Try every later offset: cheap in
  // practice, as garbage and zeros fail the length or checksum test at once.
  for (uint64_t p = offset + 1; p + kRecordHeaderSize <= file_size_; ++p) {
    ParsedRecord next;
    absl::StatusOr<RecordCheck> c = CheckAt(p, &next);
    if (!c.ok()) return Stop(c.status());
    if (*c == RecordCheck::kOk) {
      return Stop(absl::DataLossError(
          absl::StrCat(path_, ": ", RecordCheckName(check), " at offset ", offset,
                       ", followed by a valid record at offset ", p)));
    }
  }
  done_ = true;
  torn_tail_ = true;
  valid_end_ = offset;
}

bool SegmentScanner::SkipKnownDead() {
  const std::vector<PunchRun>& runs = options_.skip_runs;
  const std::vector<PunchRun>& dead = options_.known_dead;
  while (true) {
    while (next_run_ < runs.size() && runs[next_run_].begin <= pos_) {
      const PunchRun& r = runs[next_run_];
      if (r.begin < pos_ || r.end > file_size_) {
        Stop(absl::DataLossError(absl::StrCat(
            path_, ": punched run ", r.begin, "-", r.end,
            r.begin < pos_ ? " does not start where a record does (the scan is at offset "
                           : " ends past the file (the scan is at offset ",
            pos_, ", the file holds ", file_size_, " bytes)")));
        return false;
      }
      pos_ = r.end;
      skipped_bytes_ += r.end - r.begin;
      ++next_run_;
    }
    while (next_dead_ < dead.size() && dead[next_dead_].begin < pos_) ++next_dead_;
    if (next_dead_ == dead.size() || dead[next_dead_].begin != pos_) return true;
    const PunchRun& d = dead[next_dead_];
    if (d.end <= d.begin || d.end > file_size_) return true;  // parsed as any record
    // The header's lengths must give the size the pointer did; the rest of
    // the record, checksum included, is not looked at.
    absl::StatusOr<std::string_view> head = Bytes(pos_, kRecordHeaderSize);
    if (!head.ok()) {
      Stop(head.status());
      return false;
    }
    if (head->size() < kRecordHeaderSize) return true;
    const uint64_t key_len = io::DecodeFixed32(head->data() + 4);
    const uint64_t value_len = io::DecodeFixed32(head->data() + 8);
    if (key_len > kMaxRecordKeySize || value_len > kMaxRecordStoredSize ||
        RecordSize(key_len, value_len) != d.end - d.begin) {
      return true;
    }
    pos_ = d.end;
    ++next_dead_;
    ++known_dead_skipped_;
    known_dead_skipped_bytes_ += d.end - d.begin;
  }
}

bool SegmentScanner::Next(ScannedRecord* out) {
  if (done_) return false;
  if (!SkipKnownDead()) return false;
  if (pos_ == file_size_) {
    done_ = true;
    valid_end_ = pos_;
    return false;
  }
  ParsedRecord record;
  absl::StatusOr<RecordCheck> check = CheckAt(pos_, &record);
  if (!check.ok()) {
    Stop(check.status());
    return false;
  }
  if (*check != RecordCheck::kOk) {
    HandleBadRecord(pos_, *check);
    return false;
  }
  out->offset = pos_;
  out->size = record.size;
  out->flags = record.flags;
  // The record's bytes are contiguous (CheckAt parsed them from one view),
  // the key right after the fixed header.
  out->bytes = std::string_view(record.key.data() - kRecordHeaderSize, record.size);
  out->key = record.key;
  out->stored_value = record.stored_value;
  out->value = {};
  if (options_.uncompress_values) {
    if (!record.plain()) {
      absl::Status s = RecordValue(record, &value_);
      if (!s.ok()) {
        Stop(absl::DataLossError(absl::StrCat(path_, ": bad ",
                                              record.chunked() ? "chunked" : "compressed",
                                              " value at offset ", pos_, ": ", s.message())));
        return false;
      }
      out->value = value_;
    } else {
      out->value = record.stored_value;
    }
  }
  pos_ += record.size;
  ++records_read_;
  return true;
}

}  // namespace cairn::vlog
