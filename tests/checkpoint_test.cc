// DB::CreateCheckpoint under load: checkpoints taken while writer threads
// overwrite separated values and background GC collects segments, each one
// then passing `cairn check` and holding every write acknowledged before it
// began, never half a batch. On the real file system, so tables and sealed
// segments are hard links.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "cairn/db.h"
#include "gtest/gtest.h"
#include "io/testing/status_matchers.h"
#include "tests/check_tool.h"

namespace cairn {
namespace {

namespace fs = std::filesystem;

constexpr int kWriters = 3;
constexpr int kPairsPerWriter = 40;
constexpr int kCheckpoints = 4;

Options LoadOptions() {
  Options o;
  o.memtable_size = 64 << 10;
  o.target_file_size = 64 << 10;
  o.value_separation_threshold = 256;
  o.value_log_segment_size = 64 << 10;
  o.gc_space_amp_trigger = 1.2;   // background GC runs throughout
  o.gc_min_garbage_ratio = 0.3;
  o.gc_bytes_per_sec = 0;
  return o;
}

std::string PairKey(int writer, int pair, char side) {
  return absl::StrCat("w", writer, "-p", pair, "-", std::string(1, side));
}

// "<key>@<version>#" then filler: a value names its key and version.
std::string PairValue(const std::string& key, uint64_t version, std::mt19937_64& rng) {
  std::string v = absl::StrCat(key, "@", version, "#");
  v.append(200 + rng() % 1500, static_cast<char>('a' + version % 26));
  return v;
}

// The version a value written by PairValue carries, checking its key.
std::optional<uint64_t> VersionOf(const std::string& key, const std::string& value) {
  const size_t hash = value.find('#');
  if (hash == std::string::npos) return std::nullopt;
  const std::vector<std::string> parts = absl::StrSplit(value.substr(0, hash), '@');
  uint64_t version;
  if (parts.size() != 2 || parts[0] != key || !absl::SimpleAtoi(parts[1], &version)) {
    return std::nullopt;
  }
  return version;
}

class CheckpointLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / absl::StrCat("cairn_checkpoint_test_", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
};

TEST_F(CheckpointLoadTest, CheckpointsUnderWritesAndGcHoldEveryAcknowledgedWrite) {
  auto opened = DB::Open(LoadOptions(), dir_ + "/db");
  ASSERT_OK(opened.status());
  std::unique_ptr<DB> db = *std::move(opened);

  // acked[w][p]: the last version of pair p that writer w had acknowledged.
  absl::Mutex mu;
  std::vector<std::vector<uint64_t>> acked(kWriters, std::vector<uint64_t>(kPairsPerWriter, 0));
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::mt19937_64 rng(w + 1);
      std::vector<uint64_t> version(kPairsPerWriter, 0);
      while (!stop.load()) {
        const int p = static_cast<int>(rng() % kPairsPerWriter);
        const uint64_t v = ++version[p];
        WriteBatch batch;
        const std::string a = PairKey(w, p, 'a'), b = PairKey(w, p, 'b');
        batch.Put(a, PairValue(a, v, rng));
        batch.Put(b, PairValue(b, v, rng));
        if (!db->Write({}, batch).ok()) {
          failures.fetch_add(1);
          return;
        }
        absl::MutexLock l(&mu);
        acked[w][p] = v;
      }
    });
  }

  std::vector<std::vector<std::vector<uint64_t>>> before(kCheckpoints);
  std::vector<CheckpointResult> results(kCheckpoints);
  for (int c = 0; c < kCheckpoints; ++c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    {
      absl::MutexLock l(&mu);
      before[c] = acked;
    }
    absl::StatusOr<CheckpointResult> r = db->CreateCheckpoint(absl::StrCat(dir_, "/cp", c));
    ASSERT_OK(r.status());
    results[c] = *r;
  }
  stop.store(true);
  for (auto& t : writers) t.join();
  ASSERT_EQ(failures.load(), 0);
  const Stats stats = db->GetStats();
  db.reset();
  EXPECT_GT(stats.gc_runs, 0u) << "GC never ran alongside the checkpoints";

  for (int c = 0; c < kCheckpoints; ++c) {
    SCOPED_TRACE(absl::StrCat("checkpoint ", c));
    const std::string cp = absl::StrCat(dir_, "/cp", c);
    EXPECT_GT(results[c].files_linked, 0u);
    EXPECT_FALSE(fs::exists(cp + ".checkpoint-tmp"));
    const CheckReport check = RunCheckTool(cp);
    EXPECT_EQ(check.exit_code, 0) << check.output;
    EXPECT_EQ(check.problems, 0) << check.output;

    Options o = LoadOptions();
    o.create_if_missing = false;
    o.gc_space_amp_trigger = 0;
    auto cp_db = DB::Open(o, cp);
    ASSERT_OK(cp_db.status());
    int raced = 0;
    for (int w = 0; w < kWriters; ++w) {
      for (int p = 0; p < kPairsPerWriter; ++p) {
        std::optional<uint64_t> versions[2];
        for (char side : {'a', 'b'}) {
          const std::string key = PairKey(w, p, side);
          std::string value;
          absl::Status s = (*cp_db)->Get({}, key, &value);
          if (absl::IsNotFound(s)) continue;
          ASSERT_OK(s);
          versions[side - 'a'] = VersionOf(key, value);
          ASSERT_TRUE(versions[side - 'a'].has_value()) << key << ": a value not written to it";
        }
        // Never half a batch: both keys of the pair at one version.
        ASSERT_EQ(versions[0], versions[1]) << PairKey(w, p, 'a');
        const uint64_t got = versions[0].value_or(0);
        // Nothing acknowledged before the checkpoint is lost.
        ASSERT_GE(got, before[c][w][p]) << PairKey(w, p, 'a');
        if (got > before[c][w][p]) ++raced;
      }
    }
    // The checkpoint is a working database of its own.
    ASSERT_OK((*cp_db)->Put({}, "after", std::string(4000, 'x')));
    std::string value;
    ASSERT_OK((*cp_db)->Get({}, "after", &value));
    RecordProperty(absl::StrCat("raced_pairs_", c), raced);
  }
}

TEST_F(CheckpointLoadTest, ToolWritesACheckpointOfADatabase) {
  {
    auto db = DB::Open(LoadOptions(), dir_ + "/db");
    ASSERT_OK(db.status());
    for (int i = 0; i < 200; ++i) {
      ASSERT_OK((*db)->Put({}, absl::StrCat("k", i), std::string(1000 + i, 'v')));
    }
  }
  const std::string cmd =
      absl::StrCat(kCairnTool, " checkpoint '", dir_, "/db' '", dir_, "/cp' 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto cp = DB::Open(LoadOptions(), dir_ + "/cp");
  ASSERT_OK(cp.status());
  for (int i = 0; i < 200; ++i) {
    std::string value;
    ASSERT_OK((*cp)->Get({}, absl::StrCat("k", i), &value));
    EXPECT_EQ(value, std::string(1000 + i, 'v'));
  }
  // A second run into the same directory is refused.
  EXPECT_NE(std::system(cmd.c_str()), 0);
}

}  // namespace
}  // namespace cairn
