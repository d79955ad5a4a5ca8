// A read-write DB keeps at most a quarter of the process's file-descriptor
// limit (and at most 1000) of its value-log segments open, the least
// recently read closed first, and reads every value however many segments
// the log holds (core/db_open.cc, MaxOpenSegments; vlog::SegmentReaderCache).
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/testing/fd_helpers.h"
#include "gtest/gtest.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

using fd_testing::Key;
using fd_testing::OpenFileDescriptors;
using fd_testing::Value;

TEST(OpenSegmentsTest, ReadsOfMoreSegmentsThanTheBoundKeepAtMostTheBoundOpen) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < 400) GTEST_SKIP() << "hard limit < 400";
  // A soft limit of 400: the DB keeps at most 100 segments open.
  rlimit low = saved;
  low.rlim_cur = 400;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  absl::Cleanup restore = [&saved] { ::setrlimit(RLIMIT_NOFILE, &saved); };
  const std::string dir = absl::StrCat(::testing::TempDir(), "/cairn_open_segments_", getpid());
  std::filesystem::remove_all(dir);
  Options o;
  o.value_separation_threshold = 1024;
  o.separate_at_flush_below = 0;          // each value to the log as it comes
  o.value_log_segment_size = 64 << 10;    // one 64 KiB value per segment
  o.gc_space_amp_trigger = 0;             // no GC: every segment stays
  constexpr int kValues = 180;
  {
    auto db = DB::Open(o, dir);
    ASSERT_OK(db);
    for (int i = 0; i < kValues; ++i) ASSERT_OK((*db)->Put({}, Key(i), Value(i)));
    ASSERT_OK((*db)->Flush());
  }
  size_t segments = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".vlog") ++segments;
  }
  ASSERT_GE(segments, static_cast<size_t>(kValues)) << "one value per segment expected";
  {
    auto db = DB::Open(o, dir);
    ASSERT_OK(db);
    const size_t before = OpenFileDescriptors();
    std::string v;
    for (int round = 0; round < 2; ++round) {
      for (int i = 0; i < kValues; ++i) {
        ASSERT_OK((*db)->Get({}, Key(i), &v));
        ASSERT_EQ(v, Value(i)) << Key(i);
      }
    }
    // Without the bound every segment read stays open: kValues more.
    EXPECT_LE(OpenFileDescriptors(), before + 100) << segments << " segments";
    // A scan reads them all again through the same bound.
    auto it = (*db)->NewIterator(ReadOptions());
    int n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++n) {
      ASSERT_EQ(it->value(), Value(n)) << Key(n);
    }
    ASSERT_OK(it->status());
    EXPECT_EQ(n, kValues);
    EXPECT_LE(OpenFileDescriptors(), before + 100);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cairn
