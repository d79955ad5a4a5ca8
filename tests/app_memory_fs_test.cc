// What an application's own test does: open a database on the in-memory
// file system through the public headers alone, write, reopen, read back,
// and see that nothing reached the disk.
#include <filesystem>
#include <memory>
#include <string>

#include "cairn/db.h"
#include "cairn/file_system.h"
#include "gtest/gtest.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

TEST(AppMemoryFileSystemTest, DatabaseLivesInMemoryAcrossReopens) {
  const std::string path = "/cairn_app_memory_fs_test_db";
  std::shared_ptr<FileSystem> fs = NewMemoryFileSystem();
  Options options;
  options.file_system = fs;
  {
    auto db = DB::Open(options, path);
    ASSERT_OK(db.status());
    ASSERT_OK((*db)->Put({}, "small", "v"));
    ASSERT_OK((*db)->Put({}, "large", std::string(64 << 10, 'x')));  // to the value log
    ASSERT_OK((*db)->CreateCheckpoint(path + "-checkpoint").status());
  }
  for (const std::string& dir : {path, path + "-checkpoint"}) {
    auto db = DB::Open(options, dir);
    ASSERT_OK(db.status());
    std::string value;
    ASSERT_OK((*db)->Get({}, "large", &value));
    EXPECT_EQ(value, std::string(64 << 10, 'x'));
    ASSERT_OK((*db)->Get({}, "small", &value));
    EXPECT_EQ(value, "v");
  }
  EXPECT_TRUE(PathExists(*fs, path + "/CURRENT"));
  EXPECT_FALSE(std::filesystem::exists(path));
  // Another instance is another disk: the database is not there.
  Options elsewhere;
  elsewhere.file_system = NewMemoryFileSystem();
  elsewhere.create_if_missing = false;
  EXPECT_FALSE(DB::Open(elsewhere, path).ok());
}

}  // namespace
}  // namespace cairn
