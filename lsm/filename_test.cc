#include "lsm/filename.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"

namespace cairn::lsm {
namespace {

using ::testing::HasSubstr;

TEST(FileNameTest, NamesAreZeroPaddedUnderTheDatabaseDirectory) {
  EXPECT_EQ(TableFileName("/db", 7), "/db/000007.sst");
  EXPECT_EQ(LogFileName("/db", 123456), "/db/123456.log");
  EXPECT_EQ(ValueLogFileName("/db", 1234567), "/db/1234567.vlog");
  EXPECT_EQ(TempFileName("/db", 3), "/db/000003.tmp");
  EXPECT_EQ(ManifestFileName("/db", 1), "/db/MANIFEST-000001");
  EXPECT_EQ(OptionsFileName("/db", 7), "/db/OPTIONS-000007");
  EXPECT_EQ(CurrentFileName("/db"), "/db/CURRENT");
  EXPECT_EQ(LockFileName("/db"), "/db/LOCK");
}

TEST(FileNameTest, ParseFileNameInvertsEveryNamingFunction) {
  struct Case {
    std::string name;
    uint64_t number;
    FileType type;
  };
  const Case cases[] = {
      {"000007.sst", 7, FileType::kTable},
      {"123456.log", 123456, FileType::kLog},
      {"1234567.vlog", 1234567, FileType::kValueLog},
      {"000003.tmp", 3, FileType::kTemp},
      {"MANIFEST-000001", 1, FileType::kManifest},
      {"OPTIONS-000042", 42, FileType::kOptions},
      {"CURRENT", 0, FileType::kCurrent},
      {"LOCK", 0, FileType::kLock},
      {"18446744073709551615.sst", 18446744073709551615ull, FileType::kTable},
  };
  for (const Case& c : cases) {
    uint64_t number = 99;
    FileType type = FileType::kUnknown;
    ASSERT_TRUE(ParseFileName(c.name, &number, &type)) << c.name;
    EXPECT_EQ(number, c.number) << c.name;
    EXPECT_EQ(type, c.type) << c.name;
  }
}

TEST(FileNameTest, ParseFileNameRejectsForeignNames) {
  for (const char* name :
       {"", "foo", "CURRENT.bak", "LOCK2", "MANIFEST-", "MANIFEST-12x", "MANIFEST12",
        "OPTIONS-", "OPTIONS-1x",
        ".sst", "12.", "12.sstx", "12.SST", "-1.log", "x12.log", "12", "1 2.log",
        "18446744073709551616.sst", "99999999999999999999.log", "000001.sst.tmp"}) {
    uint64_t number = 0;
    FileType type = FileType::kTable;
    EXPECT_FALSE(ParseFileName(name, &number, &type)) << name;
    EXPECT_EQ(type, FileType::kUnknown) << name;
  }
}

class CurrentFileTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs_.CreateDir("/db").ok()); }
  io::MemoryFileSystem fs_;
};

TEST_F(CurrentFileTest, SetCurrentFileWritesOneLineAndLeavesNoTempFile) {
  ASSERT_TRUE(SetCurrentFile(&fs_, "/db", 12).ok());
  auto content = fs_.ReadFileToString("/db/CURRENT");
  ASSERT_TRUE(content.ok()) << content.status();
  EXPECT_EQ(*content, "MANIFEST-000012\n");
  EXPECT_FALSE(fs_.FileExists("/db/000012.tmp"));

  auto number = ReadCurrentFile(&fs_, "/db");
  ASSERT_TRUE(number.ok()) << number.status();
  EXPECT_EQ(*number, 12u);

  ASSERT_TRUE(SetCurrentFile(&fs_, "/db", 13).ok());
  number = ReadCurrentFile(&fs_, "/db");
  ASSERT_TRUE(number.ok()) << number.status();
  EXPECT_EQ(*number, 13u);
}

TEST_F(CurrentFileTest, MissingCurrentIsNotFound) {
  auto number = ReadCurrentFile(&fs_, "/db");
  EXPECT_EQ(number.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(number.status().message(), HasSubstr("/db/CURRENT"));
}

TEST_F(CurrentFileTest, SetCurrentFileFailsWhenTheDirectoryIsMissing) {
  EXPECT_FALSE(SetCurrentFile(&fs_, "/nodir", 1).ok());
  EXPECT_FALSE(fs_.FileExists("/nodir/CURRENT"));
}

TEST_F(CurrentFileTest, CorruptCurrentIsDataLossNamingCurrent) {
  for (const std::string& bad :
       {std::string(""), std::string("MANIFEST-000001"), std::string("MANIFEST-000001\n\n"),
        std::string("MANIFEST-\n"), std::string("000001.log\n"), std::string("garbage\n"),
        std::string("MANIFEST-00000x\n"), std::string("MANIFEST-000001\nMANIFEST-000002\n"),
        std::string("\0\0\0\0\0\0\0\0", 8), std::string(4096, 'M')}) {
    ASSERT_TRUE(fs_.WriteFileFromString("/db/CURRENT", bad).ok());
    auto number = ReadCurrentFile(&fs_, "/db");
    EXPECT_EQ(number.status().code(), absl::StatusCode::kDataLoss) << bad;
    EXPECT_THAT(number.status().message(), HasSubstr("/db/CURRENT")) << bad;
  }
}

}  // namespace
}  // namespace cairn::lsm
