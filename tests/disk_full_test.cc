// Disk-full scenarios (docs/testing.md, "disk full"): ENOSPC, persistent, on every
// write through io::FaultFileSystem (FaultKind::kAnyWrite), while the engine
// writes the WAL, the value log (separated mode, values >= the threshold),
// and a flush or a compaction. In each the write fails with
// ResourceExhausted (or the sticky background error, which keeps the code),
// nothing of the failed write is visible, reads keep working, and once the
// space is back (ClearFaults), after a crash that drops unsynced bytes and a
// reopen, every synced write is there and the DB accepts writes again.
//
// GC needs room (DiskFullGcTest, separated mode): ENOSPC from the k-th write
// of a DB::RunGC on, for every k until a run meets no fault. RunGC returns
// ResourceExhausted; every acknowledged value reads back with the disk still
// full; `cairn check` on the files as they are finds no dangling pointer and
// nothing half-written that a pointer names (only orphans, which the next
// open deletes); foreground writes fail cleanly. Once the space is back, a
// crash and a reopen lose nothing, the check is clean (no orphan), and
// deleting data then running GC succeeds and gives the space back.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"
#include "lsm/filename.h"
#include "tests/check_tool.h"

namespace cairn {
namespace {

using Model = std::map<std::string, std::string>;

class DiskFullTest : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    base_ = std::make_shared<io::MemoryFileSystem>();
    fs_ = std::make_shared<io::FaultFileSystem>(base_);
  }

  Options MakeOptions() const {
    Options o;
    // No info log: it ignores its own write errors by design, so a fault
    // injected there would fail nothing the sweep could check.
    o.max_info_log_size = 0;
    o.memtable_size = 64 << 10;
    o.target_file_size = 64 << 10;
    o.level0_compaction_trigger = 8;  // compactions only when asked for
    o.level0_slowdown_trigger = 20;
    // No background GC, and so none of the L0 compactions that keep its
    // garbage counts current: a sweep counts writes, and a compaction that
    // starts after the flush under test took the fault in one run in ten.
    o.gc_space_amp_trigger = 0;
    o.value_separation_threshold = GetParam();
    if (small_segments_) {
      o.value_log_segment_size = 64 << 10;  // the least allowed: GC gets victims
    }
    return o;
  }

  void Open() {
    auto db = OpenWithFileSystem(MakeOptions(), "/db", fs_);
    ASSERT_OK(db);
    db_ = std::move(*db);
  }

  static std::string Value(int i, size_t len) {
    std::string v = absl::StrFormat("value%06d-", i);
    v.resize(len, static_cast<char>('a' + i % 26));
    return v;
  }

  // Writes n keys starting at first, with values of len bytes; the last one
  // synced, so every one of them must survive any crash.
  void Fill(int first, int n, size_t len) {
    for (int i = first; i < first + n; ++i) {
      const std::string key = absl::StrFormat("key%06d", i);
      const std::string value = Value(i, len);
      WriteOptions wo;
      wo.sync = i + 1 == first + n;
      ASSERT_OK(db_->Put(wo, key, value));
      model_[key] = value;
    }
  }

  void ExpectReadsWork() {
    for (const auto& [k, v] : model_) {
      std::string got;
      const absl::Status s = db_->Get(ReadOptions(), k, &got);
      ASSERT_TRUE(s.ok()) << "read of " << k << " with the disk full: " << s;
      ASSERT_EQ(got, v) << k;
    }
    EXPECT_EQ(Scan(), model_);
  }

  Model Scan() {
    Model m;
    auto it = db_->NewIterator(ReadOptions());
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      m.emplace(std::string(it->key()), std::string(it->value()));
    }
    EXPECT_OK(it->status());
    return m;
  }

  // A write now must fail with ResourceExhausted and leave nothing visible.
  void ExpectWritesFailCleanly(size_t value_len) {
    absl::Status s = db_->Put(WriteOptions(), "full-single", std::string(value_len, 'x'));
    EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
    WriteBatch batch;
    for (int i = 0; i < 4; ++i) batch.Put(absl::StrCat("full-batch", i), std::string(value_len, 'y'));
    batch.Delete("key000000");
    s = db_->Write(WriteOptions{.sync = true}, batch);
    EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
    std::string v;
    EXPECT_TRUE(absl::IsNotFound(db_->Get(ReadOptions(), "full-single", &v)));
    for (int i = 0; i < 4; ++i) {
      EXPECT_TRUE(absl::IsNotFound(db_->Get(ReadOptions(), absl::StrCat("full-batch", i), &v)));
    }
  }

  // Space comes back; the process dies; unsynced bytes are lost; reopen. The
  // state must be exactly the model (its last write was synced), and the DB
  // must take writes again.
  void RecoverAndCheck() {
    fs_->ClearFaults();
    fs_->SetFilesystemActive(false);
    db_.reset();
    ASSERT_OK(fs_->SimulateCrash(io::CrashMode::kDropUnsynced, 1));
    Open();
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(Scan(), model_);
    ASSERT_OK(db_->Put(WriteOptions{.sync = true}, "after", "space is back"));
    std::string v;
    ASSERT_OK(db_->Get(ReadOptions(), "after", &v));
    EXPECT_EQ(v, "space is back");
  }

  void FailEveryWrite() {
    fs_->FailAfter(0, io::InjectedNoSpaceError("disk full"), io::FaultKind::kAnyWrite,
                   /*persistent=*/true);
  }

  // Runs prepare, then work with ENOSPC from the k-th write on, on a fresh
  // database for every k until work meets no fault. Whenever a fault was
  // injected work must fail with ResourceExhausted, and nothing may be lost.
  template <typename Prepare, typename Work>
  void SweepFullDuring(Prepare prepare, Work work, int* cases) {
    for (uint64_t k = 0;; ++k) {
      SCOPED_TRACE(absl::StrCat("ENOSPC from write #", k));
      db_.reset();
      base_ = std::make_shared<io::MemoryFileSystem>();
      fs_ = std::make_shared<io::FaultFileSystem>(base_);
      model_.clear();
      prepare();
      if (HasFatalFailure()) return;
      fs_->FailAfter(k, io::InjectedNoSpaceError("disk full"), io::FaultKind::kAnyWrite,
                     /*persistent=*/true);
      const absl::Status s = work();
      if (fs_->faults_injected() == 0) {
        ASSERT_OK(s);
        return;
      }
      ++*cases;
      EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
      ExpectReadsWork();
      ExpectWritesFailCleanly(300);
      RecoverAndCheck();
      if (HasFatalFailure()) return;
    }
  }

  std::shared_ptr<io::MemoryFileSystem> base_;
  std::shared_ptr<io::FaultFileSystem> fs_;
  std::unique_ptr<DB> db_;
  Model model_;
  bool small_segments_ = false;
};

// Copies every file of /db, as the memory file system holds it now, to a
// directory on disk and runs the `cairn check` binary there (the checker
// lives in tools/ only).
CheckReport CheckCopy(io::FileSystem* fs, const std::string& name) {
  CheckReport r;
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      absl::StrFormat("cairn_disk_full_%d_%s", ::getpid(), name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  absl::StatusOr<std::vector<std::string>> names = fs->ListDir("/db");
  if (!names.ok()) {
    r.output = names.status().ToString();
    return r;
  }
  for (const std::string& file : *names) {
    auto in = fs->NewRandomAccessFile(absl::StrCat("/db/", file), io::FileOptions());
    absl::StatusOr<uint64_t> size = in.ok() ? (*in)->Size() : in.status();
    std::string bytes(size.ok() ? *size : 0, '\0');
    std::string_view got;
    absl::Status s = size.ok() ? (*in)->Read(0, bytes.size(), bytes.data(), &got) : size.status();
    // The database is open: its deleter may remove a file it made obsolete
    // (a collected segment) between the listing and the copy.
    if (absl::IsNotFound(s)) continue;
    if (!s.ok()) {
      r.output = absl::StrCat("copying ", file, ": ", s.ToString());
      return r;
    }
    std::ofstream(dir / file, std::ios::binary).write(got.data(), got.size());
  }
  r = RunCheckTool(dir.string());
  std::filesystem::remove_all(dir);
  return r;
}

// Live bytes of the value log on disk: the sizes of every segment file.
uint64_t SegmentBytes(io::FileSystem* fs) {
  uint64_t bytes = 0;
  absl::StatusOr<std::vector<std::string>> names = fs->ListDir("/db");
  if (!names.ok()) return 0;
  for (const std::string& name : *names) {
    uint64_t number;
    lsm::FileType type;
    if (lsm::ParseFileName(name, &number, &type) && type == lsm::FileType::kValueLog) {
      absl::StatusOr<uint64_t> size = fs->GetFileSize(absl::StrCat("/db/", name));
      if (size.ok()) bytes += *size;
    }
  }
  return bytes;
}

// GC needs room: only the separated mode has a value log to collect.
class DiskFullGcTest : public DiskFullTest {
 protected:
  DiskFullGcTest() { small_segments_ = true; }

  // 240 keys of 1,000 bytes (about four segments), then two keys in three
  // overwritten: the first segments are two thirds garbage, and their live
  // third must move to a GC output segment. Compacted so that the garbage is
  // counted; the last write synced.
  void FillWithGarbage() {
    Open();
    if (HasFatalFailure()) return;
    Fill(0, 240, 1000);
    for (int i = 0; i < 240; ++i) {
      if (i % 3 == 0) continue;
      const std::string key = absl::StrFormat("key%06d", i);
      const std::string value = Value(i + 1000, 1000);
      ASSERT_OK(db_->Put(WriteOptions{.sync = i == 239}, key, value));
      model_[key] = value;
    }
    ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  }

  // With the disk still full: the files as they are pass `cairn check`,
  // with at most leftovers the next open cleans up (an orphan GC output the
  // manifest never learnt of, which it deletes; segments off the ledger, a
  // sealed GC output whose write-back failed and whose garbage count the
  // full disk kept out of the manifest, which it counts): no dangling
  // pointer, no pointer into a half-written segment.
  void ExpectNothingHalfWrittenIsPointedTo() {
    const CheckReport r = CheckCopy(base_.get(), "full");
    ASSERT_GE(r.problems, 0) << r.output;
    EXPECT_EQ(r.problems, 0) << r.output;
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }

  // After space returns and the recovery: the data is deleted, GC runs and
  // the space comes back; then the closed database checks clean.
  void ExpectDeletingAndGcGiveSpaceBack() {
    const uint64_t before = SegmentBytes(base_.get());
    for (int i = 0; i < 200; ++i) {
      const std::string key = absl::StrFormat("key%06d", i);
      ASSERT_OK(db_->Delete(WriteOptions{.sync = i == 199}, key));
      model_.erase(key);
    }
    ASSERT_OK(db_->CompactRange(nullptr, nullptr));
    absl::StatusOr<GcResult> gc = db_->RunGC();
    ASSERT_TRUE(gc.ok()) << "GC once the space is back: " << gc.status();
    EXPECT_GT(gc->victims, 0u);
    EXPECT_GT(gc->segments_freed, 0u);
    const uint64_t after = SegmentBytes(base_.get());
    EXPECT_LT(after, before) << "GC gave no space back";
    model_["after"] = "space is back";
    EXPECT_EQ(Scan(), model_);
    db_.reset();
    const CheckReport r = CheckCopy(base_.get(), "recovered");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.orphans, 0) << r.output;
  }
};

TEST_P(DiskFullGcTest, FullWhileGcWritesItsOutputFailsCleanly) {
  ASSERT_TRUE(std::filesystem::exists(CAIRN_BINARY_DIR "/tools/cairn"))
      << "build the cairn_tool target first";
  int cases = 0;
  uint64_t gc_writes = 0;
  for (uint64_t k = 0;; ++k) {
    SCOPED_TRACE(absl::StrCat("ENOSPC from GC write #", k));
    db_.reset();
    base_ = std::make_shared<io::MemoryFileSystem>();
    fs_ = std::make_shared<io::FaultFileSystem>(base_);
    model_.clear();
    FillWithGarbage();
    if (HasFatalFailure()) return;
    fs_->FailAfter(k, io::InjectedNoSpaceError("disk full"), io::FaultKind::kAnyWrite,
                   /*persistent=*/true);
    const absl::StatusOr<GcResult> gc = db_->RunGC();
    if (fs_->faults_injected() == 0) {
      // Past the last write GC makes: the sweep is complete.
      ASSERT_OK(gc);
      ASSERT_GT(gc->victims, 0u) << "the set-up left GC nothing to collect";
      gc_writes = k;
      break;
    }
    ++cases;
    ASSERT_FALSE(gc.ok()) << "RunGC reported success though write #" << k << " failed";
    EXPECT_TRUE(absl::IsResourceExhausted(gc.status())) << gc.status();
    ExpectReadsWork();
    ExpectNothingHalfWrittenIsPointedTo();
    ExpectWritesFailCleanly(300);
    RecoverAndCheck();
    if (HasFatalFailure()) return;
    ExpectDeletingAndGcGiveSpaceBack();
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(cases, 0);
  std::printf("disk_full: GC sweep %d cases (GC makes %llu writes)\n", cases,
              static_cast<unsigned long long>(gc_writes));
}

// Overwrites with background GC until the disk is full (issue 63, item 5):
// 4 KiB values over 1 MiB segments, GC triggered early, ENOSPC (persistent)
// from write #k of any file on, or for that write alone, either as a short
// write or as none (k % 4 picks). Writes go on until one is refused; the DB is
// closed with the disk still full, the space comes back, and one reopen and
// close must leave every segment byte on the ledger: `cairn check` finds no
// problem and no segment off the ledger. k walks a range that covers every
// step of the write path, the flush, compactions and GC jobs.
class DiskFullOverwriteTest : public ::testing::Test {
 protected:
  static Options MakeOptions() {
    Options o;
    o.max_info_log_size = 0;  // as in DiskFullTest
    o.memtable_size = 256 << 10;
    o.value_log_segment_size = 1 << 20;
    o.gc_space_amp_trigger = 1.2;
    return o;
  }

  // One run with ENOSPC from write #k on; returns the check's report after
  // the reopen and close. *writes: the puts acknowledged before the refusal.
  CheckReport RunOnce(uint64_t k, int* writes) {
    auto base = std::make_shared<io::MemoryFileSystem>();
    auto fs = std::make_shared<io::FaultFileSystem>(base);
    {
      absl::StatusOr<std::unique_ptr<DB>> db = OpenWithFileSystem(MakeOptions(), "/db", fs);
      EXPECT_OK(db);
      if (!db.ok()) return {};
      // Persistent ENOSPC, one refused write (a real disk takes writes
      // again as GC frees space), or either as a short write.
      const int m = static_cast<int>(k % 4);
      fs->FailAfter(k, io::InjectedNoSpaceError("disk full"),
                    (m & 1) ? io::FaultKind::kShortWrite : io::FaultKind::kAnyWrite,
                    /*persistent=*/(m & 2) == 0);
      *writes = 0;
      for (int i = 0; i < 20000; ++i) {
        const std::string key = absl::StrFormat("key%04d", i % 100);
        const absl::Status s = (*db)->Put(WriteOptions(), key, std::string(4096, 'a' + i % 26));
        if (!s.ok()) {
          EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
          break;
        }
        ++*writes;
      }
    }  // closed with the disk still full
    fs->ClearFaults();
    {
      absl::StatusOr<std::unique_ptr<DB>> db = OpenWithFileSystem(MakeOptions(), "/db", fs);
      EXPECT_OK(db);
      if (!db.ok()) return {};
      // Half the runs close while GC may still be collecting (the close
      // cancels its job), half once background work is done.
      if ((k / 4) % 2 == 0) {
        EXPECT_OK((*db)->WaitForBackgroundWork());
      } else {
        ::usleep(static_cast<useconds_t>(k % 7) * 1000);
      }
    }
    return CheckCopy(base.get(), absl::StrCat("overwrite", k));
  }
};

TEST_F(DiskFullOverwriteTest, LedgerKeepsEveryRecordAfterTheReopen) {
  ASSERT_TRUE(std::filesystem::exists(CAIRN_BINARY_DIR "/tools/cairn"))
      << "build the cairn_tool target first";
  const char* l = std::getenv("CAIRN_LONG");
  const bool long_run = l != nullptr && std::string(l) == "1";
  const int runs = long_run ? 400 : 60;
  int failed = 0;
  for (int r = 0; r < runs; ++r) {
    const uint64_t k = 300 + static_cast<uint64_t>(r) * 149;
    SCOPED_TRACE(absl::StrCat("ENOSPC from write #", k));
    int writes = 0;
    const CheckReport report = RunOnce(k, &writes);
    const bool clean = report.exit_code == 0 && report.problems == 0 && report.unbalanced == 0;
    if (!clean) ++failed;
    EXPECT_TRUE(clean) << "after " << writes << " writes:\n" << report.output;
  }
  std::printf("disk_full: overwrite runs %d, %d with the ledger off\n", runs, failed);
}

// The same on a real file system that fills up (a 64 MiB ext4 image, say):
// CAIRN_DISK_FULL_DIR names a directory there. Each run writes a 4 MiB
// filler file, overwrites 4 KiB values with GC running until a write is
// refused, closes, removes the filler, reopens and closes, and runs `cairn
// check`. Knobs: CAIRN_DISK_FULL_RUNS (20), CAIRN_DISK_FULL_KEYS (6000),
// CAIRN_DF_THREADS (1 writer), CAIRN_DF_MIXED (values of 1-25 KiB),
// CAIRN_DF_SYNC (every fourth write synced), CAIRN_DF_DEFAULTS (default
// segment and memtable sizes), CAIRN_DISK_FULL_FREE_OPEN (the filler goes
// before the close), CAIRN_DF_WAIT (the reopen waits for background work).
TEST(DiskFullRealTest, LedgerKeepsEveryRecordAfterTheReopen) {
  const char* dir = std::getenv("CAIRN_DISK_FULL_DIR");
  if (dir == nullptr) GTEST_SKIP() << "set CAIRN_DISK_FULL_DIR to a small file system";
  const char* n = std::getenv("CAIRN_DISK_FULL_RUNS");
  const int runs = n != nullptr ? std::atoi(n) : 20;
  const char* kk = std::getenv("CAIRN_DISK_FULL_KEYS");
  const int keys = kk != nullptr ? std::atoi(kk) : 6000;
  const std::string db_dir = absl::StrCat(dir, "/db");
  const std::string filler = absl::StrCat(dir, "/filler");
  Options o;
  if (std::getenv("CAIRN_DF_DEFAULTS") == nullptr) {
    o.value_log_segment_size = 1 << 20;
    o.memtable_size = 1 << 20;
  }
  const bool sync = std::getenv("CAIRN_DF_SYNC") != nullptr;
  const bool mixed = std::getenv("CAIRN_DF_MIXED") != nullptr;
  int failed = 0;
  for (int r = 0; r < runs; ++r) {
    SCOPED_TRACE(absl::StrCat("run ", r));
    std::filesystem::remove_all(db_dir);
    std::filesystem::remove(filler);
    std::ofstream(filler, std::ios::binary) << std::string(4 << 20, 'f');
    int writes = 0;
    absl::Status refused;
    {
      absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(o, db_dir);
      ASSERT_OK(db);
      const char* t = std::getenv("CAIRN_DF_THREADS");
      const int threads = t != nullptr ? std::atoi(t) : 1;
      std::atomic<bool> stop{false};
      std::atomic<int> done{0};
      absl::Mutex refused_mu;
      std::vector<std::thread> writers;
      for (int w = 0; w < threads; ++w) {
        writers.emplace_back([&, w] {
          for (int i = w; i < 400000 && !stop.load(); i += threads) {
            const std::string key = absl::StrFormat("key%06d", (i * 7919) % keys);
            const size_t len = mixed ? 1024 + (i * 2654435761u) % (24 << 10) : 4096;
            absl::Status s = (*db)->Put(WriteOptions{.sync = sync && i % 4 == 0}, key,
                                        std::string(len, 'a' + i % 26));
            if (!s.ok()) {
              absl::MutexLock l(&refused_mu);
              refused = s;
              stop = true;
              break;
            }
            done.fetch_add(1);
          }
        });
      }
      for (std::thread& th : writers) th.join();
      writes = done.load();
      // Space comes back while the database is still open.
      if (std::getenv("CAIRN_DISK_FULL_FREE_OPEN") != nullptr) std::filesystem::remove(filler);
    }
    std::filesystem::remove(filler);
    {
      absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(o, db_dir);
      ASSERT_OK(db);
      if (std::getenv("CAIRN_DF_WAIT") != nullptr) {
        EXPECT_OK((*db)->WaitForBackgroundWork());
      }
    }
    const CheckReport report = RunCheckTool(db_dir);
    const bool clean = report.exit_code == 0 && report.problems == 0 && report.unbalanced == 0;
    if (!clean) ++failed;
    EXPECT_TRUE(clean) << report.output;
    std::printf("run %d: %d writes, refused: %s; check: exit %d, %d problems, %d off the ledger\n",
                r, writes, refused.ToString().c_str(), report.exit_code, report.problems,
                report.unbalanced);
  }
  std::printf("disk_full: real runs %d, %d with the ledger off\n", runs, failed);
}

TEST_P(DiskFullTest, FullWhileWritingTheWalFailsCleanly) {
  Open();
  Fill(0, 200, 40);  // below the threshold: WAL only
  FailEveryWrite();
  ExpectWritesFailCleanly(40);
  ExpectReadsWork();
  RecoverAndCheck();
}

TEST_P(DiskFullTest, FullWhileWritingLargeValuesFailsCleanly) {
  // Separated mode: the value log is written first, so it meets ENOSPC.
  Open();
  Fill(0, 40, 1000);
  FailEveryWrite();
  ExpectWritesFailCleanly(2000);
  ExpectReadsWork();
  RecoverAndCheck();
}

TEST_P(DiskFullTest, FullDuringFlushFailsCleanly) {
  int cases = 0;
  SweepFullDuring(
      [&] {
        Open();
        Fill(0, 150, 300);  // about 60 KiB: below one memtable
      },
      [&] { return db_->Flush(); }, &cases);
  std::printf("disk_full: flush sweep %d cases\n", cases);
}

TEST_P(DiskFullTest, FullDuringCompactionFailsCleanly) {
  int cases = 0;
  SweepFullDuring(
      [&] {
        Open();
        for (int round = 0; round < 3; ++round) {
          Fill(round * 100, 100, 300);
          ASSERT_OK(db_->Flush());
        }
      },
      [&] { return db_->CompactRange(nullptr, nullptr); }, &cases);
  std::printf("disk_full: compaction sweep %d cases\n", cases);
}

INSTANTIATE_TEST_SUITE_P(Modes, DiskFullTest, ::testing::Values(kInlineValues, size_t{100}),
                         [](const auto& info) {
                           return std::string(info.param == kInlineValues ? "inline"
                                                                          : "separated");
                         });

INSTANTIATE_TEST_SUITE_P(Separated, DiskFullGcTest, ::testing::Values(size_t{100}),
                         [](const auto&) { return std::string("separated"); });

}  // namespace
}  // namespace cairn
