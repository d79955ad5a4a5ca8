// BenchRunner runs cairn_bench's named benchmarks (db_bench's classics and
// the YCSB core workloads) against one BenchEngine and measures each: the
// operations are timed on `threads` threads, then write phases wait for
// background work and the engine's counters are read again, so the
// amplifications include the flushes and compactions the phase caused.
//
// Thread safety: one Run at a time.
#ifndef CAIRN_BENCH_BENCH_RUNNER_H_
#define CAIRN_BENCH_BENCH_RUNNER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/bench_engine.h"
#include "bench/bench_report.h"
#include "bench/bench_workload.h"

namespace cairn::bench {

struct BenchConfig {
  uint64_t num = 1000000;   // keys in the key space (and puts per fill)
  uint64_t reads = 0;       // operations per read or mixed benchmark; 0 = num
  int threads = 1;
  double duration_s = 0;    // > 0: run each benchmark for this long instead
  size_t key_size = 16;
  size_t value_min = 1024, value_max = 1024;
  double compression_ratio = 0.5;
  size_t seek_nexts_min = 10, seek_nexts_max = 10;
  // seekrandom: give each scan its end as an iterator upper bound (the key
  // after its last entry), so that the engine reads nothing past it.
  bool scan_bounds = false;
  // getrange: bytes per ranged read.
  uint64_t range_bytes = 65536;
  // deletebatches: deletes every key whose index mod delete_period is below
  // delete_run: runs of delete_run adjacent keys, a delete_run /
  // delete_period share of the key space.
  uint64_t delete_run = 40, delete_period = 100;
  // droprange (issue 60): the share of the key space one DeleteRange drops
  // (from the first key), the space target it settles to (disk bytes over
  // live bytes) and the longest it waits for it.
  double drop_fraction = 0.9;
  double drop_target = 1.3;
  double drop_settle_s = 3600;
  int batch_size = 32;
  uint64_t seed = 301;
  bool use_existing_db = false;
  bool progress = false;    // progress line on stderr
  // > 0: sample bytes on disk every this many seconds instead of every
  // 250 ms, and print each sample on stderr (space over time).
  double space_sample_s = 0;
};

// Every name Run accepts, in the order docs/bench.md lists them.
const std::vector<std::string>& BenchmarkNames();

class BenchRunner {
 public:
  BenchRunner(BenchEngine* engine, const BenchConfig& config);

  // Runs one benchmark. InvalidArgument for an unknown name; otherwise the
  // first error an operation (or the engine's background work) returned.
  absl::StatusOr<BenchResult> Run(std::string_view name);

 private:
  struct ThreadState;
  // One timed operation; returns how many operations it counts as.
  using Op = absl::FunctionRef<absl::StatusOr<uint64_t>(ThreadState&, uint64_t)>;

  // Runs op on config_.threads threads, count operations in all (or for
  // duration_s), filling ops, found, bytes, seconds and latency of *result.
  absl::Status RunThreads(uint64_t count, Op op, BenchResult* result);
  absl::Status Dispatch(std::string_view name, BenchResult* result);
  absl::Status RunYcsb(char workload, BenchResult* result);
  absl::Status RunReadWhileWriting(BenchResult* result);

  // Writes a fresh value for index (counted in the tracker) and adds its
  // bytes to *bytes.
  absl::Status PutIndex(ThreadState& t, uint64_t index);
  // Deletes key index and tells the live-bytes tracker.
  absl::Status DeleteIndex(ThreadState& t, uint64_t index);
  uint64_t Reads() const { return config_.reads != 0 ? config_.reads : config_.num; }

  BenchEngine* const engine_;
  const BenchConfig config_;
  const KeyFormatter keys_;
  const ValueSource values_;
  LiveTracker tracker_;
  // Records in the key space: num, plus YCSB inserts since.
  std::atomic<uint64_t> records_;
};

}  // namespace cairn::bench

#endif  // CAIRN_BENCH_BENCH_RUNNER_H_
