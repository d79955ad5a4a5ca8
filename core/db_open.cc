// Opening a database: checking options (core/options_validation.h), taking
// the LOCK, creating or recovering the manifest, replaying the WALs, and
// closing.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/base/call_once.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/db_impl.h"
#include "core/options_file.h"
#include "core/options_validation.h"
#include "io/status_macros.h"
#include "lsm/filename.h"
#include "lsm/log_writer.h"
#include "vlog/value_pointer.h"

namespace cairn {

using lsm::FileType;
using lsm::SequenceNumber;

namespace {

// A writer that switches WALs, flushes or compacts while the open reads
// creates or deletes files; the open then retries on a fresh DBImpl, at
// most this many times in all.
constexpr int kReadOnlyOpenAttempts = 10;

absl::StatusOr<std::vector<std::string>> SortedNames(io::FileSystem* fs, const std::string& dir) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, fs->ListDir(dir));
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

absl::StatusOr<std::shared_ptr<io::FileSystem>> FileSystemFor(const Options& options) {
  if (options.file_system != nullptr) return options.file_system;
  io::IoBackend backend = io::IoBackend::kAuto;
  switch (options.io_backend) {
    case IoBackendOption::kUring: backend = io::IoBackend::kUring; break;
    case IoBackendOption::kPosix: backend = io::IoBackend::kPosix; break;
    case IoBackendOption::kAuto: break;
  }
  return io::NewFileSystem(backend);
}

absl::StatusOr<std::unique_ptr<DB>> DB::Open(const Options& options, const std::string& path) {
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<io::FileSystem> fs, FileSystemFor(options));
  return OpenWithFileSystem(options, path, std::move(fs));
}

absl::StatusOr<std::unique_ptr<DB>> OpenWithFileSystem(const Options& options,
                                                       const std::string& path,
                                                       std::shared_ptr<io::FileSystem> fs) {
  CAIRN_RETURN_IF_ERROR(ValidateOptions(options));
  if (path.empty()) return absl::InvalidArgumentError("DB::Open: empty path");
  auto db = std::make_unique<DBImpl>(options, path, std::move(fs));
  const auto start = std::chrono::steady_clock::now();
  CAIRN_RETURN_IF_ERROR(db->Recover());
  db->LogOpen(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::steady_clock::now() - start)
                                        .count()));
  return db;
}

absl::StatusOr<std::unique_ptr<DB>> DB::OpenForReadOnly(const Options& options,
                                                        const std::string& path) {
  // The backend's own setup (a ring) touches no file of the database.
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<io::FileSystem> fs, FileSystemFor(options));
  return OpenForReadOnlyWithFileSystem(options, path, std::move(fs));
}

absl::StatusOr<std::unique_ptr<DB>> OpenForReadOnlyWithFileSystem(
    const Options& options, const std::string& path, std::shared_ptr<io::FileSystem> fs) {
  CAIRN_RETURN_IF_ERROR(ValidateOptions(options));
  if (path.empty()) return absl::InvalidArgumentError("DB::OpenForReadOnly: empty path");
  absl::Status last;
  for (int attempt = 0; attempt < kReadOnlyOpenAttempts; ++attempt) {
    if (attempt > 0) absl::SleepFor(absl::Milliseconds(5 * attempt));
    // The files are listed before and after: when the set is the same, no
    // file was created or deleted while recovery read them, so the manifest,
    // the tables and the WALs it read belong together (WALs only grow).
    absl::StatusOr<std::vector<std::string>> before = SortedNames(fs.get(), path);
    auto db = std::make_unique<DBImpl>(options, path, fs, /*read_only=*/true);
    absl::Status s = db->Recover();
    if (!before.ok()) return s.ok() ? before.status() : s;
    absl::StatusOr<std::vector<std::string>> after = SortedNames(fs.get(), path);
    const bool unchanged = after.ok() && *after == *before;
    if (unchanged && s.ok()) return db;
    // Refusals about the database as a whole (no database, a newer format)
    // do not change by waiting. Anything else may be a writer caught half
    // way, e.g. a manifest record being appended that names a table
    // already on disk: it is tried again, and reported if it stays.
    if (!s.ok() && (absl::IsFailedPrecondition(s) || absl::IsInvalidArgument(s) ||
                    !fs->FileExists(lsm::CurrentFileName(path)))) {
      return s;
    }
    last = s.ok() ? absl::UnavailableError("files changed during the open") : s;
    if (unchanged && attempt + 1 == kReadOnlyOpenAttempts) return s;
  }
  return absl::Status(last.code(),
                      absl::StrCat(path, ": a read-only open failed ", kReadOnlyOpenAttempts,
                                   " times while the database's files changed (a busy writer?); "
                                   "last: ",
                                   last.message()));
}

namespace {

// Debian's abseil is built without NDEBUG, so every absl::Mutex::Lock
// records lock order in a global graph to find deadlock cycles (a debug
// aid). That cost a 1 KiB load 15-30% of its throughput. A release build of
// cairn turns it off once per process, at the first open; a debug build
// (the sanitizer presets) keeps it. docs/decisions/20261201_absl_deadlock_detection.md.
void TurnOffMutexDeadlockDetectionInReleaseBuilds() {
#ifdef NDEBUG
  static absl::once_flag once;
  absl::call_once(once, [] {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  });
#endif
}

// Value-log segment readers a read-write DB keeps open: as many as the table
// cache keeps tables (1000), or a quarter of the process's file-descriptor
// limit where that is less (at least 64), so that the tables, the WALs and
// the application keep the rest. A read after its segment's reader was
// closed opens the file again.
size_t MaxOpenSegments() {
  constexpr size_t kMost = vlog::SegmentReaderCache::kDefaultMaxOpen;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kMost;
  return std::clamp<size_t>(static_cast<size_t>(limit.rlim_cur) / 4, 64, kMost);
}

// Descriptors the open tables and segment readers may hold together,
// including those reads hold past either cache's bound: half the process's
// file-descriptor limit (at least 32), as RocksDB's max_open_files is one
// number, so that the WALs, the manifest, the files being written and the
// application keep the other half. Past it a read closes idle files, then
// waits or fails with ResourceExhausted; writes are not starved
// (docs/decisions/20261207_fd_budget.md). No limit: no budget to speak of.
size_t FdBudgetLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return std::numeric_limits<size_t>::max();
  }
  return std::max<size_t>(static_cast<size_t>(limit.rlim_cur) / 2, 32);
}

}  // namespace

DBImpl::DBImpl(const Options& options, std::string dbname, std::shared_ptr<io::FileSystem> fs,
               bool read_only)
    : options_(options),
      dbname_(std::move(dbname)),
      fs_(std::move(fs)),
      ledger_(LedgerSettings(options), LedgerSources()),
      read_only_(read_only),
      gc_(this, options_, dbname_, fs_.get(), &ledger_, &mu_, &background_cv_) {
  TurnOffMutexDeadlockDetectionInReleaseBuilds();
  deleter_ = std::make_unique<FileDeleter>(
      fs_.get(), [this](const std::string& path, const absl::Status& s) {
        // The file stays; nothing references it, and the next open removes it.
        if (info_log_ != nullptr) info_log_->Log("could not remove %s: %s", path, s.ToString());
      });
  arena_pool_ = std::make_shared<lsm::ArenaBlockPool>(
      lsm::MemTable::ArenaBlockSize(options_.memtable_size), options_.memtable_size);
  table_options_.block_size = options_.block_size;
  table_options_.bloom_bits_per_key = options_.bloom_bits_per_key;
  table_options_.compress = options_.compression == Compression::kZstd;
  table_options_.direct_reads = options_.direct_reads;
  // Tables record the value-log bytes their pointers name, for
  // GetApproximateSizes (property tag 9, 2026-12-07).
  table_options_.value_pointer_bytes = [](std::string_view pointer) -> uint64_t {
    absl::StatusOr<vlog::ValuePointer> p = vlog::DecodeValuePointer(pointer);
    return p.ok() ? p->size : 0;
  };
  table_options_.on_expiring_table = [this] {
    expiring_entries_seen_.store(true, std::memory_order_relaxed);
  };
  // Enough for the hash lists of a flush and two subcompactions' tables of
  // about a quarter million keys each, or one of two million.
  table_options_.bloom_hash_pool = std::make_shared<lsm::BloomHashPool>(size_t{16} << 20);
  // One budget for blocks and values, unless either kind asks for a cache
  // of its own (options.h).
  auto shared_cache = std::make_shared<io::Cache>(options_.cache_size);
  block_cache_ = options_.block_cache_size > 0
                     ? std::make_unique<lsm::BlockCache>(options_.block_cache_size)
                     : std::make_unique<lsm::BlockCache>(shared_cache);
  // A read-only DB bounds its open files as a read-write one does: its view
  // of a database of more files than the budget could not stay open whole
  // (RecoverReadOnly says what a writer's deletions then cost it).
  fd_budget_ = std::make_shared<io::FdBudget>(FdBudgetLimit());
  table_cache_ = std::make_unique<lsm::TableCache>(fs_.get(), dbname_, table_options_,
                                                   block_cache_.get(), &read_counters_,
                                                   size_t{1000}, fd_budget_);
  versions_ = std::make_unique<lsm::VersionSet>(fs_.get(), dbname_);
  info_log_ = InfoLog::Open(fs_.get(), dbname_, /*max_size=*/0);  // the real one once locked
  compaction_options_.level0_trigger = options_.level0_compaction_trigger;
  compaction_options_.multiplier = options_.level_size_multiplier;
  compaction_options_.target_file_size = options_.target_file_size;
  // The value log exists in every mode, so a database written with
  // separation still reads in inline mode; only Append creates files.
  vlog::ValueLogOptions vo;
  vo.segment_size = options_.value_log_segment_size;
  vo.compress = options_.value_compression == Compression::kZstd;
  vo.direct_reads = options_.direct_reads;
  vo.direct_writes = options_.direct_writes;
  vo.writeback_bytes = options_.value_log_bytes_per_sync;
  // info_log_ is replaced once the database is locked; the note reads it then.
  vo.note = [this](const std::string& note) { info_log_->Log("%s", note); };
  vo.value_cache_size = options_.value_cache_size;
  vo.max_open_segments = MaxOpenSegments();
  vo.fd_budget = fd_budget_;
  vo.shared_cache = std::move(shared_cache);
  vo.segment_path = [d = dbname_](uint64_t id) { return lsm::ValueLogFileName(d, id); };
  vo.parse_segment_name = [](std::string_view name, uint64_t* id) {
    lsm::FileType type;
    return lsm::ParseFileName(name, id, &type) && type == lsm::FileType::kValueLog;
  };
  vo.new_file_number = [this] { return versions_->NewFileNumber(); };
  vlog_ = std::make_unique<vlog::ValueLog>(
      fs_.get(), dbname_, std::move(vo), [this](const vlog::SegmentEdit& e) {
        lsm::VersionEdit edit;
        return LogAndApply(&edit, &e);
      });
  versions_->SetExtensionSnapshotter([this] { return vlog_->Snapshot(); });
}

absl::Status DBImpl::LogAndApply(lsm::VersionEdit* edit, const vlog::SegmentEdit* segment_edit) {
  // One at a time, and the value log's in-memory set is updated before the
  // next edit, so a new manifest's snapshot never misses a logged edit.
  absl::MutexLock l(&manifest_mu_);
  if (segment_edit != nullptr) {
    for (auto& [tag, payload] : segment_edit->Encode()) edit->AddExtension(tag, payload);
  }
  CAIRN_RETURN_IF_ERROR(versions_->LogAndApply(edit));
  // Readers see the new version from their next read on.
  InstallNewVersion();
  if (segment_edit == nullptr) return absl::OkStatus();
  CAIRN_RETURN_IF_ERROR(vlog_->Apply(*segment_edit));
  for (const vlog::SegmentEdit::Change& c : segment_edit->changes()) {
    if (c.tag == vlog::SegmentEditTag::kAddGarbage && c.bytes > 0) {
      gc_.GarbageReported();
      break;
    }
  }
  return absl::OkStatus();
}

void DBImpl::LogOpen(uint64_t micros) {
  const std::shared_ptr<const lsm::Version> v = versions_->current();
  std::string levels;
  for (int level = 0; level < lsm::kNumLevels; ++level) {
    absl::StrAppend(&levels, level == 0 ? "" : " ", v->NumFiles(level));
  }
  const vlog::ValueLog::Totals vlog = vlog_->GetTotals();
  info_log_->Log(
      "open: done in %d us; last sequence %d, WAL %06d, manifest %06d; tables per level [%s]; "
      "%d value-log segments, %d bytes (%d garbage); %d garbage bytes recounted",
      micros, last_sequence_.load(), versions_->LogNumber(), versions_->ManifestFileNumber(),
      levels, vlog.segments, vlog.bytes, vlog.garbage_bytes,
      gc_.counters().leaked_bytes_recounted.load());
}

DBImpl::~DBImpl() { Close().IgnoreError(); }

absl::Status DBImpl::CheckNotClosed() const {
  if (fork_generation_ != io::ForkGeneration()) {
    return absl::FailedPreconditionError(absl::StrCat(
        dbname_, ": opened by this process's parent before fork(); a child must open databases "
        "of its own (docs/durability.md, \"fork()\")"));
  }
  if (closed_.load(std::memory_order_acquire)) {
    return absl::FailedPreconditionError(absl::StrCat(dbname_, ": the database is closed"));
  }
  return absl::OkStatus();
}

absl::Status DBImpl::CheckWritable(std::string_view what) const {
  CAIRN_RETURN_IF_ERROR(CheckNotClosed());
  if (read_only_) {
    return absl::FailedPreconditionError(
        absl::StrCat(dbname_, ": ", absl::string_view(what.data(), what.size()),
                     " refused: the database is open read-only"));
  }
  return absl::OkStatus();
}

absl::Status DBImpl::Close() {
  // In a child of fork() the parent's threads, locks and files are not this
  // process's to stop, take or write: nothing is touched.
  if (fork_generation_ != io::ForkGeneration()) return CheckNotClosed();
  absl::MutexLock close_lock(&close_mu_);
  if (closed_.exchange(true, std::memory_order_acq_rel)) return close_status_;
  {
    absl::MutexLock l(&mu_);
    shutting_down_ = true;
    background_cv_.SignalAll();
  }
  for (auto& t : background_threads_) t.join();
  background_threads_.clear();
  absl::Status status;
  // A failed open (and a read-only DB) deletes and writes nothing: the
  // version it read may be missing what the files on disk hold (that may be
  // why it failed).
  if (recovered_) {
    // Victims of background GC waiting for their rewrites' durability: a
    // sync makes them durable, and they are marked obsolete, so that the
    // close leaves no segment that nothing references and nothing counts.
    status = gc_.ReleasePendingVictims(GcCoordinator::VictimRelease::kNow);
    if (status.ok()) gc_.DeleteObsoleteSegments();
    // Tables a reader or a compaction still held when they became obsolete
    // go now rather than at the next open.
    RemoveObsoleteFiles();
  }
  // Every file queued for removal is gone while the LOCK is still held.
  deleter_->WaitIdle();
  absl::MutexLock l(&mu_);
  // Never released; live, so the cast is safe.
  for (const Snapshot* snapshot : live_snapshots_) delete static_cast<const SnapshotImpl*>(snapshot);
  live_snapshots_.clear();
  if (!recovered_) return close_status_ = status;
  if (!bg_error_.ok()) {
    // Writes stopped at the failure; what is on disk is what the crash rules
    // recover, and the caller should know.
    status = bg_error_;
  } else if (log_ != nullptr && last_sequence_.load() > versions_->LoggedLastSequence()) {
    // A clean close makes what it leaves verifiable: the WAL and the values
    // are synced and the manifest records the last sequence, so damage to
    // either later fails the open (replay ends short of that sequence)
    // instead of reading as a torn tail. The active segment stays unsealed:
    // the next open continues it (docs/gc.md, "Segments that outlive a
    // session"). A failure leaves the crash rules in force.
    status = vlog_->Sync();
    const std::vector<std::shared_ptr<lsm::LogWriter>> closed = UnsyncedClosedLogs();
    for (const std::shared_ptr<lsm::LogWriter>& log : closed) {
      if (status.ok()) status = log->Sync();
    }
    if (status.ok()) status = log_->Sync();
    if (status.ok()) {
      MarkLogsSynced(closed);
      versions_->SetLastSequence(last_sequence_.load());
      lsm::VersionEdit edit;
      vlog::SegmentEdit synced;
      vlog_->AddSyncedSize(&synced);
      status = LogAndApply(&edit, synced.empty() ? nullptr : &synced);
    }
  }
  if (log_ != nullptr) {
    // Every acknowledged write already reached the kernel; closing adds
    // nothing a crash could lose, but a failure is still reported.
    absl::Status closed = log_->Close();
    if (status.ok()) status = closed;
  }
  return close_status_ = status;
}

absl::Status DBImpl::Recover() {
  if (read_only_) return RecoverReadOnly();
  if (!fs_->FileExists(dbname_)) {
    if (!options_.create_if_missing) {
      return absl::NotFoundError(absl::StrCat(dbname_, ": does not exist (create_if_missing is false)"));
    }
  }
  if (absl::Status made = fs_->CreateDir(dbname_); !made.ok()) {
    // mkdir says only "exists" when something other than a directory is
    // there; say what it is.
    if (!absl::IsAlreadyExists(made)) return made;
    absl::StatusOr<uint64_t> size = fs_->GetFileSize(dbname_);
    return absl::FailedPreconditionError(
        size.ok() ? absl::StrCat(dbname_, ": is a file (", *size,
                                 " bytes), not a directory; a database is a directory")
                  : absl::StrCat(dbname_, ": is not a directory (", made.message(), ")"));
  }
  const bool exists = fs_->FileExists(lsm::CurrentFileName(dbname_));
  // Without CURRENT, the debris of an interrupted creation (the first
  // manifest, a temporary CURRENT): CURRENT is written last, so a database
  // never existed here.
  std::vector<std::string> debris;
  if (!exists) {
    // Never write into a directory that holds something other than a cairn
    // database.
    CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(dbname_));
    for (const std::string& name : names) {
      uint64_t number;
      FileType type;
      if (name == "LOG" || absl::StartsWith(name, "LOG.old.")) continue;  // the info log
      if (lsm::ParseFileName(name, &number, &type)) {
        if (type == FileType::kLock) continue;
        if (type == FileType::kTemp || (type == FileType::kManifest && number == 1)) {
          debris.push_back(name);
          continue;
        }
      }
      return absl::FailedPreconditionError(absl::StrCat(
          dbname_, ": not a cairn database (no CURRENT file) and not empty: holds ", name));
    }
  }
  CAIRN_ASSIGN_OR_RETURN(lock_, fs_->LockFile(lsm::LockFileName(dbname_)));
  // A database of a newer format is refused before anything is written,
  // the info log's rotation included.
  if (exists) CAIRN_RETURN_IF_ERROR(CheckNewestOptionsFile());
  info_log_ = InfoLog::Open(fs_.get(), dbname_, options_.max_info_log_size);
  info_log_->Log("open: %s on %s (%s)", dbname_, fs_->Name(),
                 exists ? "recovering the database" : "creating a database");
  if (!exists) {
    if (!options_.create_if_missing) {
      return absl::NotFoundError(absl::StrCat(dbname_, ": no database (create_if_missing is false)"));
    }
    for (const std::string& name : debris) {
      CAIRN_RETURN_IF_ERROR(fs_->RemoveFile(io::JoinPath(dbname_, name)));
    }
    if (!debris.empty()) CAIRN_RETURN_IF_ERROR(fs_->SyncDir(dbname_));
    CAIRN_RETURN_IF_ERROR(versions_->CreateNew());
  } else if (options_.error_if_exists) {
    return absl::AlreadyExistsError(absl::StrCat(dbname_, ": database exists (error_if_exists)"));
  }

  std::vector<std::string> names;
  CAIRN_RETURN_IF_ERROR(RecoverManifest(&names));
  SequenceNumber max_sequence = 0;
  lsm::VersionEdit edit;
  GarbageMeter garbage;
  std::shared_ptr<lsm::MemTable> mem;
  CAIRN_RETURN_IF_ERROR(ReplayLogs(names, &mem, &max_sequence, &edit, &garbage));
  // Values the WALs carried go to new segments here too; the edit below
  // adds them with the tables (FinishRecovery knows them from it).
  if (!mem->empty()) {
    CAIRN_RETURN_IF_ERROR(
        WriteLevel0Table(mem.get(), &edit, &garbage, nullptr, garbage.mutable_edit(),
                         /*at_open=*/true));
  }
  // Replay has decided which value-log records are referenced; seal the
  // segment that was being written and drop segments nobody logged.
  garbage.Finish();
  vlog::SegmentEdit& segment_edit = *garbage.mutable_edit();
  std::vector<uint64_t> obsolete_segments;
  CAIRN_RETURN_IF_ERROR(vlog_->FinishRecovery(&segment_edit, &obsolete_segments));

  // Start a fresh WAL; once it is synced and named in the manifest as the
  // oldest WAL recovery needs, the replayed ones (now in L0 tables) go.
  const uint64_t log_number = versions_->NewFileNumber();
  CAIRN_ASSIGN_OR_RETURN(
      std::unique_ptr<io::WritableFile> file,
      fs_->NewWritableFile(lsm::LogFileName(dbname_, log_number),
                           {.category = io::IoCategory::kWal,
                            .writeback_bytes = options_.wal_bytes_per_sync,
                            .prefill_bytes = options_.wal_prefill_bytes}));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<lsm::LogWriter> log,
                         lsm::LogWriter::Create(std::move(file), log_number));
  CAIRN_RETURN_IF_ERROR(log->Sync());
  CAIRN_RETURN_IF_ERROR(fs_->SyncDir(dbname_));
  // The options of this open, numbered before the edit below so that the
  // manifest's next file number covers it.
  const uint64_t options_number = versions_->NewFileNumber();
  CAIRN_RETURN_IF_ERROR(WriteOptionsFile(fs_.get(), dbname_, options_number, options_));
  // LOG shows what the database runs with, as RocksDB's does at each open.
  info_log_->Log("open: options, as recorded in OPTIONS-%06d:\n%s", options_number,
                 FormatOptionsFile(options_));
  edit.SetLogNumber(log_number);
  versions_->SetLastSequence(max_sequence);
  CAIRN_RETURN_IF_ERROR(LogAndApply(&edit, &segment_edit));
  {
    absl::MutexLock l(&mu_);
    mem_ = NewMemTable();
    InstallSuperVersionLocked();
    log_ = std::move(log);
    log_number_ = log_number;
    wal_first_sequence_[log_number] = max_sequence + 1;
    last_sequence_.store(max_sequence);
    wal_synced_sequence_ = max_sequence;  // the open's flush made it durable
    pending_outputs_.clear();
    // The manifest no longer names the replayed WALs, and no reader exists
    // yet: obsolete segments can go.
    // WALs kept for the change feed from before the open may point into
    // them: they wait for those WALs (core/retention.h).
    gc_.retention().AddObsoleteAtOpen(obsolete_segments, WalRetentionOn() ? max_sequence + 1 : 0);
  }
  CAIRN_RETURN_IF_ERROR(CountUnaccountedGarbage());
  recovered_ = true;
  RemoveObsoleteFiles(/*at_open=*/true);
  gc_.DeleteObsoleteSegments();
  deleter_->WaitIdle();  // the open leaves no file it found obsolete
  {
    absl::MutexLock l(&mu_);
    UpdatePendingCompactionBytes();
  }
  StartBackgroundThreads();
  return absl::OkStatus();
}

absl::Status DBImpl::CheckNewestOptionsFile() {
  CAIRN_ASSIGN_OR_RETURN(std::optional<uint64_t> options_file,
                         LatestOptionsFile(fs_.get(), dbname_));
  if (!options_file.has_value()) return absl::OkStatus();
  CAIRN_ASSIGN_OR_RETURN(std::string text, ReadOptionsFile(fs_.get(), dbname_, *options_file));
  return CheckOptionsFile(text, lsm::OptionsFileName(dbname_, *options_file));
}

absl::Status DBImpl::RecoverManifest(std::vector<std::string>* names) {
  CAIRN_RETURN_IF_ERROR(versions_->Recover([this](uint32_t tag, std::string_view payload) {
    if (vlog::IsSegmentEditTag(tag)) return vlog_->ApplyManifestRecord(tag, payload);
    return absl::FailedPreconditionError(absl::StrCat(
        "manifest holds an extension record (tag ", tag,
        ") that this build does not know: written by a newer cairn?"));
  }));
  CAIRN_ASSIGN_OR_RETURN(*names, fs_->ListDir(dbname_));
  return CheckRecoveredFiles(*names);
}

std::string DBImpl::TornManifestNote() const {
  const std::optional<uint64_t> torn = versions_->RecoveredTornTail();
  if (!torn.has_value()) return "";
  return absl::StrCat("; ", lsm::ManifestFileName(dbname_, versions_->ManifestFileNumber()),
                      " ends in a damaged record at offset ", *torn,
                      ", dropped as a torn write, which may be what lost it");
}

absl::Status DBImpl::CheckRecoveredFiles(const std::vector<std::string>& names) {
  const std::string note = TornManifestNote();
  const std::shared_ptr<const lsm::Version> v = versions_->current();
  absl::flat_hash_set<uint64_t> tables;
  for (int level = 0; level < lsm::kNumLevels; ++level) {
    for (const auto& f : v->files(level)) {
      tables.insert(f->number);
      const std::string path = lsm::TableFileName(dbname_, f->number);
      absl::StatusOr<uint64_t> size = fs_->GetFileSize(path);
      if (absl::IsNotFound(size.status())) {
        return absl::DataLossError(absl::StrCat(
            path, ": missing; the manifest lists it as a table on level ", level, note));
      }
      CAIRN_RETURN_IF_ERROR(size.status());
      // A table never changes once written: any other size is another file.
      if (*size != f->file_size) {
        return absl::DataLossError(absl::StrCat(path, ": ", *size, " bytes, but the manifest records ",
                                                f->file_size, " for this table", note));
      }
    }
  }
  absl::Status s = vlog_->CheckSegmentFiles();
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(s.message(), note));
  // The WAL the manifest names as the oldest one recovery needs is created
  // and synced (with its directory entry) before the manifest names it, and
  // deleted only after the manifest names a newer one. 0: none yet (a
  // database whose creation has not finished its first open).
  const uint64_t log_number = versions_->LogNumber();
  if (log_number != 0 && !fs_->FileExists(lsm::LogFileName(dbname_, log_number))) {
    return absl::DataLossError(absl::StrCat(
        lsm::LogFileName(dbname_, log_number),
        ": missing; the manifest names it as the oldest WAL recovery needs, so the writes it "
        "held are lost",
        note));
  }
  const std::optional<uint64_t> torn = versions_->RecoveredTornTail();
  if (!torn.has_value()) return absl::OkStatus();
  // A crash can tear only the one edit being appended, and every file that
  // edit names was created by the session writing this manifest, so numbered
  // above it. An SST or segment the manifest never mentioned, from before
  // it, was named by a record the manifest has lost. (A table or segment
  // that a surviving record deleted is garbage whose deletion the crash
  // interrupted or undid.)
  const uint64_t manifest = versions_->ManifestFileNumber();
  for (const std::string& name : names) {
    uint64_t number;
    FileType type;
    if (!lsm::ParseFileName(name, &number, &type) || number > manifest) continue;
    const bool orphan = (type == FileType::kTable && !tables.contains(number) &&
                         !versions_->ManifestListedTable(number)) ||
                        (type == FileType::kValueLog && !vlog_->segment_set().Contains(number) &&
                         !vlog_->ManifestListedSegment(number));
    if (orphan) {
      return absl::DataLossError(absl::StrCat(
          io::JoinPath(dbname_, name), ": on disk but not in ",
          lsm::ManifestFileName(dbname_, manifest),
          ", which is newer than it and ends in a damaged record at offset ", *torn,
          ": a record the manifest lost named it; refusing to delete it as an orphan"));
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn
