// Options for opening a cairn database, and for each read and write.
#ifndef CAIRN_OPTIONS_H_
#define CAIRN_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string_view>
#include <vector>

namespace cairn {

class Snapshot;
class EventListener;     // cairn/listener.h
class CompactionFilter;  // cairn/compaction_filter.h
namespace io {
class FileSystem;  // cairn/file_system.h
}  // namespace io

// Values of at least this many bytes go to the value log; kInlineValues keeps
// every value in the LSM tree (inline-value mode, like LevelDB and RocksDB).
inline constexpr size_t kInlineValues = std::numeric_limits<size_t>::max();

// Largest key and value accepted; larger ones are InvalidArgument before any
// I/O. The empty key is allowed (it sorts first).
inline constexpr size_t kMaxKeySize = 64 * 1024;
inline constexpr size_t kMaxValueSize = 256u * 1024 * 1024;
// Largest ReadOptions::readahead_size and Options::compaction_readahead_size.
inline constexpr size_t kMaxReadaheadSize = 64u << 20;

enum class IoBackendOption : uint8_t {
  kAuto = 0,   // io_uring when the kernel allows it, else POSIX
  kUring = 1,  // io_uring; still falls back to POSIX rather than fail
  kPosix = 2,  // pread/pwrite/fdatasync
};

enum class Compression : uint8_t { kNone = 0, kZstd = 1 };

// Largest Options::wal_ttl_seconds: 100 years.
inline constexpr uint64_t kMaxWalTtlSeconds = uint64_t{3155760000};

// The time expiring writes are measured against (Options::clock). Tests
// give a fake one; null in Options means the system's real-time clock.
class Clock {
 public:
  virtual ~Clock() = default;
  // Microseconds since the Unix epoch. Must be safe to call from any thread.
  // The DB never sees time go back: it uses the largest value it has read
  // so far (docs/decisions/20261207_ttl_expiry.md).
  virtual uint64_t NowMicros() = 0;
};

// Longest TTL accepted, in seconds (about 136 years): a longer one is
// InvalidArgument, so that now + TTL can never overflow or wrap.
inline constexpr uint64_t kMaxTtlSeconds = uint64_t{1} << 32;

struct Options {
  // Create the database when the directory holds none. Default: true.
  bool create_if_missing = true;
  // Fail when a database already exists at the path. Default: false.
  bool error_if_exists = false;
  // Bytes of writes a memtable takes before it is flushed. Default: 64 MiB.
  // The memory of flushed memtables, up to this much, is kept for the next
  // ones rather than given back to the system, so that writes do not pay a
  // page fault per 4 KiB of fresh memory
  // (docs/decisions/20261204_memtable_block_reuse.md).
  size_t memtable_size = 64u << 20;
  // Value-log bytes the entries of one memtable may point at before it is
  // flushed, as memtable_size bounds its own bytes: with separated values a
  // 64 MiB memtable of pointers would otherwise name gigabytes of values,
  // and the garbage it hides stays uncounted until it is flushed. A
  // memtable is also flushed once the values its own newer entries made
  // garbage pass a share of the live value log (docs/gc.md). Default:
  // 64 MiB.
  uint64_t max_memtable_value_bytes = uint64_t{64} << 20;
  // Uncompressed bytes per SST data block. Default: 4 KiB.
  size_t block_size = 4096;
  // One LRU cache, in bytes, shared by SST blocks and separated values: the
  // kind read more keeps more of it, and the DB's read memory is this one
  // number, as with RocksDB's block cache (0: no shared cache). Default:
  // 64 MiB.
  size_t cache_size = 64u << 20;
  // A cache of SST blocks of its own, in bytes, outside cache_size. 0
  // (default): blocks are cached in cache_size.
  size_t block_cache_size = 0;
  // Flushes and compactions put the data blocks they write into the block
  // cache while every table together takes at most half of it, as with
  // separated values, whose tables hold only keys and pointers. Reads and
  // GC's liveness checks then find a compaction's output cached instead of
  // reading it back one block at a time. A larger LSM is left to the reads,
  // so that writing it does not evict what they use. Default: true.
  bool cache_new_table_blocks = true;
  // Bloom filter bits per key in every SST (0 disables). Default: 10.
  int bloom_bits_per_key = 10;
  // Compression of SST blocks. Default: zstd.
  Compression compression = Compression::kZstd;
  // File I/O backend; the environment variable CAIRN_IO overrides it.
  IoBackendOption io_backend = IoBackendOption::kAuto;
  // Read SST and value-log data with O_DIRECT. Default: false.
  bool direct_reads = false;
  // Append to the value log (fresh values and GC output) with O_DIRECT,
  // through the ring on the io_uring backend, instead of through the page
  // cache. Each write group's values go to the device before it is
  // acknowledged; the partial tail block is written padded and rewritten by
  // the next group. Where the file system refuses O_DIRECT (tmpfs) the value
  // log writes buffered and says so in the info log. Default: false
  // (docs/decisions/20261201_direct_value_log_writes.md).
  bool direct_writes = false;
  // Buffered value-log appends (fresh values and GC output) start the
  // kernel's writeback of every this many bytes as they go (all but the
  // last 1 MiB, which the next appends still touch), as RocksDB's
  // bytes_per_sync does, instead of leaving the page cache to throttle the
  // writer once dirty pages pile up. It changes nothing about durability.
  // 0 turns it off. Default: 1 MiB
  // (docs/decisions/20261201_direct_value_log_writes.md).
  uint64_t value_log_bytes_per_sync = uint64_t{1} << 20;
  // The same for the WAL, as RocksDB's wal_bytes_per_sync. Off by default,
  // as RocksDB's: neither memtable switches nor background GC sync the WAL
  // (docs/durability.md, "WAL switches"), so under non-sync writes a WAL
  // whose memtable is flushed before the kernel writes it back never reaches
  // the device. Setting it bounds the dirty WAL pages a sync write (or
  // SyncWAL) then waits for. 0 turns it off. Default: 0
  // (docs/decisions/20261203_unsynced_wal_switches.md).
  uint64_t wal_bytes_per_sync = 0;
  // The WAL is written with zeros this many bytes at a time ahead of its
  // appends (one write per chunk), so that each append overwrites page-cache
  // pages and file blocks that exist instead of adding them, and a sync of
  // such appends writes no file-system metadata. A WAL closed whole has no
  // zeros; one a crash cut ends in them, which recovery reads as its clean
  // end (docs/wal_format.md, "Zeros written ahead"). The zeros are not
  // counted in write amplification (Stats::wal_bytes_prefilled counts
  // them). 0 turns it off; otherwise a multiple of 4 KiB, at most 64 MiB.
  // Default: 256 KiB (docs/decisions/20261205_wal_zero_fill_ahead.md).
  uint64_t wal_prefill_bytes = 256 << 10;
  // WAL retention for the change feed (DB::GetUpdatesSince,
  // docs/replication.md). A WAL whose writes the tables hold is deleted at
  // once when both are 0 (the default). Otherwise it is kept (in place,
  // below the manifest's log number, which recovery never replays) until a
  // limit that is set lets it go: wal_ttl_seconds once it has been
  // obsolete that long (counted from when this process saw it become
  // obsolete, or opened the DB), wal_size_limit_bytes once the retained
  // WALs together are over it (oldest first). As RocksDB's WAL_ttl_seconds
  // and WAL_size_limit_MB, either limit alone deletes. While WALs are
  // retained, the value-log segments their pointers name are too, and no
  // dead run is punched (docs/decisions/20261208_change_feed.md).
  uint64_t wal_ttl_seconds = 0;  // at most kMaxWalTtlSeconds
  uint64_t wal_size_limit_bytes = 0;
  // Values of at least this many bytes are stored in the value log; the
  // LSM keeps a pointer of about 10 bytes. kInlineValues stores every value
  // in the LSM and never creates a value-log file. Default: 4 KiB, where
  // separated values stop losing scans to an LSM's (1 KiB before
  // 2026-12-02: lower write amplification, slower 1-2 KiB scans;
  // docs/decisions/20261129_separation_threshold.md).
  size_t value_separation_threshold = 4096;
  // Separated values smaller than this are written like inline ones, to the
  // WAL and the memtable, and the flush of their memtable moves them into a
  // value-log segment of its own in key order, as RocksDB's BlobDB does:
  // neighbouring keys' values then lie side by side, and a scan reads them
  // in a few large reads instead of one read each. It costs one more write
  // of each such value (the WAL's) and saves one write system call per
  // group. Values of at least this size go to the value log as they are
  // written, once. 0: every separated value does. At most 1 MiB. Default:
  // 16 KiB (docs/decisions/20261202_separate_at_flush.md).
  size_t separate_at_flush_below = 16u << 10;
  // false (default): while GC is collecting (the value log past
  // gc_space_amp_trigger until back under its stop mark), every separated
  // value is written to the value log as it comes, whatever
  // separate_at_flush_below says. The WAL then holds pointers only, so a
  // cheap WAL sync releases GC's victims at the end of each job instead of
  // the next flush, and each value is written once: under sustained
  // overwrites the directory peaks about 0.25 of live lower
  // (docs/decisions/20261206_values_as_written_while_gc_collects.md).
  // true: separate_at_flush_below holds at all times.
  bool separate_at_flush_during_gc = false;
  // Target size of a value-log segment, the unit of garbage collection: a
  // GC job frees its victims at once, so this sets how far the directory
  // swings above the level GC holds. Default: 16 MiB
  // (docs/decisions/20261207_defaults_that_bound_space.md).
  uint64_t value_log_segment_size = uint64_t{16} << 20;
  // A cache of separated values of its own, in bytes, outside cache_size.
  // 0 (default): values are cached in cache_size. (To cache blocks only:
  // block_cache_size > 0 and cache_size = 0.)
  size_t value_cache_size = 0;
  // Compression of separated values (per record, kept only when smaller).
  // Default: none.
  Compression value_compression = Compression::kNone;

  // Compaction: L0 file count that starts an L0 -> L1 compaction (default 4),
  // slows writes (default 20) and stops them (default 36).
  int level0_compaction_trigger = 4;
  int level0_slowdown_trigger = 20;
  int level0_stop_trigger = 36;
  // Target size of SST files written by compaction. Default: 64 MiB.
  size_t target_file_size = 64u << 20;
  // Size ratio between adjacent levels. Default: 10.
  int level_size_multiplier = 10;
  // Estimated bytes compaction is behind by (RocksDB's estimate) at which
  // writes slow down (default 64 GiB) and stop (default 256 GiB). 0 turns
  // that limit off, as in RocksDB.
  uint64_t soft_pending_compaction_bytes_limit = uint64_t{64} << 30;
  uint64_t hard_pending_compaction_bytes_limit = uint64_t{256} << 30;
  // Garbage collection of the value log. A segment is collected only when at
  // least this share of its bytes is garbage. Default: 0.5 (docs/gc.md).
  // Small segments (under a sixteenth of value_log_segment_size) are merged
  // whatever their garbage once there are 8 (docs/gc.md, "Merging small
  // segments").
  double gc_min_garbage_ratio = 0.5;
  // Background GC runs while the value log's space amplification (its bytes
  // on disk over its live bytes) exceeds this; 0 disables background GC
  // (DB::RunGC still works). Default: 1.42, so that under sustained
  // overwrites the whole directory stays at or below 1.5x live
  // (docs/decisions/20261207_defaults_that_bound_space.md).
  double gc_space_amp_trigger = 1.42;
  // I/O budget of background GC in bytes per second (reads plus writes),
  // for a device that foreground reads must share with GC; 0 means
  // unlimited. Lifted while the value log's space amplification is above
  // gc_space_amp_trigger (read before each victim), so that GC never sleeps
  // while user writes are slowed for space (from t + 0.1 (t - 1), t the
  // trigger; docs/gc.md). Default: 0, unlimited: a budget held GC back on
  // its way down to the stop mark, so the value log was back at the trigger
  // sooner, and writes were slowed twice as long
  // (docs/decisions/20261201_gc_budget_default.md).
  uint64_t gc_bytes_per_sec = 0;
  // Free the whole file-system blocks inside runs of adjacent dead records
  // of a sealed segment as soon as their garbage is counted and no reader
  // can reach them (Linux fallocate PUNCH_HOLE), instead of only when GC
  // copies the segment's live records out: space comes back without a
  // copy. Ignored where the file system cannot punch holes, and for a
  // segment file with a second name (a checkpoint's hard link). Default:
  // true (docs/gc.md, "Punched runs").
  bool gc_punch_holes = true;
  // Background GC jobs that may run at once, each on a thread of its own,
  // on victims and an output of its own; more than one only while the value
  // log is past gc_space_amp_trigger. A job is on the CPU about a third of
  // its wall time (it waits on its reads, its output's sync, its synced
  // rewrite and manifest edits), so on a machine with cores to spare more
  // jobs keep up sooner. On 2 cores, 2 jobs cut the share of time user
  // writes were slowed for space from 10-14% to under 3%, but the writer
  // then ran 18-25% slower. In [1, 16]. Default: 1
  // (docs/decisions/20261203_concurrent_gc_jobs.md).
  int max_background_gc = 1;
  // Added to the nice value (Linux setpriority) each GC thread inherits from
  // the thread that opens the database, and to that of the io_uring workers
  // the thread starts for its reads and syncs. GC is what ends a slowdown of
  // writes for space: above the writers' priority it takes the CPU as soon as
  // it is ready, and they run on the rest, instead of running ahead of it
  // until the throttle makes them wait. Under sustained 4 KiB overwrites on
  // 2 cores, -5 cut the share of the run writes were slowed from 11-14% to
  // 3-4%, at the same rate and peak. A negative adjustment needs
  // CAP_SYS_NICE or RLIMIT_NICE; refused, the threads keep the inherited
  // value and the info log says so. In [-20, 19]; 0 leaves the threads
  // alone. Default: -5 (docs/decisions/20261206_gc_thread_priority.md).
  int gc_nice_adjustment = -5;
  // Threads for compaction (flush has its own). Default: 1.
  int max_background_compactions = 1;
  // Threads one compaction may split into: a compaction of at least two
  // target_file_size of input merges that many key ranges in parallel, at
  // most one range per target_file_size (docs/architecture.md, "Compaction";
  // docs/decisions/20261201_subcompactions.md). 1: never split. Default: 2.
  int max_subcompactions = 2;
  // Each device read of a compaction's input tables covers at least this
  // many bytes, buffered per input file, so a compaction reads its inputs in
  // large sequential reads rather than one block at a time (with
  // direct_reads, a read per 4 KiB block at queue depth 1). 0: the
  // iterators' own readahead (ReadOptions::readahead_size). At most 64 MiB.
  // Default: 2 MiB, as RocksDB's compaction_readahead_size.
  uint64_t compaction_readahead_size = uint64_t{2} << 20;

  // The file system to run on (cairn/file_system.h: the real one, or one in
  // memory for tests); null: the real one on io_backend. Default: null.
  std::shared_ptr<io::FileSystem> file_system;
  // Told of flushes, compactions, GC runs, stalls and background errors
  // (cairn/listener.h). Default: none.
  std::vector<std::shared_ptr<EventListener>> listeners;
  // The info log, LOG in the database directory, is renamed to LOG.old.1
  // once it passes this many bytes (and at each open); the three newest
  // old ones are kept. 0 writes no info log. Default: 4 MiB.
  uint64_t max_info_log_size = uint64_t{4} << 20;
  // Every this many seconds a read-write database writes its statistics
  // (the text of GetProperty("cairn.stats")) to the info log, as RocksDB's
  // stats_dump_period_sec does, so that a LOG shows how the amplifications,
  // stalls and caches moved over a database's life. 0: never. Default: 600.
  uint32_t stats_dump_period_sec = 600;

  // Expiry (issue 60; README.md, "Expiry"). Every Put and WriteBatch::Put
  // that names no TTL of its own expires this many seconds after it is
  // written; 0 (default): such writes never expire. At most kMaxTtlSeconds.
  // Not persisted: each open states its own.
  uint64_t default_ttl_seconds = 0;
  // The clock expiry is measured against; null (default): the system's.
  std::shared_ptr<Clock> clock;
  // Called by compactions for each entry no snapshot can see, to keep,
  // remove or change it (cairn/compaction_filter.h). Must be thread-safe:
  // the key ranges of one compaction call it from several threads.
  // Default: none.
  std::shared_ptr<CompactionFilter> compaction_filter;
};

struct ReadOptions {
  // Read as of this snapshot; null reads the latest state.
  const Snapshot* snapshot = nullptr;
  // Verify checksums on every read. SST blocks and whole value records are
  // always verified on a cache miss in this version; turning this off lets
  // DB::GetRange read part of a large value without its record's checksum.
  // Default: true.
  bool verify_checksums = true;
  // Put the table blocks and the separated values read for this operation
  // into the cache (one budget, Options::cache_size), as RocksDB's
  // fill_cache does for blocks and blobs. False for a large scan or a
  // one-off read keeps them from evicting what the cache holds; what it
  // holds is still used. Default: true.
  bool fill_cache = true;
  // Forward scans keep up to this many separated values' reads in flight
  // ahead of the current entry, up to value_prefetch_bytes; records that
  // lie next to each other in a segment (values written or moved by GC in
  // key order) share one read. The window opens at the first value after a
  // seek that the value cache does not hold (kPrefetchAfterValues). With
  // an upper bound it grows by two reads per value (it never reads past
  // the bound). Without
  // one, the reads started since the seek stay within one more per
  // kUnboundedValuesPerPrefetch values taken, plus reads of a quarter of
  // the bytes taken (at most kUnboundedPrefetchBytes), so a scan reads at
  // most 5% more times than it shows values and about 256 KiB more (values
  // at random places), and the window's bytes
  // stay within what the scan has taken (at least 16 KiB). 1 disables
  // prefetching. Default: 32.
  int value_prefetch_depth = 32;
  // Value-log bytes the window may have in flight (at least one record).
  // Default: 4 MiB.
  size_t value_prefetch_bytes = 4u << 20;
  // Bounds of an iterator: it shows only keys k with *iterate_lower_bound
  // <= k < *iterate_upper_bound, never reads a value outside them, and the
  // prefetch window stops at the upper bound. Null: unbounded on that side.
  // The bounds are copied when the iterator is made; the pointees need not
  // outlive NewIterator.
  const std::string_view* iterate_lower_bound = nullptr;
  const std::string_view* iterate_upper_bound = nullptr;
  // How an iterator reads the SST data blocks it misses in the block cache.
  // 0: one block per read until it has taken two blocks of a file in order,
  // then reads covering the next 8 KiB beyond the block, doubling per read
  // up to 256 KiB, as RocksDB's iterators do (a jump starts over). Positive:
  // every such read covers at least this many bytes. Gets always read one
  // block. At most 64 MiB. Default: 0.
  size_t readahead_size = 0;
  // Key-only iteration (issue 60; BlobDB's lazy blob loading is the model):
  // an iterator reads no value-log byte while it moves. key() and
  // Iterator::value_size() come from the LSM alone; value() of a separated
  // value reads it then, on demand, alone (no prefetch window is kept, so
  // a scan that asks for no value reads no value-log byte, and one that
  // asks for a few reads just those). Inline values are in the tables and
  // cost nothing. A value() that fails turns the iterator invalid with the
  // error in status(), as a move that meets a bad value does otherwise.
  // Gets and MultiGet ignore it. Default: false.
  bool keys_only = false;
};

// Values a forward scan reads one at a time after each seek before its
// prefetch window opens (see ReadOptions::value_prefetch_depth): none since
// 2026-12-02, as the window's first read takes the records that share its
// blocks (docs/decisions/20261129_scan_prefetch_window.md, second addendum).
inline constexpr int kPrefetchAfterValues = 0;
// An unbounded forward scan keeps one value read ahead per this many values
// taken since its seek, plus reads of up to 1/kUnboundedPrefetchShare of the
// bytes it has taken, at most kUnboundedPrefetchBytes (as RocksDB's
// iterator readahead grows to 256 KiB): what a scan reads past its end
// stays within 5% more reads than the values it showed, plus about half
// their bytes up to 256 KiB (a quarter before 2026-12-06). A one-value
// scan reads nothing ahead (docs/decisions/20261203_scan_prefetch_bytes.md).
inline constexpr int kUnboundedValuesPerPrefetch = 20;
inline constexpr int kUnboundedPrefetchShare = 2;
inline constexpr uint64_t kUnboundedPrefetchBytes = uint64_t{256} << 10;

struct WriteOptions {
  // fdatasync the log before acknowledging. A sync write survives power
  // loss; a non-sync write survives a process crash once acknowledged.
  bool sync = false;
  // Seconds after the write at which its Puts expire (reads then see them
  // as deleted; compaction drops them). 0 (default): Options::
  // default_ttl_seconds applies. Over kMaxTtlSeconds: the write is refused
  // with InvalidArgument. A Put made with WriteBatch::PutWithExpiry keeps
  // its own expiry.
  uint64_t ttl_seconds = 0;
};

}  // namespace cairn

#endif  // CAIRN_OPTIONS_H_
