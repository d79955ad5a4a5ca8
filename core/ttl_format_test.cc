// The on-disk forms of expiry (issue 60): the WAL batch entries of types 4
// and 5 are the bytes docs/wal_format.md shows ("Expiring entries (version
// 6)"), and a table is written as format 3, with property tag 10, exactly
// when it holds an expiring entry (docs/table_format.md, "Expiring entries
// (version 3)"); a table of an unknown version is refused by name.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "cairn/write_batch.h"
#include "core/write_batch_internal.h"
#include "gtest/gtest.h"
#include "io/coding.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"
#include "lsm/dbformat.h"
#include "lsm/table.h"
#include "lsm/table_builder.h"
#include "lsm/table_format.h"
#include "vlog/value_pointer.h"

namespace cairn {
namespace {

constexpr uint64_t kExpiry = uint64_t{1'796'605'200} * 1'000'000;  // 2026-12-07 01:00 UTC

// The hex bytes between a golden block's markers in a doc.
std::string GoldenBytes(const std::string& doc_name, const std::string& block) {
  std::ifstream doc(std::string(CAIRN_SOURCE_DIR) + "/docs/" + doc_name);
  EXPECT_TRUE(doc.good()) << "cannot read docs/" << doc_name;
  std::string line, bytes;
  bool inside = false;
  while (std::getline(doc, line)) {
    if (line.find("<!-- golden:" + block + ":begin -->") != std::string::npos) {
      inside = true;
      continue;
    }
    if (line.find("<!-- golden:" + block + ":end -->") != std::string::npos) break;
    if (!inside || line.rfind("```", 0) == 0) continue;
    std::istringstream tokens(line.substr(0, line.find('#')));
    std::string token;
    while (tokens >> token) bytes.push_back(static_cast<char>(std::stoi(token, nullptr, 16)));
  }
  return bytes;
}

TEST(TtlFormatTest, ExpiringBatchMatchesTheFormatDoc) {
  const std::string expected = GoldenBytes("wal_format.md", "wal-expiring-batch");
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
                  lsm::TableProperties* props, bool* told) {
  auto file = fs->NewWritableFile("/t.sst", {});
  ASSERT_OK(file);
  lsm::TableOptions options;
  lsm::TableBuilder builder(options, file->get());
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
}

TEST(TtlFormatTest, UnknownTableVersionIsRefusedByName) {
  lsm::Footer footer;
  footer.version = 2;  // the range-deletion branch's, unknown here
  std::string encoded;
  footer.EncodeTo(&encoded);
  lsm::Footer decoded;
  const absl::Status s = decoded.DecodeFrom(encoded, "/x.sst", 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "version 2")) << s;
}

}  // namespace
}  // namespace cairn
