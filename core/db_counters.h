// The counters DBImpl keeps for GetStats and the cairn.stats property: what
// GC and hole punching did, and what user writes, reads and stalls did.
// Plain atomics, bumped where the work happens and read without a lock.
#ifndef CAIRN_CORE_DB_COUNTERS_H_
#define CAIRN_CORE_DB_COUNTERS_H_

#include <atomic>
#include <cstdint>

namespace cairn {

struct GcCounters {
  std::atomic<uint64_t> runs{0}, segments_freed{0}, bytes_read{0};
  // Active segments GC sealed below their target size to collect them.
  std::atomic<uint64_t> active_seals{0};
  std::atomic<uint64_t> rewrite_rechecks{0};
  std::atomic<uint64_t> victims_waited{0}, victim_syncs{0}, victim_switches{0};
  std::atomic<uint64_t> bytes_relocated{0}, records_dropped{0}, micros{0};
  std::atomic<uint64_t> records_known_dead{0};
  // Where GC jobs spent their time (gc::GcJobResult).
  std::atomic<uint64_t> scan_micros{0}, liveness_micros{0}, write_micros{0};
  std::atomic<uint64_t> rewrite_micros{0}, throttled_micros{0};
  // Garbage found at open that nothing had counted (CountUnaccountedGarbage).
  std::atomic<uint64_t> leaked_bytes_recounted{0};
  // Punched runs (docs/gc.md, "Punched runs").
  std::atomic<uint64_t> punch_runs{0};              // runs logged
  std::atomic<uint64_t> punch_bytes{0};             // whole-block bytes punched
  std::atomic<uint64_t> punch_calls{0};             // holes punched (one fallocate each)
  std::atomic<uint64_t> punch_skipped_linked{0};    // segments left alone: a second name
  std::atomic<uint64_t> punch_held_for_readers{0};  // rounds held back: a read-only reader
};

struct UserCounters {
  std::atomic<uint64_t> bytes_written{0}, puts{0}, deletes{0}, range_deletes{0};
  std::atomic<uint64_t> gets{0}, gets_found{0};
  std::atomic<uint64_t> live_bytes{0};  // from the last cairn.live-bytes scan
  std::atomic<uint64_t> stall_slowdowns{0}, stall_stops{0}, stall_micros{0};
  std::atomic<uint64_t> stall_max_micros{0};
  std::atomic<uint64_t> stall_max_delay_micros{0};  // the longest delay asked for
  // Compactions' expiry and filter (issue 60).
  std::atomic<uint64_t> expired_dropped{0}, filter_removed{0}, filter_changed{0};
  std::atomic<uint64_t> filter_values_read{0}, filter_value_bytes_read{0};
};

}  // namespace cairn

#endif  // CAIRN_CORE_DB_COUNTERS_H_
