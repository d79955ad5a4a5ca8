// `cairn check` on what a crash leaves, and on a cleanly closed database:
// a leftover the next open cleans up (an orphan table or segment, a stray
// temporary file, a WAL or manifest that ends in a torn record, value-log
// bytes nothing names) is a `cleanup:` line with exit 0; damage is a
// `problem:` line with exit 1 (docs/tools.md, "cairn check after each kind
// of crash leftover").
//
// A crashed directory is made as a kill -9 leaves one: the files of a
// database that is still open are copied (every acknowledged write has
// reached the kernel), and the leftover a crash at a later moment would add
// (a flush's table, a new segment, the start of a manifest record) is
// copied in from the same database a moment later. Each image is then
// opened, closed and checked again: the open must clean up what the check
// said it would.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/testing/status_matchers.h"
#include "lsm/filename.h"
#include "tests/check_tool.h"

namespace cairn {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

using Model = std::map<std::string, std::string>;

std::string Key(int i) { return absl::StrFormat("key-%06d", i); }

// 100 to 3,000 bytes, different for each key and round.
std::string Value(int i, int round) {
  const size_t size =
      100 + (static_cast<size_t>(i) * 797 + static_cast<size_t>(round) * 131) % 2901;
  std::string v = absl::StrFormat("value-%06d-round-%d-", i, round);
  while (v.size() < size) v.push_back(static_cast<char>('a' + (v.size() * 7 + i + round) % 26));
  v.resize(size);
  return v;
}

// The lines of output that begin with prefix.
std::vector<std::string> Lines(const std::string& output, std::string_view prefix) {
  std::vector<std::string> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

// Names of the files in dir of one type.
std::set<std::string> FilesOfType(const std::string& dir, lsm::FileType want) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    uint64_t number;
    lsm::FileType type;
    const std::string name = e.path().filename().string();
    if (lsm::ParseFileName(name, &number, &type) && type == want) out.insert(name);
  }
  return out;
}

class CheckLeftoversTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kCairnTool)) << "build the cairn_tool target first";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = absl::StrCat("/tmp/cairn_check_leftovers_", getpid(), "_", info->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    db_ = root_ + "/db";
    image_ = root_ + "/image";
  }
  void TearDown() override { fs::remove_all(root_); }

  // The options of the issue (63, item 4): values of 1,024 bytes and up go
  // to the value log as they are written, and GC never runs.
  static Options IssueOptions() {
    Options o;
    o.value_separation_threshold = 1024;
    o.separate_at_flush_below = 0;
    o.gc_space_amp_trigger = 0;
    return o;
  }

  void Open(const Options& o) {
    auto db = DB::Open(o, db_);
    ASSERT_OK(db);
    db_handle_ = *std::move(db);
  }
  void Put(int i, int round, bool sync = false) {
    ASSERT_OK(db_handle_->Put(WriteOptions{.sync = sync}, Key(i), Value(i, round)));
    model_[Key(i)] = Value(i, round);
  }

  // The crash image: the open database's files as a kill -9 now would
  // leave them.
  void TakeImage() {
    ASSERT_OK(db_handle_->WaitForBackgroundWork());
    fs::remove_all(image_);
    fs::create_directories(image_);
    for (const auto& e : fs::directory_iterator(db_)) {
      fs::copy_file(e.path(), image_ + "/" + e.path().filename().string());
    }
  }
  // Copies into the image the files of type the database has and it has
  // not (what a crash a moment later would have left too).
  std::vector<std::string> CopyNewFiles(lsm::FileType type) {
    std::vector<std::string> copied;
    const std::set<std::string> have = FilesOfType(image_, type);
    for (const std::string& name : FilesOfType(db_, type)) {
      if (have.contains(name)) continue;
      fs::copy_file(db_ + "/" + name, image_ + "/" + name);
      copied.push_back(name);
    }
    return copied;
  }

  // Opens dir as the next session would, reads every key of the model
  // (from want, the keys that must be there), closes it, and checks it
  // again: nothing is left to clean up.
  void ExpectOpenCleansUp(const std::string& dir, const Model& want) {
    {
      auto db = DB::Open(IssueOptions(), dir);
      ASSERT_OK(db);
      for (const auto& [k, v] : want) {
        std::string got;
        ASSERT_OK((*db)->Get(ReadOptions(), k, &got)) << k;
        ASSERT_EQ(got, v) << k;
      }
    }
    const CheckReport after = RunCheckTool(dir);
    EXPECT_EQ(after.exit_code, 0) << after.output;
    EXPECT_THAT(Lines(after.output, "problem:"), ::testing::IsEmpty()) << after.output;
    EXPECT_THAT(Lines(after.output, "cleanup:"), ::testing::IsEmpty()) << after.output;
    EXPECT_EQ(after.unbalanced, 0) << after.output;
  }

  // The database of the issue, closed cleanly: 410 keys of 100 to 3,000
  // bytes, the first 310 flushed and compacted, then the last 100 and
  // overwrites of 40 written with sync writes and left in the WAL.
  void BuildIssueDatabase() {
    Open(IssueOptions());
    if (HasFatalFailure()) return;
    for (int i = 0; i < 310; ++i) Put(i, 0);
    ASSERT_OK(db_handle_->Flush());
    ASSERT_OK(db_handle_->CompactRange(nullptr, nullptr));
    for (int i = 310; i < 410; ++i) Put(i, 0, /*sync=*/true);
    for (int i = 0; i < 400; i += 10) Put(i, 1, /*sync=*/true);
    ASSERT_OK(db_handle_->Close());
    db_handle_.reset();
  }

  std::string root_, db_, image_;
  std::unique_ptr<DB> db_handle_;
  Model model_;
};

// The issue's case: the value-log copies of synced groups whose WAL records
// carry the values themselves are garbage the next open counts, not a leak.
TEST_F(CheckLeftoversTest, CleanlyClosedDatabaseWithValuesInTheWalChecksClean) {
  BuildIssueDatabase();
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_FALSE(FilesOfType(db_, lsm::FileType::kLog).empty());
  const CheckReport r = RunCheckTool(db_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(Lines(r.output, "problem:"), ::testing::IsEmpty()) << r.output;
  EXPECT_THAT(Lines(r.output, "cleanup:"), ::testing::IsEmpty()) << r.output;
  EXPECT_EQ(r.unbalanced, 0) << r.output;
  EXPECT_EQ(r.problems, 0) << r.output;
  // What the WALs carry is named, and it is exactly what the next open
  // counts as garbage.
  uint64_t carried = 0;
  for (const std::string& line : Lines(r.output, "note: ")) {
    const size_t at = line.find(" bytes) whose values a WAL record carries too");
    if (at == std::string::npos) continue;
    carried += std::stoull(line.substr(line.rfind('(', at) + 1));
  }
  EXPECT_GT(carried, 0u) << r.output;
  {
    auto db = DB::Open(IssueOptions(), db_);
    ASSERT_OK(db);
    EXPECT_EQ((*db)->GetStats().gc_recounted_bytes, carried) << r.output;
    for (const auto& [k, v] : model_) {
      std::string got;
      ASSERT_OK((*db)->Get(ReadOptions(), k, &got)) << k;
      ASSERT_EQ(got, v) << k;
    }
  }
  ExpectOpenCleansUp(db_, model_);
}

// Damage to a cleanly closed database still exits 1.
TEST_F(CheckLeftoversTest, DamagedTableInACleanlyClosedDatabaseExits1) {
  BuildIssueDatabase();
  ASSERT_FALSE(HasFatalFailure());
  const std::set<std::string> tables = FilesOfType(db_, lsm::FileType::kTable);
  ASSERT_FALSE(tables.empty());
  const std::string path = db_ + "/" + *tables.begin();
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(100);
    f.write(&c, 1);
  }
  const CheckReport r = RunCheckTool(db_);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("problem: ", *tables.begin())));
  EXPECT_THAT(r.output, HasSubstr("PROBLEMS FOUND"));
}

// A crash with writes in the live WALs (sync and not): the next open
// replays them. Nothing to report but the synced groups' value copies.
TEST_F(CheckLeftoversTest, CrashWithWritesInTheWalIsNotDamage) {
  Open(IssueOptions());
  ASSERT_FALSE(HasFatalFailure());
  for (int i = 0; i < 200; ++i) Put(i, 0);
  ASSERT_OK(db_handle_->Flush());
  for (int i = 200; i < 300; ++i) Put(i, 0, /*sync=*/i % 2 == 0);
  for (int i = 0; i < 100; i += 7) Put(i, 1, /*sync=*/true);
  TakeImage();
  db_handle_.reset();
  const CheckReport r = RunCheckTool(image_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(Lines(r.output, "problem:"), ::testing::IsEmpty()) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\nOK")) << r.output;
  ExpectOpenCleansUp(image_, model_);
}

// A crash after a flush wrote its table and before the manifest named it.
TEST_F(CheckLeftoversTest, OrphanTableIsACleanup) {
  Open(IssueOptions());
  ASSERT_FALSE(HasFatalFailure());
  for (int i = 0; i < 100; ++i) Put(i, 0);
  const Model before = model_;
  TakeImage();
  ASSERT_OK(db_handle_->Flush());
  const std::vector<std::string> orphans = CopyNewFiles(lsm::FileType::kTable);
  ASSERT_EQ(orphans.size(), 1u);
  db_handle_.reset();
  const CheckReport r = RunCheckTool(image_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(Lines(r.output, "problem:"), ::testing::IsEmpty()) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("cleanup: ", orphans[0],
                                               ": orphan SST, not in the current version: the "
                                               "next open deletes it")));
  EXPECT_EQ(r.orphans, 1) << r.output;
  ExpectOpenCleansUp(image_, before);
  EXPECT_FALSE(fs::exists(image_ + "/" + orphans[0]));
}

// A crash after a segment was created and before the manifest named it.
TEST_F(CheckLeftoversTest, OrphanSegmentIsACleanup) {
  Options o = IssueOptions();
  o.separate_at_flush_below = 16 << 10;  // the flush writes a segment of its own
  auto db = DB::Open(o, db_);
  ASSERT_OK(db);
  db_handle_ = *std::move(db);
  for (int i = 0; i < 100; ++i) Put(i, 0);
  const Model before = model_;
  TakeImage();
  ASSERT_OK(db_handle_->Flush());
  const std::vector<std::string> orphans = CopyNewFiles(lsm::FileType::kValueLog);
  ASSERT_EQ(orphans.size(), 1u);
  db_handle_.reset();
  const CheckReport r = RunCheckTool(image_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(Lines(r.output, "problem:"), ::testing::IsEmpty()) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat(
                            "cleanup: ", orphans[0],
                            ": orphan value-log segment, not in the segment set and no WAL "
                            "needs it: the next open deletes it")));
  EXPECT_EQ(r.orphans, 1) << r.output;
  ExpectOpenCleansUp(image_, before);
  EXPECT_FALSE(fs::exists(image_ + "/" + orphans[0]));
}

// A crash that tore the newest WAL's last record: the next open cuts it
// off, and counts the value-log record it named as garbage.
TEST_F(CheckLeftoversTest, TornWalTailAndTheValueItNamedAreCleanups) {
  Options o = IssueOptions();
  o.wal_prefill_bytes = 0;  // the WAL ends at its last record
  auto db = DB::Open(o, db_);
  ASSERT_OK(db);
  db_handle_ = *std::move(db);
  for (int i = 0; i < 50; ++i) Put(i, 0);
  const Model before = model_;
  // A value of the value log, whose WAL record the crash tears.
  ASSERT_OK(db_handle_->Put(WriteOptions(), "torn", std::string(2000, 't')));
  TakeImage();
  db_handle_.reset();
  const std::set<std::string> wals = FilesOfType(image_, lsm::FileType::kLog);
  ASSERT_FALSE(wals.empty());
  const std::string wal = image_ + "/" + *wals.rbegin();
  fs::resize_file(wal, fs::file_size(wal) - 3);
  const CheckReport r = RunCheckTool(image_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(Lines(r.output, "problem:"), ::testing::IsEmpty()) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("cleanup: ", *wals.rbegin(), ": torn tail at")));
  EXPECT_THAT(r.output, HasSubstr("the next open cuts it off"));
  EXPECT_THAT(r.output, HasSubstr("neither referenced nor counted as garbage (a leak): the next "
                                  "open counts them as garbage"));
  EXPECT_EQ(r.unbalanced, 1) << r.output;
  ExpectOpenCleansUp(image_, before);
}

// A crash that tore the manifest's last record: never acknowledged, so
// the next open drops it and writes a new manifest.
TEST_F(CheckLeftoversTest, TornManifestTailIsACleanup) {
  Open(IssueOptions());
  ASSERT_FALSE(HasFatalFailure());
  for (int i = 0; i < 100; ++i) Put(i, 0);
  ASSERT_OK(db_handle_->Flush());
  const Model before = model_;
  TakeImage();
  const std::set<std::string> manifests = FilesOfType(image_, lsm::FileType::kManifest);
  ASSERT_EQ(manifests.size(), 1u);
  const std::string manifest = *manifests.begin();
  const uint64_t old_size = fs::file_size(image_ + "/" + manifest);
  // The next edit (a flush's), of which the crash let half reach the file.
  for (int i = 100; i < 150; ++i) Put(i, 0);
  ASSERT_OK(db_handle_->Flush());
  db_handle_.reset();
  std::string bytes;
  {
    std::ifstream in(db_ + "/" + manifest, std::ios::binary);
    ASSERT_TRUE(in.good()) << "the flush started a new manifest";
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(bytes.size(), old_size + 8);
  bytes.resize(old_size + (bytes.size() - old_size) / 2);
  std::ofstream(image_ + "/" + manifest, std::ios::binary | std::ios::trunc) << bytes;
  const CheckReport r = RunCheckTool(image_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(Lines(r.output, "problem:"), ::testing::IsEmpty()) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("cleanup: ", manifest,
                                               ": ends in a torn record at "
                                               "offset ",
                                               old_size)));
  ExpectOpenCleansUp(image_, before);
}

// A crash between a flush's manifest edit and the deletion of the WAL it
// replaced, and one that left a temporary file.
TEST_F(CheckLeftoversTest, ObsoleteWalAndTemporaryFileAreCleanups) {
  Open(IssueOptions());
  ASSERT_FALSE(HasFatalFailure());
  for (int i = 0; i < 100; ++i) Put(i, 0);
  const std::set<std::string> old_wals = FilesOfType(db_, lsm::FileType::kLog);
  ASSERT_EQ(old_wals.size(), 1u);
  const std::string old_wal = *old_wals.begin();
  fs::copy_file(db_ + "/" + old_wal, root_ + "/" + old_wal);
  ASSERT_OK(db_handle_->Flush());
  for (int i = 100; i < 120; ++i) Put(i, 0);
  TakeImage();
  db_handle_.reset();
  ASSERT_FALSE(fs::exists(image_ + "/" + old_wal));
  fs::copy_file(root_ + "/" + old_wal, image_ + "/" + old_wal);
  const std::string tmp = fs::path(lsm::TempFileName(image_, 999)).filename().string();
  std::ofstream(image_ + "/" + tmp) << "half a CURRENT";
  const CheckReport r = RunCheckTool(image_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(Lines(r.output, "problem:"), ::testing::IsEmpty()) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("cleanup: ", old_wal, ": obsolete WAL")));
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("cleanup: ", tmp, ": temporary file")));
  ExpectOpenCleansUp(image_, model_);
  EXPECT_FALSE(fs::exists(image_ + "/" + old_wal));
  EXPECT_FALSE(fs::exists(image_ + "/" + tmp));
}

// Leftovers do not hide damage: a crashed directory that also lost a table
// the manifest names exits 1.
TEST_F(CheckLeftoversTest, MissingTableInACrashedDirectoryExits1) {
  Open(IssueOptions());
  ASSERT_FALSE(HasFatalFailure());
  for (int i = 0; i < 100; ++i) Put(i, 0);
  ASSERT_OK(db_handle_->Flush());
  for (int i = 100; i < 150; ++i) Put(i, 0, /*sync=*/true);
  TakeImage();
  db_handle_.reset();
  const std::set<std::string> tables = FilesOfType(image_, lsm::FileType::kTable);
  ASSERT_EQ(tables.size(), 1u);
  fs::remove(image_ + "/" + *tables.begin());
  const CheckReport r = RunCheckTool(image_);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("problem: ", *tables.begin())));
  EXPECT_THAT(r.output, HasSubstr("PROBLEMS FOUND"));
  // The bytes the lost table pointed at are no leak the open would count.
  EXPECT_THAT(r.output, HasSubstr("or named by the entries of a table or WAL that could not be "
                                  "read"));
  EXPECT_THAT(Lines(r.output, "cleanup:"), ::testing::IsEmpty()) << r.output;
}

}  // namespace
}  // namespace cairn
