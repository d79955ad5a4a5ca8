// The write path's split (db_write.cc): each writer prepares its own large
// values (compression, checksums, the whole value-log record) before it
// queues, and the group's leader only places them and writes the pointers.
// These tests put the values of several writers in one group and read them
// back, and fail a group's writes to show that a prepared value is never
// acknowledged nor reachable unless its group succeeded.
#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "cairn/db.h"
#include "cairn/iterator.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

Options SeparatedOptions(Compression compression) {
  Options o;
  o.value_separation_threshold = 1024;
  o.separate_at_flush_below = 0;  // the write path's own placement
  o.value_compression = compression;
  o.memtable_size = 16 << 20;  // no memtable switch in the middle of a test
  return o;
}

// Random bytes: zstd cannot shrink them, so they are stored raw.
std::string RandomValue(int seed, size_t size) {
  std::mt19937_64 rng(seed);
  std::string v(size, '\0');
  for (char& c : v) c = static_cast<char>(rng() & 0xff);
  return v;
}

// Runs of a few letters: zstd shrinks them several times over.
std::string CompressibleValue(int seed, size_t size) {
  std::mt19937_64 rng(seed);
  std::string v;
  while (v.size() < size) v.append(std::min<size_t>(size - v.size(), 1 + rng() % 64), 'a' + rng() % 3);
  return v;
}

// A memory file system whose WAL flushes can be held at a gate, so that a
// leader stops inside its group while other writers queue behind it.
class GatedFileSystem : public io::MemoryFileSystem {
 public:
  void CloseGate() {
    absl::MutexLock l(&mu_);
    open_ = false;
  }
  void OpenGate() {
    absl::MutexLock l(&mu_);
    open_ = true;
  }
  // WAL flushes begun so far; one per group of non-sync writes.
  int wal_flushes() {
    absl::MutexLock l(&mu_);
    return wal_flushes_;
  }
  bool held() {
    absl::MutexLock l(&mu_);
    return held_ > 0;
  }

  absl::StatusOr<std::unique_ptr<io::WritableFile>> NewWritableFile(
      const std::string& path, const io::FileOptions& options) override {
    absl::StatusOr<std::unique_ptr<io::WritableFile>> f =
        MemoryFileSystem::NewWritableFile(path, options);
    if (!f.ok() || !absl::EndsWith(path, ".log")) return f;
    return std::make_unique<GatedFile>(this, std::move(*f));
  }

 private:
  class GatedFile : public io::WritableFile {
   public:
    GatedFile(GatedFileSystem* fs, std::unique_ptr<io::WritableFile> base)
        : fs_(fs), base_(std::move(base)) {}
    absl::Status Append(std::string_view data) override { return base_->Append(data); }
    absl::Status Flush() override {
      fs_->PassGate();
      return base_->Flush();
    }
    absl::Status Sync() override { return base_->Sync(); }
    absl::Status Close() override { return base_->Close(); }
    uint64_t Size() const override { return base_->Size(); }
    const std::string& path() const override { return base_->path(); }

   private:
    GatedFileSystem* const fs_;
    std::unique_ptr<io::WritableFile> base_;
  };

  void PassGate() {
    absl::MutexLock l(&mu_);
    ++wal_flushes_;
    ++held_;
    mu_.Await(absl::Condition(&open_));
    --held_;
  }

  absl::Mutex mu_;
  bool open_ = true;
  int wal_flushes_ = 0;
  int held_ = 0;
};

int SegmentFiles(io::FileSystem* fs) {
  absl::StatusOr<std::vector<std::string>> names = fs->ListDir("/db");
  EXPECT_TRUE(names.ok()) << names.status();
  int n = 0;
  if (names.ok()) {
    for (const std::string& name : *names) n += absl::EndsWith(name, ".vlog");
  }
  return n;
}

// Param: the active segment is nearly full when the group comes, so that
// the group's records start a new segment part way through.
class DbWriteGroupTest : public ::testing::TestWithParam<bool> {};

TEST_P(DbWriteGroupTest, ValuesPreparedBySeveralWritersShareOneGroupAndReadBackIntact) {
  auto fs = std::make_shared<GatedFileSystem>();
  Options o = SeparatedOptions(Compression::kZstd);
  o.value_log_segment_size = 64 << 10;  // the smallest allowed
  auto db = OpenWithFileSystem(o, "/db", fs);
  ASSERT_OK(db.status());
  if (GetParam()) {
    ASSERT_OK((*db)->Put({}, "filler", RandomValue(99, 60 << 10)));
  }

  // A leader stops in its WAL flush; the writers queue behind it.
  fs->CloseGate();
  std::thread leader([&] { EXPECT_OK((*db)->Put({}, "leader", RandomValue(0, 2048))); });
  while (!fs->held()) absl::SleepFor(absl::Milliseconds(1));
  const int flushes_before = fs->wal_flushes();

  // Each writer: a value zstd shrinks, one it cannot (stored raw), and a
  // small one that stays inline; one writer adds a chunked value (over
  // 64 KiB) that compresses. Under 128 KiB in all, so one group fits them.
  constexpr int kWriters = 6;
  std::map<std::string, std::string> expected;
  std::vector<WriteBatch> batches(kWriters);
  uint64_t separated_bytes = 0;
  for (int w = 0; w < kWriters; ++w) {
    auto put = [&](std::string key, std::string value) {
      if (value.size() >= o.value_separation_threshold) separated_bytes += value.size();
      batches[w].Put(key, value);
      expected[key] = std::move(value);
    };
    put(absl::StrCat("w", w, "/compressible"), CompressibleValue(w, 4096));
    put(absl::StrCat("w", w, "/random"), RandomValue(100 + w, 6144));
    put(absl::StrCat("w", w, "/inline"), absl::StrCat("small ", w));
    if (w == kWriters - 1) put(absl::StrCat("w", w, "/chunked"), CompressibleValue(w, 66 << 10));
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] { EXPECT_OK((*db)->Write({}, batches[w])); });
  }
  // Time to prepare and queue: each writer's encoding takes well under a
  // millisecond.
  absl::SleepFor(absl::Milliseconds(500));
  const int segments_before = SegmentFiles(fs.get());
  fs->OpenGate();
  leader.join();
  for (std::thread& t : writers) t.join();
  expected["leader"] = RandomValue(0, 2048);
  if (GetParam()) {
    expected["filler"] = RandomValue(99, 60 << 10);
    EXPECT_GT(SegmentFiles(fs.get()), segments_before);
  }

  // At most two groups after the leader's: some group holds at least three
  // writers (one, unless a writer was descheduled before it queued).
  const int groups = fs->wal_flushes() - flushes_before;
  EXPECT_GE(groups, 1);
  EXPECT_LE(groups, 2);
  // The compressible values went to the value log compressed.
  const Stats st = (*db)->GetStats();
  EXPECT_LT(st.vlog_bytes_written, separated_bytes);

  auto check = [&](DB* d) {
    for (const auto& [k, v] : expected) {
      std::string got;
      ASSERT_OK(d->Get({}, k, &got)) << k;
      EXPECT_EQ(got, v) << k;
    }
  };
  check(db->get());
  db->reset();
  db = OpenWithFileSystem(o, "/db", fs);
  ASSERT_OK(db.status());
  check(db->get());
}

INSTANTIATE_TEST_SUITE_P(Segment, DbWriteGroupTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "NewSegmentInTheGroup" : "OneSegment";
                         });

TEST(DbWriteTest, PreparedValueOfAFailedGroupIsNeitherAcknowledgedNorReachable) {
  auto fault = std::make_shared<io::FaultFileSystem>(std::make_shared<io::MemoryFileSystem>());
  const Options o = SeparatedOptions(Compression::kZstd);
  auto db = OpenWithFileSystem(o, "/db", fault);
  ASSERT_OK(db.status());
  ASSERT_OK((*db)->Put({}, "before", CompressibleValue(1, 8192)));

  // The group's first write is the value log's append of the prepared
  // record: it fails, and so does every write after it (fail-stop).
  fault->FailAfter(0, io::InjectedIoError("value-log append"), io::FaultKind::kAnyWrite,
                   /*persistent=*/true);
  EXPECT_FALSE((*db)->Put({}, "lost", CompressibleValue(2, 8192)).ok());
  EXPECT_FALSE((*db)->Put({}, "after", RandomValue(3, 4096)).ok());
  std::string v;
  EXPECT_TRUE(absl::IsNotFound((*db)->Get({}, "lost", &v)));

  db->reset();
  fault->ClearFaults();
  db = OpenWithFileSystem(o, "/db", fault);
  ASSERT_OK(db.status());
  ASSERT_OK((*db)->Get({}, "before", &v));
  EXPECT_EQ(v, CompressibleValue(1, 8192));
  std::unique_ptr<Iterator> it = (*db)->NewIterator({});
  std::vector<std::string> keys;
  for (it->SeekToFirst(); it->Valid(); it->Next()) keys.emplace_back(it->key());
  ASSERT_OK(it->status());
  EXPECT_EQ(keys, std::vector<std::string>{"before"});
}

// SyncWAL makes every write acknowledged before it durable, values in the
// value log and inline ones alike: a crash that drops every unsynced byte
// (and every directory entry no sync covered) after it loses none of them,
// while the writes after it are lost with the rest of the unsynced tail.
TEST(DbWriteTest, SyncWalMakesEarlierWritesSurviveACrashThatDropsUnsyncedBytes) {
  io::FaultFileSystemOptions fo;
  fo.drop_unsynced_dir_entries = true;
  auto fault = std::make_shared<io::FaultFileSystem>(std::make_shared<io::MemoryFileSystem>(), fo);
  const Options o = SeparatedOptions(Compression::kZstd);
  std::map<std::string, std::string> model;
  {
    auto db = OpenWithFileSystem(o, "/db", fault);
    ASSERT_OK(db.status());
    for (int i = 0; i < 50; ++i) {
      const std::string k = absl::StrCat("key", i);
      model[k] = i % 2 == 0 ? RandomValue(i, 4096) : CompressibleValue(i, 100);  // both paths
      ASSERT_OK((*db)->Put({}, k, model[k]));
    }
    ASSERT_OK((*db)->SyncWAL());
    ASSERT_OK((*db)->Put({}, "after", RandomValue(99, 4096)));
    fault->SetFilesystemActive(false);
  }
  ASSERT_OK(fault->SimulateCrash(io::CrashMode::kDropUnsynced, /*seed=*/3));
  auto db = OpenWithFileSystem(o, "/db", fault);
  ASSERT_OK(db.status());
  for (const auto& [k, v] : model) {
    std::string got;
    ASSERT_OK((*db)->Get({}, k, &got)) << k;
    EXPECT_EQ(got, v) << k;
  }
  std::string got;
  EXPECT_TRUE(absl::IsNotFound((*db)->Get({}, "after", &got)));
  db->reset();
  // A read-only DB has nothing to sync, and says so.
  Options ro_options = o;
  ro_options.file_system = fault;
  auto ro = DB::OpenForReadOnly(ro_options, "/db");
  ASSERT_OK(ro.status());
  EXPECT_TRUE(absl::IsFailedPrecondition((*ro)->SyncWAL()));
}

// A synced group of small separated values puts the values in its WAL
// record and syncs the WAL alone: the value log's copies may be lost to a
// power loss, and the writes survive from the WAL.
class SyncedValuesTest : public ::testing::Test {
 protected:
  SyncedValuesTest() {
    io::FaultFileSystemOptions fo;
    fo.drop_unsynced_dir_entries = true;
    fault_ = std::make_shared<io::FaultFileSystem>(std::make_shared<io::MemoryFileSystem>(), fo);
  }
  void Open() {
    auto db = OpenWithFileSystem(options_, "/db", fault_);
    ASSERT_OK(db.status());
    db_ = *std::move(db);
  }
  io::IoCategoryCounters Counters(io::IoCategory c) { return fault_->stats().Get(c); }
  // A power loss (by default: everything not synced is gone); then the
  // database reopens.
  void PowerLossAndReopen(io::CrashMode mode = io::CrashMode::kDropUnsynced) {
    fault_->SetFilesystemActive(false);
    db_.reset();
    ASSERT_OK(fault_->SimulateCrash(mode, /*seed=*/5));
    Open();
  }
  void ExpectModel() {
    for (const auto& [k, v] : model_) {
      std::string got;
      ASSERT_OK(db_->Get({}, k, &got)) << k;
      EXPECT_TRUE(got == v) << k;
    }
  }

  Options options_ = SeparatedOptions(Compression::kNone);
  std::shared_ptr<io::FaultFileSystem> fault_;
  std::unique_ptr<DB> db_;
  std::map<std::string, std::string> model_;
};

TEST_F(SyncedValuesTest, SmallValuesGoInTheWalAndOnlyTheWalIsSynced) {
  Open();
  WriteOptions sync;
  sync.sync = true;
  // The first write creates the segment, whose header is synced then.
  model_["first"] = RandomValue(1000, 4096);
  ASSERT_OK(db_->Put(sync, "first", model_["first"]));
  const io::IoCategoryCounters vlog_before = Counters(io::IoCategory::kValueLog);
  const io::IoCategoryCounters wal_before = Counters(io::IoCategory::kWal);
  for (int i = 0; i < 20; ++i) {
    const std::string k = absl::StrCat("key", i);
    model_[k] = RandomValue(i, 4096);
    ASSERT_OK(db_->Put(sync, k, model_[k]));
  }
  // The values went to the value log and, with their keys, to the WAL; only
  // the WAL was synced, once per write.
  EXPECT_EQ(Counters(io::IoCategory::kValueLog).sync_ops, vlog_before.sync_ops);
  EXPECT_GE(Counters(io::IoCategory::kValueLog).bytes_written - vlog_before.bytes_written,
            20u * 4096);
  EXPECT_GE(Counters(io::IoCategory::kWal).bytes_written - wal_before.bytes_written, 20u * 4096);
  EXPECT_GE(Counters(io::IoCategory::kWal).sync_ops - wal_before.sync_ops, 20u);

  PowerLossAndReopen();
  ExpectModel();
  // The database goes on.
  model_["more"] = RandomValue(99, 4096);
  ASSERT_OK(db_->Put({}, "more", model_["more"]));
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  ASSERT_OK(db_->RunGC().status());
  db_.reset();
  Open();
  ExpectModel();
}

TEST_F(SyncedValuesTest, CopiesInTheValueLogThatSurviveACrashCountAsGarbage) {
  Open();
  WriteOptions sync;
  sync.sync = true;
  for (int i = 0; i < 20; ++i) {
    const std::string k = absl::StrCat("key", i);
    model_[k] = RandomValue(i, 4096);
    ASSERT_OK(db_->Put(sync, k, model_[k]));
  }
  // A process crash: the value log keeps its copies, but the WAL (replayed
  // with the values it carries) is what the LSM names now.
  PowerLossAndReopen(io::CrashMode::kKeepRandomPrefix);
  ExpectModel();
  EXPECT_GT(db_->GetStats().gc_recounted_bytes, 0u);
  db_.reset();
  Open();
  ExpectModel();
  EXPECT_EQ(db_->GetStats().gc_recounted_bytes, 0u);  // counted once, in the manifest
}

TEST_F(SyncedValuesTest, ASyncAfterWritesThatPointIntoTheValueLogSyncsItToo) {
  Open();
  for (int i = 0; i < 30; ++i) {
    const std::string k = absl::StrCat("key", i);
    model_[k] = RandomValue(i, 2048);
    ASSERT_OK(db_->Put({}, k, model_[k]));
  }
  const uint64_t vlog_syncs = Counters(io::IoCategory::kValueLog).sync_ops;
  WriteOptions sync;
  sync.sync = true;
  model_["synced"] = RandomValue(100, 4096);
  ASSERT_OK(db_->Put(sync, "synced", model_["synced"]));
  // The WAL records before it point to values not yet synced.
  EXPECT_GT(Counters(io::IoCategory::kValueLog).sync_ops, vlog_syncs);
  // Every write before the synced one survives with it: no holes.
  PowerLossAndReopen();
  ExpectModel();
}

TEST_F(SyncedValuesTest, LargeSyncedValuesSyncTheValueLogInstead) {
  Open();
  const io::IoCategoryCounters vlog_before = Counters(io::IoCategory::kValueLog);
  const uint64_t wal_bytes = Counters(io::IoCategory::kWal).bytes_written;
  WriteOptions sync;
  sync.sync = true;
  model_["big"] = RandomValue(7, 512 << 10);
  ASSERT_OK(db_->Put(sync, "big", model_["big"]));
  EXPECT_GT(Counters(io::IoCategory::kValueLog).sync_ops, vlog_before.sync_ops);
  EXPECT_LT(Counters(io::IoCategory::kWal).bytes_written - wal_bytes, 4096u);
  PowerLossAndReopen();
  ExpectModel();
}

TEST(DbWriteTest, ConcurrentWritersCutOffByAFailureLeaveOnlyIntactValues) {
  auto fault = std::make_shared<io::FaultFileSystem>(std::make_shared<io::MemoryFileSystem>());
  const Options o = SeparatedOptions(Compression::kZstd);
  auto db = OpenWithFileSystem(o, "/db", fault);
  ASSERT_OK(db.status());

  constexpr int kWriters = 4, kPuts = 60;
  auto value = [](int w, int i) {
    return i % 3 == 0 ? RandomValue(w * 1000 + i, 3000)
           : i % 3 == 1 ? CompressibleValue(w * 1000 + i, 5000)
                        : std::string("inline");
  };
  std::vector<std::vector<bool>> acked(kWriters, std::vector<bool>(kPuts, false));
  std::atomic<int> done{0};
  absl::Notification armed;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kPuts; ++i) {
        acked[w][i] = (*db)->Put({}, absl::StrCat("w", w, "/", i), value(w, i)).ok();
        if (i == kPuts / 3) {
          // Wait for the fault, so that no writer can finish before it.
          done.fetch_add(1);
          armed.WaitForNotification();
        }
      }
    });
  }
  // A third of the way in, every write starts failing: the group in
  // flight fails, and the DB stops (fail-stop).
  while (done.load() < kWriters) absl::SleepFor(absl::Microseconds(100));
  fault->FailAfter(3, io::InjectedIoError("group write"), io::FaultKind::kAnyWrite,
                   /*persistent=*/true);
  armed.Notify();
  for (std::thread& t : writers) t.join();
  int failed = 0;
  for (const auto& a : acked) failed += static_cast<int>(std::count(a.begin(), a.end(), false));
  EXPECT_GT(failed, 0);

  db->reset();
  fault->ClearFaults();
  db = OpenWithFileSystem(o, "/db", fault);
  ASSERT_OK(db.status());
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < kPuts; ++i) {
      const std::string key = absl::StrCat("w", w, "/", i);
      std::string v;
      absl::Status s = (*db)->Get({}, key, &v);
      if (acked[w][i]) {
        ASSERT_OK(s) << key;
        EXPECT_EQ(v, value(w, i)) << key;
      } else if (s.ok()) {
        // Not acknowledged, yet its WAL record may have been written
        // before the failure: then its value is whole.
        EXPECT_EQ(v, value(w, i)) << key;
      } else {
        EXPECT_TRUE(absl::IsNotFound(s)) << key << ": " << s;
      }
    }
  }
}


// A memory file system that records the writeback setting each file was
// created with.
class WritebackRecordingFileSystem : public io::MemoryFileSystem {
 public:
  absl::StatusOr<std::unique_ptr<io::WritableFile>> NewWritableFile(
      const std::string& path, const io::FileOptions& options) override {
    {
      absl::MutexLock l(&mu_);
      writeback_[path] = options.writeback_bytes;
    }
    return MemoryFileSystem::NewWritableFile(path, options);
  }
  // Every file whose name ends with suffix, and its writeback setting.
  std::map<std::string, uint64_t> Files(absl::string_view suffix) {
    absl::MutexLock l(&mu_);
    std::map<std::string, uint64_t> out;
    for (const auto& [path, bytes] : writeback_) {
      if (absl::EndsWith(path, suffix)) out[path] = bytes;
    }
    return out;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, uint64_t> writeback_;
};

// Param: whether values are separated at flush (the WAL carries them) or as
// written.
class WritebackTest : public ::testing::TestWithParam<size_t> {};

TEST_P(WritebackTest, WalsAndSegmentsStartWritebackAtTheirOwnSetting) {
  auto fs = std::make_shared<WritebackRecordingFileSystem>();
  Options o = SeparatedOptions(Compression::kNone);
  o.separate_at_flush_below = GetParam();
  o.file_system = fs;
  o.wal_bytes_per_sync = 3 << 20;
  o.value_log_bytes_per_sync = 5 << 20;
  {
    absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(o, "/db");
    ASSERT_OK(db.status());
    for (int i = 0; i < 64; ++i) {
      ASSERT_OK((*db)->Put(WriteOptions(), absl::StrCat("key", i), RandomValue(i, 4096)));
    }
    ASSERT_OK((*db)->Flush());  // a new WAL, and the flush's own segments
    ASSERT_OK((*db)->Put(WriteOptions(), "after", RandomValue(99, 4096)));
  }
  const std::map<std::string, uint64_t> wals = fs->Files(".log");
  const std::map<std::string, uint64_t> segments = fs->Files(".vlog");
  EXPECT_GE(wals.size(), 2u);  // the open's WAL and the flush's new one
  EXPECT_GE(segments.size(), 1u);
  for (const auto& [path, bytes] : wals) EXPECT_EQ(bytes, uint64_t{3} << 20) << path;
  for (const auto& [path, bytes] : segments) EXPECT_EQ(bytes, uint64_t{5} << 20) << path;

  // 0 turns the WAL's off and leaves the value log's alone.
  auto fs0 = std::make_shared<WritebackRecordingFileSystem>();
  o.file_system = fs0;
  o.wal_bytes_per_sync = 0;
  {
    absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(o, "/db");
    ASSERT_OK(db.status());
    ASSERT_OK((*db)->Put(WriteOptions(), "k", RandomValue(1, 4096)));
    ASSERT_OK((*db)->Flush());
  }
  EXPECT_FALSE(fs0->Files(".log").empty());
  for (const auto& [path, bytes] : fs0->Files(".log")) EXPECT_EQ(bytes, 0u) << path;
  for (const auto& [path, bytes] : fs0->Files(".vlog")) EXPECT_EQ(bytes, uint64_t{5} << 20) << path;
}

INSTANTIATE_TEST_SUITE_P(Placement, WritebackTest, ::testing::Values(size_t{0}, size_t{16} << 10),
                         [](const auto& info) {
                           return info.param == 0 ? std::string("AsWritten")
                                                  : std::string("AtFlush");
                         });

}  // namespace
}  // namespace cairn
