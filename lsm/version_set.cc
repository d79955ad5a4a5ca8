#include "lsm/version_set.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/status_macros.h"
#include "lsm/filename.h"
#include "lsm/log_reader.h"
#include "lsm/log_writer.h"

namespace cairn::lsm {
namespace {

io::FileOptions ManifestFileOptions() {
  io::FileOptions options;
  options.category = io::IoCategory::kManifest;
  return options;
}

// A status of the same code whose message starts with prefix.
absl::Status Annotate(const absl::Status& s, std::string_view prefix) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrFormat("%s: %s", prefix, s.message()));
}

}  // namespace

VersionSet::VersionSet(io::FileSystem* fs, std::string dbname, VersionSetOptions options)
    : fs_(fs), dbname_(std::move(dbname)), options_(options) {
  absl::MutexLock lock(&mu_);
  Install(std::make_shared<const Version>());
}

VersionSet::~VersionSet() {
  absl::MutexLock lock(&apply_mu_);
  // Every record was synced when it was added; a failed close loses nothing.
  if (manifest_ != nullptr) manifest_->Close().IgnoreError();
}

void VersionSet::SetExtensionSnapshotter(std::function<ExtensionRecords()> fn) {
  absl::MutexLock lock(&apply_mu_);
  snapshotter_ = std::move(fn);
}

std::shared_ptr<const Version> VersionSet::current() const {
  absl::ReaderMutexLock lock(&mu_);
  return current_;
}

void VersionSet::MarkFileNumberUsed(uint64_t n) {
  uint64_t next = next_file_number_.load();
  while (next <= n && !next_file_number_.compare_exchange_weak(next, n + 1)) {
  }
}

void VersionSet::SetLastSequence(SequenceNumber s) {
  // A max, not a store: LogAndApply and the write path may race to raise it.
  SequenceNumber last = last_sequence_.load();
  while (last < s && !last_sequence_.compare_exchange_weak(last, s)) {
  }
}

uint64_t VersionSet::LogNumber() const {
  absl::ReaderMutexLock lock(&mu_);
  return log_number_;
}

uint64_t VersionSet::ManifestFileNumber() const {
  absl::ReaderMutexLock lock(&mu_);
  return manifest_file_number_;
}

std::string VersionSet::CompactPointer(int level) const {
  absl::ReaderMutexLock lock(&mu_);
  return compact_pointers_[level];
}

void VersionSet::AddLiveFiles(absl::flat_hash_set<uint64_t>* live) const {
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& weak : versions_) {
    const std::shared_ptr<const Version> v = weak.lock();
    if (v == nullptr) continue;
    for (int level = 0; level < kNumLevels; ++level) {
      for (const auto& f : v->files(level)) live->insert(f->number);
    }
  }
}

void VersionSet::Install(std::shared_ptr<const Version> v) {
  versions_.erase(std::remove_if(versions_.begin(), versions_.end(),
                                 [](const auto& w) { return w.expired(); }),
                  versions_.end());
  versions_.push_back(v);
  current_ = std::move(v);
}

std::string VersionSet::SnapshotRecord(
    const Version& v, uint64_t log_number, uint64_t next_file,
    const std::array<std::string, kNumLevels>& compact_pointers,
    SequenceNumber last_sequence) const {
  VersionEdit snapshot;
  snapshot.SetComparatorName(kComparatorName);
  snapshot.SetLogNumber(log_number);
  snapshot.SetNextFileNumber(next_file);
  snapshot.SetLastSequence(std::max(LastSequence(), last_sequence));
  for (int level = 0; level < kNumLevels; ++level) {
    if (!compact_pointers[level].empty()) {
      snapshot.SetCompactPointer(level, compact_pointers[level]);
    }
    for (const auto& f : v.files(level)) snapshot.AddFile(level, *f);
  }
  if (snapshotter_) {
    for (const auto& [tag, payload] : snapshotter_()) snapshot.AddExtension(tag, payload);
  }
  std::string record;
  snapshot.EncodeTo(&record);
  return record;
}

absl::Status VersionSet::WriteNewManifest(uint64_t number, const std::vector<std::string>& records,
                                          std::unique_ptr<LogWriter>* writer) {
  const std::string path = ManifestFileName(dbname_, number);
  absl::Status s = [&]() -> absl::Status {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file,
                           fs_->NewWritableFile(path, ManifestFileOptions()));
    CAIRN_ASSIGN_OR_RETURN(*writer, LogWriter::Create(std::move(file), number));
    for (const std::string& record : records) {
      CAIRN_RETURN_IF_ERROR((*writer)->AddRecord(record));
    }
    return (*writer)->Sync();
  }();
  if (!s.ok()) {
    // CURRENT still names the old manifest: the new one is garbage.
    writer->reset();
    fs_->RemoveFile(path).IgnoreError();
    return s;
  }
  // From here CURRENT may name the new manifest even if this fails, so the
  // file must stay.
  return SetCurrentFile(fs_, dbname_, number);
}

absl::StatusOr<VersionSet::CheckpointState> VersionSet::CaptureCheckpointState(
    uint64_t next_file, SequenceNumber last_sequence) {
  absl::MutexLock lock(&apply_mu_);
  if (!opened_) {
    return absl::FailedPreconditionError("VersionSet::CaptureCheckpointState: not open");
  }
  CheckpointState state;
  std::array<std::string, kNumLevels> compact_pointers;
  {
    absl::MutexLock l(&mu_);
    state.version = current_;
    state.log_number = log_number_;
    compact_pointers = compact_pointers_;
  }
  state.snapshot_record = SnapshotRecord(*state.version, state.log_number,
                                         std::max(next_file, NextFileNumber()), compact_pointers,
                                         last_sequence);
  return state;
}

absl::Status VersionSet::CreateNew() {
  absl::MutexLock lock(&apply_mu_);
  if (opened_) return absl::FailedPreconditionError("VersionSet::CreateNew: already open");
  if (fs_->FileExists(CurrentFileName(dbname_))) {
    return absl::AlreadyExistsError(
        absl::StrCat(CurrentFileName(dbname_), ": a database already exists"));
  }
  const uint64_t number = NewFileNumber();
  const std::shared_ptr<const Version> empty = current();
  const std::string record =
      SnapshotRecord(*empty, /*log_number=*/0, NextFileNumber(), /*compact_pointers=*/{});
  std::unique_ptr<LogWriter> writer;
  CAIRN_RETURN_IF_ERROR(WriteNewManifest(number, {record}, &writer));
  manifest_ = std::move(writer);
  manifest_start_size_ = manifest_->size();
  opened_ = true;
  absl::MutexLock state(&mu_);
  manifest_file_number_ = number;
  return absl::OkStatus();
}

absl::Status VersionSet::WriteEdit(const Version& base, uint64_t log_number,
                                   const std::array<std::string, kNumLevels>& compact_pointers,
                                   VersionEdit* edit, uint64_t* new_manifest) {
  const bool start_new =
      manifest_ == nullptr ||
      manifest_->size() >= std::max(options_.max_manifest_size, 2 * manifest_start_size_);
  // The new manifest's number is taken first, so the edit's next file number
  // covers it.
  if (start_new) *new_manifest = NewFileNumber();
  edit->SetNextFileNumber(NextFileNumber());
  edit->SetLastSequence(std::max(edit->last_sequence().value_or(0), LastSequence()));
  std::string record;
  edit->EncodeTo(&record);

  if (!start_new) {
    CAIRN_RETURN_IF_ERROR(manifest_->AddRecord(record));
    return manifest_->Sync();
  }
  // The snapshot is of the base version and the edit follows as its own
  // record, so the snapshotter's records never need to include the edit's.
  const std::vector<std::string> records = {
      SnapshotRecord(base, log_number, *edit->next_file_number(), compact_pointers),
      std::move(record)};
  std::unique_ptr<LogWriter> writer;
  CAIRN_RETURN_IF_ERROR(WriteNewManifest(*new_manifest, records, &writer));
  if (manifest_ != nullptr) manifest_->Close().IgnoreError();  // Synced; being replaced.
  manifest_ = std::move(writer);
  manifest_start_size_ = manifest_->size();
  return absl::OkStatus();
}

absl::Status VersionSet::LogAndApply(VersionEdit* edit) {
  absl::MutexLock lock(&apply_mu_);
  if (!opened_) {
    return absl::FailedPreconditionError("VersionSet::LogAndApply before CreateNew or Recover");
  }
  if (!manifest_error_.ok()) return manifest_error_;

  std::shared_ptr<const Version> base;
  uint64_t log_number = 0;
  uint64_t old_manifest = 0;
  std::array<std::string, kNumLevels> compact_pointers;
  {
    absl::ReaderMutexLock state(&mu_);
    base = current_;
    log_number = log_number_;
    old_manifest = manifest_file_number_;
    compact_pointers = compact_pointers_;
  }

  // Complete and check the edit; nothing is written if it does not fit.
  if (edit->log_number()) {
    if (*edit->log_number() < log_number || *edit->log_number() >= NextFileNumber()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "edit's log number %u is outside [%u, %u)", *edit->log_number(), log_number,
          NextFileNumber()));
    }
  } else {
    edit->SetLogNumber(log_number);
  }
  for (const auto& [level, f] : edit->new_files()) MarkFileNumberUsed(f.number);
  VersionBuilder builder(base.get());
  CAIRN_RETURN_IF_ERROR(builder.Apply(*edit));
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const Version> v, builder.Build());

  uint64_t new_manifest = 0;
  absl::Status s = WriteEdit(*base, log_number, compact_pointers, edit, &new_manifest);
  if (!s.ok()) {
    manifest_error_ = Annotate(s, "manifest write failed; reopen the database");
    return manifest_error_;
  }

  SetLastSequence(*edit->last_sequence());
  logged_last_sequence_.store(*edit->last_sequence());
  {
    absl::MutexLock state(&mu_);
    Install(std::move(v));
    log_number_ = *edit->log_number();
    for (const auto& [level, key] : edit->compact_pointers()) compact_pointers_[level] = key;
    if (new_manifest != 0) manifest_file_number_ = new_manifest;
  }
  if (new_manifest != 0 && old_manifest != 0 && old_manifest != new_manifest) {
    // CURRENT no longer names it. Failing to remove it leaves garbage that
    // obsolete-file deletion also collects.
    fs_->RemoveFile(ManifestFileName(dbname_, old_manifest)).IgnoreError();
  }
  return absl::OkStatus();
}

absl::Status VersionSet::Recover(
    absl::FunctionRef<absl::Status(uint32_t tag, std::string_view payload)> on_extension) {
  absl::MutexLock lock(&apply_mu_);
  CAIRN_ASSIGN_OR_RETURN(uint64_t manifest_number, ReadCurrentFile(fs_, dbname_));
  const std::string path = ManifestFileName(dbname_, manifest_number);
  if (!fs_->FileExists(path)) {
    return absl::DataLossError(absl::StrCat(CurrentFileName(dbname_), " names ", path,
                                            ", which does not exist"));
  }
  CAIRN_RETURN_IF_ERROR(RecoverFromManifest(manifest_number, on_extension));
  opened_ = true;
  // The next LogAndApply starts a new manifest. A manifest still open (from
  // CreateNew) has every record synced.
  if (manifest_ != nullptr) manifest_->Close().IgnoreError();
  manifest_ = nullptr;
  manifest_error_ = absl::OkStatus();
  return absl::OkStatus();
}

absl::Status VersionSet::RecoverFromManifest(
    uint64_t manifest_number,
    absl::FunctionRef<absl::Status(uint32_t, std::string_view)> on_extension) {
  const std::string path = ManifestFileName(dbname_, manifest_number);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<LogReader> reader,
                         LogReader::Open(fs_, path, manifest_number));

  VersionBuilder builder(nullptr);
  std::optional<uint64_t> log_number, next_file;
  std::optional<SequenceNumber> last_sequence;
  std::array<std::string, kNumLevels> compact_pointers;
  std::string scratch;
  std::string_view record;
  uint64_t index = 0;
  absl::flat_hash_set<uint64_t> listed;
  while (reader->ReadRecord(&record, &scratch)) {
    const std::string where = absl::StrFormat("%s: record %u at offset %u", path, index,
                                              reader->last_record_offset());
    VersionEdit edit;
    CAIRN_RETURN_IF_ERROR(Annotate(edit.DecodeFrom(record), where));
    if (index == 0 &&
        (!edit.log_number() || !edit.next_file_number() || !edit.last_sequence())) {
      return absl::DataLossError(absl::StrCat(
          where, ": the first record is not a snapshot (it lacks a log number, next file "
                 "number or last sequence)"));
    }
    if (edit.comparator_name() && *edit.comparator_name() != kComparatorName) {
      return absl::FailedPreconditionError(
          absl::StrFormat("%s: written with comparator '%s'; this build uses '%s'", where,
                          *edit.comparator_name(), kComparatorName));
    }
    absl::Status s = builder.Apply(edit);
    if (!s.ok()) return absl::DataLossError(absl::StrCat(where, ": ", s.message()));
    for (const auto& [level, f] : edit.new_files()) listed.insert(f.number);
    for (const auto& [tag, payload] : edit.extensions()) {
      CAIRN_RETURN_IF_ERROR(on_extension(tag, payload));
    }
    if (edit.log_number()) log_number = edit.log_number();
    if (edit.next_file_number()) next_file = edit.next_file_number();
    if (edit.last_sequence()) last_sequence = edit.last_sequence();
    for (const auto& [level, key] : edit.compact_pointers()) compact_pointers[level] = key;
    ++index;
  }
  CAIRN_RETURN_IF_ERROR(reader->status());
  std::optional<uint64_t> torn_tail;
  if (reader->hit_torn_tail()) torn_tail = reader->valid_end_offset();
  if (index == 0) {
    return absl::DataLossError(absl::StrCat(path, ": the manifest holds no complete record"));
  }
  absl::StatusOr<std::shared_ptr<const Version>> v = builder.Build();
  if (!v.ok()) return absl::DataLossError(absl::StrCat(path, ": ", v.status().message()));

  if (*next_file > 0) MarkFileNumberUsed(*next_file - 1);
  MarkFileNumberUsed(manifest_number);
  for (int level = 0; level < kNumLevels; ++level) {
    for (const auto& f : (*v)->files(level)) MarkFileNumberUsed(f->number);
  }
  SetLastSequence(*last_sequence);
  logged_last_sequence_.store(*last_sequence);
  absl::MutexLock state(&mu_);
  Install(*std::move(v));
  log_number_ = *log_number;
  manifest_file_number_ = manifest_number;
  compact_pointers_ = compact_pointers;
  manifest_torn_tail_ = torn_tail;
  tables_listed_ = std::move(listed);
  return absl::OkStatus();
}

bool VersionSet::ManifestListedTable(uint64_t number) const {
  absl::ReaderMutexLock lock(&mu_);
  return tables_listed_.contains(number);
}

std::optional<uint64_t> VersionSet::RecoveredTornTail() const {
  absl::ReaderMutexLock lock(&mu_);
  return manifest_torn_tail_;
}

}  // namespace cairn::lsm
