// Retention (core/retention.h): the rule that keeps value-log bytes on disk
// while anything can still name them. Its epochs and pins alone, then the
// reads that met a deleted or punched segment before it held them: a Get
// into a PinnableValue and a GetRange parked between the lookup and the
// value read while GC deletes or punches what they name, an iterator that
// outlives the snapshot it was made on, and a flush segment GC must not
// pick while the flushed memtable still shows its values inline.
#include "core/retention.h"

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "core/testing/gc_helpers.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"

namespace cairn {
namespace {

using gc_testing::GcOptions;
using gc_testing::SegmentNames;
using gc_testing::Value;

TEST(RetentionTest, AnEndedEpochExpiresOnlyWithItsLastView) {
  Retention r;
  std::shared_ptr<const ReadEpoch> old_view = r.epoch();
  const std::weak_ptr<const void> first = r.EndEpoch();
  std::shared_ptr<const ReadEpoch> new_view = r.epoch();
  const std::weak_ptr<const void> second = r.EndEpoch();
  EXPECT_FALSE(first.expired());
  EXPECT_FALSE(second.expired());
  // A view of an earlier epoch holds every later one.
  new_view.reset();
  EXPECT_FALSE(second.expired());
  old_view.reset();
  EXPECT_TRUE(first.expired());
  EXPECT_TRUE(second.expired());
}

TEST(RetentionTest, ObsoleteSegmentsWaitForViewsSnapshotsAndPins) {
  Retention r;
  std::shared_ptr<const ReadEpoch> view = r.epoch();
  const uint64_t ids[] = {7, 8};
  r.AddObsolete(ids, /*sequence=*/100);
  EXPECT_TRUE(r.TakeDeletable(200).empty()) << "a view from before the move";
  view.reset();
  EXPECT_TRUE(r.TakeDeletable(99).empty()) << "a snapshot older than the move";
  {
    Retention::SequencePin pin = r.PinSequence(50);
    EXPECT_EQ(r.pinned_sequences(), 1u);
    EXPECT_TRUE(r.TakeDeletable(200).empty()) << "a pinned sequence older than the move";
    Retention::SequencePin moved = std::move(pin);
    EXPECT_FALSE(pin.pinned());  // NOLINT(bugprone-use-after-move): checks the move
    EXPECT_TRUE(moved.pinned());
    EXPECT_EQ(r.pinned_sequences(), 1u);
  }
  EXPECT_EQ(r.pinned_sequences(), 0u);
  EXPECT_EQ(r.TakeDeletable(100), (std::vector<uint64_t>{7, 8}));
  EXPECT_EQ(r.obsolete_segments(), 0u);
  const uint64_t at_open[] = {3};
  r.AddObsoleteAtOpen(at_open);
  EXPECT_EQ(r.TakeDeletable(0), (std::vector<uint64_t>{3}));
}

// A database whose reads never find a value in a cache, so that each one
// goes to its segment.
class RetentionDbTest : public ::testing::Test {
 protected:
  static constexpr size_t kValueSize = 4096;
  Options DbOptions() const {
    Options o = GcOptions();
    o.value_separation_threshold = 1024;
    o.cache_size = 0;
    return o;
  }
  void SetUp() override {
    auto db = OpenWithFileSystem(DbOptions(), "/db", fs_);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
  }
  DBImpl* impl() { return static_cast<DBImpl*>(db_.get()); }
  static std::string Key(int i) { return absl::StrFormat("key%05d", i); }
  void Put(int first, int last, uint64_t salt) {
    for (int i = first; i < last; ++i) {
      const std::string v = Value(salt * 1000003 + i, kValueSize);
      ASSERT_TRUE(db_->Put({}, Key(i), v).ok());
      model_[Key(i)] = v;
    }
  }
  // Every key of [0, n) but each third: two thirds of each segment the
  // keys' earlier pass wrote die, and GC takes it.
  void OverwriteTwoThirds(int n, uint64_t salt) {
    for (int i = 0; i < n; ++i) {
      if (i % 3 != 0) Put(i, i + 1, salt);
    }
  }
  // Parks the next Get into a PinnableValue or GetRange after its lookup
  // until Resume; Parked waits until one is parked.
  void ParkNextRead() {
    impl()->after_value_lookup_for_testing = [this] {
      if (parked_once_.exchange(true)) return;
      parked_.Notify();
      resume_.WaitForNotification();
    };
  }

  std::shared_ptr<io::MemoryFileSystem> fs_ = std::make_shared<io::MemoryFileSystem>();
  std::unique_ptr<DB> db_;
  std::map<std::string, std::string> model_;
  std::atomic<bool> parked_once_{false};
  absl::Notification parked_, resume_;
};

// The victim GC collects while a Get into a PinnableValue is parked after
// its lookup stays on disk until the read is done (it failed with
// "value-log segment missing" when the view died with the lookup).
TEST_F(RetentionDbTest, PinnedGetParkedWhileGcDeletesItsSegment) {
  Put(0, 96, 1);
  OverwriteTwoThirds(96, 2);
  ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
  const std::string key = Key(30);  // live, in a segment GC will collect
  ParkNextRead();
  PinnableValue value;
  absl::Status read;
  std::thread reader([&] { read = db_->Get({}, key, &value); });
  parked_.WaitForNotification();
  absl::StatusOr<GcResult> gc = db_->RunGC();
  ASSERT_TRUE(gc.ok()) << gc.status();
  ASSERT_GT(gc->victims, 0u);
  resume_.Notify();
  reader.join();
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(value.value(), model_[key]);
  // Once the read is done, the next pass deletes what it held.
  const size_t held = SegmentNames(fs_.get()).size();
  ASSERT_TRUE(db_->RunGC().ok());
  EXPECT_LT(SegmentNames(fs_.get()).size(), held);
}

// The same for a GetRange parked while the record it names dies and a
// settle punches its run out of the file.
TEST_F(RetentionDbTest, RangedReadParkedWhileItsRunIsPunched) {
  Put(0, 96, 1);
  ASSERT_TRUE(db_->Flush().ok());
  const std::string key = Key(40);
  const std::string old_value = model_[key];
  ParkNextRead();
  std::string range;
  absl::Status read;
  std::thread reader([&] { read = db_->GetRange({}, key, 100, 2000, &range); });
  parked_.WaitForNotification();
  // Every record of the first pass dies, in runs the compaction counts and
  // the settle punches.
  Put(0, 96, 2);
  ASSERT_TRUE(db_->Flush().ok());
  ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
  ASSERT_TRUE(db_->WaitForBackgroundWork().ok());
  const uint64_t punched_while_parked = db_->GetStats().gc_punched_bytes;
  resume_.Notify();
  reader.join();
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(range, old_value.substr(100, 2000));
  // The reader is gone: the runs it held are punched now.
  ASSERT_TRUE(db_->WaitForBackgroundWork().ok());
  EXPECT_GT(db_->GetStats().gc_punched_bytes, punched_while_parked);
}

// An iterator made on a snapshot reads on after the snapshot is released,
// though GC moved its records before the iterator was made (it showed 0 of
// 200 entries, ending in DataLoss, when only the snapshot held them).
TEST_F(RetentionDbTest, IteratorOutlivesItsSnapshot) {
  Put(0, 200, 1);
  OverwriteTwoThirds(200, 2);
  ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
  const std::map<std::string, std::string> at_snapshot = model_;
  const Snapshot* snapshot = db_->GetSnapshot();
  // Moves the first pass's live half, which the snapshot reads at its old
  // place: only the snapshot holds the victims now.
  absl::StatusOr<GcResult> gc = db_->RunGC();
  ASSERT_TRUE(gc.ok()) << gc.status();
  ASSERT_GT(gc->victims, 0u);
  ReadOptions ro;
  ro.snapshot = snapshot;
  std::unique_ptr<Iterator> it = db_->NewIterator(ro);
  db_->ReleaseSnapshot(snapshot);
  ASSERT_TRUE(db_->RunGC().ok());
  ASSERT_TRUE(db_->WaitForBackgroundWork().ok());
  size_t n = 0;
  auto m = at_snapshot.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m, ++n) {
    ASSERT_NE(m, at_snapshot.end());
    ASSERT_EQ(it->key(), m->first);
    ASSERT_EQ(it->value(), m->second) << m->first;
  }
  ASSERT_TRUE(it->status().ok()) << it->status();
  EXPECT_EQ(n, at_snapshot.size());
  // Gone with the iterator, its pin lets the collected segments go.
  const size_t held = SegmentNames(fs_.get()).size();
  it.reset();
  ASSERT_TRUE(db_->RunGC().ok());
  EXPECT_LT(SegmentNames(fs_.get()).size(), held);
}

// GC merges small segments (docs/gc.md, "Merging small segments"); a
// flush's own segment is not one of them until the flushed memtable has
// left the SuperVersion. Picked earlier, the merge's liveness checks found
// each value inline in that memtable, took every record for dead, and
// deleted the segment the new table points into (DataLoss once the
// memtable was gone: the race that took merging out in e56f6a5).
TEST(RetentionFlushTest, AFlushSegmentIsNotMergedBeforeItsMemtableLeaves) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  const Options o = gc_testing::SmallSegmentOptions();
  std::map<std::string, std::string> model;
  // Seven small segments: one short of a merge.
  gc_testing::SmallSegmentSessions(o, fs, 0, 7, &model);
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  DB* db = opened->get();
  auto* impl = static_cast<DBImpl*>(db);
  absl::StatusOr<GcResult> during_flush = absl::UnknownError("not run");
  impl->after_flush_logged_for_testing = [&] {
    // The eighth small segment is in the set; its memtable still shows its
    // values. A GC run now must leave it alone.
    std::thread gc([&] { during_flush = db->RunGC(); });
    gc.join();
  };
  gc_testing::PutTenAndFlush(db, 7, &model);
  impl->after_flush_logged_for_testing = nullptr;
  ASSERT_TRUE(during_flush.ok()) << during_flush.status();
  EXPECT_EQ(during_flush->victims, 0u);
  gc_testing::ExpectModel(db, model);
  // Once the memtable is gone the eight are merged, and every value reads.
  absl::StatusOr<GcResult> after = db->RunGC();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->victims, 8u);
  gc_testing::ExpectModel(db, model);
  opened->reset();
  gc_testing::ReopenAndExpectModel(o, fs, model);
}

}  // namespace
}  // namespace cairn
