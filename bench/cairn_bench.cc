// cairn_bench measures cairn against its own inline-value mode, RocksDB and
// RocksDB's integrated BlobDB on the same workloads: db_bench's classics and
// the YCSB core mixes. For each benchmark it prints throughput, latency
// percentiles and the three amplifications as the engine measures them.
// Usage and output fields: docs/bench.md.
//
//   cairn_bench --benchmarks=fillrandom,readrandom --num=1000000
//               --value_size=4096 --value_mode=separated --engine=cairn
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/bench_engine.h"
#include "bench/bench_report.h"
#include "bench/bench_runner.h"
#include "bench/bench_workload.h"
#include "cairn/options.h"

ABSL_FLAG(std::string, benchmarks, "fillrandom,readrandom",
          "comma-separated benchmarks, run in order (docs/bench.md lists them)");
ABSL_FLAG(uint64_t, num, 1000000, "keys in the key space; puts per fill");
ABSL_FLAG(uint64_t, reads, 0, "operations per read or YCSB benchmark (0: --num)");
ABSL_FLAG(std::string, value_size, "1024", "value bytes: N, or MIN-MAX for uniform sizes");
ABSL_FLAG(uint64_t, key_size, 16, "key bytes (zero-padded decimal)");
ABSL_FLAG(double, compression_ratio, 0.5, "fraction of each value that is random bytes");
ABSL_FLAG(int32_t, threads, 1, "threads running each benchmark");
ABSL_FLAG(double, duration, 0, "seconds per benchmark (0: run by count)");
ABSL_FLAG(std::string, db, "/tmp/cairn_bench", "database directory (wiped unless --use_existing_db)");
ABSL_FLAG(bool, use_existing_db, false, "open the database at --db as it is");
ABSL_FLAG(std::string, value_mode, "separated",
          "cairn: separated (value log, the library's default) or inline");
ABSL_FLAG(int64_t, value_separation_threshold, -1,
          "cairn separated mode: values of at least this many bytes go to the value log "
          "(-1: the library's default, 4096)");
ABSL_FLAG(int64_t, separate_at_flush_below, -1,
          "cairn separated mode: separated values under this many bytes go to the WAL and "
          "the memtable and reach the value log at flush (-1: the library's default)");
ABSL_FLAG(bool, separate_at_flush_during_gc, false,
          "cairn separated mode: keep separating values at flush while GC collects (default: "
          "while it collects, every separated value goes to the value log as it is written)");
ABSL_FLAG(std::string, engine, "cairn", "cairn, rocksdb or blobdb (RocksDB integrated BlobDB)");
ABSL_FLAG(bool, sync, false, "sync every write");
ABSL_FLAG(std::string, compression, "zstd", "SST (and blob) compression: none or zstd");
ABSL_FLAG(bool, direct_reads, false, "read with O_DIRECT");
ABSL_FLAG(bool, direct_writes, false,
          "cairn: value-log appends with O_DIRECT; RocksDB/BlobDB: "
          "use_direct_io_for_flush_and_compaction");
ABSL_FLAG(uint64_t, memtable_mb, 64, "memtable (write buffer) MiB");
ABSL_FLAG(uint64_t, cache_mb, 64, "block cache MiB");
ABSL_FLAG(int32_t, bloom_bits, 10, "bloom filter bits per key (0: none)");
ABSL_FLAG(std::string, seek_nexts, "10", "seekrandom: Next calls after each Seek, N or MIN-MAX");
ABSL_FLAG(uint64_t, delete_run, 40,
          "deletebatches: adjacent keys deleted in each run (every key whose index mod "
          "--delete_period is below this)");
ABSL_FLAG(uint64_t, delete_period, 100, "deletebatches: keys from one run's start to the next");
ABSL_FLAG(double, drop_fraction, 0.9, "droprange: share of the key space one DeleteRange drops");
ABSL_FLAG(double, drop_target, 1.3, "droprange: settle until disk bytes <= this times live bytes");
ABSL_FLAG(double, drop_settle_secs, 3600, "droprange: the longest it settles");
ABSL_FLAG(int32_t, batch_size, 32, "multireadrandom: keys per MultiGet");
ABSL_FLAG(uint64_t, seed, 301, "random seed");
ABSL_FLAG(bool, json, false, "print one JSON object per benchmark instead of a table");
ABSL_FLAG(int32_t, prefetch_depth, 32, "cairn: iterator value prefetch depth (1: none)");
ABSL_FLAG(uint64_t, range_bytes, 65536, "getrange: bytes per ranged read");
ABSL_FLAG(bool, scan_bounds, false,
          "seekrandom: give each scan an iterator upper bound at its end (cairn)");
ABSL_FLAG(bool, gc, true, "cairn: background value-log garbage collection");
ABSL_FLAG(int64_t, bytes_per_sync, -1,
          "both engines: start writeback every N bytes written (cairn: "
          "value_log_bytes_per_sync; RocksDB: bytes_per_sync); -1: each engine's default");
ABSL_FLAG(int64_t, wal_bytes_per_sync, -1,
          "both engines: start the WAL's writeback every N bytes written (wal_bytes_per_sync); "
          "-1: each engine's default");
ABSL_FLAG(int64_t, wal_prefill_bytes, -1,
          "cairn: zero-fill the WAL this many bytes at a time ahead of its appends "
          "(Options::wal_prefill_bytes; 0: off); -1: the default");
ABSL_FLAG(double, gc_trigger, -1,
          "cairn: Options::gc_space_amp_trigger (-1: the default; 0 turns GC off like --gc=false)");
ABSL_FLAG(bool, gc_punch_holes, true,
          "cairn: Options::gc_punch_holes, free dead runs' blocks without a copy");
ABSL_FLAG(int32_t, gc_jobs, -1,
          "cairn: Options::max_background_gc, GC jobs at once (-1: the default)");
ABSL_FLAG(int32_t, gc_nice, 99,
          "cairn: Options::gc_nice_adjustment, added to the GC threads' nice value (99: the "
          "default)");
ABSL_FLAG(int64_t, gc_mb_per_sec, -1, "cairn: GC's byte budget in MiB/s (-1: the default; 0: none)");
ABSL_FLAG(int64_t, memtable_value_mb, -1,
          "cairn: flush a memtable once it points to this many MiB of values (-1: the default)");
ABSL_FLAG(int64_t, segment_mb, -1,
          "cairn: Options::value_log_segment_size in MiB (-1: the default)");
ABSL_FLAG(int32_t, subcompactions, -1,
          "both engines: max_subcompactions (-1: each engine's default, cairn 2, RocksDB 1)");
ABSL_FLAG(double, space_sample_secs, 0,
          "print bytes on disk every S seconds during each benchmark on stderr (0: never); "
          "they are sampled every 250 ms for the reported maximum either way");
ABSL_FLAG(bool, stats, false, "print the engine's own statistics after the last benchmark");

namespace cairn::bench {
namespace {

absl::StatusOr<EngineOptions> EngineOptionsFromFlags(bool* separated) {
  EngineOptions o;
  o.path = absl::GetFlag(FLAGS_db);
  o.use_existing_db = absl::GetFlag(FLAGS_use_existing_db);
  o.sync = absl::GetFlag(FLAGS_sync);
  o.direct_reads = absl::GetFlag(FLAGS_direct_reads);
  o.direct_writes = absl::GetFlag(FLAGS_direct_writes);
  o.memtable_bytes = absl::GetFlag(FLAGS_memtable_mb) << 20;
  o.cache_bytes = absl::GetFlag(FLAGS_cache_mb) << 20;
  o.bloom_bits = absl::GetFlag(FLAGS_bloom_bits);
  o.prefetch_depth = absl::GetFlag(FLAGS_prefetch_depth);
  o.gc = absl::GetFlag(FLAGS_gc);
  o.gc_trigger = absl::GetFlag(FLAGS_gc_trigger);
  o.gc_punch_holes = absl::GetFlag(FLAGS_gc_punch_holes);
  o.gc_jobs = absl::GetFlag(FLAGS_gc_jobs);
  o.gc_nice = absl::GetFlag(FLAGS_gc_nice);
  o.bytes_per_sync = absl::GetFlag(FLAGS_bytes_per_sync);
  o.wal_bytes_per_sync = absl::GetFlag(FLAGS_wal_bytes_per_sync);
  o.wal_prefill_bytes = absl::GetFlag(FLAGS_wal_prefill_bytes);
  o.subcompactions = absl::GetFlag(FLAGS_subcompactions);
  if (const int64_t mb = absl::GetFlag(FLAGS_gc_mb_per_sec); mb >= 0) o.gc_bytes_per_sec = mb << 20;
  if (const int64_t mb = absl::GetFlag(FLAGS_memtable_value_mb); mb >= 0) {
    o.memtable_value_bytes = mb << 20;
  }
  if (const int64_t mb = absl::GetFlag(FLAGS_segment_mb); mb >= 0) o.segment_bytes = mb << 20;
  const std::string compression = absl::GetFlag(FLAGS_compression);
  if (compression != "none" && compression != "zstd") {
    return absl::InvalidArgumentError("--compression: want none or zstd");
  }
  o.zstd = compression == "zstd";
  const std::string mode = absl::GetFlag(FLAGS_value_mode);
  if (mode != "separated" && mode != "inline") {
    return absl::InvalidArgumentError("--value_mode: want separated or inline");
  }
  *separated = mode == "separated";
  const int64_t threshold = absl::GetFlag(FLAGS_value_separation_threshold);
  o.value_separation_threshold =
      !*separated                 ? kInlineValues
      : threshold < 0 ? cairn::Options().value_separation_threshold
                      : static_cast<size_t>(threshold);
  o.separate_at_flush_below = absl::GetFlag(FLAGS_separate_at_flush_below);
  o.separate_at_flush_during_gc = absl::GetFlag(FLAGS_separate_at_flush_during_gc);
  return o;
}

absl::StatusOr<BenchConfig> ConfigFromFlags() {
  BenchConfig c;
  c.num = absl::GetFlag(FLAGS_num);
  c.reads = absl::GetFlag(FLAGS_reads);
  c.threads = absl::GetFlag(FLAGS_threads);
  c.duration_s = absl::GetFlag(FLAGS_duration);
  c.key_size = absl::GetFlag(FLAGS_key_size);
  c.compression_ratio = absl::GetFlag(FLAGS_compression_ratio);
  c.batch_size = absl::GetFlag(FLAGS_batch_size);
  c.seed = absl::GetFlag(FLAGS_seed);
  c.use_existing_db = absl::GetFlag(FLAGS_use_existing_db);
  c.progress = isatty(STDERR_FILENO) == 1;
  c.space_sample_s = absl::GetFlag(FLAGS_space_sample_secs);
  if (c.num == 0 || c.threads < 1 || c.key_size == 0 || c.key_size > kMaxKeySize ||
      c.compression_ratio <= 0 || c.compression_ratio > 1 || c.duration_s < 0 ||
      c.space_sample_s < 0) {
    return absl::InvalidArgumentError(
        "need --num >= 1, --threads >= 1, 1 <= --key_size <= 65536, "
        "0 < --compression_ratio <= 1, --duration >= 0, --space_sample_secs >= 0");
  }
  absl::StatusOr<std::pair<size_t, size_t>> values =
      ParseRange("value_size", absl::GetFlag(FLAGS_value_size), 1);
  if (!values.ok()) return values.status();
  std::tie(c.value_min, c.value_max) = *values;
  absl::StatusOr<std::pair<size_t, size_t>> nexts =
      ParseRange("seek_nexts", absl::GetFlag(FLAGS_seek_nexts), 0);
  if (!nexts.ok()) return nexts.status();
  std::tie(c.seek_nexts_min, c.seek_nexts_max) = *nexts;
  c.scan_bounds = absl::GetFlag(FLAGS_scan_bounds);
  c.range_bytes = absl::GetFlag(FLAGS_range_bytes);
  c.delete_run = absl::GetFlag(FLAGS_delete_run);
  c.delete_period = absl::GetFlag(FLAGS_delete_period);
  c.drop_fraction = absl::GetFlag(FLAGS_drop_fraction);
  c.drop_target = absl::GetFlag(FLAGS_drop_target);
  c.drop_settle_s = absl::GetFlag(FLAGS_drop_settle_secs);
  if (!(c.drop_fraction > 0 && c.drop_fraction < 1)) {
    return absl::InvalidArgumentError("need 0 < --drop_fraction < 1");
  }
  if (c.delete_run == 0 || c.delete_run > c.delete_period) {
    return absl::InvalidArgumentError("need 1 <= --delete_run <= --delete_period");
  }
  return c;
}

absl::StatusOr<std::unique_ptr<BenchEngine>> OpenEngine(const EngineOptions& options) {
  const std::string engine = absl::GetFlag(FLAGS_engine);
  if (engine == "cairn") return OpenCairnEngine(options);
  if (engine == "rocksdb") return OpenRocksDbEngine(options, /*blob=*/false);
  if (engine == "blobdb") return OpenRocksDbEngine(options, /*blob=*/true);
  return absl::InvalidArgumentError("--engine: want cairn, rocksdb or blobdb");
}

int Main() {
  bool separated = false;
  absl::StatusOr<EngineOptions> options = EngineOptionsFromFlags(&separated);
  absl::StatusOr<BenchConfig> config = ConfigFromFlags();
  std::vector<std::string> names =
      absl::StrSplit(absl::GetFlag(FLAGS_benchmarks), ',', absl::SkipWhitespace());
  absl::Status check = !options.ok() ? options.status() : config.status();
  for (const std::string& name : names) {
    const auto& known = BenchmarkNames();
    if (check.ok() && std::find(known.begin(), known.end(), name) == known.end()) {
      check = absl::InvalidArgumentError(absl::StrCat("unknown benchmark \"", name,
                                                      "\"; known: ", absl::StrJoin(known, ",")));
    }
  }
  if (!check.ok()) {
    absl::FPrintF(stderr, "cairn_bench: %s\n", check.ToString());
    return 2;
  }
  absl::StatusOr<std::unique_ptr<BenchEngine>> engine = OpenEngine(*options);
  if (!engine.ok()) {
    absl::FPrintF(stderr, "cairn_bench: opening %s (%s): %s\n", absl::GetFlag(FLAGS_engine),
                  separated ? "separated" : "inline", engine.status().ToString());
    return 1;
  }
  const bool json = absl::GetFlag(FLAGS_json);
  if (!json) {
    absl::PrintF("cairn_bench: engine %s, %d keys of %d bytes, values %s bytes (%.0f%% random), "
                 "compression %s, %d threads, db %s\n",
                 (*engine)->Name(), config->num, config->key_size, absl::GetFlag(FLAGS_value_size),
                 config->compression_ratio * 100, absl::GetFlag(FLAGS_compression),
                 config->threads, options->path);
    PrintTextHeader(stdout);
  }
  BenchRunner runner(engine->get(), *config);
  for (const std::string& name : names) {
    absl::StatusOr<BenchResult> result = runner.Run(name);
    if (!result.ok()) {
      absl::FPrintF(stderr, "cairn_bench: %s: %s\n", name, result.status().ToString());
      return 1;
    }
    if (json) {
      PrintJson(*result, stdout);
    } else {
      PrintText(*result, stdout);
    }
    std::fflush(stdout);
  }
  if (absl::GetFlag(FLAGS_stats)) absl::FPrintF(json ? stderr : stdout, "%s\n", (*engine)->StatsText());
  return 0;
}

}  // namespace
}  // namespace cairn::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Benchmarks cairn (separated or inline values), RocksDB and BlobDB. See docs/bench.md.");
  absl::ParseCommandLine(argc, argv);
  return cairn::bench::Main();
}
