// Short runs (issue 63, item 3): a process that opens the database, puts
// one value, flushes and closes is a normal user (a CLI, a cron job, a test
// suite). Each such run of a value left for the flush writes a small
// segment of its own; GC merges small segments (docs/gc.md, "Merging small
// segments"), so the segment count stays a handful however many runs come,
// at every value size, at the default options. 1,000 runs a size here;
// CAIRN_LONG=1 runs 10,000 (the figure).
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "core/testing/gc_helpers.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"

namespace cairn {
namespace {

using gc_testing::SegmentBytes;
using gc_testing::SegmentFiles;
using gc_testing::Value;

int Runs() {
  if (const char* n = std::getenv("CAIRN_SHORT_RUNS")) return std::atoi(n);
  const char* l = std::getenv("CAIRN_LONG");
  return l != nullptr && std::string(l) == "1" ? 10000 : 300;
}

class ShortRunsTest : public ::testing::TestWithParam<size_t> {};

TEST_P(ShortRunsTest, ShortRunsLeaveAFewSegmentsAtEveryValueSize) {
  const size_t value_size = GetParam();
  auto fs = std::make_shared<io::MemoryFileSystem>();
  const Options o;  // the defaults a user starts from
  // The 1 MiB values' runs hold a GiB in memory at 1,000: a tenth of them.
  const int runs = value_size >= (size_t{1} << 20) ? Runs() / 10 : Runs();
  for (int r = 0; r < runs; ++r) {
    auto db = OpenWithFileSystem(o, "/db", fs);
    ASSERT_TRUE(db.ok()) << "run " << r << ": " << db.status();
    ASSERT_TRUE((*db)->Put({}, absl::StrFormat("key%06d", r), Value(r, value_size)).ok());
    ASSERT_TRUE((*db)->Flush().ok());
    ASSERT_TRUE((*db)->Close().ok());
  }
  const uint64_t files = SegmentFiles(fs.get());
  const uint64_t bytes = SegmentBytes(fs.get());
  const uint64_t live = static_cast<uint64_t>(runs) * value_size;
  std::printf("%d runs of %zu-byte values: %llu segment files, %llu segment bytes (%.2fx the "
              "values)\n",
              runs, value_size, static_cast<unsigned long long>(files),
              static_cast<unsigned long long>(bytes),
              live == 0 ? 0.0 : static_cast<double>(bytes) / static_cast<double>(live));
  // A few dozen at most, beyond what the live data fills at the target
  // size (a segment holds whole values).
  const uint64_t target = o.value_log_segment_size;
  const uint64_t per_segment = std::max<uint64_t>(1, target / value_size);
  const uint64_t filled = (static_cast<uint64_t>(runs) + per_segment - 1) / per_segment;
  EXPECT_LE(files, filled + 36u) << "segment files after " << runs << " runs";
  // Every value reads back.
  auto db = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(db.ok()) << db.status();
  if (std::getenv("CAIRN_SHORT_RUNS_DEBUG") != nullptr) {
    absl::StatusOr<GcResult> r = (*db)->RunGC();
    std::printf("RunGC: %s victims %llu freed %llu\n", r.status().ToString().c_str(),
                r.ok() ? (unsigned long long)r->victims : 0ULL,
                r.ok() ? (unsigned long long)r->segments_freed : 0ULL);
    const Stats st = (*db)->GetStats();
    std::printf("gc_runs %llu recounted %llu vlog_garbage %llu\n", (unsigned long long)st.gc_runs,
                (unsigned long long)st.gc_recounted_bytes, (unsigned long long)st.vlog_garbage_bytes);
    for (const auto& info : static_cast<DBImpl*>(db->get())->ValueLogSegmentsForTesting()) {
      std::printf("seg %llu size %llu garbage %llu sealed %d obsolete %d\n",
                  (unsigned long long)info.segment_id, (unsigned long long)info.size,
                  (unsigned long long)info.garbage_bytes, info.sealed, info.obsolete);
    }
  }
  for (int r = 0; r < runs; r += std::max(1, runs / 200)) {
    std::string v;
    ASSERT_TRUE((*db)->Get({}, absl::StrFormat("key%06d", r), &v).ok()) << r;
    ASSERT_EQ(v, Value(r, value_size)) << r;
  }
}

// Inline (under the 4 KiB threshold), left for the flush (4 KiB to 16 KiB),
// written to the value log as they come, and blobs.
INSTANTIATE_TEST_SUITE_P(ValueSizes, ShortRunsTest,
                         ::testing::Values(size_t{100}, size_t{8} << 10, size_t{16} << 10,
                                           size_t{64} << 10, size_t{1} << 20));

}  // namespace
}  // namespace cairn
