// ValueLog is the value log as the DB uses it: it appends large values to
// the active value-log segment for the write path, resolves value pointers
// for the read path (through a value cache and batched reads), keeps the
// segment set that the manifest persists, and repairs the active segment
// after a crash. The DB (core/) supplies what lies above this layer: file
// names, new file numbers, and the manifest that logs segment edits; it
// counts the garbage compactions report (core/garbage_meter.h).
//
// The LSM stores a separated value as ValueType::kValuePointer with the
// bytes of vlog::EncodeValuePointer. Formats: docs/vlog_format.md.
//
// Thread safety: AppendPrepared, Flush, Sync and active_file are for the write-group
// leader (one thread at a time); everything else may run concurrently.
#ifndef CAIRN_VLOG_VALUE_LOG_H_
#define CAIRN_VLOG_VALUE_LOG_H_

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "io/sharded_lru_cache.h"
#include "io/file_system.h"
#include "vlog/prepared_records.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_reader_cache.h"
#include "vlog/segment_set.h"
#include "vlog/segment_writer.h"
#include "vlog/value_cache.h"
#include "vlog/value_fetcher.h"
#include "vlog/value_pointer.h"

namespace cairn::vlog {

// Bytes [offset, offset + length) of value, cut at its end; empty when
// offset is at or past it (DB::GetRange's contract).
inline std::string_view ValueRange(std::string_view value, uint64_t offset, uint64_t length) {
  if (offset >= value.size()) return {};
  return value.substr(offset, std::min<uint64_t>(length, value.size() - offset));
}

struct ValueLogOptions {
  uint64_t segment_size = 256 << 20;  // a segment is sealed once it reaches this
  bool compress = false;              // zstd value records (level 1)
  bool direct_reads = false;          // O_DIRECT value reads
  // O_DIRECT appends. Where the file system refuses them the segments are
  // written buffered, and note (when set) hears so once.
  bool direct_writes = false;
  std::function<void(const std::string&)> note;
  // Buffered appends start writeback every this many bytes (0: never).
  uint64_t writeback_bytes = 0;
  // Values are cached in shared_cache (the DB's one budget) unless
  // value_cache_size gives them a cache of their own.
  uint64_t value_cache_size = 0;
  std::shared_ptr<io::Cache> shared_cache;
  // The directory's segment files: the path of segment id, and whether a
  // file name in the directory is a segment's (and its id).
  std::function<std::string(uint64_t id)> segment_path;
  std::function<bool(std::string_view name, uint64_t* id)> parse_segment_name;
  // A fresh file number for a new segment.
  std::function<uint64_t()> new_file_number;
  // Segment readers kept open at most, the least recently used closed
  // first (SegmentReaderCache).
  size_t max_open_segments = SegmentReaderCache::kDefaultMaxOpen;
  // The descriptor budget the readers draw from with the DB's tables
  // (io::FdBudget); null: none.
  std::shared_ptr<io::FdBudget> fd_budget;
};

class ValueLog {
 public:
  // Persists a segment edit through the manifest (the DB's serialized
  // LogAndApply) and then applies it here.
  using EditLogger = std::function<absl::Status(const vlog::SegmentEdit&)>;

  ValueLog(io::FileSystem* fs, std::string dbname, ValueLogOptions options, EditLogger log_edit);
  ~ValueLog();

  // Recovery: one manifest extension record (tags of vlog::IsSegmentEditTag).
  absl::Status ApplyManifestRecord(uint32_t tag, std::string_view payload);
  // Recovery: true when a record of the manifest recovery read added this
  // segment, even if a later one removed it. Such a file is a segment GC
  // collected whose deletion a crash undid (its directory entry was never
  // synced), not one that a lost record named.
  bool ManifestListedSegment(uint64_t segment_id) const;
  // Recovery, after WAL replay: cuts the torn tail of every segment that
  // was being written at the close or crash; continues the newest one of
  // fresh writes as the active segment when it is below the target size,
  // and seals the others at the end of their last whole record (into
  // *edit); marks
  // obsolete a GC output the crash caught unsealed (nothing points into
  // it), lists in *obsolete the segments to delete once the replayed WALs
  // are no longer needed, and removes segment files that neither the set
  // nor *edit (segments recovery's own flushes wrote) knows: orphans of a
  // crash.
  absl::Status FinishRecovery(vlog::SegmentEdit* edit, std::vector<uint64_t>* obsolete);
  // Recovery: whether segment_id was collected and deleted by GC (the
  // manifest no longer lists it, or lists it obsolete with its file gone).
  // A WAL may still hold pointers into such a segment that later writes
  // superseded (docs/durability.md, "Recovery").
  bool IsCollected(uint64_t segment_id) const;
  // True when a WAL entry's pointer names a record that reads back intact
  // with key; false when it does not (missing or torn); errors only for I/O.
  absl::StatusOr<bool> PointerIsIntact(std::string_view key, std::string_view stored);
  // Recovery, for a pointer PointerIsIntact found broken: OK when the
  // record lies in the torn tail of the segment that was being written
  // (unsealed, at or past the end of its last whole record), which a crash
  // can leave; otherwise DataLoss naming the segment file, the offset and
  // why (not in the manifest, missing, damaged in a sealed segment, damaged
  // inside the whole records of the active one).
  absl::Status ExplainBrokenPointer(std::string_view stored);
  // Recovery: every segment the manifest lists that is not obsolete exists,
  // and a sealed one holds at least its recorded bytes (a stat, no read).
  // DataLoss naming the file otherwise.
  absl::Status CheckSegmentFiles();

  // Write path. How values are encoded: any thread may fill a
  // PreparedRecords with it, before the record's place is known.
  const vlog::RecordEncoding& encoding() const { return encoding_; }
  // Places the prepared records of every batch in the active segment with
  // one write (one per segment when a new one starts among them), and
  // appends their pointers to *pointers in order. Starts a new segment
  // (logged in the manifest first) when none is active or the active one
  // reached its target size, before any record that would start past it.
  absl::Status AppendPrepared(absl::Span<const vlog::PreparedRecords* const> prepared,
                              std::vector<vlog::ValuePointer>* pointers);
  // Flush: a new segment (a new file number, kFresh) for the values of a
  // memtable that the flush thread moves out of it, in key order, with the
  // write path's encoding. The caller appends, syncs and closes it, syncs
  // the directory, and logs AddSegment and SealSegment in the edit that adds
  // the table pointing into it; until then nothing names the file, and a
  // crash leaves an orphan that FinishRecovery removes.
  absl::StatusOr<std::unique_ptr<vlog::SegmentWriter>> CreateFlushSegment();
  // Seals the active segment now, below its target size (synced, closed,
  // and SealSegment logged), and leaves none active: the next value starts
  // a new one. GC seals one whose counted garbage makes it worth collecting
  // (gc::VictimPolicy::ShouldSealActive). Nothing to do when none is active
  // or it holds no record. Write path only (the write-group leader).
  absl::Status SealActiveSegment();
  // Hands appended records to the kernel (before the WAL record naming them).
  absl::Status Flush();
  // The active segment's file, for syncing together with the WAL; null when
  // no segment is active.
  io::WritableFile* active_file();
  // Flush and fdatasync the active segment.
  absl::Status Sync();
  // Tells options_.note, once for the life of this ValueLog, that
  // direct_writes was asked for and the file system refused O_DIRECT for
  // path, which is appended through the page cache instead. The value log's
  // own segments call it themselves; GC's output reports through
  // gc::GcJobOptions::note_direct_refused. Any thread.
  void NoteDirectRefused(const std::string& path);
  // Adds to *edit the size of the active segment that the last Sync (or
  // recovery) made durable, when the manifest records less: an edit that
  // installs tables pointing into that segment carries it, so that recovery
  // never cuts what they reference (vlog::SegmentEdit::SyncedTo).
  void AddSyncedSize(vlog::SegmentEdit* edit) const;

  // Read path: resolves one pointer (value cache, then one device read).
  // fill_cache false (ReadOptions::fill_cache): a value read from the
  // device is not put into the value cache.
  absl::Status Get(std::string_view key, std::string_view stored, std::string* value,
                   bool fill_cache = true);
  // As Get, sharing a cached value instead of copying it: *shared is set
  // to the cached value, or to the value read from the device, which then
  // goes into the cache and is shared from there, so it is not copied
  // either. With no cache, or fill_cache false, the value is read into
  // *owned and *shared stays null (value_log_blob.cc).
  absl::Status GetShared(std::string_view key, std::string_view stored,
                         std::shared_ptr<const std::string>* shared, std::string* owned,
                         bool fill_cache = true);
  // Bytes [offset, offset + length) of the value (DB::GetRange): from the
  // cache when it holds the value; else, unless verify, by
  // SegmentReader::ReadValueRange (the whole record when it is compressed);
  // else by Get (with fill_cache).
  absl::Status GetRange(std::string_view key, std::string_view stored, uint64_t offset,
                        uint64_t length, bool verify, std::string* out, bool fill_cache = true);

  // The value behind stored (a pointer) when the value cache holds it, so
  // that reading it makes no device read; null otherwise, and for a pointer
  // that does not decode. Counts a hit as a read would; a miss is left to
  // the read that follows it, so that it is counted once.
  std::shared_ptr<const std::string> CachedValue(std::string_view stored);

  // An asynchronous reader of values for one iterator, with an io::ReadQueue
  // of its own (value_fetcher.cc). Value cache hits are served at Start;
  // with fill_cache false the values it reads are not put into the cache.
  // The ValueLog must outlive it.
  std::unique_ptr<ValueFetcher> NewFetcher(bool fill_cache = true);

  // Reads a fetcher still had in flight when its iterator went: kept here
  // so that the iterator need not wait for them (a scan's last prefetch
  // window is rarely all used), and freed once they complete (checked at
  // each NewFetcher; the destructor waits for the rest).
  class InFlightReads {
   public:
    virtual ~InFlightReads() = default;  // waits for the reads
    virtual bool Done() = 0;             // without blocking
  };
  void Retire(std::unique_ptr<InFlightReads> reads);

  // Opens the reader of every segment not obsolete and keeps it (a
  // read-only DB, whose files a writer may delete), and takes the size of
  // each unsealed one's file, which GetTotals and ActiveBytes then count:
  // the manifest records none, and a read-only DB has no active segment.
  // Errors: those of SegmentReader::Open, e.g. DataLoss naming a missing
  // file.
  absl::Status OpenEveryReader();
  // Closes the cached reader of a segment (before its file is deleted).
  void EvictReader(uint64_t segment_id) { readers_.Evict(segment_id); }

  // Applies an edit that the manifest now holds.
  absl::Status Apply(const vlog::SegmentEdit& edit);
  // The whole set as manifest extension records (a new manifest's snapshot).
  std::vector<vlog::ExtensionRecord> Snapshot() const { return set_.Snapshot(); }

  struct Totals {
    uint64_t segments = 0;
    uint64_t bytes = 0;          // on disk, the unsealed segments included
    uint64_t garbage_bytes = 0;  // counted by flushes and compactions
    uint64_t punched_bytes = 0;  // of the garbage, punched out (not on disk)
    uint64_t cache_hits = 0, cache_misses = 0;
    uint64_t cache_bytes = 0, cache_capacity = 0;
  };
  Totals GetTotals() const;
  // The active segment's bytes on disk (0 when none is active; for a
  // read-only DB, its unsealed segments' at open): one lock, where
  // GetTotals also sums the cache's shards. For the write path.
  uint64_t ActiveBytes() const;
  const vlog::SegmentSet& segment_set() const { return set_; }
  // The active segment's id -> (bytes, records); empty when none is active.
  // Not while writes run: the record count is the write leader's alone (for
  // the ledger at open and for tools).
  absl::flat_hash_map<uint64_t, std::pair<uint64_t, uint64_t>> ActiveSizes() const;
  // The active segment's id and bytes on disk; nullopt when none is
  // active. Any thread, while writes run.
  std::optional<std::pair<uint64_t, uint64_t>> ActiveSegment() const;

 private:
  friend class ValueLogFetcher;

  absl::Status RollSegment();
  vlog::SegmentWriterOptions WriterOptions() const;
  // NoteDirectRefused for writer's file when direct_writes was asked for
  // and the file system refused it.
  void NoteDirectFallback(vlog::SegmentWriter& writer);
  std::string SegmentPath(uint64_t id) const;
  // The end of the last whole record of an unsealed segment (scanned once
  // and remembered; recovery only).
  absl::StatusOr<uint64_t> UnsealedValidEnd(uint64_t id);

  io::FileSystem* const fs_;
  const std::string dbname_;
  const ValueLogOptions options_;
  const vlog::RecordEncoding encoding_;
  const EditLogger log_edit_;
  vlog::SegmentSet set_;
  // Segments the manifest records read at recovery added (until
  // FinishRecovery); the manifest is read before any other thread runs.
  absl::flat_hash_set<uint64_t> recovered_listed_;
  vlog::SegmentReaderCache readers_;
  vlog::ValueCache cache_;
  KeyOrderHints key_order_hints_;  // ValueFetcher::KnownInKeyOrder
  // Written only by the write leader; active_mu_ lets others read it.
  mutable absl::Mutex active_mu_;
  std::unique_ptr<vlog::SegmentWriter> active_;
  // The active segment's bytes the last Sync made durable (AddSyncedSize).
  struct SyncedSize {
    uint64_t segment_id = 0;
    uint64_t size = 0;
  };
  SyncedSize synced_ ABSL_GUARDED_BY(active_mu_);
  // A read-only DB's unsealed segments' file sizes at open
  // (OpenEveryReader), counted in place of an active segment's; they never
  // change for it.
  uint64_t unsealed_bytes_at_open_ ABSL_GUARDED_BY(active_mu_) = 0;
  absl::flat_hash_map<uint64_t, uint64_t> unsealed_valid_end_;  // recovery only
  absl::Mutex retired_mu_;
  std::vector<std::unique_ptr<InFlightReads>> retired_ ABSL_GUARDED_BY(retired_mu_);
  // NoteDirectRefused spoke. Atomic: the write leader, flushes and GC jobs
  // create segments concurrently.
  std::atomic<bool> noted_fallback_{false};
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_VALUE_LOG_H_
