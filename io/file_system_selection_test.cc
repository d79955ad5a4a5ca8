// Tests of choosing a backend (NewFileSystem, the CAIRN_IO override, the
// fallback when io_uring cannot be set up), the memory file system's own
// behaviour, and the small helpers of io/file_system.h.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <filesystem>
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

// Makes io_uring_enter fail with EPERM in this process from now on, as a
// container's seccomp profile can while still allowing io_uring_setup (and
// io_uring_register, which the opcode probe uses). False when the kernel
// refuses the filter.
bool DenyIoUringEnter() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_enter, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{.len = static_cast<unsigned short>(std::size(filter)), .filter = filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// In the child of SetUpButEnterDeniedFallsBackToPosix: 0 when every way of
// asking for io_uring gets a working POSIX file system, else 1 (with the
// reason on stderr); 77 when the filter could not be installed.
int OpenWithEnterDenied(const std::string& dir) {
  if (!DenyIoUringEnter()) return 77;
  absl::Status probe = Ring::Probe();
  if (probe.ok() || !absl::IsPermissionDenied(probe)) {
    std::fprintf(stderr, "probe with io_uring_enter denied: %s\n", probe.ToString().c_str());
    return 1;
  }
  struct Case {
    IoBackend backend;
    const char* env;  // CAIRN_IO, or null for none
  };
  int n = 0;
  for (const Case& c : {Case{IoBackend::kUring, nullptr}, Case{IoBackend::kAuto, nullptr},
                        Case{IoBackend::kPosix, "uring"}, Case{IoBackend::kAuto, "auto"}}) {
    if (c.env != nullptr) {
      ::setenv("CAIRN_IO", c.env, 1);
    } else {
      ::unsetenv("CAIRN_IO");
    }
    auto fs = NewFileSystem(c.backend);
    if (!fs.ok() || (*fs)->Name() != "posix") {
      std::fprintf(stderr, "backend %d, CAIRN_IO=%s: %s\n", static_cast<int>(c.backend),
                   c.env == nullptr ? "(unset)" : c.env,
                   fs.ok() ? (*fs)->Name().c_str() : fs.status().ToString().c_str());
      return 1;
    }
    // The file system chosen does the engine's I/O: write, sync, read back.
    const std::string path = JoinPath(dir, "f" + std::to_string(n++));
    const std::string contents(10000, 'v');
    absl::Status s = WriteStringToFile(fs->get(), path, contents, /*sync=*/true);
    absl::StatusOr<std::string> got = ReadFileToString(fs->get(), path);
    if (!s.ok() || !got.ok() || *got != contents) {
      std::fprintf(stderr, "I/O on the fallback: %s / %s\n", s.ToString().c_str(),
                   got.status().ToString().c_str());
      return 1;
    }
  }
  return 0;
}

// A ring that sets up but cannot submit (io_uring_enter denied by seccomp)
// must fall back like one that cannot set up, for kUring and CAIRN_IO=uring
// too, rather than fail the first write. In a forked child, since the filter
// cannot be removed.
TEST_F(NewFileSystemTest, SetUpButEnterDeniedFallsBackToPosix) {
  if (!Ring::Probe().ok()) GTEST_SKIP() << "io_uring unavailable here";
  const std::string dir = ::testing::TempDir() + "/enter_denied_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(std::filesystem::create_directories(dir));
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(OpenWithEnterDenied(dir));
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WIFEXITED(status)) << "child died, status " << status;
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "seccomp filters refused here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the child's reason above";
}

}  // namespace
}  // namespace cairn::io
