// Background GC does not sync its rewrites: a job's victims wait, claimed,
// until a flush or a sync makes the writes that moved or superseded their
// records durable, and are marked obsolete only then (docs/gc.md, "Victims
// wait for durability"). These tests check that victims do wait and are
// released (by flushes, and by the sync GC forces once idle), that an idle
// database and a close hold none, and that a power loss while they wait
// loses no value: no pointer a crash brings back names a deleted segment.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/testing/gc_helpers.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"

namespace cairn {
namespace {

using gc_testing::ReopenAndExpectModel;
using gc_testing::Value;

constexpr int kKeys = 1500;
constexpr size_t kValueSize = 700;

// as_written: every separated value goes to the value log as it is written
// (Options::separate_at_flush_below = 0); else the default, where values
// under 16 KiB go through the WAL to the flush except while GC collects.
Options SmallOptions(bool as_written = false) {
  Options o;
  o.memtable_size = 64 << 10;
  o.value_separation_threshold = 256;
  if (as_written) o.separate_at_flush_below = 0;
  o.value_log_segment_size = 64 << 10;
  o.gc_bytes_per_sec = 0;
  return o;
}

std::string Key(int i) { return absl::StrFormat("key%04d", i); }

// The value of key i written in round r: the key and the round read back
// from it.
std::string RoundValue(int r, int i) {
  return absl::StrFormat("r%03d k%04d ", r, i) + Value(r * 100003 + i, kValueSize);
}

// Every key reads back the value of some round (a power loss may take
// unsynced rounds), never an error such as one naming a deleted segment.
void ExpectEveryKeyReadsSomeRound(DB* db) {
  for (int i = 0; i < kKeys; ++i) {
    std::string v;
    const absl::Status s = db->Get({}, Key(i), &v);
    ASSERT_TRUE(s.ok()) << Key(i) << ": " << s;
    ASSERT_GE(v.size(), 12u);
    EXPECT_EQ(v.substr(5, 6), absl::StrFormat("k%04d ", i)) << v.substr(0, 12);
    const int round = std::stoi(v.substr(1, 3));
    EXPECT_EQ(v, RoundValue(round, i));
  }
}

// Writes `rounds` rounds of kKeys puts to random keys, recording them in
// *model.
void OverwriteRounds(DB* db, uint32_t seed, int rounds, std::map<std::string, std::string>* model) {
  std::mt19937 rng(seed);
  for (int round = 0; round < rounds; ++round) {
    for (int j = 0; j < kKeys; ++j) {
      const int i = static_cast<int>(rng() % kKeys);
      ASSERT_TRUE(db->Put({}, Key(i), RoundValue(round, i)).ok());
      (*model)[Key(i)] = RoundValue(round, i);
    }
  }
}

TEST(GcVictimsWaitTest, BackgroundVictimsWaitForDurabilityAndNoneRemainWhenIdle) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  const Options o = SmallOptions();
  std::map<std::string, std::string> model;
  {
    auto opened = OpenWithFileSystem(o, "/db", fs);
    ASSERT_TRUE(opened.ok()) << opened.status();
    std::unique_ptr<DB> db = std::move(*opened);
    ASSERT_NO_FATAL_FAILURE(OverwriteRounds(db.get(), 7, 6, &model));
    ASSERT_TRUE(db->Flush().ok());
    ASSERT_TRUE(db->WaitForBackgroundWork().ok());
    const Stats st = db->GetStats();
    EXPECT_GT(st.gc_runs, 0u);
    // Background jobs left their victims waiting rather than syncing, and
    // once GC is idle none is left.
    EXPECT_GT(st.gc_victims_waited, 0u);
    EXPECT_EQ(st.gc_victim_bytes_waiting, 0u);
    gc_testing::ExpectModel(db.get(), model);
    std::string text;
    ASSERT_TRUE(db->GetProperty("cairn.stats", &text));
    EXPECT_NE(text.find("gc victims: "), std::string::npos) << text;
  }
  // Nothing off the ledger for the open to recount.
  ReopenAndExpectModel(o, fs, model);
}

TEST(GcVictimsWaitTest, ACloseWhileVictimsWaitLeavesNothingUncounted) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o = SmallOptions();
  std::map<std::string, std::string> model;
  std::mt19937 rng(9);
  uint64_t waited = 0;
  for (int cycle = 0; cycle < 8; ++cycle) {
    auto opened = OpenWithFileSystem(o, "/db", fs);
    ASSERT_TRUE(opened.ok()) << opened.status();
    std::unique_ptr<DB> db = std::move(*opened);
    EXPECT_EQ(db->GetStats().gc_recounted_bytes, 0u) << "cycle " << cycle;
    for (int j = 0; j < 3000; ++j) {
      const int i = static_cast<int>(rng() % kKeys);
      ASSERT_TRUE(db->Put({}, Key(i), RoundValue(cycle, i)).ok());
      model[Key(i)] = RoundValue(cycle, i);
    }
    const Stats st = db->GetStats();
    waited += st.gc_victims_waited + (st.gc_victim_bytes_waiting > 0 ? 1 : 0);
    db.reset();  // victims may be waiting here: the close releases them
  }
  EXPECT_GT(waited, 0u);
  ReopenAndExpectModel(o, fs, model);
}

TEST(GcVictimsWaitTest, APowerLossWhileVictimsWaitLosesNoValue) {
  // Round 0 is synced; later rounds are not. The power fails while victims
  // wait: every key must read back a value of some round (a power loss may
  // take unsynced rounds), never an error naming a deleted segment.
  int crashes_with_victims_waiting = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    auto base = std::make_shared<io::MemoryFileSystem>();
    auto fault = std::make_shared<io::FaultFileSystem>(
        base, io::FaultFileSystemOptions{.drop_unsynced_dir_entries = true});
    const Options o = SmallOptions(/*as_written=*/seed % 2 == 0);
    {
      auto opened = OpenWithFileSystem(o, "/db", fault);
      ASSERT_TRUE(opened.ok()) << opened.status();
      std::unique_ptr<DB> db = std::move(*opened);
      for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(db->Put({}, Key(i), RoundValue(0, i)).ok());
      ASSERT_TRUE(db->SyncWAL().ok());
      std::mt19937 rng(seed);
      bool waiting = false;
      for (int j = 0; j < 40 * kKeys && !waiting; ++j) {
        const int i = static_cast<int>(rng() % kKeys);
        ASSERT_TRUE(db->Put({}, Key(i), RoundValue(1 + j / kKeys, i)).ok());
        if (j % 64 == 0) waiting = db->GetStats().gc_victim_bytes_waiting > 0;
      }
      if (waiting) ++crashes_with_victims_waiting;
      fault->SetFilesystemActive(false);  // the power fails here
    }
    ASSERT_TRUE(fault->SimulateCrash(io::CrashMode::kPowerLoss, seed).ok());
    auto reopened = OpenWithFileSystem(o, "/db", base);
    ASSERT_TRUE(reopened.ok()) << reopened.status();
    std::unique_ptr<DB> db = std::move(*reopened);
    ExpectEveryKeyReadsSomeRound(db.get());
  }
  // The window was hit: victims were waiting when the power failed.
  EXPECT_GT(crashes_with_victims_waiting, 0);
}

// Writes round 0 of every key and syncs it, overwrites random keys in
// later rounds until `until` holds for the stats (checked every 64 writes;
// it must within 200 rounds), hands the DB to `check`, writes one more
// unsynced round, and fails the power: every key must then read back the
// value of some round.
void OverwriteUntilThenLosePower(const Options& o, uint32_t seed,
                                 const std::function<bool(const Stats&)>& until,
                                 const std::function<void(DB*, const Stats&)>& check) {
  auto base = std::make_shared<io::MemoryFileSystem>();
  auto fault = std::make_shared<io::FaultFileSystem>(
      base, io::FaultFileSystemOptions{.drop_unsynced_dir_entries = true});
  {
    auto opened = OpenWithFileSystem(o, "/db", fault);
    ASSERT_TRUE(opened.ok()) << opened.status();
    std::unique_ptr<DB> db = std::move(*opened);
    for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(db->Put({}, Key(i), RoundValue(0, i)).ok());
    ASSERT_TRUE(db->SyncWAL().ok());
    std::mt19937 rng(seed);
    Stats st;
    for (int j = 0; j < 200 * kKeys && !until(st); ++j) {
      const int i = static_cast<int>(rng() % kKeys);
      ASSERT_TRUE(db->Put({}, Key(i), RoundValue(1 + j / kKeys, i)).ok());
      if (j % 64 == 0) st = db->GetStats();
    }
    ASSERT_TRUE(until(st)) << "not reached in 200 rounds";
    check(db.get(), st);
    for (int j = 0; j < kKeys; ++j) {
      const int i = static_cast<int>(rng() % kKeys);
      ASSERT_TRUE(db->Put({}, Key(i), RoundValue(250, i)).ok());
    }
    fault->SetFilesystemActive(false);  // the power fails here
  }
  ASSERT_TRUE(fault->SimulateCrash(io::CrashMode::kPowerLoss, seed).ok());
  auto reopened = OpenWithFileSystem(o, "/db", base);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  std::unique_ptr<DB> db = std::move(*reopened);
  ExpectEveryKeyReadsSomeRound(db.get());
}

TEST(GcVictimsWaitTest, ManyWaitingBytesSwitchTheMemTableRatherThanSyncTheWal) {
  // Values through the WAL to the flush, and a memtable far larger than the
  // segments: GC collects many victims while one memtable fills, so more
  // than two segments' worth wait on the live memtable's writes. GC then
  // switches the memtable (its flush releases them) rather than syncing the
  // WAL, which holds the values; a power loss afterwards loses no value.
  Options o = SmallOptions();
  o.separate_at_flush_during_gc = true;  // the WAL keeps the values
  o.memtable_size = 1 << 20;
  o.max_memtable_value_bytes = 1 << 20;
  OverwriteUntilThenLosePower(
      o, 11, [](const Stats& st) { return st.gc_victim_switches > 0; },
      [](DB* db, const Stats&) {
        // Flushes, not syncs, released the victims that waited. The switch
        // only queued the flush that releases them (it may still be running
        // when the counter is read): Flush waits for it.
        ASSERT_TRUE(db->Flush().ok());
        EXPECT_GT(db->GetStats().gc_victims_waited, 0u);
        std::string text;
        ASSERT_TRUE(db->GetProperty("cairn.stats", &text));
        EXPECT_NE(text.find("memtable switches forced"), std::string::npos) << text;
      });
}

TEST(GcVictimsWaitTest, ValuesWrittenAsTheyComeReleaseVictimsWithACheapWalSync) {
  // Values go to the value log as they are written (the default), so the
  // WAL holds pointers only: a sync at a job's end writes a few KiB of it
  // for a segment's worth freed, and GC takes it at once rather than
  // switching the memtable or waiting for a flush. A power loss afterwards
  // loses no value.
  Options o = SmallOptions(/*as_written=*/true);
  o.memtable_size = 1 << 20;
  o.max_memtable_value_bytes = 1 << 20;
  OverwriteUntilThenLosePower(
      o, 13, [](const Stats& st) { return st.gc_victim_syncs >= 3; },
      [&](DB*, const Stats& st) {
        EXPECT_EQ(st.gc_victim_switches, 0u);
        EXPECT_GT(st.gc_victims_waited, 0u);
        // Never more than a job's victims wait: each job's end releases them.
        EXPECT_LE(st.gc_victim_bytes_waiting, 2 * o.value_log_segment_size);
      });
}

TEST(GcVictimsWaitTest, WhileGcCollectsValuesSkipTheWal) {
  // By default values under 16 KiB go through the WAL to the flush, but
  // while GC collects they go to the value log as they come, so the WAL
  // carries pointers: the same overwrites write far fewer WAL bytes than
  // with separate_at_flush_during_gc, and read back the same.
  uint64_t wal_bytes[2] = {0, 0};
  for (const bool pinned : {false, true}) {
    SCOPED_TRACE(pinned ? "separate_at_flush_during_gc" : "default");
    auto fs = std::make_shared<io::MemoryFileSystem>();
    Options o = SmallOptions();
    o.separate_at_flush_during_gc = pinned;
    std::map<std::string, std::string> model;
    {
      auto opened = OpenWithFileSystem(o, "/db", fs);
      ASSERT_TRUE(opened.ok()) << opened.status();
      std::unique_ptr<DB> db = std::move(*opened);
      ASSERT_NO_FATAL_FAILURE(OverwriteRounds(db.get(), 17, 8, &model));
      const Stats st = db->GetStats();
      EXPECT_GT(st.gc_runs, 0u);
      wal_bytes[pinned ? 1 : 0] = st.wal_bytes_written;
      gc_testing::ExpectModel(db.get(), model);
    }
    ReopenAndExpectModel(o, fs, model);
  }
  EXPECT_LT(wal_bytes[0] * 2, wal_bytes[1])
      << "default " << wal_bytes[0] << " WAL bytes, pinned " << wal_bytes[1];
}

}  // namespace
}  // namespace cairn
