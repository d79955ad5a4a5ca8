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
#include "io/testing/forked_child.h"
#include "io/testing/status_matchers.h"
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
  ASSERT_OK(ring);
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
  ASSERT_OK(s);
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
    ASSERT_OK(file);
    EXPECT_OK((*file)->Append("through pwrite"));
    WritableFile* files[] = {file->get()};
    EXPECT_OK(fs.SyncFiles(files));
    EXPECT_OK((*file)->Close());
    auto reader = fs.NewRandomAccessFile(dir + "/f", {});
    ASSERT_OK(reader);
    char buf[32];
    ReadRequest req{.offset = 8, .len = sizeof(buf), .buf = buf};
    EXPECT_OK((*reader)->MultiRead(absl::MakeSpan(&req, 1)));
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
  EXPECT_OK(Ring::Probe());
}

// Runs n no-ops on ring: OK when every one completes.
absl::Status RunNops(Ring& ring, size_t n) {
  size_t done = 0;
  absl::Status s = ring.RunBatch(
      n, [](size_t, io_uring_sqe* sqe) { io_uring_prep_nop(sqe); },
      [&done](size_t, int) {
        ++done;
        return true;
      });
  if (s.ok() && done != n) return absl::InternalError("lost completions");
  return s;
}

// A child shares its parent's rings (the same kernel queues): it must get
// rings of its own, and one it still holds from before fork must refuse
// work rather than steal the parent's completions.
TEST_F(RingTest, ForkedChildGetsRingsOfItsOwnAndRefusesInheritedOnes) {
  absl::StatusOr<Ring*> parent_ring = Ring::ThisThread();
  ASSERT_OK(parent_ring.status());
  ASSERT_OK(RunNops(**parent_ring, 10));
  absl::StatusOr<std::unique_ptr<Ring>> owned = Ring::TakeOwned();
  ASSERT_OK(owned.status());
  Ring::ReturnOwned(Ring::TakeOwned().value_or(nullptr));  // one pooled ring

  const pid_t pid = testing::StartForkedChild(30, [&]() -> int {
    if ((*owned)->OwnedByThisProcess()) return 1;
    if (!absl::IsFailedPrecondition((*owned)->Submit())) return 2;
    if ((*owned)->GetSqe() != nullptr) return 3;
    uint64_t data;
    int res;
    if (!absl::IsFailedPrecondition((*owned)->WaitCompletion(&data, &res))) return 4;
    absl::StatusOr<Ring*> mine = Ring::ThisThread();
    if (!mine.ok() || !(*mine)->OwnedByThisProcess()) return 5;
    if (!RunNops(**mine, 1000).ok()) return 6;
    absl::StatusOr<std::unique_ptr<Ring>> taken = Ring::TakeOwned();
    if (!taken.ok() || !(*taken)->OwnedByThisProcess()) return 7;
    return 0;
  });
  // The parent keeps using its rings meanwhile.
  for (int i = 0; i < 100; ++i) ASSERT_OK(RunNops(**parent_ring, 100));
  EXPECT_EQ(testing::WaitForForkedChild(pid, 60), "");
  EXPECT_TRUE((*owned)->OwnedByThisProcess());
  ASSERT_OK(RunNops(**parent_ring, 10));
  Ring::ReturnOwned(*std::move(owned));
}

}  // namespace
}  // namespace cairn::io
