// Regression tests for issue 13: damaged or missing files fail the open (or
// the read) with a status naming the file; they never read as absent keys.
// The rules are in docs/durability.md, "Recovery: what is dropped as torn,
// what is refused".
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "lsm/filename.h"
#include "vlog/vlog_format.h"

namespace cairn {
namespace {

using ::testing::HasSubstr;

constexpr char kDb[] = "/db";

Options SeparatedOptions() {
  Options o;
  o.memtable_size = 64 << 10;
  o.block_size = 1024;
  o.target_file_size = 64 << 10;
  o.value_log_segment_size = 64 << 10;
  o.value_separation_threshold = 100;
  o.separate_at_flush_below = 0;  // WAL records point into the value log
  o.gc_space_amp_trigger = 0;
  return o;
}

std::string Value(int i) { return std::string(200, static_cast<char>('a' + i % 26)) + std::to_string(i); }
std::string Key(int i) { return absl::StrFormat("key%03d", i); }

class RecoveryTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<DB>> Open(const Options& o = SeparatedOptions()) {
    return OpenWithFileSystem(o, kDb, fs_);
  }

  // Puts [from, to), then syncs them all: their WAL records point into the
  // value log, which these tests damage. (A synced group of small values
  // would carry the values in its WAL record instead.)
  void PutSync(DB* db, int from, int to) {
    for (int i = from; i < to; ++i) ASSERT_TRUE(db->Put({}, Key(i), Value(i)).ok());
    ASSERT_TRUE(db->SyncWAL().ok());
  }

  // Names in the directory of one file type, oldest first.
  std::vector<std::string> Names(lsm::FileType want) {
    std::vector<std::string> out;
    const std::vector<std::string> names = ListDir();
    for (const std::string& name : names) {
      uint64_t number;
      lsm::FileType type;
      if (lsm::ParseFileName(name, &number, &type) && type == want) out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string Path(const std::string& name) { return io::JoinPath(kDb, name); }
  std::vector<std::string> ListDir() {
    absl::StatusOr<std::vector<std::string>> names = fs_->ListDir(kDb);
    EXPECT_TRUE(names.ok()) << names.status();
    return names.ok() ? *std::move(names) : std::vector<std::string>();
  }

  // The files as they are now (a process crash leaves exactly these).
  std::map<std::string, std::string> Snapshot() {
    std::map<std::string, std::string> files;
    const std::vector<std::string> names = ListDir();
    for (const std::string& name : names) {
      if (name != "LOCK") files[name] = *fs_->ReadFileToString(Path(name));
    }
    return files;
  }
  void Restore(const std::map<std::string, std::string>& files) {
    fs_ = std::make_shared<io::MemoryFileSystem>();
    ASSERT_TRUE(fs_->CreateDir(kDb).ok());
    for (const auto& [name, contents] : files) {
      ASSERT_TRUE(fs_->WriteFileFromString(Path(name), contents).ok());
    }
  }

  // The open fails with DataLoss whose message names every one of names.
  void ExpectOpenFailsNaming(std::initializer_list<std::string> names,
                             const Options& o = SeparatedOptions()) {
    auto db = Open(o);
    ASSERT_FALSE(db.ok());
    EXPECT_TRUE(absl::IsDataLoss(db.status())) << db.status();
    for (const std::string& name : names) {
      EXPECT_TRUE(absl::StrContains(db.status().message(), name)) << name << ": " << db.status();
    }
  }

  // What a process crash after `n` sync puts leaves: the files as the
  // kernel holds them (the close that follows does not count).
  std::map<std::string, std::string> CrashImageAfterSyncPuts(int n) {
    auto db = Open();
    EXPECT_TRUE(db.ok()) << db.status();
    PutSync(db->get(), 0, n);
    auto files = Snapshot();
    db->reset();
    return files;
  }

  // Keys 0 .. n-1 read back with their values, and key n is absent.
  void ExpectExactlyTheFirst(DB* db, int n) {
    std::string v;
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(db->Get(ReadOptions(), Key(i), &v).ok()) << i;
      EXPECT_EQ(v, Value(i));
    }
    EXPECT_TRUE(absl::IsNotFound(db->Get(ReadOptions(), Key(n), &v)));
  }

  // The info log of the last open.
  std::string InfoLog() {
    absl::StatusOr<std::string> log = fs_->ReadFileToString(Path("LOG"));
    EXPECT_TRUE(log.ok()) << log.status();
    return log.ok() ? *std::move(log) : std::string();
  }

  std::shared_ptr<io::MemoryFileSystem> fs_ = std::make_shared<io::MemoryFileSystem>();
};

TEST_F(RecoveryTest, FlippedByteInAValueAWalRecordPointsToFailsTheOpen) {
  {
    auto db = Open();
    ASSERT_TRUE(db.ok()) << db.status();
    PutSync(db->get(), 0, 40);
  }
  const std::vector<std::string> segments = Names(lsm::FileType::kValueLog);
  ASSERT_EQ(segments.size(), 1u);
  std::string contents = *fs_->ReadFileToString(Path(segments[0]));
  const size_t at = contents.find(Value(5));
  ASSERT_NE(at, std::string::npos);
  contents[at + 10] ^= 0x01;
  ASSERT_TRUE(fs_->WriteFileFromString(Path(segments[0]), contents).ok());

  ExpectOpenFailsNaming({segments[0], ".log"});
}

TEST_F(RecoveryTest, CutOrDeletedSegmentFailsTheOpen) {
  for (const char* damage : {"cut 1", "cut half", "delete"}) {
    SCOPED_TRACE(damage);
    fs_ = std::make_shared<io::MemoryFileSystem>();
    {
      auto db = Open();
      ASSERT_TRUE(db.ok()) << db.status();
      PutSync(db->get(), 0, 40);
    }
    const std::string segment = Names(lsm::FileType::kValueLog).at(0);
    const std::string contents = *fs_->ReadFileToString(Path(segment));
    if (std::string(damage) == "delete") {
      ASSERT_TRUE(fs_->RemoveFile(Path(segment)).ok());
    } else {
      const size_t size = std::string(damage) == "cut 1" ? contents.size() - 1 : contents.size() / 2;
      ASSERT_TRUE(fs_->TruncateFile(Path(segment), size).ok());
    }
    ExpectOpenFailsNaming({segment});
  }
}

TEST_F(RecoveryTest, DamagedValueInTheActiveSegmentOfACrashFailsTheOpen) {
  // A process crash: the files as the kernel holds them, the active segment
  // unsealed. Damage inside its whole records is not a torn tail.
  auto files = CrashImageAfterSyncPuts(40);
  const std::string segment = Names(lsm::FileType::kValueLog).at(0);
  std::string& contents = files[segment];
  contents[contents.find(Value(5)) + 10] ^= 0x01;
  Restore(files);
  ExpectOpenFailsNaming({segment});
}

TEST_F(RecoveryTest, UnsyncedTailOfTheActiveSegmentIsDroppedAfterACrash) {
  // The last writes' values never reached the disk (cut off the active
  // segment) and were never synced: the WAL records naming them are a torn
  // tail and recovery keeps the prefix.
  auto db = Open();
  ASSERT_TRUE(db.ok()) << db.status();
  PutSync(db->get(), 0, 30);
  const std::string segment = Names(lsm::FileType::kValueLog).at(0);
  const size_t synced = fs_->ReadFileToString(Path(segment))->size();
  for (int i = 30; i < 40; ++i) ASSERT_TRUE((*db)->Put(WriteOptions(), Key(i), Value(i)).ok());
  auto files = Snapshot();
  db->reset();
  files[segment].resize(synced + 7);
  Restore(files);
  auto reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  ExpectExactlyTheFirst(reopened->get(), 30);
  // The info log says what the open cut, and where.
  EXPECT_THAT(InfoLog(), HasSubstr(absl::StrCat("open: ", Path(segment), ": cutting 7 bytes after "
                                                "its last whole record at ", synced)));
}

TEST_F(RecoveryTest, DamagedActiveSegmentThatTablesPointIntoFailsTheOpenAfterACleanClose) {
  // Every pointer is in a table (the flush dropped the WAL that held them)
  // and the segment they point into is still being written: no WAL replay
  // reads its records, so only the synced size the manifest records tells
  // damage there from a torn tail.
  for (const char* damage : {"cut 1", "cut half", "cut to the header", "flip in the last record"}) {
    SCOPED_TRACE(damage);
    fs_ = std::make_shared<io::MemoryFileSystem>();
    Options o = SeparatedOptions();
    o.value_log_segment_size = 1 << 20;  // one segment, never rolled
    {
      auto db = Open(o);
      ASSERT_TRUE(db.ok()) << db.status();
      for (int i = 0; i < 40; ++i) ASSERT_TRUE((*db)->Put({}, Key(i), Value(i)).ok());
      ASSERT_TRUE((*db)->Flush().ok());
      ASSERT_TRUE((*db)->Close().ok());
    }
    const std::vector<std::string> segments = Names(lsm::FileType::kValueLog);
    ASSERT_EQ(segments.size(), 1u);
    const std::string path = Path(segments[0]);
    std::string contents = *fs_->ReadFileToString(path);
    const std::string d = damage;
    if (d == "flip in the last record") {
      contents[contents.rfind(Value(39)) + 3] ^= 0x01;
    } else {
      contents.resize(d == "cut 1" ? contents.size() - 1
                      : d == "cut half" ? contents.size() / 2 : vlog::kSegmentHeaderSize);
    }
    ASSERT_TRUE(fs_->WriteFileFromString(path, contents).ok());
    ExpectOpenFailsNaming({segments[0]}, o);
    // The refusal cut nothing: the evidence is still there.
    EXPECT_EQ(fs_->ReadFileToString(path)->size(), contents.size());
  }
}

TEST_F(RecoveryTest, CrashTornTailPastWhatTablesReferenceIsCutAndNoLower) {
  // Flushed values (synced by the switch before the flush) and then
  // unsynced ones in the same segment; a crash tears the unsynced part.
  Options o = SeparatedOptions();
  o.value_log_segment_size = 1 << 20;
  auto db = Open(o);
  ASSERT_TRUE(db.ok()) << db.status();
  for (int i = 0; i < 30; ++i) ASSERT_TRUE((*db)->Put({}, Key(i), Value(i)).ok());
  ASSERT_TRUE((*db)->Flush().ok());
  const std::string segment = Names(lsm::FileType::kValueLog).at(0);
  const size_t synced = fs_->ReadFileToString(Path(segment))->size();
  for (int i = 30; i < 40; ++i) ASSERT_TRUE((*db)->Put({}, Key(i), Value(i)).ok());
  auto files = Snapshot();
  db->reset();

  // Torn past the synced size: the flushed values stay, the torn ones go.
  auto torn = files;
  torn[segment].resize(synced + 9);
  Restore(torn);
  {
    auto reopened = Open(o);
    ASSERT_TRUE(reopened.ok()) << reopened.status();
    ExpectExactlyTheFirst(reopened->get(), 30);
  }
  // Cut below it: refused, naming the segment.
  auto cut = files;
  cut[segment].resize(synced - 1);
  Restore(cut);
  ExpectOpenFailsNaming({segment}, o);
}

TEST_F(RecoveryTest, ManifestCutByOneByteAfterASyncedAddSegmentFailsTheOpen) {
  auto files = CrashImageAfterSyncPuts(40);  // the last manifest record adds the segment
  const std::string manifest = Names(lsm::FileType::kManifest).back();
  const std::string segment = Names(lsm::FileType::kValueLog).at(0);
  for (bool flip : {false, true}) {
    SCOPED_TRACE(flip ? "last byte flipped" : "cut by one byte");
    auto damaged = files;
    std::string& m = damaged[manifest];
    if (flip) {
      m.back() ^= 0x01;
    } else {
      m.pop_back();
    }
    Restore(damaged);
    ExpectOpenFailsNaming({manifest, segment});
    // Nothing was deleted as an orphan.
    EXPECT_TRUE(fs_->FileExists(Path(segment)));
  }
}

TEST_F(RecoveryTest, ManifestCutToHalfFailsTheOpenAndKeepsTheTables) {
  auto db = Open();
  ASSERT_TRUE(db.ok()) << db.status();
  for (int round = 0; round < 4; ++round) {
    PutSync(db->get(), round * 40, round * 40 + 40);
    ASSERT_TRUE((*db)->Flush().ok());
  }
  auto files = Snapshot();
  db->reset();
  const std::string manifest = Names(lsm::FileType::kManifest).back();
  std::vector<std::string> tables;
  for (const auto& [name, contents] : files) {
    if (absl::EndsWith(name, ".sst")) tables.push_back(name);
  }
  ASSERT_FALSE(tables.empty());
  files[manifest].resize(files[manifest].size() / 2);
  Restore(files);
  auto reopened = Open();
  ASSERT_FALSE(reopened.ok());
  EXPECT_TRUE(absl::StrContains(reopened.status().message(), manifest)) << reopened.status();
  for (const std::string& t : tables) EXPECT_TRUE(fs_->FileExists(Path(t))) << t << " " << reopened.status();
}

TEST_F(RecoveryTest, UnknownOlderTableIsRefusedNotDeletedWhenTheManifestEndsTorn) {
  {
    auto db = Open();
    ASSERT_TRUE(db.ok()) << db.status();
    PutSync(db->get(), 0, 10);
  }
  const std::string manifest = Names(lsm::FileType::kManifest).back();
  const std::string stray = "000002.sst";  // numbered below the manifest
  ASSERT_TRUE(fs_->WriteFileFromString(Path(stray), "a table a lost record named").ok());
  // The last record (the close's) torn: alone, a crash could do that and
  // nothing is lost, but then no older table can be unknown.
  const uint64_t size = *fs_->GetFileSize(Path(manifest));
  ASSERT_TRUE(fs_->TruncateFile(Path(manifest), size - 1).ok());
  ExpectOpenFailsNaming({stray, manifest});
  EXPECT_TRUE(fs_->FileExists(Path(stray)));
}

TEST_F(RecoveryTest, ACollectedSegmentThatComesBackIsAnOrphanWhenTheManifestEndsTorn) {
  // A power loss can undo the deletion of a segment GC collected (its
  // directory entry was never synced) and also tear the manifest's last
  // record. A surviving record removed the segment, so no lost record
  // named it: the open goes on and deletes it.
  {
    auto db = Open();
    ASSERT_TRUE(db.ok()) << db.status();
    PutSync(db->get(), 0, 600);
    ASSERT_TRUE((*db)->Flush().ok());
  }
  // The next open writes a new manifest, numbered above these segments.
  const std::map<std::string, std::string> before = Snapshot();
  {
    auto db = Open();
    ASSERT_TRUE(db.ok()) << db.status();
    PutSync(db->get(), 0, 600);  // every value of the first segments is garbage
    ASSERT_TRUE((*db)->Flush().ok());
    ASSERT_TRUE((*db)->CompactRange(nullptr, nullptr).ok());
    absl::StatusOr<GcResult> gc = (*db)->RunGC();
    ASSERT_TRUE(gc.ok()) << gc.status();
    ASSERT_GT(gc->segments_freed, 0u);
    PutSync(db->get(), 700, 710);
    ASSERT_TRUE((*db)->Flush().ok());
  }
  std::string collected;
  for (const auto& [name, contents] : before) {
    if (absl::EndsWith(name, ".vlog") && !fs_->FileExists(Path(name))) collected = name;
  }
  ASSERT_FALSE(collected.empty()) << "GC collected no segment";
  ASSERT_TRUE(fs_->WriteFileFromString(Path(collected), before.at(collected)).ok());
  // The start of a record whose append the power loss cut short.
  const std::string manifest = Names(lsm::FileType::kManifest).back();
  ASSERT_TRUE(
      fs_->WriteFileFromString(Path(manifest), *fs_->ReadFileToString(Path(manifest)) + "tor")
          .ok());

  auto db = Open();
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_FALSE(fs_->FileExists(Path(collected)));
  std::string v;
  for (int i : {0, 57, 599, 700, 709}) {
    ASSERT_TRUE((*db)->Get(ReadOptions(), Key(i), &v).ok()) << i;
    EXPECT_EQ(v, Value(i));
  }
}

TEST_F(RecoveryTest, UnknownOlderTableIsAnOrphanWhenTheManifestEndsCleanly) {
  {
    auto db = Open();
    ASSERT_TRUE(db.ok()) << db.status();
    PutSync(db->get(), 0, 10);
  }
  ASSERT_TRUE(fs_->WriteFileFromString(Path("000002.sst"), "garbage").ok());
  auto db = Open();
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_FALSE(fs_->FileExists(Path("000002.sst")));
  EXPECT_THAT(InfoLog(), HasSubstr("open: removing 000002.sst: a table no version names"));
}

TEST_F(RecoveryTest, SegmentTheManifestNeverNamedIsRemovedAndNamedInTheInfoLog) {
  // A segment file a session created and crashed before logging: no WAL
  // record and no table can point into it, so the open removes it, and the
  // info log says so.
  {
    auto db = Open();
    ASSERT_TRUE(db.ok()) << db.status();
    PutSync(db->get(), 0, 10);
  }
  const std::string segment = Names(lsm::FileType::kValueLog).at(0);
  ASSERT_TRUE(fs_->WriteFileFromString(Path("000900.vlog"), *fs_->ReadFileToString(Path(segment))).ok());
  auto db = Open();
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_FALSE(fs_->FileExists(Path("000900.vlog")));
  EXPECT_TRUE(fs_->FileExists(Path(segment)));
  EXPECT_THAT(InfoLog(), HasSubstr("open: removing 000900.vlog: a value-log segment the manifest "
                                   "never named"));
  std::string v;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE((*db)->Get(ReadOptions(), Key(i), &v).ok()) << i;
    EXPECT_EQ(v, Value(i));
  }
}

TEST_F(RecoveryTest, MissingTableFailsTheOpenNamingIt) {
  {
    auto db = Open();
    ASSERT_TRUE(db.ok()) << db.status();
    PutSync(db->get(), 0, 40);
    ASSERT_TRUE((*db)->Flush().ok());
  }
  const std::string table = Names(lsm::FileType::kTable).at(0);
  ASSERT_TRUE(fs_->RemoveFile(Path(table)).ok());
  ExpectOpenFailsNaming({table});
}

TEST_F(RecoveryTest, TableOrSegmentThatVanishesUnderAnOpenDatabaseReadsAsDataLoss) {
  // Inline values read the table; separated ones also the segment.
  for (lsm::FileType type : {lsm::FileType::kTable, lsm::FileType::kValueLog}) {
    SCOPED_TRACE(lsm::FileTypeName(type));
    fs_ = std::make_shared<io::MemoryFileSystem>();
    Options o = SeparatedOptions();
    if (type == lsm::FileType::kTable) o.value_separation_threshold = kInlineValues;
    {
      auto db = Open(o);
      ASSERT_TRUE(db.ok()) << db.status();
      PutSync(db->get(), 0, 40);
      ASSERT_TRUE((*db)->Flush().ok());
    }
    auto db = Open(o);
    ASSERT_TRUE(db.ok()) << db.status();
    const std::string name = Names(type).at(0);
    ASSERT_TRUE(fs_->RemoveFile(Path(name)).ok());
    std::string v;
    absl::Status s = (*db)->Get(ReadOptions(), Key(3), &v);
    EXPECT_TRUE(absl::IsDataLoss(s)) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), name)) << s;
  }
}

TEST_F(RecoveryTest, DeletedLiveWalFailsTheOpen) {
  for (bool separated : {false, true}) {
    SCOPED_TRACE(separated ? "separated" : "inline");
    fs_ = std::make_shared<io::MemoryFileSystem>();
    Options o = SeparatedOptions();
    if (!separated) o.value_separation_threshold = kInlineValues;
    {
      auto db = Open(o);
      ASSERT_TRUE(db.ok()) << db.status();
      PutSync(db->get(), 0, 40);
    }
    const std::string wal = Names(lsm::FileType::kLog).back();
    ASSERT_TRUE(fs_->RemoveFile(Path(wal)).ok());
    ExpectOpenFailsNaming({wal}, o);
  }
}

TEST_F(RecoveryTest, WalCutAfterACleanCloseFailsTheOpen) {
  Options o = SeparatedOptions();
  o.value_separation_threshold = kInlineValues;
  {
    auto db = Open(o);
    ASSERT_TRUE(db.ok()) << db.status();
    PutSync(db->get(), 0, 40);
  }
  const std::string wal = Names(lsm::FileType::kLog).back();
  const uint64_t size = *fs_->GetFileSize(Path(wal));
  ASSERT_TRUE(fs_->TruncateFile(Path(wal), size - 1).ok());
  ExpectOpenFailsNaming({wal}, o);
}

TEST_F(RecoveryTest, DirectoryLeftByAnInterruptedCreationOpensAsANewDatabase) {
  // What a kill -9 in the first milliseconds of a creation leaves: LOCK,
  // the first manifest and the temporary CURRENT, no CURRENT.
  ASSERT_TRUE(fs_->CreateDir(kDb).ok());
  {
    lsm::VersionSet versions(fs_.get(), kDb);
    ASSERT_TRUE(versions.CreateNew().ok());
  }
  ASSERT_TRUE(fs_->RemoveFile(Path("CURRENT")).ok());
  ASSERT_TRUE(fs_->WriteFileFromString(Path("LOCK"), "").ok());
  ASSERT_TRUE(fs_->WriteFileFromString(Path("000001.tmp"), "MANIFEST-0").ok());
  ASSERT_TRUE(fs_->FileExists(Path("MANIFEST-000001")));
  {
    auto db = Open();
    ASSERT_TRUE(db.ok()) << db.status();
    PutSync(db->get(), 0, 3);
  }
  auto db = Open();
  ASSERT_TRUE(db.ok()) << db.status();
  std::string v;
  ASSERT_TRUE((*db)->Get(ReadOptions(), Key(2), &v).ok());
  EXPECT_EQ(v, Value(2));
  EXPECT_FALSE(fs_->FileExists(Path("000001.tmp")));
}

TEST_F(RecoveryTest, DirectoryWithoutCurrentButWithDataIsRefused) {
  {
    auto db = Open();
    ASSERT_TRUE(db.ok()) << db.status();
    PutSync(db->get(), 0, 3);
  }
  ASSERT_TRUE(fs_->RemoveFile(Path("CURRENT")).ok());
  auto db = Open();
  ASSERT_FALSE(db.ok());
  EXPECT_TRUE(absl::StrContains(db.status().message(), "CURRENT")) << db.status();
}

}  // namespace
}  // namespace cairn
