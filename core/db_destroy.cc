// DestroyDB: deleting a whole database, and nothing that is not one.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "io/status_macros.h"
#include "lsm/filename.h"

namespace cairn {

absl::Status DestroyDB(const Options& options, const std::string& path) {
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<io::FileSystem> fs, FileSystemFor(options));
  return DestroyDBWithFileSystem(path, fs.get());
}

absl::Status DestroyDBWithFileSystem(const std::string& path, io::FileSystem* fs) {
  if (path.empty()) return absl::InvalidArgumentError("DestroyDB: empty path");
  if (!fs->FileExists(path)) return absl::NotFoundError(absl::StrCat(path, ": does not exist"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, fs->ListDir(path));
  // Ours: every file with a cairn name. CURRENT goes last but the LOCK: an
  // interrupted destroy leaves either an openable database or cairn files
  // without CURRENT, which open refuses and a second DestroyDB removes.
  std::vector<std::string> ours;
  std::string foreign;
  bool has_current = false;
  for (const std::string& name : names) {
    uint64_t number;
    lsm::FileType type;
    if (!lsm::ParseFileName(name, &number, &type)) {
      if (foreign.empty()) foreign = name;
      continue;
    }
    if (type == lsm::FileType::kCurrent) {
      has_current = true;
    } else if (type != lsm::FileType::kLock) {
      ours.push_back(name);
    }
  }
  if (!has_current && (ours.empty() || !foreign.empty())) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": not a cairn database (no CURRENT file",
        foreign.empty() ? "" : absl::StrCat("; holds ", foreign), "); DestroyDB deleted nothing"));
  }
  // Excludes every open DB of this process and of others; refused, nothing
  // was deleted.
  absl::StatusOr<std::unique_ptr<io::FileLock>> lock = fs->LockFile(lsm::LockFileName(path));
  if (!lock.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": the database is open (its LOCK is held); DestroyDB deleted nothing: ",
                     lock.status().message()));
  }
  if (has_current) ours.push_back(std::string("CURRENT"));
  for (const std::string& name : ours) {
    CAIRN_RETURN_IF_ERROR(fs->RemoveFile(io::JoinPath(path, name)));
  }
  // Unlinked while held, so that no open slips in between.
  CAIRN_RETURN_IF_ERROR(fs->RemoveFile(lsm::LockFileName(path)));
  lock->reset();
  if (!foreign.empty()) return fs->SyncDir(path);
  return fs->RemoveDir(path);
}

}  // namespace cairn
