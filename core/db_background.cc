// Background work: flushing immutable memtables to L0 tables, scheduling
// compactions, and deleting files no version needs.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "io/status_macros.h"
#include "lsm/filename.h"
#include "lsm/table_builder.h"

namespace cairn {

using lsm::FileType;

void DBImpl::SetBackgroundError(const absl::Status& s) {
  if (bg_error_.ok() && !s.ok()) {
    bg_error_ = absl::Status(s.code(), absl::StrCat("writes stopped until the database is reopened: ",
                                                    s.message()));
    background_cv_.SignalAll();
  }
}

void DBImpl::BackgroundThread() {
  absl::MutexLock l(&mu_);
  while (true) {
    while (!shutting_down_ && (imm_.empty() || !bg_error_.ok())) background_cv_.Wait(&mu_);
    if (shutting_down_) return;
    mu_.Unlock();
    absl::Status s = FlushOldestImmutable();
    mu_.Lock();
    if (!s.ok()) SetBackgroundError(s);
    background_cv_.SignalAll();
  }
}

absl::Status DBImpl::FlushOldestImmutable() {
  std::shared_ptr<lsm::MemTable> mem;
  {
    absl::MutexLock l(&mu_);
    if (imm_.empty()) return absl::OkStatus();
    mem = imm_.front().mem;
    flush_running_ = true;
  }
  lsm::VersionEdit edit;
  absl::Status s = WriteLevel0Table(mem.get(), &edit);
  if (s.ok()) {
    uint64_t oldest_needed_log;
    {
      absl::MutexLock l(&mu_);
      oldest_needed_log = imm_.size() > 1 ? imm_[1].log_number : log_number_;
    }
    edit.SetLogNumber(oldest_needed_log);
    s = versions_->LogAndApply(&edit);
  }
  {
    absl::MutexLock l(&mu_);
    flush_running_ = false;
    for (const auto& [level, f] : edit.new_files()) pending_outputs_.erase(f.number);
    if (s.ok()) imm_.pop_front();
    background_cv_.SignalAll();
  }
  if (s.ok()) RemoveObsoleteFiles();
  return s;
}

absl::Status DBImpl::WriteLevel0Table(lsm::MemTable* mem, lsm::VersionEdit* edit) {
  lsm::FileMetaData meta;
  meta.number = versions_->NewFileNumber();
  {
    absl::MutexLock l(&mu_);
    pending_outputs_.insert(meta.number);
  }
  const std::string path = lsm::TableFileName(dbname_, meta.number);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file,
                         fs_->NewWritableFile(path, {.category = io::IoCategory::kFlush}));
  lsm::TableBuilder builder(table_options_, file.get());
  std::unique_ptr<lsm::InternalIterator> it = mem->NewIterator();
  bool first = true;
  absl::Status s;
  for (it->SeekToFirst(); it->Valid() && s.ok(); it->Next()) {
    lsm::ParsedInternalKey ikey;
    if (!lsm::ParseInternalKey(it->key(), &ikey)) {
      s = absl::InternalError("memtable holds a malformed internal key");
      break;
    }
    if (first) {
      meta.smallest_seq = meta.largest_seq = ikey.sequence;
      first = false;
    }
    meta.smallest_seq = std::min(meta.smallest_seq, ikey.sequence);
    meta.largest_seq = std::max(meta.largest_seq, ikey.sequence);
    s = builder.Add(it->key(), it->value());
  }
  if (s.ok()) s = it->status();
  if (s.ok()) s = builder.Finish();
  if (s.ok()) s = file->Sync();
  if (s.ok()) s = file->Close();
  if (!s.ok()) {
    builder.Abandon();
    fs_->RemoveFile(path).IgnoreError();  // best effort; an orphan goes at next open
    return s;
  }
  meta.file_size = builder.FileSize();
  meta.num_entries = builder.NumEntries();
  meta.smallest = builder.smallest_key();
  meta.largest = builder.largest_key();
  // Make sure the table reads back before the manifest names it.
  CAIRN_RETURN_IF_ERROR(table_cache_->FindTable(meta.number, meta.file_size).status());
  edit->AddFile(0, meta);
  return absl::OkStatus();
}

void DBImpl::RemoveObsoleteFiles() {
  absl::flat_hash_set<uint64_t> live;
  uint64_t min_log;
  {
    absl::MutexLock l(&mu_);
    if (!bg_error_.ok()) return;  // the state on disk may be ahead of ours
    live = pending_outputs_;
    min_log = imm_.empty() ? log_number_ : imm_.front().log_number;
  }
  versions_->AddLiveFiles(&live);
  min_log = std::min(min_log, versions_->LogNumber());
  const uint64_t manifest = versions_->ManifestFileNumber();
  auto names = fs_->ListDir(dbname_);
  if (!names.ok()) return;  // retried after the next flush
  for (const std::string& name : *names) {
    uint64_t number;
    FileType type;
    if (!lsm::ParseFileName(name, &number, &type)) continue;
    bool keep = true;
    switch (type) {
      case FileType::kLog: keep = number >= min_log; break;
      case FileType::kTable: keep = live.contains(number); break;
      case FileType::kManifest: keep = number >= manifest; break;
      case FileType::kTemp: keep = live.contains(number); break;
      default: break;
    }
    if (keep) continue;
    if (type == FileType::kTable) table_cache_->Evict(number);
    // A file that fails to go stays until the next attempt.
    fs_->RemoveFile(io::JoinPath(dbname_, name)).IgnoreError();
  }
}

absl::Status DBImpl::Flush() {
  CAIRN_RETURN_IF_ERROR(WriteImpl(WriteOptions(), nullptr));
  absl::MutexLock l(&mu_);
  while (!imm_.empty() && bg_error_.ok()) background_cv_.Wait(&mu_);
  return bg_error_;
}

absl::Status DBImpl::WaitForBackgroundWork() {
  absl::MutexLock l(&mu_);
  while ((!imm_.empty() || flush_running_) && bg_error_.ok()) background_cv_.Wait(&mu_);
  return bg_error_;
}

absl::Status DBImpl::CompactRange(const std::string* begin, const std::string* end) {
  return Flush();
}

}  // namespace cairn
