// Table block reads made together (lsm/seek_batch.h) through the DB: a
// seek over several sorted runs reads the block each starts from in one
// batch, and a MultiGet reads the block each key's lookup needs in one
// batch before looking the keys up. Results match a model either way.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

using Model = std::map<std::string, std::string>;

std::string Key(int i) { return absl::StrFormat("k%03d", i); }
std::string Value(int i) { return std::string(100, static_cast<char>('a' + i % 26)); }

// A memory file system that records, for each batch of reads across
// files, how many of its reads were of SST files.
class SstBatchCountingFileSystem : public io::MemoryFileSystem {
 public:
  absl::Status MultiReadFiles(absl::Span<const io::FileReadRequest> requests) override {
    size_t tables = 0;
    for (const io::FileReadRequest& r : requests) tables += r.file->path().ends_with(".sst");
    if (tables > 0) table_batch_sizes.push_back(tables);
    return FileSystem::MultiReadFiles(requests);
  }
  std::vector<size_t> table_batch_sizes;
};

class BatchedReadsTest : public ::testing::Test {
 protected:
  BatchedReadsTest() {
    options_.memtable_size = 64 << 10;
    options_.block_size = 1024;
    options_.cache_size = 8 << 20;
    options_.level0_compaction_trigger = 8;  // the flushes stay sorted runs of their own
  }

  // Three L0 tables (keys 0, 1 and 2 mod 3 of 0..599, 100-byte values,
  // inline), then a reopen: the block cache is empty.
  void BuildThreeRuns() {
    {
      auto opened = OpenWithFileSystem(options_, "/db", fs_);
      ASSERT_OK(opened.status());
      for (int run = 0; run < 3; ++run) {
        for (int i = run; i < 600; i += 3) {
          ASSERT_OK((*opened)->Put({}, Key(i), Value(i)));
          model_[Key(i)] = Value(i);
        }
        ASSERT_OK((*opened)->Flush());
      }
    }
    auto opened = OpenWithFileSystem(options_, "/db", fs_);
    ASSERT_OK(opened.status());
    db_ = *std::move(opened);
    fs_->table_batch_sizes.clear();
  }

  std::shared_ptr<SstBatchCountingFileSystem> fs_ =
      std::make_shared<SstBatchCountingFileSystem>();
  Options options_;
  Model model_;
  std::unique_ptr<DB> db_;
};

TEST_F(BatchedReadsTest, ASeekReadsTheBlockOfEverySortedRunInOneBatch) {
  BuildThreeRuns();
  std::unique_ptr<Iterator> it = db_->NewIterator(ReadOptions());
  it->Seek(Key(300));
  ASSERT_EQ(fs_->table_batch_sizes.size(), 1u);
  EXPECT_EQ(fs_->table_batch_sizes[0], 3u);
  auto m = model_.find(Key(300));
  for (int n = 0; n < 100 && m != model_.end(); ++n, ++m, it->Next()) {
    ASSERT_TRUE(it->Valid()) << it->status();
    ASSERT_EQ(it->key(), m->first);
    ASSERT_EQ(it->value(), m->second);
  }
  EXPECT_OK(it->status());
}

TEST_F(BatchedReadsTest, AMultiGetReadsEveryKeysBlockInOneBatch) {
  BuildThreeRuns();
  // Opens the three tables (an absent key in their range; their filters
  // keep it from reading data blocks, but for a false positive).
  std::string v;
  ASSERT_TRUE(absl::IsNotFound(db_->Get({}, "k1000", &v)));
  fs_->table_batch_sizes.clear();
  const Stats before = db_->GetStats();
  // Keys spread over the three tables and over many blocks of each, one
  // asked for twice, one absent, and one the memtable holds.
  ASSERT_OK(db_->Put({}, Key(7), "newer"));
  model_[Key(7)] = "newer";
  const std::vector<std::string> wanted = {Key(0),   Key(1),   Key(2),   Key(299), Key(300),
                                           Key(301), Key(598), Key(599), Key(7),   Key(300),
                                           "absent", Key(150)};
  const std::vector<std::string_view> keys(wanted.begin(), wanted.end());
  std::vector<std::string> values;
  const std::vector<absl::Status> statuses = db_->MultiGet(ReadOptions(), keys, &values);
  ASSERT_EQ(statuses.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    auto m = model_.find(wanted[i]);
    if (m == model_.end()) {
      EXPECT_TRUE(absl::IsNotFound(statuses[i])) << wanted[i] << ": " << statuses[i];
      continue;
    }
    ASSERT_OK(statuses[i]);
    EXPECT_EQ(values[i], m->second) << wanted[i];
  }
  // One batch before the lookups, of each key's block once: nine blocks
  // (Key(300) is asked for twice, the memtable's key and the absent one
  // need none). A filter's false positive sends a key's read to the wrong
  // table, and its lookup then reads the right block on its own: every
  // other lookup reads nothing after the batch.
  ASSERT_EQ(fs_->table_batch_sizes.size(), 1u);
  const Stats after = db_->GetStats();
  const uint64_t false_positives = after.bloom_false_positives - before.bloom_false_positives;
  EXPECT_EQ(fs_->table_batch_sizes[0], 9u) << false_positives << " false positives";
  EXPECT_EQ(after.table_reads - before.table_reads, 9u + false_positives);
}

// With every block cached, a MultiGet reads nothing and batches nothing:
// the cache alone answers each lookup, once.
TEST_F(BatchedReadsTest, AMultiGetOnAWarmCacheReadsNothing) {
  BuildThreeRuns();
  std::vector<std::string> wanted;
  for (int i = 0; i < 600; i += 7) wanted.push_back(Key(i));
  const std::vector<std::string_view> keys(wanted.begin(), wanted.end());
  std::vector<std::string> values;
  for (const absl::Status& s : db_->MultiGet(ReadOptions(), keys, &values)) ASSERT_OK(s);
  fs_->table_batch_sizes.clear();
  const Stats before = db_->GetStats();
  const std::vector<absl::Status> statuses = db_->MultiGet(ReadOptions(), keys, &values);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_OK(statuses[i]);
    EXPECT_EQ(values[i], model_[wanted[i]]);
  }
  EXPECT_TRUE(fs_->table_batch_sizes.empty());
  EXPECT_EQ(db_->GetStats().table_reads, before.table_reads);
}

// The memtables answer first, once per key: a key they hold, deleted or
// overwritten, costs no table read; only the others join the batch.
TEST_F(BatchedReadsTest, KeysTheMemtablesAnswerJoinNoBatch) {
  BuildThreeRuns();
  std::string v;
  ASSERT_TRUE(absl::IsNotFound(db_->Get({}, "k1000", &v)));  // opens the tables
  fs_->table_batch_sizes.clear();
  ASSERT_OK(db_->Delete({}, Key(1)));
  ASSERT_OK(db_->Put({}, Key(2), "newer"));
  const std::vector<std::string> wanted = {Key(1), std::string(kMaxKeySize + 1, 'k'),
                                           Key(2), Key(3), Key(4), Key(1)};
  const std::vector<std::string_view> keys(wanted.begin(), wanted.end());
  std::vector<std::string> values;
  const std::vector<absl::Status> statuses = db_->MultiGet(ReadOptions(), keys, &values);
  ASSERT_EQ(statuses.size(), keys.size());
  EXPECT_TRUE(absl::IsNotFound(statuses[0])) << statuses[0];
  EXPECT_TRUE(absl::IsInvalidArgument(statuses[1])) << statuses[1];
  ASSERT_OK(statuses[2]);
  EXPECT_EQ(values[2], "newer");
  ASSERT_OK(statuses[3]);
  EXPECT_EQ(values[3], Value(3));
  ASSERT_OK(statuses[4]);
  EXPECT_EQ(values[4], Value(4));
  EXPECT_TRUE(absl::IsNotFound(statuses[5])) << statuses[5];
  // Key(3) and Key(4) live in two tables: one batch of their two blocks.
  ASSERT_EQ(fs_->table_batch_sizes.size(), 1u);
  EXPECT_EQ(fs_->table_batch_sizes[0], 2u);
}

// GC checks a victim's keys the way MultiGet looks keys up: the table
// blocks its lookups need go out in one batch per liveness check.
TEST_F(BatchedReadsTest, GcLivenessChecksReadTableBlocksInOneBatch) {
  options_.value_separation_threshold = 64;
  options_.separate_at_flush_below = 0;
  options_.value_log_segment_size = 64 << 10;
  options_.gc_space_amp_trigger = 0;  // only RunGC collects
  options_.gc_min_garbage_ratio = 0.2;
  {
    auto opened = OpenWithFileSystem(options_, "/db", fs_);
    ASSERT_OK(opened.status());
    for (int round = 0; round < 2; ++round) {
      for (int i = 0; i < 600; ++i) {
        if (round == 1 && i % 3 != 0) continue;  // a third is overwritten
        const std::string v = Value(i + round);
        ASSERT_OK((*opened)->Put({}, Key(i), v));
        model_[Key(i)] = v;
      }
      ASSERT_OK((*opened)->Flush());
    }
    // One sorted run, and the overwritten versions counted as garbage.
    ASSERT_OK((*opened)->CompactRange(nullptr, nullptr));
  }
  auto opened = OpenWithFileSystem(options_, "/db", fs_);
  ASSERT_OK(opened.status());
  db_ = *std::move(opened);
  fs_->table_batch_sizes.clear();
  absl::StatusOr<GcResult> gc = db_->RunGC();
  ASSERT_OK(gc.status());
  ASSERT_GT(gc->records_relocated, 0u);
  // The cache was cold: the first check read several blocks at once.
  ASSERT_FALSE(fs_->table_batch_sizes.empty());
  EXPECT_GT(fs_->table_batch_sizes[0], 1u);
  for (const auto& [key, value] : model_) {
    std::string v;
    ASSERT_OK(db_->Get({}, key, &v)) << key;
    EXPECT_EQ(v, value) << key;
  }
}

TEST_F(BatchedReadsTest, AMultiGetWithoutFillCacheReadsKeyByKey) {
  BuildThreeRuns();
  ReadOptions ro;
  ro.fill_cache = false;
  const std::vector<std::string_view> keys = {"k000", "k301", "k599"};
  std::vector<std::string> values;
  const std::vector<absl::Status> statuses = db_->MultiGet(ro, keys, &values);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_OK(statuses[i]);
    EXPECT_EQ(values[i], model_[std::string(keys[i])]);
  }
  EXPECT_TRUE(fs_->table_batch_sizes.empty());
}

}  // namespace
}  // namespace cairn
