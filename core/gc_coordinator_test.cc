// GcCoordinator with no DB: a fake GcDbAccess, a value log of one victim
// segment on an in-memory file system, and the victim's life through it
// (picked, checked, waiting for durability, released, deleted), as
// core/gc_coordinator.h tells it.
#include "core/gc_coordinator.h"

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/file_deleter.h"
#include "core/info_log.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "lsm/filename.h"
#include "lsm/version.h"
#include "vlog/segment_writer.h"

namespace cairn {
namespace {

constexpr char kDb[] = "/db";
constexpr uint64_t kVictim = 7;
constexpr int kRecords = 20;

// The DB as GC sees it: every key the victim holds was overwritten since
// (CheckPointers finds none live), the WAL is synced through durable, and
// each call the coordinator makes is logged.
class FakeDb final : public GcDbAccess {
 public:
  FakeDb(io::FileSystem* fs, absl::Mutex* mu)
      : mu_(mu),
        vlog_(fs, kDb,
              vlog::ValueLogOptions{
                  .segment_path = [](uint64_t id) { return lsm::ValueLogFileName(kDb, id); }},
              [this](const vlog::SegmentEdit& edit) { return LogAndApply(edit); }),
        deleter_(fs, nullptr),
        info_log_(InfoLog::Open(fs, kDb, 1 << 20)) {}

  absl::Status CheckPointers(absl::Span<const std::string_view> keys,
                             absl::Span<const vlog::ValuePointer> pointers,
                             const lsm::MemTable* unless_holding, std::vector<bool>* live,
                             GcReadBase* view, bool* looked) override {
    view->sequence = last_sequence;
    *looked = true;
    live->assign(keys.size(), false);
    checked += keys.size();
    return absl::OkStatus();
  }
  lsm::SequenceNumber LastSequence() override { return last_sequence; }
  lsm::SequenceNumber DurableSequence() override { return durable; }
  absl::Status WritePointerRewrite(const GcPointerRewrite&, bool) override {
    calls.push_back("rewrite");
    return absl::OkStatus();
  }
  absl::Status SyncWal() override {
    calls.push_back("sync");
    durable = last_sequence;
    return absl::OkStatus();
  }
  absl::Status SwitchMemTable() override {
    calls.push_back("switch");
    return absl::OkStatus();
  }
  absl::Status SealActiveSegment() override {
    calls.push_back("seal");
    return absl::OkStatus();
  }
  absl::Status Flush() override { return absl::OkStatus(); }
  void BeforeRewriteForTesting() override {}
  uint64_t NewFileNumber() override { return next_file++; }
  absl::Status LogAndApply(const vlog::SegmentEdit& edit) override {
    for (const vlog::SegmentEdit::Change& c : edit.changes()) {
      calls.push_back(vlog::SegmentEdit::ChangeDebugString(c));
    }
    return vlog_.Apply(edit);
  }
  vlog::ValueLog& value_log() override { return vlog_; }
  FileDeleter& deleter() override { return deleter_; }
  InfoLog& info_log() override { return *info_log_; }
  bool ShuttingDownLocked() override { return false; }
  absl::Status BackgroundErrorLocked() override { return background_error; }
  void SetBackgroundErrorLocked(const absl::Status& s) override { background_error = s; }
  void InstallSuperVersionLocked() override {
    mu_->AssertHeld();
    ++installs;
  }
  lsm::SequenceNumber OldestSnapshotLocked() override { return oldest_snapshot; }
  MemTables MemTablesLocked() override { return mem_tables; }
  uint64_t WalUnsyncedBytes() override { return wal_unsynced_bytes; }
  absl::Status WaitWhileLocked(absl::FunctionRef<bool()>) override { return absl::OkStatus(); }

  lsm::SequenceNumber last_sequence = 100;
  lsm::SequenceNumber durable = 50;
  lsm::SequenceNumber oldest_snapshot = 100;        // none older than the last write
  uint64_t wal_unsynced_bytes = uint64_t{1} << 40;  // a sync is never cheap
  MemTables mem_tables;
  absl::Status background_error;
  std::vector<std::string> calls;  // "sync", "switch", ... and each edit's changes
  size_t checked = 0;
  int installs = 0;
  uint64_t next_file = 100;

 private:
  absl::Mutex* const mu_;
  vlog::ValueLog vlog_;
  FileDeleter deleter_;
  std::unique_ptr<InfoLog> info_log_;
};

class GcCoordinatorTest : public ::testing::Test {
 protected:
  GcCoordinatorTest()
      : fs_(std::make_shared<io::MemoryFileSystem>()),
        created_dir_(fs_->CreateDir(kDb).ok()),
        db_(fs_.get(), &mu_),
        ledger_(SpaceLedger::Settings{.gc_space_amp_trigger = options_.gc_space_amp_trigger,
                                      .memtable_size = options_.memtable_size,
                                      .max_memtable_value_bytes = 1 << 30},
                Sources()),
        gc_(&db_, options_, kDb, fs_.get(), &ledger_, &mu_, &cv_) {}

  SpaceLedger::Sources Sources() {
    return {.figures =
                [this] {
                  SpaceLedger::Figures f;
                  f.set = db_.value_log().segment_set().GetTotals();
                  return f;
                },
            .current_version =
                [] {
                  return std::make_shared<const lsm::Version>(
                      std::array<lsm::FileList, lsm::kNumLevels>{});
                },
            .average_record = [] { return uint64_t{1024}; }};
  }

  // The victim: kRecords records, every one of them counted as garbage.
  void WriteVictim() {
    ASSERT_TRUE(created_dir_);
    auto writer = vlog::SegmentWriter::Create(fs_.get(), VictimPath(), kVictim, {});
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int i = 0; i < kRecords; ++i) {
      ASSERT_TRUE((*writer)->Append(absl::StrFormat("k%03d", i), std::string(1000, 'v')).ok());
    }
    ASSERT_TRUE((*writer)->Sync().ok());
    ASSERT_TRUE((*writer)->Close().ok());
    vlog::SegmentEdit edit;
    edit.AddSegment(kVictim, vlog::SegmentKind::kFresh);
    edit.SealSegment(kVictim, (*writer)->size(), (*writer)->record_count());
    edit.AddGarbage(kVictim, (*writer)->size() - vlog::kSegmentHeaderSize,
                    (*writer)->record_count());
    ASSERT_TRUE(db_.value_log().Apply(edit).ok());
    db_.calls.clear();
  }

  static std::string VictimPath() { return lsm::ValueLogFileName(kDb, kVictim); }
  bool VictimOnDisk() {
    db_.deleter().WaitIdle();
    return fs_->FileExists(VictimPath());
  }
  std::optional<vlog::SegmentInfo> Victim() { return db_.value_log().segment_set().Get(kVictim); }
  // How often the coordinator asked for what ("sync", "switch", ...).
  int Calls(const std::string& what) const {
    return static_cast<int>(std::count(db_.calls.begin(), db_.calls.end(), what));
  }
  // The victim is in the set, not yet marked obsolete.
  void ExpectStillListed() {
    ASSERT_TRUE(Victim().has_value());
    EXPECT_FALSE(Victim()->obsolete);
  }
  uint64_t WaitingVictimBytes() {
    absl::MutexLock l(&mu_);
    return gc_.PendingVictimTotalsLocked().bytes;
  }

  Options options_;
  std::shared_ptr<io::MemoryFileSystem> fs_;
  bool created_dir_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  FakeDb db_;
  SpaceLedger ledger_;
  GcCoordinator gc_;
};

TEST_F(GcCoordinatorTest, ManualRunSyncsThenMarksTheVictimObsoleteAndDeletesIt) {
  WriteVictim();
  absl::StatusOr<GcResult> r = gc_.Collect(/*manual=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->victims, 1u);
  EXPECT_EQ(r->records_dropped, static_cast<uint64_t>(kRecords));
  EXPECT_EQ(db_.checked, static_cast<size_t>(kRecords));
  // Nothing was live, so nothing was rewritten; the writes that made the
  // records dead were synced before the manifest marked the victim
  // obsolete, and it went once nothing could read it.
  ASSERT_GE(db_.calls.size(), 3u);
  EXPECT_EQ(db_.calls[0], "sync");
  EXPECT_NE(db_.calls[1].find("obsolete"), std::string::npos) << db_.calls[1];
  EXPECT_NE(db_.calls.back().find("remove"), std::string::npos) << db_.calls.back();
  EXPECT_FALSE(Victim().has_value());
  EXPECT_FALSE(VictimOnDisk());
  EXPECT_EQ(gc_.counters().segments_freed.load(), 1u);
  EXPECT_EQ(gc_.counters().runs.load(), 1u);
  EXPECT_GE(db_.installs, 1);  // a new read epoch began with the retirement
}

TEST_F(GcCoordinatorTest, AnOlderSnapshotOrReadEpochKeepsTheCollectedVictim) {
  WriteVictim();
  db_.oldest_snapshot = 60;  // older than the writes that made it garbage
  std::shared_ptr<const ReadEpoch> reader = gc_.retention().epoch();
  ASSERT_TRUE(gc_.Collect(/*manual=*/true).ok());
  ASSERT_TRUE(Victim().has_value());
  EXPECT_TRUE(Victim()->obsolete);
  EXPECT_TRUE(VictimOnDisk());

  db_.oldest_snapshot = 100;  // the snapshot is released; the reader stays
  gc_.DeleteObsoleteSegments();
  EXPECT_TRUE(VictimOnDisk());

  reader.reset();
  gc_.DeleteObsoleteSegments();
  EXPECT_FALSE(Victim().has_value());
  EXPECT_FALSE(VictimOnDisk());
}

TEST_F(GcCoordinatorTest, BackgroundVictimWaitsClaimedUntilAFlushMakesItDurable) {
  WriteVictim();
  {
    absl::MutexLock l(&mu_);
    ASSERT_TRUE(gc_.ControllerLocked().ShouldCollect(10.0));  // far past the trigger
  }
  // The live memtable holds the writes it waits on, and is worth a flush.
  db_.mem_tables.mutable_bytes = options_.memtable_size;
  absl::StatusOr<GcResult> r = gc_.Collect(/*manual=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->victims, 1u);
  // Neither a sync nor a switch for it (GC had more to do): it waits.
  EXPECT_EQ(Calls("sync"), 0);
  EXPECT_EQ(Calls("switch"), 0);
  ExpectStillListed();
  EXPECT_GT(WaitingVictimBytes(), 0u);
  // Claimed while it waits: the next pass does not pick it again, and,
  // with nothing left to do, asks for a memtable switch rather than a sync
  // (VictimRelease::kSoon).
  absl::StatusOr<GcResult> again = gc_.Collect(/*manual=*/false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->victims, 0u);
  EXPECT_EQ(Calls("switch"), 1);
  EXPECT_EQ(Calls("sync"), 0);
  ExpectStillListed();

  db_.durable = db_.last_sequence;  // the switched memtable's flush made them durable
  ASSERT_TRUE(gc_.FlushDurable().ok());
  EXPECT_EQ(WaitingVictimBytes(), 0u);
  EXPECT_FALSE(Victim().has_value());
  EXPECT_FALSE(VictimOnDisk());
  EXPECT_EQ(gc_.counters().victims_waited.load(), 1u);
  EXPECT_EQ(gc_.counters().victim_switches.load(), 1u);
  EXPECT_EQ(Calls("sync"), 0);
}

TEST_F(GcCoordinatorTest, ReleasingNowSyncsForAWaitingVictim) {
  WriteVictim();
  {
    absl::MutexLock l(&mu_);
    ASSERT_TRUE(gc_.ControllerLocked().ShouldCollect(10.0));
  }
  ASSERT_TRUE(gc_.Collect(/*manual=*/false).ok());
  ASSERT_GT(WaitingVictimBytes(), 0u);
  ASSERT_TRUE(gc_.ReleasePendingVictims(GcCoordinator::VictimRelease::kNow).ok());
  EXPECT_EQ(gc_.counters().victim_syncs.load(), 1u);
  EXPECT_EQ(WaitingVictimBytes(), 0u);
  ASSERT_TRUE(Victim().has_value());
  EXPECT_TRUE(Victim()->obsolete);
}

TEST_F(GcCoordinatorTest, ForeseenGarbageSkipsClaimedSegmentsAndReportsWhatItAdds) {
  WriteVictim();
  vlog::DeadRecords::Batch batch;
  batch[kVictim].push_back({.offset = vlog::kSegmentHeaderSize, .size = 1000});
  absl::MutexLock l(&mu_);
  bool overflowed = true;
  gc_.ClaimLocked(kVictim);  // a flush's new segment, say
  EXPECT_EQ(gc_.ForeseeLocked(batch, &overflowed), 0u);
  EXPECT_FALSE(overflowed);
  gc_.UnclaimLocked(kVictim);
  EXPECT_EQ(gc_.ForeseeLocked(batch, &overflowed), 1000u);
  EXPECT_EQ(gc_.foreseen().Bytes(kVictim), 1000u);
  EXPECT_TRUE(gc_.CanCollectLocked());
}

TEST_F(GcCoordinatorTest, RecordsCountedDeadAreListedOnlyForSegmentsStillToCollect) {
  WriteVictim();
  vlog::DeadRecords::Batch dead;
  dead[kVictim].push_back({.offset = vlog::kSegmentHeaderSize, .size = 1000});
  dead[kVictim + 1].push_back({.offset = vlog::kSegmentHeaderSize, .size = 1000});  // gone
  gc_.DeadRecordsCounted(dead);
  EXPECT_EQ(gc_.dead_records_listed(), 1u);
}

}  // namespace
}  // namespace cairn
