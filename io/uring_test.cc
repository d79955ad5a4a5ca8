// Tests of the ring wrapper: batching and resubmission, one ring per thread,
// and the per-thread fallback to syscalls when a ring cannot be set up.
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "io/file_system.h"
#include "io/ring.h"
#include "io/uring_file_system.h"

namespace cairn::io {
namespace {

class RingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status probe = Ring::Probe();
    if (!probe.ok()) GTEST_SKIP() << "io_uring unavailable here: " << probe;
  }
  void TearDown() override { SetRingSetupFailureForTesting(0); }
};

TEST_F(RingTest, RunBatchCompletesMoreOpsThanTheDepthAndResubmits) {
  absl::StatusOr<Ring*> ring = Ring::ThisThread();
  ASSERT_TRUE(ring.ok()) << ring.status();
  const size_t n = 3 * Ring::kDepth + 17;
  std::vector<int> preps(n, 0), completions(n, 0);
  absl::Status s = (*ring)->RunBatch(
      n,
      [&](size_t i, io_uring_sqe* sqe) {
        ++preps[i];
        io_uring_prep_nop(sqe);
      },
      [&](size_t i, int res) {
        EXPECT_EQ(res, 0);
        ++completions[i];
        return i % 2 == 0 || completions[i] == 2;  // Odd ops run twice.
      });
  ASSERT_TRUE(s.ok()) << s;
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(preps[i], i % 2 == 0 ? 1 : 2) << i;
    EXPECT_EQ(completions[i], preps[i]) << i;
  }
  // Nothing is left behind: the next batch sees only its own completion.
  int seen = 0;
  ASSERT_TRUE((*ring)
                  ->RunBatch(
                      1, [](size_t, io_uring_sqe* sqe) { io_uring_prep_nop(sqe); },
                      [&](size_t, int) { return ++seen > 0; })
                  .ok());
  EXPECT_EQ(seen, 1);
  ASSERT_TRUE((*ring)
                  ->RunBatch(
                      0, [](size_t, io_uring_sqe*) {}, [](size_t, int) { return true; })
                  .ok());
}

TEST_F(RingTest, EachThreadHasItsOwnRing) {
  Ring* mine = *Ring::ThisThread();
  EXPECT_EQ(*Ring::ThisThread(), mine);
  Ring* other = nullptr;
  std::thread([&] { other = *Ring::ThisThread(); }).join();
  EXPECT_NE(other, nullptr);
  EXPECT_NE(other, mine);
}

TEST_F(RingTest, ThreadWithoutARingFallsBackToSyscalls) {
  char tmpl[] = "/tmp/cairn_uring_test_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  UringFileSystem fs;
  SetRingSetupFailureForTesting(ENOMEM);
  std::thread([&] {
    absl::StatusOr<Ring*> ring = Ring::ThisThread();
    EXPECT_TRUE(absl::IsResourceExhausted(ring.status())) << ring.status();
    auto file = fs.NewWritableFile(dir + "/f", {});
    ASSERT_TRUE(file.ok());
    EXPECT_TRUE((*file)->Append("through pwrite").ok());
    WritableFile* files[] = {file->get()};
    EXPECT_TRUE(fs.SyncFiles(files).ok());
    EXPECT_TRUE((*file)->Close().ok());
    auto reader = fs.NewRandomAccessFile(dir + "/f", {});
    ASSERT_TRUE(reader.ok());
    char buf[32];
    ReadRequest req{.offset = 8, .len = sizeof(buf), .buf = buf};
    EXPECT_TRUE((*reader)->MultiRead(absl::MakeSpan(&req, 1)).ok());
    EXPECT_EQ(std::string_view(buf, req.result), "pwrite");
  }).join();
  SetRingSetupFailureForTesting(0);
  EXPECT_EQ(fs.stats().Get(IoCategory::kOther).sync_ops, 1u);
  std::filesystem::remove_all(dir);
}

TEST_F(RingTest, ProbeHonoursTheSetupFailureHook) {
  SetRingSetupFailureForTesting(EPERM);
  EXPECT_TRUE(absl::IsPermissionDenied(Ring::Probe()));
  SetRingSetupFailureForTesting(ENOSYS);
  EXPECT_TRUE(absl::IsUnimplemented(Ring::Probe()));
  SetRingSetupFailureForTesting(0);
  EXPECT_TRUE(Ring::Probe().ok());
}

}  // namespace
}  // namespace cairn::io
