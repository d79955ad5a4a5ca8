// PosixFileSystem's file locks (io/posix_file_system.h): the writer's
// exclusive lock on byte 0 of LOCK and read-only readers' shared holds on
// byte 1, as open-file-description fcntl locks.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "io/posix_file_system.h"

namespace cairn::io {

// ---------------------------------------------------------------------------
// LockFile

namespace {

// Paths locked by this process. fcntl locks alone do not exclude a second
// holder in the same process, so every LockFile consults this table first.
struct LockTable {
  absl::Mutex mu;
  absl::flat_hash_set<std::string> paths ABSL_GUARDED_BY(mu);
};

LockTable& Locks() {
  static LockTable* const table = new LockTable;
  return *table;
}

// One spelling per file, so that "db/LOCK" and "./db/../db/LOCK" collide.
std::string NormalizeLockPath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  if (ec) {
    p = std::filesystem::absolute(path, ec);
    if (ec) return path;
  }
  return p.lexically_normal().string();
}

class PosixFileLock : public FileLock {
 public:
  PosixFileLock(int fd, std::string key) : fd_(fd), key_(std::move(key)) {}
  ~PosixFileLock() override {
    // Closing the descriptor releases its open-file-description lock; the
    // explicit unlock also covers the classic F_SETLK fallback.
    struct flock fl = {};
    fl.l_type = F_UNLCK;
    fl.l_whence = SEEK_SET;
    ::fcntl(fd_, F_OFD_SETLK, &fl);
    ::close(fd_);
    LockTable& t = Locks();
    absl::MutexLock l(&t.mu);
    t.paths.erase(key_);
  }

 private:
  const int fd_;
  const std::string key_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<FileLock>> PosixFileSystem::LockFile(const std::string& path) {
  std::string key = NormalizeLockPath(path);
  LockTable& table = Locks();
  {
    absl::MutexLock l(&table.mu);
    if (!table.paths.insert(key).second) {
      return absl::FailedPreconditionError(
          absl::StrCat("lock ", path, " is already held by this process"));
    }
  }
  auto unregister = [&] {
    absl::MutexLock l(&table.mu);
    table.paths.erase(key);
  };
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    absl::Status s = ErrnoError(errno, absl::StrCat("open lock file ", path));
    unregister();
    return s;
  }
  // Open-file-description locks belong to this descriptor, so closing some
  // other descriptor of the same file (a reader of LOCK) cannot drop them, as
  // it would a classic process-owned F_SETLK lock. Old kernels lack them.
  // Byte 0 only: byte 1 is the readers' (LockFileShared), which this lock
  // must not exclude. Builds before readers' holds locked the whole file,
  // which takes byte 0 too, so writers of both kinds still exclude each
  // other.
  struct flock fl = {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 1;
  int r = ::fcntl(fd, F_OFD_SETLK, &fl);
  if (r < 0 && errno == EINVAL) r = ::fcntl(fd, F_SETLK, &fl);
  if (r < 0) {
    const int err = errno;
    ::close(fd);
    unregister();
    if (err == EAGAIN || err == EACCES) {
      return absl::FailedPreconditionError(
          absl::StrCat("lock ", path, " is held by another process"));
    }
    return ErrnoError(err, absl::StrCat("lock ", path));
  }
  return std::make_unique<PosixFileLock>(fd, std::move(key));
}

namespace {

// A reader's shared hold on byte 1 of a lock file; closing the descriptor
// releases it.
class PosixSharedLock : public FileLock {
 public:
  explicit PosixSharedLock(int fd) : fd_(fd) {}
  ~PosixSharedLock() override { ::close(fd_); }

 private:
  const int fd_;
};

constexpr off_t kReaderByte = 1;

// path opened for reading, or -1 with errno set.
int OpenLockForReading(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// A lock of type on the readers' byte.
struct flock ReaderByte(short type) {
  struct flock fl = {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = kReaderByte;
  fl.l_len = 1;
  return fl;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FileLock>> PosixFileSystem::LockFileShared(
    const std::string& path) {
  const int fd = OpenLockForReading(path);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("open lock file ", path, " to share it"));
  struct flock fl = ReaderByte(F_RDLCK);
  int r = ::fcntl(fd, F_OFD_SETLK, &fl);
  if (r < 0 && errno == EINVAL) r = ::fcntl(fd, F_SETLK, &fl);
  if (r < 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoError(err, absl::StrCat("shared lock on ", path));
  }
  return std::make_unique<PosixSharedLock>(fd);
}

absl::StatusOr<bool> PosixFileSystem::LockFileHasReaders(const std::string& path) {
  const int fd = OpenLockForReading(path);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    return ErrnoError(errno, absl::StrCat("open lock file ", path));
  }
  // Would an exclusive lock on the readers' byte be refused? Open-file-
  // description locks answer for every holder, this process's other
  // descriptors included.
  struct flock fl = ReaderByte(F_WRLCK);
  int r = ::fcntl(fd, F_OFD_GETLK, &fl);
  if (r < 0 && errno == EINVAL) {
    fl = ReaderByte(F_WRLCK);
    r = ::fcntl(fd, F_GETLK, &fl);
  }
  const int err = errno;
  ::close(fd);
  if (r < 0) return ErrnoError(err, absl::StrCat("test lock on ", path));
  return fl.l_type != F_UNLCK;
}

}  // namespace cairn::io
