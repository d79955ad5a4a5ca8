// DB::CreateCheckpoint: an openable copy of the live database
// (docs/checkpoint.md).
//
// Why it flushes rather than copying the WAL: once the memtables are in
// tables, the checkpoint is described by one manifest state alone (tables,
// segments, counters), and the WAL it gets is empty. Copying a WAL up to a
// point would need the value-log bytes its records name to be copied as
// well, and would make the checkpoint's recovery depend on a cut WAL.
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "core/db_impl.h"
#include "io/status_macros.h"
#include "lsm/filename.h"
#include "lsm/log_writer.h"

namespace cairn {

namespace {

constexpr size_t kCopyChunk = size_t{1} << 20;

std::string ParentDir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string StripTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Builds one checkpoint directory: each file linked or copied into it.
class CheckpointBuilder {
 public:
  CheckpointBuilder(io::FileSystem* fs, std::string dir, CheckpointResult* result)
      : fs_(fs), dir_(std::move(dir)), result_(result) {}

  // Copies the first size bytes of from (all of it when size is nullopt,
  // as much as there is when the file is shorter: a live tail is read as
  // far as it reaches now).
  absl::Status Copy(const std::string& from, const std::string& to,
                    std::optional<uint64_t> size) {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> in,
                           fs_->NewRandomAccessFile(from, {}));
    CAIRN_ASSIGN_OR_RETURN(uint64_t end, in->Size());
    if (size.has_value()) end = std::min(end, *size);
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> out,
                           fs_->NewWritableFile(to, {}));
    std::string scratch(kCopyChunk, '\0');
    for (uint64_t offset = 0; offset < end;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kCopyChunk, end - offset));
      std::string_view got;
      CAIRN_RETURN_IF_ERROR(in->Read(offset, n, scratch.data(), &got));
      if (got.empty()) break;  // shorter than it said: the file was cut meanwhile
      CAIRN_RETURN_IF_ERROR(out->Append(got));
      offset += got.size();
    }
    CAIRN_RETURN_IF_ERROR(out->Sync());
    CAIRN_RETURN_IF_ERROR(out->Close());
    ++result_->files_copied;
    result_->bytes_copied += out->Size();
    return absl::OkStatus();
  }

  // Hard-links an immutable file; copies it where links cannot reach.
  absl::Status LinkOrCopy(const std::string& from, const std::string& to) {
    absl::Status s = fs_->LinkFile(from, to);
    if (absl::IsUnimplemented(s)) return Copy(from, to, std::nullopt);
    CAIRN_RETURN_IF_ERROR(s);
    ++result_->files_linked;
    CAIRN_ASSIGN_OR_RETURN(uint64_t size, fs_->GetFileSize(from));
    result_->bytes_linked += size;
    return absl::OkStatus();
  }

  // An empty file (a segment logged in the manifest and not created yet).
  absl::Status CreateEmpty(const std::string& path) {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file, fs_->NewWritableFile(path, {}));
    CAIRN_RETURN_IF_ERROR(file->Sync());
    return file->Close();
  }

  // An empty WAL numbered log_number: the checkpoint's recovery starts there.
  absl::Status WriteEmptyLog(uint64_t log_number) {
    CAIRN_ASSIGN_OR_RETURN(
        std::unique_ptr<io::WritableFile> file,
        fs_->NewWritableFile(lsm::LogFileName(dir_, log_number), {.category = io::IoCategory::kWal}));
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<lsm::LogWriter> log,
                           lsm::LogWriter::Create(std::move(file), log_number));
    CAIRN_RETURN_IF_ERROR(log->Sync());
    return log->Close();
  }

  // MANIFEST-<number> holding the one snapshot record, then CURRENT.
  absl::Status WriteManifest(uint64_t number, std::string_view record) {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file,
                           fs_->NewWritableFile(lsm::ManifestFileName(dir_, number),
                                                {.category = io::IoCategory::kManifest}));
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<lsm::LogWriter> manifest,
                           lsm::LogWriter::Create(std::move(file), number));
    CAIRN_RETURN_IF_ERROR(manifest->AddRecord(record));
    CAIRN_RETURN_IF_ERROR(manifest->Sync());
    CAIRN_RETURN_IF_ERROR(manifest->Close());
    return lsm::SetCurrentFile(fs_, dir_, number);
  }

  // Removes what was built (after a failure).
  void Abandon() {
    if (auto names = fs_->ListDir(dir_); names.ok()) {
      for (const std::string& name : *names) {
        fs_->RemoveFile(io::JoinPath(dir_, name)).IgnoreError();
      }
    }
    fs_->RemoveDir(dir_).IgnoreError();
  }

 private:
  io::FileSystem* const fs_;
  const std::string dir_;
  CheckpointResult* const result_;
};

}  // namespace

absl::Status DBImpl::OpenCheckpointOnce(const std::string& dir) {
  // The segments hold the values of writes that raced with the checkpoint,
  // which no table of it points at; the open counts them as garbage (as it
  // does what a crash leaves), so the checkpoint's space ledger balances
  // and `cairn check` passes on it as it stands. It also proves that the
  // checkpoint opens before it is put in place. Nothing but that runs: no
  // GC, no compaction.
  Options o = options_;
  o.create_if_missing = false;
  o.error_if_exists = false;
  o.listeners.clear();  // the application's listeners watch its database
  o.gc_space_amp_trigger = 0;
  o.level0_compaction_trigger = o.level0_slowdown_trigger = o.level0_stop_trigger = 1 << 30;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<DB> db, OpenWithFileSystem(o, dir, fs_));
  return absl::OkStatus();  // closed here; its LOCK file stays, as in any database
}

absl::StatusOr<CheckpointResult> DBImpl::CreateCheckpoint(const std::string& target) {
  if (target.empty()) return absl::InvalidArgumentError("CreateCheckpoint: empty directory name");
  // "cp/" names the directory "cp": without the slash the temporary goes
  // beside it as "cp.checkpoint-tmp", not inside a "cp/" that does not
  // exist yet. A lone "/" stays (and exists).
  const std::string dir = StripTrailingSlashes(target);
  if (fs_->FileExists(dir)) {
    return absl::AlreadyExistsError(
        absl::StrCat("CreateCheckpoint: ", dir, " already exists (a checkpoint goes to a new directory)"));
  }
  // Built beside dir (the same file system, so the rename is atomic).
  const std::string tmp = absl::StrCat(dir, ".checkpoint-tmp");
  if (fs_->FileExists(tmp)) {
    return absl::AlreadyExistsError(absl::StrCat(
        "CreateCheckpoint: ", tmp, " exists (left by an interrupted checkpoint? remove it)"));
  }
  const auto start = std::chrono::steady_clock::now();
  CheckpointResult result;
  // No hole is punched from the capture until the files are linked: a
  // link shares the file's blocks, and the checkpoint's manifest lists
  // only the runs punched before its capture. Once linked, a segment has a
  // second name, which PunchReadyRuns leaves alone.
  absl::MutexLock punch_lock(gc_.punch_mutex());

  // Capture. GC is held off from before the flush until the state is taken:
  // a collection between the two could mark a segment obsolete whose
  // pointers the captured tables still hold (its rewrites being only in the
  // new memtable, which the checkpoint leaves out).
  lsm::VersionSet::CheckpointState state;
  std::vector<vlog::SegmentInfo> segments;
  std::shared_ptr<const ReadEpoch> epoch;
  uint64_t manifest_number;
  {
    absl::MutexLock gc_lock(gc_.jobs_mutex());
    // Every write acknowledged before this call goes into a table.
    CAIRN_RETURN_IF_ERROR(Flush());
    // Victims of finished background jobs that waited for their rewrites'
    // durability are obsolete now (the flush made them durable): the copy
    // leaves them out instead of holding segments nothing references.
    CAIRN_RETURN_IF_ERROR(gc_.ReleasePendingVictims(GcCoordinator::VictimRelease::kNow));
    manifest_number = versions_->NewFileNumber();
    {
      // Serialized with LogAndApply, so the segment set matches the version.
      absl::MutexLock l(&manifest_mu_);
      CAIRN_ASSIGN_OR_RETURN(state, versions_->CaptureCheckpointState(manifest_number + 1,
                                                                      last_sequence_.load()));
      segments = vlog_->segment_set().Segments();
    }
    absl::MutexLock l(&mu_);
    // Pins the files: the held version keeps its tables from
    // RemoveObsoleteFiles, and the held epoch keeps every segment collected
    // from now on from DeleteObsoleteSegments, until the copy is done.
    epoch = gc_.retention().epoch();
  }
  result.sequence = last_sequence_.load();

  CAIRN_RETURN_IF_ERROR(fs_->CreateDir(tmp));
  CheckpointBuilder builder(fs_.get(), tmp, &result);
  absl::Status s = [&]() -> absl::Status {
    for (int level = 0; level < lsm::kNumLevels; ++level) {
      for (const auto& f : state.version->files(level)) {
        CAIRN_RETURN_IF_ERROR(builder.LinkOrCopy(lsm::TableFileName(dbname_, f->number),
                                                 lsm::TableFileName(tmp, f->number)));
      }
    }
    for (const vlog::SegmentInfo& info : segments) {
      const std::string from = lsm::ValueLogFileName(dbname_, info.segment_id);
      const std::string name = lsm::ValueLogFileName(tmp, info.segment_id);
      if (info.sealed) {
        absl::Status linked = builder.LinkOrCopy(from, name);
        // An obsolete segment may already be gone (nothing points into it
        // any more); the checkpoint's open forgets it then.
        if (info.obsolete && absl::IsNotFound(linked)) continue;
        CAIRN_RETURN_IF_ERROR(linked);
        continue;
      }
      // Being written: its bytes up to now. Records past the last whole one
      // are a torn tail that the checkpoint's open cuts, as after a crash.
      absl::Status copied = builder.Copy(from, name, std::nullopt);
      if (absl::IsNotFound(copied)) {
        // Logged in the manifest, not created yet: an empty segment.
        copied = builder.CreateEmpty(name);
      }
      CAIRN_RETURN_IF_ERROR(copied);
    }
    CAIRN_RETURN_IF_ERROR(builder.WriteEmptyLog(state.log_number));
    CAIRN_RETURN_IF_ERROR(builder.WriteManifest(manifest_number, state.snapshot_record));
    CAIRN_RETURN_IF_ERROR(fs_->SyncDir(tmp));
    CAIRN_RETURN_IF_ERROR(OpenCheckpointOnce(tmp));
    CAIRN_RETURN_IF_ERROR(fs_->RenameFile(tmp, dir));
    return fs_->SyncDir(ParentDir(dir));
  }();
  if (!s.ok()) {
    builder.Abandon();
    return s;
  }
  result.micros = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                            std::chrono::steady_clock::now() - start)
                                            .count());
  return result;
}

}  // namespace cairn
