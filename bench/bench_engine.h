// BenchEngine is the narrow key-value interface cairn_bench drives, so one
// benchmark loop measures cairn (inline or separated values), RocksDB and
// RocksDB's integrated BlobDB alike. Each engine reports what it measures
// about itself in EngineStats; the runner takes deltas between two calls.
//
// Thread safety: Put, Get, MultiGet, Delete, Scan and NewCursor may be called
// from many threads at once; each cursor by one thread at a time. Flush,
// WaitForCompactions and Stats may run beside them.
#ifndef CAIRN_BENCH_BENCH_ENGINE_H_
#define CAIRN_BENCH_BENCH_ENGINE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cairn::bench {

// Settings every engine maps to its own knobs (docs/bench.md, "Equivalent
// settings").
struct EngineOptions {
  std::string path;
  bool use_existing_db = false;  // open without wiping the directory
  // cairn only: values of at least this many bytes go to the value log;
  // cairn::kInlineValues keeps them in the LSM tree.
  size_t value_separation_threshold = 0;
  // cairn only: Options::separate_at_flush_below (-1: the default).
  int64_t separate_at_flush_below = -1;
  // cairn only: Options::separate_at_flush_during_gc.
  bool separate_at_flush_during_gc = false;
  bool sync = false;
  bool zstd = false;
  bool direct_reads = false;
  // cairn: value-log appends with O_DIRECT (Options::direct_writes);
  // RocksDB: use_direct_io_for_flush_and_compaction, which covers its blob
  // files (its WAL is never O_DIRECT).
  bool direct_writes = false;
  size_t memtable_bytes = 64u << 20;
  size_t cache_bytes = 64u << 20;
  int bloom_bits = 10;
  // cairn only: iterator value prefetch depth (ReadOptions), and whether
  // background value-log GC runs.
  int prefetch_depth = 32;
  bool gc = true;
  // cairn only, each < 0 for the library's default: the GC trigger
  // (Options::gc_space_amp_trigger), GC's byte budget (gc_bytes_per_sec)
  // and the memtable's value-byte bound (max_memtable_value_bytes).
  double gc_trigger = -1;
  // cairn only: Options::gc_punch_holes.
  bool gc_punch_holes = true;
  // cairn only: GC jobs at once (Options::max_background_gc); < 1 for the
  // default.
  int gc_jobs = -1;
  // cairn only: Options::gc_nice_adjustment; 99 for the default.
  int gc_nice = 99;
  // Both engines: start writeback every this many bytes written (cairn:
  // Options::value_log_bytes_per_sync; RocksDB: bytes_per_sync, which
  // covers its tables and blob files). -1: each engine's default (cairn
  // 1 MiB, RocksDB 0).
  int64_t bytes_per_sync = -1;
  // Both engines: the same for the WAL (wal_bytes_per_sync on both). -1:
  // each engine's default (cairn 1 MiB, RocksDB 0).
  int64_t wal_bytes_per_sync = -1;
  // cairn: Options::wal_prefill_bytes. -1: the default.
  int64_t wal_prefill_bytes = -1;
  int64_t gc_bytes_per_sec = -1;
  int64_t memtable_value_bytes = -1;
  // cairn only: Options::value_log_segment_size; < 0 for the default.
  int64_t segment_bytes = -1;
  // Both engines: the key ranges one compaction may split into
  // (max_subcompactions); < 1 for each engine's default (cairn 2, RocksDB 1).
  int subcompactions = -1;
};

// Cumulative counters since open, as the engine measures them. Byte counts
// that an engine cannot measure stay 0.
struct EngineStats {
  uint64_t user_bytes_written = 0;  // key + value bytes the engine accepted
  uint64_t wal_bytes = 0, vlog_bytes = 0, flush_bytes = 0;
  uint64_t compaction_bytes = 0, gc_bytes = 0, manifest_bytes = 0;
  // Bytes of all of the above that count toward write amplification (for
  // BlobDB the blob bytes are already inside flush and compaction).
  uint64_t total_bytes_written = 0;
  // True when vlog_bytes are part of flush_bytes and compaction_bytes (BlobDB
  // writes blob files inside its flush and compaction jobs).
  bool vlog_inside_flush = false;
  uint64_t table_reads = 0, table_bytes_read = 0;
  uint64_t vlog_reads = 0, vlog_bytes_read = 0;
  uint64_t stall_micros = 0;
  uint64_t stall_max_micros = 0;    // longest single write wait since open (cairn)
  uint64_t gc_bytes_relocated = 0;  // GC activity (0 until GC runs)
  // Value-log bytes GC read (cairn: gc_bytes_read; BlobDB: blob-file bytes
  // read, which its compactions' GC does).
  uint64_t gc_bytes_read = 0;
  uint64_t disk_bytes = 0;          // SSTs + value log (or whole directory)
  // Parts of disk_bytes an engine can name (cairn; 0 otherwise): the tables
  // and value-log segments its manifest names, and the garbage counted in
  // those segments. The rest is the WAL and files still being written.
  uint64_t sst_bytes = 0, segment_bytes = 0, segment_garbage_bytes = 0;
  uint64_t segment_foreseen_bytes = 0;  // garbage foreseen at flushes, not counted yet
  double gc_space_amplification = 0;    // the figure GC steers by (0: none)
  uint64_t live_bytes = 0;          // from the last MeasureLiveBytes
  double space_amplification = 0;   // disk_bytes / live_bytes; 0 = unknown
};

// A forward cursor over the engine's keys.
class BenchCursor {
 public:
  virtual ~BenchCursor() = default;
  virtual void Seek(std::string_view target) = 0;
  virtual void SeekToFirst() = 0;
  virtual bool Valid() const = 0;
  virtual void Next() = 0;
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  virtual absl::Status status() const = 0;
};

class BenchEngine {
 public:
  virtual ~BenchEngine() = default;

  // "cairn-inline", "cairn-separated", "rocksdb" or "blobdb".
  virtual std::string Name() const = 0;

  virtual absl::Status Put(std::string_view key, std::string_view value) = 0;
  // NotFound when the key has no value.
  virtual absl::Status Get(std::string_view key, std::string* value) = 0;
  // One status per key; values[i] is set where statuses[i] is OK.
  virtual std::vector<absl::Status> MultiGet(const std::vector<std::string_view>& keys,
                                             std::vector<std::string>* values) = 0;
  virtual absl::Status Delete(std::string_view key) = 0;
  // Deletes every key in [begin, end) with one range deletion.
  virtual absl::Status DeleteRange(std::string_view begin, std::string_view end) = 0;
  // One step of settling space after a large delete: a full compaction and
  // whatever the engine's value-log GC then does (cairn: RunGC until it
  // finds nothing; BlobDB: its GC runs inside the compaction). False when a
  // further step would find nothing more to do.
  virtual absl::StatusOr<bool> SettleStep() = 0;
  // Bytes [offset, offset + length) of key's value. The default reads the
  // whole value and slices it; cairn reads only the range (DB::GetRange,
  // without record checksums, which cover whole records).
  virtual absl::Status GetRange(std::string_view key, uint64_t offset, uint64_t length,
                                std::string* out);
  virtual std::unique_ptr<BenchCursor> NewCursor() = 0;
  // A cursor that shows only keys below upper_bound, for engines that take
  // iterator bounds (cairn); others return NewCursor().
  virtual std::unique_ptr<BenchCursor> NewBoundedCursor(std::string_view upper_bound) {
    return NewCursor();
  }

  // Seeks to start and reads up to nexts further entries, through a bounded
  // cursor when upper_bound is set. Sets *entries to the entries visited and
  // *bytes to their key + value bytes.
  absl::Status Scan(std::string_view start, int nexts, std::optional<std::string_view> upper_bound,
                    int* entries, uint64_t* bytes);

  // Writes the memtable out and waits for it.
  virtual absl::Status Flush() = 0;
  // Waits until no flush or compaction is pending or running.
  virtual absl::Status WaitForCompactions() = 0;
  // Measures the live user bytes (for space amplification). tracked_bytes is
  // the bench's own count (0 when unknown); engines that cannot measure use
  // it, falling back to a scan when it is 0.
  virtual absl::Status MeasureLiveBytes(uint64_t tracked_bytes) = 0;
  virtual EngineStats Stats() = 0;
  // The engine's own text report (cairn.stats, rocksdb.stats).
  virtual std::string StatsText() = 0;
};

// Opens cairn. Unimplemented while the build stores values inline only and
// a threshold other than kInlineValues is asked for.
absl::StatusOr<std::unique_ptr<BenchEngine>> OpenCairnEngine(const EngineOptions& options);

// Opens RocksDB (blob = false) or RocksDB with integrated BlobDB. Unimplemented
// when cairn_bench was built without RocksDB.
absl::StatusOr<std::unique_ptr<BenchEngine>> OpenRocksDbEngine(const EngineOptions& options,
                                                               bool blob);

// Sum of the sizes of the regular files under dir (recursively); 0 on error.
uint64_t DirectoryBytes(const std::string& dir);

}  // namespace cairn::bench

#endif  // CAIRN_BENCH_BENCH_ENGINE_H_
