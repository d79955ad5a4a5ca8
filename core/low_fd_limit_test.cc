// Under a low open-file limit (RLIMIT_NOFILE 256) the DB's open tables and
// value-log segment readers stay within one descriptor budget (half the soft
// limit, core/db_open.cc FdBudgetLimit): reads that would hold more (a MultiGet over
// hundreds of segments, prefetching scans) succeed or fail that read with
// ResourceExhausted, writes and flushes keep working, and a read-only open
// does not hold every segment open (docs/decisions/20261207_fd_budget.md).
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/testing/fd_helpers.h"
#include "gtest/gtest.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

constexpr rlim_t kLimit = 256;
constexpr int kValues = 400;  // one segment each: more than the limit

using fd_testing::Key;
using fd_testing::OpenFileDescriptors;
using fd_testing::Value;

Options SmallSegments() {
  Options o;
  o.value_separation_threshold = 1024;
  o.separate_at_flush_below = 0;        // each value to the log as it comes
  o.value_log_segment_size = 64 << 10;  // one 64 KiB value per segment
  o.gc_space_amp_trigger = 0;           // no GC: every segment stays
  o.block_cache_size = 4 << 20;         // blocks only: every value read
  o.cache_size = 0;                     // opens its segment
  return o;
}

// A read under descriptor pressure either returns the right value or fails
// with ResourceExhausted; nothing else.
void ExpectValueOrExhausted(const absl::Status& s, std::string_view got, int i) {
  if (s.ok()) {
    EXPECT_EQ(got, Value(i)) << Key(i);
  } else {
    EXPECT_TRUE(absl::IsResourceExhausted(s)) << Key(i) << ": " << s;
  }
}

class LowFdLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved_), 0);
    if (saved_.rlim_max != RLIM_INFINITY && saved_.rlim_max < kLimit) {
      GTEST_SKIP() << "hard limit < " << kLimit;
    }
    dir_ = absl::StrCat(::testing::TempDir(), "/cairn_low_fd_limit_", getpid());
    std::filesystem::remove_all(dir_);
    // Written at the usual limit, so the load itself is not what is tested.
    auto db = DB::Open(SmallSegments(), dir_);
    ASSERT_OK(db);
    for (int i = 0; i < kValues; ++i) ASSERT_OK((*db)->Put({}, Key(i), Value(i)));
    EXPECT_OK((*db)->Flush());
    db->reset();
    size_t segments = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().extension() == ".vlog") ++segments;
    }
    ASSERT_GE(segments, static_cast<size_t>(kValues)) << "one value per segment expected";
    rlimit low = saved_;
    low.rlim_cur = kLimit;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    lowered_ = true;
  }
  void TearDown() override {
    if (lowered_) ::setrlimit(RLIMIT_NOFILE, &saved_);
    std::filesystem::remove_all(dir_);
  }

  rlimit saved_{};
  bool lowered_ = false;
  std::string dir_;
};

TEST_F(LowFdLimitTest, ReadsOverManySegmentsLeaveWritesWorking) {
  auto db = DB::Open(SmallSegments(), dir_);
  ASSERT_OK(db);
  std::vector<std::string> keys;
  for (int i = 0; i < kValues; ++i) keys.push_back(Key(i));
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  // One MultiGet over every segment: its group once held a reader of each.
  std::vector<std::string> values;
  std::vector<absl::Status> statuses = (*db)->MultiGet({}, views, &values);
  ASSERT_EQ(statuses.size(), keys.size());
  for (int i = 0; i < kValues; ++i) ExpectValueOrExhausted(statuses[i], values[i], i);
  {
    // Prefetching scans held at once, each with a deep window of readers:
    // together far more segments than the limit.
    // With an upper bound the window grows by two reads per value taken.
    const std::string end = Key(2 * kValues);
    const std::string_view upper = end;
    ReadOptions ro;
    ro.iterate_upper_bound = &upper;
    ro.value_prefetch_depth = 64;
    ro.value_prefetch_bytes = 64u << 20;
    std::vector<std::unique_ptr<Iterator>> scans;
    constexpr int kScans = 25;
    for (int s = 0; s < kScans; ++s) {
      scans.push_back((*db)->NewIterator(ro));
      scans.back()->Seek(Key(s * (kValues / kScans)));
    }
    for (int step = 0; step < 10; ++step) {
      for (int s = 0; s < kScans; ++s) {
        Iterator* it = scans[s].get();
        if (!it->Valid()) {
          EXPECT_TRUE(absl::IsResourceExhausted(it->status())) << it->status();
          continue;
        }
        ExpectValueOrExhausted(it->status(), it->value(), s * (kValues / kScans) + step);
        it->Next();
      }
    }
    // Writes and a flush while the scans hold their readers: a value to a
    // new segment, a new WAL, a table written and opened.
    for (int i = 0; i < 4; ++i) EXPECT_OK((*db)->Put({}, Key(kValues + i), Value(i)));
    EXPECT_OK((*db)->Flush());
    for (int i = 0; i < kValues; i += 37) {
      std::string v;
      const absl::Status s = (*db)->Get({}, Key(i), &v);
      ExpectValueOrExhausted(s, v, i);
    }
  }
  // The pressure over, every read and write works, and stays working.
  for (int i = 0; i < 4; ++i) ASSERT_OK((*db)->Put({}, Key(kValues + 4 + i), Value(i)));
  ASSERT_OK((*db)->Flush());
  statuses = (*db)->MultiGet({}, views, &values);
  for (int i = 0; i < kValues; ++i) ASSERT_OK(statuses[i]) << Key(i);
  auto it = (*db)->NewIterator(ReadOptions());
  int n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++n) {
    ASSERT_EQ(it->value(), n < kValues ? Value(n) : Value((n - kValues) % 4)) << n;
  }
  ASSERT_OK(it->status());
  EXPECT_EQ(n, kValues + 8);
}

TEST_F(LowFdLimitTest, ReadOnlyOpenKeepsWithinTheBudget) {
  const size_t before = OpenFileDescriptors();
  auto db = DB::OpenForReadOnly(SmallSegments(), dir_);
  ASSERT_OK(db);
  // Within half the limit, however many segments the log holds.
  EXPECT_LE(OpenFileDescriptors(), before + kLimit / 2);
  std::string v;
  for (int i = 0; i < kValues; ++i) {
    ASSERT_OK((*db)->Get({}, Key(i), &v)) << Key(i);
    ASSERT_EQ(v, Value(i)) << Key(i);
  }
  EXPECT_LE(OpenFileDescriptors(), before + kLimit / 2);
}

}  // namespace
}  // namespace cairn
