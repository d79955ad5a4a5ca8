#include "cairn/db.h"

#include <filesystem>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"

namespace cairn {
namespace {

Options SmallOptions() {
  Options o;
  o.memtable_size = 64 << 10;
  o.block_size = 1024;
  o.target_file_size = 64 << 10;
  return o;
}

class DBTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = std::make_shared<io::MemoryFileSystem>();
    Reopen();
  }

  void Reopen(const Options& options = SmallOptions()) {
    db_.reset();
    auto db = OpenWithFileSystem(options, "/db", fs_);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
  }

  std::string Get(std::string_view key, const Snapshot* snap = nullptr) {
    ReadOptions ro;
    ro.snapshot = snap;
    std::string v;
    absl::Status s = db_->Get(ro, key, &v);
    if (absl::IsNotFound(s)) return "NOT_FOUND";
    if (!s.ok()) return std::string(s.message());
    return v;
  }

  std::string Scan() {
    std::string out;
    auto it = db_->NewIterator(ReadOptions());
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      out += std::string(it->key()) + "=" + std::string(it->value()) + ";";
    }
    EXPECT_TRUE(it->status().ok()) << it->status();
    return out;
  }

  std::shared_ptr<io::MemoryFileSystem> fs_;
  std::unique_ptr<DB> db_;
};

TEST_F(DBTest, PutGetDelete) {
  ASSERT_TRUE(db_->Put({}, "a", "1").ok());
  ASSERT_TRUE(db_->Put({}, "b", "2").ok());
  EXPECT_EQ(Get("a"), "1");
  EXPECT_EQ(Get("b"), "2");
  EXPECT_EQ(Get("c"), "NOT_FOUND");
  ASSERT_TRUE(db_->Put({}, "a", "3").ok());
  EXPECT_EQ(Get("a"), "3");
  ASSERT_TRUE(db_->Delete({}, "a").ok());
  EXPECT_EQ(Get("a"), "NOT_FOUND");
  EXPECT_EQ(Scan(), "b=2;");
}

TEST_F(DBTest, EmptyKeyIsAllowedAndSortsFirst) {
  ASSERT_TRUE(db_->Put({}, "", "empty").ok());
  ASSERT_TRUE(db_->Put({}, "a", "1").ok());
  EXPECT_EQ(Get(""), "empty");
  EXPECT_EQ(Scan(), "=empty;a=1;");
  auto it = db_->NewIterator(ReadOptions());
  it->Seek("");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "");
  ASSERT_TRUE(db_->Delete({}, "").ok());
  EXPECT_EQ(Get(""), "NOT_FOUND");
  ASSERT_TRUE(db_->Flush().ok());
  EXPECT_EQ(Scan(), "a=1;");
}

TEST_F(DBTest, OversizeKeyAndValueAreRejectedBeforeAnyIo) {
  const uint64_t wal_before = fs_->stats().Get(io::IoCategory::kWal).bytes_written;
  EXPECT_TRUE(db_->Put({}, std::string(kMaxKeySize - 1, 'k'), "v").ok());
  EXPECT_TRUE(db_->Put({}, std::string(kMaxKeySize, 'k'), "v").ok());
  const uint64_t wal_mid = fs_->stats().Get(io::IoCategory::kWal).bytes_written;
  EXPECT_GT(wal_mid, wal_before);
  absl::Status s = db_->Put({}, std::string(kMaxKeySize + 1, 'k'), "v");
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::IsInvalidArgument(db_->Delete({}, std::string(kMaxKeySize + 1, 'k'))));
  std::string v;
  EXPECT_TRUE(absl::IsInvalidArgument(db_->Get({}, std::string(kMaxKeySize + 1, 'k'), &v)));
  WriteBatch big;
  big.Put("k", std::string_view(nullptr, 0));
  big.Put("k2", std::string(16, 'x'));
  EXPECT_TRUE(db_->Write({}, big).ok());
  const uint64_t wal_after = fs_->stats().Get(io::IoCategory::kWal).bytes_written;
  EXPECT_GT(wal_after, wal_mid);
  std::string huge;
  huge.resize(kMaxValueSize + 1);
  EXPECT_TRUE(absl::IsInvalidArgument(db_->Put({}, "k", huge)));
  EXPECT_EQ(fs_->stats().Get(io::IoCategory::kWal).bytes_written, wal_after);
}

TEST_F(DBTest, WriteBatchIsAtomicAndOrdered) {
  WriteBatch b;
  b.Put("x", "1");
  b.Put("y", "2");
  b.Delete("x");
  b.Put("z", "3");
  ASSERT_TRUE(db_->Write({}, b).ok());
  EXPECT_EQ(Scan(), "y=2;z=3;");
  Reopen();
  EXPECT_EQ(Scan(), "y=2;z=3;");
}

TEST_F(DBTest, ValuesSurviveReopenFromWalAndTables) {
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(db_->Put({}, absl::StrFormat("key%06d", i), std::string(100, 'a' + i % 26)).ok());
  }
  ASSERT_TRUE(db_->Flush().ok());
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(db_->Put({}, absl::StrFormat("key%06d", i), "new").ok());
  }
  Reopen();
  for (int i = 0; i < 2000; ++i) {
    EXPECT_EQ(Get(absl::StrFormat("key%06d", i)), i < 500 ? "new" : std::string(100, 'a' + i % 26))
        << i;
  }
  std::string files;
  ASSERT_TRUE(db_->GetProperty("cairn.num-files-at-level0", &files));
  EXPECT_NE(files, "0");
}

TEST_F(DBTest, SnapshotSeesOldValuesAcrossFlush) {
  ASSERT_TRUE(db_->Put({}, "k", "v1").ok());
  const Snapshot* snap = db_->GetSnapshot();
  ASSERT_TRUE(db_->Put({}, "k", "v2").ok());
  ASSERT_TRUE(db_->Delete({}, "gone").ok());
  EXPECT_EQ(Get("k", snap), "v1");
  ASSERT_TRUE(db_->Flush().ok());
  EXPECT_EQ(Get("k", snap), "v1");
  EXPECT_EQ(Get("k"), "v2");
  ReadOptions ro;
  ro.snapshot = snap;
  auto it = db_->NewIterator(ro);
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "v1");
  db_->ReleaseSnapshot(snap);
}

TEST_F(DBTest, IteratorBothDirectionsAcrossSources) {
  std::map<std::string, std::string> model;
  for (int i = 0; i < 300; ++i) {
    std::string k = absl::StrFormat("k%04d", (i * 37) % 300);
    std::string v = absl::StrCat("v", i);
    ASSERT_TRUE(db_->Put({}, k, v).ok());
    model[k] = v;
    if (i % 100 == 99) {
      ASSERT_TRUE(db_->Flush().ok());
    }
    if (i % 7 == 0) {
      ASSERT_TRUE(db_->Delete({}, k).ok());
      model.erase(k);
    }
  }
  auto it = db_->NewIterator(ReadOptions());
  auto m = model.rbegin();
  for (it->SeekToLast(); it->Valid(); it->Prev(), ++m) {
    ASSERT_NE(m, model.rend());
    EXPECT_EQ(it->key(), m->first);
    EXPECT_EQ(it->value(), m->second);
  }
  EXPECT_EQ(m, model.rend());
  // Zig-zag: Seek, then alternate Next and Prev.
  it->Seek("k0150");
  auto mf = model.lower_bound("k0150");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), mf->first);
  it->Next();
  ++mf;
  EXPECT_EQ(it->key(), mf->first);
  it->Prev();
  --mf;
  EXPECT_EQ(it->key(), mf->first);
  it->Prev();
  --mf;
  EXPECT_EQ(it->key(), mf->first);
  it->Next();
  ++mf;
  EXPECT_EQ(it->key(), mf->first);
  it->SeekForPrev("k0150x");
  auto mp = std::prev(model.upper_bound("k0150x"));
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), mp->first);
}

TEST_F(DBTest, SecondOpenOfSamePathIsRefused) {
  auto second = OpenWithFileSystem(SmallOptions(), "/db", fs_);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
}

TEST_F(DBTest, CreateIfMissingAndErrorIfExists) {
  Options o = SmallOptions();
  o.create_if_missing = false;
  auto missing = OpenWithFileSystem(o, "/nodb", fs_);
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  db_.reset();
  o = SmallOptions();
  o.error_if_exists = true;
  auto exists = OpenWithFileSystem(o, "/db", fs_);
  EXPECT_TRUE(absl::IsAlreadyExists(exists.status())) << exists.status();
}

TEST_F(DBTest, NonDatabaseDirectoryIsRefusedAndLeftUntouched) {
  ASSERT_TRUE(fs_->CreateDir("/notdb").ok());
  ASSERT_TRUE(fs_->WriteFileFromString("/notdb/photo.jpg", "jpeg").ok());
  auto db = OpenWithFileSystem(SmallOptions(), "/notdb", fs_);
  EXPECT_TRUE(absl::IsFailedPrecondition(db.status())) << db.status();
  EXPECT_NE(db.status().message().find("not a cairn database"), std::string::npos);
  auto names = fs_->ListDir("/notdb");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 1u);
}

TEST_F(DBTest, CorruptCurrentIsDataLossNamingTheFile) {
  db_.reset();
  ASSERT_TRUE(fs_->WriteFileFromString("/db/CURRENT", "garbage").ok());
  auto db = OpenWithFileSystem(SmallOptions(), "/db", fs_);
  EXPECT_TRUE(absl::IsDataLoss(db.status())) << db.status();
  EXPECT_NE(db.status().message().find("CURRENT"), std::string::npos) << db.status();
}

TEST_F(DBTest, InvalidOptionsAreRejected) {
  Options o = SmallOptions();
  o.level0_stop_trigger = 1;
  EXPECT_TRUE(absl::IsInvalidArgument(OpenWithFileSystem(o, "/db2", fs_).status()));
  o = SmallOptions();
  o.memtable_size = 10;
  EXPECT_TRUE(absl::IsInvalidArgument(OpenWithFileSystem(o, "/db2", fs_).status()));
}

TEST_F(DBTest, ConcurrentWritersAllLand) {
  constexpr int kThreads = 4, kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < kPerThread; ++i) {
        WriteOptions wo;
        wo.sync = (i % 50 == 0);
        ASSERT_TRUE(db_->Put(wo, absl::StrFormat("t%d-%05d", t, i), std::string(200, 'v')).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  Reopen();
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      ASSERT_EQ(Get(absl::StrFormat("t%d-%05d", t, i)), std::string(200, 'v'));
    }
  }
}

TEST_F(DBTest, StatsCountUserAndDiskBytes) {
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(db_->Put({}, absl::StrFormat("key%06d", i), std::string(100, 'x')).ok());
  }
  ASSERT_TRUE(db_->Flush().ok());
  Stats st = db_->GetStats();
  EXPECT_EQ(st.puts, 1000u);
  EXPECT_EQ(st.user_bytes_written, 1000u * 109);
  EXPECT_GE(st.wal_bytes_written, st.user_bytes_written);
  EXPECT_GT(st.flush_bytes_written, 0u);
  EXPECT_GT(st.write_amplification, 1.0);
  EXPECT_EQ(st.io_backend, "memory");
  std::string text;
  ASSERT_TRUE(db_->GetProperty("cairn.stats", &text));
  EXPECT_NE(text.find("write amplification"), std::string::npos);
  std::string live;
  ASSERT_TRUE(db_->GetProperty("cairn.live-bytes", &live));
  EXPECT_EQ(live, absl::StrCat(1000 * 109));
  EXPECT_GT(db_->GetStats().space_amplification, 0.0);
  EXPECT_FALSE(db_->GetProperty("cairn.no-such-property", &text));
}

TEST(DBOpenTest, RealFileSystemRoundTrip) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/cairn_db_test_", getpid());
  std::filesystem::remove_all(dir);
  {
    auto db = DB::Open(SmallOptions(), dir);
    ASSERT_TRUE(db.ok()) << db.status();
    WriteOptions sync;
    sync.sync = true;
    ASSERT_TRUE((*db)->Put(sync, "hello", "world").ok());
    std::string backend;
    ASSERT_TRUE((*db)->GetProperty("cairn.io-backend", &backend));
    EXPECT_TRUE(backend == "io_uring" || backend == "posix") << backend;
    // A second open in the same process is refused.
    auto again = DB::Open(SmallOptions(), dir);
    EXPECT_TRUE(absl::IsFailedPrecondition(again.status())) << again.status();
  }
  {
    auto db = DB::Open(SmallOptions(), dir);
    ASSERT_TRUE(db.ok()) << db.status();
    std::string v;
    ASSERT_TRUE((*db)->Get({}, "hello", &v).ok());
    EXPECT_EQ(v, "world");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cairn
