#include "gc/gc_job.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "io/dir_sync.h"
#include "io/status_macros.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_scanner.h"
#include "vlog/segment_writer.h"
#include "vlog/value_pointer.h"
#include "vlog/vlog_format.h"

namespace cairn::gc {

namespace {

// One record of the victim, copied whole out of the scanner's window: the
// output gets the same bytes, since a record's checksum covers neither its
// segment nor its offset (docs/vlog_format.md), and a record of every
// readable segment version is a record of the current one (version 2 only
// added a flag). A format change that breaks this must re-encode here.
// The live ones stay in memory until the job ends (their keys are needed for
// the rewrites); they all are at once anyway when the output is written.
struct Record {
  std::string_view bytes;  // header, key, stored value (in the job's RecordArena)
  uint32_t key_size = 0;
  uint8_t flags = 0;
  vlog::ValuePointer old_pointer;
  vlog::ValuePointer new_pointer;

  std::string_view key() const {
    return std::string_view(bytes).substr(vlog::kRecordHeaderSize, key_size);
  }
  std::string_view stored_value() const {
    return std::string_view(bytes).substr(vlog::kRecordHeaderSize + key_size);
  }
};

// The bytes of the records a job scans, copied out of the scanner's window
// into large chunks, so that a record costs no allocation of its own. Every
// view stays valid until the arena is destroyed with the job, so the bytes
// of records found dead stay too: at most the size of the job's victims.
class RecordArena {
 public:
  std::string_view Copy(std::string_view bytes) {
    if (bytes.size() > room_) {
      const size_t n = std::max(kChunkBytes, bytes.size());
      chunks_.push_back(std::make_unique_for_overwrite<char[]>(n));
      next_ = chunks_.back().get();
      room_ = n;
    }
    std::memcpy(next_, bytes.data(), bytes.size());
    const std::string_view copy(next_, bytes.size());
    next_ += bytes.size();
    room_ -= bytes.size();
    return copy;
  }

 private:
  static constexpr size_t kChunkBytes = size_t{4} << 20;
  std::vector<std::unique_ptr<char[]>> chunks_;
  char* next_ = nullptr;
  size_t room_ = 0;
};

// Verbatim copies are handed to the output in gathers of about this many
// bytes, written from where they lie (SegmentWriter::AppendEncoded).
constexpr size_t kGatherBytes = size_t{1} << 20;

// Keeps the job's I/O under a byte rate by sleeping whenever it runs ahead
// of the schedule start + bytes / rate.
class Throttle {
 public:
  explicit Throttle(uint64_t bytes_per_second)
      : bytes_per_second_(bytes_per_second), start_(absl::Now()) {}

  void Charge(uint64_t bytes) {
    if (bytes_per_second_ == 0) return;
    charged_ += bytes;
    const absl::Time due =
        start_ + absl::Seconds(static_cast<double>(charged_) / bytes_per_second_);
    const absl::Duration ahead = due - absl::Now();
    // Sleeping for less than a millisecond costs more than it saves; the
    // debt carries over to the next charge, so the rate still holds.
    if (ahead < absl::Milliseconds(1)) return;
    absl::SleepFor(ahead);
    slept_ += ahead;
  }

  absl::Duration slept() const { return slept_; }

 private:
  const uint64_t bytes_per_second_;
  const absl::Time start_;
  uint64_t charged_ = 0;
  absl::Duration slept_;
};

// Adds the wall time of its scope, less the throttle's sleep in it, to
// *micros.
class PhaseTimer {
 public:
  PhaseTimer(const Throttle& throttle, uint64_t* micros)
      : throttle_(throttle), micros_(micros), start_(absl::Now()),
        slept_before_(throttle.slept()) {}
  ~PhaseTimer() {
    const absl::Duration d = absl::Now() - start_ - (throttle_.slept() - slept_before_);
    *micros_ += static_cast<uint64_t>(std::max<int64_t>(0, absl::ToInt64Microseconds(d)));
  }

 private:
  const Throttle& throttle_;
  uint64_t* const micros_;
  const absl::Time start_;
  const absl::Duration slept_before_;
};

// The directory holding path ("." for a bare name).
std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

class GcJob {
 public:
  GcJob(const GcJobOptions& options, io::FileSystem* fs,
        const std::function<std::string(uint64_t)>& segment_path,
        absl::Span<const uint64_t> victim_ids, IndexView* index, GcJobResult* result)
      : options_(options), fs_(fs), segment_path_(segment_path),
        victim_ids_(victim_ids.begin(), victim_ids.end()), index_(index), result_(result),
        throttle_(options.bytes_per_second) {}

  absl::Status Run() {
    // Every victim is scanned and checked before anything is written: a bad
    // record in any of them leaves the job with nothing done.
    for (uint64_t victim_id : victim_ids_) CAIRN_RETURN_IF_ERROR(ScanVictim(victim_id));
    // Live keys are distinct (a key's current value is one record), so the
    // order is total. Neighbouring keys end up in neighbouring records, which
    // later range scans read together.
    std::sort(live_.begin(), live_.end(),
              [](const Record& a, const Record& b) { return a.key() < b.key(); });
    vlog::SegmentEdit final_edit;
    if (!live_.empty()) {
      absl::Status s;
      {
        PhaseTimer t(throttle_, &result_->write_micros);
        s = WriteOutput();
      }
      if (!s.ok()) {
        AbandonOutput();
        return s;
      }
      {
        PhaseTimer t(throttle_, &result_->rewrite_micros);
        s = RewriteAll();
      }
      if (!s.ok()) {
        // Some rewrites may be durable, so the output must stay. Its copies
        // that no pointer will ever name are garbage: count them now, or
        // nothing ever would (docs/gc.md, "An interrupted job").
        CountUnwrittenCopies(s);
      }
      if (lost_records_ > 0) {
        final_edit.AddGarbage(output_id_, result_->garbage_bytes_lost, lost_records_);
      }
      if (!s.ok()) {
        // Unlogged (the manifest failed too), the next open counts it from
        // the LSM.
        if (!final_edit.empty()) index_->LogSegmentEdit(final_edit).IgnoreError();
        return s;
      }
    }
    // Last: only now does nothing need the victims (docs/testing.md, invariant 5).
    for (uint64_t victim_id : victim_ids_) final_edit.MarkObsolete(victim_id);
    return index_->LogSegmentEdit(final_edit);
  }

  absl::Duration slept() const { return throttle_.slept(); }

 private:
  absl::Status ScanVictim(uint64_t victim_id) {
    // Scan time is the whole less the liveness checks inside it.
    const uint64_t liveness_before = result_->liveness_micros;
    uint64_t whole = 0;
    absl::Cleanup account = [&] {
      result_->scan_micros += whole - std::min(whole, result_->liveness_micros - liveness_before);
    };
    PhaseTimer t(throttle_, &whole);
    vlog::SegmentScannerOptions so;
    so.read_size = options_.read_size;
    so.category = io::IoCategory::kGc;
    so.direct_reads = options_.direct_reads;
    so.allow_torn_tail = false;  // sealed: every byte must be good
    so.uncompress_values = false;
    so.read_ahead = true;  // the next chunk arrives while liveness is checked
    so.skip_runs = index_->PunchedRuns(victim_id);
    // Records a flush or compaction dropped need no lookup, no copy, and no
    // checksum: the scan steps over them.
    so.known_dead = index_->KnownDeadRecords(victim_id);
    CAIRN_ASSIGN_OR_RETURN(
        std::unique_ptr<vlog::SegmentScanner> scanner,
        vlog::SegmentScanner::Open(fs_, segment_path_(victim_id), victim_id, so));
    Charge(vlog::kSegmentHeaderSize, &result_->bytes_read);
    uint64_t dead_seen = 0, dead_bytes_seen = 0;
    const auto count_dead = [&] {
      const uint64_t n = scanner->known_dead_skipped() - dead_seen;
      const uint64_t bytes = scanner->known_dead_skipped_bytes() - dead_bytes_seen;
      dead_seen += n;
      dead_bytes_seen += bytes;
      result_->records_scanned += n;
      result_->records_dropped += n;
      result_->records_known_dead += n;
      if (bytes > 0) Charge(bytes, &result_->bytes_read);
    };
    std::vector<Record> batch;
    batch.reserve(options_.liveness_batch_size);
    vlog::ScannedRecord rec;
    while (scanner->Next(&rec)) {
      count_dead();
      ++result_->records_scanned;
      Charge(rec.size, &result_->bytes_read);
      batch.push_back(Record{arena_.Copy(rec.bytes), static_cast<uint32_t>(rec.key.size()),
                             rec.flags, rec.pointer(victim_id), {}});
      if (batch.size() >= options_.liveness_batch_size) CAIRN_RETURN_IF_ERROR(KeepLive(&batch));
    }
    count_dead();
    CAIRN_RETURN_IF_ERROR(scanner->status());
    return KeepLive(&batch);
  }

  // Moves the live records of *batch to live_ and empties it.
  absl::Status KeepLive(std::vector<Record>* batch) {
    if (batch->empty()) return absl::OkStatus();
    std::vector<std::string_view> keys;
    std::vector<vlog::ValuePointer> pointers;
    for (const Record& r : *batch) {
      keys.push_back(r.key());
      pointers.push_back(r.old_pointer);
    }
    std::vector<bool> live;
    {
      PhaseTimer t(throttle_, &result_->liveness_micros);
      CAIRN_RETURN_IF_ERROR(index_->CheckLive(keys, pointers, &live));
    }
    if (live.size() != batch->size()) {
      return absl::InternalError(absl::StrCat("CheckLive answered ", live.size(), " of ",
                                              batch->size(), " records"));
    }
    for (size_t i = 0; i < batch->size(); ++i) {
      if (live[i]) {
        live_.push_back(std::move((*batch)[i]));
      } else {
        ++result_->records_dropped;
      }
    }
    batch->clear();
    return absl::OkStatus();
  }

  absl::Status WriteOutput() {
    output_id_ = index_->NewFileNumber();
    result_->output_segment_id = output_id_;
    output_path_ = segment_path_(output_id_);
    vlog::SegmentWriterOptions wo;
    wo.kind = vlog::SegmentKind::kGcOutput;
    wo.compress = options_.compress;
    wo.compression_level = options_.compression_level;
    wo.direct_writes = options_.direct_writes;
    wo.writeback_bytes = options_.writeback_bytes;
    wo.sync_header = false;  // synced whole before the manifest names it
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<vlog::SegmentWriter> writer,
                           vlog::SegmentWriter::Create(fs_, output_path_, output_id_, wo));
    if (options_.direct_writes && options_.note_direct_refused && writer->file() != nullptr &&
        !writer->file()->direct()) {
      options_.note_direct_refused(output_path_);
    }
    // The directory entry's sync runs beside the appends below
    // (io::StartSyncDir): started once the file exists, it covers the entry, and
    // the edit that names the segment waits for it. Done after the output's
    // own sync, as it was until 2026-12-05, it added a device round
    // trip to every job.
    dir_synced_ = io::StartSyncDir(fs_, DirName(output_path_));
    result_->bytes_written = writer->size();
    Charge(writer->size(), nullptr);
    // Records are copied byte for byte, a gather at a time, unless the job
    // compresses and the value is plain: only that one is encoded again (and,
    // when large, chunked on the way). A compressed or chunked value stays as
    // it is, without a round of zstd.
    size_t gathered_from = 0, gathered_bytes = 0;
    auto write_gathered = [&](size_t end) -> absl::Status {
      if (gathered_from == end) return absl::OkStatus();
      std::vector<uint32_t> sizes;
      std::vector<vlog::EncodedRecords> runs;
      sizes.reserve(end - gathered_from);
      runs.reserve(end - gathered_from);
      for (size_t i = gathered_from; i < end; ++i) sizes.push_back(live_[i].bytes.size());
      for (size_t i = gathered_from; i < end; ++i) {
        runs.push_back({live_[i].bytes, absl::MakeConstSpan(&sizes[i - gathered_from], 1)});
      }
      std::vector<vlog::ValuePointer> pointers;
      pointers.reserve(end - gathered_from);
      CAIRN_RETURN_IF_ERROR(writer->AppendEncoded(runs, &pointers));
      for (size_t i = gathered_from; i < end; ++i) Written(&live_[i], pointers[i - gathered_from]);
      gathered_from = end;
      gathered_bytes = 0;
      return absl::OkStatus();
    };
    for (size_t i = 0; i < live_.size(); ++i) {
      Record& r = live_[i];
      if (options_.compress && (r.flags & (vlog::kRecordFlagZstd | vlog::kRecordFlagChunked)) == 0) {
        CAIRN_RETURN_IF_ERROR(write_gathered(i));
        CAIRN_ASSIGN_OR_RETURN(vlog::ValuePointer p, writer->Append(r.key(), r.stored_value()));
        Written(&r, p);
        gathered_from = i + 1;
        continue;
      }
      gathered_bytes += r.bytes.size();
      if (gathered_bytes >= kGatherBytes) CAIRN_RETURN_IF_ERROR(write_gathered(i + 1));
    }
    CAIRN_RETURN_IF_ERROR(write_gathered(live_.size()));
    CAIRN_RETURN_IF_ERROR(writer->Sync());
    CAIRN_RETURN_IF_ERROR(writer->Close());
    result_->bytes_written = writer->size();
    // The whole file and its directory entry are durable before the
    // manifest names the segment, added and sealed in one edit: a crash
    // before it leaves an orphan file, removed at open, that no pointer
    // names (the rewrites come after).
    CAIRN_RETURN_IF_ERROR(dir_synced_.get());
    vlog::SegmentEdit add;
    add.AddSegment(output_id_, vlog::SegmentKind::kGcOutput);
    add.SealSegment(output_id_, writer->size(), writer->record_count());
    output_logged_ = true;  // from here on the manifest may know it
    return index_->LogSegmentEdit(add);
  }

  // Bookkeeping once r's copy is in the output at p.
  void Written(Record* r, const vlog::ValuePointer& p) {
    r->new_pointer = p;
    result_->bytes_relocated += p.size;
    index_->Copied(p.size);
    ++result_->live_records;
    Charge(p.size, nullptr);
  }

  // Best effort after a failure before any pointer into the output was
  // written: the output is pure garbage.
  void AbandonOutput() {
    if (output_id_ == 0) return;
    if (output_logged_) {
      vlog::SegmentEdit edit;
      edit.MarkObsolete(output_id_);
      index_->LogSegmentEdit(edit).IgnoreError();
    } else {
      // Unknown to the manifest: an orphan, which open would remove anyway.
      fs_->RemoveFile(output_path_).IgnoreError();
    }
  }

  // After RewriteAll failed with status: every copy in a batch that was
  // never submitted, and in the failed batch when the index refused it
  // before writing anything (Aborted: the DB is closing), is garbage of the
  // output. Copies of a batch that failed otherwise may or may not have
  // been written: they stay uncounted, and the next open counts them from
  // the LSM (ValueLog reconciliation).
  void CountUnwrittenCopies(const absl::Status& status) {
    size_t from = rewritten_end_;
    if (!absl::IsAborted(status)) {
      from = std::min(live_.size(), rewritten_end_ + options_.rewrite_batch_size);
    }
    for (size_t i = from; i < live_.size(); ++i) {
      ++lost_records_;
      result_->garbage_bytes_lost += live_[i].new_pointer.size;
    }
    result_->rewrites_lost = lost_records_;
  }

  absl::Status RewriteAll() {
    const size_t batch = options_.rewrite_batch_size;
    for (size_t begin = 0; begin < live_.size(); begin += batch) {
      rewritten_end_ = begin;
      const size_t end = std::min(live_.size(), begin + batch);
      std::vector<std::string_view> keys;
      std::vector<vlog::ValuePointer> old_pointers, new_pointers;
      for (size_t i = begin; i < end; ++i) {
        keys.push_back(live_[i].key());
        old_pointers.push_back(live_[i].old_pointer);
        new_pointers.push_back(live_[i].new_pointer);
      }
      std::vector<bool> replaced;
      CAIRN_ASSIGN_OR_RETURN(size_t n_replaced,
                             index_->RewritePointers(keys, old_pointers, new_pointers, &replaced,
                                                     /*sync=*/end == live_.size()));
      const size_t n_true = static_cast<size_t>(std::count(replaced.begin(), replaced.end(), true));
      if (replaced.size() != keys.size() || n_true != n_replaced) {
        return absl::InternalError(absl::StrCat("RewritePointers answered ", replaced.size(),
                                                " of ", keys.size(), " keys, ", n_replaced,
                                                " replaced but ", n_true, " marked"));
      }
      for (size_t i = begin; i < end; ++i) {
        if (replaced[i - begin]) continue;
        ++lost_records_;
        result_->garbage_bytes_lost += live_[i].new_pointer.size;
      }
      result_->rewrites_lost = lost_records_;
    }
    rewritten_end_ = live_.size();
    return absl::OkStatus();
  }

  // Counts bytes of I/O into *counter (when given) and the throttle.
  void Charge(uint64_t bytes, uint64_t* counter) {
    if (counter != nullptr) *counter += bytes;
    throttle_.Charge(bytes);
  }

  const GcJobOptions& options_;
  io::FileSystem* const fs_;
  const std::function<std::string(uint64_t)>& segment_path_;
  const std::vector<uint64_t> victim_ids_;
  IndexView* const index_;
  GcJobResult* const result_;
  Throttle throttle_;

  RecordArena arena_;  // before live_, whose views point into it
  std::vector<Record> live_;
  uint64_t output_id_ = 0;
  std::string output_path_;
  // The output's directory sync, under way from the output's creation (a
  // job that fails first waits for it as the job ends).
  std::future<absl::Status> dir_synced_;
  bool output_logged_ = false;
  uint64_t lost_records_ = 0;
  // Records before this index were written back (or lost their race).
  size_t rewritten_end_ = 0;
};

}  // namespace

std::string GcJobResult::DebugString() const {
  return absl::StrFormat(
      "gc victims %s -> output %d: read %d bytes, %d records scanned, %d live (%d bytes "
      "relocated, %d written), %d dropped, %d rewrites lost (%d bytes), %d us (%d us throttled; "
      "scan %d, liveness %d, write %d, rewrite %d)",
      absl::StrJoin(victim_ids, ","), output_segment_id, bytes_read, records_scanned, live_records,
      bytes_relocated, bytes_written, records_dropped, rewrites_lost, garbage_bytes_lost, micros,
      throttled_micros, scan_micros, liveness_micros, write_micros, rewrite_micros);
}

absl::Status ValidateGcJobOptions(const GcJobOptions& options) {
  if (options.read_size == 0 || options.liveness_batch_size == 0 ||
      options.rewrite_batch_size == 0) {
    return absl::InvalidArgumentError(
        "GcJobOptions: read_size and the batch sizes must be positive");
  }
  if (options.compress && (options.compression_level < 1 || options.compression_level > 19)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GcJobOptions: zstd compression level ", options.compression_level, " is outside 1..19"));
  }
  return absl::OkStatus();
}

absl::Status RunGcJob(const GcJobOptions& options, io::FileSystem* fs,
                      const std::function<std::string(uint64_t)>& segment_path,
                      absl::Span<const uint64_t> victim_ids, IndexView* index,
                      GcJobResult* result) {
  *result = GcJobResult();
  result->victim_ids.assign(victim_ids.begin(), victim_ids.end());
  CAIRN_RETURN_IF_ERROR(ValidateGcJobOptions(options));
  if (victim_ids.empty()) return absl::InvalidArgumentError("RunGcJob: no victim");
  const absl::Time start = absl::Now();
  GcJob job(options, fs, segment_path, victim_ids, index, result);
  absl::Cleanup timing = [&] {
    result->micros = static_cast<uint64_t>(absl::ToInt64Microseconds(absl::Now() - start));
    result->throttled_micros = static_cast<uint64_t>(absl::ToInt64Microseconds(job.slept()));
  };
  return job.Run();
}

absl::Status RunGcJob(const GcJobOptions& options, io::FileSystem* fs,
                      const std::function<std::string(uint64_t)>& segment_path,
                      uint64_t victim_id, IndexView* index, GcJobResult* result) {
  const uint64_t victims[] = {victim_id};
  return RunGcJob(options, fs, segment_path, victims, index, result);
}

}  // namespace cairn::gc
