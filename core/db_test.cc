#include "cairn/db.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"
#include "lsm/filename.h"

namespace cairn {
namespace {

Options SmallOptions() {
  Options o;
  // Written for the 1 KiB default of before 2026-12-02: values from 1 KiB
  // are separated.
  o.value_separation_threshold = 1024;
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
    ASSERT_OK(db);
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
    EXPECT_OK(it->status());
    return out;
  }

  std::shared_ptr<io::MemoryFileSystem> fs_;
  std::unique_ptr<DB> db_;
};

TEST_F(DBTest, PutGetDelete) {
  ASSERT_OK(db_->Put({}, "a", "1"));
  ASSERT_OK(db_->Put({}, "b", "2"));
  EXPECT_EQ(Get("a"), "1");
  EXPECT_EQ(Get("b"), "2");
  EXPECT_EQ(Get("c"), "NOT_FOUND");
  ASSERT_OK(db_->Put({}, "a", "3"));
  EXPECT_EQ(Get("a"), "3");
  ASSERT_OK(db_->Delete({}, "a"));
  EXPECT_EQ(Get("a"), "NOT_FOUND");
  EXPECT_EQ(Scan(), "b=2;");
}

TEST_F(DBTest, EmptyKeyIsAllowedAndSortsFirst) {
  ASSERT_OK(db_->Put({}, "", "empty"));
  ASSERT_OK(db_->Put({}, "a", "1"));
  EXPECT_EQ(Get(""), "empty");
  EXPECT_EQ(Scan(), "=empty;a=1;");
  auto it = db_->NewIterator(ReadOptions());
  it->Seek("");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "");
  ASSERT_OK(db_->Delete({}, ""));
  EXPECT_EQ(Get(""), "NOT_FOUND");
  ASSERT_OK(db_->Flush());
  EXPECT_EQ(Scan(), "a=1;");
}

TEST_F(DBTest, OversizeKeyAndValueAreRejectedBeforeAnyIo) {
  const uint64_t wal_before = fs_->stats().Get(io::IoCategory::kWal).bytes_written;
  EXPECT_OK(db_->Put({}, std::string(kMaxKeySize - 1, 'k'), "v"));
  EXPECT_OK(db_->Put({}, std::string(kMaxKeySize, 'k'), "v"));
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
  EXPECT_OK(db_->Write({}, big));
  const uint64_t wal_after = fs_->stats().Get(io::IoCategory::kWal).bytes_written;
  EXPECT_GT(wal_after, wal_mid);
  std::string huge;
  huge.resize(kMaxValueSize + 1);
  EXPECT_TRUE(absl::IsInvalidArgument(db_->Put({}, "k", huge)));
  EXPECT_EQ(fs_->stats().Get(io::IoCategory::kWal).bytes_written, wal_after);
}

TEST_F(DBTest, WriteBatchRefusesOversizeKeysAndValuesWithoutCopyingThem) {
  WriteBatch b;
  b.Put(std::string(kMaxKeySize - 1, 'k'), "v");
  b.Put(std::string(kMaxKeySize, 'k'), "v");
  EXPECT_OK(b.status());
  EXPECT_EQ(b.Count(), 2u);
  const size_t size = b.ApproximateSize();
  b.Put(std::string(kMaxKeySize + 1, 'k'), "v");
  b.Delete(std::string(kMaxKeySize + 1, 'k'));
  EXPECT_TRUE(absl::IsInvalidArgument(b.status())) << b.status();
  EXPECT_NE(b.status().message().find("key of 65537 bytes"), std::string::npos) << b.status();
  EXPECT_EQ(b.Count(), 2u);
  EXPECT_EQ(b.ApproximateSize(), size);  // nothing of the refused updates was copied
  b.Put("after", "an error");  // later updates are kept; the batch still fails
  EXPECT_TRUE(absl::IsInvalidArgument(db_->Write({}, b)));
  EXPECT_EQ(Get("after"), "NOT_FOUND");  // none of the batch was applied

  // Values: one buffer, viewed at limit - 1, limit and limit + 1 bytes.
  std::string buffer(kMaxValueSize + 1, 'x');
  const std::string_view huge(buffer);
  for (size_t n : {kMaxValueSize - 1, kMaxValueSize}) {
    b.Clear();
    b.Put("k", huge.substr(0, n));
    EXPECT_OK(b.status()) << n;
    EXPECT_GT(b.ApproximateSize(), n);
  }
  b.Clear();
  EXPECT_OK(b.status());
  b.Put("k", huge);
  EXPECT_TRUE(absl::IsInvalidArgument(b.status())) << b.status();
  EXPECT_LT(b.ApproximateSize(), size_t{100});
  EXPECT_EQ(b.Count(), 0u);
  b.Clear();
  EXPECT_OK(b.status());
}

TEST_F(DBTest, ReleasingASnapshotTwiceOrAForeignOneDoesNothing) {
  ASSERT_OK(db_->Put({}, "k", "1"));
  const Snapshot* first = db_->GetSnapshot();
  const Snapshot* kept = db_->GetSnapshot();
  ASSERT_OK(db_->Put({}, "k", "2"));
  db_->ReleaseSnapshot(first);
  db_->ReleaseSnapshot(first);  // released already: ignored, no double free
  db_->ReleaseSnapshot(nullptr);
  auto other = OpenWithFileSystem(SmallOptions(), "/other", fs_);
  ASSERT_OK(other);
  const Snapshot* foreign = (*other)->GetSnapshot();
  db_->ReleaseSnapshot(foreign);  // not this DB's: ignored
  (*other)->ReleaseSnapshot(foreign);
  EXPECT_EQ(Get("k", kept), "1");  // the snapshot still held still pins "1"
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  EXPECT_EQ(Get("k", kept), "1");
  db_->ReleaseSnapshot(kept);
  EXPECT_EQ(Get("k"), "2");
  db_->GetSnapshot();  // never released: freed with the DB
}

TEST_F(DBTest, WriteBatchIsAtomicAndOrdered) {
  WriteBatch b;
  b.Put("x", "1");
  b.Put("y", "2");
  b.Delete("x");
  b.Put("z", "3");
  ASSERT_OK(db_->Write({}, b));
  EXPECT_EQ(Scan(), "y=2;z=3;");
  Reopen();
  EXPECT_EQ(Scan(), "y=2;z=3;");
}

TEST_F(DBTest, ValuesSurviveReopenFromWalAndTables) {
  for (int i = 0; i < 2000; ++i) {
    ASSERT_OK(db_->Put({}, absl::StrFormat("key%06d", i), std::string(100, 'a' + i % 26)));
  }
  ASSERT_OK(db_->Flush());
  for (int i = 0; i < 500; ++i) {
    ASSERT_OK(db_->Put({}, absl::StrFormat("key%06d", i), "new"));
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
  ASSERT_OK(db_->Put({}, "k", "v1"));
  const Snapshot* snap = db_->GetSnapshot();
  ASSERT_OK(db_->Put({}, "k", "v2"));
  ASSERT_OK(db_->Delete({}, "gone"));
  EXPECT_EQ(Get("k", snap), "v1");
  ASSERT_OK(db_->Flush());
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
    ASSERT_OK(db_->Put({}, k, v));
    model[k] = v;
    if (i % 100 == 99) {
      ASSERT_OK(db_->Flush());
    }
    if (i % 7 == 0) {
      ASSERT_OK(db_->Delete({}, k));
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
  ASSERT_OK(fs_->CreateDir("/notdb"));
  ASSERT_OK(fs_->WriteFileFromString("/notdb/photo.jpg", "jpeg"));
  auto db = OpenWithFileSystem(SmallOptions(), "/notdb", fs_);
  EXPECT_TRUE(absl::IsFailedPrecondition(db.status())) << db.status();
  EXPECT_NE(db.status().message().find("not a cairn database"), std::string::npos);
  auto names = fs_->ListDir("/notdb");
  ASSERT_OK(names);
  EXPECT_EQ(names->size(), 1u);
}

TEST_F(DBTest, CorruptCurrentIsDataLossNamingTheFile) {
  db_.reset();
  ASSERT_OK(fs_->WriteFileFromString("/db/CURRENT", "garbage"));
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

TEST_F(DBTest, NanAndOutOfRangeOptionsAreInvalidArgumentNamingTheOption) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    std::string name;  // the option the error must name
    std::function<void(Options&)> set;
  };
  const std::vector<Case> bad = {
      {"gc_min_garbage_ratio", [&](Options& o) { o.gc_min_garbage_ratio = nan; }},
      {"gc_min_garbage_ratio", [](Options& o) { o.gc_min_garbage_ratio = -0.01; }},
      {"gc_min_garbage_ratio", [](Options& o) { o.gc_min_garbage_ratio = 1.01; }},
      {"gc_space_amp_trigger", [&](Options& o) { o.gc_space_amp_trigger = nan; }},
      {"gc_space_amp_trigger", [&](Options& o) { o.gc_space_amp_trigger = inf; }},
      {"gc_space_amp_trigger", [](Options& o) { o.gc_space_amp_trigger = 1.0; }},
      {"gc_space_amp_trigger", [](Options& o) { o.gc_space_amp_trigger = -1; }},
      {"memtable_size", [](Options& o) { o.memtable_size = (64 << 10) - 1; }},
      {"memtable_size", [](Options& o) { o.memtable_size = (size_t{4} << 30) + 1; }},
      {"block_size", [](Options& o) { o.block_size = 255; }},
      {"block_size", [](Options& o) { o.block_size = (16 << 20) + 1; }},
      {"bloom_bits_per_key", [](Options& o) { o.bloom_bits_per_key = -1; }},
      {"bloom_bits_per_key", [](Options& o) { o.bloom_bits_per_key = 65; }},
      {"compression", [](Options& o) { o.compression = static_cast<Compression>(7); }},
      {"value_compression", [](Options& o) { o.value_compression = static_cast<Compression>(2); }},
      {"io_backend", [](Options& o) { o.io_backend = static_cast<IoBackendOption>(3); }},
      {"level0_compaction_trigger", [](Options& o) { o.level0_compaction_trigger = 0; }},
      {"level0_slowdown_trigger", [](Options& o) { o.level0_slowdown_trigger = 3; }},
      {"level0_stop_trigger", [](Options& o) { o.level0_stop_trigger = 19; }},
      {"level_size_multiplier", [](Options& o) { o.level_size_multiplier = 1; }},
      {"level_size_multiplier", [](Options& o) { o.level_size_multiplier = 1001; }},
      {"target_file_size", [](Options& o) { o.target_file_size = (64 << 10) - 1; }},
      {"soft_pending_compaction_bytes_limit",
       [](Options& o) {
         o.soft_pending_compaction_bytes_limit = o.hard_pending_compaction_bytes_limit + 1;
       }},
      {"max_background_gc", [](Options& o) { o.max_background_gc = 0; }},
      {"max_background_gc", [](Options& o) { o.max_background_gc = 17; }},
      {"gc_nice_adjustment", [](Options& o) { o.gc_nice_adjustment = -21; }},
      {"gc_nice_adjustment", [](Options& o) { o.gc_nice_adjustment = 20; }},
      {"max_background_compactions", [](Options& o) { o.max_background_compactions = 0; }},
      {"max_background_compactions", [](Options& o) { o.max_background_compactions = 65; }},
      {"max_subcompactions", [](Options& o) { o.max_subcompactions = 0; }},
      {"max_subcompactions", [](Options& o) { o.max_subcompactions = 65; }},
      {"compaction_readahead_size",
       [](Options& o) { o.compaction_readahead_size = kMaxReadaheadSize + 1; }},
      {"value_log_segment_size", [](Options& o) { o.value_log_segment_size = (64 << 10) - 1; }},
      {"value_log_segment_size",
       [](Options& o) { o.value_log_segment_size = (uint64_t{4} << 30) + 1; }},
      {"listeners", [](Options& o) { o.listeners.push_back(nullptr); }},
  };
  for (const Case& c : bad) {
    Options o = SmallOptions();
    c.set(o);
    absl::Status s = OpenWithFileSystem(o, "/bad", fs_).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.name << ": " << s;
    EXPECT_NE(s.message().find(c.name), std::string::npos) << c.name << ": " << s;
  }
  EXPECT_FALSE(fs_->FileExists("/bad"));  // refused before any I/O

  // The edges of each range are accepted.
  const std::vector<std::function<void(Options&)>> good = {
      [](Options& o) { o.gc_min_garbage_ratio = 0; },
      [](Options& o) { o.gc_min_garbage_ratio = 1; },
      [](Options& o) { o.gc_space_amp_trigger = 0; },
      [](Options& o) { o.gc_space_amp_trigger = 1.0001; },
      [](Options& o) { o.memtable_size = 64 << 10; },
      [](Options& o) { o.block_size = 256; },
      [](Options& o) { o.bloom_bits_per_key = 0; },
      [](Options& o) {
        o.level0_compaction_trigger = o.level0_slowdown_trigger = o.level0_stop_trigger = 1;
      },
      [](Options& o) { o.max_background_compactions = 64; },
      [](Options& o) { o.max_subcompactions = 1; },
      [](Options& o) { o.max_subcompactions = 64; },
      [](Options& o) { o.compaction_readahead_size = 0; },
      [](Options& o) { o.compaction_readahead_size = kMaxReadaheadSize; },
      [](Options& o) { o.hard_pending_compaction_bytes_limit = 0; },
  };
  for (size_t i = 0; i < good.size(); ++i) {
    Options o = SmallOptions();
    good[i](o);
    const std::string path = absl::StrCat("/good", i);
    EXPECT_OK(OpenWithFileSystem(o, path, fs_)) << i;
  }
}

// A pending-compaction limit of 0 is off, as in RocksDB: writes neither
// slow down nor stop for compaction debt (they used to stop for good).
TEST_F(DBTest, PendingCompactionLimitsOfZeroAreOff) {
  Options o = SmallOptions();
  o.soft_pending_compaction_bytes_limit = 0;
  o.hard_pending_compaction_bytes_limit = 0;
  Reopen(o);
  for (int i = 0; i < 200; ++i) {
    ASSERT_OK(db_->Put({}, absl::StrCat("k", i), std::string(500, 'v')));
  }
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->Put({}, "after", "v"));
  ASSERT_OK(db_->Flush());
  const Stats stats = db_->GetStats();
  EXPECT_EQ(stats.stall_slowdowns, 0u);
  EXPECT_EQ(stats.stall_stops, 0u);
}

// Tables are read in large reads by compactions (compaction_readahead_size)
// and by scans once they read blocks in order (ReadOptions::readahead_size),
// not a block at a time; every entry still comes back exactly.
TEST_F(DBTest, CompactionsAndScansReadTablesInLargeReads) {
  Options o = SmallOptions();
  o.value_separation_threshold = kInlineValues;
  o.cache_new_table_blocks = false;
  o.compression = Compression::kNone;
  o.memtable_size = 256 << 10;
  o.target_file_size = 4 << 20;
  Reopen(o);
  std::map<std::string, std::string> model;
  for (int i = 0; i < 4000; ++i) {
    const std::string key = absl::StrFormat("key%06d", (i * 7919) % 4000);
    model[key] = std::string(200, static_cast<char>('a' + i % 26));
    ASSERT_OK(db_->Put({}, key, model[key]));
  }
  std::string expected;
  for (const auto& [k, v] : model) expected += k + "=" + v + ";";
  ASSERT_OK(db_->Flush());
  const io::IoCategoryCounters before = fs_->stats().Get(io::IoCategory::kTable);
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  const io::IoCategoryCounters after = fs_->stats().Get(io::IoCategory::kTable);
  // About 900 KiB of 1 KiB blocks in several input files: without readahead
  // a read per block.
  EXPECT_LT(after.read_ops - before.read_ops, 100u);
  EXPECT_GT(after.bytes_read - before.bytes_read, 800u << 10);

  Reopen(o);  // an empty block cache
  ReadOptions ro;
  ro.fill_cache = false;
  const uint64_t scan_before = fs_->stats().Get(io::IoCategory::kTable).read_ops;
  std::string got;
  {
    auto it = db_->NewIterator(ro);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      got += std::string(it->key()) + "=" + std::string(it->value()) + ";";
    }
    ASSERT_OK(it->status());
  }
  EXPECT_TRUE(got == expected) << "the scan differs from what was put";
  EXPECT_LT(fs_->stats().Get(io::IoCategory::kTable).read_ops - scan_before, 100u);

  ro.readahead_size = kMaxReadaheadSize + 1;
  auto bad = db_->NewIterator(ro);
  bad->SeekToFirst();
  EXPECT_FALSE(bad->Valid());
  EXPECT_TRUE(absl::IsInvalidArgument(bad->status())) << bad->status();
}

TEST_F(DBTest, RegularFileAtThePathIsRefusedSayingWhatIsThere) {
  ASSERT_OK(fs_->WriteFileFromString("/plain", "hello"));
  absl::Status s = OpenWithFileSystem(SmallOptions(), "/plain", fs_).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("/plain: is a file (5 bytes), not a directory"), std::string::npos)
      << s;
  EXPECT_EQ(*fs_->ReadFileToString("/plain"), "hello");  // left untouched

  const std::string real =
      absl::StrCat(::testing::TempDir(), "/cairn_db_test_plain_file_", getpid());
  std::ofstream(real) << "hello";
  s = DB::Open(SmallOptions(), real).status();
  std::filesystem::remove(real);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("is a file (5 bytes), not a directory"), std::string::npos) << s;
}

// Flips a byte in the middle of the first value-log segment (sealed, so
// that reopening does not check it), so that one record in the middle of a
// scan no longer passes its checksum.
class DBCorruptValueTest : public DBTest, public ::testing::WithParamInterface<int> {
 protected:
  static Options SmallSegments() {
    Options o = SmallOptions();
    o.value_log_segment_size = 64 << 10;
    return o;
  }

  void CorruptTheFirstSegment() {
    auto names = fs_->ListDir("/db");
    ASSERT_OK(names);
    std::map<uint64_t, std::string> segments;
    for (const std::string& name : *names) {
      uint64_t number;
      lsm::FileType type;
      if (lsm::ParseFileName(name, &number, &type) && type == lsm::FileType::kValueLog) {
        segments[number] = "/db/" + name;
      }
    }
    ASSERT_GE(segments.size(), 2u);
    const std::string& segment = segments.begin()->second;
    auto contents = fs_->ReadFileToString(segment);
    ASSERT_OK(contents);
    (*contents)[contents->size() / 2] ^= 0x5a;
    ASSERT_OK(fs_->WriteFileFromString(segment, *contents));
  }
};

TEST_P(DBCorruptValueTest, ScanStopsWithDataLossAtAnUnreadableValueAndNeverShowsIt) {
  Reopen(SmallSegments());
  constexpr int kKeys = 80;  // about 30 records per segment
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_OK(db_->Put({}, absl::StrFormat("key%03d", i), std::string(2000, 'a' + i % 26)));
  }
  ASSERT_OK(db_->Flush());
  db_.reset();
  CorruptTheFirstSegment();
  Reopen(SmallSegments());

  for (bool backward : {false, true}) {
    ReadOptions ro;
    ro.value_prefetch_depth = GetParam();
    auto it = db_->NewIterator(ro);
    int seen = 0;
    if (backward) {
      for (it->SeekToLast(); it->Valid(); it->Prev(), ++seen) {
        EXPECT_EQ(it->value().size(), 2000u) << it->key();
      }
    } else {
      for (it->SeekToFirst(); it->Valid(); it->Next(), ++seen) {
        EXPECT_EQ(it->value().size(), 2000u) << it->key();
      }
    }
    EXPECT_GT(seen, 0) << backward;
    EXPECT_LT(seen, kKeys) << backward;  // stopped at the damaged record
    EXPECT_TRUE(absl::IsDataLoss(it->status())) << it->status();
    EXPECT_FALSE(it->Valid());
  }
}

INSTANTIATE_TEST_SUITE_P(PrefetchOnAndOff, DBCorruptValueTest, ::testing::Values(32, 1));

TEST_F(DBTest, ConcurrentWritersAllLand) {
  constexpr int kThreads = 4, kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < kPerThread; ++i) {
        WriteOptions wo;
        wo.sync = (i % 50 == 0);
        ASSERT_OK(db_->Put(wo, absl::StrFormat("t%d-%05d", t, i), std::string(200, 'v')));
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
    ASSERT_OK(db_->Put({}, absl::StrFormat("key%06d", i), std::string(100, 'x')));
  }
  ASSERT_OK(db_->Flush());
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

// Space amplification is over the whole directory: values still in the WAL
// take disk space as much as the tables' do, and a user's disk sees both.
TEST_F(DBTest, DiskBytesCountTheWholeDirectory) {
  for (int i = 0; i < 1000; ++i) {
    ASSERT_OK(db_->Put({}, absl::StrFormat("key%06d", i), std::string(100, 'x')));
  }
  ASSERT_OK(db_->Flush());
  std::string live;
  ASSERT_TRUE(db_->GetProperty("cairn.live-bytes", &live));
  // Writes after the flush are in the WAL (and the 64 KiB memtable) only.
  for (int i = 0; i < 40; ++i) {
    ASSERT_OK(db_->Put({}, absl::StrFormat("new%06d", i), std::string(1000, 'y')));
  }
  const Stats st = db_->GetStats();
  uint64_t files = 0;
  absl::StatusOr<std::vector<std::string>> names = fs_->ListDir("/db");
  ASSERT_OK(names);
  for (const std::string& name : *names) {
    absl::StatusOr<uint64_t> size = fs_->GetFileSize("/db/" + name);
    ASSERT_OK(size);
    files += *size;
  }
  EXPECT_EQ(st.disk_bytes, files);
  // The WAL holds the 40 newer puts: at least their bytes beyond the tables.
  EXPECT_GE(st.disk_bytes, st.sst_bytes + st.vlog_bytes + 40u * 1009);
  ASSERT_GT(st.live_user_bytes_estimate, 0u);
  EXPECT_DOUBLE_EQ(st.space_amplification, static_cast<double>(st.disk_bytes) /
                                               static_cast<double>(st.live_user_bytes_estimate));
  std::string text;
  ASSERT_TRUE(db_->GetProperty("cairn.stats", &text));
  EXPECT_NE(text.find("wal and other files"), std::string::npos) << text;
}

TEST(DBOpenTest, RealFileSystemRoundTrip) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/cairn_db_test_", getpid());
  std::filesystem::remove_all(dir);
  {
    auto db = DB::Open(SmallOptions(), dir);
    ASSERT_OK(db);
    WriteOptions sync;
    sync.sync = true;
    ASSERT_OK((*db)->Put(sync, "hello", "world"));
    std::string backend;
    ASSERT_TRUE((*db)->GetProperty("cairn.io-backend", &backend));
    EXPECT_TRUE(backend == "io_uring" || backend == "posix") << backend;
    // A second open in the same process is refused.
    auto again = DB::Open(SmallOptions(), dir);
    EXPECT_TRUE(absl::IsFailedPrecondition(again.status())) << again.status();
  }
  {
    auto db = DB::Open(SmallOptions(), dir);
    ASSERT_OK(db);
    std::string v;
    ASSERT_OK((*db)->Get({}, "hello", &v));
    EXPECT_EQ(v, "world");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cairn
