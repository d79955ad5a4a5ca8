// The background threads: the flush, the compactions, GC and the stats
// dump, each named, and GC's above the writers' priority (Options::gc_nice_adjustment,
// docs/decisions/20261206_gc_thread_priority.md).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <future>
#include <memory>
#include <thread>

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "core/db_impl.h"

namespace cairn {
namespace {

// Named by the opening thread, so that every name is set when the open
// returns. Linux keeps 15 characters of a thread's name; a failure only
// loses the name.
void NameThread(std::thread& t, const char* name) { pthread_setname_np(t.native_handle(), name); }

// Adds adjustment to this thread's nice value (Options::gc_nice_adjustment),
// before the thread's first I/O, so that the io_uring workers its ring
// starts inherit it. Returns the nice value the thread runs at, or why the
// change was refused (a raise past RLIMIT_NICE without CAP_SYS_NICE).
absl::StatusOr<int> AdjustThisThreadNice(int adjustment) {
  const pid_t tid = gettid();
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  if (now == -1 && errno != 0) {
    return absl::InternalError(absl::StrCat("getpriority: ", std::strerror(errno)));
  }
  if (adjustment == 0) return now;
  const int want = std::clamp(now + adjustment, -20, 19);
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), want) != 0) {
    const int e = errno;
    return absl::PermissionDeniedError(absl::StrCat("setpriority from nice ", now, " to ", want,
                                                    ": ", std::strerror(e)));
  }
  return want;
}

}  // namespace

void DBImpl::StartBackgroundThreads() {
  // Named as RocksDB names its pools' threads, so that top, perf and a
  // debugger tell the engine's work apart from the embedding application's.
  background_threads_.emplace_back([this] { BackgroundThread(); });
  NameThread(background_threads_.back(), "cairn:flush");
  for (int i = 0; i < options_.max_background_compactions; ++i) {
    background_threads_.emplace_back([this] { CompactionThread(); });
    NameThread(background_threads_.back(), "cairn:compact");
  }
  if (options_.stats_dump_period_sec > 0) {
    background_threads_.emplace_back([this] { StatsDumpThread(); });
    NameThread(background_threads_.back(), "cairn:stats");
  }
  const int gc_threads = options_.gc_space_amp_trigger > 0 ? options_.max_background_gc : 0;
  if (gc_threads == 0) return;
  // Each GC thread sets its own priority before its first I/O, so that the
  // io_uring workers its ring starts inherit it. The open waits for the
  // first to say how that went, so that LOG says it before Open returns.
  auto first_nice = std::make_shared<std::promise<absl::StatusOr<int>>>();
  std::future<absl::StatusOr<int>> first_nice_done = first_nice->get_future();
  for (int i = 0; i < gc_threads; ++i) {
    background_threads_.emplace_back([this, i, first_nice] {
      // Above the writers, GC gets the CPU as soon as it is ready; they run
      // on what it leaves (docs/decisions/20261206_gc_thread_priority.md).
      absl::StatusOr<int> nice = AdjustThisThreadNice(options_.gc_nice_adjustment);
      if (i == 0) first_nice->set_value(std::move(nice));
      gc_.RunLoop();
    });
    NameThread(background_threads_.back(), "cairn:gc");
  }
  if (options_.gc_nice_adjustment == 0) return;
  const absl::StatusOr<int> nice = first_nice_done.get();
  if (nice.ok()) {
    info_log_->Log("gc: threads at nice %d (Options::gc_nice_adjustment %d)", *nice,
                   options_.gc_nice_adjustment);
  } else {
    info_log_->Log(
        "gc: threads keep their nice value, Options::gc_nice_adjustment %d refused: %s "
        "(a raise needs CAP_SYS_NICE or RLIMIT_NICE)",
        options_.gc_nice_adjustment, nice.status().message());
  }
}

}  // namespace cairn
