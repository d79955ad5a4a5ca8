#include "io/fault_file_system.h"

#include <atomic>
#include <filesystem>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "io/dir_sync.h"
#include "io/memory_file_system.h"

namespace cairn::io {
namespace {

// Each test runs over the in-memory file system and over POSIX in a
// temporary directory: the wrapper must work through the interface alone.
class FaultFileSystemTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "memory") {
      base_ = std::make_shared<MemoryFileSystem>();
      dir_ = "/db";
    } else {
      auto fs = NewFileSystem(IoBackend::kPosix);
      ASSERT_TRUE(fs.ok()) << fs.status();
      base_ = *fs;
      const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
      // A parameterized test's name holds a '/' ("Name/posix"): one
      // directory, not two, so that TearDown removes all of it.
      tmp_root_ = std::filesystem::path(::testing::TempDir()) /
                  absl::StrReplaceAll(absl::StrCat("fault_fs_", getpid(), "_", info->name()),
                                      {{"/", "_"}});
      std::filesystem::remove_all(tmp_root_);
      std::filesystem::create_directories(tmp_root_);
      dir_ = (tmp_root_ / "db").string();
    }
    ASSERT_TRUE(base_->CreateDir(dir_).ok());
    fs_ = std::make_unique<FaultFileSystem>(base_);
  }

  void TearDown() override {
    if (!tmp_root_.empty()) std::filesystem::remove_all(tmp_root_);
  }

  void UseDirTracking() {
    fs_ = std::make_unique<FaultFileSystem>(base_,
                                            FaultFileSystemOptions{.drop_unsynced_dir_entries = true});
  }

  std::string Path(std::string_view name) const { return JoinPath(dir_, name); }

  // The whole file as the base holds it.
  std::string Contents(const std::string& path) const {
    auto file = base_->NewRandomAccessFile(path, FileOptions{});
    EXPECT_TRUE(file.ok()) << file.status();
    if (!file.ok()) return "";
    auto size = (*file)->Size();
    EXPECT_TRUE(size.ok());
    std::string buf(*size, '\0');
    std::string_view got;
    EXPECT_TRUE((*file)->Read(0, buf.size(), buf.data(), &got).ok());
    return std::string(got);
  }

  // Writes through the base, so the wrapper treats the file as durable.
  void WriteBaseFile(const std::string& path, std::string_view data) {
    auto f = base_->NewWritableFile(path, FileOptions{});
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->Append(data).ok());
    ASSERT_TRUE((*f)->Sync().ok());
    ASSERT_TRUE((*f)->Close().ok());
  }

  std::unique_ptr<WritableFile> NewFile(const std::string& path) {
    auto f = fs_->NewWritableFile(path, FileOptions{});
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() ? std::move(*f) : nullptr;
  }

  std::shared_ptr<FileSystem> base_;
  std::unique_ptr<FaultFileSystem> fs_;
  std::string dir_;
  std::filesystem::path tmp_root_;
};

TEST_P(FaultFileSystemTest, NameWrapsTheBaseAndStatsAreTheBases) {
  EXPECT_EQ(fs_->Name(), absl::StrCat("fault(", base_->Name(), ")"));
  EXPECT_EQ(&fs_->stats(), &base_->stats());
}

TEST_P(FaultFileSystemTest, StartSyncDirCoversEntriesCreatedBeforeItAndReportsItsError) {
  UseDirTracking();
  // Started once the file exists, the sync makes its entry durable while
  // the caller writes and syncs the file.
  auto f = NewFile(Path("named"));
  ASSERT_NE(f, nullptr);
  std::future<absl::Status> synced = StartSyncDir(fs_.get(), dir_);
  ASSERT_TRUE(f->Append("payload").ok());
  ASSERT_TRUE(f->Sync().ok());
  ASSERT_TRUE(synced.get().ok());
  ASSERT_TRUE(f->Close().ok());
  auto unsynced = NewFile(Path("never-synced-entry"));
  ASSERT_NE(unsynced, nullptr);
  ASSERT_TRUE(unsynced->Sync().ok());
  ASSERT_TRUE(unsynced->Close().ok());
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kPowerLoss, /*seed=*/1).ok());
  EXPECT_EQ(Contents(Path("named")), "payload");
  EXPECT_FALSE(base_->FileExists(Path("never-synced-entry")));
  // A failed sync is the future's status.
  fs_->FailAfter(0, InjectedIoError("dir sync"), FaultKind::kSync, /*persistent=*/false);
  EXPECT_FALSE(StartSyncDir(fs_.get(), dir_).get().ok());
}

TEST_P(FaultFileSystemTest, SyncedDataSurvivesEveryCrashMode) {
  UseDirTracking();
  for (CrashMode mode : {CrashMode::kDropUnsynced, CrashMode::kKeepRandomPrefix,
                         CrashMode::kTearLastWrite, CrashMode::kPowerLoss}) {
    const std::string path = Path(absl::StrCat("mode", static_cast<int>(mode)));
    auto f = NewFile(path);
    ASSERT_TRUE(fs_->SyncDir(dir_).ok());  // the file's name is durable
    ASSERT_TRUE(f->Append("durable-bytes").ok());
    ASSERT_TRUE(f->Sync().ok());
    ASSERT_TRUE(f->Append("maybe-lost").ok());
    ASSERT_TRUE(fs_->SimulateCrash(mode, 7).ok());
    const std::string got = Contents(path);
    EXPECT_EQ(got.substr(0, 13), "durable-bytes") << static_cast<int>(mode);
  }
}

TEST_P(FaultFileSystemTest, DropUnsyncedCutsEveryFileToItsLastSync) {
  auto a = NewFile(Path("a"));
  auto b = NewFile(Path("b"));
  ASSERT_TRUE(a->Append("aaaa").ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(a->Append("AAAA").ok());
  ASSERT_TRUE(a->Flush().ok());  // handed to the kernel, still not durable
  ASSERT_TRUE(b->Append("bbbb").ok());
  ASSERT_TRUE(b->Close().ok());  // closed, never synced
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 1).ok());
  EXPECT_EQ(Contents(Path("a")), "aaaa");
  EXPECT_EQ(Contents(Path("b")), "");
}

TEST_P(FaultFileSystemTest, KeepRandomPrefixKeepsSomePrefixChosenBySeed) {
  const std::string synced = "0123456789";
  const std::string unsynced(200, 'u');
  std::set<size_t> sizes;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::string first_image;
    for (int replay = 0; replay < 2; ++replay) {
      auto f = NewFile(Path("log"));
      ASSERT_TRUE(f->Append(synced).ok());
      ASSERT_TRUE(f->Sync().ok());
      ASSERT_TRUE(f->Append(unsynced).ok());
      ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kKeepRandomPrefix, seed).ok());
      const std::string got = Contents(Path("log"));
      ASSERT_GE(got.size(), synced.size());
      EXPECT_EQ(got, (synced + unsynced).substr(0, got.size()));
      if (replay == 0) first_image = got;
      else EXPECT_EQ(got, first_image) << "seed " << seed << " must replay exactly";
      sizes.insert(got.size());
    }
  }
  EXPECT_GE(sizes.size(), 5u) << "the kept prefix should vary with the seed";
}

TEST_P(FaultFileSystemTest, TearLastWriteTearsOnlyTheLastUnsyncedAppend) {
  const std::string a = "synced-record|";
  const std::string b = "unsynced-but-whole|";
  const std::string c(64, 'C');
  bool saw_zeros = false;
  bool saw_garbage = false;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    auto f = NewFile(Path("wal"));
    ASSERT_TRUE(f->Append(a).ok());
    ASSERT_TRUE(f->Sync().ok());
    ASSERT_TRUE(f->Append(b).ok());
    ASSERT_TRUE(f->Append(c).ok());
    ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kTearLastWrite, seed).ok());
    const std::string got = Contents(Path("wal"));
    ASSERT_EQ(got.size(), a.size() + b.size() + c.size());
    EXPECT_EQ(got.substr(0, a.size() + b.size()), a + b);
    const std::string tail = got.substr(a.size() + b.size());
    EXPECT_NE(tail, c) << "seed " << seed << ": the last append must be torn";
    const size_t kept = tail.find_first_not_of('C');
    ASSERT_NE(kept, std::string::npos);
    const std::string torn = tail.substr(kept);
    if (torn == std::string(torn.size(), '\0')) {
      saw_zeros = true;
    } else {
      saw_garbage = true;
    }
  }
  EXPECT_TRUE(saw_zeros);
  EXPECT_TRUE(saw_garbage);
}

TEST_P(FaultFileSystemTest, FilesNotWrittenThroughTheWrapperAreUntouched) {
  WriteBaseFile(Path("old"), "written before the wrapper");
  auto f = NewFile(Path("new"));
  ASSERT_TRUE(f->Append("x").ok());
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 3).ok());
  EXPECT_EQ(Contents(Path("old")), "written before the wrapper");
}

TEST_P(FaultFileSystemTest, ReopenedFileKeepsItsFoundBytesAndLosesNewOnes) {
  WriteBaseFile(Path("seg"), "found|");
  auto f = fs_->ReopenWritableFile(Path("seg"), FileOptions{});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->Size(), 6u);
  ASSERT_TRUE((*f)->Append("appended").ok());
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 3).ok());
  EXPECT_EQ(Contents(Path("seg")), "found|");
}

TEST_P(FaultFileSystemTest, CreatedFileWithoutDirSyncVanishesWhenTracked) {
  UseDirTracking();
  auto f = NewFile(Path("000005.log"));
  ASSERT_TRUE(f->Append("synced but not linked").ok());
  ASSERT_TRUE(f->Sync().ok());
  auto g = NewFile(Path("000006.log"));
  ASSERT_TRUE(g->Append("linked").ok());
  ASSERT_TRUE(g->Sync().ok());
  ASSERT_TRUE(fs_->SyncDir(dir_).ok());
  auto h = NewFile(Path("000007.log"));
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 5).ok());
  EXPECT_TRUE(base_->FileExists(Path("000005.log")));  // created before the sync
  EXPECT_TRUE(base_->FileExists(Path("000006.log")));
  EXPECT_FALSE(base_->FileExists(Path("000007.log")));
  EXPECT_EQ(Contents(Path("000006.log")), "linked");
}

TEST_P(FaultFileSystemTest, LinkIsACreateThatADirSyncMakesDurable) {
  UseDirTracking();
  WriteBaseFile(Path("000003.sst"), "table");
  ASSERT_TRUE(fs_->LinkFile(Path("000003.sst"), Path("000004.sst")).ok());
  ASSERT_TRUE(fs_->SyncDir(dir_).ok());
  ASSERT_TRUE(fs_->LinkFile(Path("000003.sst"), Path("000005.sst")).ok());
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 3).ok());
  EXPECT_EQ(Contents(Path("000004.sst")), "table");
  EXPECT_FALSE(base_->FileExists(Path("000005.sst")));
  EXPECT_TRUE(base_->FileExists(Path("000003.sst")));
}

TEST_P(FaultFileSystemTest, LinkFailsWhenAFaultFires) {
  WriteBaseFile(Path("000003.sst"), "table");
  fs_->FailAfter(0, InjectedIoError("link"), FaultKind::kAny, /*persistent=*/false);
  EXPECT_FALSE(fs_->LinkFile(Path("000003.sst"), Path("000004.sst")).ok());
  EXPECT_FALSE(base_->FileExists(Path("000004.sst")));
}

TEST_P(FaultFileSystemTest, PowerLossKeepsTheSyncedPrefixAndWholePagesOfTheRest) {
  UseDirTracking();
  ASSERT_TRUE(fs_->SyncDir(dir_).ok());
  // 1,000 synced bytes, then 10,000 unsynced: the cut lands at 1,000, at a
  // page boundary (4096, 8192) or at the end (11,000), nowhere else.
  std::string all(11000, '\0');
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<char>('a' + i % 26);
  std::set<size_t> sizes;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    auto f = NewFile(Path("log"));
    ASSERT_TRUE(fs_->SyncDir(dir_).ok());
    ASSERT_TRUE(f->Append(std::string_view(all).substr(0, 1000)).ok());
    ASSERT_TRUE(f->Sync().ok());
    ASSERT_TRUE(f->Append(std::string_view(all).substr(1000)).ok());
    ASSERT_TRUE(f->Flush().ok());
    ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kPowerLoss, seed).ok());
    const std::string got = Contents(Path("log"));
    EXPECT_EQ(got, all.substr(0, got.size())) << "seed " << seed;
    sizes.insert(got.size());
  }
  EXPECT_EQ(sizes, (std::set<size_t>{1000, 4096, 8192, 11000}));
}

TEST_P(FaultFileSystemTest, PowerLossUndoesCreatesAndRenamesNoDirSyncCovered) {
  UseDirTracking();
  auto a = NewFile(Path("a"));
  ASSERT_TRUE(a->Append("synced, linked").ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(fs_->SyncDir(dir_).ok());
  auto b = NewFile(Path("b.tmp"));
  ASSERT_TRUE(b->Append("synced, never linked").ok());
  ASSERT_TRUE(b->Sync().ok());
  ASSERT_TRUE(b->Close().ok());
  ASSERT_TRUE(fs_->RenameFile(Path("b.tmp"), Path("b")).ok());
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kPowerLoss, 3).ok());
  EXPECT_EQ(Contents(Path("a")), "synced, linked");
  EXPECT_FALSE(base_->FileExists(Path("b")));
  EXPECT_FALSE(base_->FileExists(Path("b.tmp")));
}

TEST_P(FaultFileSystemTest, PowerLossRefusesWithoutDirTracking) {
  EXPECT_TRUE(absl::IsInvalidArgument(fs_->SimulateCrash(CrashMode::kPowerLoss, 1)));
}

TEST_P(FaultFileSystemTest, CreatedFileSurvivesWhenDirTrackingIsOff) {
  auto f = NewFile(Path("000005.log"));
  ASSERT_TRUE(f->Append("synced").ok());
  ASSERT_TRUE(f->Sync().ok());
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 5).ok());
  EXPECT_EQ(Contents(Path("000005.log")), "synced");
}

TEST_P(FaultFileSystemTest, RenameWithoutDirSyncIsUndoneAndTheOldTargetReturns) {
  UseDirTracking();
  WriteBaseFile(Path("CURRENT"), "MANIFEST-000001\n");
  auto tmp = NewFile(Path("000002.tmp"));
  ASSERT_TRUE(tmp->Append("MANIFEST-000002\n").ok());
  ASSERT_TRUE(tmp->Sync().ok());
  ASSERT_TRUE(tmp->Close().ok());
  ASSERT_TRUE(fs_->RenameFile(Path("000002.tmp"), Path("CURRENT")).ok());
  EXPECT_EQ(Contents(Path("CURRENT")), "MANIFEST-000002\n");
  auto names = fs_->ListDir(dir_);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"CURRENT"});  // the trash is hidden

  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 9).ok());
  EXPECT_EQ(Contents(Path("CURRENT")), "MANIFEST-000001\n");
  EXPECT_FALSE(base_->FileExists(Path("000002.tmp")));
  names = base_->ListDir(dir_);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"CURRENT"});
}

TEST_P(FaultFileSystemTest, RenameFollowedByDirSyncIsDurable) {
  UseDirTracking();
  WriteBaseFile(Path("CURRENT"), "MANIFEST-000001\n");
  auto tmp = NewFile(Path("000002.tmp"));
  ASSERT_TRUE(tmp->Append("MANIFEST-000002\n").ok());
  ASSERT_TRUE(tmp->Sync().ok());
  ASSERT_TRUE(tmp->Close().ok());
  ASSERT_TRUE(fs_->RenameFile(Path("000002.tmp"), Path("CURRENT")).ok());
  ASSERT_TRUE(fs_->SyncDir(dir_).ok());
  auto names = base_->ListDir(dir_);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"CURRENT"});  // trash deleted
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 9).ok());
  EXPECT_EQ(Contents(Path("CURRENT")), "MANIFEST-000002\n");
}

TEST_P(FaultFileSystemTest, RemoveWithoutDirSyncIsUndone) {
  UseDirTracking();
  WriteBaseFile(Path("000003.vlog"), "old segment");
  WriteBaseFile(Path("000004.vlog"), "older segment");
  ASSERT_TRUE(fs_->RemoveFile(Path("000003.vlog")).ok());
  ASSERT_TRUE(fs_->RemoveFile(Path("000004.vlog")).ok());
  EXPECT_FALSE(fs_->FileExists(Path("000003.vlog")));
  EXPECT_TRUE(absl::IsNotFound(fs_->RemoveFile(Path("000003.vlog"))));
  auto names = fs_->ListDir(dir_);
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(names->empty());
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 2).ok());
  EXPECT_EQ(Contents(Path("000003.vlog")), "old segment");
  EXPECT_EQ(Contents(Path("000004.vlog")), "older segment");
}

TEST_P(FaultFileSystemTest, RemoveFollowedByDirSyncIsDurable) {
  UseDirTracking();
  WriteBaseFile(Path("000003.vlog"), "old segment");
  ASSERT_TRUE(fs_->RemoveFile(Path("000003.vlog")).ok());
  ASSERT_TRUE(fs_->SyncDir(dir_ + "/").ok());
  auto names = base_->ListDir(dir_);
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(names->empty());
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 2).ok());
  EXPECT_FALSE(base_->FileExists(Path("000003.vlog")));
}

TEST_P(FaultFileSystemTest, RemoveDirTakesThePendingTrashWithIt) {
  UseDirTracking();
  const std::string sub = Path("sub");
  ASSERT_TRUE(fs_->CreateDir(sub).ok());
  WriteBaseFile(JoinPath(sub, "f"), "x");
  ASSERT_TRUE(fs_->RemoveFile(JoinPath(sub, "f")).ok());
  EXPECT_TRUE(fs_->RemoveDir(sub).ok());
  EXPECT_FALSE(base_->FileExists(sub));
}

TEST_P(FaultFileSystemTest, FailAfterFiresOnceAtExactlyTheNextMatchingOp) {
  auto f = NewFile(Path("f"));
  fs_->FailAfter(2, InjectedIoError("append"), FaultKind::kAnyWrite, /*persistent=*/false);
  EXPECT_TRUE(f->Append("1").ok());
  EXPECT_TRUE(fs_->GetFileSize(Path("f")).ok());  // not a write: not counted
  EXPECT_TRUE(f->Append("2").ok());
  const absl::Status s = f->Append("3");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s, InjectedIoError("append"));
  EXPECT_TRUE(f->Append("4").ok());
  EXPECT_TRUE(f->Sync().ok());
  EXPECT_EQ(fs_->faults_injected(), 1u);
  EXPECT_EQ(f->Size(), 3u);  // the failed append wrote nothing
  ASSERT_TRUE(f->Close().ok());
  EXPECT_EQ(Contents(Path("f")), "124");
}

TEST_P(FaultFileSystemTest, PersistentFaultFailsEveryMatchingOpUntilCleared) {
  auto f = NewFile(Path("f"));
  fs_->FailAfter(1, InjectedNoSpaceError("append"), FaultKind::kAnyWrite, /*persistent=*/true);
  EXPECT_TRUE(f->Append("1").ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(absl::IsResourceExhausted(f->Append("x")));
  }
  EXPECT_TRUE(absl::IsResourceExhausted(f->Sync()));
  EXPECT_EQ(fs_->faults_injected(), 4u);
  fs_->ClearFaults();
  EXPECT_TRUE(f->Append("2").ok());
  EXPECT_TRUE(f->Close().ok());
  EXPECT_EQ(Contents(Path("f")), "12");
}

TEST_P(FaultFileSystemTest, FaultKindsMatchTheirOperations) {
  WriteBaseFile(Path("r"), "readable");
  auto reader = fs_->NewRandomAccessFile(Path("r"), FileOptions{});
  ASSERT_TRUE(reader.ok());
  auto f = NewFile(Path("w"));
  char buf[8];
  std::string_view got;

  fs_->FailAfter(0, InjectedIoError("read"), FaultKind::kRead, true);
  EXPECT_TRUE(f->Append("w").ok());
  EXPECT_TRUE(f->Sync().ok());
  EXPECT_FALSE((*reader)->Read(0, 4, buf, &got).ok());
  std::vector<ReadRequest> reqs(2);
  reqs[0] = {.offset = 0, .len = 4, .buf = buf};
  reqs[1] = {.offset = 4, .len = 4, .buf = buf + 4};
  EXPECT_FALSE((*reader)->MultiRead(absl::MakeSpan(reqs)).ok());
  EXPECT_FALSE(reqs[0].status.ok());
  EXPECT_FALSE(reqs[1].status.ok());

  fs_->FailAfter(0, InjectedIoError("sync"), FaultKind::kSync, true);
  EXPECT_TRUE((*reader)->Read(0, 4, buf, &got).ok());
  EXPECT_EQ(got, "read");
  EXPECT_TRUE(f->Append("w").ok());
  EXPECT_FALSE(f->Sync().ok());
  EXPECT_FALSE(fs_->SyncDir(dir_).ok());
  EXPECT_FALSE(fs_->SyncFiles({f.get()}).ok());

  fs_->FailAfter(0, InjectedIoError("meta"), FaultKind::kMetadata, true);
  EXPECT_TRUE(f->Append("w").ok());
  EXPECT_FALSE(fs_->NewWritableFile(Path("x"), FileOptions{}).ok());
  EXPECT_FALSE(fs_->RenameFile(Path("w"), Path("x")).ok());
  EXPECT_FALSE(fs_->ListDir(dir_).ok());

  fs_->FailAfter(3, InjectedIoError("any"), FaultKind::kAny, false);
  const uint64_t seen = fs_->ops_seen();
  EXPECT_TRUE((*reader)->Read(0, 4, buf, &got).ok());
  EXPECT_TRUE(f->Append("w").ok());
  EXPECT_TRUE(fs_->ListDir(dir_).ok());
  EXPECT_FALSE(fs_->SyncDir(dir_).ok());
  EXPECT_EQ(fs_->ops_seen(), seen + 4);
}

TEST_P(FaultFileSystemTest, ShortWriteLeavesOnlyAPrefixOfTheAppend) {
  auto f = NewFile(Path("f"));
  ASSERT_TRUE(f->Append("head|").ok());
  fs_->FailAfter(0, InjectedNoSpaceError("append"), FaultKind::kShortWrite, false);
  const absl::Status s = f->Append("0123456789");
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_EQ(f->Size(), 10u);
  ASSERT_TRUE(f->Close().ok());
  EXPECT_EQ(Contents(Path("f")), "head|01234");
}

TEST_P(FaultFileSystemTest, FailedSyncReturnsTheErrorButPoisonsNothing) {
  auto f = NewFile(Path("f"));
  ASSERT_TRUE(f->Append("data").ok());
  fs_->FailAfter(0, InjectedIoError("fsync"), FaultKind::kSync, false);
  EXPECT_FALSE(f->Sync().ok());
  EXPECT_TRUE(f->Append("more").ok());
  EXPECT_TRUE(f->Sync().ok());  // the wrapper itself is not fail-stop
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 1).ok());
  EXPECT_EQ(Contents(Path("f")), "datamore");
}

TEST_P(FaultFileSystemTest, FailedSyncMakesNothingDurable) {
  auto f = NewFile(Path("f"));
  ASSERT_TRUE(f->Append("data").ok());
  fs_->FailAfter(0, InjectedIoError("fsync"), FaultKind::kSync, false);
  EXPECT_FALSE(f->Sync().ok());
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 1).ok());
  EXPECT_EQ(Contents(Path("f")), "");
}

TEST_P(FaultFileSystemTest, SyncFilesSyncsEveryFile) {
  auto a = NewFile(Path("a"));
  auto b = NewFile(Path("b"));
  ASSERT_TRUE(a->Append("aa").ok());
  ASSERT_TRUE(b->Append("bb").ok());
  ASSERT_TRUE(fs_->SyncFiles({a.get(), b.get()}).ok());
  ASSERT_TRUE(a->Append("lost").ok());
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 1).ok());
  EXPECT_EQ(Contents(Path("a")), "aa");
  EXPECT_EQ(Contents(Path("b")), "bb");
}

TEST_P(FaultFileSystemTest, SyncFilesRefusesAForeignFile) {
  auto mine = NewFile(Path("a"));
  auto foreign = base_->NewWritableFile(Path("b"), FileOptions{});
  ASSERT_TRUE(foreign.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(fs_->SyncFiles({mine.get(), foreign->get()})));
}

TEST_P(FaultFileSystemTest, OpenFilesAndLocksDieWithTheCrash) {
  auto w = NewFile(Path("w"));
  ASSERT_TRUE(w->Append("abc").ok());
  ASSERT_TRUE(w->Sync().ok());
  auto r = fs_->NewRandomAccessFile(Path("w"), FileOptions{});
  ASSERT_TRUE(r.ok());
  auto lock = fs_->LockFile(Path("LOCK"));
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_FALSE(fs_->LockFile(Path("LOCK")).ok());

  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 1).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(w->Append("x")));
  EXPECT_TRUE(absl::IsFailedPrecondition(w->Sync()));
  EXPECT_TRUE(absl::IsFailedPrecondition(w->Close()));
  char buf[3];
  std::string_view got;
  EXPECT_TRUE(absl::IsFailedPrecondition((*r)->Read(0, 3, buf, &got)));
  auto relock = fs_->LockFile(Path("LOCK"));
  EXPECT_TRUE(relock.ok()) << relock.status();  // the dead process's lock is gone

  // The file system itself works on: a new file, a new crash.
  auto w2 = fs_->ReopenWritableFile(Path("w"), FileOptions{});
  ASSERT_TRUE(w2.ok());
  ASSERT_TRUE((*w2)->Append("def").ok());
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 2).ok());
  EXPECT_EQ(Contents(Path("w")), "abc");
}

TEST_P(FaultFileSystemTest, InactiveFileSystemRefusesMutationsButReads) {
  auto w = NewFile(Path("w"));
  ASSERT_TRUE(w->Append("abc").ok());
  ASSERT_TRUE(w->Sync().ok());
  fs_->SetFilesystemActive(false);
  EXPECT_TRUE(absl::IsUnavailable(w->Append("x")));
  EXPECT_TRUE(absl::IsUnavailable(w->Sync()));
  EXPECT_TRUE(absl::IsUnavailable(fs_->NewWritableFile(Path("n"), FileOptions{}).status()));
  EXPECT_TRUE(absl::IsUnavailable(fs_->RemoveFile(Path("w"))));
  auto r = fs_->NewRandomAccessFile(Path("w"), FileOptions{});
  ASSERT_TRUE(r.ok());
  char buf[3];
  std::string_view got;
  EXPECT_TRUE((*r)->Read(0, 3, buf, &got).ok());
  EXPECT_EQ(got, "abc");
  w.reset();  // the dead process's file goes away without effect
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 1).ok());
  EXPECT_EQ(Contents(Path("w")), "abc");
  EXPECT_TRUE(fs_->NewWritableFile(Path("n"), FileOptions{}).ok());  // active again
}

TEST_P(FaultFileSystemTest, CrashWaitsForWritersOnOtherThreads) {
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<WritableFile>> files;
  for (int t = 0; t < kThreads; ++t) files.push_back(NewFile(Path(absl::StrCat("t", t))));
  std::atomic<int> started{0};
  std::vector<uint64_t> synced(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ++started;
      for (int i = 0; i < 100000; ++i) {
        if (!files[t]->Append("0123456789abcdef").ok()) return;
        if (i % 8 == 7) {
          if (!files[t]->Sync().ok()) return;
          synced[t] = files[t]->Size();
        }
      }
    });
  }
  while (started.load() < kThreads) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs_->SimulateCrash(CrashMode::kDropUnsynced, 4).ok());
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    const std::string got = Contents(Path(absl::StrCat("t", t)));
    EXPECT_EQ(got.size(), synced[t]) << "thread " << t;
    EXPECT_EQ(got.size() % 16, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, FaultFileSystemTest, ::testing::Values("memory", "posix"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace cairn::io
