#include "core/flush_segments.h"

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "io/status_macros.h"
#include "vlog/vlog_format.h"

namespace cairn {

absl::StatusOr<vlog::ValuePointer> FlushSegments::Place(std::string_view user_key,
                                                        std::string_view value) {
  if (user_key.size() > vlog::kMaxRecordKeySize || value.size() > vlog::kMaxRecordValueSize) {
    return absl::InvalidArgumentError(absl::StrCat("a record of a ", user_key.size(),
                                                   "-byte key and a ", value.size(),
                                                   "-byte value is past the record limits"));
  }
  if (current_ == nullptr) {
    CAIRN_ASSIGN_OR_RETURN(current_, create_());
    staged_.reserve(kStageBytes + vlog::RecordSize(user_key.size(), value.size()));
  }
  const size_t start = staged_.size();
  CAIRN_RETURN_IF_ERROR(vlog::EncodeValueRecord(user_key, value, current_->Encoding(), &staged_,
                                                &chunk_table_, &chunk_body_));
  const auto size = static_cast<uint32_t>(staged_.size() - start);
  staged_sizes_.push_back(size);
  const vlog::ValuePointer ptr{current_->segment_id(), current_->size() + start, size};
  if (current_->size() + staged_.size() >= segment_size_) {
    CAIRN_RETURN_IF_ERROR(Close());
  } else if (staged_.size() >= kStageBytes) {
    CAIRN_RETURN_IF_ERROR(WriteStaged());
  }
  return ptr;
}

absl::Status FlushSegments::WriteStaged() {
  if (staged_sizes_.empty()) return absl::OkStatus();
  // The places it returns are the ones Place handed out: both count from
  // the segment's size.
  const vlog::EncodedRecords run{staged_, staged_sizes_};
  std::vector<vlog::ValuePointer> pointers;
  pointers.reserve(staged_sizes_.size());
  CAIRN_RETURN_IF_ERROR(current_->AppendEncoded(absl::MakeConstSpan(&run, 1), &pointers));
  staged_.clear();
  staged_sizes_.clear();
  return absl::OkStatus();
}

absl::Status FlushSegments::Close() {
  CAIRN_RETURN_IF_ERROR(WriteStaged());
  // Sealed means complete: synced, and the file exactly its records.
  CAIRN_RETURN_IF_ERROR(current_->Sync());
  CAIRN_RETURN_IF_ERROR(current_->Close());
  closed_.push_back(
      {current_->segment_id(), current_->size(), current_->record_count(), current_->path()});
  current_.reset();
  return absl::OkStatus();
}

absl::Status FlushSegments::Finish() {
  if (current_ == nullptr) return absl::OkStatus();
  return Close();
}

void FlushSegments::Abandon() {
  staged_.clear();
  staged_sizes_.clear();
  if (current_ != nullptr) {
    const std::string path = current_->path();
    current_.reset();
    fs_->RemoveFile(path).IgnoreError();
  }
  for (const Closed& c : closed_) fs_->RemoveFile(c.path).IgnoreError();
  closed_.clear();
}

void FlushSegments::AddTo(vlog::SegmentEdit* edit) const {
  for (const Closed& c : closed_) {
    edit->AddSegment(c.id, vlog::SegmentKind::kFresh);
    edit->SealSegment(c.id, c.size, c.records);
  }
}

}  // namespace cairn
