#include "vlog/vlog_format.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/checksum.h"
#include "io/coding.h"
#include "io/compression.h"
#include "io/memory_file_system.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_writer.h"
#include "vlog/value_pointer.h"
#include "vlog/vlog_test_util.h"

namespace cairn::vlog {
namespace {

using ::testing::HasSubstr;
using testing::GoldenBytesFromDoc;
using testing::Hex;

constexpr char kPage[] = "vlog_format.md";

// The worked example of docs/vlog_format.md: segment 7 (fresh writes) holding
// "apple" -> "red" and "pear" -> "" (empty value), uncompressed.
std::string WriteGoldenSegment(std::vector<ValuePointer>* pointers) {
  io::MemoryFileSystem fs;
  auto writer = SegmentWriter::Create(&fs, "/000007.vlog", 7, SegmentWriterOptions{});
  EXPECT_TRUE(writer.ok()) << writer.status();
  for (auto [key, value] : {std::pair<std::string_view, std::string_view>{"apple", "red"},
                            {"pear", ""}}) {
    absl::StatusOr<ValuePointer> p = (*writer)->Append(key, value);
    EXPECT_TRUE(p.ok()) << p.status();
    if (pointers != nullptr && p.ok()) pointers->push_back(*p);
  }
  EXPECT_TRUE((*writer)->Close().ok());
  return fs.ReadFileToString("/000007.vlog").value();
}

TEST(VlogFormatTest, GoldenSegmentMatchesTheFormatDoc) {
  const std::string golden = GoldenBytesFromDoc(kPage, "segment");
  EXPECT_EQ(Hex(WriteGoldenSegment(nullptr)), Hex(golden));
}

TEST(VlogFormatTest, GoldenPointerMatchesTheFormatDoc) {
  std::vector<ValuePointer> pointers;
  WriteGoldenSegment(&pointers);
  ASSERT_EQ(pointers.size(), 2u);
  EXPECT_EQ(pointers[0], (ValuePointer{7, 28, 21}));
  EXPECT_EQ(pointers[1], (ValuePointer{7, 49, 17}));
  const std::string golden = GoldenBytesFromDoc(kPage, "pointer");
  EXPECT_EQ(Hex(EncodeValuePointer(pointers[1])), Hex(golden));
  EXPECT_EQ(DecodeValuePointer(golden).value(), pointers[1]);
}

TEST(VlogFormatTest, GoldenSegmentSetRecordsMatchTheFormatDoc) {
  SegmentEdit edit;
  edit.AddSegment(7, SegmentKind::kFresh);
  edit.SealSegment(7, 66, 2);
  edit.AddGarbage(7, 21, 1);
  edit.MarkObsolete(7);
  edit.RemoveSegment(7);
  // Each line of the doc's block is one record as the manifest's tag-9 body:
  // varint32 tag, length-prefixed payload.
  std::string encoded;
  for (const auto& [tag, payload] : edit.Encode()) {
    io::PutVarint32(&encoded, tag);
    io::PutLengthPrefixed(&encoded, payload);
  }
  EXPECT_EQ(Hex(encoded), Hex(GoldenBytesFromDoc(kPage, "segment-set")));
}

TEST(VlogFormatTest, HeaderRoundTrips) {
  std::string bytes;
  EncodeSegmentHeader({kSegmentFormatVersion, SegmentKind::kGcOutput, 123456789}, &bytes);
  ASSERT_EQ(bytes.size(), kSegmentHeaderSize);
  absl::StatusOr<SegmentHeader> h = DecodeSegmentHeader(bytes, "x.vlog");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->kind, SegmentKind::kGcOutput);
  EXPECT_EQ(h->segment_id, 123456789u);
}

TEST(VlogFormatTest, UnknownVersionIsRefusedClearly) {
  // A newer writer: its own header layout and checksum, only the magic and
  // version are at the places this build knows.
  std::string bytes(kSegmentHeaderSize, '\x5a');
  io::EncodeFixed64(bytes.data(), kSegmentMagic);
  io::EncodeFixed32(bytes.data() + 8, 2);
  absl::Status s = DecodeSegmentHeader(bytes, "/db/000009.vlog").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("/db/000009.vlog"));
  EXPECT_THAT(s.message(), HasSubstr("version 2"));
}

TEST(VlogFormatTest, DamagedHeadersAreDataLoss) {
  std::string good;
  EncodeSegmentHeader({kSegmentFormatVersion, SegmentKind::kFresh, 9}, &good);
  {
    std::string bad = good;
    bad[0] ^= 1;
    absl::Status s = DecodeSegmentHeader(bad, "f").status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_THAT(s.message(), HasSubstr("magic"));
  }
  {
    std::string bad = good;
    bad[17] ^= 1;  // segment id, covered by the checksum
    absl::Status s = DecodeSegmentHeader(bad, "f").status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_THAT(s.message(), HasSubstr("checksum"));
  }
  {
    std::string bad = good;
    io::EncodeFixed32(bad.data() + 12, 9);  // unknown kind, checksum redone
    io::EncodeFixed32(bad.data() + 24, io::Checksum32(std::string_view(bad).substr(0, 24)));
    absl::Status s = DecodeSegmentHeader(bad, "f").status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_THAT(s.message(), HasSubstr("kind"));
  }
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(DecodeSegmentHeader(good.substr(0, n), "f").status().code(),
              absl::StatusCode::kDataLoss);
  }
  EXPECT_EQ(DecodeSegmentHeader(std::string(kSegmentHeaderSize, '\0'), "f").status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(VlogFormatTest, RecordRoundTripsAndSizeIsPredicted) {
  std::string bytes;
  EncodeRecord("key", "value", 0, &bytes);
  EXPECT_EQ(bytes.size(), RecordSize(3, 5));
  bytes += "trailing bytes of the next record";
  ParsedRecord r;
  ASSERT_EQ(ParseRecord(bytes, &r), RecordCheck::kOk);
  EXPECT_EQ(r.size, RecordSize(3, 5));
  EXPECT_EQ(r.key, "key");
  EXPECT_EQ(r.stored_value, "value");
  EXPECT_FALSE(r.compressed());
}

TEST(VlogFormatTest, ParseRecordNamesWhatIsWrong) {
  std::string good;
  EncodeRecord("k", "v", 0, &good);
  ParsedRecord r;
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(ParseRecord(good.substr(0, n), &r), RecordCheck::kTruncated) << n;
  }
  std::string bad = good;
  bad[14] ^= 0x40;  // the value byte
  EXPECT_EQ(ParseRecord(bad, &r), RecordCheck::kBadChecksum);

  std::string flagged;
  EncodeRecord("k", "v", 0x80, &flagged);  // checksum is right, flag unknown
  EXPECT_EQ(ParseRecord(flagged, &r), RecordCheck::kBadFlags);

  std::string huge = good;
  io::EncodeFixed32(huge.data() + 8, kMaxRecordValueSize + 1);
  EXPECT_EQ(ParseRecord(huge, &r), RecordCheck::kBadLength);
  io::EncodeFixed32(huge.data() + 4, kMaxRecordKeySize + 1);
  EXPECT_EQ(ParseRecord(huge, &r), RecordCheck::kBadLength);
}

TEST(VlogFormatTest, ZeroedBytesAreNeverAValidRecord) {
  // A torn write often leaves zeros; they must not parse as an empty record.
  ParsedRecord r;
  EXPECT_NE(ParseRecord(std::string(64, '\0'), &r), RecordCheck::kOk);
}

TEST(VlogFormatTest, CompressedValueDecodes) {
  const std::string value(1000, 'z');
  std::string frame;
  ASSERT_TRUE(io::ZstdCompress(value, 3, &frame).ok());
  std::string bytes;
  EncodeRecord("k", frame, kRecordFlagZstd, &bytes);
  ParsedRecord r;
  ASSERT_EQ(ParseRecord(bytes, &r), RecordCheck::kOk);
  EXPECT_TRUE(r.compressed());
  std::string out;
  ASSERT_TRUE(RecordValue(r, &out).ok());
  EXPECT_EQ(out, value);

  // A checksummed record whose frame is garbage is DataLoss, not a crash.
  std::string junk;
  EncodeRecord("k", "not a zstd frame", kRecordFlagZstd, &junk);
  ASSERT_EQ(ParseRecord(junk, &r), RecordCheck::kOk);
  EXPECT_EQ(RecordValue(r, &out).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace cairn::vlog
