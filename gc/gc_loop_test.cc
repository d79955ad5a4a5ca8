// GC's schedule against a scripted host: when a round flushes, what it
// publishes, and how long it waits. The mechanism is the DB's, tested
// through it in core/gc_test.cc.
#include "gc/gc_loop.h"

#include <deque>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace cairn::gc {
namespace {

// One scripted round: what the host answers, in the order the loop asks.
struct Round {
  bool collecting = true;
  absl::StatusOr<uint64_t> victims = uint64_t{1};
  bool memtable_hides_garbage = false;
  bool other_jobs_running = false;
};

class ScriptedHost final : public GcHost {
 public:
  explicit ScriptedHost(std::vector<Round> rounds) : rounds_(rounds.begin(), rounds.end()) {}

  bool WaitUntilRunnable() override {
    if (rounds_.empty()) return false;
    current_ = rounds_.front();
    rounds_.pop_front();
    return true;
  }
  bool ShouldCollect() override { return current_.collecting; }
  uint64_t GarbageReports() override { return ++reports_; }
  absl::StatusOr<uint64_t> CollectOne() override {
    log_.push_back("collect");
    return current_.victims;
  }
  void DeleteObsoleteSegments() override { log_.push_back("delete"); }
  bool MemTableHidesGarbage() override { return current_.memtable_hides_garbage; }
  bool OtherJobsRunning() override { return current_.other_jobs_running; }
  void Flush() override { log_.push_back("flush"); }
  void EndRound(bool can_collect, uint64_t idle_reports, absl::Duration wait) override {
    log_.push_back(absl::StrCat("end can=", can_collect, " wait=", absl::FormatDuration(wait)));
    last_idle_reports_ = idle_reports;
  }

  const std::vector<std::string>& log() const { return log_; }
  uint64_t last_idle_reports() const { return last_idle_reports_; }

 private:
  std::deque<Round> rounds_;
  Round current_;
  uint64_t reports_ = 0;
  uint64_t last_idle_reports_ = 0;
  std::vector<std::string> log_;
};

std::vector<std::string> RunScript(std::vector<Round> rounds) {
  ScriptedHost host(std::move(rounds));
  RunGcLoop(&host);
  return host.log();
}

TEST(GcLoopTest, ACollectingRoundGoesAgainAtOnce) {
  EXPECT_EQ(RunScript({Round{}}), (std::vector<std::string>{"collect", "end can=1 wait=0"}));
}

TEST(GcLoopTest, NothingToCollectFlushesOnlyForGarbageTheMemtableHides) {
  EXPECT_EQ(RunScript({Round{.victims = uint64_t{0}}}),
            (std::vector<std::string>{"collect", "end can=0 wait=100ms"}));
  EXPECT_EQ(RunScript({Round{.victims = uint64_t{0}, .memtable_hides_garbage = true}}),
            (std::vector<std::string>{"collect", "flush", "end can=0 wait=100ms"}));
}

TEST(GcLoopTest, NothingToCollectWhileAnotherJobRunsWaitsForItsEnd) {
  // The other job may hold every victim there was: this loop neither
  // flushes nor reports GC idle (writers delayed for space, and
  // WaitForBackgroundWork, keep waiting for GC).
  EXPECT_EQ(RunScript({Round{.victims = uint64_t{0}, .memtable_hides_garbage = true,
                             .other_jobs_running = true}}),
            (std::vector<std::string>{"collect", "end can=1 wait=100ms"}));
  // A job of this loop's own is no reason to wait.
  EXPECT_EQ(RunScript({Round{.other_jobs_running = true}}),
            (std::vector<std::string>{"collect", "end can=1 wait=0"}));
}

TEST(GcLoopTest, NothingToCollectIsPublishedWithTheReportsFromBeforeTheRound) {
  ScriptedHost host({Round{.victims = uint64_t{0}}});
  RunGcLoop(&host);
  // GarbageReports() was read once, before CollectOne: that count (1) is
  // what a later report is compared with.
  EXPECT_EQ(host.last_idle_reports(), 1u);
}

TEST(GcLoopTest, AFailedRoundNeitherFlushesNorSaysItCanCollect) {
  EXPECT_EQ(RunScript({Round{.victims = absl::InternalError("disk"),
                       .memtable_hides_garbage = true}}),
            (std::vector<std::string>{"collect", "end can=0 wait=100ms"}));
}

TEST(GcLoopTest, BelowTheTriggerEachRoundDeletesWhatReadersReleasedAndWaits) {
  // A victim a reader held when its job ended goes in a later round; no
  // round below the trigger collects or flushes.
  const Round idle{.collecting = false, .memtable_hides_garbage = true};
  EXPECT_EQ(RunScript({idle, idle}),
            (std::vector<std::string>{"delete", "end can=1 wait=1s", "delete",
                                      "end can=1 wait=1s"}));
}

}  // namespace
}  // namespace cairn::gc
