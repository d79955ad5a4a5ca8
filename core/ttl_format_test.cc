// The on-disk forms of expiry (issue 60): the WAL batch entries of types 4
// and 5 are the bytes docs/wal_format.md shows ("Expiring entries (version
// 6)"), and a table is written as format 3, with property tag 13, exactly
// when it holds an expiring entry, range tombstones or not (docs/table_format.md,
// "Expiring entries (version 3)"); a table of an unknown version is refused
// by name.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "cairn/write_batch.h"
#include "core/write_batch_internal.h"
#include "gtest/gtest.h"
#include "io/coding.h"
#include "io/memory_file_system.h"
#include "io/testing/golden.h"
#include "io/testing/status_matchers.h"
#include "lsm/dbformat.h"
#include "lsm/range_tombstone.h"
#include "lsm/table.h"
#include "lsm/table_builder.h"
#include "lsm/table_format.h"
#include "vlog/value_pointer.h"

namespace cairn {
namespace {

constexpr uint64_t kExpiry = uint64_t{1'796'605'200} * 1'000'000;  // 2026-12-07 01:00 UTC

TEST(TtlFormatTest, ExpiringBatchMatchesTheFormatDoc) {
  const std::string expected =
      testing::GoldenBytesFromDoc("docs/wal_format.md", "wal-expiring-batch");
  ASSERT_EQ(expected.size(), 42u) << "golden block not found or changed";
  WriteBatch batch;
  batch.PutWithExpiry("k", "v", kExpiry);
  std::string pointer;
  io::PutFixed64(&pointer, kExpiry);
  vlog::ValuePointer{.segment_id = 3, .offset = 4096, .size = 1037}.EncodeTo(&pointer);
  WriteBatchInternal::AddEntry(&batch, lsm::ValueType::kValuePointerWithExpiry, "b", pointer);
  WriteBatchInternal::SetSequence(&batch, 5);
  EXPECT_EQ(WriteBatchInternal::Contents(batch), expected);

  // And back: types, keys, expiries and payloads.
  std::vector<lsm::StoredValue> seen;
  std::vector<std::string> keys;
  ASSERT_OK(WriteBatchInternal::ForEach(
      expected, [&](lsm::SequenceNumber seq, lsm::ValueType type, std::string_view key,
                    std::string_view value) {
        lsm::StoredValue sv;
        EXPECT_TRUE(lsm::SplitStoredValue(type, value, &sv));
        EXPECT_TRUE(lsm::HasExpiry(type));
        seen.push_back(sv);
        keys.emplace_back(key);
        EXPECT_EQ(seq, 5u + keys.size() - 1);
        return absl::OkStatus();
      }));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(keys, (std::vector<std::string>{"k", "b"}));
  EXPECT_EQ(seen[0].type, lsm::ValueType::kValue);
  EXPECT_EQ(seen[0].payload, "v");
  EXPECT_EQ(seen[1].type, lsm::ValueType::kValuePointer);
  EXPECT_EQ(seen[0].expiry_micros, kExpiry);
  EXPECT_EQ(seen[1].expiry_micros, kExpiry);
  auto ptr = vlog::DecodeValuePointer(seen[1].payload);
  ASSERT_OK(ptr);
  EXPECT_EQ(ptr->offset, 4096u);
}

TEST(TtlFormatTest, DamagedExpiringEntriesAreDataLoss) {
  // An expiring entry whose value is shorter than its expiry, or whose
  // expiry is 0.
  for (const std::string& value : {std::string("short"), std::string(8, '\0') + "v"}) {
    WriteBatch batch;
    WriteBatchInternal::AddEntry(&batch, lsm::ValueType::kValueWithExpiry, "k", value);
    const absl::Status s = WriteBatchInternal::ForEach(
        batch, [](lsm::SequenceNumber, lsm::ValueType, std::string_view, std::string_view) {
          return absl::OkStatus();
        });
    EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  }
}

// Builds a table of the entries and returns its footer version and
// properties.
using Entries = std::vector<std::pair<std::string, std::string>>;

void BuildAndOpen(io::MemoryFileSystem* fs, const Entries& entries, uint32_t* version,
                  lsm::TableProperties* props, bool* told,
                  const std::vector<lsm::RangeTombstone>& range_dels = {}) {
  auto file = fs->NewWritableFile("/t.sst", {});
  ASSERT_OK(file);
  lsm::TableOptions options;
  lsm::TableBuilder builder(options, file->get());
  for (const lsm::RangeTombstone& t : range_dels) builder.AddRangeTombstone(t);
  for (const auto& [k, v] : entries) ASSERT_OK(builder.Add(k, v));
  ASSERT_OK(builder.Finish());
  ASSERT_OK((*file)->Close());
  auto read = fs->NewRandomAccessFile("/t.sst", {});
  ASSERT_OK(read);
  char buf[lsm::kFooterSize];
  std::string_view footer;
  ASSERT_OK((*read)->Read(builder.FileSize() - lsm::kFooterSize, lsm::kFooterSize, buf, &footer));
  *version = io::DecodeFixed32(footer.data() + 48);
  *told = false;
  options.on_expiring_table = [told] { *told = true; };
  auto table = lsm::Table::Open(options, *std::move(read), builder.FileSize(), 1, nullptr, nullptr);
  ASSERT_OK(table);
  *props = (*table)->properties();
}

TEST(TtlFormatTest, TablesAreVersion3OnlyWithExpiringEntries) {
  io::MemoryFileSystem fs;
  std::string a, b;
  lsm::AppendInternalKey(&a, "a", 2, lsm::ValueType::kValue);
  lsm::AppendInternalKey(&b, "b", 1, lsm::ValueType::kValueWithExpiry);
  std::string expiring;
  lsm::AppendExpiringValue(&expiring, kExpiry, "v");
  uint32_t version = 0;
  lsm::TableProperties props;
  bool told = false;
  BuildAndOpen(&fs, {{a, "v"}}, &version, &props, &told);
  EXPECT_EQ(version, 1u);
  EXPECT_EQ(props.num_expiring, 0u);
  EXPECT_FALSE(told);
  BuildAndOpen(&fs, {{a, "v"}, {b, expiring}}, &version, &props, &told);
  EXPECT_EQ(version, 3u);
  EXPECT_EQ(props.num_expiring, 1u);
  EXPECT_TRUE(told);
  // Range tombstones alone make version 2 (2026-12-08, merging the
  // range-deletion branch); with an expiring entry too, version 3, which
  // carries the range-deletion block as well.
  const std::vector<lsm::RangeTombstone> dels = {{.begin = "a", .end = "c", .seq = 3}};
  BuildAndOpen(&fs, {{a, "v"}}, &version, &props, &told, dels);
  EXPECT_EQ(version, 2u);
  EXPECT_EQ(props.num_range_deletions, 1u);
  EXPECT_EQ(props.num_expiring, 0u);
  EXPECT_FALSE(told);
  BuildAndOpen(&fs, {{a, "v"}, {b, expiring}}, &version, &props, &told, dels);
  EXPECT_EQ(version, 3u);
  EXPECT_EQ(props.num_range_deletions, 1u);
  EXPECT_EQ(props.num_expiring, 1u);
  EXPECT_TRUE(told);
}

TEST(TtlFormatTest, ExpiringCountIsPropertyTag13) {
  // Tags 10 to 12 are the range-deletion block's; the count of expiring
  // entries took the next free tag when the branches merged (2026-12-08).
  lsm::TableProperties props;
  props.num_expiring = 7;
  std::string encoded;
  props.EncodeTo(&encoded);
  EXPECT_TRUE(absl::StrContains(encoded, std::string("\x0d\x07", 2))) << encoded.size();
  EXPECT_FALSE(absl::StrContains(encoded, std::string("\x0a", 1)));
  lsm::TableProperties decoded;
  ASSERT_OK(decoded.DecodeFrom(encoded, "test"));
  EXPECT_EQ(decoded.num_expiring, 7u);
  EXPECT_EQ(decoded.num_range_deletions, 0u);
}

TEST(TtlFormatTest, UnknownTableVersionIsRefusedByName) {
  lsm::Footer footer;
  footer.version = lsm::kTableFormatVersion + 1;  // newer than any this build reads
  std::string encoded;
  footer.EncodeTo(&encoded);
  lsm::Footer decoded;
  const absl::Status s = decoded.DecodeFrom(encoded, "/x.sst", 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "version 4")) << s;
}

}  // namespace
}  // namespace cairn
