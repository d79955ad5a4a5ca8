// `cairn checkpoint <db-dir> <new-dir>`: opens the database through the
// public API (it takes the LOCK, so the database must not be open in
// another process) and writes a checkpoint of it to new-dir, which must not
// exist (DB::CreateCheckpoint). Prints what was linked and copied and how
// long it took.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "cairn/options.h"
#include "cairn/stats.h"
#include "tools/commands.h"

namespace cairn::tools {

namespace {
constexpr std::string_view kCommand = "checkpoint";
}  // namespace

int RunCheckpoint(const Args& args) {
  if (args.size() != 2) return UsageError(kCommand, "expected <db-dir> <new-dir>");
  Options options;
  options.create_if_missing = false;
  // The checkpoint is of the database as it is: no GC pass starts meanwhile.
  options.gc_space_amp_trigger = 0;
  absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(options, args[0]);
  if (!db.ok()) return Fail(kCommand, db.status());
  absl::StatusOr<CheckpointResult> r = (*db)->CreateCheckpoint(args[1]);
  if (!r.ok()) return Fail(kCommand, r.status());
  std::printf(
      "checkpoint %s: %llu files linked (%llu bytes), %llu files copied (%llu bytes), up to "
      "sequence %llu, in %.3f s\n",
      args[1].c_str(), static_cast<unsigned long long>(r->files_linked),
      static_cast<unsigned long long>(r->bytes_linked),
      static_cast<unsigned long long>(r->files_copied),
      static_cast<unsigned long long>(r->bytes_copied),
      static_cast<unsigned long long>(r->sequence), static_cast<double>(r->micros) / 1e6);
  return kExitOk;
}

}  // namespace cairn::tools
