// DB::DeleteRange through every layer (2026-12-07, issue 60): the memtable,
// the WAL (reopen), the tables after a flush, the levels after compaction,
// snapshots, MultiGet, iterators both ways, read-only opens and checkpoints,
// and the refusals of bad ranges.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "core/repair_internal.h"
#include "core/write_batch_internal.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/golden.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

Options SmallOptions() {
  Options o;
  o.value_separation_threshold = 1024;
  o.memtable_size = 64 << 10;
  o.block_size = 1024;
  o.target_file_size = 64 << 10;
  return o;
}

std::string Key(int i) { return absl::StrFormat("k%04d", i); }

class RangeDeleteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = std::make_shared<io::MemoryFileSystem>();
    Reopen();
  }
  void Reopen() {
    db_.reset();
    auto db = OpenWithFileSystem(SmallOptions(), "/db", fs_);
    ASSERT_OK(db);
    db_ = std::move(*db);
  }
  std::string Get(std::string_view key, const Snapshot* snap = nullptr) {
    ReadOptions ro;
    ro.snapshot = snap;
    std::string v;
    absl::Status s = db_->Get(ro, key, &v);
    if (absl::IsNotFound(s)) return "NOT_FOUND";
    if (!s.ok()) return std::string(s.message());
    return v;
  }
  // Keys forward, then backward (reversed back), must agree.
  std::vector<std::string> Keys(DB* db, const Snapshot* snap = nullptr) {
    ReadOptions ro;
    ro.snapshot = snap;
    std::vector<std::string> fwd, bwd;
    auto it = db->NewIterator(ro);
    for (it->SeekToFirst(); it->Valid(); it->Next()) fwd.emplace_back(it->key());
    EXPECT_OK(it->status());
    for (it->SeekToLast(); it->Valid(); it->Prev()) bwd.emplace_back(it->key());
    EXPECT_OK(it->status());
    std::reverse(bwd.begin(), bwd.end());
    EXPECT_EQ(fwd, bwd);
    return fwd;
  }
  void PutRange(int from, int to, int value_size = 100) {
    for (int i = from; i < to; ++i) {
      ASSERT_OK(db_->Put(WriteOptions(), Key(i), std::string(value_size, 'a' + i % 26)));
    }
  }
  // Keys [0, 100) less [20, 60).
  std::vector<std::string> Expected() {
    std::vector<std::string> out;
    for (int i = 0; i < 100; ++i) {
      if (i < 20 || i >= 60) out.push_back(Key(i));
    }
    return out;
  }
  void CheckDropped(DB* db) {
    EXPECT_EQ(Keys(db), Expected());
    std::string v;
    EXPECT_TRUE(absl::IsNotFound(db->Get(ReadOptions(), Key(20), &v)));
    EXPECT_TRUE(absl::IsNotFound(db->Get(ReadOptions(), Key(59), &v)));
    EXPECT_OK(db->Get(ReadOptions(), Key(19), &v));
    EXPECT_OK(db->Get(ReadOptions(), Key(60), &v));
    // The ranged and pinned reads go through the same lookup.
    EXPECT_TRUE(absl::IsNotFound(db->GetRange(ReadOptions(), Key(30), 0, 10, &v)));
    EXPECT_OK(db->GetRange(ReadOptions(), Key(60), 0, 10, &v));
    PinnableValue pinned;
    EXPECT_TRUE(absl::IsNotFound(db->Get(ReadOptions(), Key(30), &pinned)));
    // A bounded, keys-only scan over the range finds nothing in it.
    ReadOptions bounded;
    const std::string lower_key = Key(20), upper_key = Key(60);
    const std::string_view lower = lower_key, upper = upper_key;
    bounded.iterate_lower_bound = &lower;
    bounded.iterate_upper_bound = &upper;
    bounded.keys_only = true;
    auto in_range = db->NewIterator(bounded);
    in_range->SeekToFirst();
    EXPECT_FALSE(in_range->Valid());
    in_range->SeekToLast();
    EXPECT_FALSE(in_range->Valid());
    EXPECT_OK(in_range->status());
    std::vector<std::string> mv;
    std::vector<absl::Status> st =
        db->MultiGet(ReadOptions(), {Key(19), Key(20), Key(40), Key(60)}, &mv);
    EXPECT_OK(st[0]);
    EXPECT_TRUE(absl::IsNotFound(st[1]));
    EXPECT_TRUE(absl::IsNotFound(st[2]));
    EXPECT_OK(st[3]);
    auto it = db->NewIterator(ReadOptions());
    it->Seek(Key(30));
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->key(), Key(60));
    it->SeekForPrev(Key(30));
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->key(), Key(19));
  }

  std::shared_ptr<io::MemoryFileSystem> fs_;
  std::unique_ptr<DB> db_;
};

TEST_F(RangeDeleteTest, BadRangesAreRefused) {
  EXPECT_TRUE(absl::IsInvalidArgument(db_->DeleteRange(WriteOptions(), "b", "a")));
  EXPECT_TRUE(absl::IsInvalidArgument(db_->DeleteRange(WriteOptions(), "a", "a")));
  EXPECT_TRUE(absl::IsInvalidArgument(db_->DeleteRange(WriteOptions(), "", "")));
  EXPECT_TRUE(absl::IsInvalidArgument(
      db_->DeleteRange(WriteOptions(), "a", std::string(kMaxKeySize + 1, 'z'))));
  WriteBatch batch;
  batch.Put("x", "1");
  batch.DeleteRange("z", "y");
  EXPECT_TRUE(absl::IsInvalidArgument(batch.status()));
  EXPECT_EQ(batch.Count(), 1u);
  EXPECT_TRUE(absl::IsInvalidArgument(db_->Write(WriteOptions(), batch)));
  EXPECT_EQ(Get("x"), "NOT_FOUND");  // nothing of a refused batch applied
  // The empty key is the start of the key space.
  ASSERT_OK(db_->Put(WriteOptions(), "", "empty"));
  ASSERT_OK(db_->DeleteRange(WriteOptions(), "", "a"));
  EXPECT_EQ(Get(""), "NOT_FOUND");
}

TEST_F(RangeDeleteTest, MemtableReadsHonourTheTombstone) {
  PutRange(0, 100);
  ASSERT_OK(db_->DeleteRange(WriteOptions(), Key(20), Key(60)));
  CheckDropped(db_.get());
  // A write after the tombstone is visible again.
  ASSERT_OK(db_->Put(WriteOptions(), Key(30), "again"));
  EXPECT_EQ(Get(Key(30)), "again");
}

TEST_F(RangeDeleteTest, SnapshotOlderThanTheTombstoneSeesEverything) {
  PutRange(0, 100);
  const Snapshot* snap = db_->GetSnapshot();
  ASSERT_OK(db_->DeleteRange(WriteOptions(), Key(20), Key(60)));
  EXPECT_EQ(Keys(db_.get(), snap).size(), 100u);
  EXPECT_NE(Get(Key(30), snap), "NOT_FOUND");
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  // Compaction keeps what the snapshot sees.
  EXPECT_EQ(Keys(db_.get(), snap).size(), 100u);
  EXPECT_NE(Get(Key(30), snap), "NOT_FOUND");
  CheckDropped(db_.get());
  db_->ReleaseSnapshot(snap);
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  CheckDropped(db_.get());
}

TEST_F(RangeDeleteTest, ReopenReplaysTheWal) {
  PutRange(0, 100);
  ASSERT_OK(db_->DeleteRange(WriteOptions(), Key(20), Key(60)));
  Reopen();
  CheckDropped(db_.get());
}

TEST_F(RangeDeleteTest, TablesAndLevelsHonourTheTombstone) {
  PutRange(0, 100, 2000);  // separated values
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));  // the keys at the bottom
  ASSERT_OK(db_->DeleteRange(WriteOptions(), Key(20), Key(60)));
  ASSERT_OK(db_->Flush());  // the tombstone in L0, over the keys below
  CheckDropped(db_.get());
  EXPECT_GE(db_->GetStats().range_tombstones_in_tables, 1u);
  EXPECT_EQ(db_->GetStats().range_deletes, 1u);
  Reopen();
  CheckDropped(db_.get());
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  CheckDropped(db_.get());
  // At the bottom with no snapshot, the tombstone went with what it covered.
  EXPECT_EQ(db_->GetStats().range_tombstones_in_tables, 0u);
  Reopen();
  CheckDropped(db_.get());
}

// The values a compaction drops under a tombstone reach the value log's
// garbage count as overwritten ones do (the CompactionListener), and GC
// reclaims them without copying them.
TEST_F(RangeDeleteTest, CoveredValuesBecomeValueLogGarbage) {
  uint64_t x = 88172645463325252ull;  // xorshift: values zstd cannot shrink
  for (int i = 0; i < 100; ++i) {
    std::string v(2000, '\0');
    for (char& c : v) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c = static_cast<char>(x);
    }
    ASSERT_OK(db_->Put(WriteOptions(), Key(i), v));
  }
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  const Stats before = db_->GetStats();
  ASSERT_OK(db_->DeleteRange(WriteOptions(), Key(20), Key(60)));
  ASSERT_OK(db_->Flush());
  // Once the tombstone is in a table, before any compaction: its flush
  // listed the 40 records it deletes below as foreseen garbage (or a
  // background GC already dropped them).
  const Stats flushed = db_->GetStats();
  EXPECT_GE(flushed.vlog_foreseen_garbage_bytes + flushed.vlog_garbage_bytes -
                before.vlog_garbage_bytes +
                (flushed.gc_records_dropped - before.gc_records_dropped) * 2000,
            40u * 2000);
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  const Stats after = db_->GetStats();
  // Counted as garbage by the compaction, or already dropped by a background
  // GC (which never copies a covered value).
  EXPECT_GE(after.vlog_garbage_bytes - before.vlog_garbage_bytes +
                (after.gc_records_dropped - before.gc_records_dropped) * 2000,
            40u * 2000);
  ASSERT_OK(db_->RunGC().status());
  ASSERT_OK(db_->WaitForBackgroundWork());
  CheckDropped(db_.get());
  Reopen();
  CheckDropped(db_.get());
}

TEST_F(RangeDeleteTest, TombstoneAloneInATable) {
  ASSERT_OK(db_->DeleteRange(WriteOptions(), Key(20), Key(60)));
  ASSERT_OK(db_->Flush());
  PutRange(0, 100);
  EXPECT_EQ(Keys(db_.get()).size(), 100u);  // newer writes are untouched
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  EXPECT_EQ(Keys(db_.get()).size(), 100u);
}

TEST_F(RangeDeleteTest, ReadOnlyOpenAndCheckpoint) {
  PutRange(0, 100);
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->DeleteRange(WriteOptions(), Key(20), Key(60)));
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->CreateCheckpoint("/ckpt").status());
  db_.reset();
  {
    auto ro = OpenForReadOnlyWithFileSystem(SmallOptions(), "/db", fs_);
    ASSERT_OK(ro);
    CheckDropped(ro->get());
  }
  auto ckpt = OpenWithFileSystem(SmallOptions(), "/ckpt", fs_);
  ASSERT_OK(ckpt);
  CheckDropped(ckpt->get());
}

TEST_F(RangeDeleteTest, RepairKeepsTheTombstones) {
  PutRange(0, 100);
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->DeleteRange(WriteOptions(), Key(20), Key(40)));
  ASSERT_OK(db_->Flush());  // one tombstone in a table
  ASSERT_OK(db_->DeleteRange(WriteOptions(), Key(40), Key(60)));  // one in the WAL
  ASSERT_OK(db_->Put(WriteOptions(), Key(50), "after"));  // newer than the tombstone
  db_.reset();
  RepairReport report;
  ASSERT_OK(RepairWithFileSystem(SmallOptions(), "/db", fs_, &report));
  Reopen();
  std::vector<std::string> want = Expected();
  want.insert(std::lower_bound(want.begin(), want.end(), Key(50)), Key(50));
  EXPECT_EQ(Keys(db_.get()), want);
  EXPECT_EQ(Get(Key(50)), "after");
}

TEST_F(RangeDeleteTest, OverlappingTombstonesAndRewrites) {
  std::map<std::string, std::string> model;
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 100; i += 1 + round) {
      const std::string v = absl::StrFormat("v%d-%d", round, i);
      ASSERT_OK(db_->Put(WriteOptions(), Key(i), v));
      model[Key(i)] = v;
    }
    const int b = 10 * round + 5, e = b + 30 + 5 * round;
    ASSERT_OK(db_->DeleteRange(WriteOptions(), Key(b), Key(e)));
    model.erase(model.lower_bound(Key(b)), model.lower_bound(Key(e)));
    if (round % 2 == 1) {
      ASSERT_OK(db_->Flush());
    }
  }
  std::vector<std::string> want;
  for (const auto& [k, v] : model) want.push_back(k);
  EXPECT_EQ(Keys(db_.get()), want);
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  EXPECT_EQ(Keys(db_.get()), want);
  for (const auto& [k, v] : model) EXPECT_EQ(Get(k), v);
}

// The worked example of docs/wal_format.md, "Range deletions", is what a
// WriteBatch encodes, and it decodes back to the same entries.
TEST(RangeDeleteFormatTest, BatchEncodingMatchesTheWalFormatDoc) {
  const std::string expected =
      testing::GoldenBytesFromDoc("docs/wal_format.md", "wal-range-deletion");
  ASSERT_EQ(expected.size(), 22u) << "golden block not found";
  WriteBatch batch;
  batch.Put("a", "1");
  batch.DeleteRange("b", "d");
  WriteBatchInternal::SetSequence(&batch, 9);
  EXPECT_EQ(WriteBatchInternal::Contents(batch), expected);
  std::vector<std::string> seen;
  ASSERT_OK(WriteBatchInternal::ForEach(
      expected, [&](lsm::SequenceNumber seq, lsm::ValueType type, std::string_view k,
                    std::string_view v) {
        seen.push_back(absl::StrFormat("%d %d %s %s", seq, static_cast<int>(type), k, v));
        return absl::OkStatus();
      }));
  EXPECT_EQ(seen, (std::vector<std::string>{"9 1 a 1", "10 3 b d"}));
}

// A Handler written before range deletions is told, not shown half a batch.
TEST(RangeDeleteFormatTest, IterateWithAnOldHandlerIsUnimplemented) {
  struct Old : WriteBatch::Handler {
    void Put(std::string_view, std::string_view) override { ++puts; }
    void Delete(std::string_view) override {}
    int puts = 0;
  } old;
  struct New : Old {
    absl::Status DeleteRange(std::string_view b, std::string_view e) override {
      range = absl::StrFormat("[%s,%s)", b, e);
      return absl::OkStatus();
    }
    std::string range;
  } current;
  WriteBatch batch;
  batch.Put("a", "1");
  batch.DeleteRange("b", "d");
  EXPECT_TRUE(absl::IsUnimplemented(batch.Iterate(&old)));
  ASSERT_OK(batch.Iterate(&current));
  EXPECT_EQ(current.puts, 1);
  EXPECT_EQ(current.range, "[b,d)");
}

}  // namespace
}  // namespace cairn
