// EventListener and the info LOG: flush, compaction and GC events arrive in
// the order the work happened, with their figures; LOG records them and is
// rotated by size, keeping InfoLog::kKeptOldLogs old ones.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cairn/db.h"
#include "cairn/file_system.h"
#include "cairn/listener.h"
#include "core/info_log.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/file_system.h"
#include "io/memory_file_system.h"
#include "io/testing/process_threads.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

class Recorder : public EventListener {
 public:
  void OnFlushCompleted(const FlushJobInfo& info) override {
    EXPECT_GT(info.file_bytes, 0u);
    EXPECT_GT(info.file_number, 0u);
    Add("flush");
  }
  void OnCompactionCompleted(const CompactionJobInfo& info) override {
    EXPECT_GE(info.output_level, 1);
    EXPECT_GT(info.input_files, 0u);
    Add("compaction");
  }
  void OnGcCompleted(const GcResult& result) override {
    EXPECT_GT(result.victims, 0u);
    EXPECT_GT(result.bytes_read, 0u);
    Add("gc");
  }
  void OnBackgroundError(const absl::Status& status) override { Add("error"); }
  std::vector<std::string> events() {
    absl::MutexLock l(&mu_);
    return events_;
  }

 private:
  void Add(std::string e) {
    absl::MutexLock l(&mu_);
    events_.push_back(std::move(e));
  }
  absl::Mutex mu_;
  std::vector<std::string> events_;
};

Options ListenerOptions(std::shared_ptr<FileSystem> fs, std::shared_ptr<Recorder> recorder) {
  Options o;
  o.value_separation_threshold = 1024;  // the 1 KiB default these tests were written for
  o.file_system = std::move(fs);
  o.listeners.push_back(std::move(recorder));
  o.memtable_size = 1 << 20;
  o.value_separation_threshold = 256;
  o.value_log_segment_size = 64 << 10;
  o.gc_space_amp_trigger = 0;  // GC only when asked
  o.level0_compaction_trigger = 100;  // compaction only when asked
  o.level0_slowdown_trigger = 100;
  o.level0_stop_trigger = 100;
  return o;
}

void Fill(DB* db, int n, char c) {
  for (int i = 0; i < n; ++i) {
    ASSERT_OK(db->Put({}, absl::StrFormat("key%05d", i), std::string(1000, c)));
  }
}

TEST(ListenerTest, FlushCompactionAndGcEventsArriveInOrder) {
  auto recorder = std::make_shared<Recorder>();
  auto db = DB::Open(ListenerOptions(NewMemoryFileSystem(), recorder), "/db");
  ASSERT_OK(db.status());
  Fill(db->get(), 200, 'a');
  ASSERT_OK((*db)->Flush());
  EXPECT_EQ(recorder->events(), std::vector<std::string>{"flush"});
  Fill(db->get(), 200, 'b');  // the first values are garbage now
  ASSERT_OK((*db)->Flush());
  ASSERT_OK((*db)->CompactRange(nullptr, nullptr));
  const size_t after_compaction = recorder->events().size();
  absl::StatusOr<GcResult> gc = (*db)->RunGC();
  ASSERT_OK(gc.status());
  ASSERT_GT(gc->victims, 0u);
  const std::vector<std::string> events = recorder->events();
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events[0], "flush");
  EXPECT_EQ(events[1], "flush");
  for (size_t i = 2; i < after_compaction; ++i) EXPECT_EQ(events[i], "compaction") << i;
  EXPECT_GT(after_compaction, 2u);
  // GC writes its pointer rewrites; it may flush them, but its own event
  // comes last.
  EXPECT_EQ(events.back(), "gc");
  EXPECT_EQ(std::count(events.begin(), events.end(), std::string("error")), 0);
}

TEST(ListenerTest, InfoLogRecordsEventsAndRotatesBySize) {
  std::shared_ptr<FileSystem> fs = NewMemoryFileSystem();
  auto recorder = std::make_shared<Recorder>();
  Options o = ListenerOptions(fs, recorder);
  o.max_info_log_size = 300;  // a line or two per file
  {
    auto db = DB::Open(o, "/db");
    ASSERT_OK(db.status());
    for (int round = 0; round < 8; ++round) {
      Fill(db->get(), 20, static_cast<char>('a' + round));
      ASSERT_OK((*db)->Flush());
    }
  }
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(*fs, "/db");
  ASSERT_OK(names.status());
  int old_logs = 0;
  for (const std::string& name : *names) old_logs += absl::StartsWith(name, "LOG.old.");
  EXPECT_EQ(old_logs, InfoLog::kKeptOldLogs);
  EXPECT_FALSE(PathExists(*fs, absl::StrCat("/db/", InfoLog::OldLogName(InfoLog::kKeptOldLogs + 1))));
  std::string all;
  for (const std::string& name : {std::string("LOG"), InfoLog::OldLogName(1),
                                  InfoLog::OldLogName(2), InfoLog::OldLogName(3)}) {
    absl::StatusOr<std::string> text = io::ReadFileToString(fs.get(), "/db/" + name);
    ASSERT_OK(text.status());
    EXPECT_LE(text->size(), 300u + 200u) << name;  // rotated before passing the limit
    all += *text;
  }
  EXPECT_NE(all.find("flush: table"), std::string::npos) << all;

  // A reopen starts a fresh LOG that records the recovery.
  {
    o.max_info_log_size = 1 << 20;
    auto db = DB::Open(o, "/db");
    ASSERT_OK(db.status());
  }
  absl::StatusOr<std::string> log = io::ReadFileToString(fs.get(), "/db/LOG");
  ASSERT_OK(log.status());
  EXPECT_NE(log->find("open: /db on memory (recovering the database)"), std::string::npos) << *log;
  EXPECT_NE(log->find("open: done in"), std::string::npos) << *log;
  EXPECT_NE(log->find("open: options, as recorded in OPTIONS-"), std::string::npos) << *log;
  EXPECT_NE(log->find("max_info_log_size=1048576"), std::string::npos) << *log;
}

TEST(ListenerTest, FirstBackgroundErrorIsReportedOnce) {
  auto fault = std::make_shared<io::FaultFileSystem>(std::make_shared<io::MemoryFileSystem>());
  auto recorder = std::make_shared<Recorder>();
  Options o = ListenerOptions(fault, recorder);
  o.max_info_log_size = 0;
  auto db = DB::Open(o, "/db");
  ASSERT_OK(db.status());
  ASSERT_OK((*db)->Put({}, "before", "v"));
  fault->FailAfter(0, io::InjectedIoError("wal"), io::FaultKind::kAnyWrite, /*persistent=*/true);
  EXPECT_FALSE((*db)->Put({}, "k", "v").ok());
  EXPECT_FALSE((*db)->Put({}, "k2", "v").ok());  // the sticky error; no second report
  EXPECT_EQ(recorder->events(), std::vector<std::string>{"error"});
  fault->ClearFaults();
}

class StallRecorder : public EventListener {
 public:
  void OnStallConditionsChanged(const StallConditionInfo& info) override {
    absl::MutexLock l(&mu_);
    changes_.push_back(info);
  }
  std::vector<StallConditionInfo> changes() {
    absl::MutexLock l(&mu_);
    return changes_;
  }

 private:
  absl::Mutex mu_;
  std::vector<StallConditionInfo> changes_;
};

TEST(ListenerTest, StallChangesChainAndNameTheirCause) {
  auto recorder = std::make_shared<StallRecorder>();
  Options o;
  o.file_system = NewMemoryFileSystem();
  o.listeners.push_back(recorder);
  o.memtable_size = 64 << 10;
  o.level0_compaction_trigger = 1;
  // Any compaction owed slows writes until it is done.
  o.soft_pending_compaction_bytes_limit = 1;
  auto db = DB::Open(o, "/db");
  ASSERT_OK(db.status());
  for (int round = 0; round < 200; ++round) {
    ASSERT_OK((*db)->Put({}, absl::StrCat("k", round), std::string(100, 'v')));
    ASSERT_OK((*db)->Flush());
    ASSERT_OK((*db)->Put({}, absl::StrCat("j", round), "v"));  // races the compaction
    const std::vector<StallConditionInfo> changes = recorder->changes();
    if (changes.size() >= 2) break;
  }
  ASSERT_OK((*db)->WaitForBackgroundWork());
  ASSERT_OK((*db)->Put({}, "last", "v"));
  const std::vector<StallConditionInfo> changes = recorder->changes();
  ASSERT_GE(changes.size(), 2u) << "no write ever found a compaction owed";
  StallCondition current = StallCondition::kNormal;
  for (const StallConditionInfo& c : changes) {
    EXPECT_EQ(c.previous, current);  // each change starts where the last one ended
    EXPECT_NE(c.current, c.previous);
    EXPECT_EQ(c.cause.empty(), c.current == StallCondition::kNormal) << c.cause;
    current = c.current;
  }
  EXPECT_EQ(changes[0].current, StallCondition::kDelayed);
  EXPECT_EQ(changes[0].cause, "pending compaction bytes at the soft limit");
  EXPECT_EQ(current, StallCondition::kNormal);  // nothing owed at the last write
}

TEST(ListenerTest, NoInfoLogWhenTheSizeIsZero) {
  std::shared_ptr<FileSystem> fs = NewMemoryFileSystem();
  Options o;
  o.file_system = fs;
  o.max_info_log_size = 0;
  ASSERT_OK(DB::Open(o, "/db").status());
  EXPECT_TRUE(PathExists(*fs, "/db/CURRENT"));
  EXPECT_FALSE(PathExists(*fs, "/db/LOG"));
}

// Options::stats_dump_period_sec: the statistics reach LOG every period
// (waited for, up to a deadline far past it, never timed), and never at 0.
TEST(ListenerTest, InfoLogGetsTheStatsEveryPeriod) {
  std::shared_ptr<FileSystem> fs = NewMemoryFileSystem();
  auto recorder = std::make_shared<Recorder>();
  Options o = ListenerOptions(fs, recorder);
  o.stats_dump_period_sec = 1;
  auto db = DB::Open(o, "/db");
  ASSERT_OK(db.status());
  Fill(db->get(), 20, 'a');
  auto dumps = [&] {
    absl::StatusOr<std::string> log = io::ReadFileToString(fs.get(), "/db/LOG");
    EXPECT_OK(log.status());
    if (!log.ok()) return 0;
    int n = 0;
    for (size_t at = log->find("stats (every 1 s):\n** cairn stats **"); at != std::string::npos;
         at = log->find("stats (every 1 s):", at + 1)) {
      ++n;
    }
    return n;
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (dumps() < 2 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_GE(dumps(), 2);
  absl::StatusOr<std::string> log = io::ReadFileToString(fs.get(), "/db/LOG");
  ASSERT_OK(log.status());
  EXPECT_NE(log->find("user: 20 puts"), std::string::npos) << *log;
  // The close does not wait for the next period.
  ASSERT_OK((*db)->Close());
}

// The threads of this process named name.
int ThreadsNamed(const std::string& name) {
  int n = 0;
  for (const io::testing::ProcessThread& t : io::testing::ProcessThreads()) n += t.name == name;
  return n;
}

TEST(ListenerTest, NoStatsDumpThreadAtPeriodZero) {
  std::shared_ptr<FileSystem> fs = NewMemoryFileSystem();
  auto recorder = std::make_shared<Recorder>();
  Options o = ListenerOptions(fs, recorder);
  for (uint32_t period : {0u, 600u}) {
    o.stats_dump_period_sec = period;
    auto db = DB::Open(o, "/db");
    ASSERT_OK(db.status());
    EXPECT_EQ(ThreadsNamed("cairn:stats"), period == 0 ? 0 : 1) << period;
    Fill(db->get(), 20, 'a');
    // A close does not wait out the period.
    ASSERT_OK((*db)->Close());
    EXPECT_EQ(ThreadsNamed("cairn:stats"), 0) << period;
  }
  absl::StatusOr<std::string> log = io::ReadFileToString(fs.get(), "/db/LOG");
  ASSERT_OK(log.status());
  EXPECT_EQ(log->find("stats (every"), std::string::npos) << *log;
}

}  // namespace
}  // namespace cairn
