// Expiry (issue 60, item 5) with a fake clock: reads never return an expired
// entry (Get, MultiGet, GetRange, iterators both ways, keys-only, snapshots)
// from the memtable, L0 or the bottom level; an expired entry hides older
// versions of its key, also once compaction has dropped it; compaction
// counts an expired separated value as garbage without reading it; expiry
// survives reopen (WAL replay), checkpoint and repair; bad TTLs get a clear
// status; the clock going back does not bring an entry back.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "cairn/repair.h"
#include "cairn/write_batch.h"
#include "core/db_impl.h"
#include "core/repair_internal.h"
#include "core/testing/ttl_helpers.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

using testing_clock::FakeClock;

std::string Key(int i) { return absl::StrFormat("key%04d", i); }

// Where the entries are when they are read.
enum class Place { kMemtable, kLevel0, kBottom };

class TtlTest : public testing_clock::SmallDbTest {
 protected:
  void MoveTo(Place p) {
    if (p == Place::kLevel0) {
      ASSERT_OK(db_->Flush());
    } else if (p == Place::kBottom) {
      ASSERT_OK(db_->CompactRange(nullptr, nullptr));
    }
  }
  std::string Value(int i) {
    return std::string(GetParam() ? 300 : 20, static_cast<char>('a' + i % 26));
  }
  bool Found(const std::string& k) { return Get(k) != "NOT_FOUND"; }
  std::vector<std::string> Keys(bool reverse, bool keys_only = false,
                                const Snapshot* snap = nullptr) {
    ReadOptions ro;
    ro.keys_only = keys_only;
    ro.snapshot = snap;
    std::vector<std::string> out;
    auto it = db_->NewIterator(ro);
    if (reverse) {
      for (it->SeekToLast(); it->Valid(); it->Prev()) {
        out.insert(out.begin(), std::string(it->key()));
      }
    } else {
      for (it->SeekToFirst(); it->Valid(); it->Next()) out.emplace_back(it->key());
    }
    EXPECT_OK(it->status());
    return out;
  }
};

TEST_P(TtlTest, ExpiredEntriesReadAsDeletedAtEveryLevel) {
  for (Place place : {Place::kMemtable, Place::kLevel0, Place::kBottom}) {
    SCOPED_TRACE(static_cast<int>(place));
    SetUp();
    // k0: old value, then an expiring overwrite; k1: expiring alone; k2:
    // never expires.
    ASSERT_OK(db_->Put({}, Key(0), Value(0)));
    ASSERT_OK(db_->Flush());
    ASSERT_OK(db_->CompactRange(nullptr, nullptr));
    ASSERT_OK(db_->PutWithTTL({}, Key(0), Value(1), 10));
    ASSERT_OK(db_->PutWithTTL({}, Key(1), Value(2), 20));
    ASSERT_OK(db_->Put({}, Key(2), Value(3)));
    MoveTo(place);
    std::string v;
    ASSERT_OK(db_->Get({}, Key(0), &v));
    EXPECT_EQ(v, Value(1));
    clock_->AdvanceSeconds(10);  // k0 expires exactly now
    EXPECT_FALSE(Found(Key(0))) << "the expired overwrite hides the older value";
    EXPECT_TRUE(Found(Key(1)));
    EXPECT_EQ(Keys(false), (std::vector<std::string>{Key(1), Key(2)}));
    EXPECT_EQ(Keys(true), (std::vector<std::string>{Key(1), Key(2)}));
    EXPECT_EQ(Keys(false, /*keys_only=*/true), (std::vector<std::string>{Key(1), Key(2)}));
    clock_->AdvanceSeconds(10);
    // The views need strings that outlive them (Key returns a temporary).
    const std::vector<std::string> names = {Key(0), Key(1), Key(2)};
    const std::vector<std::string_view> keys(names.begin(), names.end());
    std::vector<std::string> values;
    std::vector<absl::Status> st = db_->MultiGet({}, keys, &values);
    EXPECT_TRUE(absl::IsNotFound(st[0])) << st[0];
    EXPECT_TRUE(absl::IsNotFound(st[1])) << st[1];
    EXPECT_OK(st[2]);
    std::string part;
    EXPECT_TRUE(absl::IsNotFound(db_->GetRange({}, Key(1), 0, 5, &part)));
    PinnableValue pinned;
    EXPECT_TRUE(absl::IsNotFound(db_->Get({}, Key(1), &pinned)));
    EXPECT_EQ(Keys(true), (std::vector<std::string>{Key(2)}));
    // Once compaction drops them, the old value of k0 stays hidden.
    ASSERT_OK(db_->CompactRange(nullptr, nullptr));
    EXPECT_FALSE(Found(Key(0)));
    EXPECT_FALSE(Found(Key(1)));
    EXPECT_EQ(Keys(false), (std::vector<std::string>{Key(2)}));
  }
}

TEST_P(TtlTest, SnapshotsSeeExpiryByTimeAndCompactionKeepsWhatTheyNeed) {
  ASSERT_OK(db_->Put({}, Key(0), Value(0)));
  const Snapshot* snap = db_->GetSnapshot();
  ASSERT_OK(db_->PutWithTTL({}, Key(0), Value(1), 5));
  clock_->AdvanceSeconds(6);
  // The snapshot predates the expiring write: it sees the old value, the
  // latest state sees the key deleted, before and after compaction.
  for (int round = 0; round < 2; ++round) {
    ReadOptions at_snap;
    at_snap.snapshot = snap;
    std::string v;
    ASSERT_OK(db_->Get(at_snap, Key(0), &v));
    EXPECT_EQ(v, Value(0));
    EXPECT_EQ(Keys(false, false, snap), (std::vector<std::string>{Key(0)}));
    EXPECT_FALSE(Found(Key(0)));
    ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  }
  db_->ReleaseSnapshot(snap);
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  EXPECT_FALSE(Found(Key(0)));
  EXPECT_EQ(db_->GetStats().expired_dropped, 1u);
}

TEST_P(TtlTest, ExpirySurvivesReopenAndCheckpoint) {
  ASSERT_OK(db_->PutWithTTL({}, Key(0), Value(0), 100));
  ASSERT_OK(db_->Put({}, Key(1), Value(1)));
  Open();  // WAL replay
  EXPECT_TRUE(Found(Key(0)));
  ASSERT_OK(db_->CreateCheckpoint("/ckpt").status());
  clock_->AdvanceSeconds(100);
  EXPECT_FALSE(Found(Key(0)));
  Open();
  EXPECT_FALSE(Found(Key(0)));
  EXPECT_TRUE(Found(Key(1)));
  auto ckpt = OpenWithFileSystem(MakeOptions(), "/ckpt", fs_);
  ASSERT_OK(ckpt);
  std::string v;
  EXPECT_TRUE(absl::IsNotFound((*ckpt)->Get({}, Key(0), &v)));
  EXPECT_OK((*ckpt)->Get({}, Key(1), &v));
}

TEST_P(TtlTest, RepairKeepsExpiry) {
  ASSERT_OK(db_->PutWithTTL({}, Key(0), Value(0), 100));
  ASSERT_OK(db_->Put({}, Key(1), Value(1)));
  ASSERT_OK(db_->Flush());
  db_.reset();
  RepairReport report;
  Options o = MakeOptions();
  ASSERT_OK(RepairWithFileSystem(o, "/db", fs_, &report));
  Open();
  EXPECT_TRUE(Found(Key(0)));
  clock_->AdvanceSeconds(100);
  EXPECT_FALSE(Found(Key(0)));
  EXPECT_TRUE(Found(Key(1)));
}

TEST_P(TtlTest, DefaultTtlAndWriteOptionsTtl) {
  db_.reset();
  Options o = MakeOptions();
  o.default_ttl_seconds = 50;
  auto db = OpenWithFileSystem(o, "/db", fs_);
  ASSERT_OK(db);
  db_ = std::move(*db);
  ASSERT_OK(db_->Put({}, Key(0), Value(0)));  // the default: 50 s
  WriteOptions wo;
  wo.ttl_seconds = 10;
  WriteBatch b;
  b.Put(Key(1), Value(1));                                       // 10 s
  b.PutWithExpiry(Key(2), Value(2), FakeClock::kStart + 200'000'000);  // its own
  ASSERT_OK(db_->Write(wo, b));
  clock_->AdvanceSeconds(10);
  EXPECT_TRUE(Found(Key(0)));
  EXPECT_FALSE(Found(Key(1)));
  EXPECT_TRUE(Found(Key(2)));
  clock_->AdvanceSeconds(40);
  EXPECT_FALSE(Found(Key(0)));
  EXPECT_TRUE(Found(Key(2)));
  clock_->AdvanceSeconds(150);
  EXPECT_FALSE(Found(Key(2)));
}

TEST_P(TtlTest, BadTtlsGetAClearStatusAndWriteNothing) {
  absl::Status s = db_->PutWithTTL({}, Key(0), Value(0), 0);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  s = db_->PutWithTTL({}, Key(0), Value(0), kMaxTtlSeconds + 1);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("kMaxTtlSeconds"), std::string::npos) << s;
  WriteOptions wo;
  wo.ttl_seconds = UINT64_MAX;
  s = db_->Put(wo, Key(0), Value(0));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  WriteBatch b;
  b.PutWithExpiry(Key(0), Value(0), 0);
  EXPECT_TRUE(absl::IsInvalidArgument(b.status()));
  EXPECT_TRUE(absl::IsInvalidArgument(db_->Write({}, b)));
  EXPECT_FALSE(Found(Key(0)));
  // A default over the limit refuses the open, by name.
  Options o = MakeOptions();
  o.default_ttl_seconds = kMaxTtlSeconds + 1;
  s = OpenWithFileSystem(o, "/other", fs_).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("default_ttl_seconds"), std::string::npos) << s;
  // The longest TTL is accepted and does not wrap.
  ASSERT_OK(db_->PutWithTTL({}, Key(1), Value(1), kMaxTtlSeconds));
  clock_->AdvanceSeconds(kMaxTtlSeconds - 1);
  EXPECT_TRUE(Found(Key(1)));
}

TEST_P(TtlTest, AClockThatGoesBackDoesNotBringAnEntryBack) {
  ASSERT_OK(db_->PutWithTTL({}, Key(0), Value(0), 10));
  clock_->AdvanceSeconds(10);
  EXPECT_FALSE(Found(Key(0)));
  clock_->Set(FakeClock::kStart);  // back 10 s
  EXPECT_FALSE(Found(Key(0)));
  // A write now measures its TTL from the latest time seen.
  ASSERT_OK(db_->PutWithTTL({}, Key(1), Value(1), 5));
  clock_->Set(FakeClock::kStart + 14'000'000);
  EXPECT_TRUE(Found(Key(1)));
  clock_->Set(FakeClock::kStart + 15'000'000);
  EXPECT_FALSE(Found(Key(1)));
}

TEST_P(TtlTest, IteratorsKeepTheirCreationTime) {
  ASSERT_OK(db_->PutWithTTL({}, Key(0), Value(0), 10));
  auto it = db_->NewIterator({});
  clock_->AdvanceSeconds(10);
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), Key(0));
  EXPECT_EQ(it->value(), Value(0));
  it.reset();
  EXPECT_EQ(Keys(false), std::vector<std::string>{});
}

// Merged with range deletions and the change feed (2026-12-08): a range
// tombstone and expiring entries in one memtable, then one table (format 3
// with a range-deletion block), then the bottom level; the feed hands an
// expiring put back with its expiry, also one whose value the log holds.
TEST_P(TtlTest, RangeDeletionsAndExpiryTogether) {
  ASSERT_OK(db_->PutWithTTL({}, Key(0), Value(0), 10));
  ASSERT_OK(db_->PutWithTTL({}, Key(1), Value(1), 10));
  ASSERT_OK(db_->Put({}, Key(2), Value(2)));
  ASSERT_OK(db_->DeleteRange({}, Key(1), Key(2)));
  for (Place place : {Place::kMemtable, Place::kLevel0, Place::kBottom}) {
    SCOPED_TRACE(static_cast<int>(place));
    MoveTo(place);
    EXPECT_EQ(Keys(false), (std::vector<std::string>{Key(0), Key(2)}));
    EXPECT_EQ(Keys(true), (std::vector<std::string>{Key(0), Key(2)}));
  }
  Open();
  EXPECT_EQ(Get(Key(0)), Value(0));
  EXPECT_EQ(Get(Key(1)), "NOT_FOUND");
  clock_->AdvanceSeconds(10);
  EXPECT_EQ(Keys(false), (std::vector<std::string>{Key(2)}));
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  EXPECT_EQ(Keys(false), (std::vector<std::string>{Key(2)}));
}

class ExpiryCollector : public WriteBatch::Handler {
 public:
  void Put(std::string_view key, std::string_view value) override {
    seen.push_back(absl::StrCat("put ", std::string(key), " ", value.size()));
  }
  void PutWithExpiry(std::string_view key, std::string_view value, uint64_t expiry) override {
    seen.push_back(absl::StrCat("expiring ", std::string(key), " ", value.size(), " at ", expiry));
  }
  void Delete(std::string_view key) override {
    seen.push_back(absl::StrCat("del ", std::string(key)));
  }
  absl::Status DeleteRange(std::string_view begin, std::string_view end) override {
    seen.push_back(absl::StrCat("range ", std::string(begin), " ", std::string(end)));
    return absl::OkStatus();
  }
  std::vector<std::string> seen;
};

TEST_P(TtlTest, TheFeedKeepsExpiries) {
  const uint64_t first = db_->GetLatestSequenceNumber() + 1;
  ASSERT_OK(db_->PutWithTTL({}, Key(0), Value(0), 10));
  ASSERT_OK(db_->DeleteRange({}, Key(1), Key(2)));
  ASSERT_OK(db_->Put({}, Key(2), Value(2)));
  auto it = db_->GetUpdatesSince(first);
  ASSERT_OK(it);
  ExpiryCollector c;
  for (; (*it)->Valid(); (*it)->Next()) ASSERT_OK((*it)->update().batch.Iterate(&c));
  ASSERT_OK((*it)->status());
  const uint64_t expiry = FakeClock::kStart + 10'000'000;
  const size_t n = Value(0).size();
  EXPECT_EQ(c.seen,
            (std::vector<std::string>{absl::StrCat("expiring ", Key(0), " ", n, " at ", expiry),
                                      absl::StrCat("range ", Key(1), " ", Key(2)),
                                      absl::StrCat("put ", Key(2), " ", n)}));
}

INSTANTIATE_TEST_SUITE_P(Values, TtlTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Separated" : "Inline"; });

// Separated values: compaction drops the expired ones and counts their
// bytes as garbage without reading the value log, and GC then frees them.
TEST(TtlGarbageTest, ExpiredValuesBecomeGarbageUnread) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  auto clock = std::make_shared<FakeClock>();
  Options o = testing_clock::SmallOptions(/*separated=*/true);
  o.clock = clock;
  o.value_log_segment_size = 64 << 10;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_OK(opened);
  std::unique_ptr<DB> db = std::move(*opened);
  constexpr int kKeys = 200;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_OK(db->PutWithTTL({}, Key(i), std::string(1000, 'v'), 60));
  }
  ASSERT_OK(db->Put({}, "live", std::string(1000, 'l')));
  ASSERT_OK(db->Flush());
  const Stats before = db->GetStats();
  clock->AdvanceSeconds(60);
  ASSERT_OK(db->CompactRange(nullptr, nullptr));
  const Stats after = db->GetStats();
  EXPECT_EQ(after.expired_dropped, static_cast<uint64_t>(kKeys));
  EXPECT_EQ(after.vlog_reads, before.vlog_reads) << "expired values are never read";
  EXPECT_GE(after.vlog_garbage_bytes - before.vlog_garbage_bytes, uint64_t{kKeys} * 1000);
  ASSERT_OK(db->RunGC().status());
  std::string v;
  ASSERT_OK(db->Get({}, "live", &v));
  EXPECT_EQ(v, std::string(1000, 'l'));
  auto it = db->NewIterator({});
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "live");
  it->Next();
  EXPECT_FALSE(it->Valid());
}

// GC moves expiring values with their expiry: after the move they still
// expire on time, and one that expired meanwhile is not brought back.
TEST(TtlGarbageTest, GcMovesKeepTheExpiry) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  auto clock = std::make_shared<FakeClock>();
  Options o = testing_clock::SmallOptions(/*separated=*/true);
  o.clock = clock;
  o.value_log_segment_size = 64 << 10;
  o.gc_min_garbage_ratio = 0.1;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_OK(opened);
  std::unique_ptr<DB> db = std::move(*opened);
  // Expiring keys among plain ones, then the plain ones overwritten: the
  // segments are mostly garbage, so GC moves the expiring values.
  for (int i = 0; i < 120; ++i) {
    if (i % 3 == 0) {
      ASSERT_OK(db->PutWithTTL({}, Key(i), std::string(1000, 'e'), i % 2 == 0 ? 10 : 100));
    } else {
      ASSERT_OK(db->Put({}, Key(i), std::string(1000, 'p')));
    }
  }
  ASSERT_OK(db->Flush());
  for (int i = 0; i < 120; ++i) {
    if (i % 3 != 0) {
      ASSERT_OK(db->Delete({}, Key(i)));
    }
  }
  ASSERT_OK(db->CompactRange(nullptr, nullptr));
  clock->AdvanceSeconds(10);  // the even expiring keys expire before GC runs
  const uint64_t relocated_before = db->GetStats().gc_bytes_relocated;
  ASSERT_OK(db->RunGC().status());
  EXPECT_GT(db->GetStats().gc_bytes_relocated, relocated_before) << "GC moved values";
  std::string v;
  for (int i = 0; i < 120; i += 3) {
    const absl::Status s = db->Get({}, Key(i), &v);
    if (i % 2 == 0) {
      EXPECT_TRUE(absl::IsNotFound(s)) << Key(i) << ": " << s;
    } else {
      EXPECT_TRUE(s.ok()) << Key(i) << ": " << s;
    }
  }
  clock->AdvanceSeconds(90);
  ASSERT_OK(db->CompactRange(nullptr, nullptr));
  auto it = db->NewIterator({});
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid()) << "every expiring key expired, moved or not";
  EXPECT_OK(it->status());
}

}  // namespace
}  // namespace cairn
