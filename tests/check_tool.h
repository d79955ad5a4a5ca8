// RunCheckTool runs the `cairn check` binary (tools/check_command.cc) on a
// closed database directory and parses its summary line. The checker lives
// in tools/ only, so the durability tests run the tool itself: the same code
// path a user runs.
#ifndef CAIRN_TESTS_CHECK_TOOL_H_
#define CAIRN_TESTS_CHECK_TOOL_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"

namespace cairn {

// The cairn tool in this build tree.
inline constexpr char kCairnTool[] = CAIRN_BINARY_DIR "/tools/cairn";

// What `cairn check` said about a database.
struct CheckReport {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
  // From its summary line (-1 when there was none).
  int tables = -1, wals = -1, segments = -1, pointers = -1, orphans = -1, problems = -1;
  int unbalanced = -1;  // segments whose bytes are neither referenced nor counted
  int leftovers = -1;   // "cleanup:" lines: what the next open cleans up
};

// Runs `cairn check dir` (CAIRN_IO picks its backend).
inline CheckReport RunCheckTool(const std::string& dir) {
  CheckReport r;
  const std::string cmd = absl::StrCat(kCairnTool, " check '", dir, "' 2>&1");
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const size_t at = r.output.find("summary: ");
  if (at != std::string::npos) {
    int records, entries, batches, wal_entries, seg_records, skipped;
    std::sscanf(r.output.c_str() + at,
                "summary: %d manifest records, %d tables (%d entries), %d WALs (%d batches, %d "
                "entries), %d segments (%d records), %d value pointers checked (%d shadowed ones "
                "into removed segments skipped), %d orphans, %d segments off the ledger; %d "
                "problems; %d leftovers",
                &records, &r.tables, &entries, &r.wals, &batches, &wal_entries, &r.segments,
                &seg_records, &r.pointers, &skipped, &r.orphans, &r.unbalanced, &r.problems,
                &r.leftovers);
  }
  return r;
}

}  // namespace cairn

#endif  // CAIRN_TESTS_CHECK_TOOL_H_
