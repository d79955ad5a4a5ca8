// The change feed (DB::GetUpdatesSince), the sequence numbers of the API,
// WAL retention by time and size, the ingestion event's WAL record and
// hook, and the follower test: a follower fed from the feed ends with the
// primary's contents key by key (docs/replication.md).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "core/testing/gc_helpers.h"
#include "core/write_batch_internal.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "lsm/filename.h"

namespace cairn {
namespace {

constexpr char kDb[] = "/db";
constexpr char kFollower[] = "/follower";

std::string Key(int i) { return absl::StrFormat("key%05d", i); }

Options FeedOptions() {
  Options o = gc_testing::GcOptions();  // values of 256 bytes and up go to the value log
  o.wal_size_limit_bytes = 64 << 20;
  return o;
}

// Retention by age alone.
Options TtlOptions(uint64_t seconds) {
  Options o = FeedOptions();
  o.wal_size_limit_bytes = 0;
  o.wal_ttl_seconds = seconds;
  return o;
}

// Every item from `*next` on, applied to follower; *next moves past them.
absl::Status Follow(DB* primary, DB* follower, uint64_t* next, size_t* items = nullptr) {
  absl::StatusOr<std::unique_ptr<UpdateIterator>> it = primary->GetUpdatesSince(*next);
  if (!it.ok()) return it.status();
  for (; (*it)->Valid(); (*it)->Next()) {
    const Update& u = (*it)->update();
    if (u.sequence > *next) {
      return absl::InternalError(absl::StrCat("gap: got ", u.sequence, " wanted ", *next));
    }
    if (u.kind == Update::Kind::kWriteBatch) {
      // A batch that straddles *next was applied whole before; entries are
      // idempotent in order, so applying it again changes nothing, but the
      // feed starts at the batch holding *next only on the first call.
      if (absl::Status s = follower->Write(WriteOptions(), u.batch); !s.ok()) return s;
    }
    *next = u.last_sequence() + 1;
    if (items != nullptr) ++*items;
  }
  return (*it)->status();
}

std::map<std::string, std::string> Contents(DB* db) {
  std::map<std::string, std::string> out;
  std::unique_ptr<Iterator> it = db->NewIterator(ReadOptions());
  for (it->SeekToFirst(); it->Valid(); it->Next()) out[std::string(it->key())] = it->value();
  EXPECT_TRUE(it->status().ok()) << it->status();
  return out;
}

class UpdatesTest : public ::testing::Test {
 protected:
  void SetUp() override { fs_ = std::make_shared<io::MemoryFileSystem>(); }
  std::unique_ptr<DB> Open(const Options& o, const char* path = kDb) {
    auto db = OpenWithFileSystem(o, path, fs_);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? *std::move(db) : nullptr;
  }
  size_t Wals() { return gc_testing::FileNamesOfType(fs_.get(), kDb, lsm::FileType::kLog).size(); }
  std::shared_ptr<io::MemoryFileSystem> fs_;
};

TEST_F(UpdatesTest, SequenceNumbersOfWritesAndSnapshots) {
  auto db = Open(FeedOptions());
  EXPECT_EQ(db->GetLatestSequenceNumber(), 0u);
  WriteBatch b;
  b.Put("a", "1");
  b.Delete("b");
  b.Put("c", "3");
  uint64_t first = 0;
  ASSERT_TRUE(db->Write(WriteOptions(), b, &first).ok());
  EXPECT_EQ(first, 1u);
  EXPECT_EQ(db->GetLatestSequenceNumber(), 3u);
  ASSERT_TRUE(db->Write(WriteOptions(), b, &first).ok());
  EXPECT_EQ(first, 4u);
  const Snapshot* snap = db->GetSnapshot();
  EXPECT_EQ(snap->GetSequenceNumber(), 6u);
  db->ReleaseSnapshot(snap);
  // An empty batch takes no number.
  ASSERT_TRUE(db->Write(WriteOptions(), WriteBatch(), &first).ok());
  EXPECT_EQ(first, 7u);
  EXPECT_EQ(db->GetLatestSequenceNumber(), 6u);
  // Concurrent writers each get their own numbers, none shared.
  std::vector<std::thread> threads;
  std::vector<uint64_t> got(400);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        WriteBatch w;
        w.Put(Key(t * 100 + i), "v");
        w.Put(Key(t * 100 + i) + "x", "v");
        ASSERT_TRUE(db->Write(WriteOptions(), w, &got[t * 100 + i]).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  std::sort(got.begin(), got.end());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], 7 + 2 * i);
  EXPECT_EQ(db->GetLatestSequenceNumber(), 806u);
}

TEST_F(UpdatesTest, FeedCarriesSeparatedValuesAndReturnsAStraddlingBatchWhole) {
  auto db = Open(FeedOptions());
  const std::string big = gc_testing::Value(1, 5000);  // a pointer in the WAL
  ASSERT_TRUE(db->Put(WriteOptions(), "a", "small").ok());
  WriteBatch b;
  b.Put("b", big);
  b.Delete("a");
  b.Put("c", "x");
  ASSERT_TRUE(db->Write(WriteOptions(), b).ok());  // sequences 2..4
  WriteOptions synced;
  synced.sync = true;
  ASSERT_TRUE(db->Put(synced, "d", big).ok());          // 5, a synced group
  ASSERT_TRUE(db->Flush().ok());                        // an end record and a sync record
  ASSERT_TRUE(db->Put(WriteOptions(), "e", "y").ok());  // 6
  auto it = db->GetUpdatesSince(3);
  ASSERT_TRUE(it.ok()) << it.status();
  std::vector<std::pair<uint64_t, std::string>> seen;
  for (; (*it)->Valid(); (*it)->Next()) {
    const Update& u = (*it)->update();
    ASSERT_EQ(u.kind, Update::Kind::kWriteBatch);
    struct H : WriteBatch::Handler {
      std::string out;
      void Put(std::string_view k, std::string_view v) override {
        absl::StrAppend(&out, "P", std::string(k), v.size(), ";");
      }
      void Delete(std::string_view k) override { absl::StrAppend(&out, "D", std::string(k), ";"); }
    } h;
    ASSERT_TRUE(u.batch.Iterate(&h).ok());
    seen.emplace_back(u.sequence, h.out);
  }
  ASSERT_TRUE((*it)->status().ok()) << (*it)->status();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], std::make_pair(uint64_t{2}, std::string("Pb5000;Da;Pc1;")));
  EXPECT_EQ(seen[1], std::make_pair(uint64_t{5}, std::string("Pd5000;")));
  EXPECT_EQ(seen[2], std::make_pair(uint64_t{6}, std::string("Pe1;")));
}

TEST_F(UpdatesTest, BadInput) {
  auto db = Open(FeedOptions());
  ASSERT_TRUE(db->Put(WriteOptions(), "a", "1").ok());
  auto beyond = db->GetUpdatesSince(3);
  EXPECT_TRUE(absl::IsInvalidArgument(beyond.status())) << beyond.status();
  auto next = db->GetUpdatesSince(2);  // the next write's: nothing yet
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE((*next)->Valid());
  EXPECT_TRUE((*next)->status().ok());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  auto ro = OpenForReadOnlyWithFileSystem(FeedOptions(), kDb, fs_);
  ASSERT_TRUE(ro.ok()) << ro.status();
  EXPECT_TRUE(absl::IsFailedPrecondition((*ro)->GetUpdatesSince(1).status()));
}

TEST_F(UpdatesTest, WithoutRetentionAFlushedRangeIsOutOfRange) {
  Options o = FeedOptions();
  o.wal_size_limit_bytes = 0;
  auto db = Open(o);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(db->Put(WriteOptions(), Key(i), "v").ok());
  ASSERT_TRUE(db->Flush().ok());
  ASSERT_TRUE(db->Put(WriteOptions(), Key(10), "v").ok());
  auto it = db->GetUpdatesSince(5);
  ASSERT_TRUE(absl::IsOutOfRange(it.status())) << it.status();
  EXPECT_TRUE(absl::StrContains(it.status().message(), "oldest sequence the WALs hold is 11"))
      << it.status();
  EXPECT_TRUE(db->GetUpdatesSince(11).ok());
}

TEST_F(UpdatesTest, RetentionBySizeKeepsTheNewestWals) {
  Options o = FeedOptions();
  o.wal_size_limit_bytes = 40 << 10;
  o.value_separation_threshold = kInlineValues;  // the values fill the WALs
  auto db = Open(o);
  const std::string v(4000, 'v');
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(db->Put(WriteOptions(), Key(round * 5 + i), v).ok());
    ASSERT_TRUE(db->Flush().ok());
  }
  // Each WAL holds about 20 KiB: two fit under 40 KiB, a third does not.
  auto* impl = static_cast<DBImpl*>(db.get());
  EXPECT_GE(impl->retained_wals_for_testing(), 1u);
  EXPECT_LE(impl->retained_wals_for_testing(), 2u);
  auto gone = db->GetUpdatesSince(1);
  ASSERT_TRUE(absl::IsOutOfRange(gone.status())) << gone.status();
  auto kept = db->GetUpdatesSince(26);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_TRUE((*kept)->Valid());
  EXPECT_EQ((*kept)->update().sequence, 26u);
}

// GC collects the segments the first writes went to; the WALs kept for
// the feed point into them, so the segments stay (the retention floor)
// and the feed still carries the old values, until the WALs go.
TEST_F(UpdatesTest, KeptWalsHoldTheSegmentsTheyPointInto) {
  auto db = Open(TtlOptions(3600));
  auto* impl = static_cast<DBImpl*>(db.get());
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 40; ++i) {
      ASSERT_TRUE(db->Put(WriteOptions(), Key(i), gc_testing::Value(round * 100 + i, 3000)).ok());
    }
    ASSERT_TRUE(db->Flush().ok());
  }
  absl::StatusOr<GcResult> gc = db->RunGC();
  ASSERT_TRUE(gc.ok()) << gc.status();
  ASSERT_GT(gc->victims, 0u);
  EXPECT_EQ(gc->segments_freed, 0u);
  auto it = db->GetUpdatesSince(1);
  ASSERT_TRUE(it.ok()) << it.status();
  size_t puts = 0;
  for (; (*it)->Valid(); (*it)->Next()) {
    struct Check : WriteBatch::Handler {
      uint64_t seq;
      size_t* puts;
      void Put(std::string_view k, std::string_view v) override {
        // Writes 1..120 are the test's (round r, key i at 40r + i + 1).
        if (seq <= 120) {
          const int n = static_cast<int>(seq - 1);
          EXPECT_EQ(std::string(k), Key(n % 40));
          EXPECT_EQ(std::string(v), gc_testing::Value((n / 40) * 100 + n % 40, 3000));
          ++*puts;
        }
        ++seq;
      }
      void Delete(std::string_view) override { ++seq; }
    } check;
    check.seq = (*it)->update().sequence;
    check.puts = &puts;
    ASSERT_TRUE((*it)->update().batch.Iterate(&check).ok());
  }
  ASSERT_TRUE((*it)->status().ok()) << (*it)->status();
  EXPECT_EQ(puts, 120u);
  it->reset();
  // Once the WALs age out, the next GC deletes the collected segments.
  // Twice: the WAL that holds GC's rewrites (from before the move) is
  // kept from the first flush on, and ages out at the second.
  const size_t segments = gc_testing::SegmentNames(fs_.get()).size();
  for (int k = 0; k < 2; ++k) {
    impl->wal_clock_shift_for_testing += 7200;
    ASSERT_TRUE(db->Put(WriteOptions(), "x", "y").ok());
    ASSERT_TRUE(db->Flush().ok());
  }
  ASSERT_TRUE(db->RunGC().ok());
  EXPECT_LT(gc_testing::SegmentNames(fs_.get()).size(), segments);
}

TEST_F(UpdatesTest, RetentionByTimeAndAcrossReopen) {
  const Options o = TtlOptions(60);
  auto db = Open(o);
  auto* impl = static_cast<DBImpl*>(db.get());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(db->Put(WriteOptions(), Key(i), "v").ok());
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(impl->retained_wals_for_testing(), 1u);
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  // Reopened: the kept WAL is not replayed (the tables hold its writes)
  // and is still read by the feed.
  db = Open(o);
  impl = static_cast<DBImpl*>(db.get());
  EXPECT_EQ(Contents(db.get()).size(), 10u);
  for (int i = 10; i < 20; ++i) ASSERT_TRUE(db->Put(WriteOptions(), Key(i), "v").ok());
  ASSERT_TRUE(db->Flush().ok());
  auto all = db->GetUpdatesSince(1);
  ASSERT_TRUE(all.ok()) << all.status();
  uint64_t expect = 1;
  for (; (*all)->Valid(); (*all)->Next()) EXPECT_EQ((*all)->update().sequence, expect++);
  EXPECT_TRUE((*all)->status().ok());
  EXPECT_EQ(expect, 21u);
  all->reset();
  // An hour later the next flush lets them go.
  impl->wal_clock_shift_for_testing += 3600;
  ASSERT_TRUE(db->Put(WriteOptions(), Key(20), "v").ok());
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(impl->retained_wals_for_testing(), 1u);  // the one just flushed
  auto passed = db->GetUpdatesSince(1);
  ASSERT_TRUE(absl::IsOutOfRange(passed.status())) << passed.status();
  EXPECT_TRUE(absl::StrContains(passed.status().message(), "is 21")) << passed.status();
  ASSERT_TRUE(db->Close().ok());
}

// The hex bytes (before each '#') between a golden block's markers in
// docs/wal_format.md.
std::string GoldenBytes(std::string_view name) {
  std::ifstream doc(std::string(CAIRN_SOURCE_DIR) + "/docs/wal_format.md");
  std::string line, bytes;
  bool inside = false;
  while (std::getline(doc, line)) {
    if (absl::StrContains(line, absl::StrCat("golden:", std::string(name), ":begin"))) {
      inside = true;
    } else if (absl::StrContains(line, absl::StrCat("golden:", std::string(name), ":end"))) {
      break;
    } else if (inside && line.rfind("```", 0) != 0) {
      std::istringstream tokens(line.substr(0, line.find('#')));
      std::string token;
      while (tokens >> token) bytes.push_back(static_cast<char>(std::stoi(token, nullptr, 16)));
    }
  }
  return bytes;
}

TEST_F(UpdatesTest, IngestionEventMatchesTheFormatDoc) {
  const std::string golden = GoldenBytes("wal-ingestion-event");
  ASSERT_EQ(golden.size(), 26u) << "golden block not found";
  EXPECT_EQ(WriteBatchInternal::IngestionEventRecord(41, {"a.sst", "b.sst"}), golden);
}

TEST_F(UpdatesTest, IngestionEventRecordRoundTrips) {
  const std::string rec =
      WriteBatchInternal::IngestionEventRecord(41, {"/data/a.sst", "/data/b.sst"});
  // fixed64(41) fixed32(0) 0x10 varint(2) 11 "/data/a.sst" 11 "/data/b.sst"
  EXPECT_EQ(rec.size(), 12u + 1 + 1 + 12 + 12);
  EXPECT_EQ(static_cast<uint8_t>(rec[12]), 0x10);
  EXPECT_TRUE(WriteBatchInternal::IsIngestionEvent(rec));
  EXPECT_FALSE(WriteBatchInternal::IsEndRecord(rec));
  WriteBatchInternal::SyncKind kind;
  uint64_t seq = 0;
  EXPECT_FALSE(WriteBatchInternal::ParseSyncRecord(rec, &kind, &seq));
  std::vector<std::string> files;
  ASSERT_TRUE(WriteBatchInternal::ParseIngestionEvent(rec, &seq, &files).ok());
  EXPECT_EQ(seq, 41u);
  EXPECT_EQ(files, (std::vector<std::string>{"/data/a.sst", "/data/b.sst"}));
  EXPECT_TRUE(absl::IsDataLoss(
      WriteBatchInternal::ParseIngestionEvent(rec.substr(0, rec.size() - 1), &seq, &files)));
  EXPECT_TRUE(absl::IsDataLoss(WriteBatchInternal::ParseIngestionEvent(rec + "x", &seq, &files)));
  EXPECT_FALSE(WriteBatchInternal::IsIngestionEvent(WriteBatchInternal::EndRecord(41)));
}

TEST_F(UpdatesTest, IngestionHookPutsOneEventInTheFeedAndSurvivesReopen) {
  auto db = Open(FeedOptions());
  auto* impl = static_cast<DBImpl*>(db.get());
  ASSERT_TRUE(db->Put(WriteOptions(), "a", "1").ok());
  uint64_t installed_at = 0;
  auto seq = impl->LogIngestionEvent({"x.sst", "y.sst"}, [&](uint64_t s) {
    installed_at = s;
    return absl::OkStatus();
  });
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(*seq, 2u);
  EXPECT_EQ(installed_at, 2u);
  EXPECT_EQ(db->GetLatestSequenceNumber(), 2u);
  ASSERT_TRUE(db->Put(WriteOptions(), "b", "2").ok());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  db = Open(FeedOptions());  // replay takes the event's sequence
  EXPECT_EQ(db->GetLatestSequenceNumber(), 3u);
  auto it = db->GetUpdatesSince(1);
  ASSERT_TRUE(it.ok()) << it.status();
  std::vector<Update::Kind> kinds;
  for (; (*it)->Valid(); (*it)->Next()) {
    kinds.push_back((*it)->update().kind);
    if ((*it)->update().kind == Update::Kind::kIngestion) {
      EXPECT_EQ((*it)->update().sequence, 2u);
      EXPECT_EQ((*it)->update().ingested_files, (std::vector<std::string>{"x.sst", "y.sst"}));
    }
  }
  EXPECT_TRUE((*it)->status().ok()) << (*it)->status();
  EXPECT_EQ(kinds, (std::vector<Update::Kind>{Update::Kind::kWriteBatch, Update::Kind::kIngestion,
                                              Update::Kind::kWriteBatch}));
  // A failed install stops writes: the WAL holds an event the DB does not.
  impl = static_cast<DBImpl*>(db.get());
  auto failed = impl->LogIngestionEvent(
      {"z.sst"}, [](uint64_t) { return absl::InternalError("install failed"); });
  EXPECT_FALSE(failed.ok());
  EXPECT_FALSE(db->Put(WriteOptions(), "c", "3").ok());
}

// The follower test: a primary under puts, deletes, large separated
// values, GC and a reopen in the middle; a follower fed from the feed ends
// with the same contents, key by key and value by value.
void RunFollowerTest(std::shared_ptr<io::MemoryFileSystem> fs, int rounds, int ops_per_round) {
  Options o = FeedOptions();
  auto primary = OpenWithFileSystem(o, kDb, fs);
  ASSERT_TRUE(primary.ok()) << primary.status();
  Options fo;
  auto follower = OpenWithFileSystem(fo, kFollower, fs);
  ASSERT_TRUE(follower.ok()) << follower.status();
  std::mt19937 rng(7);
  uint64_t next = 1;
  size_t items = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < ops_per_round; ++i) {
      const int k = static_cast<int>(rng() % 200);
      const int op = static_cast<int>(rng() % 10);
      if (op < 2) {
        ASSERT_TRUE((*primary)->Delete(WriteOptions(), Key(k)).ok());
      } else if (op < 6) {
        ASSERT_TRUE((*primary)->Put(WriteOptions(), Key(k), gc_testing::Value(rng(), 2000)).ok());
      } else if (op < 9) {
        ASSERT_TRUE((*primary)->Put(WriteOptions(), Key(k), std::to_string(rng())).ok());
      } else {
        WriteBatch b;
        b.Put(Key(k), gc_testing::Value(rng(), 600));
        b.Delete(Key((k + 1) % 200));
        WriteOptions w;
        w.sync = rng() % 2 == 0;
        ASSERT_TRUE((*primary)->Write(w, b).ok());
      }
      if (i % 50 == 49) {
        ASSERT_TRUE(Follow(primary->get(), follower->get(), &next, &items).ok());
      }
    }
    ASSERT_TRUE((*primary)->Flush().ok());
    absl::StatusOr<GcResult> gc = (*primary)->RunGC();
    ASSERT_TRUE(gc.ok()) << gc.status();
    ASSERT_TRUE((*primary)->CompactRange(nullptr, nullptr).ok());
    if (round == rounds / 2) {
      ASSERT_TRUE((*primary)->Close().ok());
      primary->reset();
      primary = OpenWithFileSystem(o, kDb, fs);
      ASSERT_TRUE(primary.ok()) << primary.status();
    }
    absl::Status s = Follow(primary->get(), follower->get(), &next, &items);
    ASSERT_TRUE(s.ok()) << s;
  }
  EXPECT_EQ(next, (*primary)->GetLatestSequenceNumber() + 1);
  EXPECT_GT(items, 0u);
  const auto want = Contents(primary->get());
  const auto got = Contents(follower->get());
  EXPECT_GT(want.size(), 50u);
  ASSERT_EQ(want.size(), got.size());
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    ASSERT_NE(it, got.end()) << k;
    EXPECT_EQ(it->second, v) << k;
  }
}

TEST_F(UpdatesTest, FollowerEndsWithThePrimarysContents) { RunFollowerTest(fs_, 4, 300); }

TEST_F(UpdatesTest, FollowerEndsWithThePrimarysContentsLong) {
  if (std::getenv("CAIRN_LONG") == nullptr) GTEST_SKIP() << "CAIRN_LONG=1 runs it";
  RunFollowerTest(fs_, 40, 3000);
}

TEST_F(UpdatesTest, FeedWhileWritesFlushesCompactionsAndGcRun) {
  auto db = Open(FeedOptions());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::mt19937 rng(3);
    for (int i = 0; !stop.load(); ++i) {
      const std::string v = i % 3 == 0 ? gc_testing::Value(i, 1500) : "s";
      ASSERT_TRUE(db->Put(WriteOptions(), Key(static_cast<int>(rng() % 100)), v).ok());
    }
  });
  std::thread background([&] {
    while (!stop.load()) {
      ASSERT_TRUE(db->Flush().ok());
      ASSERT_TRUE(db->RunGC().ok());
      ASSERT_TRUE(db->CompactRange(nullptr, nullptr).ok());
    }
  });
  uint64_t next = 1;
  for (int pass = 0; pass < 30; ++pass) {
    auto it = db->GetUpdatesSince(next);
    ASSERT_TRUE(it.ok()) << it.status();
    for (; (*it)->Valid(); (*it)->Next()) {
      ASSERT_LE((*it)->update().sequence, next);
      next = (*it)->update().last_sequence() + 1;
    }
    ASSERT_TRUE((*it)->status().ok()) << (*it)->status();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop = true;
  writer.join();
  background.join();
  EXPECT_GT(next, 100u);
}

}  // namespace
}  // namespace cairn
