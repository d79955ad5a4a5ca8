// DB::CreateCheckpoint on the in-memory file system: what is linked and what
// is copied, the fallback to copying where links are refused, the refusal of
// an existing directory, and inline-value databases.
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"
#include "lsm/filename.h"

namespace cairn {
namespace {

Options SmallOptions() {
  Options o;
  // Written for the 1 KiB default of before 2026-12-02: values from 1 KiB
  // are separated.
  o.value_separation_threshold = 1024;
  o.memtable_size = 64 << 10;
  o.value_separation_threshold = 256;
  o.separate_at_flush_below = 0;  // an active segment to copy
  o.value_log_segment_size = 64 << 10;
  o.gc_space_amp_trigger = 0;
  return o;
}

class DbCheckpointTest : public ::testing::Test {
 protected:
  void Open(const Options& options) {
    auto db = OpenWithFileSystem(options, "/db", fs_);
    ASSERT_OK(db.status());
    db_ = *std::move(db);
  }
  void Fill(int n, size_t value_size) {
    for (int i = 0; i < n; ++i) {
      const std::string k = absl::StrFormat("key%05d", i);
      const std::string v(value_size, static_cast<char>('a' + i % 26));
      ASSERT_OK(db_->Put({}, k, v));
      model_[k] = v;
    }
  }
  // Opens dir as a database and compares it with the model.
  void ExpectHoldsModel(const std::string& dir, const Options& options) {
    auto cp = OpenWithFileSystem(options, dir, fs_);
    ASSERT_OK(cp.status());
    std::unique_ptr<Iterator> it = (*cp)->NewIterator({});
    auto m = model_.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
      ASSERT_NE(m, model_.end()) << "extra key " << it->key();
      EXPECT_EQ(it->key(), m->first);
      EXPECT_EQ(it->value(), m->second) << m->first;
    }
    ASSERT_OK(it->status());
    EXPECT_EQ(m, model_.end());
  }
  // File names in dir of one type.
  int CountFiles(const std::string& dir, lsm::FileType type) {
    int n = 0;
    const absl::StatusOr<std::vector<std::string>> names = fs_->ListDir(dir);
    EXPECT_TRUE(names.ok()) << names.status();
    if (!names.ok()) return -1;
    for (const std::string& name : *names) {
      uint64_t number;
      lsm::FileType t;
      if (lsm::ParseFileName(name, &number, &t) && t == type) ++n;
    }
    return n;
  }

  std::shared_ptr<io::MemoryFileSystem> fs_ = std::make_shared<io::MemoryFileSystem>();
  std::unique_ptr<DB> db_;
  std::map<std::string, std::string> model_;
};

TEST_F(DbCheckpointTest, LinksTablesAndSealedSegmentsAndCopiesTheActiveOne) {
  Open(SmallOptions());
  Fill(300, 1000);  // several sealed 64 KiB segments and tables
  absl::StatusOr<CheckpointResult> r = db_->CreateCheckpoint("/cp");
  ASSERT_OK(r.status());
  const int tables = CountFiles("/cp", lsm::FileType::kTable);
  const int segments = CountFiles("/cp", lsm::FileType::kValueLog);
  EXPECT_GT(tables, 0);
  EXPECT_GT(segments, 1);
  // Everything is linked except the segment being written.
  EXPECT_EQ(r->files_linked, static_cast<uint64_t>(tables + segments - 1));
  EXPECT_EQ(r->files_copied, 1u);
  EXPECT_GT(r->bytes_linked, r->bytes_copied);
  EXPECT_EQ(CountFiles("/cp", lsm::FileType::kLog), 1);
  EXPECT_FALSE(fs_->FileExists("/cp.checkpoint-tmp"));
  // Writes after the checkpoint stay out of it.
  ASSERT_OK(db_->Put({}, "later", std::string(1000, 'z')));
  ExpectHoldsModel("/cp", SmallOptions());
}

TEST_F(DbCheckpointTest, CopiesEverythingWhereLinksAreRefused) {
  Open(SmallOptions());
  Fill(300, 1000);
  fs_->SetLinksSupported(false);
  absl::StatusOr<CheckpointResult> r = db_->CreateCheckpoint("/cp");
  ASSERT_OK(r.status());
  EXPECT_EQ(r->files_linked, 0u);
  EXPECT_EQ(r->bytes_linked, 0u);
  EXPECT_EQ(r->files_copied, static_cast<uint64_t>(CountFiles("/cp", lsm::FileType::kTable) +
                                                   CountFiles("/cp", lsm::FileType::kValueLog)));
  // A copy is a file of its own: the source changing it would not matter.
  ExpectHoldsModel("/cp", SmallOptions());
}

TEST_F(DbCheckpointTest, RefusesAnExistingDirectoryAndALeftoverTemporary) {
  Open(SmallOptions());
  Fill(10, 1000);
  ASSERT_OK(fs_->CreateDir("/cp"));
  absl::StatusOr<CheckpointResult> r = db_->CreateCheckpoint("/cp");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAlreadyExists) << r.status();
  EXPECT_TRUE(fs_->ListDir("/cp")->empty());  // untouched

  ASSERT_OK(fs_->CreateDir("/cp2.checkpoint-tmp"));
  r = db_->CreateCheckpoint("/cp2");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAlreadyExists) << r.status();
  EXPECT_FALSE(fs_->FileExists("/cp2"));

  EXPECT_EQ(db_->CreateCheckpoint("").status().code(), absl::StatusCode::kInvalidArgument);
}

// "/cp/" names the directory "/cp": the temporary is built beside it, not
// inside a "/cp/" that does not exist yet (which failed with NotFound).
TEST_F(DbCheckpointTest, TrailingSlashesNameTheSameDirectory) {
  Open(SmallOptions());
  Fill(50, 1000);
  absl::StatusOr<CheckpointResult> r = db_->CreateCheckpoint("/cp//");
  ASSERT_OK(r.status());
  EXPECT_FALSE(fs_->FileExists("/cp.checkpoint-tmp"));
  ExpectHoldsModel("/cp", SmallOptions());
  // Refused as an existing directory, as without the slash.
  r = db_->CreateCheckpoint("/cp/");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAlreadyExists) << r.status();
  // A lone "/" is the root, never stripped to an empty name.
  EXPECT_FALSE(db_->CreateCheckpoint("/").ok());
}

TEST_F(DbCheckpointTest, InlineValueDatabaseAndRepeatedCheckpoints) {
  Options o = SmallOptions();
  o.value_separation_threshold = kInlineValues;
  Open(o);
  Fill(200, 700);
  ASSERT_OK(db_->CreateCheckpoint("/cp1").status());
  ExpectHoldsModel("/cp1", o);
  Fill(400, 300);  // overwrites and new keys
  ASSERT_OK(db_->Delete({}, "key00001"));
  model_.erase("key00001");
  ASSERT_OK(db_->CreateCheckpoint("/cp2").status());
  EXPECT_EQ(CountFiles("/cp2", lsm::FileType::kValueLog), 0);
  ExpectHoldsModel("/cp2", o);
}

TEST_F(DbCheckpointTest, CheckpointAfterGcHoldsTheRelocatedValues) {
  Open(SmallOptions());
  Fill(200, 1000);
  Fill(200, 900);  // the first round is garbage now
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  absl::StatusOr<GcResult> gc = db_->RunGC();
  ASSERT_OK(gc.status());
  EXPECT_GT(gc->victims, 0u);
  ASSERT_OK(db_->CreateCheckpoint("/cp").status());
  db_.reset();
  ExpectHoldsModel("/cp", SmallOptions());
  ExpectHoldsModel("/db", SmallOptions());
}

}  // namespace
}  // namespace cairn
