// FileDeleter removes files on a thread of its own, so that the thread that
// made them obsolete (a flush, a compaction, GC) does not wait for the
// unlink. On a file system mounted with online discard (ext4 `discard`), an
// unlink of a large file waits for the device to trim its blocks: tens of
// milliseconds for one value-log segment, which GC and the flush spent
// there before (docs/decisions/20261202_gc_waits.md).
//
// Only files nothing references are handed over: a crash before one is
// removed leaves a file the next open removes as an orphan.
#ifndef CAIRN_CORE_FILE_DELETER_H_
#define CAIRN_CORE_FILE_DELETER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "io/file_system.h"

namespace cairn {

class FileDeleter {
 public:
  // fs must outlive the deleter. on_error sees each failed removal (the
  // file stays, and the next open removes it); it may be empty.
  FileDeleter(io::FileSystem* fs,
              std::function<void(const std::string&, const absl::Status&)> on_error);
  // Removes what is queued, then stops.
  ~FileDeleter();

  FileDeleter(const FileDeleter&) = delete;
  FileDeleter& operator=(const FileDeleter&) = delete;

  // Queues path for removal; the thread starts with the first one.
  void Remove(std::string path);
  // Returns once every file queued before the call is removed (or failed).
  void WaitIdle();

  // Files removed so far (one already gone counts: that is what was
  // asked), and removals that failed.
  uint64_t removed() const;
  uint64_t failed() const;

 private:
  void Run();
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.empty() && !busy_; }
  bool HasWorkOrStops() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || stopping_;
  }

  io::FileSystem* const fs_;
  const std::function<void(const std::string&, const absl::Status&)> on_error_;
  mutable absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  bool busy_ ABSL_GUARDED_BY(mu_) = false;  // the thread is removing one
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t removed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t failed_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // started by the first Remove, under mu_
};

}  // namespace cairn

#endif  // CAIRN_CORE_FILE_DELETER_H_
