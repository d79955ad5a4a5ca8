// ExternalFileWriter's contract (cairn/ingest.h): what it writes for inline
// and separated values and deletes, and every bad input it refuses; and the
// FILESET descriptor's golden bytes (docs/ingestion.md) and corruption sweep.
#include <memory>
#include <string>

#include "cairn/ingest.h"
#include "core/external_file_set.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"
#include "vlog/vlog_test_util.h"

namespace cairn {
namespace {

class ExternalFileWriterTest : public ::testing::Test {
 protected:
  ExternalFileWriterTest() {
    options_.file_system = fs_;
    options_.value_separation_threshold = 100;
    options_.value_log_segment_size = 64 << 10;
  }
  std::unique_ptr<ExternalFileWriter> Open(const std::string& dir) {
    auto w = ExternalFileWriter::Open(options_, dir);
    EXPECT_OK(w.status());
    return w.ok() ? *std::move(w) : nullptr;
  }
  std::shared_ptr<io::MemoryFileSystem> fs_ = std::make_shared<io::MemoryFileSystem>();
  Options options_;
};

TEST_F(ExternalFileWriterTest, SeparatesLargeValuesIntoSegmentsInKeyOrder) {
  auto w = Open("/set");
  ASSERT_NE(w, nullptr);
  ASSERT_OK(w->Put("a", "small"));
  for (int i = 0; i < 20; ++i) {
    ASSERT_OK(w->Put("b" + std::to_string(100 + i), std::string(10000, 'x')));
  }
  ASSERT_OK(w->Delete("c"));
  auto info = w->Finish();
  ASSERT_OK(info.status());
  EXPECT_EQ(info->entries, 22u);
  EXPECT_EQ(info->deletions, 1u);
  EXPECT_EQ(info->inline_values, 1u);
  EXPECT_EQ(info->separated_values, 20u);
  EXPECT_EQ(info->smallest_key, "a");
  EXPECT_EQ(info->largest_key, "c");
  // 200 KB of values over 64 KiB segments: several, each named in FILESET.
  EXPECT_GE(info->segments, 3u);
  auto data = fs_->ReadFileToString(FileSetDescriptorPath("/set"));
  ASSERT_OK(data.status());
  auto set = ExternalFileSet::Decode(*data, "FILESET");
  ASSERT_OK(set.status());
  EXPECT_EQ(set->segments.size(), info->segments);
  EXPECT_EQ(set->segments.front().id, 1u);
  for (const auto& seg : set->segments) {
    EXPECT_TRUE(fs_->FileExists(FileSetSegmentPath("/set", seg.id)));
  }
}

TEST_F(ExternalFileWriterTest, RefusesKeysOutOfOrderDuplicatesAndWritesAfterFinish) {
  auto w = Open("/set");
  ASSERT_NE(w, nullptr);
  ASSERT_OK(w->Put("b", "1"));
  EXPECT_EQ(w->Put("a", "1").code(), absl::StatusCode::kInvalidArgument);
  const absl::Status dup = w->Delete("b");
  EXPECT_EQ(dup.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dup.message().find("duplicate"), std::string_view::npos) << dup;
  // Refused input changes nothing: the writer goes on.
  ASSERT_OK(w->Put("c", "1"));
  ASSERT_OK(w->Finish().status());
  EXPECT_EQ(w->Put("d", "1").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w->Delete("d").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w->Finish().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ExternalFileWriterTest, RefusesOversizeKeysAndValuesAndAnEmptySet) {
  auto w = Open("/set");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->Put(std::string(kMaxKeySize + 1, 'k'), "v").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w->Delete(std::string(kMaxKeySize + 1, 'k')).code(),
            absl::StatusCode::kInvalidArgument);
  // A view past the limit is refused before a byte of it is read.
  const std::string_view huge("x", kMaxValueSize + 1);
  EXPECT_EQ(w->Put("k", huge).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w->Finish().status().code(), absl::StatusCode::kInvalidArgument);
  w->Abandon();
  EXPECT_FALSE(fs_->FileExists("/set"));
}

TEST_F(ExternalFileWriterTest, RefusesADirectoryThatHoldsFilesAndBadOptions) {
  ASSERT_OK(fs_->CreateDir("/busy"));
  ASSERT_OK(fs_->WriteFileFromString("/busy/x", "x"));
  EXPECT_EQ(ExternalFileWriter::Open(options_, "/busy").status().code(),
            absl::StatusCode::kAlreadyExists);
  Options bad = options_;
  bad.value_log_segment_size = 0;
  EXPECT_EQ(ExternalFileWriter::Open(bad, "/new").status().code(),
            absl::StatusCode::kInvalidArgument);
}

ExternalFileSet GoldenSet() {
  ExternalFileSet set;
  set.smallest_key = "apple";
  set.largest_key = "pear";
  set.entries = 3;
  set.deletions = 1;
  set.table_size = 4096;
  set.segments = {{1, 65564, 1}};
  return set;
}

TEST(ExternalFileSetTest, GoldenDescriptorMatchesTheFormatDoc) {
  const std::string encoded = GoldenSet().Encode();
  EXPECT_EQ(vlog::testing::GoldenBytesFromDoc("ingestion.md", "fileset"), encoded)
      << vlog::testing::Hex(encoded);
  auto decoded = ExternalFileSet::Decode(encoded, "FILESET");
  ASSERT_OK(decoded.status());
  EXPECT_EQ(*decoded, GoldenSet());
}

TEST(ExternalFileSetTest, EveryFlippedByteAndEveryCutIsRefused) {
  const std::string good = GoldenSet().Encode();
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x01;
    const absl::Status s = ExternalFileSet::Decode(bad, "FILESET").status();
    EXPECT_FALSE(s.ok()) << "byte " << i;
    if (i < 8 || i >= 12) {
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << "byte " << i;
    }
    EXPECT_NE(s.message().find("FILESET"), std::string_view::npos) << s;
  }
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(ExternalFileSet::Decode(good.substr(0, n), "FILESET").ok()) << "cut at " << n;
  }
}

TEST(ExternalFileSetTest, ANewerVersionIsFailedPreconditionNamingBoth) {
  std::string newer = GoldenSet().Encode();
  newer[8] = 2;
  const absl::Status s = ExternalFileSet::Decode(newer, "/x/FILESET").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("version 2"), std::string_view::npos) << s;
  EXPECT_NE(s.message().find("/x/FILESET"), std::string_view::npos) << s;
}

}  // namespace
}  // namespace cairn
