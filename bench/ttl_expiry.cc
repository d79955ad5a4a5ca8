// ttl_expiry measures what expiry costs and gives back (issue 60, "expiry:
// 1 GiB of 16 KiB values with a TTL, after expiry and settle: space and
// bytes read"): it writes --gib of --value_size values, --live_percent of
// them without a TTL and the rest with --ttl seconds, moves its clock past
// the TTL (or, with --real_wait, sleeps through it), settles (a full
// compaction, which drops the expired entries and counts their values as
// garbage without reading them, then GC until it frees nothing more) and
// prints the directory's bytes before and after, the live bytes, and the
// bytes the settle read from the tables (compaction) and the value log (GC
// and everything else), with its time.
//
//   ttl_expiry --db=/mnt/fast/ttl --gib=1 --value_size=16384 --ttl=3600
//
// Timed figures only on a quiet machine (docs/bench.md).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "cairn/options.h"

ABSL_FLAG(std::string, db, "/tmp/cairn_ttl_expiry", "database directory (wiped first)");
ABSL_FLAG(double, gib, 1.0, "GiB of values to write");
ABSL_FLAG(uint64_t, value_size, 16384, "bytes per value");
ABSL_FLAG(uint64_t, ttl, 3600, "TTL of the expiring writes, in seconds");
ABSL_FLAG(uint32_t, live_percent, 10, "share of the writes made without a TTL (0..100)");
ABSL_FLAG(bool, real_wait, false, "sleep through the TTL instead of moving the clock");

namespace {

// The system clock plus an offset the benchmark moves forward.
class SteppedClock : public cairn::Clock {
 public:
  uint64_t NowMicros() override {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return static_cast<uint64_t>(
               std::chrono::duration_cast<std::chrono::microseconds>(now).count()) +
           offset_.load();
  }
  void Advance(uint64_t seconds) { offset_.fetch_add(seconds * 1'000'000); }

 private:
  std::atomic<uint64_t> offset_{0};
};

double MiB(uint64_t b) { return b / 1048576.0; }

void Print(const char* when, const cairn::Stats& s) {
  uint64_t compaction_read = 0;
  for (const cairn::LevelStats& l : s.levels) compaction_read += l.compaction_bytes_read;
  absl::PrintF("%-8s disk %.1f MiB, live estimate %.1f MiB, vlog %.1f MiB read, tables %.1f MiB "
               "read by compaction, gc %.1f MiB read, %d expired dropped\n",
               when, MiB(s.disk_bytes), MiB(s.live_user_bytes_estimate), MiB(s.vlog_bytes_read),
               MiB(compaction_read), MiB(s.gc_bytes_read), s.expired_dropped);
}

int Run() {
  const std::string path = absl::GetFlag(FLAGS_db);
  const uint64_t value_size = absl::GetFlag(FLAGS_value_size);
  const uint64_t ttl = absl::GetFlag(FLAGS_ttl);
  const uint32_t live_percent = absl::GetFlag(FLAGS_live_percent);
  if (value_size == 0 || ttl == 0 || live_percent > 100 || absl::GetFlag(FLAGS_gib) <= 0) {
    absl::FPrintF(stderr, "need --value_size > 0, --ttl > 0, --gib > 0, --live_percent <= 100\n");
    return 2;
  }
  const uint64_t n =
      static_cast<uint64_t>(absl::GetFlag(FLAGS_gib) * (uint64_t{1} << 30)) / value_size;
  auto clock = std::make_shared<SteppedClock>();
  cairn::Options options;
  options.clock = clock;
  if (absl::Status s = cairn::DestroyDB(options, path); !s.ok() && !absl::IsNotFound(s)) {
    absl::FPrintF(stderr, "DestroyDB %s: %s\n", path, s.ToString());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<cairn::DB>> db = cairn::DB::Open(options, path);
  if (!db.ok()) {
    absl::FPrintF(stderr, "open %s: %s\n", path, db.status().ToString());
    return 1;
  }
  std::string value(value_size, 'x');
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < n; ++i) {
    const std::string key = absl::StrFormat("key%012d", (i * 2654435761u) % n);
    for (size_t j = 0; j < 8 && j < value.size(); ++j) value[j] = static_cast<char>(i >> (8 * j));
    const bool live = i % 100 < live_percent;
    const absl::Status s = live ? (*db)->Put({}, key, value)
                                : (*db)->PutWithTTL({}, key, value, ttl);
    if (!s.ok()) {
      absl::FPrintF(stderr, "write %d: %s\n", i, s.ToString());
      return 1;
    }
  }
  if (absl::Status s = (*db)->WaitForBackgroundWork(); !s.ok()) {
    absl::FPrintF(stderr, "wait: %s\n", s.ToString());
    return 1;
  }
  const double write_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  absl::PrintF("wrote %d values of %d bytes (%d%% without TTL) in %.1f s\n", n, value_size,
               live_percent, write_s);
  const cairn::Stats before = (*db)->GetStats();
  Print("before", before);
  if (absl::GetFlag(FLAGS_real_wait)) {
    std::this_thread::sleep_for(std::chrono::seconds(ttl));
  } else {
    clock->Advance(ttl);
  }
  const auto settle_start = std::chrono::steady_clock::now();
  if (absl::Status s = (*db)->CompactRange(nullptr, nullptr); !s.ok()) {
    absl::FPrintF(stderr, "compact: %s\n", s.ToString());
    return 1;
  }
  for (int round = 0; round < 1000; ++round) {
    absl::StatusOr<cairn::GcResult> gc = (*db)->RunGC();
    if (!gc.ok()) {
      absl::FPrintF(stderr, "gc: %s\n", gc.status().ToString());
      return 1;
    }
    if (gc->victims == 0) break;
  }
  if (absl::Status s = (*db)->WaitForBackgroundWork(); !s.ok()) {
    absl::FPrintF(stderr, "wait: %s\n", s.ToString());
    return 1;
  }
  const double settle_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - settle_start).count();
  const cairn::Stats after = (*db)->GetStats();
  Print("after", after);
  const uint64_t expired_bytes = (n - n * live_percent / 100) * value_size;
  absl::PrintF("settle %.1f s; read while settling: vlog %.1f MiB (%.2f%% of the %.1f MiB "
               "expired), gc %.1f MiB; disk %.1f -> %.1f MiB\n",
               settle_s, MiB(after.vlog_bytes_read - before.vlog_bytes_read),
               expired_bytes == 0 ? 0.0
                                  : 100.0 * (after.vlog_bytes_read - before.vlog_bytes_read) /
                                        expired_bytes,
               MiB(expired_bytes), MiB(after.gc_bytes_read - before.gc_bytes_read),
               MiB(before.disk_bytes), MiB(after.disk_bytes));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return Run();
}
