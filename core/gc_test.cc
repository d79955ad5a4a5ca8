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
#include "lsm/filename.h"

namespace cairn {
namespace {

Options GcOptions() {
  Options o;
  o.memtable_size = 128 << 10;
  o.target_file_size = 128 << 10;
  o.value_separation_threshold = 256;
  o.separate_at_flush_below = 0;  // values reach segments as they are written
  o.value_log_segment_size = 128 << 10;
  o.gc_space_amp_trigger = 0;  // tests call RunGC themselves
  return o;
}

std::string Value(uint64_t seed, size_t size) {
  std::string v(size, '\0');
  std::mt19937_64 rng(seed);
  for (auto& c : v) c = static_cast<char>('a' + rng() % 26);
  return v;
}

std::vector<std::string> SegmentNames(io::FileSystem* fs) {
  std::vector<std::string> out;
  const absl::StatusOr<std::vector<std::string>> names = fs->ListDir("/db");
  for (const auto& name : *names) {
    uint64_t num;
    lsm::FileType t;
    if (lsm::ParseFileName(name, &num, &t) && t == lsm::FileType::kValueLog) out.push_back(name);
  }
  return out;
}

uint64_t SegmentFiles(io::FileSystem* fs) { return SegmentNames(fs).size(); }

uint64_t SegmentBytes(io::FileSystem* fs) {
  uint64_t bytes = 0;
  for (const auto& name : SegmentNames(fs)) {
    // Background GC may delete a segment between the listing and the stat.
    const absl::StatusOr<uint64_t> size = fs->GetFileSize("/db/" + name);
    if (size.ok()) bytes += *size;
  }
  return bytes;
}

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

// Issue 6's space bound: a fixed live set overwritten 5 times, in a fresh
// random order each time, with background GC at its defaults. The value log
// stays within 2x the live bytes throughout (sampled), and within 1.5x once
// the writes stop and background work settles. Garbage counting keeps up
// through compactions of L0 forced for the value log (docs/gc.md).
TEST(GcSpaceTest, FiveOverwritesOfAFixedLiveSetStayWithinTheBound) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;
  o.memtable_size = 64 << 10;  // the smallest allowed: ~1,400 keys a memtable
  o.value_separation_threshold = 256;
  o.value_log_segment_size = 256 << 10;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  constexpr int kKeys = 12000;
  constexpr size_t kValueSize = 1000;
  // A record: 13-byte header, the 8-byte key, the value.
  const double live = kKeys * (kValueSize + 8 + 13);
  std::mt19937 rng(11);
  std::vector<int> order(kKeys);
  for (int i = 0; i < kKeys; ++i) order[i] = i;
  double max_amp = 0;
  for (int round = 0; round <= 5; ++round) {  // the load, then 5 overwrites
    std::shuffle(order.begin(), order.end(), rng);
    for (int j = 0; j < kKeys; ++j) {
      const std::string k = absl::StrFormat("key%05d", order[j]);
      ASSERT_TRUE(db->Put({}, k, Value(round * 100003 + order[j], kValueSize)).ok());
      // No pacing: the in-memory file system writes far faster than GC can
      // read and look up, so the delayed-write rate (gc::GcController) is
      // what keeps the bound, without ever holding up GC's own rewrites.
      if (round > 0 && j % 250 == 0) max_amp = std::max(max_amp, SegmentBytes(fs.get()) / live);
    }
  }
  ASSERT_TRUE(db->Flush().ok());
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  // Background GC finishes what the last writes left (bounded wait: up to
  // 20 s, for the sanitizer builds on a loaded 2-core runner, where 5 s
  // once ended at 1.51).
  double final_amp = SegmentBytes(fs.get()) / live;
  for (int i = 0; i < 400 && final_amp > 1.5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    final_amp = SegmentBytes(fs.get()) / live;
  }
  const Stats st = db->GetStats();
  std::printf("value-log space amplification: max %.2f, final %.2f; gc wrote %.2f per user byte; "
              "writes delayed %.2f s, longest wait %.1f ms (delay set %.1f ms), %llu stops\n",
              max_amp, final_amp, static_cast<double>(st.gc_bytes_written) / st.user_bytes_written,
              st.stall_micros / 1e6, st.stall_max_micros / 1e3, st.stall_max_delay_micros / 1e3,
              static_cast<unsigned long long>(st.stall_stops));
  // Writes are slowed, never held: no delay for value-log space past the
  // controller's 100 ms cap. The delay the engine set is checked, not the
  // wait as measured: that one also holds the waits for this test's tiny
  // memtables to flush (hundreds of stops), which a loaded sanitizer
  // runner stretched to 157 ms once.
  EXPECT_LE(st.stall_max_delay_micros, 100'000u);
  EXPECT_LE(max_amp, 2.0);
  EXPECT_LE(final_amp, 1.5);
  EXPECT_GT(st.gc_runs, 0u);
  // Every value reads back as last written.
  for (int i = 0; i < kKeys; i += 7) {
    std::string v;
    ASSERT_TRUE(db->Get({}, absl::StrFormat("key%05d", i), &v).ok());
    ASSERT_EQ(v, Value(5 * 100003 + i, kValueSize));
  }
}

// After a burst that leaves the value log between GC's stop mark and its
// trigger, a settle step brings it down to the stop mark: the figure a
// benchmark or a user sees after WaitForBackgroundWork is the low one.
TEST(GcSpaceTest, ASettleStepBringsTheValueLogDownToTheStopMark) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;
  o.memtable_size = 64 << 10;
  o.value_separation_threshold = 256;
  o.separate_at_flush_below = 0;  // values reach segments as they are written
  o.value_log_segment_size = 128 << 10;
  ASSERT_EQ(o.gc_space_amp_trigger, 1.5);  // the default, with its stop mark at 1.3
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  constexpr int kKeys = 4000;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(db->Put({}, absl::StrFormat("key%05d", i), Value(i, 1000)).ok());
  }
  // The oldest segments' keys again: about 1.35x, under the trigger, and
  // the first segments are mostly garbage.
  for (int i = 0; i < kKeys * 35 / 100; ++i) {
    ASSERT_TRUE(db->Put({}, absl::StrFormat("key%05d", i), Value(i + kKeys, 1000)).ok());
  }
  ASSERT_TRUE(db->CompactRange(nullptr, nullptr).ok());  // every old version counted
  const double before = db->GetStats().vlog_space_amplification;
  ASSERT_GT(before, 1.3);
  ASSERT_LT(before, 1.5);
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  const Stats st = db->GetStats();
  std::printf("value-log space amplification %.3f before the settle, %.3f after\n", before,
              st.vlog_space_amplification);
  EXPECT_LE(st.vlog_space_amplification, 1.3);
  EXPECT_GT(st.gc_runs, 0u);
  for (int i = 0; i < kKeys; i += 13) {
    std::string v;
    ASSERT_TRUE(db->Get({}, absl::StrFormat("key%05d", i), &v).ok());
    ASSERT_EQ(v, Value(i < kKeys * 35 / 100 ? i + kKeys : i, 1000));
  }
}

// Every key of model reads back its value from db.
void ExpectModel(DB* db, const std::map<std::string, std::string>& model) {
  for (const auto& [k, v] : model) {
    std::string got;
    ASSERT_TRUE(db->Get({}, k, &got).ok()) << k;
    ASSERT_EQ(got, v) << k;
  }
}

// Reopens the database in fs and expects it to find nothing to recount (every
// byte of every segment referenced or counted) and every key of model.
void ReopenAndExpectModel(const Options& o, const std::shared_ptr<io::MemoryFileSystem>& fs,
                          const std::map<std::string, std::string>& model) {
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ((*opened)->GetStats().gc_recounted_bytes, 0u);
  ExpectModel(opened->get(), model);
}

// Garbage never lost track of (issue 12): a close that lands while
// background GC is moving records cancels the job cleanly. Its unwritten
// copies are counted as garbage in its last edit, so the next open finds
// nothing to recount: every byte of every segment is referenced or counted.
// With two jobs at once (Options::max_background_gc), each picks while the
// other's victims are on their way to obsolete.
TEST(GcLedgerTest, CloseDuringBackgroundGcLeavesNothingUncounted) {
  for (const int jobs : {1, 2}) {
    SCOPED_TRACE(absl::StrCat(jobs, " GC jobs at once"));
    auto fs = std::make_shared<io::MemoryFileSystem>();
    Options o;
    o.max_background_gc = jobs;
    o.memtable_size = 64 << 10;
    o.value_separation_threshold = 256;
    o.value_log_segment_size = 64 << 10;
    o.gc_bytes_per_sec = 0;
    std::map<std::string, std::string> model;
    std::mt19937 rng(5);
    uint64_t gc_runs = 0;
    for (int cycle = 0; cycle < 12; ++cycle) {
      auto opened = OpenWithFileSystem(o, "/db", fs);
      ASSERT_TRUE(opened.ok()) << opened.status();
      std::unique_ptr<DB> db = std::move(*opened);
      EXPECT_EQ(db->GetStats().gc_recounted_bytes, 0u) << "cycle " << cycle;
      for (int j = 0; j < 3000; ++j) {
        const std::string k = absl::StrFormat("key%04d", rng() % 1500);
        const std::string v = Value(cycle * 100003 + j, 700);
        const absl::Status put = db->Put({}, k, v);
        ASSERT_TRUE(put.ok()) << put;
        model[k] = v;
      }
      gc_runs += db->GetStats().gc_runs;
      db.reset();  // background GC is usually mid-job here
    }
    EXPECT_GT(gc_runs, 0u);
    ReopenAndExpectModel(o, fs, model);
  }
}

// Background jobs run side by side (Options::max_background_gc), each on
// segments it has claimed. The first job to reach its pointer rewrite is
// held there, its output already sealed in the manifest with no pointer into
// it, while writes go on: another job must finish meanwhile, on victims of
// its own, and every value must read back, before and after a reopen, with
// nothing left for the open to recount.
TEST(GcConcurrencyTest, AJobFinishesWhileAnotherWaitsBeforeItsRewrite) {
  std::atomic<bool> hook_taken{false}, held{false}, release{false};
  std::atomic<uint64_t> runs_at_hold{0}, runs_while_held{0};
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;
  o.memtable_size = 64 << 10;
  o.value_separation_threshold = 256;
  o.separate_at_flush_below = 0;  // garbage is counted at each flush
  o.value_log_segment_size = 64 << 10;
  o.max_background_gc = 2;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  DB* const raw = db.get();
  static_cast<DBImpl*>(raw)->before_gc_rewrite_for_testing = [&] {
    if (hook_taken.exchange(true)) return;
    runs_at_hold = raw->GetStats().gc_runs;
    held = true;
    // Bounded: a job that never came would fail the test, not hang it.
    for (int i = 0; i < 3000 && !release.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    runs_while_held = raw->GetStats().gc_runs - runs_at_hold.load();
    held = false;
  };
  std::map<std::string, std::string> model;
  std::mt19937 rng(23);
  for (int j = 0; j < 400000 && !release.load(); ++j) {
    const std::string k = absl::StrFormat("key%04d", rng() % 1500);
    const std::string v = Value(j, 700);
    const absl::Status put = db->Put({}, k, v);
    ASSERT_TRUE(put.ok()) << put;
    model[k] = v;
    if (j % 64 == 0 && held.load() && db->GetStats().gc_runs > runs_at_hold.load()) {
      release = true;
    }
  }
  release = true;
  while (hook_taken.load() && held.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(hook_taken.load()) << "no background job reached its rewrite";
  EXPECT_GT(runs_while_held.load(), 0u) << "no job finished while the first one waited";
  ASSERT_TRUE(db->Flush().ok());
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  ExpectModel(db.get(), model);
  db.reset();
  ReopenAndExpectModel(o, fs, model);
}

// Garbage known in time (issue 12): a small set of keys overwritten again
// and again fills the memtable with garbage long before its own bytes fill
// it. The memtable is flushed by the garbage it hides, so GC can count and
// collect it: the value log stays bounded, and within 1.5x the live bytes
// plus one segment (the active one, which GC never takes) once settled.
TEST(GcLedgerTest, SmallKeySetOverwrittenBeforeAnyFlushStaysBounded) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;  // the defaults: a 64 MiB memtable, which pointers never fill
  o.value_log_segment_size = 1 << 20;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  constexpr int kKeys = 150;
  constexpr size_t kValueSize = 16 << 10;
  const double live = kKeys * (kValueSize + 8 + 13);
  double max_bytes = 0;
  for (int j = 0; j < 2000; ++j) {
    ASSERT_TRUE(db->Put({}, absl::StrFormat("key%04d", j % kKeys), Value(j, kValueSize)).ok());
    if (j % 50 == 0) max_bytes = std::max(max_bytes, static_cast<double>(SegmentBytes(fs.get())));
  }
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  const double final_bytes = static_cast<double>(SegmentBytes(fs.get()));
  std::printf("small key set: value log max %.2f, final %.2f of live (+1 segment = %.2f)\n",
              max_bytes / live, final_bytes / live, (1 << 20) / live);
  if (final_bytes > 1.5 * live + (1 << 20)) {  // what GC saw, for the failure below
    std::string stats;
    db->GetProperty("cairn.stats", &stats);
    std::printf("%s\n", stats.c_str());
  }
  // Before memtables were flushed by the garbage they hide, this workload
  // grew the value log to 20x live. Segments of 1 MiB over 2.4 MB live
  // leave GC a coarse unit, so the peak is measured at 2.5-3.6x live; once
  // settled it is back within the 1.5x target.
  EXPECT_LE(max_bytes, 5.0 * live + (1 << 20));
  EXPECT_LE(final_bytes, 1.5 * live + (1 << 20));
  for (int i = 0; i < kKeys; ++i) {
    std::string v;
    ASSERT_TRUE(db->Get({}, absl::StrFormat("key%04d", i), &v).ok());
    ASSERT_EQ(v, Value(1999 - ((1999 - i) % kKeys), kValueSize)) << i;
  }
}

// Segment files (issue 12): a short session continues the segment the last
// one left unsealed, so 300 sessions do not leave 300 segment files.
// Both placements: values separated as written continue the last session's
// segment; values left for the flush (the default) are few enough per
// session that the flush at open keeps them in its table.
class ShortSessionsTest : public ::testing::TestWithParam<size_t> {};

TEST_P(ShortSessionsTest, ShortSessionsLeaveNoSegmentPerSession) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o = GcOptions();
  o.value_log_segment_size = 1 << 20;
  o.separate_at_flush_below = GetParam();
  for (int session = 0; session < 300; ++session) {
    auto opened = OpenWithFileSystem(o, "/db", fs);
    ASSERT_TRUE(opened.ok()) << opened.status();
    ASSERT_TRUE((*opened)->Put({}, absl::StrFormat("key%04d", session), Value(session, 1000)).ok());
  }
  // 300 records of about 1 KiB fit in one 1 MiB segment.
  EXPECT_LE(SegmentFiles(fs.get()), 1u);
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ((*opened)->GetStats().gc_recounted_bytes, 0u);
  for (int session = 0; session < 300; ++session) {
    std::string v;
    ASSERT_TRUE((*opened)->Get({}, absl::StrFormat("key%04d", session), &v).ok());
    ASSERT_EQ(v, Value(session, 1000));
  }
}

INSTANTIATE_TEST_SUITE_P(Placement, ShortSessionsTest,
                         ::testing::Values(size_t{0}, Options().separate_at_flush_below));

}  // namespace
}  // namespace cairn
