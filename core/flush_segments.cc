#include "core/flush_segments.h"

#include "io/status_macros.h"

namespace cairn {

absl::StatusOr<vlog::ValuePointer> FlushSegments::Place(std::string_view user_key,
                                                        std::string_view value) {
  if (current_ == nullptr) {
    CAIRN_ASSIGN_OR_RETURN(current_, create_());
  }
  CAIRN_ASSIGN_OR_RETURN(vlog::ValuePointer ptr, current_->Append(user_key, value));
  if (current_->size() >= segment_size_) CAIRN_RETURN_IF_ERROR(Close());
  return ptr;
}

absl::Status FlushSegments::Close() {
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
