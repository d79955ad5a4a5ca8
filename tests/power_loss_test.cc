// Power-loss crash cycles on the real file system (docs/testing.md, "power
// loss"). A kill -9 (tests/crash_test.cc) loses only what the process still
// held; a power failure also loses what the kernel held: every byte no
// fdatasync covered and every create or rename no directory fsync covered.
// Each cycle here opens the database through io::FaultFileSystem over the
// real backend (CAIRN_IO=posix or uring), runs the crash suites' workload
// (tests/crash_op_log.h: puts, deletes, batches, one write in six synced,
// forced flushes, compactions and GC, background GC on) on a writer thread,
// and after a random 5-150 ms cuts the power: the file system turns
// inactive (every later write, sync, rename or unlink fails and changes
// nothing), the DB is dropped, and SimulateCrash(kPowerLoss) rewinds every
// file to what was synced (keeping, at random, some whole pages of the
// rest) and undoes every directory change no SyncDir made durable.
//
// Then the reopened database must equal the state before the cycle with a
// prefix of this cycle's issued writes applied, a prefix that holds every
// acknowledged sync write (docs/durability.md, "Power loss"): no lost sync
// write, no hole, no half batch, no deleted key back, values byte-identical.
// Point reads must agree with the scan, and the closed database must pass
// `cairn check` with no orphan and nothing off the space ledger.
//
// Cycles per (mode, backend): 30 (about 10 s on 2 cores); 300 with
// CAIRN_LONG=1. The base seed is
// printed; CAIRN_CRASH_SEED=<n> reruns the same workloads, cut delays and
// crash images (where the cut lands still depends on timing).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/file_system.h"
#include "io/testing/status_matchers.h"
#include "tests/check_tool.h"
#include "tests/crash_checks.h"
#include "tests/crash_op_log.h"

namespace cairn::crash {
namespace {

namespace fs = std::filesystem;

struct PowerLossParams {
  const char* mode;
  size_t value_separation_threshold;
  const char* backend;  // value of CAIRN_IO
  bool direct_writes = false;  // Options::direct_writes (CAIRN_CRASH_DIRECT_WRITES)
  bool as_written = false;  // separate_at_flush_below 0 (CAIRN_CRASH_AS_WRITTEN)
};

// What the writer thread did before the power failed.
struct WriterLog {
  absl::Mutex mu;
  std::vector<LoggedOp> issued ABSL_GUARDED_BY(mu);  // in order; the last may be unacknowledged
  size_t acknowledged ABSL_GUARDED_BY(mu) = 0;       // issued[0, acknowledged) returned OK
  size_t last_sync_acked ABSL_GUARDED_BY(mu) = 0;    // 1 + index of the last acked sync write
};

// Writes until stop is set or a write fails (the power is out).
void RunWriter(DB* db, uint64_t seed, const std::atomic<bool>& stop, WriterLog* log) {
  std::mt19937_64 rng(seed);
  for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
    const LoggedOp op = RandomOp(rng, i);
    WriteBatch batch = MakeBatch(op);
    {
      absl::MutexLock l(&log->mu);
      log->issued.push_back(op);
    }
    WriteOptions wo;
    wo.sync = op.sync;
    if (!db->Write(wo, batch).ok()) return;
    {
      absl::MutexLock l(&log->mu);
      log->acknowledged = log->issued.size();
      if (op.sync) log->last_sync_acked = log->issued.size();
    }
    const uint64_t r = rng() % 1000;
    absl::Status s;
    if (r < 4) {
      s = db->Flush();
    } else if (r < 5) {
      s = db->CompactRange(nullptr, nullptr);
    } else if (r < 7) {
      s = db->RunGC().status();
    }
    if (!s.ok()) return;
  }
}

class PowerLossTest : public ::testing::TestWithParam<PowerLossParams> {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrFormat("cairn_power_%d_%s_%s", ::getpid(), GetParam().mode,
                           GetParam().backend);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_path_ = (dir_ / "db").string();
    // The file system here and `cairn check` use the backend under test.
    ::setenv("CAIRN_IO", GetParam().backend, 1);
    ::setenv("CAIRN_CRASH_DIRECT_WRITES", GetParam().direct_writes ? "1" : "0", 1);
    ::setenv("CAIRN_CRASH_AS_WRITTEN", GetParam().as_written ? "1" : "0", 1);
  }
  void TearDown() override {
    ::unsetenv("CAIRN_IO");
    ::unsetenv("CAIRN_CRASH_DIRECT_WRITES");
    ::unsetenv("CAIRN_CRASH_AS_WRITTEN");
    if (!HasFailure()) fs::remove_all(dir_);
  }

  fs::path dir_;
  std::string db_path_;
};

TEST_P(PowerLossTest, EverySyncAcknowledgedWriteSurvivesAndTheRestIsAPrefix) {
  const PowerLossParams& p = GetParam();
  const uint64_t base_seed = CrashBaseSeed();
  std::printf("power_loss_test mode=%s backend=%s CAIRN_CRASH_SEED=%llu\n", p.mode, p.backend,
              static_cast<unsigned long long>(base_seed));
  SCOPED_TRACE(absl::StrCat("CAIRN_CRASH_SEED=", base_seed));
  std::mt19937_64 rng(base_seed);
  ASSERT_TRUE(fs::exists(kCairnTool)) << "build the cairn_tool target first";

  auto real = io::NewFileSystem(io::IoBackend::kAuto);  // CAIRN_IO picks it
  ASSERT_OK(real);
  const std::string backend_used = (*real)->Name();
  auto fault = std::make_shared<io::FaultFileSystem>(
      *real, io::FaultFileSystemOptions{.drop_unsynced_dir_entries = true});
  const Options options = CrashTestOptions(p.value_separation_threshold);

  const int cycles = LongRun() ? 300 : 30;
  Model model;
  uint64_t issued_total = 0, acked_total = 0, sync_acked_total = 0, acked_lost = 0;
  uint64_t violations = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int cycle = 0; cycle < cycles; ++cycle) {
    const uint64_t writer_seed = rng();
    const uint64_t crash_seed = rng();
    const int delay_ms = 5 + static_cast<int>(rng() % 146);
    SCOPED_TRACE(absl::StrFormat("cycle %d writer seed %d crash seed %d delay %d ms", cycle,
                                 writer_seed, crash_seed, delay_ms));
    auto db = OpenWithFileSystem(options, db_path_, fault);
    ASSERT_TRUE(db.ok()) << "open before the cycle: " << db.status();

    WriterLog log;
    std::atomic<bool> stop{false};
    std::thread writer(RunWriter, db->get(), writer_seed, std::cref(stop), &log);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    // The power fails: from here nothing reaches the disk.
    fault->SetFilesystemActive(false);
    stop.store(true);
    writer.join();
    db->reset();
    ASSERT_OK(fault->SimulateCrash(io::CrashMode::kPowerLoss, crash_seed));

    std::vector<LoggedOp> issued;
    size_t acknowledged, last_sync;
    {
      absl::MutexLock l(&log.mu);
      issued = log.issued;
      acknowledged = log.acknowledged;
      last_sync = log.last_sync_acked;
    }
    issued_total += issued.size();
    acked_total += acknowledged;
    for (size_t i = 0; i < acknowledged; ++i) sync_acked_total += issued[i].sync ? 1 : 0;

    db = OpenWithFileSystem(options, db_path_, fault);
    ASSERT_TRUE(db.ok()) << "reopen after power loss: " << db.status();
    Model recovered;
    ScanAll(db->get(), &recovered);
    ASSERT_FALSE(HasFatalFailure());
    // The longest prefix of the issued writes that the recovered state
    // equals; it must reach past the last acknowledged sync write.
    Model m = model;
    std::optional<size_t> match;
    if (m == recovered) match = 0;
    for (size_t n = 1; n <= issued.size(); ++n) {
      ApplyOp(issued[n - 1], &m);
      if (m == recovered) match = n;
    }
    if (!match.has_value() || *match < last_sync) {
      ++violations;
      Model want = model;
      for (size_t i = 0; i < last_sync; ++i) ApplyOp(issued[i], &want);
      ADD_FAILURE() << "recovered state is no prefix of the " << issued.size()
                    << " issued writes holding the last acknowledged sync write (at " << last_sync
                    << "); vs that prefix: " << DescribeDiff(recovered, want);
      break;
    }
    if (*match < acknowledged) acked_lost += acknowledged - *match;
    ExpectPointReadsAgree(db->get(), recovered, issued);
    ASSERT_FALSE(HasFatalFailure());
    model = std::move(recovered);
    db->reset();

    CheckReport check = RunCheckTool(db_path_);
    ASSERT_GE(check.problems, 0) << "cairn check gave no summary:\n" << check.output;
    ASSERT_EQ(check.problems, 0) << "cairn check after the reopen:\n" << check.output;
    ASSERT_EQ(check.orphans, 0) << check.output;
    ASSERT_EQ(check.unbalanced, 0) << check.output;
    ASSERT_EQ(check.exit_code, 0) << check.output;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "power_loss_test mode=%s backend=%s (%s): %d cycles, %llu writes issued, %llu "
      "acknowledged (%llu sync, all recovered), %llu acknowledged non-sync writes lost to the "
      "power, %llu violations, %zu live keys, %.1f s\n",
      p.mode, p.backend, backend_used.c_str(), cycles,
      static_cast<unsigned long long>(issued_total), static_cast<unsigned long long>(acked_total),
      static_cast<unsigned long long>(sync_acked_total),
      static_cast<unsigned long long>(acked_lost), static_cast<unsigned long long>(violations),
      model.size(), secs);
}

// The mode has teeth: writes no sync covered are gone after the power
// fails, and the sync write before them is not.
TEST_P(PowerLossTest, UnsyncedWritesAreLostAndTheSyncedOneIsNot) {
  auto real = io::NewFileSystem(io::IoBackend::kAuto);
  ASSERT_OK(real);
  auto fault = std::make_shared<io::FaultFileSystem>(
      *real, io::FaultFileSystemOptions{.drop_unsynced_dir_entries = true});
  const Options options = CrashTestOptions(GetParam().value_separation_threshold);
  {
    auto db = OpenWithFileSystem(options, db_path_, fault);
    ASSERT_OK(db);
    WriteOptions sync;
    sync.sync = true;
    ASSERT_OK((*db)->Put(sync, "synced", std::string(300, 's')));
    for (int i = 0; i < 20; ++i) {
      ASSERT_OK((*db)->Put(WriteOptions(), absl::StrCat("unsynced", i), std::string(300, 'u')));
    }
    fault->SetFilesystemActive(false);
  }
  ASSERT_OK(fault->SimulateCrash(io::CrashMode::kDropUnsynced, 1));
  auto db = OpenWithFileSystem(options, db_path_, fault);
  ASSERT_OK(db);
  Model recovered;
  ScanAll(db->get(), &recovered);
  EXPECT_EQ(recovered, (Model{{"synced", std::string(300, 's')}}));
}

INSTANTIATE_TEST_SUITE_P(ModesAndBackends, PowerLossTest,
                         ::testing::Values(PowerLossParams{"inline", kInlineValues, "posix"},
                                           PowerLossParams{"inline", kInlineValues, "uring"},
                                           PowerLossParams{"separated", 100, "posix"},
                                           PowerLossParams{"separated_as_written", 100, "uring", false,
                                                           true},
                                           PowerLossParams{"separated_direct", 100, "posix", true},
                                           PowerLossParams{"separated_direct", 100, "uring", true}),
                         [](const auto& info) {
                           return absl::StrCat(info.param.mode, "_", info.param.backend);
                         });

}  // namespace
}  // namespace cairn::crash
