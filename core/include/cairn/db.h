// DB is a persistent ordered map from byte-string keys to byte-string values.
// Layout and design: docs/architecture.md.
//
// Thread safety: every method may be called from many threads at once.
// Errors: NotFound only from Get; InvalidArgument for bad input (checked
// before any I/O); DataLoss naming file and offset for corrupt bytes; after a
// failed sync or a background error, writes fail until the DB is reopened.
#ifndef CAIRN_DB_H_
#define CAIRN_DB_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cairn/ingest.h"
#include "cairn/iterator.h"
#include "cairn/options.h"
#include "cairn/pinnable_value.h"
#include "cairn/stats.h"
#include "cairn/updates.h"
#include "cairn/version.h"
#include "cairn/write_batch.h"

namespace cairn {

// A key range [start, limit) for DB::GetApproximateSizes.
struct Range {
  std::string_view start;
  std::string_view limit;
};

// What DB::GetApproximateSizes and GetApproximateKeyCount count, OR-ed:
// the memtables' entries, the tables' bytes, and the value-log bytes that
// the range's pointers name (in the memtables and tables counted).
enum SizeApproximationFlags : uint32_t {
  kIncludeMemtables = 1,
  kIncludeFiles = 2,
  kIncludeValueLog = 4,
};

// A consistent read view; see DB::GetSnapshot.
class Snapshot {
 public:
  // The sequence number the snapshot reads at: it sees every write with a
  // sequence number at or below it, and none above.
  virtual uint64_t GetSequenceNumber() const = 0;

 protected:
  virtual ~Snapshot() = default;
};

class DB {
 public:
  // Opens (or creates, per options) the database in directory path. Only one
  // DB may hold a path at a time, in this process or any other.
  static absl::StatusOr<std::unique_ptr<DB>> Open(const Options& options,
                                                  const std::string& path);
  // Opens the database in directory path for reading only: nothing is
  // written, created, deleted or truncated, no background work runs, and the
  // LOCK is not taken, so a process may read a database another one is
  // writing. The view is the state at open: the manifest as it was, plus
  // every write the WALs held then, replayed into memory (a torn WAL tail
  // ends the replay); later writes of the other process are not seen, and a
  // file it deletes afterwards (compaction, GC) fails the reads that need
  // it with NotFound or DataLoss. The view holds a shared lock on LOCK's
  // reader byte while it is open; a writer punches no hole in its value log
  // meanwhile (Options::gc_punch_holes). Damage is refused as Open refuses it
  // (DataLoss naming the file). Put, Delete, Write, Flush, CompactRange and
  // RunGC return FailedPrecondition. options.create_if_missing and
  // error_if_exists are ignored; a missing database is NotFound.
  static absl::StatusOr<std::unique_ptr<DB>> OpenForReadOnly(const Options& options,
                                                             const std::string& path);
  DB() = default;
  DB(const DB&) = delete;
  DB& operator=(const DB&) = delete;
  // Closes the database if Close has not: waits for background work, then
  // closes every file. A failure is lost; call Close to see it.
  virtual ~DB() = default;

  // Waits for background work to stop, syncs the WAL and the value log,
  // records the last sequence in the manifest and closes every file.
  // Returns the first failure of those steps, or the background error that
  // stopped writes earlier (then the state on disk is what the crash rules
  // recover). REQUIRES: no other call on this DB is in flight; iterators may
  // outlive it but should be destroyed first. A second Close returns the
  // first one's status; after Close every other call fails with
  // FailedPrecondition ("closed"; GetSnapshot returns null, GetProperty
  // false). A read-only DB closes with OK.
  virtual absl::Status Close() = 0;

  virtual absl::Status Put(const WriteOptions& options, std::string_view key,
                           std::string_view value) = 0;
  virtual absl::Status Delete(const WriteOptions& options, std::string_view key) = 0;
  // Deletes every key in [begin, end) (end exclusive), as one write:
  // afterwards no read at a later snapshot sees a key of the range, until
  // it is written again. InvalidArgument when begin >= end or either is over
  // kMaxKeySize. Its cost does not depend on how many keys the range holds;
  // the values it deletes become value-log garbage (docs/api.md).
  virtual absl::Status DeleteRange(const WriteOptions& options, std::string_view begin,
                                   std::string_view end) {
    WriteBatch batch;
    batch.DeleteRange(begin, end);
    return Write(options, batch);
  }
  virtual absl::Status Write(const WriteOptions& options, const WriteBatch& batch) = 0;
  // Write that also tells the sequence number the batch was given: its
  // first entry has *first_sequence, the next one *first_sequence + 1, and
  // so on (a batch's entries have consecutive numbers, as in the feed of
  // GetUpdatesSince). An empty batch writes nothing and sets it to
  // GetLatestSequenceNumber() + 1. first_sequence may be null.
  virtual absl::Status Write(const WriteOptions& options, const WriteBatch& batch,
                             uint64_t* first_sequence) = 0;

  // The sequence number of the newest write visible to reads (0 before the
  // first write). Every write, once acknowledged, has a sequence number at
  // or below it.
  virtual uint64_t GetLatestSequenceNumber() = 0;

  // The change feed (docs/replication.md): every write at or after
  // sequence `since`, in order and with no gap, each as the write batch the
  // WAL holds with its values (also those the value log holds), plus
  // ingestion events. A batch that holds `since` is returned whole, so the
  // first item may start below it. The iterator covers the writes up to
  // GetLatestSequenceNumber() at the call; call again from the sequence
  // after the last item to follow newer ones. Errors: InvalidArgument when
  // since is beyond GetLatestSequenceNumber() + 1; OutOfRange, naming the
  // oldest sequence still retained, when the WALs holding since are gone
  // (Options::wal_ttl_seconds and wal_size_limit_bytes keep them);
  // FailedPrecondition on a read-only or closed DB.
  virtual absl::StatusOr<std::unique_ptr<UpdateIterator>> GetUpdatesSince(
      uint64_t since, const UpdatesOptions& options = UpdatesOptions()) = 0;
  // A Put that expires ttl_seconds after it is written (RocksDB's DBWithTTL
  // puts): Get, MultiGet and iterators then see the key as deleted, and
  // compaction drops it, its separated value counted as garbage unread.
  // InvalidArgument for a TTL of 0 (use Put) or over kMaxTtlSeconds.
  absl::Status PutWithTTL(const WriteOptions& options, std::string_view key,
                          std::string_view value, uint64_t ttl_seconds);

  // Sets *value; NotFound when the key has no value.
  virtual absl::Status Get(const ReadOptions& options, std::string_view key,
                           std::string* value) = 0;
  // As Get, into *value: a value from the value cache is shared, not
  // copied; any other lands in *value's own buffer (docs/blob_reads.md).
  virtual absl::Status Get(const ReadOptions& options, std::string_view key,
                           PinnableValue* value) {
    return Get(options, key, value->OwnBuffer());
  }
  // Reads bytes [offset, offset + length) of key's value into *out: fewer
  // when the value ends first, none when offset is at or past its end.
  // NotFound when the key has no value. With ReadOptions::verify_checksums
  // off, a separated, uncompressed value is read in part: the record's
  // header and key are checked and only the asked-for bytes are read (the
  // record's checksum covers all of it, so they are not verified). Else,
  // and for compressed values, the whole record is read and verified
  // (docs/blob_reads.md).
  virtual absl::Status GetRange(const ReadOptions& options, std::string_view key, uint64_t offset,
                                uint64_t length, std::string* out);

  // One status per key, in order; values[i] is set where statuses[i] is OK.
  virtual std::vector<absl::Status> MultiGet(const ReadOptions& options,
                                             const std::vector<std::string_view>& keys,
                                             std::vector<std::string>* values) = 0;

  // An iterator reads the database as of its creation (or as of
  // ReadOptions::snapshot) for its whole life: releasing that snapshot
  // while the iterator lives is allowed, and its reads stay whole (it pins
  // what it reads, as a RocksDB iterator pins its version). Destroy every
  // iterator before the DB.
  virtual std::unique_ptr<Iterator> NewIterator(const ReadOptions& options) = 0;

  // A read view of the database as it is now, for ReadOptions::snapshot,
  // held until ReleaseSnapshot (snapshots still held when the DB is
  // destroyed are freed with it).
  virtual const Snapshot* GetSnapshot() = 0;
  // Releases a snapshot from this DB's GetSnapshot; it must not be used
  // afterwards. Releasing null, a snapshot already released, or one from
  // another DB does nothing (the DB tracks the snapshots it handed out). A
  // later GetSnapshot may return the same pointer again, and a stale second
  // release would then release that new snapshot: release each one once.
  virtual void ReleaseSnapshot(const Snapshot* snapshot) = 0;

  // Writes the memtable to an SST and waits for it.
  virtual absl::Status Flush() = 0;
  // Syncs the WAL and the value log (their fdatasyncs in flight together):
  // every write acknowledged before the call is durable when it returns, as
  // if it had been written with WriteOptions::sync. A failed sync stops
  // writes, as a failed sync write does. FailedPrecondition on a read-only
  // DB.
  virtual absl::Status SyncWAL() = 0;
  // Compacts the key range [begin, end] (null: unbounded) down the levels.
  virtual absl::Status CompactRange(const std::string* begin, const std::string* end) = 0;

  // Adds the file sets in dirs (each written by an ExternalFileWriter,
  // cairn/ingest.h) to the database, all or none: every ingested entry gets
  // one sequence number, newer than every earlier write, and becomes
  // visible at once; a crash at any point leaves all of them or none after
  // the next open. Each set's table goes to the lowest level where it
  // overlaps nothing; its value-log segments are adopted as they are
  // (docs/ingestion.md). Every file is verified (checksums, sizes, that
  // each pointer names a record of its key) before anything is visible.
  // Errors, each leaving the database untouched: InvalidArgument for no
  // sets, a directory given twice, or sets whose key ranges overlap;
  // DataLoss naming the file for a damaged or mismatched one;
  // FailedPrecondition for a set of a newer format version, a read-only
  // DB, or a memtable holding writes with allow_blocking_flush false; the
  // file system's errors.
  virtual absl::StatusOr<IngestResult> IngestExternalFiles(const std::vector<std::string>& dirs,
                                                           const IngestOptions& options) = 0;
  // Collects value-log segments whose garbage share reaches
  // Options::gc_min_garbage_ratio, now, without a byte budget: live values
  // move to a new segment, pointers are rewritten unless a newer write won,
  // and a victim's file is deleted once no snapshot or iterator can read it.
  virtual absl::StatusOr<GcResult> RunGC() = 0;
  // Waits until no flush or compaction is pending or running, and, with
  // background GC on, after writes that took the value log past
  // gc_space_amp_trigger since the last call, until GC has brought it down
  // to its settle mark (1 + 0.5 (gc_space_amp_trigger - 1): 1.25 at the
  // default, under the 1.3 where background collecting stops) or found
  // nothing more it may collect. Writes that stayed under the trigger are
  // left as they are: GC spends no write amplification below it. Files
  // made obsolete are gone on return, collected segments waiting for
  // their rewrites' durability included (a WAL sync, when one waits).
  // Where the garbage the memtable and level 0 may hide could decide
  // either question, it flushes the memtable and compacts level 0 first,
  // so that the figure it goes by is counted, not estimated.
  virtual absl::Status WaitForBackgroundWork() = 0;

  // Writes an openable copy of the database to the new directory dir (on
  // this DB's file system) while writes and GC go on: the copy holds every
  // write acknowledged before the call (and perhaps some that raced with
  // it, never part of a batch). Flushes the memtable first; tables and
  // sealed value-log segments are hard-linked (copied across file
  // systems), the segment being written is copied. Built in
  // dir + ".checkpoint-tmp" and renamed into place, so dir appears whole or
  // not at all. AlreadyExists when dir (or that temporary) exists.
  // docs/checkpoint.md.
  virtual absl::StatusOr<CheckpointResult> CreateCheckpoint(const std::string& dir) = 0;

  // "cairn.stats" (text report), "cairn.num-files-at-level<N>",
  // "cairn.io-backend", "cairn.live-bytes" (scans the LSM tree for the key
  // and value bytes of live entries, a separated value counted by its
  // pointer's record size, so the stored, possibly compressed, bytes, and
  // no value read; feeds space amplification), "cairn.options" (the newest
  // OPTIONS file's text, docs/options_format.md). False for an unknown name.
  virtual bool GetProperty(std::string_view name, std::string* value) = 0;

  // Size estimates (issue 60), RocksDB's GetApproximateSizes with the value
  // log's half: sizes[i] is about the bytes keys in ranges[i] take, from
  // metadata only, never by reading a value or a data block:
  // kIncludeFiles, each overlapping table's size times the share of its
  // data blocks the range covers (found in its index, interpolated inside
  // the end blocks); kIncludeMemtables, the memtables' internal keys and
  // stored values in the range (an in-memory walk of their entries there);
  // kIncludeValueLog, the value-log records the range's pointers name (per
  // table the value_pointer_bytes property times the same share, in the
  // memtables the pointers themselves). Old versions and deleted keys
  // still in the tables count, as they do in RocksDB's; a table written
  // before 2026-12-07 lacks the property, and its pointers count at the
  // average record size of the tables that have it (0 when none has).
  // An empty range (start == limit) is 0. InvalidArgument, before any
  // work: ranges or sizes null with n > 0, n < 0, a range with start >
  // limit, flags naming nothing or an unknown bit.
  virtual absl::Status GetApproximateSizes(const Range* ranges, int n, uint64_t* sizes,
                                           uint32_t flags = kIncludeFiles | kIncludeValueLog);
  // About how many keys [range.start, range.limit) holds, from the same
  // metadata: per table its entries less its deletions times the range's
  // share; in the memtables the entries that are not deletions. A key with
  // versions in several places counts in each (RocksDB's
  // GetApproximateMemTableStats and estimate-num-keys count so too).
  // flags: kIncludeMemtables and/or kIncludeFiles (kIncludeValueLog adds
  // nothing). InvalidArgument as for GetApproximateSizes.
  virtual absl::StatusOr<uint64_t> GetApproximateKeyCount(
      const Range& range, uint32_t flags = kIncludeMemtables | kIncludeFiles);
  virtual Stats GetStats() = 0;
};

// Deletes the database in directory path: every file with a cairn file name
// (CURRENT last but LOCK), then the directory when nothing else is in it;
// files cairn did not name stay, and so does the directory then. Refuses,
// deleting nothing: NotFound when path does not exist; FailedPrecondition
// when it is not a cairn database (no CURRENT file, and empty or holding a
// file cairn did not name: a directory of cairn files only is what an
// interrupted DestroyDB leaves, and goes) or when the database is open (its
// LOCK is held, in this process or another). options.io_backend picks the
// file system.
absl::Status DestroyDB(const Options& options, const std::string& path);

}  // namespace cairn

#endif  // CAIRN_DB_H_
