// IngestSource is one file set on its way into a database: its FILESET
// descriptor, read and checked, and the verification of every file it
// names, read-only, before ingestion changes anything (docs/ingestion.md,
// "What ingestion checks").
//
// Thread safety: one thread at a time.
#ifndef CAIRN_CORE_INGEST_SOURCE_H_
#define CAIRN_CORE_INGEST_SOURCE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/external_file_set.h"
#include "io/file_system.h"
#include "lsm/table.h"
#include "vlog/vlog_format.h"

namespace cairn {

// Reads and checks the header of the segment file path.
absl::StatusOr<vlog::SegmentHeader> ReadSegmentHeader(io::FileSystem* fs, const std::string& path);

struct IngestSource {
  std::string dir;
  ExternalFileSet set;

  // Reads and decodes dir's FILESET. NotFound naming dir when it has none
  // (not a finished file set); the descriptor's errors (DataLoss,
  // FailedPrecondition for a newer version).
  static absl::StatusOr<IngestSource> Open(io::FileSystem* fs, const std::string& dir);

  // Reads every file whole: each segment's header and records (sizes,
  // checksums, counts as the descriptor says), and every table block; checks
  // that the table's keys run from the descriptor's smallest to its largest,
  // each once at sequence 0, and that its pointers name each record of the
  // set exactly once, by offset, size and key (GC relies on a record's key
  // being the key that points to it). DataLoss naming the file for any
  // mismatch; FailedPrecondition for an entry type this build cannot ingest
  // (a range deletion, say) or a newer segment or table format.
  absl::Status Verify(io::FileSystem* fs, const lsm::TableOptions& table_options) const;

  // The set's table, opened for reading (no block cache).
  absl::StatusOr<std::unique_ptr<lsm::Table>> OpenTable(
      io::FileSystem* fs, const lsm::TableOptions& table_options) const;
};

}  // namespace cairn

#endif  // CAIRN_CORE_INGEST_SOURCE_H_
