// `cairn ingest [--copy] <db-dir> <file-set-dir>...`: opens the database
// through the public API (it takes the LOCK, so the database must not be
// open in another process) and ingests the file sets, all or none
// (DB::IngestExternalFiles, docs/ingestion.md). The sets are moved in
// (segments hard-linked, then the sets removed) unless --copy. Prints where
// each set went and what was adopted.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "cairn/db.h"
#include "cairn/ingest.h"
#include "cairn/options.h"
#include "tools/commands.h"

ABSL_FLAG(bool, copy, false, "ingest: copy the file sets and leave them as they are");

namespace cairn::tools {

namespace {
constexpr std::string_view kCommand = "ingest";
}  // namespace

int RunIngest(const Args& args) {
  if (args.size() < 2) return UsageError(kCommand, "expected <db-dir> <file-set-dir>...");
  Options options;
  options.create_if_missing = false;
  absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(options, args[0]);
  if (!db.ok()) return Fail(kCommand, db.status());
  IngestOptions ingest;
  ingest.move_files = !absl::GetFlag(FLAGS_copy);
  const std::vector<std::string> dirs(args.begin() + 1, args.end());
  absl::StatusOr<IngestResult> r = (*db)->IngestExternalFiles(dirs, ingest);
  if (!r.ok()) return Fail(kCommand, r.status());
  for (size_t i = 0; i < dirs.size(); ++i) {
    std::printf("%s: level %d\n", dirs[i].c_str(), r->levels[i]);
  }
  std::printf(
      "ingested %llu entries at sequence %llu: %llu table bytes written, %llu value-log bytes "
      "adopted (%llu copied)%s\n",
      static_cast<unsigned long long>(r->entries), static_cast<unsigned long long>(r->sequence),
      static_cast<unsigned long long>(r->table_bytes),
      static_cast<unsigned long long>(r->segment_bytes),
      static_cast<unsigned long long>(r->copied_bytes),
      r->flushed_memtable ? "; the memtable was flushed first" : "");
  absl::Status s = (*db)->Close();
  if (!s.ok()) return Fail(kCommand, s);
  return kExitOk;
}

}  // namespace cairn::tools
