// This process's threads as /proc shows them: their ids, names and nice
// values. Linux only; tests only.
#ifndef CAIRN_IO_TESTING_PROCESS_THREADS_H_
#define CAIRN_IO_TESTING_PROCESS_THREADS_H_

#include <sys/resource.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"

namespace cairn::io::testing {

struct ProcessThread {
  pid_t tid;
  std::string name;
  int nice;
};

// A thread that ends while it is read is left out.
inline std::vector<ProcessThread> ProcessThreads() {
  std::vector<ProcessThread> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    int tid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &tid)) continue;
    std::ifstream in(entry.path() / "comm");
    std::string name;
    std::getline(in, name);
    errno = 0;
    const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    if (nice == -1 && errno != 0) continue;
    out.push_back({tid, name, nice});
  }
  return out;
}

}  // namespace cairn::io::testing

#endif  // CAIRN_IO_TESTING_PROCESS_THREADS_H_
