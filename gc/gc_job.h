// RunGcJob relocates the live records of one or more value-log segments
// (the victims) into one new GC output segment and points their keys at the
// new copies, so that the victims can be deleted. Several victims share the
// output's syncs and manifest edits, the pointer rewrite's WAL sync and the
// victims' removal. Protocol and crash analysis: docs/gc.md.
//
//   1. Scan each victim front to back with large sequential reads (a sealed
//      segment: any bad record is DataLoss, and nothing is written).
//   2. Check liveness in batches through IndexView::CheckLive, but for the
//      records IndexView::KnownDeadRecords names: the scan steps over those
//      without a lookup, a copy or a checksum.
//   3. Sort the live records by key. They are buffered in memory as stored
//      (compressed values stay compressed), so the job holds at most the
//      live bytes of its victims (the DB bounds the victims' total size);
//      re-reading values in key order instead would trade that memory for a
//      random read per record.
//   4. Create the output segment (kGcOutput, a new file number), append the
//      records in key order, Sync, sync its directory, then log AddSegment
//      and SealSegment in one edit. No pointer into it exists before all of
//      this is durable.
//   5. IndexView::RewritePointers, in batches (compare-and-swap; the last
//      batch is synced, which makes the earlier ones durable too).
//   6. Log one edit: AddGarbage on the output for the copies whose rewrite
//      lost to a newer write or a delete, then MarkObsolete for each victim.
//      The job never deletes a victim; the DB does when nothing can read it.
// Victims with no live record get no output segment: only step 6.
//
// A crash (or error) after any step leaves either extra garbage or a
// complete move, never a pointer to bytes that are not durable or not known
// to the manifest. When the job fails before any pointer was rewritten, it
// marks its output segment obsolete (best effort).
//
// Records are copied as stored: a compressed or chunked value stays as it is,
// without a round of zstd; only a plain value meets GcJobOptions::compress.
//
// Thread safety: one job per victim at a time; jobs on disjoint victims may
// run concurrently if IndexView allows.
#ifndef CAIRN_GC_GC_JOB_H_
#define CAIRN_GC_GC_JOB_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gc/index_view.h"
#include "io/file_system.h"

namespace cairn::gc {

struct GcJobOptions {
  // Bytes per sequential read of the victim.
  size_t read_size = 2u << 20;
  // Records per CheckLive call.
  size_t liveness_batch_size = 256;
  // Keys per RewritePointers call (each call is one write; the job's last
  // is synced).
  size_t rewrite_batch_size = 1024;
  // Upper bound on the job's I/O (bytes read plus bytes written) per
  // second; the job sleeps as needed. 0 means unlimited.
  uint64_t bytes_per_second = 0;
  // zstd for the output's values (the DB passes its value-log setting).
  bool compress = false;
  int compression_level = 3;
  // O_DIRECT for the victim's reads, and for the output's writes.
  bool direct_reads = false;
  bool direct_writes = false;
  // Buffered output starts writeback every this many bytes (0: never).
  uint64_t writeback_bytes = 0;
  // Called with the output's path when direct_writes was asked for and the
  // file system refused O_DIRECT for it, so that it is written through the
  // page cache (the DB says so in its info log, once). May be empty.
  std::function<void(const std::string& path)> note_direct_refused;
};

// What one job did. Byte counts are of the segments' files.
struct GcJobResult {
  std::vector<uint64_t> victim_ids;
  uint64_t output_segment_id = 0;  // 0 when the victim had no live record
  uint64_t bytes_read = 0;         // of the victims, headers included
  uint64_t bytes_written = 0;      // the output's size, header included
  uint64_t records_scanned = 0;
  uint64_t live_records = 0;       // copied to the output
  uint64_t bytes_relocated = 0;    // record bytes appended to the output
  uint64_t records_dropped = 0;    // dead in the victim, not copied
  uint64_t records_known_dead = 0; // of which IndexView::KnownDeadRecords named
  uint64_t rewrites_lost = 0;      // copies a newer write made garbage
  uint64_t garbage_bytes_lost = 0; // their record bytes, logged as garbage
  uint64_t micros = 0;             // wall time of the job
  uint64_t throttled_micros = 0;   // of which asleep for the byte budget
  // Where the wall time went (each excludes the throttle's sleep in it):
  uint64_t scan_micros = 0;      // reading and parsing the victim
  uint64_t liveness_micros = 0;  // IndexView::CheckLive
  uint64_t write_micros = 0;     // creating, filling, syncing the output
  uint64_t rewrite_micros = 0;   // IndexView::RewritePointers

  // One line for logs.
  std::string DebugString() const;
};

// InvalidArgument for zero batch or read sizes or a bad compression level.
absl::Status ValidateGcJobOptions(const GcJobOptions& options);

// Runs the job above on the segments victim_ids, whose files are
// segment_path(id) (the output goes to segment_path(output id), in the same
// directory, which is synced). *result is filled as far as the job got, also
// on error.
// REQUIRES: each victim id names a distinct sealed, non-obsolete segment
// that no other job is collecting; result != nullptr.
// Errors: InvalidArgument (options, no victim); DataLoss naming file and
// offset for a bad victim record (then nothing was written or rewritten);
// the file system's and the index's errors.
absl::Status RunGcJob(const GcJobOptions& options, io::FileSystem* fs,
                      const std::function<std::string(uint64_t)>& segment_path,
                      absl::Span<const uint64_t> victim_ids, IndexView* index,
                      GcJobResult* result);
// The same for one victim.
absl::Status RunGcJob(const GcJobOptions& options, io::FileSystem* fs,
                      const std::function<std::string(uint64_t)>& segment_path,
                      uint64_t victim_id, IndexView* index, GcJobResult* result);

}  // namespace cairn::gc

#endif  // CAIRN_GC_GC_JOB_H_
