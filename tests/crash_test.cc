// Kill -9 crash test on the real file system (docs/testing.md, "kill -9 of a child
// process"). Each cycle starts tests/crash_child.cc on the same database
// directory under /tmp, lets it write for a random 20-400 ms, kills it with
// SIGKILL, reopens the database here and checks it against the child's op log
// (tests/crash_op_log.h). A process crash loses nothing the kernel was handed,
// and every acknowledged write (sync or not) was handed to the kernel before
// it was acknowledged, so the recovered state must equal the state before the
// cycle with every acknowledged write applied, or with the one write that was
// in flight at the kill applied too. That covers: no lost write, no hole, no
// half batch, no deleted key coming back, values byte-identical. The child
// also forces flushes, compactions and garbage collection (tiny memtables,
// tables and segments; see CrashTestOptions), so kills land in all of them.
//
// After each reopen the database is closed and `cairn check` (the tool's
// binary: tools/check_command.cc) must pass: manifest, every SST, WAL and
// value-log record, every pointer (none dangles), no orphan file; and no
// obsolete WAL or stale manifest may be left. At the end every file in the
// directory must be one the checker counted as live.
//
// Runs on both io backends (CAIRN_IO=posix and CAIRN_IO=uring, set for the
// child and for the reopen here) and in both value modes. Cycles, all on one
// database per (mode, backend) pair: 100 for separated_posix, 40 for the
// others, 25 for each backend with O_DIRECT value-log appends
// (separated_direct); 500 each with CAIRN_LONG=1. The base seed of each pair is printed;
// CAIRN_CRASH_SEED=<n> reruns with that seed (same workloads and kill
// delays; where the kill lands still depends on timing).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "gtest/gtest.h"
#include "io/testing/status_matchers.h"
#include "lsm/filename.h"
#include "tests/check_tool.h"
#include "tests/crash_checks.h"
#include "tests/crash_op_log.h"

extern char** environ;

namespace cairn::crash {
namespace {

namespace fs = std::filesystem;


struct CrashParams {
  const char* mode;
  size_t value_separation_threshold;
  const char* backend;  // value of CAIRN_IO
  int cycles;           // per CI run; CAIRN_LONG=1 runs 500
  bool direct_writes = false;  // Options::direct_writes (CAIRN_CRASH_DIRECT_WRITES)
  int gc_jobs = 1;  // Options::max_background_gc (CAIRN_CRASH_GC_JOBS)
  bool as_written = false;  // separate_at_flush_below 0 (CAIRN_CRASH_AS_WRITTEN)
};

std::string ReadWholeFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Lines of a check report that name something the database does not need:
// the leftovers a crash leaves and the next open cleans up ("cleanup:"
// lines: orphans, obsolete WALs, stale manifests, torn tails, uncounted
// garbage) and unknown files (a note). After a reopen and a clean close
// none may remain.
std::vector<std::string> LeftoverFileNotes(const std::string& output) {
  std::vector<std::string> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cleanup: ", 0) == 0 ||
        (line.rfind("note: ", 0) == 0 && line.find("unrecognized file") != std::string::npos)) {
      out.push_back(line);
    }
  }
  return out;
}

// Files of the database directory by type.
struct DirCounts {
  int tables = 0, segments = 0, wals = 0, manifests = 0, other = 0;
  uint64_t segment_bytes = 0;
};

DirCounts CountFiles(const std::string& db) {
  DirCounts c;
  for (const auto& entry : fs::directory_iterator(db)) {
    uint64_t number;
    lsm::FileType type;
    if (!lsm::ParseFileName(entry.path().filename().string(), &number, &type)) {
      ++c.other;
      continue;
    }
    switch (type) {
      case lsm::FileType::kTable: ++c.tables; break;
      case lsm::FileType::kValueLog:
        ++c.segments;
        c.segment_bytes += fs::file_size(entry.path());
        break;
      case lsm::FileType::kLog: ++c.wals; break;
      case lsm::FileType::kManifest: ++c.manifests; break;
      case lsm::FileType::kCurrent:
      case lsm::FileType::kLock:
      case lsm::FileType::kOptions:
      case lsm::FileType::kInfoLog: break;
      default: ++c.other; break;
    }
  }
  return c;
}

class CrashTest : public ::testing::TestWithParam<CrashParams> {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrFormat("cairn_crash_%d_%s_%s", ::getpid(), GetParam().mode,
                           GetParam().backend);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_path_ = (dir_ / "db").string();
    // The reopen here must use the backend the child used, and its options.
    ::setenv("CAIRN_IO", GetParam().backend, 1);
    ::setenv("CAIRN_CRASH_DIRECT_WRITES", GetParam().direct_writes ? "1" : "0", 1);
    ::setenv("CAIRN_CRASH_GC_JOBS", absl::StrCat(GetParam().gc_jobs).c_str(), 1);
    ::setenv("CAIRN_CRASH_AS_WRITTEN", GetParam().as_written ? "1" : "0", 1);
  }
  void TearDown() override {
    ::unsetenv("CAIRN_IO");
    ::unsetenv("CAIRN_CRASH_DIRECT_WRITES");
    ::unsetenv("CAIRN_CRASH_GC_JOBS");
    ::unsetenv("CAIRN_CRASH_AS_WRITTEN");
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Starts crash_child; returns its pid.
  pid_t Spawn(const std::string& op_log, uint64_t seed, const fs::path& err_path) {
    std::vector<std::string> args = {CAIRN_CRASH_CHILD, db_path_, op_log, absl::StrCat(seed),
                                     absl::StrCat(GetParam().value_separation_threshold),
                                     "100000000"};
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string_view(*e).substr(0, 9) != "CAIRN_IO=") env.emplace_back(*e);
    }
    env.push_back(absl::StrCat("CAIRN_IO=", GetParam().backend));
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (err_fd < 0) return -1;
    const pid_t pid = ::fork();
    if (pid == 0) {
      // Only async-signal-safe calls between fork and exec.
      ::dup2(err_fd, 2);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(err_fd);
    return pid;
  }

  fs::path dir_;
  std::string db_path_;
};

TEST_P(CrashTest, KillNineLosesNoAcknowledgedWrite) {
  const CrashParams& p = GetParam();
  const uint64_t base_seed = CrashBaseSeed();
  std::printf("crash_test mode=%s backend=%s CAIRN_CRASH_SEED=%llu\n", p.mode, p.backend,
              static_cast<unsigned long long>(base_seed));
  SCOPED_TRACE(absl::StrCat("CAIRN_CRASH_SEED=", base_seed));
  std::mt19937_64 rng(base_seed);

  ASSERT_TRUE(fs::exists(kCairnTool)) << "build the cairn_tool target first";
  const int cycles = LongRun() ? 500 : p.cycles;
  Model model;
  uint64_t acked_total = 0, in_flight_applied = 0, in_flight_dropped = 0, idle_cycles = 0;
  uint64_t clean_exits = 0, ingestions = 0;
  uint64_t checks = 0, pointers_checked = 0;
  double check_secs = 0;
  CheckReport last_check;
  std::string backend_used;
  const auto start = std::chrono::steady_clock::now();
  for (int cycle = 0; cycle < cycles; ++cycle) {
    const uint64_t child_seed = rng();
    const int delay_ms = 20 + static_cast<int>(rng() % 381);
    SCOPED_TRACE(absl::StrFormat("cycle %d child seed %d delay %d ms", cycle, child_seed,
                                 delay_ms));
    const std::string op_log = (dir_ / absl::StrCat("oplog.", cycle)).string();
    const fs::path err_path = dir_ / absl::StrCat("child.", cycle, ".err");
    const pid_t pid = Spawn(op_log, child_seed, err_path);
    ASSERT_GT(pid, 0) << "fork failed";
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGKILL);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    if (WIFEXITED(wstatus)) {
      ASSERT_EQ(WEXITSTATUS(wstatus), 0)
          << "the child failed on its own: " << ReadWholeFile(err_path);
      ++clean_exits;
    } else {
      ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
    }

    auto parsed = ParseOpLog(ReadWholeFile(op_log));
    ASSERT_OK(parsed);
    Model expected = model;
    for (const LoggedOp& op : parsed->acknowledged) ApplyOp(op, &expected);
    acked_total += parsed->acknowledged.size();
    for (const LoggedOp& op : parsed->acknowledged) ingestions += op.ingest ? 1 : 0;
    if (parsed->acknowledged.empty()) ++idle_cycles;

    auto db = DB::Open(CrashTestOptions(p.value_separation_threshold), db_path_);
    ASSERT_TRUE(db.ok()) << "reopen after kill -9: " << db.status();
    if (backend_used.empty()) (*db)->GetProperty("cairn.io-backend", &backend_used);
    Model recovered;
    ScanAll(db->get(), &recovered);
    ASSERT_FALSE(HasFatalFailure());
    if (recovered == expected) {
      if (parsed->in_flight.has_value()) ++in_flight_dropped;
    } else {
      ASSERT_TRUE(parsed->in_flight.has_value())
          << "recovered state differs from every acknowledged write applied ("
          << parsed->acknowledged.size() << " this cycle): " << DescribeDiff(recovered, expected);
      Model with_in_flight = expected;
      ApplyOp(*parsed->in_flight, &with_in_flight);
      ASSERT_EQ(recovered == with_in_flight, true)
          << "recovered state is neither the acknowledged writes ("
          << parsed->acknowledged.size() << " this cycle) nor those plus the write in flight; "
          << "vs acknowledged: " << DescribeDiff(recovered, expected)
          << "; vs with in-flight: " << DescribeDiff(recovered, with_in_flight);
      ++in_flight_applied;
    }
    // Point reads agree with the scan for every key this cycle touched.
    ExpectPointReadsAgree(db->get(), recovered, parsed->acknowledged);
    ASSERT_FALSE(HasFatalFailure());
    model = std::move(recovered);
    db->reset();

    // The closed database passes every check of `cairn check`: the manifest,
    // every SST, WAL and value-log record, every pointer (none dangles), and
    // no orphan file; and nothing is left that the next open would delete.
    const auto check_start = std::chrono::steady_clock::now();
    CheckReport check = RunCheckTool(db_path_);
    check_secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start)
                      .count();
    ASSERT_GE(check.problems, 0) << "cairn check gave no summary:\n" << check.output;
    ASSERT_EQ(check.problems, 0) << "cairn check after the reopen:\n" << check.output;
    ASSERT_EQ(check.orphans, 0) << check.output;
    // The space ledger: no segment holds bytes neither referenced nor
    // counted as garbage (the reopen counts whatever the crash left).
    ASSERT_EQ(check.unbalanced, 0) << check.output;
    ASSERT_EQ(check.exit_code, 0) << check.output;
    const std::vector<std::string> leftovers = LeftoverFileNotes(check.output);
    ASSERT_TRUE(leftovers.empty()) << "left after a reopen and a close: " << leftovers[0];
    ++checks;
    pointers_checked += static_cast<uint64_t>(check.pointers);
    last_check = std::move(check);
    fs::remove(op_log);
    fs::remove(err_path);
  }
  // After every cycle, in one database: each file in the directory is one the
  // manifest knows (an SST of the current version, a segment of the set) or
  // the live WALs, the manifest, CURRENT, LOCK, OPTIONS and the info log.
  // The checker's counts are of those; the directory's must equal them.
  const DirCounts files = CountFiles(db_path_);
  EXPECT_EQ(files.tables, last_check.tables) << last_check.output;
  EXPECT_EQ(files.segments, last_check.segments) << last_check.output;
  EXPECT_EQ(files.wals, last_check.wals) << last_check.output;
  EXPECT_EQ(files.manifests, 1) << last_check.output;
  EXPECT_EQ(files.other, 0) << last_check.output;
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "crash_test mode=%s backend=%s (%s): %d cycles, %llu acknowledged writes (%llu of them "
      "ingestions), in-flight write "
      "recovered %llu / lost %llu, %llu cycles killed before any ack, %llu clean exits, "
      "%zu live keys, %.1f s\n",
      p.mode, p.backend, backend_used.c_str(), cycles, static_cast<unsigned long long>(acked_total),
      static_cast<unsigned long long>(ingestions),
      static_cast<unsigned long long>(in_flight_applied),
      static_cast<unsigned long long>(in_flight_dropped),
      static_cast<unsigned long long>(idle_cycles), static_cast<unsigned long long>(clean_exits),
      model.size(), secs);
  uint64_t live_bytes = 0;
  for (const auto& [key, value] : model) live_bytes += key.size() + value.size();
  std::printf(
      "crash_test mode=%s backend=%s: cairn check clean after all %llu reopens (%llu pointers "
      "checked, %.1f s; 0 segments off the ledger); at the end %d SSTs, %d segments (%.2f MiB, "
      "%.2fx the %.2f MiB of live keys and values), %d WALs, no orphan file\n",
      p.mode, p.backend, static_cast<unsigned long long>(checks),
      static_cast<unsigned long long>(pointers_checked), check_secs, files.tables,
      files.segments, files.segment_bytes / 1048576.0,
      live_bytes == 0 ? 0.0 : static_cast<double>(files.segment_bytes) / live_bytes,
      live_bytes / 1048576.0, files.wals);
}

INSTANTIATE_TEST_SUITE_P(
    ModesAndBackends, CrashTest,
    // separated_posix is the 100-cycle run of issue 8's space criterion: no
    // orphan after 100 crash-and-reopen cycles of one database.
    ::testing::Values(CrashParams{"inline", kInlineValues, "posix", 40},
                      CrashParams{"inline", kInlineValues, "uring", 40},
                      CrashParams{"separated", 100, "posix", 100},
                      // Every separated value to the value log as it comes.
                      CrashParams{"separated_as_written", 100, "uring", 40, false, 1, true},
                      // Value-log appends with O_DIRECT (Options::direct_writes).
                      CrashParams{"separated_direct", 100, "posix", 25, true},
                      CrashParams{"separated_direct", 100, "uring", 25, true},
                      // Two background GC jobs at once (Options::max_background_gc).
                      CrashParams{"separated_2gc", 100, "posix", 40, false, 2}),
    [](const auto& info) {
      return absl::StrCat(info.param.mode, "_", info.param.backend);
    });

}  // namespace
}  // namespace cairn::crash
