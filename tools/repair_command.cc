// `cairn repair <db-dir>`: salvages a damaged database with cairn::RepairDB
// (cairn/repair.h): keeps every entry that can still be read, rebuilds the
// database from them, moves the original files to <db-dir>/lost/<time>/ and
// prints the report it also writes there (REPAIR.txt). Exit 0 when the
// rebuilt database is in place and nothing was lost; 1 when something was
// lost (the report says what) or the repair failed.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/repair.h"
#include "tools/commands.h"

namespace cairn::tools {

int RunRepair(const Args& args) {
  constexpr std::string_view kCommand = "repair";
  if (args.size() != 1) return UsageError(kCommand, "expects exactly one database directory");
  RepairReport report;
  // CAIRN_IO picks the backend, as for every command.
  const absl::Status s = RepairDB(Options(), args[0], &report);
  if (!s.ok()) {
    if (!report.lost.empty()) absl::PrintF("%s", report.ToString());
    return Fail(kCommand, s);
  }
  absl::PrintF("%sreport written to %s\n", report.ToString(), report.report_path);
  return report.lost.empty() ? kExitOk : kExitProblems;
}

}  // namespace cairn::tools
