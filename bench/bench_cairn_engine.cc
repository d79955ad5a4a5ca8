// CairnEngine: BenchEngine over cairn's public API (core/include/cairn).
// Amplifications come from DB::GetStats(), which counts bytes in the io
// layer; live bytes from GetProperty("cairn.live-bytes").
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_engine.h"
#include "cairn/db.h"
#include "cairn/options.h"

namespace cairn::bench {
namespace {

class CairnCursor : public BenchCursor {
 public:
  explicit CairnCursor(std::unique_ptr<Iterator> it) : it_(std::move(it)) {}
  void Seek(std::string_view target) override { it_->Seek(target); }
  void SeekToFirst() override { it_->SeekToFirst(); }
  bool Valid() const override { return it_->Valid(); }
  void Next() override { it_->Next(); }
  std::string_view key() const override { return it_->key(); }
  std::string_view value() const override { return it_->value(); }
  absl::Status status() const override { return it_->status(); }

 private:
  std::unique_ptr<Iterator> it_;
};

class CairnEngine : public BenchEngine {
 public:
  CairnEngine(std::unique_ptr<DB> db, bool separated, bool sync, int prefetch_depth)
      : db_(std::move(db)), separated_(separated) {
    write_options_.sync = sync;
    scan_options_.value_prefetch_depth = prefetch_depth;
  }

  std::string Name() const override { return separated_ ? "cairn-separated" : "cairn-inline"; }

  absl::Status Put(std::string_view key, std::string_view value) override {
    return db_->Put(write_options_, key, value);
  }
  absl::Status Get(std::string_view key, std::string* value) override {
    return db_->Get(ReadOptions(), key, value);
  }
  std::vector<absl::Status> MultiGet(const std::vector<std::string_view>& keys,
                                     std::vector<std::string>* values) override {
    return db_->MultiGet(ReadOptions(), keys, values);
  }
  absl::Status Delete(std::string_view key) override { return db_->Delete(write_options_, key); }
  absl::Status DeleteRange(std::string_view begin, std::string_view end) override {
    return db_->DeleteRange(write_options_, begin, end);
  }
  absl::StatusOr<bool> SettleStep() override {
    if (absl::Status s = db_->CompactRange(nullptr, nullptr); !s.ok()) return s;
    // GC until a round frees nothing more.
    bool freed = false;
    for (;;) {
      absl::StatusOr<GcResult> gc = db_->RunGC();
      if (!gc.ok()) return gc.status();
      if (gc->victims == 0) break;
      freed = true;
    }
    if (absl::Status s = db_->WaitForBackgroundWork(); !s.ok()) return s;
    return freed;
  }
  absl::Status GetRange(std::string_view key, uint64_t offset, uint64_t length,
                        std::string* out) override {
    // Verified: a value over 64 KiB is read by its chunks, each checked.
    return db_->GetRange(ReadOptions(), key, offset, length, out);
  }
  std::unique_ptr<BenchCursor> NewCursor() override {
    return std::make_unique<CairnCursor>(db_->NewIterator(scan_options_));
  }
  std::unique_ptr<BenchCursor> NewBoundedCursor(std::string_view upper_bound) override {
    ReadOptions ro = scan_options_;
    ro.iterate_upper_bound = &upper_bound;  // copied by NewIterator
    return std::make_unique<CairnCursor>(db_->NewIterator(ro));
  }
  absl::Status Flush() override { return db_->Flush(); }
  absl::Status WaitForCompactions() override { return db_->WaitForBackgroundWork(); }

  absl::Status MeasureLiveBytes(uint64_t /*tracked_bytes*/) override {
    std::string live;
    if (!db_->GetProperty("cairn.live-bytes", &live)) {
      return absl::InternalError("cairn.live-bytes: the scan failed");
    }
    return absl::OkStatus();
  }

  EngineStats Stats() override {
    const cairn::Stats st = db_->GetStats();
    EngineStats out;
    out.user_bytes_written = st.user_bytes_written;
    out.wal_bytes = st.wal_bytes_written;
    out.vlog_bytes = st.vlog_bytes_written;
    out.flush_bytes = st.flush_bytes_written;
    out.compaction_bytes = st.compaction_bytes_written;
    out.gc_bytes = st.gc_bytes_written;
    out.manifest_bytes = st.manifest_bytes_written;
    out.total_bytes_written = out.wal_bytes + out.vlog_bytes + out.flush_bytes +
                              out.compaction_bytes + out.gc_bytes + out.manifest_bytes;
    out.table_reads = st.table_reads;
    out.table_bytes_read = st.table_bytes_read;
    out.vlog_reads = st.vlog_reads;
    out.vlog_bytes_read = st.vlog_bytes_read;
    out.stall_micros = st.stall_micros;
    out.stall_max_micros = st.stall_max_micros;
    out.gc_bytes_relocated = st.gc_bytes_written;
    out.gc_bytes_read = st.gc_bytes_read;
    // The whole directory, as the peers' figure is: Stats counts the WAL,
    // the manifest and files still being written too.
    out.disk_bytes = st.disk_bytes;
    out.sst_bytes = st.sst_bytes;
    // What the segments take on the device: punched runs take nothing.
    out.segment_bytes = st.vlog_bytes - std::min(st.vlog_bytes, st.vlog_punched_bytes);
    out.segment_garbage_bytes =
        st.vlog_garbage_bytes - std::min(st.vlog_garbage_bytes, st.vlog_punched_bytes);
    out.segment_foreseen_bytes = st.vlog_foreseen_garbage_bytes;
    out.gc_space_amplification = st.gc_space_amplification;
    out.live_bytes = st.live_user_bytes_estimate;
    out.space_amplification = st.space_amplification;
    return out;
  }

  std::string StatsText() override {
    std::string text;
    db_->GetProperty("cairn.stats", &text);
    return text;
  }

 private:
  const std::unique_ptr<DB> db_;
  const bool separated_;
  WriteOptions write_options_;
  ReadOptions scan_options_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BenchEngine>> OpenCairnEngine(const EngineOptions& options) {
  if (!options.use_existing_db) {
    std::error_code ec;
    std::filesystem::remove_all(options.path, ec);
    if (ec) return absl::InternalError(absl::StrCat("removing ", options.path, ": ", ec.message()));
  }
  Options db_options;
  db_options.create_if_missing = true;
  db_options.memtable_size = options.memtable_bytes;
  db_options.cache_size = options.cache_bytes;
  db_options.bloom_bits_per_key = options.bloom_bits;
  db_options.compression = options.zstd ? Compression::kZstd : Compression::kNone;
  // As BlobDB's blob_compression_type follows --compression, so does the
  // value log's per-record compression (records that do not shrink stay
  // uncompressed).
  db_options.value_compression = db_options.compression;
  db_options.direct_reads = options.direct_reads;
  db_options.direct_writes = options.direct_writes;
  db_options.value_separation_threshold = options.value_separation_threshold;
  if (options.separate_at_flush_below >= 0) {
    db_options.separate_at_flush_below = static_cast<size_t>(options.separate_at_flush_below);
  }
  db_options.separate_at_flush_during_gc = options.separate_at_flush_during_gc;
  if (options.gc_trigger >= 0) db_options.gc_space_amp_trigger = options.gc_trigger;
  db_options.gc_punch_holes = options.gc_punch_holes;
  if (options.gc_jobs >= 1) db_options.max_background_gc = options.gc_jobs;
  if (options.gc_nice != 99) db_options.gc_nice_adjustment = options.gc_nice;
  if (options.bytes_per_sync >= 0) {
    db_options.value_log_bytes_per_sync = static_cast<uint64_t>(options.bytes_per_sync);
  }
  if (options.wal_bytes_per_sync >= 0) {
    db_options.wal_bytes_per_sync = static_cast<uint64_t>(options.wal_bytes_per_sync);
  }
  if (options.wal_prefill_bytes >= 0) {
    db_options.wal_prefill_bytes = static_cast<uint64_t>(options.wal_prefill_bytes);
  }
  if (options.gc_bytes_per_sec >= 0) {
    db_options.gc_bytes_per_sec = static_cast<uint64_t>(options.gc_bytes_per_sec);
  }
  if (options.memtable_value_bytes >= 0) {
    db_options.max_memtable_value_bytes = static_cast<uint64_t>(options.memtable_value_bytes);
  }
  if (options.segment_bytes >= 0) {
    db_options.value_log_segment_size = static_cast<uint64_t>(options.segment_bytes);
  }
  if (options.subcompactions >= 1) db_options.max_subcompactions = options.subcompactions;
  if (!options.gc) db_options.gc_space_amp_trigger = 0;
  absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(db_options, options.path);
  if (!db.ok()) return db.status();
  return std::make_unique<CairnEngine>(*std::move(db),
                                       options.value_separation_threshold != kInlineValues,
                                       options.sync, options.prefetch_depth);
}

}  // namespace cairn::bench
