#include "vlog/prepared_records.h"

#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "vlog/segment_reader.h"
#include "vlog/segment_writer.h"
#include "vlog/vlog_test_util.h"

namespace cairn::vlog {
namespace {

using testing::CompressibleBytes;
using testing::RandomBytes;

struct Value {
  std::string key, value;
};

// Empty, small, compressible, incompressible and chunked (over 64 KiB, some
// chunks compressible) values.
std::vector<Value> Values() {
  std::mt19937_64 rng(7);
  std::vector<Value> v;
  v.push_back({"empty", ""});
  v.push_back({"small", "abc"});
  v.push_back({"compressible", CompressibleBytes(rng, 8192)});
  v.push_back({"random", RandomBytes(rng, 4096)});
  v.push_back({"chunked", CompressibleBytes(rng, 70 << 10) + RandomBytes(rng, 80 << 10)});
  v.push_back({"chunked-raw", RandomBytes(rng, 130 << 10)});
  return v;
}

class PreparedRecordsTest : public ::testing::TestWithParam<bool> {
 protected:
  SegmentWriterOptions Options() const {
    SegmentWriterOptions o;
    o.compress = GetParam();
    o.compression_level = 1;
    return o;
  }
  io::MemoryFileSystem fs_;
};

TEST_P(PreparedRecordsTest, PreparedRecordsAreTheBytesAppendWrites) {
  const std::vector<Value> values = Values();
  auto appended = SegmentWriter::Create(&fs_, "/a.vlog", 1, Options());
  auto placed = SegmentWriter::Create(&fs_, "/b.vlog", 1, Options());
  ASSERT_TRUE(appended.ok() && placed.ok());
  std::vector<ValuePointer> expected;
  for (const Value& v : values) {
    absl::StatusOr<ValuePointer> p = (*appended)->Append(v.key, v.value);
    ASSERT_TRUE(p.ok()) << p.status();
    expected.push_back(*p);
  }
  // Encoded in another thread, as a writer does before it queues.
  PreparedRecords prepared((*placed)->Encoding());
  std::thread writer([&] {
    for (const Value& v : values) ASSERT_TRUE(prepared.Add(v.key, v.value).ok());
  });
  writer.join();
  ASSERT_EQ(prepared.count(), values.size());
  std::vector<ValuePointer> pointers;
  ASSERT_TRUE((*placed)->AppendEncoded({{prepared.bytes(), prepared.sizes()}}, &pointers).ok());
  EXPECT_EQ(pointers, expected);
  EXPECT_EQ((*placed)->record_count(), values.size());
  EXPECT_EQ((*placed)->size(), (*appended)->size());
  ASSERT_TRUE((*appended)->Close().ok());
  ASSERT_TRUE((*placed)->Close().ok());
  EXPECT_EQ(*fs_.ReadFileToString("/b.vlog"), *fs_.ReadFileToString("/a.vlog"));

  auto reader = SegmentReader::Open(&fs_, "/b.vlog", 1, false);
  ASSERT_TRUE(reader.ok());
  for (size_t i = 0; i < values.size(); ++i) {
    std::string got;
    ASSERT_TRUE((*reader)->Read(pointers[i], values[i].key, &got).ok()) << values[i].key;
    EXPECT_EQ(got, values[i].value);
  }
}

TEST_P(PreparedRecordsTest, PlacedAfterRecordsAppendedOneByOne) {
  auto writer = SegmentWriter::Create(&fs_, "/a.vlog", 3, Options());
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Append("first", "one by one").ok());
  PreparedRecords prepared((*writer)->Encoding());
  ASSERT_TRUE(prepared.Add("k1", std::string(3000, 'x')).ok());
  ASSERT_TRUE(prepared.Add("k2", "v2").ok());
  std::vector<ValuePointer> pointers;
  ASSERT_TRUE((*writer)->AppendEncoded({{prepared.bytes(), prepared.sizes()}}, &pointers).ok());
  ASSERT_EQ(pointers.size(), 2u);
  EXPECT_EQ(pointers[0].offset, kSegmentHeaderSize + RecordSize(5, 10));
  EXPECT_EQ(pointers[1].offset, pointers[0].offset + pointers[0].size);
  ASSERT_TRUE((*writer)->Flush().ok());
  auto reader = SegmentReader::Open(&fs_, "/a.vlog", 3, false);
  ASSERT_TRUE(reader.ok());
  std::string got;
  ASSERT_TRUE((*reader)->Read(pointers[1], "k2", &got).ok());
  EXPECT_EQ(got, "v2");
}

TEST_P(PreparedRecordsTest, SizesThatDoNotAddUpAreRefusedBeforeAnyWrite) {
  auto writer = SegmentWriter::Create(&fs_, "/a.vlog", 1, Options());
  ASSERT_TRUE(writer.ok());
  PreparedRecords prepared((*writer)->Encoding());
  ASSERT_TRUE(prepared.Add("k", "v").ok());
  const uint32_t wrong[] = {prepared.sizes()[0] + 1};
  std::vector<ValuePointer> pointers;
  EXPECT_TRUE(absl::IsInvalidArgument(
      (*writer)->AppendEncoded({{prepared.bytes(), wrong}}, &pointers)));
  EXPECT_TRUE(pointers.empty());
  EXPECT_EQ((*writer)->size(), kSegmentHeaderSize);
}

TEST(PreparedRecordsLimitsTest, OversizedKeyIsRefusedAndNothingIsAdded) {
  PreparedRecords prepared(RecordEncoding{});
  EXPECT_TRUE(absl::IsInvalidArgument(prepared.Add(std::string(kMaxRecordKeySize + 1, 'k'), "v")));
  EXPECT_TRUE(prepared.empty());
  EXPECT_TRUE(prepared.bytes().empty());
}

// A thread's next large Reserve encodes into the buffer its last
// PreparedRecords ended with (same records, no new allocation); a buffer
// over kKeptBufferBytes is not kept, and another thread keeps its own.
TEST(PreparedRecordsBufferTest, AThreadsNextReserveReusesItsLastBuffer) {
  const std::string value(256 << 10, 'v');
  const char* first = nullptr;
  std::string first_bytes;
  {
    PreparedRecords a(RecordEncoding{});
    a.Reserve(8 << 20);
    for (int i = 0; i < 16; ++i) ASSERT_TRUE(a.Add("key" + std::to_string(i), value).ok());
    first = a.bytes().data();
    first_bytes = std::string(a.bytes());
  }
  {
    PreparedRecords b(RecordEncoding{});
    b.Reserve(4 << 20);
    for (int i = 0; i < 16; ++i) ASSERT_TRUE(b.Add("key" + std::to_string(i), value).ok());
    EXPECT_EQ(b.bytes().data(), first);
    EXPECT_EQ(b.bytes(), first_bytes);  // a kept buffer carries nothing over
  }
  std::thread([&] {
    PreparedRecords c(RecordEncoding{});
    c.Reserve(4 << 20);
    ASSERT_TRUE(c.Add("k", value).ok());
    EXPECT_NE(c.bytes().data(), first);
  }).join();
  {
    PreparedRecords big(RecordEncoding{});
    big.Reserve(PreparedRecords::kKeptBufferBytes + 1);
    ASSERT_TRUE(big.Add("k", value).ok());
  }
  PreparedRecords d(RecordEncoding{});
  d.Reserve(4 << 20);
  ASSERT_TRUE(d.Add("k", value).ok());
  EXPECT_EQ(d.bytes().data(), first);  // the 8 MiB buffer, not the one over the limit
}

INSTANTIATE_TEST_SUITE_P(Compression, PreparedRecordsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Zstd" : "None";
                         });

}  // namespace
}  // namespace cairn::vlog
