// Helpers for the suites that count file descriptors under a lowered
// open-file limit (core/open_segments_test.cc, core/low_fd_limit_test.cc):
// the process's open descriptors, and one 64 KiB value per key, so that
// with 64 KiB segments each value lives in a segment of its own. Tests only.
#ifndef CAIRN_CORE_TESTING_FD_HELPERS_H_
#define CAIRN_CORE_TESTING_FD_HELPERS_H_

#include <cstddef>
#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"

namespace cairn::fd_testing {

inline size_t OpenFileDescriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++n;
  }
  return n;
}

inline std::string Key(int i) { return absl::StrFormat("key%05d", i); }
inline std::string Value(int i) { return std::string(64 << 10, static_cast<char>('a' + i % 26)); }

}  // namespace cairn::fd_testing

#endif  // CAIRN_CORE_TESTING_FD_HELPERS_H_
