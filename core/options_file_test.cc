// The OPTIONS file: written at create and at each read-write open (the
// previous one kept), the worked example of docs/options_format.md, and the
// check of its [format] section at open.
#include "core/options_file.h"

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"
#include "lsm/filename.h"

namespace cairn {
namespace {

// The text between the golden markers of docs/options_format.md.
std::string GoldenTextFromDoc() {
  std::ifstream in(std::string(CAIRN_SOURCE_DIR) + "/docs/options_format.md");
  EXPECT_TRUE(in.good()) << "docs/options_format.md missing";
  std::string line, text;
  bool inside = false, seen_end = false;
  while (std::getline(in, line)) {
    if (line.find("golden:options:begin") != std::string::npos) {
      inside = true;
      continue;
    }
    if (line.find("golden:options:end") != std::string::npos) {
      seen_end = inside;
      break;
    }
    if (!inside || line.rfind("```", 0) == 0) continue;
    text += line + "\n";
  }
  EXPECT_TRUE(seen_end) << "golden markers not found in docs/options_format.md";
  return text;
}

// The worked example is the file written for these options.
Options ExampleOptions() {
  Options o;
  o.memtable_size = 32u << 20;
  o.value_separation_threshold = 4096;
  o.value_compression = Compression::kZstd;
  o.gc_space_amp_trigger = 2;
  return o;
}

TEST(OptionsFileTest, WorkedExampleOfTheDocIsWhatIsWritten) {
  EXPECT_EQ(FormatOptionsFile(ExampleOptions()), GoldenTextFromDoc());
  ASSERT_OK(CheckOptionsFile(GoldenTextFromDoc(), "OPTIONS-000005"));
}

TEST(OptionsFileTest, InlineModeIsWrittenByName) {
  Options o;
  o.value_separation_threshold = kInlineValues;
  EXPECT_NE(FormatOptionsFile(o).find("value_separation_threshold=inline\n"), std::string::npos);
}

TEST(OptionsFileTest, TuningDifferencesAreNotChecked) {
  const std::string text = absl::StrReplaceAll(
      FormatOptionsFile(Options()),
      {{"memtable_size=67108864", "memtable_size=1"}, {"compression=zstd", "compression=lz9"}});
  ASSERT_OK(CheckOptionsFile(absl::StrCat(text, "future_tuning_knob=7\n"), "OPTIONS-000005"));
}

// Each [format] difference that would make this build misread the files.
TEST(OptionsFileTest, FormatMismatchesAreFailedPreconditionNamingTheKey) {
  const std::string good = FormatOptionsFile(Options());
  struct Case {
    std::string from, to, key;
  };
  const std::vector<Case> cases = {
      {"table_format_version=3", "table_format_version=4", "table_format_version"},
      {"wal_format_version=7", "wal_format_version=9", "wal_format_version"},
      {"segment_format_version=2", "segment_format_version=3", "segment_format_version"},
      {"manifest_format_version=1", "manifest_format_version=2", "manifest_format_version"},
      {"max_value_size=268435456", "max_value_size=1073741824", "max_value_size"},
      {"max_key_size=65536", "max_key_size=65537", "max_key_size"},
      {"[format]\n", "[format]\nchecksum=xxh4\n", "checksum"},
      {"options_file_version=1", "options_file_version=2", "options_file_version"},
  };
  for (const Case& c : cases) {
    const std::string text = absl::StrReplaceAll(good, {{c.from, c.to}});
    ASSERT_NE(text, good) << c.from;
    absl::Status s = CheckOptionsFile(text, "/db/OPTIONS-000005");
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << c.to << ": " << s;
    EXPECT_NE(s.message().find("/db/OPTIONS-000005"), std::string_view::npos) << s;
    EXPECT_NE(s.message().find(c.key), std::string_view::npos) << s;
  }
  // An older format is what an older build wrote: still read.
  ASSERT_OK(CheckOptionsFile(
      absl::StrReplaceAll(good, {{"max_key_size=65536", "max_key_size=100"}}), "OPTIONS-000005"));
  // WALs of formats 2 (before zeros written ahead) to 4 (before range
  // deletions), and tables of format 1, are read as they were.
  ASSERT_OK(CheckOptionsFile(
      absl::StrReplaceAll(good, {{"wal_format_version=7", "wal_format_version=2"}}),
      "OPTIONS-000005"));
  ASSERT_OK(CheckOptionsFile(
      absl::StrReplaceAll(good, {{"table_format_version=3", "table_format_version=1"}}),
      "OPTIONS-000005"));
}

TEST(OptionsFileTest, GarbageIsDataLossNamingTheFileAndLine) {
  absl::Status s =
      CheckOptionsFile("[version]\noptions_file_version=1\nno equals sign\n", "/db/OPTIONS-000005");
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("/db/OPTIONS-000005: line 3"), std::string_view::npos) << s;
  s = CheckOptionsFile("[format]\nwal_format_version=2\n", "/db/OPTIONS-000005");
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
}

class OptionsFileDbTest : public ::testing::Test {
 protected:
  void SetUp() override { fs_ = std::make_shared<io::MemoryFileSystem>(); }

  std::vector<uint64_t> OptionsFiles() {
    std::vector<uint64_t> out;
    auto names = fs_->ListDir("/db");
    EXPECT_OK(names);
    for (const std::string& name : names.ok() ? *names : std::vector<std::string>()) {
      uint64_t number;
      lsm::FileType type;
      if (lsm::ParseFileName(name, &number, &type) && type == lsm::FileType::kOptions) {
        out.push_back(number);
      }
      EXPECT_NE(type, lsm::FileType::kTemp) << name;
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::shared_ptr<io::MemoryFileSystem> fs_;
};

TEST_F(OptionsFileDbTest, WrittenAtCreateAndAtEachOpenKeepingThePreviousOne) {
  Options o;
  o.memtable_size = 1u << 20;
  {
    auto db = OpenWithFileSystem(o, "/db", fs_);
    ASSERT_OK(db);
    ASSERT_EQ(OptionsFiles().size(), 1u);
    std::string shown;
    ASSERT_TRUE((*db)->GetProperty("cairn.options", &shown));
    EXPECT_EQ(shown, FormatOptionsFile(o));
  }
  const uint64_t first = OptionsFiles()[0];
  o.memtable_size = 2u << 20;
  for (int open = 0; open < 3; ++open) {
    auto db = OpenWithFileSystem(o, "/db", fs_);
    ASSERT_OK(db);
  }
  const std::vector<uint64_t> files = OptionsFiles();
  ASSERT_EQ(files.size(), 2u);  // the newest and the one before it
  EXPECT_GT(files[0], first);
  auto text = ReadOptionsFile(fs_.get(), "/db", files[1]);
  ASSERT_OK(text);
  EXPECT_EQ(*text, FormatOptionsFile(o));
  // A read-only open writes none.
  auto ro = OpenForReadOnlyWithFileSystem(o, "/db", fs_);
  ASSERT_OK(ro);
  EXPECT_EQ(OptionsFiles(), files);
}

TEST_F(OptionsFileDbTest, OpenRefusesADatabaseWrittenUnderANewerFormat) {
  {
    auto db = OpenWithFileSystem(Options(), "/db", fs_);
    ASSERT_OK(db);
    ASSERT_OK((*db)->Put({}, "k", "v"));
  }
  const uint64_t number = OptionsFiles().back();
  auto text = ReadOptionsFile(fs_.get(), "/db", number);
  ASSERT_OK(text);
  const std::string path = lsm::OptionsFileName("/db", number);
  ASSERT_OK(fs_->RemoveFile(path));
  {
    auto f = fs_->NewWritableFile(path, {});
    ASSERT_OK(f);
    ASSERT_OK((*f)->Append(
        absl::StrReplaceAll(*text, {{"table_format_version=3", "table_format_version=4"}})));
    ASSERT_OK((*f)->Close());
  }
  auto names = fs_->ListDir("/db");
  ASSERT_OK(names);
  for (auto open : {&OpenWithFileSystem, &OpenForReadOnlyWithFileSystem}) {
    absl::StatusOr<std::unique_ptr<DB>> db = open(Options(), "/db", fs_);
    EXPECT_TRUE(absl::IsFailedPrecondition(db.status())) << db.status();
    EXPECT_NE(db.status().message().find("table_format_version"), std::string_view::npos)
        << db.status();
    EXPECT_NE(db.status().message().find(path), std::string_view::npos) << db.status();
  }
  EXPECT_EQ(*fs_->ListDir("/db"), *names);  // refused before writing anything
}

}  // namespace
}  // namespace cairn
