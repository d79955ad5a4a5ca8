// The change feed's types (DB::GetUpdatesSince, docs/replication.md): what
// a follower reads to apply the primary's writes in order.
#ifndef CAIRN_UPDATES_H_
#define CAIRN_UPDATES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cairn/write_batch.h"

namespace cairn {

struct UpdatesOptions {
  // Whether the values the feed reads from the value log go into the value
  // cache. A follower reads old values once; they would only push out the
  // ones readers use.
  bool fill_cache = false;
};

// One item of the feed: a write batch, or an ingestion event.
struct Update {
  enum class Kind {
    // Writes: batch holds them, values included (a value the WAL names by a
    // pointer into the value log is read and carried whole). Entries have
    // consecutive sequence numbers from `sequence`. Garbage collection's
    // moves of values also appear here, as puts of the value a key already
    // has.
    kWriteBatch,
    // External files were ingested (DB::IngestExternalFiles), visible at
    // `sequence` (one sequence number); ingested_files names them as the
    // ingestion was given them. A follower ingests the same files.
    kIngestion,
  };
  Kind kind = Kind::kWriteBatch;
  // The first sequence number the item holds.
  uint64_t sequence = 0;
  WriteBatch batch;
  std::vector<std::string> ingested_files;

  // The sequence number of the item's last write (sequence when it holds
  // one number).
  uint64_t last_sequence() const {
    return kind == Kind::kWriteBatch && batch.Count() > 0 ? sequence + batch.Count() - 1 : sequence;
  }
};

// Reads the feed in order. Not thread-safe; must not outlive its DB.
class UpdateIterator {
 public:
  virtual ~UpdateIterator() = default;
  // Whether update() holds an item; false at the end of what the iterator
  // covers, or on error (status()).
  virtual bool Valid() const = 0;
  // The current item. REQUIRES: Valid().
  virtual const Update& update() const = 0;
  // Moves to the next item. REQUIRES: Valid().
  virtual void Next() = 0;
  // OK at the end; otherwise why the feed stopped (DataLoss naming the
  // file for damage, OutOfRange when a WAL still to read went away).
  virtual absl::Status status() const = 0;
};

}  // namespace cairn

#endif  // CAIRN_UPDATES_H_
