// The O_DIRECT tail block (FdWritableFile, both real backends): appends of
// every size from 1 byte to 3 blocks, each followed by a flush and then, in
// turn, a crash of the writer, a failed write, or nothing. After each step
// the file on disk must hold every byte a flush acknowledged, then only
// zeros to the end of the block; after a crash or a failed write, recovery
// (cut the file to the acknowledged bytes, reopen at its end, as the value
// log does) must go on appending from there.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "io/posix_file_system.h"
#include "io/uring_file_system.h"

namespace cairn::io {
namespace {

constexpr size_t kBlock = kDirectIoAlignment;

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// A backend's writable file whose next write can be made to fail after
// putting half of its bytes on disk (a torn write, then EIO).
template <typename Base>
class FailingFile : public Base {
 public:
  using Base::Base;
  bool fail_next = false;

 protected:
  absl::Status WriteAt(uint64_t offset, std::string_view data) override {
    if (!fail_next) return Base::WriteAt(offset, data);
    fail_next = false;
    // Half the blocks of the write, as a device that stopped part way.
    const size_t half = AlignDown(data.size() / 2, kBlock);
    if (half > 0) Base::WriteAt(offset, data.substr(0, half)).IgnoreError();
    return ErrnoError(EIO, "injected write failure");
  }
};

class DirectTailTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "cairn_direct_tail_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = dir_ + "/segment";
    int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644);
    if (fd < 0) GTEST_SKIP() << dir_ << " refuses O_DIRECT";
    ::close(fd);
    stats_ = std::make_shared<IoStats>();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Opens path_ for appending at end (O_DIRECT), as the backend would.
  std::unique_ptr<FdWritableFile> Open(uint64_t end) {
    int fd = ::open(path_.c_str(), O_RDWR | O_DIRECT);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    std::unique_ptr<FdWritableFile> file;
    if (GetParam() == "io_uring") {
      file = std::make_unique<FailingFile<UringWritableFile>>(fd, path_, IoCategory::kValueLog,
                                                             true, stats_);
    } else {
      file = std::make_unique<FailingFile<FdWritableFile>>(fd, path_, IoCategory::kValueLog, true,
                                                          stats_);
    }
    EXPECT_TRUE(file->InitAtEnd(end).ok());
    return file;
  }
  void FailNextWrite(FdWritableFile* file) {
    if (auto* f = dynamic_cast<FailingFile<UringWritableFile>*>(file)) f->fail_next = true;
    if (auto* f = dynamic_cast<FailingFile<FdWritableFile>*>(file)) f->fail_next = true;
  }

  // The file's bytes from offset to its end.
  std::string ReadFrom(uint64_t offset) {
    std::string all;
    int fd = ::open(path_.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    const off_t size = ::lseek(fd, 0, SEEK_END);
    all.resize(size > static_cast<off_t>(offset) ? size - offset : 0);
    EXPECT_EQ(::pread(fd, all.data(), all.size(), static_cast<off_t>(offset)),
              static_cast<ssize_t>(all.size()));
    ::close(fd);
    return all;
  }

  // Checks that the file holds expected's bytes from `from` on, then only
  // zeros up to the end of the block.
  void CheckOnDisk(const std::string& expected, uint64_t from, const std::string& step) {
    const uint64_t start = AlignDown(from, kBlock);
    const std::string got = ReadFrom(start);
    const uint64_t want_size = AlignUp(expected.size(), kBlock) - start;
    ASSERT_EQ(got.size(), want_size) << step;
    ASSERT_TRUE(got.compare(0, expected.size() - start, expected, start) == 0) << step;
    for (size_t i = expected.size() - start; i < got.size(); ++i) {
      ASSERT_EQ(got[i], '\0') << step << ": padding byte " << i;
    }
  }

  std::string dir_, path_;
  std::shared_ptr<IoStats> stats_;
};

TEST_P(DirectTailTest, EveryAppendSizeUpToThreeBlocksSurvivesACrashOrAFailedWrite) {
  std::mt19937_64 rng(41);
  std::string expected;  // every byte a flush acknowledged
  std::unique_ptr<FdWritableFile> file = Open(0);
  int crashes = 0, failures = 0;
  for (size_t n = 1; n <= 3 * kBlock; ++n) {
    const std::string step = "append of " + std::to_string(n) + " at " +
                             std::to_string(expected.size());
    const std::string piece = RandomBytes(rng, n);
    const uint64_t before = expected.size();
    switch (n % 3) {
      case 0: {  // appended, flushed, then the process dies
        ASSERT_TRUE(file->Append(piece).ok()) << step;
        ASSERT_TRUE(file->Flush().ok()) << step;
        expected += piece;
        file->AbandonForTesting();
        ++crashes;
        CheckOnDisk(expected, before, step + ", crashed");
        // Recovery cuts the padding (the torn tail) and goes on at the end.
        ASSERT_EQ(::truncate(path_.c_str(), static_cast<off_t>(expected.size())), 0);
        file = Open(expected.size());
        break;
      }
      case 1: {  // the flush's write fails part way
        ASSERT_TRUE(file->Append(piece).ok()) << step;
        FailNextWrite(file.get());
        const absl::Status s = file->Flush();
        ASSERT_FALSE(s.ok()) << step;
        // Fail-stop: the file refuses everything after.
        EXPECT_EQ(file->Append("x"), s) << step;
        EXPECT_EQ(file->Flush(), s) << step;
        file->AbandonForTesting();
        ++failures;
        // What the earlier flushes put on disk is intact, torn write or not.
        // (The blocks a write of this size can touch; earlier ones were
        // checked at their own steps.)
        const uint64_t from = AlignDown(before > 4 * kBlock ? before - 4 * kBlock : 0, kBlock);
        const std::string got = ReadFrom(from);
        ASSERT_GE(from + got.size(), expected.size()) << step;
        ASSERT_TRUE(got.compare(0, expected.size() - from, expected, from) == 0)
            << step << ", failed write";
        ASSERT_EQ(::truncate(path_.c_str(), static_cast<off_t>(expected.size())), 0);
        file = Open(expected.size());
        break;
      }
      default: {  // appended and flushed; the writer goes on
        ASSERT_TRUE(file->Append(piece).ok()) << step;
        ASSERT_TRUE(file->Flush().ok()) << step;
        expected += piece;
        CheckOnDisk(expected, before, step);
        break;
      }
    }
  }
  ASSERT_TRUE(file->Close().ok());
  EXPECT_EQ(ReadFrom(0), expected);  // Close cut the padding
  EXPECT_EQ(crashes, static_cast<int>(kBlock));
  EXPECT_EQ(failures, static_cast<int>(kBlock));
}

TEST_P(DirectTailTest, WriteBehindOfFullBuffersKeepsEveryByte) {
  // Appends larger than the buffer: full buffers go to the device while
  // the next fills; the bytes land in order, and a Sync covers them all.
  std::mt19937_64 rng(43);
  std::unique_ptr<FdWritableFile> file = Open(0);
  std::string expected;
  for (size_t n : {size_t{1}, FdWritableFile::kBufferSize - 1, FdWritableFile::kBufferSize + 1,
                   3 * FdWritableFile::kBufferSize + 17, size_t{4095}, size_t{4097}}) {
    const std::string piece = RandomBytes(rng, n);
    ASSERT_TRUE(file->Append(piece).ok());
    expected += piece;
  }
  ASSERT_TRUE(file->Sync().ok());
  CheckOnDisk(expected, 0, "after sync");
  ASSERT_TRUE(file->Close().ok());
  EXPECT_EQ(ReadFrom(0), expected);
}

TEST_P(DirectTailTest, AFailedWriteBehindPoisonsTheFile) {
  std::mt19937_64 rng(47);
  std::unique_ptr<FdWritableFile> file = Open(0);
  const std::string first = RandomBytes(rng, 5000);
  ASSERT_TRUE(file->Append(first).ok());
  ASSERT_TRUE(file->Flush().ok());
  FailNextWrite(file.get());
  // Fills the buffer: its write fails (on the ring, when the next write
  // waits for it; here, at once).
  absl::Status s = file->Append(RandomBytes(rng, 2 * FdWritableFile::kBufferSize));
  if (s.ok()) s = file->Flush();
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(file->Sync().ok());
  EXPECT_FALSE(file->Close().ok());
  EXPECT_TRUE(ReadFrom(0).compare(0, first.size(), first) == 0);
}

TEST_P(DirectTailTest, StartSyncAndWaitSyncWriteTheTailAndSyncIt) {
  // The two halves of Sync (a linked write and fdatasync on the ring) leave
  // the same bytes as Flush; a second StartSync with nothing new writes
  // nothing and only syncs.
  std::mt19937_64 rng(53);
  std::unique_ptr<FdWritableFile> file = Open(0);
  std::string expected;
  for (size_t n = 1; n <= 3 * kBlock; n += 97) {
    const std::string piece = RandomBytes(rng, n);
    const uint64_t before = expected.size();
    ASSERT_TRUE(file->Append(piece).ok());
    expected += piece;
    ASSERT_TRUE(file->StartSync().ok());
    ASSERT_TRUE(file->WaitSync().ok());
    CheckOnDisk(expected, before, "sync after append of " + std::to_string(n));
    const uint64_t written = stats_->Get(IoCategory::kValueLog).bytes_written;
    ASSERT_TRUE(file->StartSync().ok());
    ASSERT_TRUE(file->WaitSync().ok());
    EXPECT_EQ(stats_->Get(IoCategory::kValueLog).bytes_written, written);
  }
  // Mixed with Flush and the write-behind of full buffers.
  const std::string big = RandomBytes(rng, 2 * FdWritableFile::kBufferSize + 5);
  ASSERT_TRUE(file->Append(big).ok());
  expected += big;
  ASSERT_TRUE(file->StartSync().ok());
  ASSERT_TRUE(file->WaitSync().ok());
  ASSERT_TRUE(file->Append("tail").ok());
  expected += "tail";
  ASSERT_TRUE(file->Flush().ok());
  ASSERT_TRUE(file->Close().ok());
  EXPECT_EQ(ReadFrom(0), expected);
}

TEST_P(DirectTailTest, CloseWaitsForAStartedSync) {
  std::unique_ptr<FdWritableFile> file = Open(0);
  ASSERT_TRUE(file->Append(std::string(5000, 'x')).ok());
  ASSERT_TRUE(file->StartSync().ok());
  ASSERT_TRUE(file->Close().ok());  // the write must be off the buffer first
  EXPECT_EQ(ReadFrom(0), std::string(5000, 'x'));
}

INSTANTIATE_TEST_SUITE_P(Backends, DirectTailTest, ::testing::Values("posix", "io_uring"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace cairn::io
