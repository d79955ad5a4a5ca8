// The benchmarks of cairn_bench, one dispatch per name.
#include "bench/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace cairn::bench {
namespace {

using Clock = std::chrono::steady_clock;

// From /proc/self/io (zeros where the file is missing, as outside Linux or
// in some containers): read_bytes, what this process has read from
// storage; write_bytes less cancelled_write_bytes, what it has sent or will
// send to storage (dirty pages of a file deleted or truncated before their
// writeback are cancelled: they never reach the device).
struct ProcessStorageIo {
  uint64_t read_bytes = 0;
  uint64_t written_bytes = 0;
};
ProcessStorageIo ReadProcessStorageIo() {
  ProcessStorageIo io;
  std::FILE* f = std::fopen("/proc/self/io", "r");
  if (f == nullptr) return io;
  char line[128];
  unsigned long long value = 0, written = 0, cancelled = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "read_bytes: %llu", &value) == 1) io.read_bytes = value;
    if (std::sscanf(line, "write_bytes: %llu", &value) == 1) written = value;
    if (std::sscanf(line, "cancelled_write_bytes: %llu", &value) == 1) cancelled = value;
  }
  std::fclose(f);
  io.written_bytes = written - std::min(written, cancelled);
  return io;
}

uint64_t NanosSince(Clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
}

EngineStats Subtract(const EngineStats& after, const EngineStats& before) {
  EngineStats d = after;  // disk, live and space are levels, not counters
  d.user_bytes_written -= before.user_bytes_written;
  d.wal_bytes -= before.wal_bytes;
  d.vlog_bytes -= before.vlog_bytes;
  d.flush_bytes -= before.flush_bytes;
  d.compaction_bytes -= before.compaction_bytes;
  d.gc_bytes -= before.gc_bytes;
  d.manifest_bytes -= before.manifest_bytes;
  d.total_bytes_written -= before.total_bytes_written;
  d.table_reads -= before.table_reads;
  d.table_bytes_read -= before.table_bytes_read;
  d.vlog_reads -= before.vlog_reads;
  d.vlog_bytes_read -= before.vlog_bytes_read;
  d.stall_micros -= before.stall_micros;
  d.gc_bytes_relocated -= before.gc_bytes_relocated;
  d.gc_bytes_read -= before.gc_bytes_read;
  return d;
}

// Benchmarks after which space amplification is measured.
bool IsLoadPhase(std::string_view name) {
  return name == "fillseq" || name == "fillrandom" || name == "overwrite" ||
         name == "overwritezipf" || name == "deleterandom" || name == "deletebatches" ||
         name == "droprange" || name == "ycsb_load";
}

bool Writes(std::string_view name) {
  return IsLoadPhase(name) || name == "readwhilewriting" ||
         (name.size() == 6 && name.substr(0, 5) == "ycsb_" && name[5] != 'c');
}

// Prints "name: done/total ops, rate, ETA" on stderr once a second.
class ProgressLine {
 public:
  ProgressLine(std::string name, uint64_t total, double duration_s,
               const std::atomic<uint64_t>* done)
      : name_(std::move(name)), total_(total), duration_s_(duration_s), done_(done),
        thread_([this] { Loop(); }) {}
  ~ProgressLine() {
    stop_.Notify();
    thread_.join();
    std::fprintf(stderr, "\r\033[K");
  }

 private:
  void Loop() {
    const Clock::time_point start = Clock::now();
    while (!stop_.WaitForNotificationWithTimeout(absl::Seconds(1))) {
      const double elapsed = NanosSince(start) / 1e9;
      const uint64_t done = done_->load(std::memory_order_relaxed);
      const double rate = elapsed > 0 ? done / elapsed : 0;
      double eta = 0;
      if (duration_s_ > 0) {
        eta = std::max(0.0, duration_s_ - elapsed);
      } else if (rate > 0 && total_ > done) {
        eta = (total_ - done) / rate;
      }
      std::fprintf(stderr, "\r\033[K%s: %llu ops, %.0f ops/s, ETA %.0f s", name_.c_str(),
                   static_cast<unsigned long long>(done), rate, eta);
      std::fflush(stderr);
    }
  }

  const std::string name_;
  const uint64_t total_;
  const double duration_s_;
  const std::atomic<uint64_t>* const done_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace

struct BenchRunner::ThreadState {
  explicit ThreadState(uint64_t seed) : gen(std::seed_seq{seed}), zipf(1) {}
  int id = 0;
  absl::InsecureBitGen gen;
  ZipfianGenerator zipf;
  std::string key, value;
  uint64_t found = 0, bytes = 0, scanned = 0;
  std::string upper;
  Histogram latency;
};

const std::vector<std::string>& BenchmarkNames() {
  static const std::vector<std::string> names = {
      "fillseq", "fillrandom", "overwrite", "overwritezipf", "readrandom", "readmissing", "readseq",
      "getrange",
      "seekrandom", "multireadrandom", "readwhilewriting", "deleterandom", "deletebatches",
      "droprange", "ycsb_load",
      "ycsb_a", "ycsb_b", "ycsb_c", "ycsb_d", "ycsb_e", "ycsb_f"};
  return names;
}

BenchRunner::BenchRunner(BenchEngine* engine, const BenchConfig& config)
    : engine_(engine), config_(config), keys_(config.key_size),
      values_(config.value_min, config.value_max, config.compression_ratio, config.seed),
      tracker_(config.num), records_(config.num) {}

absl::StatusOr<BenchResult> BenchRunner::Run(std::string_view name) {
  const auto& names = BenchmarkNames();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown benchmark \"", std::string(name), "\""));
  }
  BenchResult result;
  result.benchmark = std::string(name);
  result.engine = engine_->Name();
  result.threads = config_.threads;
  const EngineStats before = engine_->Stats();
  const ProcessStorageIo os_before = ReadProcessStorageIo();
  absl::Status s = Dispatch(name, &result);
  if (!s.ok()) return s;
  const Clock::time_point settle_start = Clock::now();
  if (IsLoadPhase(name)) {
    // Space is measured on the tables, not the memtable: write it out.
    s = engine_->Flush();
    if (!s.ok()) return s;
  }
  if (Writes(name)) {
    s = engine_->WaitForCompactions();
    if (!s.ok()) return s;
    result.settle_seconds = NanosSince(settle_start) / 1e9;
  }
  result.delta = Subtract(engine_->Stats(), before);
  const ProcessStorageIo os_after = ReadProcessStorageIo();
  result.os_read_bytes = os_after.read_bytes - os_before.read_bytes;
  result.os_written_bytes =
      os_after.written_bytes - std::min(os_after.written_bytes, os_before.written_bytes);
  if (IsLoadPhase(name)) {
    // After the counters are taken: the engine may scan to count live bytes.
    s = engine_->MeasureLiveBytes(config_.use_existing_db ? 0 : tracker_.live_bytes());
    if (!s.ok()) return s;
    const EngineStats space = engine_->Stats();
    result.space_measured = true;
    result.disk_bytes = space.disk_bytes;
    result.live_bytes = space.live_bytes;
    result.space_amplification = space.space_amplification;
    result.max_disk_bytes = std::max(result.max_disk_bytes, space.disk_bytes);
    if (space.live_bytes > 0) {
      result.max_space_amplification =
          static_cast<double>(result.max_disk_bytes) / space.live_bytes;
    }
  }
  return result;
}

absl::Status BenchRunner::RunThreads(uint64_t count, Op op, BenchResult* result) {
  const int n = std::max(1, config_.threads);
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false};
  absl::Mutex mu;
  absl::Status first_error;
  std::vector<std::unique_ptr<ThreadState>> states;
  for (int i = 0; i < n; ++i) {
    states.push_back(std::make_unique<ThreadState>(config_.seed * 1000003 + i));
    states.back()->id = i;
  }
  std::unique_ptr<ProgressLine> progress;
  if (config_.progress) {
    progress = std::make_unique<ProgressLine>(result->benchmark, count, config_.duration_s, &done);
  }
  // Samples bytes on disk every 250 ms while the benchmark runs, for the
  // run's maximum; with --space_sample_secs every that many seconds a sample
  // is also a line on stderr, its amplification taken over the bench's own
  // account of live bytes at that moment.
  std::atomic<uint64_t> max_disk{0};
  absl::Notification sampling_done;
  const Clock::time_point start = Clock::now();
  const bool print_samples = config_.space_sample_s > 0;
  const absl::Duration period = absl::Milliseconds(250);
  std::thread sampler([&] {
    absl::Time next_print = absl::Now();
    do {
      const EngineStats st = engine_->Stats();
      const uint64_t d = st.disk_bytes;
      if (d > max_disk.load()) max_disk.store(d);
      if (print_samples && absl::Now() >= next_print) {
        next_print += absl::Seconds(config_.space_sample_s);
        const uint64_t live = tracker_.live_bytes();
        // Where the engine names its parts: segments (counted garbage in
        // them), tables, and the rest (the WAL, files being written).
        std::string parts;
        if (st.segment_bytes > 0) {
          const uint64_t other = d - std::min(d, st.segment_bytes + st.sst_bytes);
          parts = absl::StrFormat(
              " segments=%.1fMiB (garbage %.1fMiB, foreseen %.1fMiB) sst=%.1fMiB other=%.1fMiB"
              " gc_amp=%.3f",
              st.segment_bytes / 1048576.0, st.segment_garbage_bytes / 1048576.0,
              st.segment_foreseen_bytes / 1048576.0,
              st.sst_bytes / 1048576.0, other / 1048576.0, st.gc_space_amplification);
        }
        std::fprintf(stderr, "space %s t=%.1fs ops=%llu disk=%.1fMiB live=%.1fMiB amp=%.3f%s\n",
                     result->benchmark.c_str(), NanosSince(start) / 1e9,
                     static_cast<unsigned long long>(done.load(std::memory_order_relaxed)),
                     d / 1048576.0, live / 1048576.0,
                     live > 0 ? static_cast<double>(d) / live : 0.0, parts.c_str());
      }
    } while (!sampling_done.WaitForNotificationWithTimeout(period));
  });
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(config_.duration_s));
  auto body = [&](ThreadState& t) {
    // Thread t's share of count; by duration, until the deadline.
    const uint64_t share = count / n + (static_cast<uint64_t>(t.id) < count % n ? 1 : 0);
    uint64_t local = 0;
    for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      if (config_.duration_s > 0 ? Clock::now() >= deadline : local >= share) break;
      const Clock::time_point op_start = Clock::now();
      absl::StatusOr<uint64_t> ops = op(t, config_.duration_s > 0 ? i : local);
      t.latency.Add(NanosSince(op_start));
      if (!ops.ok()) {
        absl::MutexLock lock(&mu);
        if (first_error.ok()) first_error = ops.status();
        stop.store(true);
        break;
      }
      local += *ops;
      done.fetch_add(*ops, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back(body, std::ref(*states[i]));
  body(*states[0]);
  for (std::thread& th : threads) th.join();
  result->seconds = NanosSince(start) / 1e9;
  sampling_done.Notify();
  sampler.join();
  result->max_disk_bytes = max_disk.load();
  progress.reset();
  result->ops = done.load();
  for (const auto& t : states) {
    result->found += t->found;
    result->bytes += t->bytes;
    result->scanned += t->scanned;
    result->latency.Merge(t->latency);
  }
  return first_error;
}

absl::Status BenchRunner::DeleteIndex(ThreadState& t, uint64_t index) {
  keys_.Format(index, &t.key);
  absl::Status s = engine_->Delete(t.key);
  if (!s.ok()) return s;
  tracker_.Delete(index);
  t.bytes += t.key.size();
  return absl::OkStatus();
}

absl::Status BenchRunner::PutIndex(ThreadState& t, uint64_t index) {
  keys_.Format(index, &t.key);
  const std::string_view value = values_.Next(t.gen);
  absl::Status s = engine_->Put(t.key, value);
  if (!s.ok()) return s;
  tracker_.Put(index, t.key.size(), value.size());
  t.bytes += t.key.size() + value.size();
  return absl::OkStatus();
}

absl::Status BenchRunner::Dispatch(std::string_view name, BenchResult* result) {
  const uint64_t num = std::max<uint64_t>(config_.num, 1);
  // Reads count a found key's value bytes (in t.value); NotFound is not an
  // error.
  auto count_read = [](ThreadState& t, const absl::Status& s) -> absl::StatusOr<uint64_t> {
    if (s.ok()) {
      ++t.found;
      t.bytes += t.key.size() + t.value.size();
    } else if (!absl::IsNotFound(s)) {
      return s;
    }
    return 1;
  };
  auto read = [&](ThreadState& t, uint64_t index) -> absl::StatusOr<uint64_t> {
    keys_.Format(index, &t.key);
    return count_read(t, engine_->Get(t.key, &t.value));
  };
  if (name == "fillseq") {
    return RunThreads(num, [&](ThreadState& t, uint64_t i) -> absl::StatusOr<uint64_t> {
      const uint64_t per = num / config_.threads + 1;
      absl::Status s = PutIndex(t, (t.id * per + i) % num);
      if (!s.ok()) return s;
      return 1;
    }, result);
  }
  if (name == "fillrandom" || name == "overwrite") {
    return RunThreads(num, [&](ThreadState& t, uint64_t) -> absl::StatusOr<uint64_t> {
      absl::Status s = PutIndex(t, absl::Uniform<uint64_t>(t.gen, 0, num));
      if (!s.ok()) return s;
      return 1;
    }, result);
  }
  if (name == "overwritezipf") {
    // Skewed updates (Zipfian, theta 0.99): a few hot keys take most writes.
    return RunThreads(num, [&](ThreadState& t, uint64_t) -> absl::StatusOr<uint64_t> {
      absl::Status s = PutIndex(t, t.zipf.Next(t.gen, num));
      if (!s.ok()) return s;
      return 1;
    }, result);
  }
  if (name == "getrange") {
    // range_bytes at a random offset of a random key's value (the value
    // size is known only for fixed --value_size; offsets past a shorter
    // value return fewer bytes).
    const uint64_t span =
        config_.value_max > config_.range_bytes ? config_.value_max - config_.range_bytes : 0;
    return RunThreads(Reads(), [&](ThreadState& t, uint64_t) -> absl::StatusOr<uint64_t> {
      keys_.Format(absl::Uniform<uint64_t>(t.gen, 0, num), &t.key);
      const uint64_t offset = absl::Uniform<uint64_t>(absl::IntervalClosed, t.gen, 0, span);
      return count_read(t, engine_->GetRange(t.key, offset, config_.range_bytes, &t.value));
    }, result);
  }
  if (name == "readrandom") {
    return RunThreads(Reads(), [&](ThreadState& t, uint64_t) {
      return read(t, absl::Uniform<uint64_t>(t.gen, 0, num));
    }, result);
  }
  if (name == "readmissing") {
    // Indices past every written one; the key still has key_size digits.
    return RunThreads(Reads(), [&](ThreadState& t, uint64_t) {
      return read(t, records_.load() + absl::Uniform<uint64_t>(t.gen, 0, num) + 1);
    }, result);
  }
  if (name == "deleterandom") {
    return RunThreads(num, [&](ThreadState& t, uint64_t) -> absl::StatusOr<uint64_t> {
      absl::Status s = DeleteIndex(t, absl::Uniform<uint64_t>(t.gen, 0, num));
      if (!s.ok()) return s;
      return 1;
    }, result);
  }
  if (name == "droprange") {
    // Issue 60: one DeleteRange drops the first --drop_fraction of the key
    // space (after a fill), then the engine settles step by step until its
    // directory is at most --drop_target times the live bytes. Prints the
    // time that took and the bytes GC read doing it (the target: under 5%
    // of the dropped bytes).
    const uint64_t end_index = static_cast<uint64_t>(static_cast<double>(num) * config_.drop_fraction);
    std::string begin, end;
    keys_.Format(0, &begin);
    keys_.Format(end_index, &end);
    const uint64_t live_before = tracker_.live_bytes();
    const EngineStats before = engine_->Stats();
    const Clock::time_point start = Clock::now();
    if (absl::Status s = engine_->DeleteRange(begin, end); !s.ok()) return s;
    for (uint64_t i = 0; i < end_index; ++i) tracker_.Delete(i);
    const uint64_t live = tracker_.live_bytes();
    if (absl::Status s = engine_->MeasureLiveBytes(live); !s.ok()) return s;
    double reached = -1;
    int steps = 0;
    for (;;) {
      const EngineStats now = engine_->Stats();
      if (live > 0 && static_cast<double>(now.disk_bytes) <= config_.drop_target * live) {
        reached = NanosSince(start) / 1e9;
        break;
      }
      if (NanosSince(start) / 1e9 > config_.drop_settle_s) break;
      absl::StatusOr<bool> more = engine_->SettleStep();
      if (!more.ok()) return more.status();
      ++steps;
      if (!*more && steps > 1) {
        const EngineStats last = engine_->Stats();
        if (static_cast<double>(last.disk_bytes) <= config_.drop_target * live) {
          reached = NanosSince(start) / 1e9;
        }
        break;
      }
    }
    const EngineStats after = engine_->Stats();
    const uint64_t dropped = live_before - std::min(live_before, live);
    const uint64_t gc_read = after.gc_bytes_read - before.gc_bytes_read;
    const std::string when =
        reached >= 0
            ? absl::StrFormat("space <= %.2fx live after %.1f s", config_.drop_target, reached)
            : absl::StrFormat("space never <= %.2fx live", config_.drop_target);
    std::printf(
        "droprange %s: dropped %.1f MiB of %.1f MiB; %s; %d settle steps; space %.1f MiB = "
        "%.2fx the %.1f MiB live; GC read %.1f MiB (%.2f%% of the dropped bytes)\n",
        engine_->Name().c_str(), dropped / 1048576.0, live_before / 1048576.0, when.c_str(),
        steps, after.disk_bytes / 1048576.0,
        live == 0 ? 0.0 : static_cast<double>(after.disk_bytes) / live, live / 1048576.0,
        gc_read / 1048576.0, dropped == 0 ? 0.0 : 100.0 * gc_read / dropped);
    result->ops = 1;
    return absl::OkStatus();
  }
  if (name == "deletebatches") {
    // Runs of adjacent keys, as an application drops a batch it wrote
    // together: after fillseq their records lie side by side in the value
    // log (docs/gc.md, "Punched runs").
    const uint64_t run = config_.delete_run, period = config_.delete_period;
    const uint64_t deletes = num / period * run + std::min(num % period, run);
    return RunThreads(deletes, [&](ThreadState& t, uint64_t i) -> absl::StatusOr<uint64_t> {
      const uint64_t per = deletes / config_.threads + 1;
      const uint64_t j = (t.id * per + i) % std::max<uint64_t>(deletes, 1);
      absl::Status s = DeleteIndex(t, j / run * period + j % run);  // the j-th key to delete
      if (!s.ok()) return s;
      return 1;
    }, result);
  }
  if (name == "seekrandom") {
    return RunThreads(Reads(), [&](ThreadState& t, uint64_t) -> absl::StatusOr<uint64_t> {
      const uint64_t index = absl::Uniform<uint64_t>(t.gen, 0, num);
      keys_.Format(index, &t.key);
      const int nexts = static_cast<int>(absl::Uniform<size_t>(
          absl::IntervalClosed, t.gen, config_.seek_nexts_min, config_.seek_nexts_max));
      std::optional<std::string_view> upper;
      if (config_.scan_bounds) {
        keys_.Format(index + nexts + 1, &t.upper);
        upper = t.upper;
      }
      int entries = 0;
      uint64_t bytes = 0;
      absl::Status s = engine_->Scan(t.key, nexts, upper, &entries, &bytes);
      if (!s.ok()) return s;
      t.scanned += entries;
      if (entries > 0) ++t.found;
      t.bytes += bytes;
      return 1;
    }, result);
  }
  if (name == "multireadrandom") {
    const int batch = std::max(1, config_.batch_size);
    return RunThreads(Reads(), [&](ThreadState& t, uint64_t) -> absl::StatusOr<uint64_t> {
      std::vector<std::string> key_storage(batch);
      std::vector<std::string_view> keys(batch);
      for (int i = 0; i < batch; ++i) {
        keys_.Format(absl::Uniform<uint64_t>(t.gen, 0, num), &key_storage[i]);
        keys[i] = key_storage[i];
      }
      std::vector<std::string> values;
      std::vector<absl::Status> statuses = engine_->MultiGet(keys, &values);
      for (size_t i = 0; i < statuses.size(); ++i) {
        if (statuses[i].ok()) {
          ++t.found;
          t.bytes += keys[i].size() + values[i].size();
        } else if (!absl::IsNotFound(statuses[i])) {
          return statuses[i];
        }
      }
      return static_cast<uint64_t>(batch);
    }, result);
  }
  if (name == "readseq") {
    // One cursor per thread, each walking the whole key space (wrapping).
    std::vector<std::unique_ptr<BenchCursor>> cursors(std::max(1, config_.threads));
    return RunThreads(Reads(), [&](ThreadState& t, uint64_t) -> absl::StatusOr<uint64_t> {
      std::unique_ptr<BenchCursor>& cursor = cursors[t.id];
      if (cursor == nullptr) {
        cursor = engine_->NewCursor();
        cursor->SeekToFirst();
      } else {
        cursor->Next();
        if (!cursor->Valid()) {
          absl::Status s = cursor->status();
          if (!s.ok()) return s;
          cursor->SeekToFirst();
        }
      }
      if (!cursor->Valid()) return cursor->status().ok() ? absl::StatusOr<uint64_t>(1)
                                                         : cursor->status();
      ++t.found;
      t.bytes += cursor->key().size() + cursor->value().size();
      return 1;
    }, result);
  }
  if (name == "readwhilewriting") return RunReadWhileWriting(result);
  if (name == "ycsb_load") {
    const Permutation order(num, config_.seed);
    return RunThreads(num, [&](ThreadState& t, uint64_t i) -> absl::StatusOr<uint64_t> {
      // Thread t loads positions t, t + threads, ... of the permuted order.
      absl::Status s = PutIndex(t, order((i * config_.threads + t.id) % num));
      if (!s.ok()) return s;
      return 1;
    }, result);
  }
  return RunYcsb(name.back(), result);
}

absl::Status BenchRunner::RunReadWhileWriting(BenchResult* result) {
  const uint64_t num = std::max<uint64_t>(config_.num, 1);
  std::atomic<bool> stop{false};
  absl::Status writer_status;
  uint64_t writer_ops = 0;
  std::thread writer([&] {
    ThreadState t(config_.seed * 7919 + 17);
    while (!stop.load(std::memory_order_relaxed)) {
      writer_status = PutIndex(t, absl::Uniform<uint64_t>(t.gen, 0, num));
      if (!writer_status.ok()) break;
      ++writer_ops;
    }
  });
  absl::Status s = RunThreads(Reads(), [&](ThreadState& t, uint64_t) -> absl::StatusOr<uint64_t> {
    keys_.Format(absl::Uniform<uint64_t>(t.gen, 0, num), &t.key);
    absl::Status g = engine_->Get(t.key, &t.value);
    if (g.ok()) {
      ++t.found;
      t.bytes += t.key.size() + t.value.size();
    } else if (!absl::IsNotFound(g)) {
      return g;
    }
    return 1;
  }, result);
  stop.store(true);
  writer.join();
  result->writer_ops = writer_ops;
  return s.ok() ? writer_status : s;
}

// YCSB core workloads (Cooper et al., SoCC 2010), over the num loaded records:
// A 50% read / 50% update, B 95/5, C read only (all zipfian); D 95% read of
// the latest records / 5% insert; E 95% scan (zipfian start, 1..100 entries)
// / 5% insert; F 50% read / 50% read-modify-write.
absl::Status BenchRunner::RunYcsb(char workload, BenchResult* result) {
  struct Mix {
    int read, update, insert, scan, rmw;
  };
  Mix mix{};
  switch (workload) {
    case 'a': mix = {50, 50, 0, 0, 0}; break;
    case 'b': mix = {95, 5, 0, 0, 0}; break;
    case 'c': mix = {100, 0, 0, 0, 0}; break;
    case 'd': mix = {95, 0, 5, 0, 0}; break;
    case 'e': mix = {0, 0, 5, 95, 0}; break;
    case 'f': mix = {50, 0, 0, 0, 50}; break;
    default: return absl::InvalidArgumentError(absl::StrCat("unknown YCSB workload ", std::string(1, workload)));
  }
  const bool latest = workload == 'd';
  return RunThreads(Reads(), [&](ThreadState& t, uint64_t) -> absl::StatusOr<uint64_t> {
    const uint64_t records = std::max<uint64_t>(records_.load(std::memory_order_relaxed), 1);
    const uint64_t rank = t.zipf.Next(t.gen, records);
    const uint64_t index = latest ? records - 1 - rank : ScrambleRank(rank, records);
    int dice = absl::Uniform<int>(t.gen, 0, 100);
    absl::Status s;
    if ((dice -= mix.read) < 0 || (mix.rmw > 0 && dice < mix.rmw)) {
      keys_.Format(index, &t.key);
      s = engine_->Get(t.key, &t.value);
      if (s.ok()) {
        ++t.found;
        t.bytes += t.key.size() + t.value.size();
      } else if (absl::IsNotFound(s)) {
        s = absl::OkStatus();  // an insert still in flight on another thread
      }
      if (s.ok() && mix.rmw > 0 && dice >= 0) s = PutIndex(t, index);
    } else if ((dice -= mix.update) < 0) {
      s = PutIndex(t, index);
    } else if ((dice -= mix.insert) < 0) {
      s = PutIndex(t, records_.fetch_add(1));
    } else {
      keys_.Format(index, &t.key);
      int entries = 0;
      uint64_t bytes = 0;
      s = engine_->Scan(t.key, absl::Uniform<int>(absl::IntervalClosed, t.gen, 1, 100) - 1,
                        std::nullopt, &entries, &bytes);
      t.scanned += entries;
      if (entries > 0) ++t.found;
      t.bytes += bytes;
    }
    if (!s.ok()) return s;
    return 1;
  }, result);
}

}  // namespace cairn::bench
