// Stats: what the engine measured about itself. The three amplifications
// (write, read, space) are computed from the io layer's byte counters, not
// estimated. GetProperty("cairn.stats") prints the same as text.
#ifndef CAIRN_STATS_H_
#define CAIRN_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace cairn {

struct LevelStats {
  int level = 0;
  uint64_t files = 0;
  uint64_t bytes = 0;               // size of the level's files
  uint64_t compaction_bytes_read = 0;
  uint64_t compaction_bytes_written = 0;  // flush output for L0
  uint64_t compactions = 0;
  uint64_t trivial_moves = 0;  // files moved down without a rewrite
  // Bytes written into the level per byte that came down from the level
  // above (L0: flush bytes per user byte).
  double write_amplification = 0;
};

// What one DB::RunGC call (or one background pass) did.
struct GcResult {
  uint64_t victims = 0;            // segments collected
  uint64_t segments_freed = 0;     // segment files deleted so far
  uint64_t bytes_read = 0;
  uint64_t bytes_relocated = 0;    // live record bytes copied
  uint64_t records_relocated = 0;
  uint64_t records_dropped = 0;    // garbage records not copied
  uint64_t rewrites_lost = 0;      // copies a concurrent write made garbage
  uint64_t micros = 0;
};

// What one DB::CreateCheckpoint did.
struct CheckpointResult {
  uint64_t files_linked = 0, bytes_linked = 0;  // hard links: no bytes moved
  uint64_t files_copied = 0, bytes_copied = 0;
  uint64_t sequence = 0;  // the last sequence number when the state was taken
  uint64_t micros = 0;
};

struct Stats {
  std::string io_backend;  // "io_uring" or "posix"

  // User traffic.
  uint64_t user_bytes_written = 0;  // key + value bytes of Puts and Deletes
  uint64_t puts = 0, deletes = 0, gets = 0, gets_found = 0;
  // DeleteRange calls (and batch range deletions) written since open, and
  // the range tombstones the live tables hold now.
  uint64_t range_deletes = 0;
  uint64_t range_tombstones_in_tables = 0;

  // Expiry and compaction filters since open (issue 60): expired entries
  // compactions dropped (their separated values counted as garbage unread),
  // entries the filter removed and values it changed, and the value-log
  // reads (and bytes) the filter asked for.
  uint64_t expired_dropped = 0;
  uint64_t filter_removed = 0, filter_changed = 0;
  uint64_t filter_value_reads = 0, filter_value_bytes_read = 0;

  // Bytes written to disk by component (from the io layer's counters).
  uint64_t wal_bytes_written = 0;
  // Zeros written ahead of the WAL's appends (Options::wal_prefill_bytes).
  // Not in write_amplification: the appends that overwrite them are.
  uint64_t wal_bytes_prefilled = 0;
  uint64_t vlog_bytes_written = 0;
  uint64_t flush_bytes_written = 0;
  uint64_t compaction_bytes_written = 0;
  uint64_t gc_bytes_written = 0;
  uint64_t manifest_bytes_written = 0;
  // Sum of the above over user_bytes_written.
  double write_amplification = 0;

  // Reads from the device.
  uint64_t table_reads = 0, table_bytes_read = 0;
  uint64_t vlog_reads = 0, vlog_bytes_read = 0;
  // (table_reads + vlog_reads) per Get.
  double read_amplification = 0;
  uint64_t bloom_probes = 0, bloom_rejections = 0, bloom_false_positives = 0;
  uint64_t block_cache_hits = 0, block_cache_misses = 0;
  uint64_t value_cache_hits = 0, value_cache_misses = 0;
  // Bytes each kind holds cached now, and the capacity of the cache it
  // lives in. When both share Options::cache_size, the two capacities are
  // that one budget (count it once); cache_shared says so.
  uint64_t block_cache_bytes = 0, block_cache_capacity = 0;
  uint64_t value_cache_bytes = 0, value_cache_capacity = 0;
  bool cache_shared = false;

  // Space: what every file in the database directory takes on the device
  // (allocated blocks, as du counts them; tables, value log, the
  // WAL, the manifest, the info log, and files a flush or GC job is still
  // writing or the deleter has not unlinked yet) over live user bytes,
  // which come from the last GetProperty("cairn.live-bytes") scan (0, and
  // space_amplification 0, until one has run). sst_bytes and vlog_bytes
  // are the tables and segments the manifest names; disk_bytes less both
  // is mostly the WAL, which holds the memtables' values.
  uint64_t disk_bytes = 0;
  uint64_t sst_bytes = 0, vlog_bytes = 0;
  uint64_t vlog_segments = 0;       // segments not yet reclaimed
  uint64_t vlog_garbage_bytes = 0;  // overwritten or deleted values, per compactions
  // Of the garbage, the bytes punched out of the segments' files (the whole
  // blocks of their punched runs): vlog_bytes less these is what the
  // segments take on the device (Options::gc_punch_holes).
  uint64_t vlog_punched_bytes = 0;
  // Garbage flushes foresaw, not yet in vlog_garbage_bytes: records their
  // entries superseded in the tables below, which a later compaction
  // counts (in memory only; docs/gc.md, "Garbage foreseen at flush").
  uint64_t vlog_foreseen_garbage_bytes = 0;
  uint64_t live_user_bytes_estimate = 0;
  double space_amplification = 0;

  // Write stalls: writes delayed and stopped, their total wait, and the
  // longest single wait of one write.
  uint64_t stall_slowdowns = 0, stall_stops = 0;
  uint64_t stall_micros = 0;
  uint64_t stall_max_micros = 0;
  // The longest delay the GC throttle set for one write (at most its cap,
  // 100 ms). stall_max_micros is the wait as it happened, which a loaded
  // machine's scheduler can stretch past the delay.
  uint64_t stall_max_delay_micros = 0;
  // The rate user writes are held to while GC is behind (bytes/s; 0 when
  // they are not delayed for value-log space).
  uint64_t delayed_write_rate = 0;
  // Compaction debt (RocksDB's estimate) that drives the byte-based stalls.
  uint64_t pending_compaction_bytes = 0;

  // Value-log garbage collection, since open.
  uint64_t gc_runs = 0;  // victims collected
  uint64_t gc_segments_freed = 0;
  uint64_t gc_bytes_read = 0;
  uint64_t gc_bytes_relocated = 0;
  uint64_t gc_records_dropped = 0;
  // Of which dropped without a liveness check: a flush or compaction had
  // dropped their pointers since open (docs/gc.md, "Records known dead").
  uint64_t gc_records_known_dead = 0;
  // Punched runs since open (Options::gc_punch_holes; docs/gc.md): runs of
  // dead records logged, the whole-block bytes punched out of their files
  // and the holes that took (one fallocate each), and the segments left
  // alone because their
  // file had a second name (a checkpoint's link).
  uint64_t gc_punched_runs = 0;
  uint64_t gc_punched_bytes = 0;
  uint64_t gc_punch_calls = 0;
  uint64_t gc_punch_skipped_linked = 0;
  // Rounds that punched nothing because a read-only DB (DB::OpenForReadOnly,
  // in any process) was open: its view may be older than the counts.
  uint64_t gc_punch_held_for_readers = 0;
  uint64_t gc_micros = 0;
  // Of which: reading the victims, checking liveness, writing and syncing
  // the outputs, rewriting pointers, and asleep for gc_bytes_per_sec.
  uint64_t gc_scan_micros = 0;
  uint64_t gc_liveness_micros = 0;
  uint64_t gc_write_micros = 0;
  uint64_t gc_rewrite_micros = 0;
  uint64_t gc_throttled_micros = 0;
  // Keys whose liveness GC checked a second time before writing their new
  // pointers, because a flush had moved writes out of the memtables since
  // the first check (otherwise the memtables alone answer, docs/gc.md).
  uint64_t gc_rewrite_rechecks = 0;
  // Background jobs do not sync their rewrites: their victims wait until a
  // flush (or another sync) makes those writes durable, and are marked
  // obsolete then. Victims that waited so; the WAL syncs GC forced for
  // them (when it ran out of work, or too many bytes waited); the memtable
  // switches it forced instead (too many bytes waited on the live
  // memtable's writes); and the bytes of the victims waiting now
  // (docs/gc.md, "Victims wait for durability").
  uint64_t gc_victims_waited = 0;
  uint64_t gc_victim_syncs = 0;
  uint64_t gc_victim_switches = 0;
  uint64_t gc_victim_bytes_waiting = 0;
  // Active value-log segments GC sealed below their target size because
  // their counted garbage made them worth collecting and nothing else was
  // (a small key set overwritten again and again; docs/gc.md).
  uint64_t gc_active_seals = 0;
  // GC bytes relocated per user byte written: what GC costs this workload
  // (lower under skewed updates, whose hot keys die before GC copies them).
  double gc_relocated_per_user_byte = 0;
  // Garbage found at open that nothing had counted (left by a crash, an
  // I/O error or an interrupted GC job) and counted then.
  uint64_t gc_recounted_bytes = 0;
  // Value-log bytes on disk over its live bytes (1 = no garbage).
  double vlog_space_amplification = 0;
  // The figure GC and the write throttle steer by (docs/gc.md): the value
  // log GC may still act on, with the values memtables hold for their
  // flushes, over what is left once garbage counted, foreseen and
  // estimated (what the memtables hide) is taken off.
  double gc_space_amplification = 0;

  std::vector<LevelStats> levels;
};

}  // namespace cairn

#endif  // CAIRN_STATS_H_
