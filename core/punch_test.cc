// Punched runs through the DB (docs/gc.md, "Punched runs"): once a flush or
// compaction has counted a run of adjacent records as garbage and no reader
// from before remains, the run's whole blocks leave the file; every value
// still reads back, the manifest lists the runs across a reopen, GC and
// `cairn check`'s scan step over them, and nothing a reader, a snapshot or
// a checkpoint can still reach is ever punched.
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "core/testing/gc_helpers.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "lsm/filename.h"
#include "vlog/segment_scanner.h"

namespace cairn {
namespace {

using gc_testing::GcOptions;
using gc_testing::SegmentNames;
using gc_testing::Value;

// 4 KiB values, as the workload: each record spans two blocks, so
// only runs of adjacent dead records free whole ones.
constexpr size_t kValueSize = 4096;
constexpr int kKeys = 96;  // three 128 KiB segments' worth per pass

class PunchTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  Options DbOptions() const {
    Options o = GcOptions();
    o.value_separation_threshold = 1024;
    return o;
  }
  void Open() {
    db_.reset();
    auto db = OpenWithFileSystem(DbOptions(), "/db", fs_);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
  }
  DBImpl* impl() { return static_cast<DBImpl*>(db_.get()); }
  // One pass over every key, in key order, then a flush: the pass's values
  // lie in key order, so the next pass leaves runs of adjacent dead records.
  void Pass(uint64_t salt, std::map<std::string, std::string>* model) {
    for (int i = 0; i < kKeys; ++i) {
      const std::string k = absl::StrFormat("key%05d", i);
      const std::string v = Value(salt * 1000003 + i, kValueSize);
      ASSERT_TRUE(db_->Put({}, k, v).ok());
      (*model)[k] = v;
    }
    ASSERT_TRUE(db_->Flush().ok());
  }
  // Passes, then a compaction that drops every older version (counting
  // them as garbage), then the background work that punches what it can.
  void OverwriteAndSettle(int passes, uint64_t salt) {
    for (int p = 0; p < passes; ++p) Pass(salt * 100 + p, &model_);
    ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
    ASSERT_TRUE(db_->WaitForBackgroundWork().ok());
  }
  void ExpectModel(const std::map<std::string, std::string>& model,
                   const Snapshot* snapshot = nullptr) {
    ReadOptions ro;
    ro.snapshot = snapshot;
    for (const auto& [k, v] : model) {
      std::string got;
      ASSERT_TRUE(db_->Get(ro, k, &got).ok()) << k;
      ASSERT_EQ(got, v) << k;
    }
  }
  uint64_t AllocatedSegmentBytes() {
    uint64_t bytes = 0;
    for (const std::string& name : SegmentNames(fs_.get())) {
      absl::StatusOr<io::FileSystem::FileSpace> space = fs_->GetFileSpace("/db/" + name);
      if (space.ok()) bytes += space->allocated_bytes;
    }
    return bytes;
  }

  std::shared_ptr<io::MemoryFileSystem> fs_ = std::make_shared<io::MemoryFileSystem>();
  std::unique_ptr<DB> db_;
  std::map<std::string, std::string> model_;
};

TEST_F(PunchTest, DeadRunsLeaveTheFileAndEveryValueStillReads) {
  OverwriteAndSettle(2, 1);
  const Stats st = db_->GetStats();
  EXPECT_GT(st.gc_punched_runs, 0u);
  EXPECT_GT(st.gc_punched_bytes, 0u);
  EXPECT_GT(st.vlog_punched_bytes, 0u);
  EXPECT_LE(st.vlog_punched_bytes, st.vlog_garbage_bytes);
  // The files hold their size, but not the punched blocks.
  uint64_t logical = 0;
  for (const std::string& name : SegmentNames(fs_.get())) logical += *fs_->GetFileSize("/db/" + name);
  EXPECT_EQ(AllocatedSegmentBytes() + st.gc_punched_bytes, logical);
  ExpectModel(model_);
  std::string report;
  ASSERT_TRUE(db_->GetProperty("cairn.stats", &report));
  EXPECT_NE(report.find("gc punched runs:"), std::string::npos) << report;
}

TEST_F(PunchTest, TheManifestKeepsTheRunsAndScansStepOverThem) {
  OverwriteAndSettle(2, 2);
  const vlog::SegmentSet& set = impl()->value_log_for_testing()->segment_set();
  std::map<uint64_t, std::vector<vlog::PunchRun>> runs;
  for (const vlog::SegmentInfo& info : set.Segments()) {
    std::vector<vlog::PunchRun> r = set.PunchedRuns(info.segment_id);
    if (!r.empty()) runs[info.segment_id] = std::move(r);
  }
  ASSERT_FALSE(runs.empty());
  Open();
  const vlog::SegmentSet& reopened = impl()->value_log_for_testing()->segment_set();
  for (const auto& [id, r] : runs) EXPECT_EQ(reopened.PunchedRuns(id), r) << "segment " << id;
  ExpectModel(model_);
  // A scan that knows the runs reads every other record; one that does
  // not trips over the zeros.
  for (const auto& [id, r] : runs) {
    const std::string path = lsm::ValueLogFileName("/db", id);
    vlog::SegmentScannerOptions so;
    so.allow_torn_tail = false;
    so.skip_runs = r;
    auto scanner = vlog::SegmentScanner::Open(fs_.get(), path, id, so);
    ASSERT_TRUE(scanner.ok()) << scanner.status();
    vlog::ScannedRecord rec;
    while ((*scanner)->Next(&rec)) {
    }
    EXPECT_TRUE((*scanner)->status().ok()) << (*scanner)->status();
    EXPECT_GT((*scanner)->skipped_bytes(), 0u);
    so.skip_runs.clear();
    auto blind = vlog::SegmentScanner::Open(fs_.get(), path, id, so);
    ASSERT_TRUE(blind.ok());
    while ((*blind)->Next(&rec)) {
    }
    EXPECT_TRUE(absl::IsDataLoss((*blind)->status())) << (*blind)->status();
  }
  // GC collects punched segments, stepping over their runs.
  Pass(3, &model_);
  ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
  auto gc = db_->RunGC();
  ASSERT_TRUE(gc.ok()) << gc.status();
  EXPECT_GT(gc->victims, 0u);
  ExpectModel(model_);
  db_.reset();
  gc_testing::ReopenAndExpectModel(DbOptions(), fs_, model_);
}

TEST_F(PunchTest, AnIteratorFromBeforeTheCountKeepsItsRecordsUntilReleased) {
  std::map<std::string, std::string> first;
  Pass(10, &first);
  model_ = first;
  // The iterator reads the first pass's pointers from the tables it pins.
  auto it = db_->NewIterator({});
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  OverwriteAndSettle(1, 11);
  EXPECT_EQ(db_->GetStats().gc_punched_bytes, 0u);
  auto expected = first.begin();
  for (; it->Valid(); it->Next(), ++expected) {
    ASSERT_NE(expected, first.end());
    ASSERT_EQ(it->key(), expected->first);
    ASSERT_EQ(it->value(), expected->second) << it->key();
  }
  ASSERT_TRUE(it->status().ok()) << it->status();
  EXPECT_EQ(expected, first.end());
  it.reset();
  ASSERT_TRUE(db_->WaitForBackgroundWork().ok());
  EXPECT_GT(db_->GetStats().gc_punched_bytes, 0u);
  ExpectModel(model_);
}

TEST_F(PunchTest, ASnapshotsValuesAreNeverCountedSoNeverPunched) {
  std::map<std::string, std::string> first;
  Pass(20, &first);
  const Snapshot* snap = db_->GetSnapshot();
  OverwriteAndSettle(1, 21);
  EXPECT_EQ(db_->GetStats().gc_punched_runs, 0u);
  ExpectModel(first, snap);
  ExpectModel(model_);
  db_->ReleaseSnapshot(snap);
  // Released, the next compaction drops them, and they go.
  ASSERT_TRUE(db_->CompactRange(nullptr, nullptr).ok());
  ASSERT_TRUE(db_->WaitForBackgroundWork().ok());
  EXPECT_GT(db_->GetStats().gc_punched_runs, 0u);
  ExpectModel(model_);
}

TEST_F(PunchTest, ACheckpointsLinkedSegmentsAreLeftWhole) {
  std::map<std::string, std::string> first;
  Pass(30, &first);
  model_ = first;
  auto cp = db_->CreateCheckpoint("/cp");
  ASSERT_TRUE(cp.ok()) << cp.status();
  ASSERT_GT(cp->files_linked, 0u);
  OverwriteAndSettle(1, 31);
  const Stats st = db_->GetStats();
  EXPECT_GT(st.gc_punch_skipped_linked, 0u);
  ExpectModel(model_);
  db_.reset();
  auto opened = OpenWithFileSystem(DbOptions(), "/cp", fs_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  for (const auto& [k, v] : first) {
    std::string got;
    ASSERT_TRUE((*opened)->Get({}, k, &got).ok()) << k;
    ASSERT_EQ(got, v) << k;
  }
}

TEST_F(PunchTest, AReadOnlyViewHoldsPunchingBackUntilItCloses) {
  std::map<std::string, std::string> first;
  Pass(50, &first);
  model_ = first;
  auto view = OpenForReadOnlyWithFileSystem(DbOptions(), "/db", fs_);
  ASSERT_TRUE(view.ok()) << view.status();
  OverwriteAndSettle(1, 51);
  Stats st = db_->GetStats();
  EXPECT_EQ(st.gc_punched_bytes, 0u);
  EXPECT_GT(st.gc_punch_held_for_readers, 0u);
  // The view still reads the values the writer has since overwritten.
  for (const auto& [k, v] : first) {
    std::string got;
    ASSERT_TRUE((*view)->Get({}, k, &got).ok()) << k;
    ASSERT_EQ(got, v) << k;
  }
  view->reset();
  ASSERT_TRUE(db_->WaitForBackgroundWork().ok());
  EXPECT_GT(db_->GetStats().gc_punched_bytes, 0u);
  ExpectModel(model_);
}

TEST_F(PunchTest, TurnedOffNothingIsPunched) {
  db_.reset();
  Options o = DbOptions();
  o.gc_punch_holes = false;
  auto db = OpenWithFileSystem(o, "/db", fs_);
  ASSERT_TRUE(db.ok()) << db.status();
  db_ = std::move(*db);
  OverwriteAndSettle(2, 40);
  EXPECT_EQ(db_->GetStats().gc_punched_runs, 0u);
  EXPECT_EQ(db_->GetStats().vlog_punched_bytes, 0u);
  ExpectModel(model_);
}

// A file system that cannot punch: the runs are logged once, punching
// turns itself off, and everything reads as before.
class NoPunchFileSystem : public io::MemoryFileSystem {
 public:
  absl::Status PunchHoles(const std::string& path,
                          absl::Span<const std::pair<uint64_t, uint64_t>>) override {
    ++calls;
    return absl::UnimplementedError(absl::StrCat("punch ", path, ": not here"));
  }
  int calls = 0;
};

TEST(PunchUnsupportedTest, AFileSystemThatCannotPunchTurnsPunchingOff) {
  auto fs = std::make_shared<NoPunchFileSystem>();
  Options o = GcOptions();
  o.value_separation_threshold = 1024;
  auto db = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(db.ok()) << db.status();
  std::map<std::string, std::string> model;
  for (int pass = 0; pass < 4; ++pass) {
    for (int i = 0; i < kKeys; ++i) {
      const std::string k = absl::StrFormat("key%05d", i);
      const std::string v = Value(pass * 1000 + i, kValueSize);
      ASSERT_TRUE((*db)->Put({}, k, v).ok());
      model[k] = v;
    }
    ASSERT_TRUE((*db)->Flush().ok());
    ASSERT_TRUE((*db)->CompactRange(nullptr, nullptr).ok());
    ASSERT_TRUE((*db)->WaitForBackgroundWork().ok());
  }
  EXPECT_EQ(fs->calls, 1);
  EXPECT_EQ((*db)->GetStats().gc_punched_bytes, 0u);
  for (const auto& [k, v] : model) {
    std::string got;
    ASSERT_TRUE((*db)->Get({}, k, &got).ok()) << k;
    ASSERT_EQ(got, v);
  }
  auto gc = (*db)->RunGC();
  ASSERT_TRUE(gc.ok()) << gc.status();
}

// A punch that fails (the device reports an error) leaves the runs listed and the blocks
// taken: reads, GC and a reopen go on as before, and the DB keeps writing.
class FailingPunchFileSystem : public io::MemoryFileSystem {
 public:
  absl::Status PunchHoles(const std::string& path,
                          absl::Span<const std::pair<uint64_t, uint64_t>>) override {
    ++calls;
    return absl::DataLossError(absl::StrCat("punch ", path, ": the device said no"));
  }
  int calls = 0;
};

TEST(PunchFailureTest, AFailedPunchLeavesTheRunsListedAndTheDbWriting) {
  auto fs = std::make_shared<FailingPunchFileSystem>();
  Options o = GcOptions();
  o.value_separation_threshold = 1024;
  std::map<std::string, std::string> model;
  {
    auto db = OpenWithFileSystem(o, "/db", fs);
    ASSERT_TRUE(db.ok()) << db.status();
    for (int pass = 0; pass < 3; ++pass) {
      for (int i = 0; i < kKeys; ++i) {
        const std::string k = absl::StrFormat("key%05d", i);
        const std::string v = Value(pass * 1000 + i + 7, kValueSize);
        ASSERT_TRUE((*db)->Put({}, k, v).ok());
        model[k] = v;
      }
      ASSERT_TRUE((*db)->Flush().ok());
      ASSERT_TRUE((*db)->CompactRange(nullptr, nullptr).ok());
      ASSERT_TRUE((*db)->WaitForBackgroundWork().ok());
    }
    EXPECT_GT(fs->calls, 1) << "only Unimplemented turns punching off";
    const Stats st = (*db)->GetStats();
    EXPECT_GT(st.gc_punched_runs, 0u);
    EXPECT_EQ(st.gc_punched_bytes, 0u);
    ASSERT_TRUE((*db)->Put({}, "after", "still writing").ok());
    model["after"] = "still writing";
    auto gc = (*db)->RunGC();
    ASSERT_TRUE(gc.ok()) << gc.status();
  }
  gc_testing::ReopenAndExpectModel(o, fs, model);
}

// A power loss after runs were punched: the manifest that lists them is
// what recovery reads, every synced write reads back, and GC and a second
// reopen step over the runs.
TEST(PunchCrashTest, APowerLossAfterPunchesKeepsEverySyncedWrite) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    auto base = std::make_shared<io::MemoryFileSystem>();
    auto fault = std::make_shared<io::FaultFileSystem>(
        base, io::FaultFileSystemOptions{.drop_unsynced_dir_entries = true});
    Options o = GcOptions();
    o.value_separation_threshold = 1024;
    std::map<std::string, std::string> model;
    {
      auto db = OpenWithFileSystem(o, "/db", fault);
      ASSERT_TRUE(db.ok()) << db.status();
      for (int pass = 0; pass < 3; ++pass) {
        for (int i = 0; i < kKeys; ++i) {
          const std::string k = absl::StrFormat("key%05d", i);
          if (pass > 0 && (i + seed) % 3 == 0) {
            ASSERT_TRUE((*db)->Delete({}, k).ok());
            model.erase(k);
            continue;
          }
          const std::string v = Value(seed * 100000 + pass * 1000 + i, kValueSize);
          ASSERT_TRUE((*db)->Put({}, k, v).ok());
          model[k] = v;
        }
        ASSERT_TRUE((*db)->Flush().ok());
        ASSERT_TRUE((*db)->CompactRange(nullptr, nullptr).ok());
        ASSERT_TRUE((*db)->WaitForBackgroundWork().ok());
      }
      ASSERT_GT((*db)->GetStats().gc_punched_bytes, 0u);
      ASSERT_TRUE((*db)->SyncWAL().ok());
      fault->SetFilesystemActive(false);  // the power fails here
    }
    const absl::Status crashed = fault->SimulateCrash(io::CrashMode::kPowerLoss, seed);
    ASSERT_TRUE(crashed.ok()) << crashed;
    {
      auto db = OpenWithFileSystem(o, "/db", base);
      ASSERT_TRUE(db.ok()) << db.status();
      gc_testing::ExpectModel(db->get(), model);
      for (int i = 0; i < kKeys; ++i) {
        const std::string k = absl::StrFormat("key%05d", i);
        if (model.contains(k)) continue;
        std::string got;
        EXPECT_TRUE(absl::IsNotFound((*db)->Get({}, k, &got))) << k;
      }
      auto gc = (*db)->RunGC();
      ASSERT_TRUE(gc.ok()) << gc.status();
    }
    gc_testing::ReopenAndExpectModel(o, base, model);
  }
}

}  // namespace
}  // namespace cairn
