// ExternalFileWriter (cairn/ingest.h): the file set's key table is an
// ordinary table whose entries all carry sequence 0 and whose pointers name
// the set's own segments by local id (1, 2, ...); ingestion gives both
// their database meaning (docs/ingestion.md, "What ingestion does").
#include <memory>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cairn/ingest.h"
#include "core/db_impl.h"
#include "core/external_file_set.h"
#include "core/flush_segments.h"
#include "core/options_validation.h"
#include "io/status_macros.h"
#include "lsm/dbformat.h"
#include "lsm/table_builder.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_writer.h"

namespace cairn {
namespace {

class ExternalFileWriterImpl final : public ExternalFileWriter {
 public:
  ExternalFileWriterImpl(const Options& options, std::string dir,
                         std::shared_ptr<io::FileSystem> fs)
      : options_(options),
        dir_(std::move(dir)),
        fs_(std::move(fs)),
        segments_(
            fs_.get(), [this] { return NewSegment(); }, options.value_log_segment_size) {
    table_options_.block_size = options.block_size;
    table_options_.bloom_bits_per_key = options.bloom_bits_per_key;
    table_options_.compress = options.compression == Compression::kZstd;
    info_.dir = dir_;
  }
  ~ExternalFileWriterImpl() override {
    if (!finished_) Abandon();
  }

  absl::Status Start() {
    CAIRN_ASSIGN_OR_RETURN(table_file_, fs_->NewWritableFile(FileSetTablePath(dir_),
                                                             {.category = io::IoCategory::kOther}));
    builder_ = std::make_unique<lsm::TableBuilder>(table_options_, table_file_.get());
    return absl::OkStatus();
  }

  absl::Status Put(std::string_view key, std::string_view value) override {
    CAIRN_RETURN_IF_ERROR(CheckEntry(key, value.size()));
    const bool separate = options_.value_separation_threshold != kInlineValues &&
                          value.size() >= options_.value_separation_threshold;
    scratch_key_.clear();
    if (separate) {
      absl::StatusOr<vlog::ValuePointer> ptr = segments_.Place(key, value);
      if (!ptr.ok()) return Fail(ptr.status());
      lsm::AppendInternalKey(&scratch_key_, key, 0, lsm::ValueType::kValuePointer);
      scratch_value_.clear();
      ptr->EncodeTo(&scratch_value_);
      ++info_.separated_values;
      CAIRN_RETURN_IF_ERROR(Add(key, scratch_value_));
    } else {
      lsm::AppendInternalKey(&scratch_key_, key, 0, lsm::ValueType::kValue);
      ++info_.inline_values;
      CAIRN_RETURN_IF_ERROR(Add(key, value));
    }
    info_.user_bytes += key.size() + value.size();
    return absl::OkStatus();
  }

  absl::Status Delete(std::string_view key) override {
    CAIRN_RETURN_IF_ERROR(CheckEntry(key, 0));
    scratch_key_.clear();
    lsm::AppendInternalKey(&scratch_key_, key, 0, lsm::ValueType::kDeletion);
    CAIRN_RETURN_IF_ERROR(Add(key, {}));
    ++info_.deletions;
    info_.user_bytes += key.size();
    return absl::OkStatus();
  }

  absl::StatusOr<ExternalFileInfo> Finish() override {
    if (finished_) return absl::InvalidArgumentError("ExternalFileWriter: Finish called twice");
    CAIRN_RETURN_IF_ERROR(error_);
    if (info_.entries == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("ExternalFileWriter: nothing was added to ", dir_));
    }
    absl::Status s = builder_->Finish();
    if (s.ok()) s = table_file_->Sync();
    if (s.ok()) s = table_file_->Close();
    if (s.ok()) s = segments_.Finish();
    if (!s.ok()) return Fail(s);
    ExternalFileSet set;
    set.smallest_key = info_.smallest_key;
    set.largest_key = info_.largest_key;
    set.entries = info_.entries;
    set.deletions = info_.deletions;
    set.table_size = builder_->FileSize();
    vlog::SegmentEdit edit;
    segments_.AddTo(&edit);
    for (const vlog::SegmentEdit::Change& c : edit.changes()) {
      if (c.tag != vlog::SegmentEditTag::kSealSegment) continue;
      set.segments.push_back({c.segment_id, c.bytes, c.records});
      info_.segment_bytes += c.bytes;
    }
    info_.segments = static_cast<uint32_t>(set.segments.size());
    info_.table_bytes = set.table_size;
    // The descriptor comes last and whole (written aside, synced, renamed):
    // a directory with a FILESET holds every file it names, durably.
    const std::string tmp = FileSetDescriptorPath(dir_) + ".tmp";
    s = fs_->SyncDir(dir_);
    if (s.ok()) s = io::WriteStringToFile(fs_.get(), tmp, set.Encode(), /*sync=*/true);
    if (s.ok()) s = fs_->RenameFile(tmp, FileSetDescriptorPath(dir_));
    if (s.ok()) s = fs_->SyncDir(dir_);
    if (!s.ok()) return Fail(s);
    finished_ = true;
    return info_;
  }

  void Abandon() override {
    if (builder_ != nullptr && !finished_) builder_->Abandon();
    table_file_.reset();
    segments_.Abandon();
    for (const std::string& name : {FileSetDescriptorPath(dir_),
                                    FileSetDescriptorPath(dir_) + ".tmp", FileSetTablePath(dir_)}) {
      fs_->RemoveFile(name).IgnoreError();
    }
    fs_->RemoveDir(dir_).IgnoreError();
    finished_ = true;
    if (error_.ok()) error_ = absl::InvalidArgumentError("ExternalFileWriter: abandoned");
  }

 private:
  absl::StatusOr<std::unique_ptr<vlog::SegmentWriter>> NewSegment() {
    vlog::SegmentWriterOptions wo;
    wo.kind = vlog::SegmentKind::kFresh;
    wo.compress = options_.value_compression == Compression::kZstd;
    wo.compression_level = 1;  // the engine's (docs/vlog_format.md)
    wo.sync_header = false;    // synced whole by Finish
    const uint64_t id = ++segment_count_;
    return vlog::SegmentWriter::Create(fs_.get(), FileSetSegmentPath(dir_, id), id, wo);
  }

  absl::Status CheckEntry(std::string_view key, size_t value_size) {
    if (finished_) {
      return absl::InvalidArgumentError(
          absl::StrCat("ExternalFileWriter: write to ", dir_, " after Finish or Abandon"));
    }
    CAIRN_RETURN_IF_ERROR(error_);
    if (key.size() > kMaxKeySize) {
      return absl::InvalidArgumentError(absl::StrCat("ExternalFileWriter: a ", key.size(),
                                                     "-byte key is over the ", kMaxKeySize,
                                                     "-byte limit"));
    }
    if (value_size > kMaxValueSize) {
      return absl::InvalidArgumentError(absl::StrCat("ExternalFileWriter: a ", value_size,
                                                     "-byte value is over the ", kMaxValueSize,
                                                     "-byte limit"));
    }
    if (info_.entries > 0 && key <= std::string_view(info_.largest_key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("ExternalFileWriter: keys must strictly increase: '", EscapedKey(key),
                       "' after '", EscapedKey(info_.largest_key), "'",
                       key == std::string_view(info_.largest_key) ? " (a duplicate)" : ""));
    }
    return absl::OkStatus();
  }

  absl::Status Add(std::string_view key, std::string_view value) {
    if (absl::Status s = builder_->Add(scratch_key_, value); !s.ok()) return Fail(s);
    if (info_.entries == 0) info_.smallest_key = std::string(key);
    info_.largest_key = std::string(key);
    ++info_.entries;
    return absl::OkStatus();
  }

  absl::Status Fail(absl::Status s) {
    if (error_.ok()) error_ = s;
    return s;
  }

  const Options options_;
  const std::string dir_;
  const std::shared_ptr<io::FileSystem> fs_;
  lsm::TableOptions table_options_;
  std::unique_ptr<io::WritableFile> table_file_;
  std::unique_ptr<lsm::TableBuilder> builder_;
  FlushSegments segments_;
  uint64_t segment_count_ = 0;
  ExternalFileInfo info_;
  std::string scratch_key_, scratch_value_;
  bool finished_ = false;
  absl::Status error_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ExternalFileWriter>> ExternalFileWriter::Open(
    const Options& options, const std::string& dir) {
  CAIRN_RETURN_IF_ERROR(ValidateOptions(options));
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<io::FileSystem> fs, FileSystemFor(options));
  if (fs->FileExists(dir)) {
    absl::StatusOr<std::vector<std::string>> names = fs->ListDir(dir);
    if (!names.ok() || !names->empty()) {
      return absl::AlreadyExistsError(
          absl::StrCat("ExternalFileWriter: ", dir, " exists and is not an empty directory"));
    }
  } else {
    CAIRN_RETURN_IF_ERROR(fs->CreateDir(dir));
  }
  auto writer = std::make_unique<ExternalFileWriterImpl>(options, dir, std::move(fs));
  if (absl::Status s = writer->Start(); !s.ok()) {
    writer->Abandon();
    return s;
  }
  return writer;
}

}  // namespace cairn
