// DBImpl ties the parts of cairn together: the write queue and WAL, the
// memtables, the versions of the LSM tree, the read path, and the background
// threads that flush and compact. The public contract is cairn/db.h; the
// design is docs/architecture.md.
//
// Files: db_open.cc (open, recovery, close), db_write.cc (write queue, group
// commit, memtable switch, stalls), db_read.cc (Get, MultiGet, iterators,
// snapshots), db_background.cc (flush, compaction scheduling, obsolete files),
// db_settle.cc (WaitForBackgroundWork), db_stats.cc (stats and properties),
// db_checkpoint.cc (checkpoints), db_updates.cc (the change feed, WAL
// retention, the ingestion event), db_threads.cc (starting the background
// threads, GC's priority). GC runs in core/gc_coordinator.h, which owns its
// state and reaches the DB only through GcDbAccess (core/gc_db_access.h),
// implemented here privately (db_gc.cc); core/space_ledger.h keeps the
// space figures.
//
// Thread safety: mu_ guards the mutable state below; the WAL is written by
// the write-group leader alone, outside mu_.
#ifndef CAIRN_CORE_DB_IMPL_H_
#define CAIRN_CORE_DB_IMPL_H_

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "cairn/db.h"
#include "cairn/listener.h"
#include "core/db_counters.h"
#include "core/db_records.h"
#include "core/expiry.h"
#include "core/file_deleter.h"
#include "core/garbage_meter.h"
#include "core/gc_coordinator.h"
#include "core/gc_db_access.h"
#include "core/info_log.h"
#include "core/retention.h"
#include "core/space_ledger.h"
#include "core/super_version.h"
#include "io/fd_budget.h"
#include "io/file_system.h"
#include "io/ring.h"
#include "lsm/block_cache.h"
#include "lsm/compaction.h"
#include "lsm/compaction_job.h"
#include "lsm/log_writer.h"
#include "lsm/memtable.h"
#include "lsm/read_counters.h"
#include "lsm/table_cache.h"
#include "lsm/version_set.h"
#include "vlog/value_log.h"

namespace cairn {

// The file system an entry point runs on: Options::file_system when set,
// else the real one of Options::io_backend.
absl::StatusOr<std::shared_ptr<io::FileSystem>> FileSystemFor(const Options& options);

// Opens a database on a given file system (tests pass in-memory and
// fault-injecting ones). DB::Open uses the real one of options.io_backend.
absl::StatusOr<std::unique_ptr<DB>> OpenWithFileSystem(const Options& options,
                                                       const std::string& path,
                                                       std::shared_ptr<io::FileSystem> fs);
// DB::OpenForReadOnly on a given file system (db_read_only.cc).
absl::StatusOr<std::unique_ptr<DB>> OpenForReadOnlyWithFileSystem(
    const Options& options, const std::string& path, std::shared_ptr<io::FileSystem> fs);
// DestroyDB on a given file system (db_destroy.cc).
absl::Status DestroyDBWithFileSystem(const std::string& path, io::FileSystem* fs);

class SnapshotImpl : public Snapshot {
 public:
  explicit SnapshotImpl(lsm::SequenceNumber seq) : sequence(seq) {}
  ~SnapshotImpl() override = default;
  uint64_t GetSequenceNumber() const override { return sequence; }
  const lsm::SequenceNumber sequence;
};

class DBImpl final : public DB, private GcDbAccess {
 public:
  DBImpl(const Options& options, std::string dbname, std::shared_ptr<io::FileSystem> fs,
         bool read_only = false);
  ~DBImpl() override;

  absl::Status Put(const WriteOptions& options, std::string_view key,
                   std::string_view value) override;
  absl::Status Delete(const WriteOptions& options, std::string_view key) override;
  absl::Status Write(const WriteOptions& options, const WriteBatch& batch) override;
  absl::Status Write(const WriteOptions& options, const WriteBatch& batch,
                     uint64_t* first_sequence) override;
  uint64_t GetLatestSequenceNumber() override;
  // db_updates.cc (the change feed, docs/replication.md)
  absl::StatusOr<std::unique_ptr<UpdateIterator>> GetUpdatesSince(
      uint64_t since, const UpdatesOptions& options) override;
  absl::Status Get(const ReadOptions& options, std::string_view key, std::string* value) override;
  // db_blob_read.cc
  absl::Status Get(const ReadOptions& options, std::string_view key, PinnableValue* value) override;
  absl::Status GetRange(const ReadOptions& options, std::string_view key, uint64_t offset,
                        uint64_t length, std::string* out) override;
  std::vector<absl::Status> MultiGet(const ReadOptions& options,
                                     const std::vector<std::string_view>& keys,
                                     std::vector<std::string>* values) override;
  std::unique_ptr<Iterator> NewIterator(const ReadOptions& options) override;
  const Snapshot* GetSnapshot() override;
  void ReleaseSnapshot(const Snapshot* snapshot) override;
  absl::Status Flush() override;
  absl::Status SyncWAL() override;
  absl::StatusOr<GcResult> RunGC() override;
  absl::Status CompactRange(const std::string* begin, const std::string* end) override;
  // db_ingest.cc
  absl::StatusOr<IngestResult> IngestExternalFiles(const std::vector<std::string>& dirs,
                                                   const IngestOptions& options) override;
  // Tests only: called by an ingestion at each step boundary it names
  // ("adopted", "tables", "logged"), so that a test can fail or crash there.
  std::function<absl::Status(std::string_view step)> ingest_step_for_testing;
  absl::Status WaitForBackgroundWork() override;
  absl::StatusOr<CheckpointResult> CreateCheckpoint(const std::string& dir) override;
  bool GetProperty(std::string_view name, std::string* value) override;
  Stats GetStats() override;
  // db_approximate.cc (issue 60)
  absl::Status GetApproximateSizes(const Range* ranges, int n, uint64_t* sizes,
                                   uint32_t flags) override;
  absl::StatusOr<uint64_t> GetApproximateKeyCount(const Range& range, uint32_t flags) override;
  struct RangeEstimate;
  absl::Status EstimateRange(const Range& range, RangeEstimate* out);
  absl::Status Close() override;

  // Opening: db_open.cc (db_read_only.cc for a read-only DB).
  absl::Status Recover();
  // Starts the flush, compaction and GC threads (db_threads.cc); the last
  // step of Recover. Returns once LOG says the GC threads' priority.
  void StartBackgroundThreads();
  // Writes the open's summary to the info log.
  void LogOpen(uint64_t micros);

  // Tests only: called by GC before each batch of pointer rewrites, after
  // the batch's liveness was checked (core/gc_test.cc). Set before any GC runs.
  std::function<void()> before_gc_rewrite_for_testing;
  // Tests only: called by Get into a PinnableValue and GetRange between the
  // lookup and the value read (core/retention_test.cc). Set before reads run.
  std::function<void()> after_value_lookup_for_testing;
  // Tests only: called by the flush thread once a flush's edit is logged,
  // before its memtable leaves the SuperVersion. Set before the first write.
  std::function<void()> after_flush_logged_for_testing;
  // Tests only: called by the flush thread before it writes each memtable
  // (outside the DB mutex). Set before the first write.
  std::function<void()> before_flush_for_testing;
  // Tests only: seconds added to the steady clock WAL retention ages WALs
  // by (WalClockSeconds), so that a test moves time on without sleeping.
  std::atomic<int64_t> wal_clock_shift_for_testing{0};
  // Tests only: the WALs kept for the feed below the log number.
  size_t retained_wals_for_testing() {
    absl::MutexLock l(&mu_);
    return retained_wals_.size();
  }
  // The hook DB::IngestExternalFiles calls (db_updates.cc): in the write
  // queue, alone, it takes the next sequence number, writes an ingestion
  // event naming files to the WAL (WAL format 7) and syncs it (with every
  // closed WAL before it), then calls install(sequence), which makes the
  // files visible at that sequence (the manifest edit), and only then
  // publishes the sequence to reads. No write runs meanwhile. When install
  // fails, writes stop (the WAL holds an event for files that are not in
  // the database) until a reopen. Returns the sequence.
  absl::StatusOr<lsm::SequenceNumber> LogIngestionEvent(
      const std::vector<std::string>& files,
      absl::FunctionRef<absl::Status(lsm::SequenceNumber)> install) ABSL_LOCKS_EXCLUDED(mu_);
  // Tests only: the records GC would drop without a lookup, in all.
  size_t dead_records_listed_for_testing() const { return gc_.dead_records_listed(); }
  // Tests only: the value log's segment set (its punched runs, say).
  const vlog::ValueLog* value_log_for_testing() const { return vlog_.get(); }
  // Tests only: closes every segment reader once its users are done, as a
  // reader cache that keeps nothing open would (core/gc_read_race_test.cc).
  void EvictSegmentReadersForTesting() {
    for (const vlog::SegmentInfo& info : vlog_->segment_set().Segments()) {
      vlog_->EvictReader(info.segment_id);
    }
  }
  // Tests only: the numbers of the tables a live version names.
  absl::flat_hash_set<uint64_t> LiveTablesForTesting() const {
    absl::flat_hash_set<uint64_t> live;
    versions_->AddLiveFiles(&live);
    return live;
  }
  // Tests only: the value log's segments as the DB knows them now.
  std::vector<vlog::SegmentInfo> ValueLogSegmentsForTesting() const {
    return vlog_->segment_set().Segments();
  }
  // Tests only: the value log's space amplification as GC and the write
  // throttle read it (with the estimate of what the memtables and L0 hide),
  // or counted garbage alone.
  double ValueLogSpaceAmplificationForTesting(bool with_estimate) {
    return GetValueLogSpace(with_estimate).amplification();
  }

 private:
  struct Writer;
  using ValueLogSpace = db_records::ValueLogSpace;
  using CollectedPointer = db_records::CollectedPointer;
  using LevelCompactionStats = db_records::LevelCompactionStats;
  using PendingVictims = db_records::PendingVictims;
  using PointerRewrite = GcPointerRewrite;
  friend class FeedIterator;
  // An ingestion's event as it waits in the write queue (LogIngestionEvent).
  struct IngestionEventWrite {
    const std::vector<std::string>* files;
    absl::FunctionRef<absl::Status(lsm::SequenceNumber)>* install;
    lsm::SequenceNumber sequence = 0;  // set by WriteIngestionEvent
  };
  // The write leader's part of LogIngestionEvent (db_updates.cc).
  absl::Status WriteIngestionEvent(IngestionEventWrite* ingestion)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  struct RetainedWal {
    uint64_t bytes = 0;
    int64_t obsolete_since = 0;  // WalClockSeconds()
  };
  struct ImmutableMemTable {
    std::shared_ptr<lsm::MemTable> mem;
    uint64_t log_number;  // the WAL holding its writes
    uint64_t value_bytes;  // value-log bytes its pointers name
    // Of value_bytes, the estimate for its deletions (the ledger's):
    // garbage at full weight, where pointers hide garbage at the yield.
    uint64_t deleted_bytes;
    // Its WAL, closed with an end record but not synced (null once a sync
    // covered it): the next sync syncs it first, and its flush makes it
    // obsolete without it ever being synced (docs/durability.md).
    std::shared_ptr<lsm::LogWriter> unsynced_log;
    lsm::SequenceNumber last_sequence = 0;  // its newest write's
    uint64_t flush_value_bytes = 0;  // values its flush will separate (in its WAL)
  };
  // What a read needs: the sequence it reads at and the SuperVersion it
  // reads through (taken without mu_, see super_version.h). Holding the
  // view holds the SuperVersion's read epoch: value-log segments collected
  // after the view was taken are not deleted until it is released.
  struct ReadView {
    lsm::SequenceNumber sequence = 0;
    SuperVersionRef sv;
    lsm::TableReadOptions table_read;
    // The time the view's reads measure expiry against (ExpiryClock).
    uint64_t now_micros = 0;
    // An iterator's view at a snapshot: the snapshot's sequence, held for
    // the iterator's life (the user may release the snapshot first).
    Retention::SequencePin pin;
    // The range tombstones of the view's memtables and tables (empty: none),
    // and the error loading the tables' ones, which every read through the
    // view returns.
    lsm::RangeTombstoneSet range_dels;
    absl::Status range_dels_status;
    // Whether an entry of key at seq is deleted by a range tombstone.
    bool Covered(std::string_view key, lsm::SequenceNumber seq) const {
      return !range_dels.empty() && range_dels.Covers(key, seq, sequence);
    }
  };
  // A table lookup's answer as the lookups give it: kDeletion when none or
  // when a range tombstone of the view covers it.
  static void TakeTableResult(const ReadView& view, std::string_view key,
                              lsm::TableGetResult&& result, lsm::ValueType* type,
                              std::string* stored);
  // The LSM half of Get into a PinnableValue and GetRange: checks the key,
  // counts the Get, and finds what the key stores (kDeletion when nothing)
  // through *view, which the caller holds until the value is read.
  absl::Status LookupForValueRead(const ReadOptions& options, std::string_view key, ReadView* view,
                                  lsm::ValueType* type, std::string* stored);

  // db_open.cc
  // VersionSet::LogAndApply with the value log's changes in the same edit;
  // serialized (see the definition).
  absl::Status LogAndApply(lsm::VersionEdit* edit, const vlog::SegmentEdit* segment_edit);
  // db_recover_wal.cc. What replaying one WAL found.
  struct LogReplay {
    lsm::SequenceNumber first_sequence = 0, last_sequence = 0;  // 0: no write
    bool cut_short = false;  // stopped at a torn record or a value never written whole
    uint64_t cut_offset = 0;
    std::string cut_reason;
    // Format 2, not the newest WAL: no end record, so a crash cut it before
    // any sync covered it (or a newer WAL), and replay stops here.
    bool unended = false;
    // Format 4 sync records: the highest synced sequence one names, where,
    // and the first saying the older WALs are durable whole.
    lsm::SequenceNumber synced_through = 0;
    uint64_t synced_offset = 0;
    std::optional<uint64_t> older_whole_offset;
  };
  absl::Status ReplayLog(uint64_t log_number, bool is_last_log, lsm::MemTable* mem,
                         lsm::SequenceNumber* max_sequence, LogReplay* replay);
  absl::Status ScanSyncRecords(uint64_t log_number, LogReplay* replay) const;  // nothing applied
  // Replay: a WAL may hold pointers into a segment GC collected and deleted
  // once the writes that superseded them were durable. Such a pointer is
  // applied unread if a later replayed write to its key supersedes it.
  // NoteCollectedPointer records or clears the key for each replayed entry
  // and returns true for such a pointer; CheckCollectedPointersSuperseded,
  // after the last WAL, is DataLoss when one is still its key's newest.
  bool NoteCollectedPointer(uint64_t log_number, lsm::SequenceNumber seq, lsm::ValueType type,
                            std::string_view key, std::string_view value);
  absl::Status CheckCollectedPointersSuperseded();
  // Recovery, after the manifest: every table and segment it lists exists
  // with at least its recorded size, the WAL it names exists, and, when it
  // ended in a torn record, no older SST or segment lost its record.
  absl::Status CheckRecoveredFiles(const std::vector<std::string>& names);
  // Recovery: sequence numbers run on from one replayed WAL to the next.
  absl::Status CheckLogContinuity(uint64_t previous_log, const LogReplay& previous, uint64_t log,
                                  const LogReplay& replay,
                                  lsm::SequenceNumber durable_sequence) const;
  // For recovery's errors: says the manifest ended in a dropped torn record.
  std::string TornManifestNote() const;
  absl::Status NewLog() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The closed WALs no sync has covered yet, oldest first: a sync of the
  // live WAL syncs them before it, so that no synced write follows an
  // unsynced one (MarkLogsSynced forgets them once it has).
  std::vector<std::shared_ptr<lsm::LogWriter>> UnsyncedClosedLogs() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MarkLogsSynced(absl::Span<const std::shared_ptr<lsm::LogWriter>> logs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The newest OPTIONS file's [format] section against this build's
  // (FailedPrecondition naming the file and key on a mismatch).
  absl::Status CheckNewestOptionsFile();
  // Recovery, up to the WALs: CURRENT and the manifest and the files it
  // lists (the caller checked the OPTIONS file first). Sets *names to the
  // directory's entries. Reads only.
  absl::Status RecoverManifest(std::vector<std::string>* names);
  // db_recover_wal.cc: replays the WALs from the manifest's log number on
  // (in names), oldest first, into *mem. With edit non-null a full memtable
  // goes to an L0 table recorded in *edit (garbage in *garbage); null keeps
  // all in memory (read-only). Sets *max_sequence to the last replayed.
  absl::Status ReplayLogs(const std::vector<std::string>& names,
                          std::shared_ptr<lsm::MemTable>* mem,
                          lsm::SequenceNumber* max_sequence, lsm::VersionEdit* edit,
                          GarbageMeter* garbage);
  // db_stats.cc: key and value bytes of the live entries, separated values
  // counted by their pointers' record sizes (nothing read from the value
  // log).
  absl::StatusOr<uint64_t> LiveBytesFromPointers();
  // db_read_only.cc: Recover for a read-only DB; writes nothing.
  absl::Status RecoverReadOnly();
  // FailedPrecondition when the DB is closed or (for what) read-only.
  absl::Status CheckWritable(std::string_view what) const;
  // FailedPrecondition when the DB is closed, or in a child of fork().
  absl::Status CheckNotClosed() const;

  // db_write.cc
  struct PreparedBatch;
  // In the writer's thread, before it queues, one pass over the batch:
  // checks it (InvalidArgument for an entry over the size limits or an
  // internal pointer; the batch's own error; DataLoss for a malformed
  // encoding), counts it, and encodes each value at or above the threshold
  // as its value-log record.
  absl::Status PrepareBatch(PreparedBatch* prepared) const;
  // Switches to a new memtable (for Flush) in the write queue's order.
  absl::Status SwitchMemTableInQueue();
  // Runs work (with mu_ held; it may release it) at the front of the
  // writer queue, alone: every later write waits until it returns. Its
  // status is the call's (after the background error's, checked first).
  absl::Status RunExclusiveInQueue(std::function<absl::Status()> work) ABSL_LOCKS_EXCLUDED(mu_);
  // GC's pointer rewrite, alone in its group; synced when sync.
  absl::Status WritePointerRewrite(const PointerRewrite& rewrite, bool sync) override;
  // Queues w and waits until it is done, leading a group when it reaches
  // the front.
  absl::Status WriteImpl(Writer* w) ABSL_LOCKS_EXCLUDED(mu_);
  // SyncWAL without its caller checks, for background work: a synced group
  // of no writes, covering every write before it.
  absl::Status SyncWalInQueue() ABSL_LOCKS_EXCLUDED(mu_);
  // The leader's work for a user write or a rewrite: picks the group, sets
  // *last_writer to its last member, and writes it (value log, WAL,
  // memtable), with mu_ released meanwhile. A failure is fail-stop.
  absl::Status WriteGroup(Writer* leader, Writer** last_writer)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status MakeRoomForWrite(bool force) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Delays a user write of bytes, before it joins the writer queue, while
  // GC is behind (gc::GcController::WriteDelay). Waiting before the queue
  // keeps it from holding up GC's rewrites, which queue there too.
  absl::Status WaitForValueLogSpace(uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One write's 1 ms delay (mu_ released meanwhile), counted as a stall.
  void SlowDownWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts a write's wait since start in the stall time and the longest wait.
  void RecordStall(std::chrono::steady_clock::time_point start);
  // The user writes at the front of the queue that go in one group (into
  // *members); returns the last one's writer.
  Writer* PickGroup(absl::InlinedVector<const PreparedBatch*, 8>* members)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Write leader only: places the members' prepared records in the value
  // log and builds *group from their entries, each separated value replaced
  // by its pointer.
  absl::Status PlaceGroup(absl::Span<const PreparedBatch* const> members, WriteBatch* group);
  // Write leader only: inserts group into mem and tells the ledger the
  // value-log bytes its pointers name (GC's rewrites apart), those of the
  // pointers in mem its entries supersede, its deletions and the records
  // its flush will write.
  absl::Status InsertGroup(lsm::MemTable* mem, const WriteBatch& group, bool gc_rewrite);
  // Write leader only: *record becomes the members' entries as the callers
  // gave them, values included (the WAL record of a synced group of small
  // values); the caller sets its sequence.
  static void BuildValuesRecord(absl::Span<const PreparedBatch* const> members,
                                WriteBatch* record);
  // Recovery: inserts a replayed WAL record into mem.
  absl::Status InsertInto(lsm::MemTable* mem, const WriteBatch& batch);

  // db_read.cc
  // A view for a read that ends before this thread reads again (Get,
  // MultiGet, a GC liveness batch) borrows the thread's cached SuperVersion;
  // owned = true takes a reference of its own (iterators). Takes no lock
  // unless a new SuperVersion was installed since this thread last read.
  // Callable with or without mu_ held.
  ReadView GetReadView(const ReadOptions& options, bool owned = false);
  // Publishes a SuperVersion built from mem_, imm_, the current version
  // and the read epoch (gc_.retention()). Called whenever any of them
  // changes, by the GC coordinator too (GcDbAccess).
  void InstallSuperVersionLocked() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a version change: the current SuperVersion's memtables and epoch
  // with the new version. A no-op before the first install (recovery).
  void InstallNewVersion() ABSL_LOCKS_EXCLUDED(sv_install_mu_);
  void InstallSuperVersion(std::unique_ptr<SuperVersion> sv)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sv_install_mu_);
  absl::Status GetFromView(const ReadView& view, std::string_view key, std::string* value);
  // Merges the view's memtables and tables.
  std::unique_ptr<lsm::InternalIterator> NewInternalIterator(const ReadView& view);
  // The table block each key's lookup would read first is read in one
  // batch into the block cache (LookupBatchInView's middle step), so
  // that the lookups after it do not wait for one device read each.
  // Nothing without a block cache or with fill_cache off.
  void ReadTableBlocksAhead(const ReadView& view, const std::vector<std::string_view>& keys);
  // The newest stored value of key in view; *type is kDeletion when none.
  absl::Status LookupInView(const ReadView& view, std::string_view key, lsm::ValueType* type,
                            std::string* stored);
  // A cursor for each memtable of one read view, for a run of lookups in
  // key order through it (lsm::MemTable::Cursor).
  struct MemTableCursors {
    explicit MemTableCursors(const SuperVersion& sv);
    lsm::MemTable::Cursor mem;
    std::unique_ptr<lsm::MemTable::Cursor[]> imm;  // one per sv.imm
  };
  // LookupInView's two halves: the memtables (false when none holds key;
  // *seq, when given, is the entry's sequence), then the version's tables.
  // With cursors (made for view's SuperVersion), each memtable's search
  // starts where the last one through them ended.
  static bool LookupInMemtables(const ReadView& view, std::string_view key, lsm::ValueType* type,
                                std::string* stored, lsm::SequenceNumber* seq = nullptr,
                                MemTableCursors* cursors = nullptr);
  absl::Status LookupInTables(const ReadView& view, std::string_view key, lsm::ValueType* type,
                              std::string* stored);
  // LookupInView for keys[i], each i of which in turn (in key order, so
  // that neighbours share cached blocks), for MultiGet and GC's liveness
  // checks: the memtables first; then the tables from the block cache
  // alone; the keys whose lookup needs a block the cache lacks then have
  // their blocks read in one batch (ReadTableBlocksAhead) and are looked
  // up in full. A warm cache thus costs one lookup per key, and a cold one
  // a device round trip per batch, not per key. (*statuses)[i] is each
  // lookup's status.
  void LookupBatchInView(const ReadView& view, absl::Span<const std::string_view> keys,
                         absl::Span<const uint32_t> which, std::vector<lsm::ValueType>* types,
                         std::vector<std::string>* stored, std::vector<absl::Status>* statuses);
  // An inline value as it is; a pointer through the value log (its value
  // put into the value cache when fill_cache: ReadOptions::fill_cache);
  // NotFound for a deletion.
  absl::Status ResolveStoredValue(std::string_view key, lsm::ValueType type,
                                  std::string_view stored, std::string* out, bool fill_cache);

  // db_background.cc
  // The sink that puts a new table's data blocks in the block cache
  // (Options::cache_new_table_blocks), or an empty one when the tables do
  // not fit in half the cache.
  lsm::TableBuilder::DataBlockSink NewTableBlockSink(uint64_t file_number);

  // db_ingest.cc (docs/ingestion.md, "What ingestion does")
  struct IngestPlan;
  // The ingestion's part at the front of the writer queue (writes wait):
  // empties the memtables (flushing them, or refusing), pauses compactions,
  // writes the key tables at the next sequence number and logs the one
  // manifest edit that adds them and the adopted segments.
  absl::Status IngestInQueue(IngestPlan* plan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the key table of plan->sources[i] into the database as table
  // number, every entry at sequence seq and every pointer renamed to the
  // adopted segment's number; fills *meta.
  absl::Status WriteIngestedTable(const IngestPlan& plan, size_t i, lsm::SequenceNumber seq,
                                  uint64_t number, lsm::FileMetaData* meta);
  // Calls ingest_step_for_testing, if set, at step.
  absl::Status IngestStep(std::string_view step) {
    return ingest_step_for_testing ? ingest_step_for_testing(step) : absl::OkStatus();
  }

  // db_gc.cc
  // *expiry_micros (may be null) is set to the expiry of an entry that
  // points at ptr.
  absl::StatusOr<bool> PointsAt(const ReadView& view, std::string_view key,
                                const vlog::ValuePointer& ptr, uint64_t* expiry_micros = nullptr);
  // True when mem is the SuperVersion's memtable or one of its immutable
  // ones.
  static bool HoldsMemTable(const SuperVersion& sv, const lsm::MemTable* mem);
  // As PointsAt, for a key seen pointing at ptr at base_sequence, from the
  // view's memtables alone. REQUIRES: HoldsMemTable(*view.sv, base_mem) of
  // the base's view.
  static bool StillPointsAt(const ReadView& view, lsm::SequenceNumber base_sequence,
                            std::string_view key, const vlog::ValuePointer& ptr,
                            MemTableCursors* cursors, uint64_t* expiry_micros);
  // CheckPointers' lookups in view; expiries (may be null) gets each
  // entry's expiry where it points at its pointer (0: none).
  absl::Status LookPointersUp(const ReadView& view, absl::Span<const std::string_view> keys,
                              absl::Span<const vlog::ValuePointer> pointers,
                              std::vector<bool>* live, std::vector<uint64_t>* expiries);
  // Each rewrite key's expiry where it points at its old pointer (0: none),
  // or kSkipRewrite where it no longer does, looked up in a fresh view.
  static constexpr uint64_t kSkipRewrite = UINT64_MAX;
  absl::Status FindRewriteExpiries(const PointerRewrite& rewrite, std::vector<uint64_t>* expiries);
  absl::Status BuildRewriteBatch(const PointerRewrite& rewrite, const ReadView& view,
                                 WriteBatch* batch);
  // Open, once the WALs are replayed into L0: counts as garbage every
  // segment byte that no LSM entry points at and the manifest does not
  // count (what a crash, an I/O error or an interrupted GC job left), from
  // a scan of every table (docs/gc.md, "The space ledger").
  absl::Status CountUnaccountedGarbage();
  // GcDbAccess, what the GC coordinator may ask of the DB
  // (core/gc_db_access.h states each; DB::Flush is its Flush too).
  absl::Status CheckPointers(absl::Span<const std::string_view> keys,
                             absl::Span<const vlog::ValuePointer> pointers,
                             const lsm::MemTable* unless_holding, std::vector<bool>* live,
                             GcReadBase* view, bool* looked) override;
  lsm::SequenceNumber LastSequence() override { return last_sequence_.load(); }
  lsm::SequenceNumber DurableSequence() override { return versions_->LastSequence(); }
  absl::Status SyncWal() override { return SyncWalInQueue(); }
  absl::Status SwitchMemTable() override { return SwitchMemTableInQueue(); }
  absl::Status SealActiveSegment() override { return SealActiveSegmentInQueue(); }
  void BeforeRewriteForTesting() override {
    if (before_gc_rewrite_for_testing) before_gc_rewrite_for_testing();
  }
  uint64_t NewFileNumber() override { return versions_->NewFileNumber(); }
  absl::Status LogAndApply(const vlog::SegmentEdit& edit) override {
    lsm::VersionEdit ve;
    return LogAndApply(&ve, &edit);
  }
  vlog::ValueLog& value_log() override { return *vlog_; }
  FileDeleter& deleter() override { return *deleter_; }
  InfoLog& info_log() override { return *info_log_; }
  bool ShuttingDownLocked() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return shutting_down_; }
  absl::Status BackgroundErrorLocked() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return bg_error_;
  }
  void SetBackgroundErrorLocked(const absl::Status& s) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    SetBackgroundError(s);
  }
  lsm::SequenceNumber OldestSnapshotLocked() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return OldestSnapshot();
  }
  MemTables MemTablesLocked() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t WalUnsyncedBytes() override {
    return wal_unsynced_bytes_.load(std::memory_order_relaxed);
  }
  // Waits on background_cv_ while busy() holds, re-asking at least every
  // 100 ms; the background error, or Aborted once the DB is closing
  // (db_settle.cc).
  absl::Status WaitWhileLocked(absl::FunctionRef<bool()> busy) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Value-log bytes on disk over the bytes not yet counted as garbage; every
  // segment on disk counts, obsolete ones awaiting deletion included (the
  // figure Stats reports).
  double ValueLogSpaceAmplification() const;
  // What GC steers by (the ledger's figure under mu_); uncounted is filled
  // only when with_estimate is set.
  ValueLogSpace GetValueLogSpace(bool with_estimate) ABSL_LOCKS_EXCLUDED(mu_);
  // What the ledger reads of the engine (core/space_ledger.h, Sources).
  SpaceLedger::Figures SpaceFiguresLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static SpaceLedger::Settings LedgerSettings(const Options& options);
  SpaceLedger::Sources LedgerSources();
  // Seals the active value-log segment through the writer queue, so that
  // GC may pick it (ValueLog::SealActiveSegment). A failure is the
  // background error.
  absl::Status SealActiveSegmentInQueue() ABSL_LOCKS_EXCLUDED(mu_);
  // A settle step: SpaceLedger::HiddenGarbageMayPass; false without GC.
  bool HiddenGarbageMayPass(double mark) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // db_stats.cc: the statistics to LOG every stats_dump_period_sec.
  void StatsDumpThread();

  // db_checkpoint.cc
  // Opens and closes a checkpoint built in dir, which settles its space
  // ledger (see the definition).
  absl::Status OpenCheckpointOnce(const std::string& dir);

  // db_background.cc
  void BackgroundThread();
  void CompactionThread();
  // Runs c (whose inputs are marked being compacted) and installs its result.
  absl::Status DoCompaction(const lsm::Compaction& c, std::shared_ptr<const lsm::Version> base)
      ABSL_LOCKS_EXCLUDED(mu_);
  bool NeedsCompaction() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // db_settle.cc
  // A settle step: flushes the memtable and compacts L0 into L1, so that
  // every pointer they hide below is counted as garbage.
  absl::Status CountHiddenGarbage() ABSL_LOCKS_EXCLUDED(mu_);
  // db_background.cc
  // Compacts the tables of level in [begin, end] (null: unbounded) into the
  // level below, one compaction after another, waiting for automatic ones
  // that hold its files. Releases mu_ while each runs.
  absl::Status CompactLevelLocked(int level, const std::string* begin, const std::string* end)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The most compaction-worthy job: PickCompaction's, else the compaction
  // NeedsGarbageCompaction asks for; null when neither.
  std::unique_ptr<lsm::Compaction> PickBackgroundCompaction(const lsm::Version& v)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdatePendingCompactionBytes() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FlushOldestImmutable() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes mem to a new L0 table (added to *edit), dropping versions no
  // snapshot needs; their pointers are reported to garbage.
  // *value_bytes, when given, receives the value-log bytes the table's
  // pointers name. With new_segment, values the write path left in the
  // memtable (Options::separate_at_flush_below) go to a new value-log
  // segment in key order and the table points to them; *new_segment then
  // gets its AddSegment and SealSegment (for the caller's edit, ahead of
  // the garbage counts). Without it they stay inline in the table. at_open:
  // the flush of replayed WALs, which keeps a few of them inline
  // (kMinFlushSegmentBytes). *gc_value_bytes: of *value_bytes, the bytes
  // named by pointers into GC's output segments (GC's rewrites, which hide
  // no garbage below them).
  // *foresee (engaged): the table's keys, but GC's rewrites', for
  // FindShadowedRecords; reset under a snapshot or past kMaxFlushedKeys.
  absl::Status WriteLevel0Table(lsm::MemTable* mem, lsm::VersionEdit* edit,
                                GarbageMeter* garbage,
                                uint64_t* value_bytes = nullptr,
                                vlog::SegmentEdit* new_segment = nullptr, bool at_open = false,
                                uint64_t* deletions = nullptr, uint64_t* gc_value_bytes = nullptr,
                                std::optional<std::vector<FlushedKey>>* foresee = nullptr);
  // at_open: LOG names each file removed (what an earlier session left).
  void RemoveObsoleteFiles(bool at_open = false) ABSL_LOCKS_EXCLUDED(mu_);
  // db_updates.cc. Of the obsolete WALs (below every log recovery needs),
  // the ones WAL retention and the feed's pins let go, oldest first; keeps
  // the rest in retained_wals_ and sets the retention floor.
  std::vector<uint64_t> TakeDeletableWals(const std::vector<uint64_t>& obsolete)
      ABSL_LOCKS_EXCLUDED(mu_);
  void UpdateWalFloorLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool WalRetentionOn() const {
    return options_.wal_ttl_seconds > 0 || options_.wal_size_limit_bytes > 0;
  }
  int64_t WalClockSeconds() const;
  // The first sequence a WAL holds (its first write or ingestion event),
  // read from the file when not known; nullopt when it holds none.
  absl::StatusOr<std::optional<lsm::SequenceNumber>> WalFirstSequence(uint64_t log_number)
      ABSL_LOCKS_EXCLUDED(mu_);
  void PinFeedLog(uint64_t log_number) ABSL_LOCKS_EXCLUDED(mu_);
  void UnpinFeedLog(uint64_t log_number) ABSL_LOCKS_EXCLUDED(mu_);
  // Resolves a WAL record into a feed item (values read from the value log).
  absl::Status RecordToUpdate(std::string_view record, uint32_t format_version,
                              const UpdatesOptions& options, Update* out, bool* is_item);
  void SetBackgroundError(const absl::Status& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Logs and tells the listeners when the write stall condition changes.
  void SetStallCondition(StallCondition condition, std::string_view cause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls fn(listener) for every Options::listeners entry.
  template <typename Fn>
  void NotifyListeners(Fn fn) const {
    for (const auto& listener : options_.listeners) fn(*listener);
  }
  lsm::SequenceNumber OldestSnapshot() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  const std::string dbname_;
  ExpiryClock expiry_clock_{options_.clock};
  // Whether the LSM may hold an expiring entry: set once a write, a WAL
  // replay or an opened table brings one (or Options::default_ttl_seconds
  // is set); until then GC's rewrites look for no expiry.
  std::atomic<bool> expiring_entries_seen_{options_.default_ttl_seconds != 0};
  const std::shared_ptr<io::FileSystem> fs_;
  std::unique_ptr<io::FileLock> lock_;
  // A read-only DB's shared hold on LOCK (FileSystem::LockFileShared): while
  // any reader holds one, a writer in another process punches no hole, as
  // this view may read records the writer has since counted dead.
  std::unique_ptr<io::FileLock> reader_lock_;
  // LOG in the database directory (set up once the LOCK is held).
  std::unique_ptr<InfoLog> info_log_;
  // Removes obsolete files off the threads that made them so (declared
  // after fs_ and info_log_, which it uses, so it goes first).
  std::unique_ptr<FileDeleter> deleter_;
  lsm::TableOptions table_options_;
  lsm::ReadCounters read_counters_;
  std::unique_ptr<lsm::BlockCache> block_cache_;
  std::shared_ptr<io::FdBudget> fd_budget_;  // the tables' and segment readers' (FdBudgetLimit)
  std::unique_ptr<lsm::TableCache> table_cache_;
  std::unique_ptr<lsm::VersionSet> versions_;
  std::unique_ptr<vlog::ValueLog> vlog_;
  absl::Mutex manifest_mu_ ABSL_ACQUIRED_AFTER(mu_);
  // Serializes building and installing SuperVersions, so that an install
  // for a new version never undoes a memtable switch installed meanwhile.
  absl::Mutex sv_install_mu_ ABSL_ACQUIRED_AFTER(mu_, manifest_mu_);
  // Declared after versions_ and table_cache_: destroyed before them.
  SuperVersionCache sv_cache_;

  // The memtables' arena blocks, reused from one memtable to the next
  // (lsm/arena.h): at most one memtable's worth is kept. Set before any
  // memtable exists; NewMemTable reads it.
  std::shared_ptr<lsm::ArenaBlockPool> arena_pool_;
  std::shared_ptr<lsm::MemTable> NewMemTable() const {
    return std::make_shared<lsm::MemTable>(options_.memtable_size, arena_pool_);
  }

  absl::Mutex mu_;
  absl::CondVar background_cv_;  // signalled when background work finishes or is queued
  std::shared_ptr<lsm::MemTable> mem_ ABSL_GUARDED_BY(mu_);
  std::deque<ImmutableMemTable> imm_ ABSL_GUARDED_BY(mu_);  // oldest first
  std::unique_ptr<lsm::LogWriter> log_ ABSL_GUARDED_BY(mu_);
  uint64_t log_number_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Writer*> writers_ ABSL_GUARDED_BY(mu_);
  // The write group's batch; used only by the current write leader.
  WriteBatch group_batch_;
  // The WAL record of a synced group that carries its values; write leader only.
  WriteBatch wal_values_batch_;
  // Some WAL record written since the value log was last synced points
  // into the value log (so a WAL sync must sync the value log too). Write
  // leader only (NewLog runs in the leader's MakeRoomForWrite).
  bool wal_names_unsynced_values_ = false;
  // Durable by a WAL sync or the open's flush: a switch's sync record.
  lsm::SequenceNumber wal_synced_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> wal_unsynced_bytes_{0};  // since the last sync (at most)
  // Numbers of files being written that are not yet in a version.
  absl::flat_hash_set<uint64_t> pending_outputs_ ABSL_GUARDED_BY(mu_);
  // Highest sequence number visible to readers.
  std::atomic<lsm::SequenceNumber> last_sequence_{0};
  std::multiset<lsm::SequenceNumber> snapshots_ ABSL_GUARDED_BY(mu_);
  // The change feed (db_updates.cc). WALs below the manifest's log number
  // kept by Options::wal_ttl_seconds / wal_size_limit_bytes, with their
  // sizes and when this process saw them become obsolete; the first
  // sequence each WAL can hold, where known; the WALs feed iterators read
  // (each pins its lowest log number: no WAL from it on is deleted).
  std::map<uint64_t, RetainedWal> retained_wals_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, lsm::SequenceNumber> wal_first_sequence_ ABSL_GUARDED_BY(mu_);
  std::multiset<uint64_t> feed_pins_ ABSL_GUARDED_BY(mu_);
  // The snapshots handed out and not yet released, so that a second release
  // (or a foreign pointer) is recognised rather than freed again.
  // As the base type: a released pointer is compared, never cast (a cast
  // to SnapshotImpl reads the freed object's vtable under UBSan).
  absl::flat_hash_set<const Snapshot*> live_snapshots_ ABSL_GUARDED_BY(mu_);
  // Replay only (one thread, before any other runs): the keys whose newest
  // replayed write is a pointer into a collected segment, with where it was.
  absl::flat_hash_map<std::string, CollectedPointer> replay_collected_;
  absl::Status bg_error_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool flush_running_ ABSL_GUARDED_BY(mu_) = false;
  // A memtable switch is between its unlock and relock (NewLog syncs the
  // new WAL without mu_): WaitForBackgroundWork waits it out, so that it
  // never sees the full memtable the switch is about to queue as settled.
  bool switch_running_ ABSL_GUARDED_BY(mu_) = false;
  int compactions_running_ ABSL_GUARDED_BY(mu_) = 0;
  int manual_compactions_ ABSL_GUARDED_BY(mu_) = 0;  // CompactRange calls in progress
  // An ingestion is choosing levels and logging its edit: no compaction
  // starts meanwhile (one running could install outputs over its tables).
  bool ingest_running_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t pending_compaction_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  lsm::CompactionOptions compaction_options_;
  std::array<LevelCompactionStats, lsm::kNumLevels> level_stats_ ABSL_GUARDED_BY(mu_);
  // The space figures between the manifest's counts: what the memtables and
  // L0 name and hide, the yield, GC's copies (core/space_ledger.h). Its
  // events and questions run under mu_, but the write leader's counts.
  SpaceLedger ledger_;
  // Whether the last user write found the value log past the slowdown mark.
  bool write_delayed_ ABSL_GUARDED_BY(mu_) = false;
  StallCondition stall_condition_ ABSL_GUARDED_BY(mu_) = StallCondition::kNormal;
  std::vector<std::thread> background_threads_;
  // Set once Recover has made the recovered state durable; until then the
  // destructor deletes and writes nothing. Never set on a read-only DB.
  bool recovered_ = false;
  const bool read_only_;
  // Set by the first Close; every later call but ReleaseSnapshot refuses.
  std::atomic<bool> closed_{false};
  // io::ForkGeneration() at open: a child of fork() is refused every call.
  const uint64_t fork_generation_ = io::ForkGeneration();
  absl::Mutex close_mu_;
  absl::Status close_status_ ABSL_GUARDED_BY(close_mu_);

  // Garbage collection: its jobs, victims, punched runs, retention and
  // controller (core/gc_coordinator.h). Declared after everything it is
  // handed (options_, dbname_, fs_, ledger_, mu_, background_cv_).
  GcCoordinator gc_;
  // Counters for GetStats.
  UserCounters counters_;
};

}  // namespace cairn

#endif  // CAIRN_CORE_DB_IMPL_H_
