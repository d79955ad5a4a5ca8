#include "core/info_log.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace cairn {

namespace {
constexpr char kLogName[] = "LOG";
}  // namespace

std::string InfoLog::OldLogName(int n) { return absl::StrCat(kLogName, ".old.", n); }

std::unique_ptr<InfoLog> InfoLog::Open(io::FileSystem* fs, std::string dir, uint64_t max_size) {
  std::unique_ptr<InfoLog> log(new InfoLog(fs, std::move(dir), max_size));
  if (max_size == 0) return log;
  absl::MutexLock l(&log->mu_);
  log->Rotate();  // each open starts its own LOG
  log->OpenFile();
  return log;
}

InfoLog::InfoLog(io::FileSystem* fs, std::string dir, uint64_t max_size)
    : fs_(fs), dir_(std::move(dir)), max_size_(max_size) {}

void InfoLog::OpenFile() {
  auto file = fs_->NewWritableFile(io::JoinPath(dir_, kLogName), {});
  file_ = file.ok() ? *std::move(file) : nullptr;
}

void InfoLog::Rotate() {
  if (file_ != nullptr) {
    file_->Close().IgnoreError();
    file_.reset();
  }
  const std::string log = io::JoinPath(dir_, kLogName);
  if (!fs_->FileExists(log)) return;
  // The oldest kept goes; each other moves up one number.
  fs_->RemoveFile(io::JoinPath(dir_, OldLogName(kKeptOldLogs))).IgnoreError();
  for (int n = kKeptOldLogs - 1; n >= 1; --n) {
    const std::string from = io::JoinPath(dir_, OldLogName(n));
    if (fs_->FileExists(from)) {
      fs_->RenameFile(from, io::JoinPath(dir_, OldLogName(n + 1))).IgnoreError();
    }
  }
  fs_->RenameFile(log, io::JoinPath(dir_, OldLogName(1))).IgnoreError();
}

void InfoLog::Write(std::string_view line) {
  const std::string text = absl::StrCat(
      absl::FormatTime("%Y/%m/%d-%H:%M:%E6S ", absl::Now(), absl::LocalTimeZone()), std::string(line), "\n");
  absl::MutexLock l(&mu_);
  if (file_ != nullptr && file_->Size() > 0 && file_->Size() + text.size() > max_size_) {
    Rotate();
    OpenFile();
  }
  if (file_ == nullptr) return;
  // Flushed line by line, so that the LOG says what happened up to a crash.
  if (!file_->Append(text).ok() || !file_->Flush().ok()) file_.reset();
}

}  // namespace cairn
