// InfoLog writes the human-readable info log, LOG in the database directory:
// one line per event (open and recovery, flushes, compactions, GC runs,
// stalls, background errors), each with its figures. Format of a line:
//   2026/12/01-05:59:12.123456 flush: table 000012.sst, 65536 bytes, ...
// When LOG passes max_size (and when a database opens with an old LOG
// there), it becomes LOG.old.1, older ones move up a number, and only
// kKeptOldLogs stay.
//
// The log is for people: a failure to write it is ignored (it never fails a
// database operation) and it is never synced.
//
// Thread safety: Log may be called from any thread.
#ifndef CAIRN_CORE_INFO_LOG_H_
#define CAIRN_CORE_INFO_LOG_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "io/file_system.h"

namespace cairn {

class InfoLog {
 public:
  static constexpr int kKeptOldLogs = 3;

  // Starts a fresh LOG in dir (rotating an existing one). max_size 0: a log
  // that writes nothing.
  static std::unique_ptr<InfoLog> Open(io::FileSystem* fs, std::string dir, uint64_t max_size);

  template <typename... Args>
  void Log(const absl::FormatSpec<Args...>& format, const Args&... args) {
    if (max_size_ == 0) return;
    Write(absl::StrFormat(format, args...));
  }

  static std::string OldLogName(int n);

 private:
  InfoLog(io::FileSystem* fs, std::string dir, uint64_t max_size);
  void Write(std::string_view line) ABSL_LOCKS_EXCLUDED(mu_);
  // Closes LOG and shifts it to LOG.old.1 (best effort).
  void Rotate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OpenFile() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  io::FileSystem* const fs_;
  const std::string dir_;
  const uint64_t max_size_;
  absl::Mutex mu_;
  std::unique_ptr<io::WritableFile> file_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn

#endif  // CAIRN_CORE_INFO_LOG_H_
