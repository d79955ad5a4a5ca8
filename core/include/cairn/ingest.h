// Bulk loading: ExternalFileWriter builds a file set outside any database,
// and DB::IngestExternalFiles (cairn/db.h) adds one or more such sets to a
// database atomically, at one sequence number. The file set's layout and
// what ingestion does with it are in docs/ingestion.md; the design choice in
// docs/decisions/20261207_ingestion_file_sets.md.
//
// Thread safety: an ExternalFileWriter belongs to one thread at a time;
// different writers are independent.
#ifndef CAIRN_INGEST_H_
#define CAIRN_INGEST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cairn/options.h"

namespace cairn {

// What ExternalFileWriter::Finish wrote.
struct ExternalFileInfo {
  std::string dir;                // the file set's directory
  std::string smallest_key;       // its first key
  std::string largest_key;        // its last key
  uint64_t entries = 0;           // puts and deletes
  uint64_t deletions = 0;         // of entries, the deletes
  uint64_t inline_values = 0;     // puts whose value stays in the table
  uint64_t separated_values = 0;  // puts whose value went to a value-log segment
  uint64_t user_bytes = 0;        // keys and values as given
  uint64_t table_bytes = 0;       // the key table's size
  uint64_t segment_bytes = 0;     // all value-log segments' sizes, headers included
  uint32_t segments = 0;
};

// Writes one file set: a key table (keys in order, small values inline,
// pointers to the separated ones), the value-log segments that hold the
// values at or above Options::value_separation_threshold (written once, in
// key order, in the value log's own format: ingestion adopts them without
// copying them), and last a FILESET descriptor naming them with their sizes
// and a checksum. Only a directory with a FILESET is a file set.
//
// The writer takes the database's Options: value_separation_threshold,
// value_log_segment_size, value_compression, compression, block_size,
// bloom_bits_per_key and file_system mean what they mean to the database
// (the ingesting database need not use the same ones).
//
// Range deletes: not yet. The design leaves room for DeleteRange(begin,
// end) (docs/ingestion.md, "Range deletes"): the tombstones go to the same
// table as range-deletion entries and the FILESET records that it has
// them (its version 2), so a database that cannot apply them refuses the
// set with FailedPrecondition rather than ingesting it without them.
class ExternalFileWriter {
 public:
  // Creates dir (its parent must exist) and starts writing there.
  // AlreadyExists when dir holds anything already; InvalidArgument for
  // invalid options (Options are checked as DB::Open checks them).
  static absl::StatusOr<std::unique_ptr<ExternalFileWriter>> Open(const Options& options,
                                                                  const std::string& dir);
  virtual ~ExternalFileWriter() = default;

  // Adds key = value. Keys must strictly increase across Put and Delete.
  // InvalidArgument for a key not above the last one, a key over 64 KiB or
  // a value over 256 MiB (the database's limits), and after Finish or a
  // failure; the file system's errors (the writer then refuses everything
  // but Abandon).
  virtual absl::Status Put(std::string_view key, std::string_view value) = 0;
  // Adds a deletion of key: once ingested, key reads as absent, whatever
  // the database held for it. Errors as Put.
  virtual absl::Status Delete(std::string_view key) = 0;
  // Finishes the table and the segments, syncs them, and writes the
  // FILESET descriptor last. InvalidArgument when nothing was added or
  // after Finish; the file system's errors.
  virtual absl::StatusOr<ExternalFileInfo> Finish() = 0;
  // Removes what was written (best effort). For a writer that failed or
  // whose input was abandoned; never needed after Finish.
  virtual void Abandon() = 0;
};

// How DB::IngestExternalFiles takes the files.
struct IngestOptions {
  // true: the file sets are moved into the database: each value-log segment
  // is hard-linked into the database directory (copied when that is not
  // possible: another file system, or one without links) and, once the
  // ingestion is durable, the file set's files are removed (it can then no
  // longer be ingested elsewhere). false: everything is copied and the file
  // sets are left as they were.
  bool move_files = true;
  // The ingestion needs the memtable empty (docs/ingestion.md, "Why the
  // memtable is flushed first"). true: a memtable holding writes is
  // flushed first (writes wait meanwhile); false: such an ingestion is
  // refused with FailedPrecondition and nothing changes.
  bool allow_blocking_flush = true;
};

// What DB::IngestExternalFiles did.
struct IngestResult {
  uint64_t sequence = 0;  // the one sequence number of every ingested entry
  // Per file set, in the order given: the level its table went to.
  std::vector<int> levels;
  uint64_t entries = 0;
  uint64_t table_bytes = 0;    // key tables written into the database
  uint64_t segment_bytes = 0;  // value-log segments adopted
  uint64_t copied_bytes = 0;   // of segment_bytes, those copied (not linked)
  bool flushed_memtable = false;
};

}  // namespace cairn

#endif  // CAIRN_INGEST_H_
