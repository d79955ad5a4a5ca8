// The GC threads' priority (Options::gc_nice_adjustment): each GC thread,
// and the io_uring workers it starts, runs at the nice value it inherited
// from the opening thread plus the adjustment; a raise the system refuses
// leaves the inherited value and says so in the info log.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "cairn/db.h"
#include "gtest/gtest.h"
#include "io/testing/process_threads.h"

namespace cairn {
namespace {

using Thread = io::testing::ProcessThread;
using io::testing::ProcessThreads;

int OwnNice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())); }

class GcPriorityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/cairn_gc_priority_", getpid());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  std::string InfoLog() const {
    std::ifstream in(dir_ + "/LOG");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // Whether the info log holds needle: the open writes the GC threads'
  // priority there before it returns.
  bool LogHas(const std::string& needle) const {
    return InfoLog().find(needle) != std::string::npos;
  }

  // The nice values of the GC threads and of their io_uring workers (named
  // iou-wrk-<tid of the thread that owns the ring>).
  static std::vector<int> GcNices() {
    std::vector<int> nices;
    const std::vector<Thread> threads = ProcessThreads();
    for (const Thread& t : threads) {
      if (t.name != "cairn:gc") continue;
      nices.push_back(t.nice);
      const std::string worker = absl::StrCat("iou-wrk-", t.tid);
      for (const Thread& w : threads) {
        if (w.name == worker) nices.push_back(w.nice);
      }
    }
    return nices;
  }

  // Writes and overwrites enough for GC to run a job or two, so that its
  // ring and workers exist, and returns the GC threads' nice values.
  std::vector<int> RunGcAndGetNices(DB* db) {
    const std::string value(8 << 10, 'v');
    for (int round = 0; round < 4; ++round) {
      for (int i = 0; i < 200; ++i) {
        std::string v = value;
        v[0] = static_cast<char>(round);
        EXPECT_TRUE(db->Put({}, absl::StrFormat("key%04d", i), v).ok());
      }
      EXPECT_TRUE(db->Flush().ok());
    }
    EXPECT_TRUE(db->WaitForBackgroundWork().ok());
    return GcNices();
  }

  Options SmallOptions(int adjustment) const {
    Options o;
    o.memtable_size = 256 << 10;
    o.value_separation_threshold = 1024;
    o.separate_at_flush_below = 0;
    o.value_log_segment_size = 1 << 20;
    o.gc_nice_adjustment = adjustment;
    return o;
  }

  std::string dir_;
};

TEST_F(GcPriorityTest, LowerPriorityIsAlwaysApplied) {
  // A higher nice value (a lower priority) needs no privilege.
  const int base = OwnNice();
  const int want = std::min(19, base + 3);
  absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(SmallOptions(3), dir_);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(LogHas(absl::StrCat("gc: threads at nice ", want))) << InfoLog();
  const std::vector<int> nices = RunGcAndGetNices(db->get());
  ASSERT_FALSE(nices.empty());
  for (int n : nices) EXPECT_EQ(n, want);
  EXPECT_EQ(OwnNice(), base);  // the opening thread is left alone
}

TEST_F(GcPriorityTest, ZeroLeavesTheThreadsAtTheOpenersValue) {
  const int base = OwnNice();
  absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(SmallOptions(0), dir_);
  ASSERT_TRUE(db.ok()) << db.status();
  const std::vector<int> nices = RunGcAndGetNices(db->get());
  ASSERT_FALSE(nices.empty());
  for (int n : nices) EXPECT_EQ(n, base);
  EXPECT_EQ(InfoLog().find("gc: threads"), std::string::npos) << InfoLog();
}

TEST_F(GcPriorityTest, RaiseIsAppliedOrRefusedInTheInfoLog) {
  // The default, -5: applied where the process may raise priorities (root,
  // CAP_SYS_NICE or RLIMIT_NICE), and refused, with the threads left at the
  // inherited value, where it may not. Either way the info log says which.
  const int base = OwnNice();
  Options o = SmallOptions(Options().gc_nice_adjustment);
  ASSERT_EQ(o.gc_nice_adjustment, -5);
  absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(o, dir_);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(LogHas("gc: threads")) << InfoLog();
  const std::string log = InfoLog();
  const size_t line = log.find("gc: threads");
  std::printf("%s\n", log.substr(line, log.find('\n', line) - line).c_str());
  const bool applied = log.find("gc: threads at nice") != std::string::npos;
  const int want = applied ? std::max(-20, base - 5) : base;
  if (applied) {
    EXPECT_NE(InfoLog().find(absl::StrCat("gc: threads at nice ", want)), std::string::npos)
        << InfoLog();
  } else {
    EXPECT_NE(InfoLog().find("refused"), std::string::npos) << InfoLog();
  }
  const std::vector<int> nices = RunGcAndGetNices(db->get());
  ASSERT_FALSE(nices.empty());
  for (int n : nices) EXPECT_EQ(n, want);
  EXPECT_EQ(OwnNice(), base);
}

TEST_F(GcPriorityTest, OutOfRangeAdjustmentIsInvalidArgument) {
  for (int adjustment : {-21, 20, 100}) {
    absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(SmallOptions(adjustment), dir_);
    ASSERT_FALSE(db.ok()) << adjustment;
    EXPECT_TRUE(absl::IsInvalidArgument(db.status())) << db.status();
    EXPECT_NE(db.status().message().find("gc_nice_adjustment"), std::string::npos);
  }
}

}  // namespace
}  // namespace cairn
