// cairn::RepairDB (cairn/repair.h) on each damage of the damage sweep's
// vocabulary (tests/damage_sweep_test.cc): a flipped byte in an SST, a cut
// segment, a deleted WAL, a damaged MANIFEST, a missing CURRENT. Each case
// must end in a database that opens, passes `cairn check`, holds the
// original value of every key not reported lost (nothing else: no wrong
// value, no resurrected key), and a report that names the damaged file;
// the originals must all be in lost/.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "cairn/repair.h"
#include "gtest/gtest.h"
#include "io/coding.h"
#include "io/file_system.h"
#include "io/testing/status_matchers.h"
#include "lsm/filename.h"
#include "lsm/log_format.h"
#include "lsm/log_reader.h"
#include "tests/check_tool.h"

namespace cairn {
namespace {

namespace fs = std::filesystem;

Options TestOptions() {
  Options o;
  // Room for the last 200 keys (about 55 KiB of entries) in one memtable,
  // with the arenas' slack; the 2,800 before them still flush many times.
  o.memtable_size = 128 << 10;
  o.target_file_size = 64 << 10;
  o.block_size = 1024;
  o.value_separation_threshold = 100;
  o.value_log_segment_size = 64 << 10;
  return o;
}

std::string Key(int i) { return absl::StrFormat("key%05d", i); }
std::string Value(int i) { return std::string(50 + (i * 37) % 400, static_cast<char>('a' + i % 26)); }

class RepairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("cairn_repair_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "db").string();
    // 3,000 keys: flushed into SSTs, values in several segments; the last
    // 200 only in the WAL (written after the last flush).
    auto db = DB::Open(TestOptions(), db_);
    ASSERT_OK(db);
    WriteOptions sync;
    sync.sync = true;
    for (int i = 0; i < kKeys; ++i) {
      if (i == kKeys - 200) {
        ASSERT_OK((*db)->Flush());
      }
      ASSERT_OK((*db)->Put(sync, Key(i), Value(i)));
    }
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::vector<fs::path> Files(lsm::FileType want) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(db_)) {
      uint64_t n;
      lsm::FileType t;
      if (lsm::ParseFileName(e.path().filename().string(), &n, &t) && t == want) {
        out.push_back(e.path());
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  static void FlipByte(const fs::path& p, uint64_t offset) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(c ^ 0x40));
  }

  // Repairs, then checks every claim of the file comment. Returns the
  // number of keys the rebuilt database lacks.
  int RepairAndVerify(std::string_view damaged_file) {
    RepairReport report;
    EXPECT_OK(RepairDB(TestOptions(), db_, &report));
    const std::string text = report.ToString();
    EXPECT_NE(text.find(std::string(damaged_file)), std::string::npos)
        << "the report does not name " << damaged_file << ":\n" << text;
    EXPECT_TRUE(fs::exists(report.report_path)) << report.report_path;
    EXPECT_TRUE(fs::exists(fs::path(report.lost_dir) / damaged_file) ||
                damaged_file == "CURRENT" || damaged_file.find(".log") != std::string::npos)
        << "the damaged file was not kept in " << report.lost_dir;
    int missing = 0;
    {
      auto db = DB::Open(TestOptions(), db_);
      EXPECT_OK(db);
      if (!db.ok()) return -1;
      std::map<std::string, std::string> got;
      auto it = (*db)->NewIterator(ReadOptions());
      for (it->SeekToFirst(); it->Valid(); it->Next()) got[std::string(it->key())] = it->value();
      EXPECT_OK(it->status());
      for (int i = 0; i < kKeys; ++i) {
        auto g = got.find(Key(i));
        if (g == got.end()) {
          ++missing;
          continue;
        }
        EXPECT_EQ(g->second, Value(i)) << Key(i);
        got.erase(g);
      }
      EXPECT_TRUE(got.empty()) << "unexpected key " << got.begin()->first;
      EXPECT_EQ(report.keys_salvaged, static_cast<uint64_t>(kKeys - missing));
    }
    CheckReport check = RunCheckTool(db_);
    EXPECT_EQ(check.problems, 0) << check.output;
    EXPECT_EQ(check.exit_code, 0) << check.output;
    std::printf("%s: %d of %d keys lost; report's first lines:\n%s\n",
                std::string(damaged_file).c_str(), missing, kKeys, text.substr(0, 600).c_str());
    return missing;
  }

  static constexpr int kKeys = 3000;
  fs::path dir_;
  std::string db_;
};

TEST_F(RepairTest, HealthyDatabaseKeepsEverything) {
  RepairReport report;
  ASSERT_OK(RepairDB(TestOptions(), db_, &report));
  EXPECT_TRUE(report.lost.empty()) << report.ToString();
  EXPECT_EQ(report.keys_salvaged, static_cast<uint64_t>(kKeys));
  auto db = DB::Open(TestOptions(), db_);
  ASSERT_OK(db);
  std::string v;
  ASSERT_OK((*db)->Get(ReadOptions(), Key(kKeys - 1), &v));
  EXPECT_EQ(v, Value(kKeys - 1));
}

TEST_F(RepairTest, FlippedByteInAnSstLosesOnlyThatTablesUnreadableEntries) {
  const std::vector<fs::path> tables = Files(lsm::FileType::kTable);
  ASSERT_FALSE(tables.empty());
  FlipByte(tables[0], 100);  // inside the first data block
  const int missing = RepairAndVerify(tables[0].filename().string());
  EXPECT_GT(missing, 0);
  EXPECT_LT(missing, kKeys / 2);
}

TEST_F(RepairTest, CutSegmentLosesTheValuesPastTheCutByKey) {
  const std::vector<fs::path> segments = Files(lsm::FileType::kValueLog);
  ASSERT_GE(segments.size(), 2u);
  fs::resize_file(segments[0], fs::file_size(segments[0]) / 2);
  const int missing = RepairAndVerify(segments[0].filename().string());
  EXPECT_GT(missing, 0);
  EXPECT_LT(missing, kKeys / 2);
}

TEST_F(RepairTest, DeletedWalIsNamedAndTheFlushedKeysRemain) {
  const std::vector<fs::path> wals = Files(lsm::FileType::kLog);
  ASSERT_FALSE(wals.empty());
  const std::string name = wals.back().filename().string();
  fs::remove(wals.back());
  EXPECT_EQ(RepairAndVerify(name), 200);  // exactly the keys written after the flush
}

// A table the whole manifest lists but the directory lacks: the report
// names it with its key range, the keys the operator should look at.
TEST_F(RepairTest, MissingTableIsReportedWithItsKeyRange) {
  const std::vector<fs::path> tables = Files(lsm::FileType::kTable);
  ASSERT_FALSE(tables.empty());
  const std::string name = tables[0].filename().string();
  fs::remove(tables[0]);
  RepairReport report;
  ASSERT_OK(RepairDB(TestOptions(), db_, &report));
  auto db = DB::Open(TestOptions(), db_);
  ASSERT_OK(db);
  // Every key was written once, in order, so the missing keys are exactly
  // the table's, and its range runs from the first of them to the last.
  std::vector<std::string> missing;
  std::string v;
  for (int i = 0; i < kKeys; ++i) {
    if (absl::IsNotFound((*db)->Get(ReadOptions(), Key(i), &v))) missing.push_back(Key(i));
  }
  ASSERT_FALSE(missing.empty());
  const std::string want = absl::StrCat(name, ": in the manifest at L");
  const auto line = std::find_if(report.lost.begin(), report.lost.end(), [&](const std::string& l) {
    return l.starts_with(want);
  });
  ASSERT_NE(line, report.lost.end()) << report.ToString();
  EXPECT_NE(line->find(absl::StrCat("keys '", missing.front(), "' to '", missing.back(), "'")),
            std::string::npos)
      << *line;
}

TEST_F(RepairTest, DamagedManifestIsRebuiltFromTheFiles) {
  const std::vector<fs::path> manifests = Files(lsm::FileType::kManifest);
  ASSERT_EQ(manifests.size(), 1u);
  fs::resize_file(manifests[0], fs::file_size(manifests[0]) / 2);
  EXPECT_EQ(RepairAndVerify(manifests[0].filename().string()), 0);
}

// A manifest cut exactly where a record ends reads as a whole, shorter
// manifest. The table flushed after the cut is then unknown to it (numbered
// past its next file number), and must be read, not called obsolete: its
// keys' WAL is gone, so skipping it would bring back their old values while
// the report says nothing was lost.
TEST_F(RepairTest, ManifestCutAtARecordBoundaryStillReadsTheTablesAfterIt) {
  std::vector<fs::path> manifests;
  uintmax_t boundary = 0;
  {
    auto db = DB::Open(TestOptions(), db_);
    ASSERT_OK(db);
    ASSERT_OK((*db)->WaitForBackgroundWork());
    manifests = Files(lsm::FileType::kManifest);
    ASSERT_EQ(manifests.size(), 1u);
    boundary = fs::file_size(manifests[0]);  // the manifest is append-only
    for (int i = 0; i < 500; ++i) {
      ASSERT_OK((*db)->Put(WriteOptions(), Key(i), absl::StrCat(Value(i), "/new")));
    }
    ASSERT_OK((*db)->Flush());
  }
  ASSERT_EQ(Files(lsm::FileType::kManifest), manifests) << "the close rolled the manifest";
  ASSERT_GT(fs::file_size(manifests[0]), boundary);
  fs::resize_file(manifests[0], boundary);

  RepairReport report;
  ASSERT_OK(RepairDB(TestOptions(), db_, &report));
  EXPECT_TRUE(report.lost.empty()) << report.ToString();
  EXPECT_EQ(report.keys_salvaged, static_cast<uint64_t>(kKeys)) << report.ToString();
  auto db = DB::Open(TestOptions(), db_);
  ASSERT_OK(db);
  int stale = 0;
  std::string v;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_OK((*db)->Get(ReadOptions(), Key(i), &v)) << Key(i);
    const std::string want = i < 500 ? absl::StrCat(Value(i), "/new") : Value(i);
    if (v != want) ++stale;
  }
  EXPECT_EQ(stale, 0) << report.ToString();
}

TEST_F(RepairTest, MissingCurrentIsRebuiltFromTheFiles) {
  fs::remove(fs::path(db_) / "CURRENT");
  EXPECT_EQ(RepairAndVerify("CURRENT"), 0);
}

// Without CURRENT every table and WAL is read, overwrites and deletions
// spread over SSTs of several levels and the WAL: the newest entry of each
// key must win, and a deleted key must stay deleted.
TEST_F(RepairTest, NewestEntryWinsAcrossTablesAndWalAndDeletionsStay) {
  std::map<std::string, std::string> model;
  for (int i = 0; i < kKeys; ++i) model[Key(i)] = Value(i);
  {
    auto db = DB::Open(TestOptions(), db_);
    ASSERT_OK(db);
    for (int round = 0; round < 3; ++round) {
      for (int i = round; i < kKeys; i += 3 + round) {
        if ((i + round) % 4 == 0) {
          ASSERT_OK((*db)->Delete(WriteOptions(), Key(i)));
          model.erase(Key(i));
        } else {
          const std::string v = absl::StrCat(Value(i), "/round", round);
          ASSERT_OK((*db)->Put(WriteOptions(), Key(i), v));
          model[Key(i)] = v;
        }
      }
      if (round == 0) {
        ASSERT_OK((*db)->CompactRange(nullptr, nullptr));
      } else if (round == 1) {
        ASSERT_OK((*db)->Flush());
      }
    }
  }
  fs::remove(fs::path(db_) / "CURRENT");
  RepairReport report;
  ASSERT_OK(RepairDB(TestOptions(), db_, &report));
  EXPECT_GT(report.keys_deleted, 0u);
  auto db = DB::Open(TestOptions(), db_);
  ASSERT_OK(db);
  std::map<std::string, std::string> got;
  auto it = (*db)->NewIterator(ReadOptions());
  for (it->SeekToFirst(); it->Valid(); it->Next()) got[std::string(it->key())] = it->value();
  ASSERT_OK(it->status());
  EXPECT_EQ(got.size(), model.size());
  EXPECT_TRUE(got == model) << report.ToString();
}

// The tool: `cairn repair DIR` prints the report, says where it wrote it,
// and exits 1 when something was lost; the database then passes check.
TEST_F(RepairTest, ToolPrintsTheReportAndExitsOneWhenSomethingWasLost) {
  const std::vector<fs::path> wals = Files(lsm::FileType::kLog);
  ASSERT_FALSE(wals.empty());
  fs::remove(wals.back());
  const std::string cmd = absl::StrCat(kCairnTool, " repair '", db_, "' 2>&1");
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  EXPECT_NE(out.find(wals.back().filename().string()), std::string::npos) << out;
  EXPECT_NE(out.find("report written to"), std::string::npos) << out;
  CheckReport check = RunCheckTool(db_);
  EXPECT_EQ(check.exit_code, 0) << check.output;
}

TEST_F(RepairTest, HeldLockIsRefusedAndNothingMoves) {
  auto db = DB::Open(TestOptions(), db_);
  ASSERT_OK(db);
  RepairReport report;
  EXPECT_TRUE(absl::IsFailedPrecondition(RepairDB(TestOptions(), db_, &report)));
  EXPECT_FALSE(fs::exists(fs::path(db_) / "lost"));
}

// A WAL damaged in the middle, in an inline-value database whose writes
// are all in the WAL: repair skips the bad record and reads on from the
// next one that verifies, so only the write the damage hit is lost.
class RepairWalTest : public ::testing::Test {
 protected:
  static constexpr int kWalKeys = 200;

  static Options InlineOptions() {
    Options o;
    o.value_separation_threshold = kInlineValues;
    return o;
  }
  static std::string RoundValue(int i, int round) { return absl::StrCat(Value(i), "/", round); }

  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("cairn_repair_wal_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "db").string();
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // rounds times kWalKeys synced puts (round r writes RoundValue(i, r)),
  // then a clean close.
  void Write(int rounds) {
    auto db = DB::Open(InlineOptions(), db_);
    ASSERT_OK(db);
    WriteOptions sync;
    sync.sync = true;
    for (int round = 0; round < rounds; ++round) {
      for (int i = 0; i < kWalKeys; ++i) {
        ASSERT_OK((*db)->Put(sync, Key(i), RoundValue(i, round)));
      }
    }
  }

  // The one WAL, with the offset and first sequence of each of its records.
  void ReadWal(fs::path* wal, std::vector<uint64_t>* starts, std::vector<uint64_t>* sequences) {
    std::vector<fs::path> wals;
    for (const auto& e : fs::directory_iterator(db_)) {
      uint64_t n;
      lsm::FileType t;
      if (lsm::ParseFileName(e.path().filename().string(), &n, &t) &&
          t == lsm::FileType::kLog) {
        wals.push_back(e.path());
      }
    }
    ASSERT_EQ(wals.size(), 1u);
    *wal = wals[0];
    uint64_t number;
    lsm::FileType type;
    ASSERT_TRUE(lsm::ParseFileName(wal->filename().string(), &number, &type));
    auto file_system = io::NewFileSystem(io::IoBackend::kPosix);
    ASSERT_OK(file_system);
    auto reader = lsm::LogReader::Open(file_system->get(), wal->string(), number);
    ASSERT_OK(reader);
    std::string_view record;
    std::string scratch;
    while ((*reader)->ReadRecord(&record, &scratch)) {
      if (record.size() < 12) continue;
      starts->push_back((*reader)->last_record_offset());
      sequences->push_back(io::DecodeFixed64(record.data()));
    }
    ASSERT_OK((*reader)->status());
  }

  // Flips a byte in the payload of the first record from index `from` on
  // that is one whole fragment and not the last record; returns its index.
  static size_t FlipInRecord(const fs::path& wal, const std::vector<uint64_t>& starts,
                             size_t from) {
    std::fstream f(wal, std::ios::in | std::ios::out | std::ios::binary);
    for (size_t k = from; k + 1 < starts.size(); ++k) {
      char type;
      f.seekg(static_cast<std::streamoff>(starts[k] + 6));
      f.get(type);
      const uint64_t at = starts[k] + lsm::kLogFragmentHeaderSize + 16;  // in the key
      if (type != static_cast<char>(lsm::LogFragmentType::kFull) || at >= starts[k + 1]) continue;
      char c;
      f.seekg(static_cast<std::streamoff>(at));
      f.get(c);
      f.seekp(static_cast<std::streamoff>(at));
      f.put(static_cast<char>(c ^ 0x40));
      return k;
    }
    ADD_FAILURE() << "no record to damage";
    return 0;
  }

  fs::path dir_;
  std::string db_;
};

TEST_F(RepairWalTest, FlippedByteMidWalLosesOnlyTheRecordItHit) {
  Write(1);
  fs::path wal;
  std::vector<uint64_t> starts, sequences;
  ReadWal(&wal, &starts, &sequences);
  ASSERT_EQ(starts.size(), static_cast<size_t>(kWalKeys));
  const size_t hit = FlipInRecord(wal, starts, kWalKeys / 2);

  RepairReport report;
  ASSERT_OK(RepairDB(InlineOptions(), db_, &report));
  const std::string text = report.ToString();
  EXPECT_EQ(report.keys_salvaged, static_cast<uint64_t>(kWalKeys - 1)) << text;
  // The report names the bytes passed over and the write they held.
  EXPECT_NE(text.find(absl::StrFormat("%s: bytes [%d, %d) skipped", wal.filename().string(),
                                      starts[hit], starts[hit + 1])),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(absl::StrFormat("(sequence %d lost)", sequences[hit])), std::string::npos)
      << text;
  EXPECT_EQ(report.lost.size(), 1u) << text;

  auto db = DB::Open(InlineOptions(), db_);
  ASSERT_OK(db);
  std::string v;
  for (int i = 0; i < kWalKeys; ++i) {
    absl::Status s = (*db)->Get(ReadOptions(), Key(i), &v);
    if (static_cast<size_t>(i) == hit) {
      EXPECT_TRUE(absl::IsNotFound(s)) << s;
      continue;
    }
    ASSERT_OK(s) << Key(i);  // before and after the damage alike
    EXPECT_EQ(v, RoundValue(i, 0)) << Key(i);
  }
  db->reset();
  CheckReport check = RunCheckTool(db_);
  EXPECT_EQ(check.exit_code, 0) << check.output;
}

// The records after the gap are older and newer writes of the same keys:
// the newest of each key wins wherever it sits, so an overwrite the damage
// did not hit is never undone by an older write read after the gap.
TEST_F(RepairWalTest, RecordsAfterAGapKeepTheNewestValueOfEachKey) {
  Write(2);
  fs::path wal;
  std::vector<uint64_t> starts, sequences;
  ReadWal(&wal, &starts, &sequences);
  ASSERT_EQ(starts.size(), static_cast<size_t>(2 * kWalKeys));
  FlipInRecord(wal, starts, kWalKeys / 2);  // a first-round write, overwritten later

  RepairReport report;
  ASSERT_OK(RepairDB(InlineOptions(), db_, &report));
  EXPECT_EQ(report.keys_salvaged, static_cast<uint64_t>(kWalKeys)) << report.ToString();
  EXPECT_NE(report.ToString().find(absl::StrCat(wal.filename().string(), ": bytes [")),
            std::string::npos)
      << report.ToString();
  auto db = DB::Open(InlineOptions(), db_);
  ASSERT_OK(db);
  std::string v;
  for (int i = 0; i < kWalKeys; ++i) {
    ASSERT_OK((*db)->Get(ReadOptions(), Key(i), &v)) << Key(i);
    EXPECT_EQ(v, RoundValue(i, 1)) << Key(i);
  }
}

}  // namespace
}  // namespace cairn
