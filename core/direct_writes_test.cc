// Options::direct_writes on the real backends: value-log appends with
// O_DIRECT. Values of every size from 1 byte to 3 blocks, each its own
// write group (so each lands at another offset in the tail block), survive
// kill -9 of the writing process at any point and a reopen; and where
// O_DIRECT is refused, the value log writes buffered and says so in the
// info log. (The crash suites' separated_direct modes run the kill -9 and
// power-loss cycles on this path too.)
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/file_system.h"
#include "io/testing/forked_child.h"
#include "lsm/filename.h"
#include "vlog/segment_scanner.h"

namespace cairn {
namespace {

constexpr size_t kMaxSize = 3 * 4096;

std::string Key(size_t size) { return absl::StrFormat("k%05d", size); }

// Deterministic bytes for the value of size n.
std::string ValueOf(size_t n) {
  std::string v(n, '\0');
  uint64_t x = n * 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<char>(x);
  }
  return v;
}

class DirectWritesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/cairn_direct_", GetParam(), "_", getpid());
    std::filesystem::remove_all(dir_);
    ::setenv("CAIRN_IO", GetParam() == "io_uring" ? "uring" : "posix", 1);
  }
  void TearDown() override {
    ::unsetenv("CAIRN_IO");
    io::SetDirectIoRefusedForTesting(false);
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  Options DirectOptions() const {
    Options o;
    o.direct_writes = true;
    o.value_separation_threshold = 0;  // every value in the value log
    o.separate_at_flush_below = 0;     // as it is written
    o.value_log_segment_size = 1 << 20;  // several segments: rolls too
    o.memtable_size = 256 << 10;
    return o;
  }

  std::string InfoLog() const {
    std::ifstream in(dir_ + "/LOG");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string dir_;
};

TEST_P(DirectWritesTest, EveryValueSizeUpToThreeBlocksSurvivesKillNine) {
  // acked[0]: the largest size whose Put returned OK in the child.
  auto* acked = static_cast<std::atomic<uint64_t>*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(acked, MAP_FAILED);
  acked->store(0);
  std::mt19937 rng(61);
  size_t next = 1;
  int kills = 0;
  while (next <= kMaxSize) {
    const size_t from = next;
    const pid_t pid = io::testing::StartForkedChild(120, [&] {
      auto db = DB::Open(DirectOptions(), dir_);
      if (!db.ok()) return 3;
      for (size_t n = from; n <= kMaxSize; ++n) {
        if (!(*db)->Put({}, Key(n), ValueOf(n)).ok()) return 4;
        acked->store(n);
      }
      return 0;
    });
    ASSERT_GT(pid, 0);
    // Kill it part way: once it has acknowledged a random number of puts
    // (so every cycle makes progress however slow the build), plus a
    // random few microseconds, so the kill lands anywhere in a put.
    const uint64_t target = from - 1 + 500 + rng() % 2500;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(100);
    while (acked->load() < std::min<uint64_t>(target, kMaxSize) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
    ::kill(pid, SIGKILL);
    const std::string how = io::testing::WaitForForkedChild(pid, 120);
    if (!how.empty()) ++kills;
    const uint64_t done = acked->load();
    // Every acknowledged value is there, whole (those of this cycle, and
    // every 16th earlier one; all of them once at the end); the one in
    // flight at the kill is there whole or not at all.
    auto db = DB::Open(DirectOptions(), dir_);
    ASSERT_TRUE(db.ok()) << db.status();
    for (size_t n = 1; n <= done; ++n) {
      if (n < from && n % 16 != 0) continue;
      std::string v;
      absl::Status s = (*db)->Get({}, Key(n), &v);
      ASSERT_TRUE(s.ok()) << "size " << n << " (acked through " << done << "): " << s;
      ASSERT_EQ(v, ValueOf(n)) << "size " << n;
    }
    if (done < kMaxSize) {
      std::string v;
      absl::Status s = (*db)->Get({}, Key(done + 1), &v);
      ASSERT_TRUE(s.ok() || absl::IsNotFound(s)) << s;
      if (s.ok()) {
        ASSERT_EQ(v, ValueOf(done + 1));
      }
    }
    ASSERT_TRUE((*db)->Close().ok());
    next = done + 1;
  }
  munmap(acked, 4096);
  EXPECT_GT(kills, 0);
  {
    auto db = DB::Open(DirectOptions(), dir_);
    ASSERT_TRUE(db.ok()) << db.status();
    for (size_t n = 1; n <= kMaxSize; ++n) {
      std::string v;
      ASSERT_TRUE((*db)->Get({}, Key(n), &v).ok()) << "size " << n;
      ASSERT_EQ(v, ValueOf(n)) << "size " << n;
    }
  }
  // The value log really ran O_DIRECT (no fallback note).
  EXPECT_EQ(InfoLog().find("refused O_DIRECT"), std::string::npos) << InfoLog();
}

TEST_P(DirectWritesTest, RefusedDirectIoFallsBackToBufferedWritesWithANote) {
  io::SetDirectIoRefusedForTesting(true);
  {
    auto db = DB::Open(DirectOptions(), dir_);
    ASSERT_TRUE(db.ok()) << db.status();
    for (size_t n = 1; n <= 3000; n += 7) ASSERT_TRUE((*db)->Put({}, Key(n), ValueOf(n)).ok());
    ASSERT_TRUE((*db)->Close().ok());
  }
  const std::string log = InfoLog();
  EXPECT_NE(log.find("refused O_DIRECT"), std::string::npos) << log;
  EXPECT_NE(log.find("appending through the page cache instead"), std::string::npos) << log;
  io::SetDirectIoRefusedForTesting(false);
  auto db = DB::Open(DirectOptions(), dir_);
  ASSERT_TRUE(db.ok()) << db.status();
  for (size_t n = 1; n <= 3000; n += 7) {
    std::string v;
    ASSERT_TRUE((*db)->Get({}, Key(n), &v).ok()) << n;
    ASSERT_EQ(v, ValueOf(n));
  }
}

TEST_P(DirectWritesTest, RefusedDirectIoIsNotedForFlushSegments) {
  // Under the default options values of 4-16 KiB are separated by the
  // flush into segments of its own: no active segment is ever opened, and
  // the note must come from the flush's segments.
  io::SetDirectIoRefusedForTesting(true);
  Options o;
  o.direct_writes = true;
  o.memtable_size = 1 << 20;
  {
    auto db = DB::Open(o, dir_);
    ASSERT_TRUE(db.ok()) << db.status();
    for (int i = 0; i < 300; ++i) {
      ASSERT_TRUE((*db)->Put({}, absl::StrCat("k", i), ValueOf(8192 + i)).ok());
    }
    ASSERT_TRUE((*db)->Flush().ok());
    EXPECT_GT((*db)->GetStats().vlog_segments, 0u);
    ASSERT_TRUE((*db)->Close().ok());
  }
  const std::string log = InfoLog();
  EXPECT_NE(log.find("refused O_DIRECT"), std::string::npos) << log;
  EXPECT_NE(log.find("appending through the page cache instead"), std::string::npos) << log;
}

TEST_P(DirectWritesTest, RefusedDirectIoIsNotedForGcOutput) {
  // The values are written with O_DIRECT granted; it is refused only from
  // the collection on, whose output segment is then the one file written
  // buffered.
  Options o = DirectOptions();
  o.gc_space_amp_trigger = 0;  // only the RunGC below collects
  auto db = DB::Open(o, dir_);
  ASSERT_TRUE(db.ok()) << db.status();
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE((*db)->Put({}, absl::StrCat("k", i), ValueOf(8192 + i)).ok());
  }
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE((*db)->Put({}, absl::StrCat("k", i), ValueOf(4096 + i)).ok());
  }
  ASSERT_TRUE((*db)->Flush().ok());
  ASSERT_TRUE((*db)->CompactRange(nullptr, nullptr).ok());  // counts the garbage
  io::SetDirectIoRefusedForTesting(true);
  absl::StatusOr<GcResult> gc = (*db)->RunGC();
  ASSERT_TRUE(gc.ok()) << gc.status();
  EXPECT_GT(gc->records_relocated, 0u);  // an output segment was written
  ASSERT_TRUE((*db)->Close().ok());
  const std::string log = InfoLog();
  EXPECT_NE(log.find("refused O_DIRECT"), std::string::npos) << log;
  EXPECT_NE(log.find("appending through the page cache instead"), std::string::npos) << log;
  io::SetDirectIoRefusedForTesting(false);
  db->reset();
  db = DB::Open(o, dir_);
  ASSERT_TRUE(db.ok()) << db.status();
  for (int i = 0; i < 300; ++i) {
    std::string v;
    ASSERT_TRUE((*db)->Get({}, absl::StrCat("k", i), &v).ok()) << i;
    ASSERT_EQ(v, ValueOf(i < 200 ? 4096 + i : 8192 + i)) << i;
  }
}

TEST_P(DirectWritesTest, SegmentsRollAndReopenWithNoPaddingLeftBehind) {
  // Sealed segments are exactly their records on disk, and the unsealed
  // one a reopen continues is too (Close cuts the padding).
  {
    auto db = DB::Open(DirectOptions(), dir_);
    ASSERT_TRUE(db.ok()) << db.status();
    for (size_t n = 1; n <= 600; ++n) ASSERT_TRUE((*db)->Put({}, Key(n), ValueOf(n * 7)).ok());
    ASSERT_TRUE((*db)->Close().ok());
  }
  for (int round = 0; round < 3; ++round) {
    auto db = DB::Open(DirectOptions(), dir_);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Put({}, absl::StrCat("round", round), ValueOf(5000 + round)).ok());
    for (size_t n = 1; n <= 600; n += 37) {
      std::string v;
      ASSERT_TRUE((*db)->Get({}, Key(n), &v).ok());
      ASSERT_EQ(v, ValueOf(n * 7));
    }
    ASSERT_TRUE((*db)->Close().ok());
  }
  // Each segment file ends at its last record: a scan that allows no torn
  // tail reads it to its end.
  auto fs = io::NewFileSystem(io::IoBackend::kAuto);
  ASSERT_TRUE(fs.ok());
  int segments = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    uint64_t number;
    lsm::FileType type;
    if (!lsm::ParseFileName(entry.path().filename().string(), &number, &type) ||
        type != lsm::FileType::kValueLog) {
      continue;
    }
    ++segments;
    vlog::SegmentScannerOptions so;
    so.allow_torn_tail = false;
    auto scanner = vlog::SegmentScanner::Open(fs->get(), entry.path().string(), number, so);
    ASSERT_TRUE(scanner.ok()) << scanner.status();
    vlog::ScannedRecord r;
    uint64_t records = 0;
    while ((*scanner)->Next(&r)) ++records;
    ASSERT_TRUE((*scanner)->status().ok()) << entry.path() << ": " << (*scanner)->status();
    EXPECT_GT(records, 0u) << entry.path();
    EXPECT_EQ((*scanner)->valid_end_offset(), std::filesystem::file_size(entry.path()))
        << entry.path();
  }
  EXPECT_GT(segments, 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, DirectWritesTest, ::testing::Values("posix", "io_uring"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace cairn
