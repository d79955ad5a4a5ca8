// Value-log garbage collection through the DB: space comes back, reads stay
// exact, snapshots and iterators keep collected segments alive, concurrent
// writes and deletes always win over relocation, and a reopen finds no
// orphan or dangling segment.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "core/testing/gc_helpers.h"
#include "lsm/filename.h"

namespace cairn {
namespace {

using gc_testing::GcOptions;
using gc_testing::Value;
using gc_testing::SegmentNames;
using gc_testing::SegmentFiles;
using gc_testing::SegmentBytes;

class GcTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void Open() {
    db_.reset();
    auto db = OpenWithFileSystem(GcOptions(), "/db", fs_);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
  }
  void Overwrite(int keys, int rounds, uint64_t salt) {
    for (int r = 0; r < rounds; ++r) {
      for (int i = 0; i < keys; ++i) {
        const std::string k = absl::StrFormat("key%05d", i);
        const std::string v = Value(salt * 1000003 + r * 7919 + i, 1000);
        ASSERT_TRUE(db_->Put({}, k, v).ok());
        model_[k] = v;
      }
    }
  }
  void CheckAll(const Snapshot* snap = nullptr, const std::map<std::string, std::string>* m = nullptr) {
    if (m == nullptr) m = &model_;
    ReadOptions ro;
    ro.snapshot = snap;
    auto it = db_->NewIterator(ro);
    auto mit = m->begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++mit) {
      ASSERT_NE(mit, m->end());
      ASSERT_EQ(it->key(), mit->first);
      ASSERT_EQ(it->value(), mit->second);
    }
    ASSERT_TRUE(it->status().ok()) << it->status();
    ASSERT_EQ(mit, m->end());
  }

  std::shared_ptr<io::MemoryFileSystem> fs_ = std::make_shared<io::MemoryFileSystem>();
  std::unique_ptr<DB> db_;
  std::map<std::string, std::string> model_;
};

TEST_F(GcTest, OverwritesThenRunGcReclaimsTheSpace) {
  constexpr int kKeys = 500;  // ~0.5 MB live
  Overwrite(kKeys, 5, 1);
  ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
  const uint64_t before = SegmentBytes(fs_.get());
  auto r = db_->RunGC();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->victims, 0u);
  EXPECT_GT(r->segments_freed, 0u);
  EXPECT_GT(r->records_dropped, 0u);
  const uint64_t after = SegmentBytes(fs_.get());
  EXPECT_LT(after, before);
  const uint64_t live = kKeys * (1000 + 8 + 13);
  EXPECT_LE(static_cast<double>(after), 1.5 * live) << "after " << after << " live " << live;
  CheckAll();
  const Stats st = db_->GetStats();
  EXPECT_GT(st.gc_bytes_written, 0u);  // counted in write amplification
  EXPECT_EQ(st.gc_runs, r->victims);
  Open();
  CheckAll();
}

TEST_F(GcTest, RecordsDroppedByCompactionNeedNoLivenessCheck) {
  constexpr int kKeys = 500;
  Overwrite(kKeys, 4, 11);
  // Every older version's pointer is dropped here, which lists its record
  // as dead for GC (vlog::DeadRecords).
  ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
  auto r = db_->RunGC();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GT(r->records_dropped, 0u);
  Stats st = db_->GetStats();
  EXPECT_EQ(st.gc_records_known_dead, st.gc_records_dropped);
  std::string report;
  ASSERT_TRUE(db_->GetProperty("cairn.stats", &report));
  EXPECT_NE(report.find(absl::StrCat("(", st.gc_records_known_dead, " known dead without a lookup)")),
            std::string::npos)
      << report;
  CheckAll();
  // The list is in memory only: after a reopen GC checks every record, and
  // reads stay exact either way.
  Open();
  CheckAll();
  Overwrite(kKeys, 2, 12);
  ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
  r = db_->RunGC();
  ASSERT_TRUE(r.ok()) << r.status();
  st = db_->GetStats();
  EXPECT_LE(st.gc_records_known_dead, st.gc_records_dropped);
  CheckAll();
  Open();
  CheckAll();
}

TEST_F(GcTest, DeadRecordsAreListedOnlyForSegmentsStillToBeCollected) {
  // A key GC relocated leaves its old pointer in a table, naming the victim;
  // the compaction that drops it later must not list a record of a segment
  // that is gone, or the list would grow for as long as the DB runs.
  constexpr int kKeys = 400;
  Overwrite(kKeys, 2, 21);
  for (int round = 0; round < 6; ++round) {
    // Half the keys overwritten: the victims keep live records to move.
    for (int i = round % 2; i < kKeys; i += 2) {
      const std::string k = absl::StrFormat("key%05d", i);
      const std::string v = Value(round * 7717 + i, 1000);
      ASSERT_TRUE(db_->Put({}, k, v).ok());
      model_[k] = v;
    }
    ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
    auto r = db_->RunGC();
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());  // drops the relocated keys' old pointers
    uint64_t garbage_records = 0;
    auto* impl = static_cast<DBImpl*>(db_.get());
    for (const vlog::SegmentInfo& s : impl->ValueLogSegmentsForTesting()) {
      if (!s.obsolete) garbage_records += s.garbage_records;
    }
    EXPECT_LE(impl->dead_records_listed_for_testing(), garbage_records) << "round " << round;
  }
  CheckAll();
  Open();
  CheckAll();
}

TEST_F(GcTest, SnapshotKeepsCollectedSegmentsReadableUntilReleased) {
  Overwrite(300, 1, 2);
  const auto old_model = model_;
  const Snapshot* snap = db_->GetSnapshot();
  Overwrite(300, 3, 3);
  ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
  auto r = db_->RunGC();
  ASSERT_TRUE(r.ok()) << r.status();
  // The snapshot still reads the old values from the segments GC collected.
  CheckAll(snap, &old_model);
  CheckAll();
  const uint64_t files_held = SegmentFiles(fs_.get());
  db_->ReleaseSnapshot(snap);
  auto r2 = db_->RunGC();
  ASSERT_TRUE(r2.ok());
  EXPECT_LT(SegmentFiles(fs_.get()), files_held);
  CheckAll();
}

TEST_F(GcTest, ConcurrentWritesAndDeletesWinOverRelocation) {
  constexpr int kKeys = 400;
  Overwrite(kKeys, 3, 4);
  ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
  std::atomic<bool> stop{false};
  std::mutex model_mu;
  std::thread writer([&] {
    std::mt19937 rng(5);
    int n = 0;
    while (!stop.load() || n < 300) {
      const std::string k = absl::StrFormat("key%05d", rng() % kKeys);
      if (rng() % 3 == 0) {
        ASSERT_TRUE(db_->Delete({}, k).ok());
        std::lock_guard<std::mutex> l(model_mu);
        model_.erase(k);
      } else {
        const std::string v = Value(rng(), 1000);
        ASSERT_TRUE(db_->Put({}, k, v).ok());
        std::lock_guard<std::mutex> l(model_mu);
        model_[k] = v;
      }
      ++n;
    }
  });
  for (int i = 0; i < 5; ++i) {
    auto r = db_->RunGC();
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
  }
  stop = true;
  writer.join();
  CheckAll();
  Open();
  CheckAll();
}

// Writes that land between GC's liveness check and its pointer rewrite win:
// found in the memtables alone while they hold every write since the check,
// and by a second check when a flush moved them into a table.
TEST_F(GcTest, WritesBetweenTheLivenessCheckAndTheRewriteWin) {
  constexpr int kKeys = 300;
  for (const bool flush_between : {false, true}) {
    SCOPED_TRACE(flush_between ? "flushed in between" : "in the memtables");
    // Every key, then every other one again: the first pass's segments
    // are half live, so the victims have records to move.
    Overwrite(kKeys, 1, flush_between ? 11 : 12);
    for (int i = 0; i < kKeys; i += 2) {
      const std::string k = absl::StrFormat("key%05d", i);
      const std::string v = Value(70000 + i + (flush_between ? 1000 : 0), 1000);
      ASSERT_TRUE(db_->Put({}, k, v).ok());
      model_[k] = v;
    }
    ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
    auto* impl = static_cast<DBImpl*>(db_.get());
    const uint64_t rechecks_before = db_->GetStats().gc_rewrite_rechecks;
    int calls = 0;
    impl->before_gc_rewrite_for_testing = [&] {
      if (calls++ > 0) return;
      // Every key once: a third deleted, the rest overwritten.
      for (int i = 0; i < kKeys; ++i) {
        const std::string k = absl::StrFormat("key%05d", i);
        if (i % 3 == 0) {
          ASSERT_TRUE(db_->Delete({}, k).ok());
          model_.erase(k);
        } else {
          const std::string v = Value(90000 + i + (flush_between ? 1000 : 0), 1000);
          ASSERT_TRUE(db_->Put({}, k, v).ok());
          model_[k] = v;
        }
      }
      if (flush_between) {
        ASSERT_TRUE(db_->Flush().ok());
      }
    };
    auto r = db_->RunGC();
    impl->before_gc_rewrite_for_testing = nullptr;
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_GT(calls, 0);
    const uint64_t rechecks = db_->GetStats().gc_rewrite_rechecks - rechecks_before;
    if (flush_between) {
      EXPECT_GT(rechecks, 0u);
    } else {
      EXPECT_EQ(rechecks, 0u);
    }
    CheckAll();
    ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
    ASSERT_TRUE(db_->RunGC().ok());
    CheckAll();
    Open();
    CheckAll();
  }
}

TEST_F(GcTest, IteratorOpenedBeforeGcReadsThroughIt) {
  Overwrite(200, 3, 6);
  ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
  auto it = db_->NewIterator({});
  auto r = db_->RunGC();
  ASSERT_TRUE(r.ok());
  auto m = model_.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    ASSERT_EQ(it->value(), m->second);
  }
  ASSERT_TRUE(it->status().ok()) << it->status();
}

TEST_F(GcTest, ScansAndGetsDuringCollectionsSeeEveryValue) {
  constexpr int kKeys = 300;
  Overwrite(kKeys, 2, 7);
  std::atomic<bool> stop{false};
  std::atomic<int> scans{0};
  std::thread reader([&] {
    while (!stop.load()) {
      auto it = db_->NewIterator({});
      int n = 0;
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        ASSERT_EQ(it->value().size(), 1000u) << it->status();
        ++n;
      }
      ASSERT_TRUE(it->status().ok()) << it->status();
      ASSERT_EQ(n, kKeys);
      std::string v;
      ASSERT_TRUE(db_->Get({}, "key00007", &v).ok());
      ++scans;
    }
  });
  for (int round = 0; round < 8; ++round) {
    Overwrite(kKeys, 1, 100 + round);
    ASSERT_TRUE(db_->Flush().ok());
    ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
    auto r = db_->RunGC();
    ASSERT_TRUE(r.ok()) << r.status();
  }
  stop = true;
  reader.join();
  EXPECT_GT(scans.load(), 0);
  CheckAll();
}

// Runs a collection whose fail_at-th file operation, and every one after,
// fails (none when fail_at is 0: then *ops_in_gc gets how many it made),
// then stops the file system, as a crash at that point does.
void RunGcFailingAt(DB* db, io::FaultFileSystem* fs, int fail_at, uint64_t* ops_in_gc) {
  const uint64_t before = fs->ops_seen();
  if (fail_at > 0) {
    fs->FailAfter(fail_at - 1, io::InjectedIoError("gc crash test"), io::FaultKind::kAny,
                  /*persistent=*/true);
  }
  auto r = db->RunGC();
  if (fail_at == 0) {
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_GT(r->victims, 0u);
    *ops_in_gc = fs->ops_seen() - before;
  }
  fs->SetFilesystemActive(false);
}

// Issue 12, item 6: each explicit Flush of values left for the flush
// (under separate_at_flush_below) writes a small segment of its own, which
// no garbage ever makes a victim. GC merges them once there are
// gc::kMinSmallSegmentsToMerge, and never fewer (docs/gc.md, "Merging small
// segments").
TEST(GcMergeTest, SessionsThatEachFlushAFewValuesLeaveAFewSegments) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  const Options o = gc_testing::SmallSegmentOptions();
  std::map<std::string, std::string> model;
  const auto session = [&](int s, bool run_gc) -> std::optional<GcResult> {
    auto opened = OpenWithFileSystem(o, "/db", fs);
    EXPECT_TRUE(opened.ok()) << opened.status();
    if (!opened.ok()) return std::nullopt;
    DB* db = opened->get();
    gc_testing::PutTenAndFlush(db, s, &model);
    if (!run_gc) return std::nullopt;
    absl::StatusOr<GcResult> r = db->RunGC();
    EXPECT_TRUE(r.ok()) << r.status();
    gc_testing::ExpectModel(db, model);
    return r.ok() ? std::optional<GcResult>(*r) : std::nullopt;
  };
  // Seven small segments are left as they are.
  for (int s = 0; s < 6; ++s) session(s, false);
  std::optional<GcResult> r = session(6, true);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->victims, 0u);
  EXPECT_EQ(SegmentFiles(fs.get()), 7u);
  // From the eighth on they are merged into one.
  for (int s = 7; s < 19; ++s) session(s, false);
  EXPECT_EQ(SegmentFiles(fs.get()), 19u);
  r = session(19, true);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->victims, 20u);
  EXPECT_EQ(r->segments_freed, 20u);
  EXPECT_EQ(r->records_relocated, 200u);
  EXPECT_EQ(r->records_dropped, 0u);
  EXPECT_GE(r->bytes_relocated, 200u * 1000);
  EXPECT_LE(SegmentFiles(fs.get()), 2u);
  gc_testing::ReopenAndExpectModel(o, fs, model);

  // The merged output is small too: it joins the next merge, and the count
  // stays at a few files however many sessions come.
  for (int s = 20; s < 60; ++s) session(s, s % 10 == 9);
  EXPECT_LE(SegmentFiles(fs.get()), 3u);
  gc_testing::ReopenAndExpectModel(o, fs, model);
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  const Stats st = (*opened)->GetStats();
  EXPECT_LE(st.vlog_segments, 3u);
}

// A crash at every step of a collection (the k-th file operation fails for
// good, then the machine loses what was not durable) leaves a database that
// opens with every synced write, reads every value exactly (no dangling
// pointer), and keeps no segment file the manifest does not know.
TEST(GcCrashTest, CrashAtEveryStepOfACollection) {
  auto run_case = [](int fail_at, uint64_t* ops_in_gc) {
    auto base = std::make_shared<io::MemoryFileSystem>();
    io::FaultFileSystemOptions fo;
    fo.drop_unsynced_dir_entries = true;
    auto fs = std::make_shared<io::FaultFileSystem>(base, fo);
    std::map<std::string, std::string> model;
    {
      auto db = OpenWithFileSystem(GcOptions(), "/db", fs);
      ASSERT_TRUE(db.ok()) << db.status();
      WriteOptions sync;
      sync.sync = true;
      for (int r = 0; r < 3; ++r) {
        for (int i = 0; i < 150; ++i) {
          const std::string k = absl::StrFormat("key%05d", i);
          const std::string v = Value(r * 1000 + i, 1000);
          ASSERT_TRUE((*db)->Put(sync, k, v).ok());
          model[k] = v;
        }
      }
      for (int i = 0; i < 150; i += 4) {
        const std::string k = absl::StrFormat("key%05d", i);
        ASSERT_TRUE((*db)->Delete(sync, k).ok());
        model.erase(k);
      }
      ASSERT_TRUE((*db)->CompactRange(nullptr, nullptr).ok());
      RunGcFailingAt(db->get(), fs.get(), fail_at, ops_in_gc);
    }
    fs->ClearFaults();
    ASSERT_TRUE(fs->SimulateCrash(io::CrashMode::kDropUnsynced, fail_at).ok());
    auto db = OpenWithFileSystem(GcOptions(), "/db", fs);
    ASSERT_TRUE(db.ok()) << "fail_at " << fail_at << ": " << db.status();
    auto it = (*db)->NewIterator({});
    auto m = model.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
      ASSERT_NE(m, model.end()) << "fail_at " << fail_at;
      ASSERT_EQ(it->key(), m->first) << "fail_at " << fail_at;
      ASSERT_EQ(it->value(), m->second) << "fail_at " << fail_at;
    }
    ASSERT_TRUE(it->status().ok()) << "fail_at " << fail_at << ": " << it->status();
    ASSERT_EQ(m, model.end()) << "fail_at " << fail_at;
    it.reset();
    // GC can finish the job now, and the scan reads every value.
    auto r = (*db)->RunGC();
    ASSERT_TRUE(r.ok()) << "fail_at " << fail_at << ": " << r.status();
    std::string live;
    ASSERT_TRUE((*db)->GetProperty("cairn.live-bytes", &live));
  };
  uint64_t ops = 0;
  run_case(0, &ops);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  ASSERT_GT(ops, 5u);
  const uint64_t step = std::getenv("CAIRN_LONG") != nullptr ? 1 : std::max<uint64_t>(1, ops / 40);
  int cases = 0;
  for (uint64_t k = 1; k <= ops + 1; k += step, ++cases) {
    run_case(static_cast<int>(k), nullptr);
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "fail_at " << k;
  }
  std::printf("gc crash points: %d of %llu file operations in one collection\n", cases,
              static_cast<unsigned long long>(ops));
}

// The writes that made a victim's records dead need not be synced when GC
// checks them. Until they are, the manifest must not mark the victim
// obsolete: a crash would take those writes, the table's old pointers would
// be the newest again, and the next open would delete the segment they name.
// Here the last round of overwrites (and some deletes) is not synced, and
// the collection fails, then crashes, at each of its file operations in
// turn. The recovered state must be a prefix of the writes that holds every
// synced one, with every value readable.
TEST(GcCrashTest, VictimsKilledByUnsyncedWritesSurviveACrashAtEveryStep) {
  using Model = std::map<std::string, std::string>;
  struct Op {
    std::string key;
    std::optional<std::string> value;
  };
  auto run_case = [](int fail_at, uint64_t* ops_in_gc) {
    auto base = std::make_shared<io::MemoryFileSystem>();
    io::FaultFileSystemOptions fo;
    fo.drop_unsynced_dir_entries = true;
    auto fs = std::make_shared<io::FaultFileSystem>(base, fo);
    Model synced;
    std::vector<Op> unsynced;
    {
      auto db = OpenWithFileSystem(GcOptions(), "/db", fs);
      ASSERT_TRUE(db.ok()) << db.status();
      WriteOptions sync;
      sync.sync = true;
      // The first round's segments become mostly garbage, counted by the
      // compaction; the tables hold the only pointers into them.
      for (int r = 0; r < 2; ++r) {
        for (int i = 0; i < (r == 0 ? 150 : 120); ++i) {
          const std::string k = absl::StrFormat("key%05d", i);
          const std::string v = Value(r * 1000 + i, 1000);
          ASSERT_TRUE((*db)->Put(sync, k, v).ok());
          synced[k] = v;
        }
      }
      ASSERT_TRUE((*db)->CompactRange(nullptr, nullptr).ok());
      // The rest of them die to writes that are not synced.
      for (int i = 120; i < 150; ++i) {
        const std::string k = absl::StrFormat("key%05d", i);
        Op op{k, std::nullopt};
        if (i % 5 != 0) op.value = Value(9000 + i, 1000);
        const absl::Status s =
            op.value.has_value() ? (*db)->Put({}, k, *op.value) : (*db)->Delete({}, k);
        ASSERT_TRUE(s.ok()) << s;
        unsynced.push_back(std::move(op));
      }
      RunGcFailingAt(db->get(), fs.get(), fail_at, ops_in_gc);
    }
    fs->ClearFaults();
    ASSERT_TRUE(fs->SimulateCrash(io::CrashMode::kDropUnsynced, fail_at).ok());
    auto db = OpenWithFileSystem(GcOptions(), "/db", fs);
    ASSERT_TRUE(db.ok()) << "fail_at " << fail_at << ": " << db.status();
    Model recovered;
    {
      auto it = (*db)->NewIterator({});
      for (it->SeekToFirst(); it->Valid(); it->Next()) recovered[std::string(it->key())] = it->value();
      ASSERT_TRUE(it->status().ok()) << "fail_at " << fail_at << ": " << it->status();
    }
    for (const auto& [k, v] : recovered) {
      std::string got;
      const absl::Status s = (*db)->Get({}, k, &got);
      ASSERT_TRUE(s.ok()) << "fail_at " << fail_at << ": " << k << ": " << s;
      ASSERT_EQ(got, v) << "fail_at " << fail_at << ": " << k;
    }
    Model m = synced;
    bool prefix = m == recovered;
    for (size_t i = 0; i < unsynced.size() && !prefix; ++i) {
      if (unsynced[i].value.has_value()) {
        m[unsynced[i].key] = *unsynced[i].value;
      } else {
        m.erase(unsynced[i].key);
      }
      prefix = m == recovered;
    }
    ASSERT_TRUE(prefix) << "fail_at " << fail_at << ": " << recovered.size()
                        << " keys recovered, no prefix of the writes";
    auto r = (*db)->RunGC();
    ASSERT_TRUE(r.ok()) << "fail_at " << fail_at << ": " << r.status();
  };
  uint64_t ops = 0;
  run_case(0, &ops);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  ASSERT_GT(ops, 5u);
  int cases = 0;
  for (uint64_t k = 1; k <= ops + 1; ++k, ++cases) {
    run_case(static_cast<int>(k), nullptr);
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "fail_at " << k;
  }
  std::printf("gc crash points: %d of %llu file operations in one collection\n", cases,
              static_cast<unsigned long long>(ops));
}

// Writes a segment that spans a flush, as happens under steady writes: its
// first records are counted as garbage by the flush, its last ones are
// still named only by the live WAL. Returns the model of what was written.
// The segment is 000NNN.vlog of the first segment name.
std::map<std::string, std::string> WriteASegmentAcrossAFlush(DB* db, io::FileSystem* fs,
                                                             std::string* victim) {
  std::map<std::string, std::string> model;
  auto put = [&](const std::string& k, const std::string& v, bool sync) {
    WriteOptions wo;
    wo.sync = sync;
    EXPECT_TRUE(db->Put(wo, k, v).ok());
    model[k] = v;
  };
  // 120 records of about 1 KB: the 128 KiB segment is not full yet.
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 60; ++i) put(absl::StrFormat("key%05d", i), Value(r * 1000 + i, 1000), false);
  }
  *victim = SegmentNames(fs).front();
  // The flush drops round 1's pointers: half the segment is counted garbage.
  EXPECT_TRUE(db->Flush().ok());
  // Synced writes seal the segment; the last of its records are named by
  // the live WAL only.
  for (int i = 0; i < 20; ++i) put(absl::StrFormat("new%05d", i), Value(5000 + i, 1000), true);
  return model;
}

// A victim no longer waits for a flush of the WAL that may name it: once the
// writes that made its records dead, or moved them, are synced (the
// rewrite's own sync), it is deleted. Recovery then replays the WAL's old
// pointers into it without reading them, because a later replayed write
// supersedes each (docs/durability.md). A power loss right after the
// collection loses nothing, and nothing was flushed to free the victim.
TEST(GcCrashTest, VictimsGoBeforeTheirWalIsFlushedAndSurviveAPowerLoss) {
  for (const io::CrashMode mode : {io::CrashMode::kDropUnsynced, io::CrashMode::kPowerLoss}) {
    SCOPED_TRACE(static_cast<int>(mode));
    auto base = std::make_shared<io::MemoryFileSystem>();
    io::FaultFileSystemOptions fo;
    fo.drop_unsynced_dir_entries = true;
    auto fs = std::make_shared<io::FaultFileSystem>(base, fo);
    Options o = GcOptions();
    o.memtable_size = 8 << 20;  // nothing is flushed by size
    o.gc_min_garbage_ratio = 0.25;
    std::map<std::string, std::string> model;
    {
      auto db = OpenWithFileSystem(o, "/db", fs);
      ASSERT_TRUE(db.ok()) << db.status();
      std::string victim;
      model = WriteASegmentAcrossAFlush(db->get(), fs.get(), &victim);
      auto r = (*db)->RunGC();
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->victims, 1u);
      EXPECT_EQ(r->segments_freed, 1u);
      const std::vector<std::string> now = SegmentNames(fs.get());
      EXPECT_EQ(std::find(now.begin(), now.end(), victim), now.end()) << victim << " is still there";
      std::string l0;
      ASSERT_TRUE((*db)->GetProperty("cairn.num-files-at-level0", &l0));
      EXPECT_EQ(l0, "1") << "the collection flushed the memtable";
      fs->SetFilesystemActive(false);
    }
    ASSERT_TRUE(fs->SimulateCrash(mode, /*seed=*/7).ok());
    auto db = OpenWithFileSystem(o, "/db", fs);
    ASSERT_TRUE(db.ok()) << db.status();
    for (const auto& [k, v] : model) {
      std::string got;
      ASSERT_TRUE((*db)->Get({}, k, &got).ok()) << k;
      ASSERT_EQ(got, v) << k;
    }
  }
}

// The other side of that rule: when the writes that moved a collected
// segment's records are missing from the WAL (here cut away), an old
// pointer into it is the newest write to its key again. Recovery refuses
// and names the WAL, instead of opening with keys whose values are gone.
TEST(GcCrashTest, AnOldPointerIntoACollectedSegmentLeftNewestRefusesTheOpen) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o = GcOptions();
  o.memtable_size = 8 << 20;
  o.gc_min_garbage_ratio = 0.25;
  std::string wal;
  uint64_t before_gc = 0;
  {
    auto db = OpenWithFileSystem(o, "/db", fs);
    ASSERT_TRUE(db.ok()) << db.status();
    std::string victim;
    WriteASegmentAcrossAFlush(db->get(), fs.get(), &victim);
    const absl::StatusOr<std::vector<std::string>> names = fs->ListDir("/db");
    ASSERT_TRUE(names.ok());
    uint64_t newest = 0;
    for (const std::string& name : *names) {
      uint64_t number;
      lsm::FileType type;
      if (lsm::ParseFileName(name, &number, &type) && type == lsm::FileType::kLog) {
        newest = std::max(newest, number);
      }
    }
    wal = lsm::LogFileName("/db", newest);
    const absl::StatusOr<std::string> contents = fs->ReadFileToString(wal);
    ASSERT_TRUE(contents.ok()) << contents.status();
    before_gc = contents->size();
    auto r = (*db)->RunGC();
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->segments_freed, 1u);
  }
  // The rewrite cut from the WAL.
  absl::StatusOr<std::string> contents = fs->ReadFileToString(wal);
  ASSERT_TRUE(contents.ok()) << contents.status();
  ASSERT_GT(contents->size(), before_gc);
  ASSERT_TRUE(fs->WriteFileFromString(wal, contents->substr(0, before_gc)).ok());
  auto db = OpenWithFileSystem(o, "/db", fs);
  ASSERT_FALSE(db.ok());
  EXPECT_TRUE(absl::IsDataLoss(db.status())) << db.status();
  EXPECT_NE(db.status().message().find(wal), std::string::npos) << db.status();
}

}  // namespace
}  // namespace cairn
