// Forked children for tests: StartForkedChild runs a function in a child
// process under alarm(), so a child that hangs dies instead of hanging the
// test; WaitForForkedChild bounds the parent's wait too. Tests only.
#ifndef CAIRN_IO_TESTING_FORKED_CHILD_H_
#define CAIRN_IO_TESTING_FORKED_CHILD_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"

namespace cairn::io::testing {

// Forks; the child runs body under alarm(limit_s) and _exits with its
// result (no atexit handlers, no gtest teardown). Returns the child's pid
// (-1 when fork fails).
inline pid_t StartForkedChild(unsigned limit_s, absl::FunctionRef<int()> body) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  alarm(limit_s);
  _exit(body());
}

// Waits up to limit_s for the child, killing it after that. Returns "" when
// it exited with status 0, else what happened.
inline std::string WaitForForkedChild(pid_t pid, unsigned limit_s) {
  if (pid < 0) return "fork failed";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0) return absl::StrCat("waitpid failed: errno ", errno);
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return absl::StrCat("child still running after ", limit_s, " s: killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 0) return "";
    return absl::StrCat("child exited with status ", WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return absl::StrCat("child killed by signal ", WTERMSIG(status),
                        WTERMSIG(status) == SIGALRM ? " (SIGALRM: it hung)" : "");
  }
  return "child ended oddly";
}

}  // namespace cairn::io::testing

#endif  // CAIRN_IO_TESTING_FORKED_CHILD_H_
