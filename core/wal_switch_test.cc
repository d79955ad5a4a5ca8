// A memtable switch closes its WAL with an end record and does not sync it
// (docs/durability.md, "WAL switches"). These tests hold the flush of the
// closed memtables, so that two closed WALs and the live one are on disk,
// and cut the power or kill the process there:
//   - a power loss takes the unsynced writes as a suffix: the closed WALs,
//     cut back to their synced headers, end replay, and the newer WALs'
//     writes are dropped with them;
//   - a sync write in the live WAL syncs the closed WALs first, so it and
//     every write before it survive the same power loss;
//   - a process crash loses nothing: each closed WAL ends in its end record
//     and replay goes on to the next;
//   - damage inside a closed WAL that ends in its end record is refused;
//   - the new WAL's syncs (its header, the directory) wait for the device
//     without the DB mutex, so the background threads and readers that
//     need it go on meanwhile.
#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "core/testing/gc_helpers.h"
#include "core/write_batch_internal.h"
#include "gtest/gtest.h"
#include "io/coding.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "lsm/filename.h"
#include "lsm/log_format.h"
#include "lsm/log_reader.h"

namespace cairn {
namespace {

constexpr char kDb[] = "/db";

std::string Key(int i) { return absl::StrFormat("key%05d", i); }
std::string Value(int i) { return std::string(1000, static_cast<char>('a' + i % 26)) + std::to_string(i); }

class WalSwitchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = std::make_shared<io::MemoryFileSystem>();
    fault_ = std::make_shared<io::FaultFileSystem>(
        base_, io::FaultFileSystemOptions{.drop_unsynced_dir_entries = true});
  }

  static Options SmallMemtables() {
    Options o;
    o.memtable_size = 64 << 10;
    o.value_separation_threshold = kInlineValues;
    return o;
  }

  // Opens on the fault file system with every flush held, then puts keys
  // 0, 1, ... (not synced) until two memtables are closed and waiting:
  // three WALs on disk. Returns how many keys were put.
  int FillThreeWals(bool first_synced) {
    auto db = OpenWithFileSystem(SmallMemtables(), kDb, fault_);
    EXPECT_TRUE(db.ok()) << db.status();
    if (!db.ok()) return 0;
    db_ = *std::move(db);
    static_cast<DBImpl*>(db_.get())->before_flush_for_testing = [this] {
      release_->WaitForNotification();
    };
    int n = 0;
    while (Wals().size() < 3 && n < 10000) {
      WriteOptions w;
      w.sync = first_synced && n == 0;
      EXPECT_TRUE(db_->Put(w, Key(n), Value(n)).ok());
      ++n;
    }
    EXPECT_EQ(Wals().size(), 3u);
    return n;
  }

  // The process dies: nothing written later reaches the files.
  void Kill() {
    fault_->SetFilesystemActive(false);
    release_->Notify();
    db_.reset();
  }

  std::vector<std::string> Wals() {
    return gc_testing::FileNamesOfType(base_.get(), kDb, lsm::FileType::kLog);
  }

  std::unique_ptr<DB> Reopen() {
    auto db = OpenWithFileSystem(SmallMemtables(), kDb, base_);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? *std::move(db) : nullptr;
  }

  // Whether key i reads back, with its value when it does.
  static bool Has(DB* db, int i) {
    std::string v;
    const absl::Status s = db->Get({}, Key(i), &v);
    EXPECT_TRUE(s.ok() || absl::IsNotFound(s)) << s;
    if (s.ok()) {
      EXPECT_EQ(v, Value(i)) << i;
    }
    return s.ok();
  }

  std::shared_ptr<io::MemoryFileSystem> base_;
  std::shared_ptr<io::FaultFileSystem> fault_;
  std::unique_ptr<DB> db_;
  std::unique_ptr<absl::Notification> release_ = std::make_unique<absl::Notification>();
};

TEST_F(WalSwitchTest, APowerLossTakesTheUnsyncedWritesOfClosedWalsAsASuffix) {
  const int n = FillThreeWals(/*first_synced=*/true);
  ASSERT_GT(n, 10);
  Kill();
  ASSERT_TRUE(fault_->SimulateCrash(io::CrashMode::kDropUnsynced, 1).ok());
  std::unique_ptr<DB> db = Reopen();
  ASSERT_NE(db, nullptr);
  // The synced first write survives; the others were never synced (the
  // switches did not sync the closed WALs) and are gone, all of them: a
  // suffix, with no hole.
  EXPECT_TRUE(Has(db.get(), 0));
  for (int i = 1; i < n; ++i) EXPECT_FALSE(Has(db.get(), i)) << i;
  // The database goes on.
  ASSERT_TRUE(db->Put({}, Key(n), Value(n)).ok());
  EXPECT_TRUE(Has(db.get(), n));
}

TEST_F(WalSwitchTest, EveryPowerLossImageIsAPrefixOfTheWrites) {
  // Pages of the unsynced tails kept at random, file by file: whatever a
  // closed WAL keeps, nothing after its cut is replayed, so the keys that
  // read back are always 0 .. k-1 for some k.
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(seed);
    SetUp();
    release_ = std::make_unique<absl::Notification>();
    const int n = FillThreeWals(/*first_synced=*/true);
    ASSERT_GT(n, 10);
    Kill();
    ASSERT_TRUE(fault_->SimulateCrash(io::CrashMode::kPowerLoss, seed).ok());
    std::unique_ptr<DB> db = Reopen();
    ASSERT_NE(db, nullptr);
    int k = 0;
    while (k < n && Has(db.get(), k)) ++k;
    EXPECT_GE(k, 1);  // the synced write
    for (int i = k; i < n; ++i) EXPECT_FALSE(Has(db.get(), i)) << "hole at " << k << ": " << i;
  }
}

TEST_F(WalSwitchTest, ASyncWriteSyncsTheClosedWalsFirst) {
  const int n = FillThreeWals(/*first_synced=*/false);
  ASSERT_GT(n, 10);
  WriteOptions sync;
  sync.sync = true;
  ASSERT_TRUE(db_->Put(sync, Key(n), Value(n)).ok());
  Kill();
  ASSERT_TRUE(fault_->SimulateCrash(io::CrashMode::kDropUnsynced, 1).ok());
  std::unique_ptr<DB> db = Reopen();
  ASSERT_NE(db, nullptr);
  for (int i = 0; i <= n; ++i) EXPECT_TRUE(Has(db.get(), i)) << i;
}

TEST_F(WalSwitchTest, AProcessCrashLosesNothingAcrossTheClosedWals) {
  const int n = FillThreeWals(/*first_synced=*/false);
  ASSERT_GT(n, 10);
  Kill();  // the files keep every byte the kernel was handed
  std::unique_ptr<DB> db = Reopen();
  ASSERT_NE(db, nullptr);
  for (int i = 0; i < n; ++i) EXPECT_TRUE(Has(db.get(), i)) << i;
}

TEST_F(WalSwitchTest, DamageInAClosedWalThatEndsInItsEndRecordIsRefused) {
  const int n = FillThreeWals(/*first_synced=*/false);
  ASSERT_GT(n, 10);
  Kill();
  // A byte of the oldest WAL's first record: its end record still follows,
  // so this is damage to writes that were whole, not a cut.
  const std::string oldest = Wals().front();
  const std::string path = io::JoinPath(kDb, oldest);
  std::string contents = *base_->ReadFileToString(path);
  ASSERT_GT(contents.size(), 200u);
  contents[100] ^= 0x40;
  ASSERT_TRUE(base_->WriteFileFromString(path, contents).ok());
  auto db = OpenWithFileSystem(SmallMemtables(), kDb, base_);
  ASSERT_FALSE(db.ok());
  EXPECT_TRUE(absl::IsDataLoss(db.status())) << db.status();
  EXPECT_TRUE(absl::StrContains(db.status().message(), oldest)) << db.status();
}

TEST_F(WalSwitchTest, MissingNewestWalAfterOneThatEndsInItsEndRecordIsRefused) {
  // Three WALs; the newest two go, one at a time. The WAL left newest ends
  // in its end record, which a switch writes only once the next WAL is
  // durable: the next one is missing, not never made.
  const int n = FillThreeWals(/*first_synced=*/false);
  ASSERT_GT(n, 10);
  Kill();
  const std::vector<std::string> wals = Wals();
  ASSERT_EQ(wals.size(), 3u);
  for (int removed = 1; removed <= 2; ++removed) {
    SCOPED_TRACE(removed);
    ASSERT_TRUE(base_->RemoveFile(io::JoinPath(kDb, wals[3 - removed])).ok());
    auto db = OpenWithFileSystem(SmallMemtables(), kDb, base_);
    ASSERT_FALSE(db.ok());
    EXPECT_TRUE(absl::IsDataLoss(db.status())) << db.status();
    EXPECT_TRUE(absl::StrContains(db.status().message(), wals[2 - removed])) << db.status();
    EXPECT_TRUE(absl::StrContains(db.status().message(), "missing")) << db.status();
  }
}

TEST_F(WalSwitchTest, EndRecordMatchesTheFormatDoc) {
  std::ifstream doc(std::string(CAIRN_SOURCE_DIR) + "/docs/wal_format.md");
  ASSERT_TRUE(doc.good()) << "cannot read docs/wal_format.md";
  std::string line, expected;
  bool inside = false;
  while (std::getline(doc, line)) {
    if (line.find("<!-- golden:wal-end-record:begin -->") != std::string::npos) {
      inside = true;
      continue;
    }
    if (line.find("<!-- golden:wal-end-record:end -->") != std::string::npos) break;
    if (!inside || line.rfind("```", 0) == 0) continue;
    std::istringstream tokens(line.substr(0, line.find('#')));
    std::string token;
    while (tokens >> token) expected.push_back(static_cast<char>(std::stoi(token, nullptr, 16)));
  }
  ASSERT_EQ(expected.size(), 12u) << "golden block not found";
  EXPECT_EQ(WriteBatchInternal::EndRecord(41), expected);
  EXPECT_TRUE(WriteBatchInternal::IsEndRecord(expected));

  // A real switch closes its WAL with such a record: the newest write's
  // sequence, no entries, the last record of the file.
  const int n = FillThreeWals(/*first_synced=*/false);
  ASSERT_GT(n, 10);
  Kill();
  const std::string oldest = Wals().front();
  uint64_t number;
  lsm::FileType type;
  ASSERT_TRUE(lsm::ParseFileName(oldest, &number, &type));
  auto reader = lsm::LogReader::Open(base_.get(), io::JoinPath(kDb, oldest), number);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->format_version(), lsm::kLogFormatVersion);
  std::string_view record;
  std::string scratch, last;
  uint64_t last_write_sequence = 0;
  int records = 0;
  while ((*reader)->ReadRecord(&record, &scratch)) {
    WriteBatch b;
    ASSERT_TRUE(WriteBatchInternal::SetContents(&b, record).ok());
    if (b.Count() > 0) {
      ASSERT_TRUE(last.empty()) << "a write after the end record";
      last_write_sequence = WriteBatchInternal::Sequence(b) + b.Count() - 1;
    } else {
      last = std::string(record);
    }
    ++records;
  }
  ASSERT_TRUE((*reader)->status().ok()) << (*reader)->status();
  EXPECT_FALSE((*reader)->hit_torn_tail());
  ASSERT_EQ(last.size(), 12u);
  EXPECT_GT(records, 1);
  EXPECT_EQ(io::DecodeFixed64(last.data()), last_write_sequence);
  EXPECT_EQ(io::DecodeFixed32(last.data() + 8), 0u);
}

// A memory file system that holds the first directory sync of one thread
// until released; later ones pass.
class HeldDirSyncFileSystem : public io::MemoryFileSystem {
 public:
  absl::Status SyncDir(const std::string& dir) override {
    if (std::this_thread::get_id() == held_thread_ && !held_.exchange(true)) {
      entered_.Notify();
      release_.WaitForNotification();
    }
    return io::MemoryFileSystem::SyncDir(dir);
  }
  void HoldThread(std::thread::id id) { held_thread_ = id; }
  absl::Notification entered_, release_;

 private:
  std::atomic<std::thread::id> held_thread_{};
  std::atomic<bool> held_{false};
};

TEST(WalSwitchMutexTest, ANewWalIsSyncedWithoutTheDbMutex) {
  auto fs = std::make_shared<HeldDirSyncFileSystem>();
  Options o;
  o.memtable_size = 64 << 10;
  o.value_separation_threshold = kInlineValues;
  auto opened = OpenWithFileSystem(o, kDb, fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = *std::move(opened);
  // The writer fills the memtable until its switch syncs the new WAL's
  // directory entry, where the file system holds it.
  std::thread writer([&] {
    fs->HoldThread(std::this_thread::get_id());
    for (int i = 0; i < 10000 && !fs->entered_.HasBeenNotified(); ++i) {
      EXPECT_TRUE(db->Put({}, Key(i), Value(i)).ok());
    }
  });
  ASSERT_TRUE(fs->entered_.WaitForNotificationWithTimeout(absl::Seconds(60)))
      << "no memtable switch";
  // GetSnapshot takes the DB mutex. Held through the switch, it would wait
  // for the writer, which waits for the release below.
  absl::Notification got;
  std::thread reader([&] {
    db->ReleaseSnapshot(db->GetSnapshot());
    got.Notify();
  });
  const bool free = got.WaitForNotificationWithTimeout(absl::Seconds(60));
  fs->release_.Notify();
  reader.join();
  writer.join();
  EXPECT_TRUE(free) << "the DB mutex was held while the new WAL was synced";
  std::string v;
  EXPECT_TRUE(db->Get({}, Key(0), &v).ok());
  EXPECT_EQ(v, Value(0));
}

}  // namespace
}  // namespace cairn
