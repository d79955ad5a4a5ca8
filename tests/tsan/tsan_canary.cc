// tsan_canary: proves the TSan build can see races and is not fooled by
// abseil's locks (docs/durability.md, "Data races: the TSan build"). Built
// only in the tsan preset, twice: tsan_canary with the abseil shim
// (tests/tsan/absl_sync_shim.cc) and tsan_canary_unshimmed without it.
//
//   tsan_canary <case>
//
// Each case runs a few threads over a shared counter and prints the total.
// The race-* cases race on purpose: TSan must report them. The others order
// every access through one abseil primitive: with the shim TSan must stay
// quiet, and without it (tsan_canary_unshimmed) the `mutex` case must be
// reported, which shows the shim is what keeps the build free of false
// reports. tests/CMakeLists.txt turns these expectations into ctest tests
// (label tsan). Exit status: 0, or 2 for an unknown case; TSan exits 66
// after a report.
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace cairn::tsan_canary {
namespace {

constexpr int kThreads = 4;
constexpr int kIterations = 1000;

void RunThreads(const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(body, t);
  for (std::thread& th : threads) th.join();
}

// Unsynchronized increments from several threads: a real race.
long RaceUnguarded() {
  long counter = 0;
  RunThreads([&](int) {
    for (int i = 0; i < kIterations; ++i) ++counter;
  });
  return counter;
}

// Writes under a reader lock: still a race (readers do not exclude each
// other), which a shim that made reader locks acquire each other would hide.
long RaceUnderReaderLock() {
  absl::Mutex mu;
  long counter = 0;
  RunThreads([&](int) {
    for (int i = 0; i < kIterations; ++i) {
      absl::ReaderMutexLock lock(&mu);
      ++counter;
    }
  });
  return counter;
}

// The guarded counter: every access under an absl::Mutex.
long GuardedByMutex() {
  absl::Mutex mu;
  long counter = 0;
  RunThreads([&](int) {
    for (int i = 0; i < kIterations; ++i) {
      absl::MutexLock lock(&mu);
      ++counter;
    }
  });
  return counter;
}

// Writers under Lock, readers under ReaderLock, and TryLock.
long ReaderAndTryLocks() {
  absl::Mutex mu;
  long counter = 0, seen = 0;
  RunThreads([&](int t) {
    for (int i = 0; i < kIterations; ++i) {
      if (t % 2 == 0) {
        absl::MutexLock lock(&mu);
        ++counter;
      } else if (i % 2 == 0) {
        absl::ReaderMutexLock lock(&mu);
        if (counter < 0) std::abort();
      } else if (mu.TryLock()) {
        ++seen;
        mu.Unlock();
      }
    }
  });
  return counter + seen;  // seen: TryLock successes
}

// A hand-off through CondVar: each thread takes turns by its index.
long CondVarTurns() {
  absl::Mutex mu;
  absl::CondVar cv;
  long counter = 0;
  int turn = 0;
  RunThreads([&](int t) {
    for (int i = 0; i < kIterations / 10; ++i) {
      absl::MutexLock lock(&mu);
      while (turn != t) {
        if (i % 2 == 0) {
          cv.Wait(&mu);
        } else {
          cv.WaitWithTimeout(&mu, absl::Milliseconds(50));
        }
      }
      ++counter;
      turn = (turn + 1) % kThreads;
      cv.SignalAll();
    }
  });
  return counter;
}

// The same hand-off through Conditions: Await, LockWhen and the timed forms.
long ConditionTurns() {
  absl::Mutex mu;
  long counter = 0;
  int turn = 0;
  RunThreads([&](int t) {
    for (int i = 0; i < kIterations / 10; ++i) {
      auto my_turn = [&] { return turn == t; };
      const absl::Condition cond(&my_turn);
      switch (i % 3) {
        case 0:
          mu.LockWhen(cond);
          break;
        case 1:
          mu.Lock();
          mu.Await(cond);
          break;
        default:
          while (!mu.LockWhenWithTimeout(cond, absl::Milliseconds(50))) mu.Unlock();
          break;
      }
      ++counter;
      turn = (turn + 1) % kThreads;
      mu.Unlock();
    }
  });
  return counter;
}

// Data published before Notify, read after WaitForNotification.
long NotificationPublishes() {
  long data = 0;
  absl::Notification ready;
  std::thread writer([&] {
    data = 42;
    ready.Notify();
  });
  std::thread reader([&] {
    ready.WaitForNotification();
    if (data != 42) std::abort();
  });
  writer.join();
  reader.join();
  absl::Notification timed;
  std::thread late([&] {
    data = 43;
    timed.Notify();
  });
  while (!timed.WaitForNotificationWithTimeout(absl::Milliseconds(50))) {
  }
  const long result = data;
  late.join();
  return result;
}

int Main(int argc, char** argv) {
  const std::map<std::string, long (*)()> cases = {
      {"race-unguarded", &RaceUnguarded},   {"race-reader-lock", &RaceUnderReaderLock},
      {"mutex", &GuardedByMutex},           {"reader-try-lock", &ReaderAndTryLocks},
      {"condvar", &CondVarTurns},           {"condition", &ConditionTurns},
      {"notification", &NotificationPublishes}};
  auto it = argc == 2 ? cases.find(argv[1]) : cases.end();
  if (it == cases.end()) {
    std::fprintf(stderr, "usage: tsan_canary <case>; cases:");
    for (const auto& [name, fn] : cases) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  std::printf("tsan_canary %s: %ld\n", it->first.c_str(), it->second());
  return 0;
}

}  // namespace
}  // namespace cairn::tsan_canary

int main(int argc, char** argv) { return cairn::tsan_canary::Main(argc, argv); }
