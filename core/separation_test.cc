// Key-value separation through the DB: values at or above the threshold are
// written once to the value log, read back through pointers (Get, MultiGet,
// prefetching iterators), counted as garbage when compactions drop them, and
// checked (checksum and key) on every read.
#include <filesystem>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "lsm/filename.h"
#include "vlog/vlog_format.h"

namespace cairn {
namespace {

Options SeparatedOptions(size_t threshold = 1024) {
  Options o;
  o.memtable_size = 256 << 10;
  o.target_file_size = 128 << 10;
  o.value_separation_threshold = threshold;
  o.separate_at_flush_below = 0;  // separated as written (FlushSeparationTest: at flush)
  o.value_log_segment_size = 1 << 20;
  return o;
}

std::string Value(int i, size_t size) {
  std::string v(size, '\0');
  std::mt19937 rng(i);
  for (auto& c : v) c = static_cast<char>('a' + rng() % 26);
  return v;
}

std::vector<std::string> FilesOfType(io::FileSystem* fs, const std::string& dir, lsm::FileType t) {
  std::vector<std::string> out;
  auto names = fs->ListDir(dir);
  EXPECT_TRUE(names.ok());
  for (const auto& n : *names) {
    uint64_t num;
    lsm::FileType type;
    if (lsm::ParseFileName(n, &num, &type) && type == t) out.push_back(n);
  }
  return out;
}

TEST(SeparationTest, LargeValuesAreWrittenOnceToTheValueLog) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  auto db = OpenWithFileSystem(SeparatedOptions(), "/db", fs);
  ASSERT_TRUE(db.ok()) << db.status();
  constexpr int kN = 200;
  constexpr size_t kSize = 4096;
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE((*db)->Put({}, absl::StrFormat("key%05d", i), Value(i, kSize)).ok());
  }
  ASSERT_TRUE((*db)->Put({}, "small", "tiny value stays inline").ok());
  const Stats st = (*db)->GetStats();
  // Each value once in the value log (plus record headers and the segment
  // header); the WAL holds keys and ~10-byte pointers.
  EXPECT_GE(st.vlog_bytes_written, kN * kSize);
  EXPECT_LT(st.vlog_bytes_written, kN * (kSize + 64) + 4096);
  EXPECT_LT(st.wal_bytes_written, kN * 64 + 4096);
  for (int i = 0; i < kN; ++i) {
    std::string v;
    ASSERT_TRUE((*db)->Get({}, absl::StrFormat("key%05d", i), &v).ok());
    ASSERT_EQ(v, Value(i, kSize));
  }
  db->reset();
  db = OpenWithFileSystem(SeparatedOptions(), "/db", fs);
  ASSERT_TRUE(db.ok()) << db.status();
  std::string v;
  ASSERT_TRUE((*db)->Get({}, "key00042", &v).ok());
  EXPECT_EQ(v, Value(42, kSize));
  ASSERT_TRUE((*db)->Get({}, "small", &v).ok());
  EXPECT_EQ(v, "tiny value stays inline");
  EXPECT_FALSE(FilesOfType(fs.get(), "/db", lsm::FileType::kValueLog).empty());
}

TEST(SeparationTest, InlineModeNeverCreatesAValueLogFileYetReadsSeparatedData) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options inline_opts = SeparatedOptions(kInlineValues);
  {
    auto db = OpenWithFileSystem(inline_opts, "/inline", fs);
    ASSERT_TRUE(db.ok());
    for (int i = 0; i < 50; ++i) ASSERT_TRUE((*db)->Put({}, absl::StrCat(i), Value(i, 8192)).ok());
    ASSERT_TRUE((*db)->Flush().ok());
  }
  EXPECT_TRUE(FilesOfType(fs.get(), "/inline", lsm::FileType::kValueLog).empty());
  // A database written with separation still reads in inline mode.
  {
    auto db = OpenWithFileSystem(SeparatedOptions(0), "/sep", fs);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Put({}, "k", Value(1, 3000)).ok());
  }
  auto db = OpenWithFileSystem(inline_opts, "/sep", fs);
  ASSERT_TRUE(db.ok()) << db.status();
  std::string v;
  ASSERT_TRUE((*db)->Get({}, "k", &v).ok());
  EXPECT_EQ(v, Value(1, 3000));
}

class SeparationBackendTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SeparationBackendTest, MultiGetAndPrefetchingIteratorsReturnWhatGetReturns) {
  std::shared_ptr<io::FileSystem> fs;
  std::string dir = "/db";
  if (GetParam() == "memory") {
    fs = std::make_shared<io::MemoryFileSystem>();
  } else {
    setenv("CAIRN_IO", GetParam().c_str(), 1);
    auto real = io::NewFileSystem(io::IoBackend::kAuto);
    unsetenv("CAIRN_IO");
    ASSERT_TRUE(real.ok());
    fs = *real;
    dir = absl::StrCat(::testing::TempDir(), "/cairn_sep_", GetParam(), "_", getpid());
    std::filesystem::remove_all(dir);
  }
  Options o = SeparatedOptions(100);
  o.direct_reads = GetParam() != "memory";
  auto db = OpenWithFileSystem(o, dir, fs);
  ASSERT_TRUE(db.ok()) << db.status();
  std::map<std::string, std::string> model;
  std::mt19937 rng(7);
  for (int i = 0; i < 600; ++i) {
    const std::string k = absl::StrFormat("k%04d", rng() % 400);
    if (rng() % 6 == 0) {
      ASSERT_TRUE((*db)->Delete({}, k).ok());
      model.erase(k);
    } else {
      const std::string v = Value(i, rng() % 3 == 0 ? 50 : 100 + rng() % 5000);
      ASSERT_TRUE((*db)->Put({}, k, v).ok());
      model[k] = v;
    }
    if (i == 300) {
      ASSERT_TRUE((*db)->Flush().ok());
    }
  }
  std::vector<std::string> key_storage;
  for (int i = 0; i < 400; i += 3) key_storage.push_back(absl::StrFormat("k%04d", i));
  // A key asked for twice in one batch.
  for (int i = 0; i < 10; ++i) key_storage.push_back(key_storage[i * 7]);
  std::vector<std::string_view> keys(key_storage.begin(), key_storage.end());
  std::vector<std::string> values;
  std::vector<absl::Status> statuses = (*db)->MultiGet({}, keys, &values);
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string single;
    absl::Status s = (*db)->Get({}, keys[i], &single);
    ASSERT_EQ(s.code(), statuses[i].code()) << keys[i];
    if (s.ok()) {
      ASSERT_EQ(values[i], single);
    }
    auto m = model.find(key_storage[i]);
    ASSERT_EQ(m != model.end(), s.ok());
  }
  for (int depth : {1, 2, 32}) {
    ReadOptions ro;
    ro.value_prefetch_depth = depth;
    auto it = (*db)->NewIterator(ro);
    auto m = model.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
      ASSERT_NE(m, model.end());
      ASSERT_EQ(it->key(), m->first);
      ASSERT_EQ(it->value(), m->second) << "depth " << depth;
    }
    ASSERT_TRUE(it->status().ok()) << it->status();
    ASSERT_EQ(m, model.end());
    // Values asked for at some entries only (the window drops the others'
    // reads), and a turn back and forth: each value is still exact.
    m = model.begin();
    int step = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++m, ++step) {
      ASSERT_EQ(it->key(), m->first);
      if (step % 7 == 3) {
        it->Prev();
        ASSERT_TRUE(it->Valid());
        ASSERT_EQ(it->value(), std::prev(m)->second);
        it->Next();
      }
      if (step % 3 == 0 || step % 11 == 5) {
        ASSERT_EQ(it->value(), m->second) << "depth " << depth;
      }
    }
    ASSERT_TRUE(it->status().ok()) << it->status();
    // A seek, some Nexts, then back with Prev: prefetching stays correct.
    it->Seek("k0200");
    auto pos = model.lower_bound("k0200");
    for (int step = 0; step < 20 && pos != model.end(); ++step, ++pos, it->Next()) {
      ASSERT_TRUE(it->Valid());
      ASSERT_EQ(it->value(), pos->second);
    }
    for (int step = 0; step < 10 && pos != model.begin(); ++step) {
      it->Prev();
      --pos;
      ASSERT_TRUE(it->Valid());
      ASSERT_EQ(it->key(), pos->first);
      ASSERT_EQ(it->value(), pos->second);
    }
  }
  db->reset();
  if (GetParam() != "memory") std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Backends, SeparationBackendTest,
                         ::testing::Values("memory", "posix", "uring"));

TEST(SeparationTest, DamagedValueRecordIsDataLossNamingSegmentAndOffset) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  std::string seg;
  {
    auto db = OpenWithFileSystem(SeparatedOptions(), "/db", fs);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Put({}, "victim", Value(3, 5000)).ok());
    ASSERT_TRUE((*db)->Flush().ok());
    auto segs = FilesOfType(fs.get(), "/db", lsm::FileType::kValueLog);
    ASSERT_EQ(segs.size(), 1u);
    seg = segs[0];
    const std::string path = "/db/" + seg;
    auto contents = fs->ReadFileToString(path);
    ASSERT_TRUE(contents.ok());
    (*contents)[vlog::kSegmentHeaderSize + 100] ^= 0x40;  // inside the value
    ASSERT_TRUE(fs->WriteFileFromString(path, *contents).ok());
    std::string v;
    absl::Status s = (*db)->Get({}, "victim", &v);
    EXPECT_TRUE(absl::IsDataLoss(s)) << s;
    EXPECT_NE(s.message().find(seg), std::string::npos) << s;
    EXPECT_NE(s.message().find("offset"), std::string::npos) << s;
    // A scan never shows the entry: it stops there with the same error.
    auto it = (*db)->NewIterator({});
    it->SeekToFirst();
    EXPECT_FALSE(it->Valid());
    EXPECT_TRUE(absl::IsDataLoss(it->status())) << it->status();
    EXPECT_NE(it->status().message().find(seg), std::string::npos) << it->status();
    it->SeekToLast();
    EXPECT_FALSE(it->Valid());
    EXPECT_TRUE(absl::IsDataLoss(it->status())) << it->status();
  }
  // The segment is still being written, and the flush recorded that its
  // record was synced: the open refuses rather than cut it as a torn tail.
  auto db = OpenWithFileSystem(SeparatedOptions(), "/db", fs);
  ASSERT_FALSE(db.ok());
  EXPECT_TRUE(absl::IsDataLoss(db.status())) << db.status();
  EXPECT_NE(db.status().message().find(seg), std::string::npos) << db.status();
  EXPECT_NE(db.status().message().find("offset"), std::string::npos) << db.status();
}

TEST(SeparationTest, CompactionCountsDroppedPointersAsGarbage) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  auto db = OpenWithFileSystem(SeparatedOptions(), "/db", fs);
  ASSERT_TRUE(db.ok());
  constexpr int kN = 100;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kN; ++i) {
      ASSERT_TRUE((*db)->Put({}, absl::StrFormat("key%04d", i), Value(i + round, 2000)).ok());
    }
  }
  for (int i = 0; i < kN / 2; ++i) ASSERT_TRUE((*db)->Delete({}, absl::StrFormat("key%04d", i)).ok());
  ASSERT_TRUE((*db)->CompactRange(nullptr, nullptr).ok());
  const Stats st = (*db)->GetStats();
  // Two older versions of every key, plus the newest of the deleted half,
  // are garbage: 250 records of 2000 + 7 + 13 bytes.
  EXPECT_EQ(st.vlog_garbage_bytes, uint64_t{250} * vlog::RecordSize(7, 2000));
}

}  // namespace
}  // namespace cairn
