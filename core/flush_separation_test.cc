// Values under Options::separate_at_flush_below: written to the WAL and the
// memtable, moved by the flush into value-log segments of their own in key
// order, and read back from there; overwrites the memtable absorbed never
// reach the value log; a crash before the flush replays them from the WAL.
#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"
#include "lsm/filename.h"

namespace cairn {
namespace {

std::string Key(int i) { return absl::StrFormat("key%05d", i); }
std::string Value(int i, size_t size) {
  std::string v(size, static_cast<char>('a' + i % 26));
  const std::string tag = std::to_string(i);
  std::copy(tag.begin(), tag.end(), v.begin());
  return v;
}

Options FlushOptions() {
  Options o;
  // Every test's writes fit one memtable (8 MB of values at most), with
  // room for the unused tails of the arenas' blocks.
  o.memtable_size = 16 << 20;
  o.value_separation_threshold = 1024;
  o.value_log_segment_size = 1 << 20;
  o.gc_space_amp_trigger = 0;
  // Reads counted are value reads from the device.
  o.cache_size = 0;
  o.block_cache_size = 8 << 20;
  o.separate_at_flush_below = 16 << 10;  // the default until 2026-12-06
  return o;
}

class FlushSeparationTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void Open() {
    auto db = OpenWithFileSystem(options_, "/db", fs_);
    ASSERT_OK(db.status());
    db_ = *std::move(db);
  }
  void Reopen() {
    db_.reset();
    Open();
  }
  std::vector<std::string> Segments() {
    std::vector<std::string> out;
    const absl::StatusOr<std::vector<std::string>> names = fs_->ListDir("/db");
    EXPECT_OK(names.status());
    if (!names.ok()) return out;
    for (const std::string& name : *names) {
      uint64_t number;
      lsm::FileType type;
      if (lsm::ParseFileName(name, &number, &type) && type == lsm::FileType::kValueLog) {
        out.push_back(name);
      }
    }
    return out;
  }
  void ExpectModel() {
    for (const auto& [k, v] : model_) {
      std::string got;
      ASSERT_OK(db_->Get({}, k, &got)) << k;
      ASSERT_EQ(got, v) << k;
    }
    auto it = db_->NewIterator({});
    auto m = model_.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
      ASSERT_NE(m, model_.end());
      ASSERT_EQ(it->key(), m->first);
      ASSERT_EQ(it->value(), m->second);
    }
    ASSERT_OK(it->status());
    EXPECT_EQ(m, model_.end());
  }
  // Puts n values of size bytes in random key order.
  void PutShuffled(int n, size_t size) {
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(7));
    for (int i : order) {
      ASSERT_OK(db_->Put({}, Key(i), Value(i, size)));
      model_[Key(i)] = Value(i, size);
    }
  }

  std::shared_ptr<io::FaultFileSystem> fs_ = [] {
    io::FaultFileSystemOptions fo;
    fo.drop_unsynced_dir_entries = true;
    return std::make_shared<io::FaultFileSystem>(std::make_shared<io::MemoryFileSystem>(), fo);
  }();
  Options options_ = FlushOptions();
  std::unique_ptr<DB> db_;
  std::map<std::string, std::string> model_;
};

TEST_F(FlushSeparationTest, SmallValuesWaitForTheFlushThenLieInKeyOrder) {
  PutShuffled(1000, 2000);
  Stats st = db_->GetStats();
  EXPECT_EQ(st.vlog_bytes_written, 0u) << "written to the WAL only";
  EXPECT_GE(st.wal_bytes_written, 1000u * 2000);
  EXPECT_TRUE(Segments().empty());
  ExpectModel();  // from the memtable

  ASSERT_OK(db_->Flush());
  st = db_->GetStats();
  EXPECT_GE(st.vlog_bytes_written, 1000u * 2000);
  EXPECT_LT(st.vlog_bytes_written, 1000u * 2100);
  // About 2 MB in 1 MiB segments.
  EXPECT_EQ(Segments().size(), 2u);
  ExpectModel();

  // In key order: an unbounded scan of every entry reads a few large ranges
  // instead of one read per value.
  const uint64_t reads_before = db_->GetStats().vlog_reads;
  {
    auto it = db_->NewIterator({});
    int n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    ASSERT_OK(it->status());
    EXPECT_EQ(n, 1000);
  }
  const uint64_t reads = db_->GetStats().vlog_reads - reads_before;
  EXPECT_LE(reads, 100u) << "values of neighbouring keys share reads";
  EXPECT_GE(reads, 2u);

  // Every byte of the new segments is referenced: nothing to recount.
  Reopen();
  EXPECT_EQ(db_->GetStats().gc_recounted_bytes, 0u);
  ExpectModel();
}

TEST_F(FlushSeparationTest, ValuesAtTheLimitAreSeparatedAsWritten) {
  const size_t big = options_.separate_at_flush_below;
  for (int i = 0; i < 20; ++i) {
    ASSERT_OK(db_->Put({}, Key(i), Value(i, big)));
    model_[Key(i)] = Value(i, big);
  }
  const Stats st = db_->GetStats();
  EXPECT_GE(st.vlog_bytes_written, 20u * big);
  EXPECT_LT(st.wal_bytes_written, 20u * 100 + 4096) << "the WAL holds pointers";
  ExpectModel();
  ASSERT_OK(db_->Flush());
  ExpectModel();
}

TEST_F(FlushSeparationTest, OverwritesBeforeTheFlushNeverReachTheValueLog) {
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 100; ++i) {
      ASSERT_OK(db_->Put({}, Key(i), Value(i + round, 4000)));
      model_[Key(i)] = Value(i + round, 4000);
    }
  }
  ASSERT_OK(db_->Flush());
  const Stats st = db_->GetStats();
  // Only the newest of each key's 20 versions.
  EXPECT_GE(st.vlog_bytes_written, 100u * 4000);
  EXPECT_LT(st.vlog_bytes_written, 100u * 4200);
  EXPECT_EQ(st.vlog_garbage_bytes, 0u);
  ExpectModel();
}

TEST_F(FlushSeparationTest, ACrashBeforeTheFlushReplaysTheValuesIntoSegments) {
  PutShuffled(600, 1500);  // about 900 KB: more than a small session's
  WriteOptions sync;
  sync.sync = true;
  ASSERT_OK(db_->Put(sync, Key(600), Value(600, 1500)));
  model_[Key(600)] = Value(600, 1500);
  // Power loss: only what was synced survives; the sync covered every write.
  fs_->SetFilesystemActive(false);
  db_.reset();
  ASSERT_OK(fs_->SimulateCrash(io::CrashMode::kDropUnsynced, /*seed=*/5));
  fs_->SetFilesystemActive(true);
  Open();
  ASSERT_FALSE(Segments().empty()) << "recovery's flush separated the replayed values";
  EXPECT_EQ(db_->GetStats().gc_recounted_bytes, 0u);
  ExpectModel();
  Reopen();
  EXPECT_EQ(db_->GetStats().gc_recounted_bytes, 0u);
  ExpectModel();
}

TEST_F(FlushSeparationTest, APowerLossAfterAFlushKeepsItsTableAndSegments) {
  // The flush syncs the directory beside its files' own syncs (from the
  // moment they all exist), and the manifest names them only once both are
  // done: a power loss right after it must find every file it names, with
  // no unsynced WAL left to replay the values from.
  PutShuffled(3000, 1500);  // about 4.5 MB: several 1 MiB segments
  ASSERT_OK(db_->Flush());
  const size_t segments = Segments().size();
  ASSERT_GE(segments, 4u);
  fs_->SetFilesystemActive(false);
  db_.reset();
  ASSERT_OK(fs_->SimulateCrash(io::CrashMode::kPowerLoss, /*seed=*/9));
  fs_->SetFilesystemActive(true);
  Open();
  EXPECT_EQ(Segments().size(), segments);
  EXPECT_EQ(db_->GetStats().gc_recounted_bytes, 0u);
  ExpectModel();
}

TEST_F(FlushSeparationTest, APowerLossAfterACompactionKeepsItsOutputs) {
  // Likewise for a compaction's outputs, whose directory syncs start as
  // each output is created and end before the edit that names them.
  PutShuffled(1000, 1500);
  ASSERT_OK(db_->Flush());
  for (int i = 0; i < 1000; i += 3) {
    ASSERT_OK(db_->Put({}, Key(i), Value(i + 1, 1500)));
    model_[Key(i)] = Value(i + 1, 1500);
  }
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  std::string l0;
  ASSERT_TRUE(db_->GetProperty("cairn.num-files-at-level0", &l0));
  ASSERT_EQ(l0, "0") << "the compaction moved L0 down";
  fs_->SetFilesystemActive(false);
  db_.reset();
  ASSERT_OK(fs_->SimulateCrash(io::CrashMode::kPowerLoss, /*seed=*/11));
  fs_->SetFilesystemActive(true);
  Open();
  EXPECT_EQ(db_->GetStats().gc_recounted_bytes, 0u);
  ExpectModel();
}

TEST_F(FlushSeparationTest, AFewValuesReplayedAtOpenStayInline) {
  PutShuffled(50, 2000);  // 100 KB: under the smallest segment a flush at open makes
  Reopen();
  EXPECT_TRUE(Segments().empty()) << "no small segment per short session";
  EXPECT_EQ(db_->GetStats().vlog_bytes_written, 0u);
  ExpectModel();
  // A flush asked for while open separates them all the same.
  PutShuffled(10, 2000);
  ASSERT_OK(db_->Flush());
  EXPECT_EQ(Segments().size(), 1u);
  ExpectModel();
  Reopen();
  ExpectModel();
}

TEST_F(FlushSeparationTest, ZeroSeparatesEveryValueAsWritten) {
  options_.separate_at_flush_below = 0;
  Reopen();
  PutShuffled(100, 2000);
  EXPECT_GE(db_->GetStats().vlog_bytes_written, 100u * 2000);
  ExpectModel();
}

TEST(FlushSeparationOptionsTest, MoreThanOneMebibyteIsRefused) {
  Options o;
  o.separate_at_flush_below = (1 << 20) + 1;
  auto db = OpenWithFileSystem(o, "/db", std::make_shared<io::MemoryFileSystem>());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(db.status().message().find("separate_at_flush_below"), std::string::npos);
}

}  // namespace
}  // namespace cairn
