#include "core/file_deleter.h"

#include <pthread.h>

#include <utility>

namespace cairn {

FileDeleter::FileDeleter(io::FileSystem* fs,
                         std::function<void(const std::string&, const absl::Status&)> on_error)
    : fs_(fs), on_error_(std::move(on_error)) {}

FileDeleter::~FileDeleter() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void FileDeleter::Remove(std::string path) {
  absl::MutexLock l(&mu_);
  queue_.push_back(std::move(path));
  if (!thread_.joinable()) {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "cairn:delete");
      Run();
    });
  }
}

void FileDeleter::WaitIdle() {
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(this, &FileDeleter::Idle));
}

uint64_t FileDeleter::removed() const {
  absl::MutexLock l(&mu_);
  return removed_;
}

uint64_t FileDeleter::failed() const {
  absl::MutexLock l(&mu_);
  return failed_;
}

void FileDeleter::Run() {
  absl::MutexLock l(&mu_);
  while (true) {
    // Drains the queue before it stops: the owner's destructor must not
    // leave a file it was told to remove.
    mu_.Await(absl::Condition(this, &FileDeleter::HasWorkOrStops));
    if (queue_.empty()) return;
    std::string path = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    mu_.Unlock();
    const absl::Status s = fs_->RemoveFile(path);
    if (!s.ok() && !absl::IsNotFound(s) && on_error_) on_error_(path, s);
    mu_.Lock();
    busy_ = false;
    if (s.ok() || absl::IsNotFound(s)) {
      ++removed_;
    } else {
      ++failed_;
    }
  }
}

}  // namespace cairn
