// FileDeleter: files handed over are gone once WaitIdle returns, or once the
// deleter is destroyed; a file already gone counts as removed; a failed
// removal is reported and leaves the file for the next open.
#include "core/file_deleter.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

std::vector<std::string> MakeFiles(io::FileSystem* fs, int n) {
  std::vector<std::string> paths;
  for (int i = 0; i < n; ++i) {
    paths.push_back(absl::StrCat("/f", i));
    EXPECT_OK(io::WriteStringToFile(fs, paths.back(), std::string(4096, 'x'), /*sync=*/false));
  }
  return paths;
}

TEST(FileDeleterTest, QueuedFilesAreGoneOnceIdle) {
  io::MemoryFileSystem fs;
  const std::vector<std::string> paths = MakeFiles(&fs, 100);
  FileDeleter deleter(&fs, nullptr);
  for (const std::string& p : paths) deleter.Remove(p);
  deleter.WaitIdle();
  for (const std::string& p : paths) EXPECT_FALSE(fs.FileExists(p)) << p;
  EXPECT_EQ(deleter.removed(), 100u);
  EXPECT_EQ(deleter.failed(), 0u);
}

TEST(FileDeleterTest, WaitIdleWithNothingQueuedReturnsAtOnce) {
  io::MemoryFileSystem fs;
  FileDeleter deleter(&fs, nullptr);
  deleter.WaitIdle();
  EXPECT_EQ(deleter.removed(), 0u);
}

TEST(FileDeleterTest, DestructionRemovesWhatIsQueued) {
  io::MemoryFileSystem fs;
  const std::vector<std::string> paths = MakeFiles(&fs, 50);
  {
    FileDeleter deleter(&fs, nullptr);
    for (const std::string& p : paths) deleter.Remove(p);
  }
  for (const std::string& p : paths) EXPECT_FALSE(fs.FileExists(p)) << p;
}

TEST(FileDeleterTest, AFileAlreadyGoneCountsAsRemoved) {
  io::MemoryFileSystem fs;
  FileDeleter deleter(&fs, [](const std::string& path, const absl::Status& s) {
    ADD_FAILURE() << "reported " << path << ": " << s;
  });
  deleter.Remove("/never-there");
  deleter.WaitIdle();
  EXPECT_EQ(deleter.removed(), 1u);
  EXPECT_EQ(deleter.failed(), 0u);
}

TEST(FileDeleterTest, AFailedRemovalIsReportedAndTheFileStays) {
  auto fs = std::make_shared<io::FaultFileSystem>(std::make_shared<io::MemoryFileSystem>());
  const std::vector<std::string> paths = MakeFiles(fs.get(), 2);
  absl::Mutex mu;
  std::vector<std::pair<std::string, absl::Status>> reported;
  FileDeleter deleter(fs.get(), [&](const std::string& path, const absl::Status& s) {
    absl::MutexLock l(&mu);
    reported.emplace_back(path, s);
  });
  fs->FailAfter(0, io::InjectedIoError("remove"), io::FaultKind::kMetadata, /*persistent=*/false);
  deleter.Remove(paths[0]);
  deleter.WaitIdle();
  deleter.Remove(paths[1]);  // the fault fired once: this one goes
  deleter.WaitIdle();
  EXPECT_TRUE(fs->FileExists(paths[0]));
  EXPECT_FALSE(fs->FileExists(paths[1]));
  EXPECT_EQ(deleter.removed(), 1u);
  EXPECT_EQ(deleter.failed(), 1u);
  absl::MutexLock l(&mu);
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0].first, paths[0]);
  EXPECT_FALSE(reported[0].second.ok());
}

}  // namespace
}  // namespace cairn
