// Opening a database read-only (DB::OpenForReadOnly): the recovery of
// db_open.cc up to the WAL replay, kept in memory. Nothing is created,
// written, truncated or deleted, and the LOCK is not taken, so another
// process may be writing the database meanwhile (docs/architecture.md,
// "Read-only open"); the view holds a shared lock on LOCK's reader byte,
// which keeps that writer from punching holes under it.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "io/status_macros.h"
#include "lsm/filename.h"

namespace cairn {
absl::Status DBImpl::RecoverReadOnly() {
  if (!fs_->FileExists(lsm::CurrentFileName(dbname_))) {
    if (!fs_->FileExists(dbname_)) {
      return absl::NotFoundError(absl::StrCat(dbname_, ": does not exist"));
    }
    return absl::NotFoundError(absl::StrCat(
        dbname_, ": no cairn database (no CURRENT file); a read-only open creates none"));
  }
  CAIRN_RETURN_IF_ERROR(CheckNewestOptionsFile());
  // Before the view is read: a writer that counts garbage after this sees
  // the hold before it punches, and what it counted before, this view does
  // not reach. Without LOCK, or where the file system cannot share it, no
  // writer can punch under this view either (it would hold LOCK).
  if (reader_lock_ == nullptr) {
    absl::StatusOr<std::unique_ptr<io::FileLock>> shared =
        fs_->LockFileShared(lsm::LockFileName(dbname_));
    if (shared.ok()) reader_lock_ = *std::move(shared);
  }
  std::vector<std::string> names;
  CAIRN_RETURN_IF_ERROR(RecoverManifest(&names));
  std::shared_ptr<lsm::MemTable> mem;
  lsm::SequenceNumber max_sequence = 0;
  // No table is written: every replayed write stays in this one memtable,
  // however large. The value log is read as it is; its active segment's
  // torn tail is neither cut nor continued.
  CAIRN_RETURN_IF_ERROR(ReplayLogs(names, &mem, &max_sequence, /*edit=*/nullptr, nullptr));
  // Every file of the view is opened now, and as many as the caches' bounds
  // and the descriptor budget allow stay open for the life of the DB: a
  // writer in another process that compacts or collects garbage deletes
  // files this view still reads, and an open file outlives its name. A view
  // of more files than that reopens the ones it closed, and a read of one
  // the writer deleted meanwhile fails with DataLoss naming it (a fresh
  // open reads the writer's newer view); holding them all would run the
  // process out of descriptors (docs/decisions/20261207_fd_budget.md).
  // A file already gone fails the open, which OpenForReadOnly tries again.
  const std::shared_ptr<const lsm::Version> version = versions_->current();
  for (int level = 0; level < lsm::kNumLevels; ++level) {
    for (const auto& f : version->files(level)) {
      CAIRN_RETURN_IF_ERROR(table_cache_->FindTable(f->number, f->file_size).status());
    }
  }
  CAIRN_RETURN_IF_ERROR(vlog_->OpenEveryReader());
  absl::MutexLock l(&mu_);
  mem_ = std::move(mem);
  last_sequence_.store(max_sequence);
  // The one read view this DB ever has: nothing changes it afterwards.
  InstallSuperVersionLocked();
  return absl::OkStatus();
}

}  // namespace cairn
