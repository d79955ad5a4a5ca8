// Tests of choosing a backend (NewFileSystem, the CAIRN_IO override, the
// fallback when io_uring cannot be set up), the memory file system's own
// behaviour, and the small helpers of io/file_system.h.
#include <stdlib.h>

#include <cerrno>
#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/file_system.h"
#include "io/memory_file_system.h"
#include "io/posix_file_system.h"
#include "io/ring.h"

namespace cairn::io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MemoryFileSystemTest, OverwrittenBytesAreVisibleToOpenReaders) {
  MemoryFileSystem fs;
  ASSERT_TRUE(WriteStringToFile(&fs, "/f", "abcdef", false).ok());
  auto reader = fs.NewRandomAccessFile("/f", {});
  ASSERT_TRUE(reader.ok());
  std::string contents = *fs.ReadFileToString("/f");
  contents[2] ^= 0x20;
  ASSERT_TRUE(fs.WriteFileFromString("/f", contents).ok());
  char buf[8];
  std::string_view got;
  ASSERT_TRUE((*reader)->Read(0, 8, buf, &got).ok());
  EXPECT_EQ(got, "abCdef");
  EXPECT_EQ(fs.Name(), "memory");
  EXPECT_TRUE(absl::IsNotFound(fs.WriteFileFromString("/no/f", "x")));
  EXPECT_TRUE(absl::IsNotFound(fs.ReadFileToString("/g").status()));
}

TEST(MemoryFileSystemTest, LinksTurnedOffAreUnimplemented) {
  MemoryFileSystem fs;
  ASSERT_TRUE(WriteStringToFile(&fs, "/a", "a", /*sync=*/false).ok());
  fs.SetLinksSupported(false);
  EXPECT_EQ(fs.LinkFile("/a", "/b").code(), absl::StatusCode::kUnimplemented);
  EXPECT_FALSE(fs.FileExists("/b"));
}

TEST(MemoryFileSystemTest, PathsAreNormalized) {
  MemoryFileSystem fs;
  ASSERT_TRUE(fs.CreateDir("/db/").ok());
  ASSERT_TRUE(WriteStringToFile(&fs, "/db//./x", "1", false).ok());
  EXPECT_TRUE(fs.FileExists("/db/x"));
  EXPECT_THAT(*fs.ListDir("/db"), ElementsAre("x"));
  EXPECT_THAT(*fs.ListDir("/"), ElementsAre("db"));
}

TEST(ErrnoErrorTest, MapsErrnoWithTheMessage) {
  EXPECT_TRUE(absl::IsResourceExhausted(ErrnoError(ENOSPC, "write /x at 0")));
  EXPECT_TRUE(absl::IsNotFound(ErrnoError(ENOENT, "open /x")));
  EXPECT_THAT(std::string(ErrnoError(EIO, "fdatasync /x").message()), HasSubstr("fdatasync /x"));
}

TEST(JoinPathTest, AddsOneSeparator) {
  EXPECT_EQ(JoinPath("/db", "LOCK"), "/db/LOCK");
  EXPECT_EQ(JoinPath("/db/", "LOCK"), "/db/LOCK");
  EXPECT_EQ(JoinPath("", "LOCK"), "LOCK");
}

class NewFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv("CAIRN_IO"); }
  void TearDown() override {
    SetRingSetupFailureForTesting(0);
    ::unsetenv("CAIRN_IO");
  }
};

TEST_F(NewFileSystemTest, RingSetupFailureFallsBackToPosix) {
  for (int err : {EPERM, ENOSYS, ENOMEM}) {
    SetRingSetupFailureForTesting(err);
    for (IoBackend backend : {IoBackend::kUring, IoBackend::kAuto}) {
      auto fs = NewFileSystem(backend);
      ASSERT_TRUE(fs.ok()) << fs.status();
      EXPECT_EQ((*fs)->Name(), "posix") << "errno " << err;
    }
  }
  SetRingSetupFailureForTesting(0);
  if (!Ring::Probe().ok()) GTEST_SKIP() << "io_uring unavailable here";
  EXPECT_EQ((*NewFileSystem(IoBackend::kUring))->Name(), "io_uring");
  EXPECT_EQ((*NewFileSystem(IoBackend::kAuto))->Name(), "io_uring");
  EXPECT_EQ((*NewFileSystem(IoBackend::kPosix))->Name(), "posix");
}

TEST_F(NewFileSystemTest, EnvironmentOverridesTheArgument) {
  ::setenv("CAIRN_IO", "posix", 1);
  EXPECT_EQ((*NewFileSystem(IoBackend::kUring))->Name(), "posix");
  ::setenv("CAIRN_IO", "bogus", 1);
  EXPECT_TRUE(absl::IsInvalidArgument(NewFileSystem(IoBackend::kAuto).status()));
  if (!Ring::Probe().ok()) GTEST_SKIP() << "io_uring unavailable here";
  ::setenv("CAIRN_IO", "uring", 1);
  EXPECT_EQ((*NewFileSystem(IoBackend::kPosix))->Name(), "io_uring");
  ::setenv("CAIRN_IO", "auto", 1);
  EXPECT_EQ((*NewFileSystem(IoBackend::kPosix))->Name(), "io_uring");
}

}  // namespace
}  // namespace cairn::io
