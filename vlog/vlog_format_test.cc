#include "vlog/vlog_format.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
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

// The chunked example of docs/vlog_format.md: segment 8 holding "blob" ->
// "abcdefghij" in chunks of 4 bytes (the engine's are 64 KiB), uncompressed.
TEST(VlogFormatTest, GoldenChunkedRecordMatchesTheFormatDoc) {
  io::MemoryFileSystem fs;
  SegmentWriterOptions options;
  options.chunk_size = 4;
  auto writer = SegmentWriter::Create(&fs, "/000008.vlog", 8, options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  absl::StatusOr<ValuePointer> p = (*writer)->Append("blob", "abcdefghij");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, (ValuePointer{8, 28, 13 + 4 + 16 + 3 * 9 + 10}));
  ASSERT_TRUE((*writer)->Close().ok());
  const std::string file = fs.ReadFileToString("/000008.vlog").value();
  EXPECT_EQ(Hex(file.substr(kSegmentHeaderSize)), Hex(GoldenBytesFromDoc(kPage, "chunked")));
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
  edit.SyncedTo(7, 49);
  edit.SealSegment(7, 66, 2);
  edit.AddGarbage(7, 21, 1);
  edit.PunchRuns(7, {{28, 49}});
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
  io::EncodeFixed32(bytes.data() + 8, kSegmentFormatVersion + 1);
  absl::Status s = DecodeSegmentHeader(bytes, "/db/000009.vlog").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("/db/000009.vlog"));
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("version ", kSegmentFormatVersion + 1)));
  EXPECT_THAT(s.message(), HasSubstr("versions 1 to 2"));
  io::EncodeFixed32(bytes.data() + 8, 0);
  EXPECT_EQ(DecodeSegmentHeader(bytes, "f").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(VlogFormatTest, VersionOneSegmentsAreStillRead) {
  // Version 2 only added chunked records; a version 1 segment is read as is.
  std::string bytes;
  EncodeSegmentHeader({1, SegmentKind::kFresh, 9}, &bytes);
  absl::StatusOr<SegmentHeader> h = DecodeSegmentHeader(bytes, "f");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->version, 1u);
  EXPECT_EQ(h->segment_id, 9u);
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
  io::EncodeFixed32(huge.data() + 8, kMaxRecordStoredSize + 1);
  EXPECT_EQ(ParseRecord(huge, &r), RecordCheck::kBadLength);
  io::EncodeFixed32(huge.data() + 4, kMaxRecordKeySize + 1);
  EXPECT_EQ(ParseRecord(huge, &r), RecordCheck::kBadLength);

  // A stored value longer than the largest value (a chunked one near the
  // limit, table included) is a length in range: these bytes are only cut
  // short.
  std::string long_stored = good;
  for (uint64_t len : {uint64_t{kMaxRecordValueSize} + 1, kMaxRecordStoredSize}) {
    io::EncodeFixed32(long_stored.data() + 8, static_cast<uint32_t>(len));
    EXPECT_EQ(ParseRecord(long_stored, &r), RecordCheck::kTruncated) << len;
  }
}

TEST(VlogFormatTest, StoredSizeLimitCoversTheLargestChunkedValue) {
  // The table of a largest value in default chunks: 4096 entries.
  EXPECT_EQ(ChunkTableSize(kMaxRecordValueSize, kDefaultValueChunkSize),
            kChunkTableHeaderSize + 4096 * kChunkEntrySize);
  EXPECT_EQ(ChunkTableSize(kDefaultValueChunkSize + 1, kDefaultValueChunkSize),
            kChunkTableHeaderSize + 2 * kChunkEntrySize);
  EXPECT_GE(kMaxRecordStoredSize,
            kMaxRecordValueSize + ChunkTableSize(kMaxRecordValueSize, kDefaultValueChunkSize));
  EXPECT_EQ(kMaxRecordStoredSize, 269'520'976u);  // as docs/vlog_format.md states
  EXPECT_EQ(kMaxRecordSize, RecordSize(kMaxRecordKeySize, kMaxRecordStoredSize));
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

// A value with a compressible half and an incompressible half.
std::string MixedValue(size_t size) {
  std::string v(size, 'c');
  uint64_t x = 88172645463325252ull;
  for (size_t i = size / 2; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<char>(x);
  }
  return v;
}

TEST(VlogFormatTest, ChunkedValuesRoundTripAtEverySize) {
  for (bool compress : {false, true}) {
    for (size_t size : {size_t{0}, size_t{1}, size_t{255}, size_t{256}, size_t{257}, size_t{1000},
                        size_t{4096}, size_t{10000}}) {
      const std::string value = MixedValue(size);
      std::string table, body;
      bool body_is_value = false;
      ASSERT_TRUE(EncodeChunkedValue(value, 256, compress, 1, &table, &body, &body_is_value).ok());
      const std::string stored = table + (body_is_value ? value : body);
      ChunkTableHeader header;
      std::vector<ChunkRef> chunks;
      ASSERT_TRUE(ParseChunkTable(stored, &header, &chunks).ok()) << size;
      EXPECT_EQ(header.raw_size, size);
      EXPECT_EQ(header.table_size(), table.size());
      EXPECT_EQ(chunks.size(), (size + 255) / 256);
      if (!compress) {
        EXPECT_TRUE(body_is_value);
      }
      std::string out;
      ASSERT_TRUE(ChunkedValue(stored, &out).ok());
      EXPECT_EQ(out, value) << size << " " << compress;
      // Every chunk decodes alone, verified, to its part of the value.
      for (const ChunkRef& c : chunks) {
        std::string part;
        ASSERT_TRUE(DecodeChunk(c, std::string_view(stored).substr(c.stored_offset, c.stored_size),
                                true, &part)
                        .ok());
        EXPECT_EQ(part, value.substr(c.raw_offset, c.raw_size));
      }
      // A run of chunks parses from only its entries (and the one before).
      if (chunks.size() >= 3) {
        const ChunkEntrySpan span = EntriesFor(1, 2);
        std::vector<ChunkRef> some;
        ASSERT_TRUE(ParseChunkEntries(header, stored.size(), 1, 2,
                                      std::string_view(stored).substr(span.offset, span.size),
                                      &some)
                        .ok());
        ASSERT_EQ(some.size(), 2u);
        EXPECT_EQ(some[0].stored_offset, chunks[1].stored_offset);
        EXPECT_EQ(some[1].stored_size, chunks[2].stored_size);
      }
      std::string record;
      EncodeRecord("key", {table, body_is_value ? std::string_view(value) : body},
                   kRecordFlagChunked, &record);
      ParsedRecord r;
      ASSERT_EQ(ParseRecord(record, &r), RecordCheck::kOk);
      EXPECT_TRUE(r.chunked());
      EXPECT_FALSE(r.plain());
      ASSERT_TRUE(RecordValue(r, &out).ok());
      EXPECT_EQ(out, value);
    }
  }
}

TEST(VlogFormatTest, CompressedChunksShrinkOnlyWhereTheyCompress) {
  const std::string value = MixedValue(4096);
  std::string table, body;
  bool body_is_value = true;
  ASSERT_TRUE(EncodeChunkedValue(value, 1024, true, 1, &table, &body, &body_is_value).ok());
  EXPECT_FALSE(body_is_value);
  const std::string stored = table + body;
  ChunkTableHeader header;
  std::vector<ChunkRef> chunks;
  ASSERT_TRUE(ParseChunkTable(stored, &header, &chunks).ok());
  ASSERT_EQ(chunks.size(), 4u);
  EXPECT_TRUE(chunks[0].compressed());
  EXPECT_TRUE(chunks[1].compressed());
  EXPECT_FALSE(chunks[2].compressed());  // random bytes stay raw
  EXPECT_FALSE(chunks[3].compressed());
  EXPECT_LT(stored.size(), value.size());
}

TEST(VlogFormatTest, EveryDamagedByteOfAChunkedValueIsCaughtByWhatReadsIt) {
  // Whatever byte of the table or chunks is damaged, a read of the chunks
  // through their entries (what a ranged read does, without the record's
  // checksum) either fails with DataLoss or returns the right bytes.
  for (bool compress : {false, true}) {
    const std::string value = MixedValue(2048);
    std::string table, body;
    bool body_is_value = false;
    ASSERT_TRUE(EncodeChunkedValue(value, 512, compress, 1, &table, &body, &body_is_value).ok());
    const std::string good = table + (body_is_value ? value : body);
    for (size_t at = 0; at < good.size(); ++at) {
      std::string bad = good;
      bad[at] ^= 0x10;
      ChunkTableHeader header;
      absl::Status s = ParseChunkTableHeader(bad, bad.size(), &header);
      if (!s.ok()) {
        EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
        continue;
      }
      for (uint32_t i = 0; i < header.count; ++i) {
        const ChunkEntrySpan span = EntriesFor(i, i);
        std::vector<ChunkRef> one;
        s = ParseChunkEntries(header, bad.size(), i, i,
                              std::string_view(bad).substr(span.offset, span.size), &one);
        std::string part;
        if (s.ok()) {
          s = DecodeChunk(one[0], std::string_view(bad).substr(one[0].stored_offset,
                                                               one[0].stored_size),
                          true, &part);
        }
        if (s.ok()) {
          EXPECT_EQ(part, value.substr(uint64_t{i} * 512, 512)) << at << " chunk " << i;
        } else {
          EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
        }
      }
    }
  }
}

TEST(VlogFormatTest, MalformedChunkTablesAreDataLoss) {
  const std::string value = MixedValue(1000);
  std::string table, body;
  bool body_is_value = false;
  ASSERT_TRUE(EncodeChunkedValue(value, 256, false, 1, &table, &body, &body_is_value).ok());
  const std::string good = table + value;
  ChunkTableHeader header;
  std::vector<ChunkRef> chunks;
  // Cut anywhere: never parses as a whole table.
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(ParseChunkTable(good.substr(0, n), &header, &chunks).code(),
              absl::StatusCode::kDataLoss)
        << n;
  }
  // Bytes after the last chunk.
  EXPECT_EQ(ParseChunkTable(good + "x", &header, &chunks).code(), absl::StatusCode::kDataLoss);
  // A count that disagrees with the sizes, checksum redone.
  std::string bad = good;
  io::EncodeFixed32(bad.data() + 12, 5);
  io::EncodeFixed32(bad.data(), io::Checksum32(std::string_view(bad).substr(4, 12)));
  EXPECT_EQ(ParseChunkTable(bad, &header, &chunks).code(), absl::StatusCode::kDataLoss);
  // A chunk size below the floor.
  bad = good;
  io::EncodeFixed32(bad.data() + 8, 1);
  io::EncodeFixed32(bad.data() + 12, 1000);
  io::EncodeFixed32(bad.data(), io::Checksum32(std::string_view(bad).substr(4, 12)));
  EXPECT_EQ(ParseChunkTable(bad, &header, &chunks).code(), absl::StatusCode::kDataLoss);
  // A record may not be both one zstd frame and chunked.
  std::string record;
  EncodeRecord("k", good, kRecordFlagZstd | kRecordFlagChunked, &record);
  ParsedRecord r;
  EXPECT_EQ(ParseRecord(record, &r), RecordCheck::kBadFlags);
}

}  // namespace
}  // namespace cairn::vlog
