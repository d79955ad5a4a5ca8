// End-to-end tests of the `cairn` command-line tool (tools/): builds real
// databases through the public API, runs the binary and checks its exit
// codes and output, on healthy files and on damaged ones.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <memory>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cairn/db.h"
#include "cairn/ingest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/file_system.h"
#include "io/posix_file_system.h"
#include "io/testing/status_matchers.h"
#include "lsm/dbformat.h"
#include "lsm/filename.h"
#include "lsm/table_builder.h"
#include "lsm/version_set.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_set.h"
#include "vlog/segment_writer.h"
#include "vlog/value_pointer.h"

namespace cairn {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kFlushedKeys = 300;
constexpr int kWalKeys = 20;  // plus one deletion

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs the tool with args (each single-quoted for the shell).
RunResult RunTool(const std::vector<std::string>& args) {
  std::string cmd = CAIRN_BINARY_DIR "/tools/cairn";
  for (const std::string& a : args) absl::StrAppend(&cmd, " '", a, "'");
  cmd.append(" 2>&1");
  RunResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (std::getenv("CAIRN_TOOL_TEST_VERBOSE") != nullptr) {
    std::printf("$ %s  => exit %d\n%s\n", cmd.c_str(), r.exit_code, r.output.c_str());
  }
  return r;
}

std::string Key(int i) { return absl::StrFormat("key-%06d", i); }
std::string Value(int i) { return absl::StrFormat("value-%06d-%s", i, std::string(80, 'v')); }

// Recovers dir's manifest and its segment set, then hands both to plant,
// which changes them by hand (a planted segment, a planted run).
void WithManifest(io::FileSystem* fsys, const std::string& dir,
                  const std::function<void(lsm::VersionSet&, vlog::SegmentSet&)>& plant) {
  vlog::SegmentSet set;
  lsm::VersionSet versions(fsys, dir);
  versions.SetExtensionSnapshotter([&set] { return set.Snapshot(); });
  ASSERT_TRUE(versions
                  .Recover([&set](uint32_t tag, std::string_view payload) {
                    return set.DecodeAndApply(tag, payload);
                  })
                  .ok());
  plant(versions, set);
}

class ToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(CAIRN_BINARY_DIR "/tools/cairn")) << "build the cairn_tool target first";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = absl::StrCat("/tmp/cairn_tool_test_", getpid(), "_", info->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // kFlushedKeys keys flushed to one SST, then kWalKeys puts, a key with
  // non-printable bytes and a deletion left in the WAL.
  void CreateDatabase() {
    Options options;
    options.memtable_size = 1 << 20;
    auto db = DB::Open(options, dir_);
    ASSERT_OK(db);
    for (int i = 0; i < kFlushedKeys; ++i) {
      ASSERT_OK((*db)->Put(WriteOptions(), Key(i), Value(i)));
    }
    ASSERT_OK((*db)->Flush());
    for (int i = 0; i < kWalKeys - 1; ++i) {
      ASSERT_OK((*db)->Put(WriteOptions(), absl::StrCat("wal-", Key(i)), Value(i)));
    }
    ASSERT_OK((*db)->Put(WriteOptions(), std::string("bin\x01\xff", 5), "x"));
    ASSERT_OK((*db)->Delete(WriteOptions(), Key(0)));
  }

  // Paths of the files of type in the database, sorted.
  std::vector<std::string> Files(lsm::FileType want) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      uint64_t number;
      lsm::FileType type;
      if (lsm::ParseFileName(e.path().filename().string(), &number, &type) && type == want) {
        out.push_back(e.path().string());
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string OnlyFile(lsm::FileType type) const {
    std::vector<std::string> files = Files(type);
    EXPECT_EQ(files.size(), 1u) << "files of type " << lsm::FileTypeName(type);
    return files.empty() ? "" : files.back();
  }

  static void FlipByte(const std::string& path, uint64_t offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(&c, 1);
  }

  std::string dir_;
};

TEST_F(ToolTest, CheckPassesOnAHealthyDatabaseAndReportsCounts) {
  CreateDatabase();
  RunResult r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("1 tables (", kFlushedKeys, " entries)")));
  EXPECT_THAT(r.output,
              HasSubstr(absl::StrCat("1 WALs (", kWalKeys + 1, " batches, ", kWalKeys + 1)));
  EXPECT_THAT(r.output, HasSubstr("0 orphans, 0 segments off the ledger; 0 problems"));
  EXPECT_THAT(r.output, Not(HasSubstr("problem:")));
}

// A database that keeps its WALs for the change feed: check says `kept:`,
// and dump-updates prints the feed with the value the value log holds.
TEST_F(ToolTest, DumpUpdatesPrintsTheFeedAndCheckKeepsRetainedWals) {
  {
    Options options;
    options.wal_size_limit_bytes = 1 << 20;
    auto db = DB::Open(options, dir_);
    ASSERT_OK(db);
    ASSERT_OK((*db)->Put(WriteOptions(), "a", "1"));
    ASSERT_OK((*db)->Put(WriteOptions(), "big", std::string(20000, 'v')));
    ASSERT_OK((*db)->Delete(WriteOptions(), "a"));
    ASSERT_OK((*db)->Flush());
    ASSERT_OK((*db)->Put(WriteOptions(), "b", "2"));
    // An expiring put and a range deletion (2026-12-08, both merged in).
    ASSERT_OK((*db)->PutWithTTL(WriteOptions(), "t", "3", 3600));
    ASSERT_OK((*db)->DeleteRange(WriteOptions(), "x", "y"));
    ASSERT_OK((*db)->Close());
  }
  RunResult check = RunTool({"check", dir_});
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_THAT(check.output, HasSubstr("kept: "));
  EXPECT_THAT(check.output, Not(HasSubstr("cleanup:")));
  RunResult r = RunTool({"dump-updates", "--since=2", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("2..2 BATCH 1 entries\n  2 PUT big -> vvvv"));
  EXPECT_THAT(r.output, HasSubstr("(20000 bytes)"));
  EXPECT_THAT(r.output, HasSubstr("  3 DELETE a\n"));
  EXPECT_THAT(r.output, HasSubstr("  5 PUT t -> 3 (1 bytes) expires_at_us "));
  EXPECT_THAT(r.output, HasSubstr("  6 DELETE_RANGE [x, y)\n"));
  EXPECT_THAT(r.output, HasSubstr("5 items through sequence 6"));
  RunResult beyond = RunTool({"dump-updates", "--since=9", dir_});
  EXPECT_EQ(beyond.exit_code, 1) << beyond.output;
  EXPECT_THAT(beyond.output, HasSubstr("beyond the latest sequence number"));
}

TEST_F(ToolTest, CheckWritesNothingAndTakesNoLock) {
  CreateDatabase();
  auto listing = [this] {
    std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> files;
    for (const auto& e : fs::directory_iterator(dir_)) {
      files[e.path().filename().string()] = {e.file_size(), e.last_write_time()};
    }
    return files;
  };
  // An open DB holds the LOCK; check does not need it.
  auto db = DB::Open(Options(), dir_);
  ASSERT_OK(db);
  ASSERT_OK((*db)->WaitForBackgroundWork());
  const auto before = listing();
  RunResult r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(before, listing());
}

TEST_F(ToolTest, DumpWalPrintsEveryEntryAndACleanEnd) {
  CreateDatabase();
  RunResult r = RunTool({"dump-wal", Files(lsm::FileType::kLog).back()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // The switch that began this WAL wrote its sync record first (format 4).
  EXPECT_THAT(r.output, HasSubstr("record at offset 24: sync record: writes through seq"));
  EXPECT_THAT(r.output, HasSubstr("record at offset 44: seq"));
  EXPECT_THAT(r.output,
              HasSubstr(absl::StrCat("PUT 'wal-", Key(3), "' value_len ", Value(3).size())));
  EXPECT_THAT(r.output, HasSubstr("PUT 'bin\\x01\\xff' value_len 1"));
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("DEL '", Key(0), "'")));
  EXPECT_THAT(r.output,
              HasSubstr(absl::StrCat(kWalKeys + 2, " records, ", kWalKeys + 1, " entries")));
  EXPECT_THAT(r.output, HasSubstr("end: clean"));

  RunResult limited = RunTool({"dump-wal", "--max_entries=2", Files(lsm::FileType::kLog).back()});
  EXPECT_EQ(limited.exit_code, 0) << limited.output;
  EXPECT_THAT(limited.output, HasSubstr(absl::StrCat("... ", kWalKeys - 1, " more entries")));
}

TEST_F(ToolTest, DumpWalReportsATornTail) {
  CreateDatabase();
  const std::string log = Files(lsm::FileType::kLog).back();
  fs::resize_file(log, fs::file_size(log) - 10);
  RunResult r = RunTool({"dump-wal", log});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("end: torn tail at offset"));
}

TEST_F(ToolTest, DumpWalOfAFileThatIsNoWalSaysSo) {
  CreateDatabase();
  // A WAL copied under another name is still read, by its header's number.
  const std::string copy = dir_ + "/copied-wal";
  fs::copy_file(Files(lsm::FileType::kLog).back(), copy);
  RunResult r = RunTool({"dump-wal", copy});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("end: clean"));
  // Anything else is not taken for a WAL that never synced.
  const std::string other = dir_ + "/not-a-wal";
  fs::copy_file(OnlyFile(lsm::FileType::kTable), other);
  RunResult bad = RunTool({"dump-wal", other});
  EXPECT_NE(bad.exit_code, 0) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("not a WAL: bad magic"));
  EXPECT_THAT(bad.output, Not(HasSubstr("torn tail")));
}

TEST_F(ToolTest, DumpSstPrintsPropertiesEntriesAndVerifies) {
  CreateDatabase();
  const std::string sst = OnlyFile(lsm::FileType::kTable);
  RunResult r = RunTool({"dump-sst", "--verify", sst});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("entries: ", kFlushedKeys)));
  EXPECT_THAT(r.output,
              HasSubstr(absl::StrCat("'", Key(7), "' @ 8 PUT value_len ", Value(7).size())));
  EXPECT_THAT(r.output, HasSubstr("verify: OK"));
  // A DB's tables record the value-log bytes their pointers name (tag 9).
  EXPECT_THAT(r.output, HasSubstr("value-log bytes named: "));
  EXPECT_THAT(r.output, Not(HasSubstr("not recorded")));

  RunResult limited = RunTool({"dump-sst", "--max_entries", "5", sst});
  EXPECT_EQ(limited.exit_code, 0) << limited.output;
  EXPECT_THAT(limited.output, HasSubstr(absl::StrCat("... ", kFlushedKeys - 5, " more")));
}

TEST_F(ToolTest, DumpManifestPrintsEditsAndTheFinalState) {
  CreateDatabase();
  for (const std::string& arg : {dir_, OnlyFile(lsm::FileType::kManifest)}) {
    RunResult r = RunTool({"dump-manifest", arg});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("--- record 0 at offset 24"));
    EXPECT_THAT(r.output, HasSubstr("comparator: cairn.bytewise"));
    EXPECT_THAT(r.output, HasSubstr("add file: L0"));
    EXPECT_THAT(r.output, HasSubstr("end: clean"));
    EXPECT_THAT(r.output, HasSubstr("=== final state"));
    EXPECT_THAT(r.output, HasSubstr("value log:"));
  }
}

TEST_F(ToolTest, DumpVlogPrintsRecordsAndATornTail) {
  fs::create_directories(dir_);
  auto file_system = io::NewFileSystem(io::IoBackend::kAuto);
  ASSERT_OK(file_system);
  const std::string path = lsm::ValueLogFileName(dir_, 42);
  {
    auto writer = vlog::SegmentWriter::Create(file_system->get(), path, 42, {});
    ASSERT_OK(writer);
    for (int i = 0; i < 3; ++i) ASSERT_OK((*writer)->Append(Key(i), Value(i)));
    ASSERT_OK((*writer)->Close());
  }
  RunResult r = RunTool({"dump-vlog", path});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("kind fresh segment id 42"));
  EXPECT_THAT(r.output,
              HasSubstr(absl::StrCat("offset 28 size ", 13 + Key(0).size() + Value(0).size(),
                                     " key '", Key(0), "'")));
  EXPECT_THAT(r.output, HasSubstr("3 records"));
  EXPECT_THAT(r.output, HasSubstr("end: clean"));

  fs::resize_file(path, fs::file_size(path) - 5);
  r = RunTool({"dump-vlog", path});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("2 records"));
  EXPECT_THAT(r.output, HasSubstr("end: torn tail at offset"));
}

TEST_F(ToolTest, DumpVlogReportsADamagedRecordWithoutThePunchedRunHint) {
  fs::create_directories(dir_);
  auto file_system = io::NewFileSystem(io::IoBackend::kAuto);
  ASSERT_OK(file_system);
  const std::string path = lsm::ValueLogFileName(dir_, 43);
  const std::string big(4096, 'v');
  {
    auto writer = vlog::SegmentWriter::Create(file_system->get(), path, 43, {});
    ASSERT_OK(writer);
    for (int i = 0; i < 10; ++i) ASSERT_OK((*writer)->Append(Key(i), big));
    ASSERT_OK((*writer)->Close());
  }
  {
    // One byte of the second record's value, flipped: later records are
    // good, and no block is zeros.
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    const std::streamoff at = 28 + (13 + Key(0).size() + big.size()) + 13 + Key(1).size() + 100;
    f.seekp(at);
    f.put('w');
  }
  RunResult r = RunTool({"dump-vlog", path});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("1 records"));
  EXPECT_THAT(r.output, HasSubstr("end: CORRUPTION"));
  EXPECT_THAT(r.output, Not(HasSubstr("hint:")));
}

TEST_F(ToolTest, StatsPrintsTheReportAndJson) {
  CreateDatabase();
  // Name and contents of every file: stats opens read-only and changes none.
  auto snapshot = [&] {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::directory_iterator(dir_)) {
      std::ifstream in(e.path(), std::ios::binary);
      files[e.path().filename().string()] =
          std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return files;
  };
  const auto before = snapshot();
  RunResult r = RunTool({"stats", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cairn.live-bytes: "));
  EXPECT_THAT(r.output, HasSubstr("** options (newest OPTIONS file) **"));
  EXPECT_THAT(r.output, HasSubstr("[format]\nwal_format_version=7"));
  RunResult json = RunTool({"stats", "--json", dir_});
  EXPECT_EQ(json.exit_code, 0) << json.output;
  EXPECT_EQ(json.output.front(), '{') << json.output;
  EXPECT_THAT(json.output, HasSubstr("\"io_backend\": \""));
  EXPECT_THAT(json.output, HasSubstr("\"levels\": [{\"level\": 0"));
  EXPECT_THAT(json.output, HasSubstr("\"options\": \"# cairn OPTIONS file"));
  EXPECT_EQ(snapshot(), before);
}

TEST_F(ToolTest, CheckNamesACorruptSst) {
  CreateDatabase();
  const std::string sst = OnlyFile(lsm::FileType::kTable);
  FlipByte(sst, fs::file_size(sst) / 3);
  RunResult r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("problem: ", fs::path(sst).filename().string())));
  EXPECT_THAT(r.output, HasSubstr("PROBLEMS FOUND"));
}

TEST_F(ToolTest, CheckNamesAGarbledManifest) {
  CreateDatabase();
  const std::string manifest = OnlyFile(lsm::FileType::kManifest);
  FlipByte(manifest, 24 + 12);  // inside the first record's payload
  RunResult r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(fs::path(manifest).filename().string()));
}

TEST_F(ToolTest, CheckNamesATruncatedManifest) {
  CreateDatabase();
  const std::string manifest = OnlyFile(lsm::FileType::kManifest);
  fs::resize_file(manifest, 24 + 20);  // cuts the first (snapshot) record
  RunResult r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(fs::path(manifest).filename().string()));
}

// Orphans are what a crash leaves and the next open deletes: cleanups,
// not damage (tests/check_leftovers_test.cc covers each kind).
TEST_F(ToolTest, CheckNamesOrphanAndTemporaryFiles) {
  CreateDatabase();
  fs::copy_file(OnlyFile(lsm::FileType::kTable), lsm::TableFileName(dir_, 999999));
  std::ofstream(lsm::TempFileName(dir_, 999998)) << "junk";
  RunResult r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cleanup: 999999.sst: orphan SST"));
  EXPECT_THAT(r.output, HasSubstr("cleanup: 999998.tmp: temporary file"));
  EXPECT_THAT(r.output, HasSubstr("2 orphans"));
  EXPECT_THAT(r.output, HasSubstr("0 problems; 2 leftovers for the next open to clean up"));
  EXPECT_THAT(r.output, Not(HasSubstr("problem:")));
}

TEST_F(ToolTest, UsageErrorsExitTwo) {
  CreateDatabase();
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"frobnicate", dir_},
      {"check"},
      {"check", dir_, dir_},
      {"check", "--no_such_flag", dir_},
      {"dump-wal", "--json", "x.log"},
      {"dump-sst", "--max_entries=lots", "x.sst"},
      {"dump-vlog", "--max_entries"},
  };
  for (const auto& args : bad) {
    RunResult r = RunTool(args);
    EXPECT_EQ(r.exit_code, 2) << absl::StrJoin(args, " ") << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("usage: cairn")) << absl::StrJoin(args, " ");
  }
  RunResult missing = RunTool({"dump-sst", dir_ + "/000404.sst"});
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_THAT(missing.output, HasSubstr("000404.sst"));
}

// Builds, beside a database made through the public API, what key-value
// separation writes (a sealed segment recorded in the manifest and an SST
// whose entries point into it) with the engine's own writers, so check's
// pointer verification runs whether or not the DB separates values yet.
TEST_F(ToolTest, CheckVerifiesValuePointersAndReportsDanglingOnes) {
  CreateDatabase();
  auto file_system = io::NewFileSystem(io::IoBackend::kAuto);
  ASSERT_OK(file_system);
  io::FileSystem* fsys = file_system->get();
  lsm::VersionSet versions(fsys, dir_);
  ASSERT_OK(versions.Recover([](uint32_t, std::string_view) { return absl::OkStatus(); }));

  const uint64_t segment_id = versions.NewFileNumber();
  const std::string segment_path = lsm::ValueLogFileName(dir_, segment_id);
  std::vector<vlog::ValuePointer> pointers;
  uint64_t segment_size = 0;
  {
    auto writer = vlog::SegmentWriter::Create(fsys, segment_path, segment_id, {});
    ASSERT_OK(writer);
    for (int i = 0; i < 10; ++i) {
      auto p = (*writer)->Append(absl::StrCat("sep-", Key(i)), Value(i));
      ASSERT_OK(p);
      pointers.push_back(*p);
    }
    ASSERT_OK((*writer)->Sync());
    segment_size = (*writer)->size();
    ASSERT_OK((*writer)->Close());
  }

  const uint64_t table_number = versions.NewFileNumber();
  lsm::FileMetaData meta;
  meta.number = table_number;
  {
    auto file = fsys->NewWritableFile(lsm::TableFileName(dir_, table_number), {});
    ASSERT_OK(file);
    lsm::TableBuilder builder(lsm::TableOptions(), file->get());
    for (int i = 0; i < 10; ++i) {
      std::string ikey;
      lsm::AppendInternalKey(&ikey, absl::StrCat("sep-", Key(i)), 1, lsm::ValueType::kValuePointer);
      ASSERT_OK(builder.Add(ikey, vlog::EncodeValuePointer(pointers[i])));
    }
    ASSERT_OK(builder.Finish());
    ASSERT_OK((*file)->Sync());
    ASSERT_OK((*file)->Close());
    meta.file_size = builder.FileSize();
    meta.smallest = builder.smallest_key();
    meta.largest = builder.largest_key();
    meta.smallest_seq = meta.largest_seq = 1;
    meta.num_entries = builder.NumEntries();
  }
  lsm::VersionEdit edit;
  edit.AddFile(6, meta);
  vlog::SegmentEdit segment_edit;
  segment_edit.AddSegment(segment_id, vlog::SegmentKind::kFresh);
  segment_edit.SealSegment(segment_id, segment_size, pointers.size());
  for (const auto& [tag, payload] : segment_edit.Encode()) edit.AddExtension(tag, payload);
  ASSERT_OK(versions.LogAndApply(&edit));

  RunResult r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("1 segments (10 records), 10 value pointers checked"));
  RunResult dump = RunTool({"dump-sst", lsm::TableFileName(dir_, table_number)});
  EXPECT_THAT(dump.output, HasSubstr(absl::StrCat("PTR -> ", pointers[0].DebugString())));
  // Built without the DB's pointer sizer, as a table before tag 9 was.
  EXPECT_THAT(dump.output, HasSubstr("value-log bytes named: not recorded"));
  RunResult manifest = RunTool({"dump-manifest", dir_});
  EXPECT_THAT(manifest.output, HasSubstr(absl::StrCat("vlog: new segment ", segment_id)));

  // A pointer whose record is damaged, then one whose segment is gone.
  FlipByte(segment_path, pointers[4].offset + pointers[4].size - 1);
  r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("dangling pointer for key 'sep-", Key(4), "'")));
  fs::remove(segment_path);
  r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("in the segment set, but the file is missing"));
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("missing segment ",
                                               fs::path(segment_path).filename().string())));
}

// Overwrites, deletions, flushes and compactions across several levels, with
// values both inline and in the value log: a healthy database of any shape
// checks clean (no false alarms from shadowed entries or stale pointers).
TEST_F(ToolTest, CheckPassesOnACompactedDatabaseWithSeparatedValues) {
  Options options;
  options.memtable_size = 64 << 10;
  options.target_file_size = 64 << 10;
  options.value_separation_threshold = 100;
  auto db = DB::Open(options, dir_);
  ASSERT_OK(db);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 600; ++i) {
      // Odd keys stay inline (short values); even keys go to the value log.
      const std::string value =
          i % 2 ? absl::StrCat(round, "-", i) : absl::StrCat(round, "-", Value(i), Value(i));
      ASSERT_OK((*db)->Put(WriteOptions(), Key(i), value));
    }
    for (int i = round; i < 600; i += 7) ASSERT_OK((*db)->Delete(WriteOptions(), Key(i)));
    ASSERT_OK((*db)->Flush());
  }
  ASSERT_OK((*db)->CompactRange(nullptr, nullptr));
  // A flush after the compaction also deletes its inputs (CompactRange
  // itself may leave the last ones, which check would call orphans).
  for (int i = 0; i < 50; ++i) {
    ASSERT_OK((*db)->Put(WriteOptions(), Key(i), Value(i) + Value(i)));
  }
  ASSERT_OK((*db)->Flush());
  // Pointers and inline values left in the WAL.
  for (int i = 0; i < 40; ++i) {
    ASSERT_OK((*db)->Put(WriteOptions(), Key(i), i % 2 ? "short" : Value(i) + Value(i)));
  }
  ASSERT_OK((*db)->WaitForBackgroundWork());
  db->reset();
  RunResult r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr(" 0 value pointers checked")));
  EXPECT_THAT(r.output, Not(HasSubstr("problem:")));
}

// Runs of adjacent deleted values punched out of their segments (docs/gc.md,
// "Punched runs"): check steps over the runs the manifest lists and finds
// the database clean; a hole the manifest does not list, punched into live
// records, is a problem it names.
TEST_F(ToolTest, CheckStepsOverPunchedRunsAndFlagsAHoleNotListed) {
  Options options;
  options.value_separation_threshold = 1024;
  options.separate_at_flush_below = 0;  // values reach segments as written
  options.value_log_segment_size = 256 << 10;
  options.gc_space_amp_trigger = 0;  // no GC: the runs stay in their segments
  auto db = DB::Open(options, dir_);
  ASSERT_OK(db);
  const std::string big(4096, 'b');
  for (int i = 0; i < 400; ++i) ASSERT_OK((*db)->Put(WriteOptions(), Key(i), big + Key(i)));
  ASSERT_OK((*db)->Flush());
  for (int i = 0; i < 400; ++i) {
    if (i % 100 < 40) {
      ASSERT_OK((*db)->Delete(WriteOptions(), Key(i)));
    }
  }
  ASSERT_OK((*db)->Flush());
  ASSERT_OK((*db)->CompactRange(nullptr, nullptr));
  ASSERT_OK((*db)->WaitForBackgroundWork());
  const Stats st = (*db)->GetStats();
  ASSERT_GT(st.gc_punched_bytes, 0u) << "ext4 and tmpfs punch holes";
  db->reset();
  RunResult r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("problem:")));
  std::string segment;  // the first: keys 0-39 died in it, 40 on live
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().extension() == ".vlog" && (segment.empty() || entry.path().string() < segment)) {
      segment = entry.path().string();
    }
  }
  ASSERT_FALSE(segment.empty());
  // dump-vlog reads the runs from the database's manifest and steps over
  // them.
  r = RunTool({"dump-vlog", segment});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("punched runs (from the manifest, stepped over): 1,"));
  EXPECT_THAT(r.output, HasSubstr("end: clean"));
  // Copied out of its database, the segment has no manifest beside it: the
  // dump stops at the run, and says what its zeros may be.
  const std::string copy_dir = dir_ + "_copy";
  fs::create_directories(copy_dir);
  const std::string copy = copy_dir + "/" + fs::path(segment).filename().string();
  fs::copy_file(segment, copy, fs::copy_options::overwrite_existing);
  r = RunTool({"dump-vlog", copy});
  fs::remove_all(copy_dir);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("end: CORRUPTION"));
  EXPECT_THAT(r.output, HasSubstr("hint: whole blocks of zeros from offset"));
  EXPECT_THAT(r.output, HasSubstr("GC punched out"));
  // A hole over the live records after the run, which no run lists.
  io::PosixFileSystem real;
  const uint64_t live_start = 28 + 40 * (13 + Key(0).size() + big.size() + Key(0).size());
  ASSERT_OK(real.PunchHoles(segment, {{(live_start + 4095) / 4096 * 4096, 8192}}));
  r = RunTool({"check", dir_});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(fs::path(segment).filename().string()));
}

// A run listed over records still live (a planner's bug, or a manifest
// edited by hand): check names every pointer into it, without reading it.
TEST_F(ToolTest, CheckNamesAPointerIntoAPunchedRun) {
  Options options;
  options.value_separation_threshold = 1024;
  options.separate_at_flush_below = 0;
  options.value_log_segment_size = 256 << 10;
  options.gc_space_amp_trigger = 0;
  {
    auto db = DB::Open(options, dir_);
    ASSERT_OK(db);
    const std::string big(4096, 'b');
    for (int i = 0; i < 200; ++i) ASSERT_OK((*db)->Put(WriteOptions(), Key(i), big + Key(i)));
    ASSERT_OK((*db)->Flush());
  }
  ASSERT_EQ(RunTool({"check", dir_}).exit_code, 0);
  auto file_system = io::NewFileSystem(io::IoBackend::kAuto);
  ASSERT_TRUE(file_system.ok());
  io::FileSystem* fsys = file_system->get();
  WithManifest(fsys, dir_, [&](lsm::VersionSet& versions, vlog::SegmentSet& set) {
    uint64_t segment = 0;
    for (const vlog::SegmentInfo& info : set.Segments()) {
      if (info.sealed && (segment == 0 || info.segment_id < segment)) segment = info.segment_id;
    }
    ASSERT_NE(segment, 0u);
    // The first two records (keys 0 and 1), both live.
    const uint64_t record = 13 + Key(0).size() + 4096 + Key(0).size();
    vlog::SegmentEdit segment_edit;
    segment_edit.PunchRuns(segment, {{vlog::kSegmentHeaderSize,
                                      vlog::kSegmentHeaderSize + 2 * record}});
    lsm::VersionEdit edit;
    for (const auto& [tag, payload] : segment_edit.Encode()) edit.AddExtension(tag, payload);
    ASSERT_TRUE(versions.LogAndApply(&edit).ok());
  });
  RunResult r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("key '", Key(0), "'")));
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("key '", Key(1), "'")));
  EXPECT_THAT(r.output, HasSubstr("points into punched run"));
  EXPECT_THAT(r.output, Not(HasSubstr(absl::StrCat("key '", Key(2), "'"))));
}

// Through the DB itself, with every value separated.
TEST_F(ToolTest, CheckReportsADeletedSegmentOfASeparatedDatabase) {
  Options options;
  options.value_separation_threshold = 0;
  auto db = DB::Open(options, dir_);
  ASSERT_OK(db);
  for (int i = 0; i < 50; ++i) ASSERT_OK((*db)->Put(WriteOptions(), Key(i), Value(i)));
  ASSERT_OK((*db)->Flush());
  db->reset();
  RunResult r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr(" 0 value pointers checked")));
  std::vector<std::string> segments = Files(lsm::FileType::kValueLog);
  ASSERT_FALSE(segments.empty());
  for (const std::string& s : segments) fs::remove(s);
  r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dangling pointer"));
  EXPECT_THAT(r.output, HasSubstr(fs::path(segments[0]).filename().string()));
}

// The space ledger: a segment the manifest knows, sealed, whose records no
// entry points at and no count calls garbage, is a leak GC could not find
// until the next open counts it as garbage (as it does for what a crash
// left so): check reports it as a cleanup, and after the open GC reclaims it.
TEST_F(ToolTest, CheckFlagsAPlantedUnaccountedSegmentAndOpenReclaimsIt) {
  Options options;
  options.value_separation_threshold = 100;
  {
    auto db = DB::Open(options, dir_);
    ASSERT_TRUE(db.ok()) << db.status();
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE((*db)->Put(WriteOptions(), Key(i), Value(i) + Value(i)).ok());
    }
    ASSERT_TRUE((*db)->Flush().ok());
  }
  RunResult clean = RunTool({"check", dir_});
  ASSERT_EQ(clean.exit_code, 0) << clean.output;

  // Plant: a sealed segment of 5 records that nothing references.
  auto file_system = io::NewFileSystem(io::IoBackend::kAuto);
  ASSERT_TRUE(file_system.ok());
  io::FileSystem* fsys = file_system->get();
  uint64_t planted = 0, planted_size = 0;
  WithManifest(fsys, dir_, [&](lsm::VersionSet& versions, vlog::SegmentSet&) {
    planted = versions.NewFileNumber();
    auto writer =
        vlog::SegmentWriter::Create(fsys, lsm::ValueLogFileName(dir_, planted), planted, {});
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE((*writer)->Append(Key(i), Value(i)).ok());
    ASSERT_TRUE((*writer)->Sync().ok());
    planted_size = (*writer)->size();
    ASSERT_TRUE((*writer)->Close().ok());
    vlog::SegmentEdit segment_edit;
    segment_edit.AddSegment(planted, vlog::SegmentKind::kGcOutput);
    segment_edit.SealSegment(planted, planted_size, 5);
    lsm::VersionEdit edit;
    for (const auto& [tag, payload] : segment_edit.Encode()) edit.AddExtension(tag, payload);
    ASSERT_TRUE(versions.LogAndApply(&edit).ok());
  });
  const std::string name = fs::path(lsm::ValueLogFileName(dir_, planted)).filename().string();
  RunResult r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("cleanup: ", name)));
  EXPECT_THAT(r.output, HasSubstr("(a leak): the next open counts them as garbage"));
  EXPECT_THAT(r.output, HasSubstr("1 segments off the ledger"));

  {
    auto db = DB::Open(options, dir_);
    ASSERT_TRUE(db.ok()) << db.status();
    EXPECT_EQ((*db)->GetStats().gc_recounted_bytes, planted_size - vlog::kSegmentHeaderSize);
    // Background GC may take the planted segment first (it is all garbage);
    // either way it is freed once the manual pass and background work end.
    auto gc = (*db)->RunGC();
    ASSERT_TRUE(gc.ok()) << gc.status();
    ASSERT_TRUE((*db)->WaitForBackgroundWork().ok());
    EXPECT_GE((*db)->GetStats().gc_segments_freed, 1u);
  }
  EXPECT_FALSE(fs::exists(lsm::ValueLogFileName(dir_, planted)));
  r = RunTool({"check", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  {
    // A clean close leaves nothing for the next open to count.
    auto db = DB::Open(options, dir_);
    ASSERT_TRUE(db.ok()) << db.status();
    EXPECT_EQ((*db)->GetStats().gc_recounted_bytes, 0u);
  }
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

// `cairn ingest`: a file set moves in, all of it readable after; a
// directory that is no file set is exit 1 naming it, the database as it was.
TEST_F(ToolTest, IngestAddsAFileSetAndRefusesWhatIsNone) {
  CreateDatabase();
  const std::string set = dir_ + "-set";
  fs::remove_all(set);
  {
    Options options;
    auto w = ExternalFileWriter::Open(options, set);
    ASSERT_OK(w);
    for (int i = 0; i < 50; ++i) {
      ASSERT_OK((*w)->Put(absl::StrFormat("ingested%03d", i), std::string(5000 + i, 'v')));
    }
    ASSERT_OK((*w)->Finish());
  }
  RunResult bad = RunTool({"ingest", dir_, dir_ + "-none"});
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr(dir_ + "-none"));
  RunResult r = RunTool({"ingest", dir_, set});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ingested 50 entries"));
  EXPECT_FALSE(fs::exists(set));  // moved in
  auto db = DB::Open(Options(), dir_);
  ASSERT_OK(db);
  std::string v;
  ASSERT_OK((*db)->Get({}, "ingested049", &v));
  EXPECT_EQ(v, std::string(5049, 'v'));
  ASSERT_OK((*db)->Get({}, Key(1), &v));
  EXPECT_EQ(v, Value(1));
}

}  // namespace
}  // namespace cairn
