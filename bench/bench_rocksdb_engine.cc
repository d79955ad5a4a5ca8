// RocksDbEngine: BenchEngine over RocksDB, plain or with integrated BlobDB,
// configured like cairn (docs/bench.md, "Equivalent settings"). Byte counts
// come from rocksdb::Statistics tickers, but for the user bytes, counted here
// as cairn counts them; disk usage is the directory's size.
// Built only when CMake found RocksDB (CAIRN_HAVE_ROCKSDB).
#ifdef CAIRN_HAVE_ROCKSDB

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_engine.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/statistics.h"
#include "rocksdb/table.h"

namespace cairn::bench {
namespace {

absl::Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) return absl::OkStatus();
  if (s.IsNotFound()) return absl::NotFoundError(s.ToString());
  if (s.IsInvalidArgument()) return absl::InvalidArgumentError(s.ToString());
  if (s.IsCorruption()) return absl::DataLossError(s.ToString());
  if (s.IsNotSupported()) return absl::UnimplementedError(s.ToString());
  return absl::InternalError(s.ToString());
}

class RocksCursor : public BenchCursor {
 public:
  explicit RocksCursor(std::unique_ptr<rocksdb::Iterator> it) : it_(std::move(it)) {}
  void Seek(std::string_view target) override {
    it_->Seek(rocksdb::Slice(target.data(), target.size()));
  }
  void SeekToFirst() override { it_->SeekToFirst(); }
  bool Valid() const override { return it_->Valid(); }
  void Next() override { it_->Next(); }
  std::string_view key() const override { return it_->key().ToStringView(); }
  std::string_view value() const override { return it_->value().ToStringView(); }
  absl::Status status() const override { return FromRocks(it_->status()); }

 private:
  std::unique_ptr<rocksdb::Iterator> it_;
};

class RocksDbEngine : public BenchEngine {
 public:
  RocksDbEngine(std::unique_ptr<rocksdb::DB> db, std::shared_ptr<rocksdb::Statistics> statistics,
                std::string path, bool blob, bool sync)
      : db_(std::move(db)), statistics_(std::move(statistics)), path_(std::move(path)),
        blob_(blob) {
    write_options_.sync = sync;
  }
  ~RocksDbEngine() override { db_->Close().PermitUncheckedError(); }

  std::string Name() const override { return blob_ ? "blobdb" : "rocksdb"; }

  absl::Status Put(std::string_view key, std::string_view value) override {
    absl::Status s = FromRocks(db_->Put(write_options_, Slice(key), Slice(value)));
    if (s.ok()) user_bytes_.fetch_add(key.size() + value.size(), std::memory_order_relaxed);
    return s;
  }
  absl::Status Get(std::string_view key, std::string* value) override {
    return FromRocks(db_->Get(rocksdb::ReadOptions(), Slice(key), value));
  }
  std::vector<absl::Status> MultiGet(const std::vector<std::string_view>& keys,
                                     std::vector<std::string>* values) override {
    std::vector<rocksdb::Slice> slices;
    slices.reserve(keys.size());
    for (std::string_view k : keys) slices.push_back(Slice(k));
    std::vector<rocksdb::Status> statuses = db_->MultiGet(rocksdb::ReadOptions(), slices, values);
    std::vector<absl::Status> out;
    out.reserve(statuses.size());
    for (const rocksdb::Status& s : statuses) out.push_back(FromRocks(s));
    return out;
  }
  absl::Status Delete(std::string_view key) override {
    absl::Status s = FromRocks(db_->Delete(write_options_, Slice(key)));
    if (s.ok()) user_bytes_.fetch_add(key.size(), std::memory_order_relaxed);
    return s;
  }
  absl::Status DeleteRange(std::string_view begin, std::string_view end) override {
    return FromRocks(db_->DeleteRange(write_options_, db_->DefaultColumnFamily(), Slice(begin),
                                      Slice(end)));
  }
  absl::StatusOr<bool> SettleStep() override {
    // BlobDB collects blob files inside compactions (blob GC on, options
    // set at open): a full compaction is its settle. One step does it all.
    rocksdb::CompactRangeOptions cro;
    cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    absl::Status s = FromRocks(db_->CompactRange(cro, nullptr, nullptr));
    if (!s.ok()) return s;
    s = WaitForCompactions();
    if (!s.ok()) return s;
    return false;
  }
  std::unique_ptr<BenchCursor> NewCursor() override {
    return std::make_unique<RocksCursor>(
        std::unique_ptr<rocksdb::Iterator>(db_->NewIterator(rocksdb::ReadOptions())));
  }
  absl::Status Flush() override { return FromRocks(db_->Flush(rocksdb::FlushOptions())); }

  // RocksDB 7.8 has no WaitForCompact: poll the background-work properties.
  absl::Status WaitForCompactions() override {
    static constexpr const char* kBusy[] = {
        "rocksdb.mem-table-flush-pending", "rocksdb.compaction-pending",
        "rocksdb.num-running-flushes", "rocksdb.num-running-compactions"};
    for (;;) {
      bool busy = false;
      for (const char* property : kBusy) {
        uint64_t v = 0;
        if (db_->GetIntProperty(property, &v) && v != 0) busy = true;
      }
      if (!busy) return absl::OkStatus();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  absl::Status MeasureLiveBytes(uint64_t tracked_bytes) override {
    if (tracked_bytes != 0) {
      live_bytes_ = tracked_bytes;
      return absl::OkStatus();
    }
    // The bench does not know (an existing database): count by a scan.
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    uint64_t bytes = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) bytes += it->key().size() + it->value().size();
    if (!it->status().ok()) return FromRocks(it->status());
    live_bytes_ = bytes;
    return absl::OkStatus();
  }

  EngineStats Stats() override {
    auto t = [this](rocksdb::Tickers ticker) { return statistics_->getTickerCount(ticker); };
    EngineStats out;
    // Keys and values as given, as cairn counts them: RocksDB's BYTES_WRITTEN
    // is the write batches' size, with each batch's 12-byte header and each
    // entry's tag and length varints (6% more than the keys and values at
    // 256 B, 1.5% at 1 KiB), which made its write amplification read lower.
    out.user_bytes_written = user_bytes_.load(std::memory_order_relaxed);
    out.wal_bytes = t(rocksdb::WAL_FILE_BYTES);
    out.vlog_bytes = t(rocksdb::BLOB_DB_BLOB_FILE_BYTES_WRITTEN);
    out.flush_bytes = t(rocksdb::FLUSH_WRITE_BYTES);
    out.compaction_bytes = t(rocksdb::COMPACT_WRITE_BYTES);
    // Blob files are written by flush and compaction jobs and counted there.
    out.total_bytes_written = out.wal_bytes + out.flush_bytes + out.compaction_bytes;
    out.vlog_inside_flush = blob_;
    // A block-cache miss is a read of an SST block from the file.
    out.table_reads = t(rocksdb::BLOCK_CACHE_MISS);
    out.table_bytes_read = t(rocksdb::BLOCK_CACHE_BYTES_WRITE);
    rocksdb::HistogramData blob_reads;
    statistics_->histogramData(rocksdb::BLOB_DB_BLOB_FILE_READ_MICROS, &blob_reads);
    out.vlog_reads = blob_reads.count;
    out.vlog_bytes_read = t(rocksdb::BLOB_DB_BLOB_FILE_BYTES_READ);
    out.stall_micros = t(rocksdb::STALL_MICROS);
    out.gc_bytes_relocated = t(rocksdb::BLOB_DB_GC_BYTES_RELOCATED);
    out.gc_bytes_read = blob_ ? out.vlog_bytes_read : 0;
    out.disk_bytes = DirectoryBytes(path_);
    out.live_bytes = live_bytes_;
    out.space_amplification =
        live_bytes_ == 0 ? 0 : static_cast<double>(out.disk_bytes) / live_bytes_;
    return out;
  }

  std::string StatsText() override {
    std::string text;
    db_->GetProperty("rocksdb.stats", &text);
    return text;
  }

 private:
  static rocksdb::Slice Slice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

  const std::unique_ptr<rocksdb::DB> db_;
  const std::shared_ptr<rocksdb::Statistics> statistics_;
  const std::string path_;
  const bool blob_;
  std::atomic<uint64_t> user_bytes_{0};  // keys and values the puts and deletes gave
  rocksdb::WriteOptions write_options_;
  uint64_t live_bytes_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BenchEngine>> OpenRocksDbEngine(const EngineOptions& options,
                                                               bool blob) {
  if (!options.use_existing_db) {
    std::error_code ec;
    std::filesystem::remove_all(options.path, ec);
    if (ec) return absl::InternalError(absl::StrCat("removing ", options.path, ": ", ec.message()));
  }
  rocksdb::Options o;
  o.create_if_missing = true;
  o.write_buffer_size = options.memtable_bytes;
  o.compression = options.zstd ? rocksdb::kZSTD : rocksdb::kNoCompression;
  o.use_direct_reads = options.direct_reads;
  o.use_direct_io_for_flush_and_compaction = options.direct_writes;
  // Leveled compaction shaped like cairn's defaults (cairn/options.h).
  o.compaction_style = rocksdb::kCompactionStyleLevel;
  o.level_compaction_dynamic_level_bytes = true;
  o.level0_file_num_compaction_trigger = 4;
  o.level0_slowdown_writes_trigger = 20;
  o.level0_stop_writes_trigger = 36;
  o.target_file_size_base = 64u << 20;
  o.max_bytes_for_level_multiplier = 10;
  o.max_background_jobs = 2;  // one flush, one compaction, as cairn
  if (options.subcompactions >= 1) o.max_subcompactions = options.subcompactions;
  if (options.bytes_per_sync >= 0) o.bytes_per_sync = static_cast<uint64_t>(options.bytes_per_sync);
  if (options.wal_bytes_per_sync >= 0) {
    o.wal_bytes_per_sync = static_cast<uint64_t>(options.wal_bytes_per_sync);
  }
  rocksdb::BlockBasedTableOptions table;
  table.block_size = 4096;
  table.block_cache = rocksdb::NewLRUCache(options.cache_bytes);
  if (options.bloom_bits > 0) {
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(options.bloom_bits));
  }
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  if (blob) {
    o.enable_blob_files = true;
    o.min_blob_size = 512;
    o.enable_blob_garbage_collection = true;
    o.blob_compression_type = o.compression;
  }
  o.statistics = rocksdb::CreateDBStatistics();
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(o, options.path, &raw);
  if (!s.ok()) return FromRocks(s);
  return std::make_unique<RocksDbEngine>(std::unique_ptr<rocksdb::DB>(raw), o.statistics,
                                         options.path, blob, options.sync);
}

}  // namespace cairn::bench

#endif  // CAIRN_HAVE_ROCKSDB
