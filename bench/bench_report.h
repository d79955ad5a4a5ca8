// BenchResult is what cairn_bench measured for one benchmark; PrintText and
// PrintJson render it. The JSON field names are stable and documented in
// docs/bench.md ("JSON output").
#ifndef CAIRN_BENCH_BENCH_REPORT_H_
#define CAIRN_BENCH_BENCH_REPORT_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "bench/bench_engine.h"
#include "bench/bench_histogram.h"

namespace cairn::bench {

struct BenchResult {
  std::string benchmark;
  std::string engine;  // BenchEngine::Name()
  int threads = 1;
  uint64_t ops = 0;    // operations (keys for multireadrandom, entries for readseq)
  uint64_t found = 0;  // reads that found their key
  uint64_t bytes = 0;  // user bytes read and written by the timed operations
  double seconds = 0;
  // Write phases: seconds spent after the last operation waiting for the
  // flush and the compactions (and, for cairn, GC) the phase left behind.
  // A load's honest throughput counts them: see SettledOpsPerSec.
  double settle_seconds = 0;
  // Bytes this process read from storage during the benchmark, from
  // /proc/self/io (read_bytes: O_DIRECT and page-cache misses alike, every
  // thread including io_uring workers), the same measure on every engine.
  uint64_t os_read_bytes = 0;
  // Bytes this process sent (or left dirty, bound) to storage during the
  // benchmark, from /proc/self/io: write_bytes less cancelled_write_bytes,
  // so that page-cache bytes of files deleted before their writeback (a WAL
  // whose memtable was flushed first) do not count. The same measure on
  // every engine.
  uint64_t os_written_bytes = 0;
  Histogram latency;  // per operation (per batch for multireadrandom)
  uint64_t writer_ops = 0;  // readwhilewriting: the background writer's puts
  uint64_t scanned = 0;     // entries the scans visited (seekrandom, ycsb E)

  // Engine counters over the benchmark (after background work for writes).
  EngineStats delta;
  // Space: measured after write phases only.
  bool space_measured = false;
  uint64_t disk_bytes = 0, live_bytes = 0;
  double space_amplification = 0;
  // Largest bytes on disk seen while the benchmark ran (sampled every
  // 250 ms), and that over the live bytes.
  uint64_t max_disk_bytes = 0;
  double max_space_amplification = 0;

  double OpsPerSec() const { return seconds > 0 ? ops / seconds : 0; }
  double MiBPerSec() const { return seconds > 0 ? bytes / seconds / 1048576.0 : 0; }
  // Throughput over the operations and the settle that followed them.
  double SettledOpsPerSec() const {
    return seconds + settle_seconds > 0 ? ops / (seconds + settle_seconds) : 0;
  }
  double SettledMiBPerSec() const {
    return seconds + settle_seconds > 0 ? bytes / (seconds + settle_seconds) / 1048576.0 : 0;
  }
  double OsReadBytesPerOp() const {
    return ops == 0 ? 0 : static_cast<double>(os_read_bytes) / ops;
  }
  // Device bytes written per user byte written in this benchmark (0 when it
  // wrote nothing).
  double WriteAmp(uint64_t component_bytes) const;
  // Device reads (table + value log) per operation.
  double ReadsPerOp() const;
  double ReadBytesPerOp() const;
};

// The table header (once) and one row per result, for people.
void PrintTextHeader(std::FILE* out);
void PrintText(const BenchResult& r, std::FILE* out);
// One JSON object on one line.
void PrintJson(const BenchResult& r, std::FILE* out);

}  // namespace cairn::bench

#endif  // CAIRN_BENCH_BENCH_REPORT_H_
