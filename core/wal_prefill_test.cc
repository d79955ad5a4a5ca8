// Options::wal_prefill_bytes on the real backends: the WAL is zero-filled
// ahead of its appends. A process that dies leaves those zeros after the
// last record, and recovery reads them as the WAL's clean end (format 3,
// docs/wal_format.md "Zeros written ahead") with every acknowledged write
// back, synced or not; a WAL closed whole has none; the zeros are counted
// apart from write amplification; and the option is validated.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "gtest/gtest.h"
#include "io/file_system.h"
#include "io/posix_file_system.h"
#include "io/testing/forked_child.h"
#include "lsm/filename.h"
#include "lsm/log_format.h"
#include "lsm/log_reader.h"

namespace cairn {
namespace {

constexpr uint64_t kChunk = 64 << 10;
constexpr int kKeys = 300;

std::string Key(int i) { return absl::StrFormat("key%05d", i); }
std::string ValueOf(int i) { return std::string(1000 + i % 7, static_cast<char>('a' + i % 26)); }

// What a WAL file holds: its size, where its last whole record ends, and how
// the reader says it ends.
struct WalFile {
  std::string name;
  uint64_t size = 0;
  uint64_t valid_end = 0;
  bool torn = false;
  absl::Status status;
  int records = 0;
};

class WalPrefillTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/cairn_wal_prefill_", GetParam(), "_", getpid());
    std::filesystem::remove_all(dir_);
    ::setenv("CAIRN_IO", GetParam() == "io_uring" ? "uring" : "posix", 1);
  }
  void TearDown() override {
    ::unsetenv("CAIRN_IO");
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  Options PrefillOptions() const {
    Options o;
    o.wal_prefill_bytes = kChunk;
    return o;
  }

  // Puts kKeys keys in a child process that then dies without closing the
  // database, as kill -9 would leave it (the kernel keeps what was written).
  void PutThenDie(const Options& options, bool sync) {
    const pid_t pid = io::testing::StartForkedChild(60, [&] {
      auto db = DB::Open(options, dir_);
      if (!db.ok()) return 3;
      WriteOptions wo;
      wo.sync = sync;
      for (int i = 0; i < kKeys; ++i) {
        if (!(*db)->Put(wo, Key(i), ValueOf(i)).ok()) return 4;
      }
      _exit(0);  // No close: the WAL stays as the writes left it.
    });
    ASSERT_EQ(io::testing::WaitForForkedChild(pid, 60), "");
  }

  std::vector<WalFile> Wals() const {
    std::vector<WalFile> out;
    io::PosixFileSystem fs;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      uint64_t number;
      lsm::FileType type;
      const std::string name = entry.path().filename();
      if (!lsm::ParseFileName(name, &number, &type) || type != lsm::FileType::kLog) continue;
      WalFile w;
      w.name = name;
      w.size = entry.file_size();
      auto reader = lsm::LogReader::Open(&fs, entry.path(), number);
      EXPECT_TRUE(reader.ok()) << reader.status();
      if (!reader.ok()) continue;
      EXPECT_EQ((*reader)->format_version(), lsm::kLogFormatVersion);
      std::string_view record;
      std::string scratch;
      while ((*reader)->ReadRecord(&record, &scratch)) ++w.records;
      w.valid_end = (*reader)->valid_end_offset();
      w.torn = (*reader)->hit_torn_tail();
      w.status = (*reader)->status();
      out.push_back(w);
    }
    return out;
  }

  void ExpectAllKeys(const Options& options) {
    auto db = DB::Open(options, dir_);
    ASSERT_TRUE(db.ok()) << db.status();
    for (int i = 0; i < kKeys; ++i) {
      std::string value;
      ASSERT_TRUE((*db)->Get({}, Key(i), &value).ok()) << Key(i);
      EXPECT_EQ(value, ValueOf(i)) << Key(i);
    }
  }

  std::string InfoLog() const {
    io::PosixFileSystem fs;
    return io::ReadFileToString(&fs, dir_ + "/LOG").value_or("");
  }

  std::string dir_;
};

TEST_P(WalPrefillTest, ADeadWritersZerosAreTheCleanEndAndEveryWriteComesBack) {
  for (bool sync : {false, true}) {
    SCOPED_TRACE(sync ? "synced writes" : "unsynced writes");
    std::filesystem::remove_all(dir_);
    const Options options = PrefillOptions();
    PutThenDie(options, sync);
    // The newest WAL holds the writes, then zeros through the end of the
    // chunk its last record reached.
    std::vector<WalFile> wals = Wals();
    ASSERT_FALSE(wals.empty());
    const WalFile* newest = &wals.front();
    for (const WalFile& w : wals) {
      if (w.name > newest->name) newest = &w;
    }
    EXPECT_EQ(newest->records, kKeys);
    EXPECT_TRUE(newest->status.ok()) << newest->status;
    EXPECT_FALSE(newest->torn);
    EXPECT_GT(newest->size, newest->valid_end);
    EXPECT_EQ(newest->size % kChunk, 0u) << newest->size;
    ExpectAllKeys(options);
    EXPECT_EQ(InfoLog().find("damaged or cut"), std::string::npos) << InfoLog();
  }
}

TEST_P(WalPrefillTest, AWalClosedWholeHasNoZeros) {
  const Options options = PrefillOptions();
  {
    auto db = DB::Open(options, dir_);
    ASSERT_TRUE(db.ok()) << db.status();
    for (int i = 0; i < kKeys; ++i) ASSERT_TRUE((*db)->Put({}, Key(i), ValueOf(i)).ok());
    ASSERT_TRUE((*db)->Close().ok());
  }
  for (const WalFile& w : Wals()) {
    SCOPED_TRACE(w.name);
    EXPECT_TRUE(w.status.ok()) << w.status;
    EXPECT_FALSE(w.torn);
    EXPECT_EQ(w.size, w.valid_end);
  }
  ExpectAllKeys(options);
}

TEST_P(WalPrefillTest, ZerosAreCountedApartFromWriteAmplification) {
  Options options = PrefillOptions();
  auto db = DB::Open(options, dir_);
  ASSERT_TRUE(db.ok()) << db.status();
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE((*db)->Put({}, Key(i), ValueOf(i)).ok());
  const Stats st = (*db)->GetStats();
  // Every WAL byte was written over a zero filled ahead of it.
  EXPECT_GE(st.wal_bytes_prefilled, st.wal_bytes_written);
  EXPECT_LT(st.wal_bytes_prefilled, st.wal_bytes_written + 3 * kChunk);
  // The WAL's share of write amplification is its records, near the
  // user's bytes, not the zeros as well.
  EXPECT_LT(st.wal_bytes_written, st.user_bytes_written * 11 / 10 + 4096);
  std::string report;
  ASSERT_TRUE((*db)->GetProperty("cairn.stats", &report));
  EXPECT_NE(report.find("wal zero-filled ahead"), std::string::npos) << report;
}

TEST_P(WalPrefillTest, OffWritesNoZeros) {
  Options options = PrefillOptions();
  options.wal_prefill_bytes = 0;
  PutThenDie(options, /*sync=*/false);
  for (const WalFile& w : Wals()) {
    SCOPED_TRACE(w.name);
    EXPECT_EQ(w.size, w.valid_end);
  }
  ExpectAllKeys(options);
  auto db = DB::Open(options, dir_);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ((*db)->GetStats().wal_bytes_prefilled, 0u);
}

TEST_P(WalPrefillTest, OptionIsValidated) {
  for (uint64_t bad : {uint64_t{1000}, uint64_t{4097}, (uint64_t{64} << 20) + 4096}) {
    Options options;
    options.wal_prefill_bytes = bad;
    auto db = DB::Open(options, dir_);
    EXPECT_TRUE(absl::IsInvalidArgument(db.status())) << bad << ": " << db.status();
    EXPECT_NE(db.status().message().find("wal_prefill_bytes"), std::string_view::npos);
  }
  for (uint64_t good : {uint64_t{0}, uint64_t{4096}, uint64_t{64} << 20}) {
    Options options;
    options.wal_prefill_bytes = good;
    auto db = DB::Open(options, dir_);
    EXPECT_TRUE(db.ok()) << good << ": " << db.status();
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, WalPrefillTest, ::testing::Values("posix", "io_uring"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "io_uring" ? "uring" : "posix";
                         });

}  // namespace
}  // namespace cairn
