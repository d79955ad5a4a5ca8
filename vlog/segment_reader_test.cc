// SegmentWriter and SegmentReader together: what the writer appends, the
// reader returns byte for byte, and nothing else.
#include "vlog/segment_reader.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/coding.h"
#include "io/fault_file_system.h"
#include "io/file_system.h"
#include "io/memory_file_system.h"
#include "vlog/segment_scanner.h"
#include "vlog/segment_writer.h"
#include "vlog/vlog_test_util.h"

namespace cairn::vlog {
namespace {

using ::testing::HasSubstr;
using testing::CompressibleBytes;
using testing::RandomBytes;

struct Entry {
  std::string key;
  std::string value;
  ValuePointer pointer;
};

// Writes entries to a new segment and closes it.
void WriteSegment(io::FileSystem* fs, const std::string& path, uint64_t id,
                  const SegmentWriterOptions& options, std::vector<Entry>* entries) {
  auto writer = SegmentWriter::Create(fs, path, id, options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (Entry& e : *entries) {
    absl::StatusOr<ValuePointer> p = (*writer)->Append(e.key, e.value);
    ASSERT_TRUE(p.ok()) << p.status();
    e.pointer = *p;
  }
  EXPECT_EQ((*writer)->record_count(), entries->size());
  const uint64_t size = (*writer)->size();
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(fs->GetFileSize(path).value(), size);
}

// A mix of the shapes that matter: empty key and value, tiny, 1 MiB,
// compressible and incompressible.
std::vector<Entry> MixedEntries(std::mt19937_64& rng, int n) {
  std::vector<Entry> entries;
  entries.push_back({"", "value of the empty key", {}});
  entries.push_back({"empty-value", "", {}});
  entries.push_back({"one-mib-random", RandomBytes(rng, 1 << 20), {}});
  entries.push_back({"one-mib-compressible", CompressibleBytes(rng, 1 << 20), {}});
  for (int i = 0; i < n; ++i) {
    std::string key = absl::StrCat("key", i, RandomBytes(rng, rng() % 24));
    std::string value = (rng() % 2 == 0) ? RandomBytes(rng, rng() % 5000)
                                         : CompressibleBytes(rng, rng() % 5000);
    entries.push_back({std::move(key), std::move(value), {}});
  }
  return entries;
}

// The record size of a value the writer stores uncompressed: chunked (a
// table before the value) when it is longer than the default chunk size.
uint64_t UncompressedRecordSize(size_t key_size, size_t value_size) {
  if (value_size <= kDefaultValueChunkSize) return RecordSize(key_size, value_size);
  const uint64_t chunks = (value_size + kDefaultValueChunkSize - 1) / kDefaultValueChunkSize;
  return RecordSize(key_size, value_size + kChunkTableHeaderSize + chunks * kChunkEntrySize);
}

class SegmentReaderTest : public ::testing::TestWithParam<bool> {
 protected:
  io::MemoryFileSystem fs_;
};

TEST_P(SegmentReaderTest, RandomRecordsRoundTrip) {
  const bool compress = GetParam();
  std::mt19937_64 rng(compress ? 1 : 2);
  std::vector<Entry> entries = MixedEntries(rng, 200);
  SegmentWriterOptions options;
  options.compress = compress;
  WriteSegment(&fs_, "/000005.vlog", 5, options, &entries);

  auto reader = SegmentReader::Open(&fs_, "/000005.vlog", 5, false);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->kind(), SegmentKind::kFresh);
  std::string value;
  for (const Entry& e : entries) {
    ASSERT_TRUE((*reader)->Read(e.pointer, e.key, &value).ok()) << e.pointer.DebugString();
    EXPECT_EQ(value, e.value);
    // Compression is kept only when it shrinks the value.
    if (!compress || e.value.empty()) {
      EXPECT_EQ(e.pointer.size, UncompressedRecordSize(e.key.size(), e.value.size()));
    } else {
      EXPECT_LE(e.pointer.size, UncompressedRecordSize(e.key.size(), e.value.size()));
    }
  }
  if (compress) {
    EXPECT_LT(entries[3].pointer.size, 100000u) << "1 MiB of runs should compress";
    EXPECT_EQ(entries[2].pointer.size, UncompressedRecordSize(entries[2].key.size(), 1 << 20))
        << "random bytes do not compress; stored raw";
  }
}

INSTANTIATE_TEST_SUITE_P(Compression, SegmentReaderTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Zstd" : "None"; });

// Ranged reads: a chunked value (longer than the chunk size) is read by its
// chunks, verified, whatever the range; a plain one by its bytes when
// unverified, and whole when verified or a zstd frame.
// A fixture holding one segment written from entries_, and a reader of it.
template <typename Base>
class OneSegmentTest : public Base {
 protected:
  void WriteAndOpen(const char* path, uint64_t id, const SegmentWriterOptions& options) {
    path_ = path;
    id_ = id;
    WriteSegment(&fs_, path_, id_, options, &entries_);
    OpenReader();
  }
  void OpenReader() {
    auto reader = SegmentReader::Open(&fs_, path_, id_, false);
    ASSERT_TRUE(reader.ok()) << reader.status();
    reader_ = std::move(*reader);
  }

  std::string path_;
  uint64_t id_ = 0;
  io::MemoryFileSystem fs_;
  std::vector<Entry> entries_;
  std::unique_ptr<SegmentReader> reader_;
};

class SegmentReaderRangeTest : public OneSegmentTest<::testing::TestWithParam<bool>> {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(7);
    // Half runs, half random: with compression some chunks shrink, some not.
    std::string mixed = CompressibleBytes(rng, 150000) + RandomBytes(rng, 150000);
    entries_ = {{"small", RandomBytes(rng, 5000), {}},
                {"small-squeezy", std::string(5000, 's'), {}},
                {"mixed", std::move(mixed), {}},
                {"exact", RandomBytes(rng, 4 * kDefaultValueChunkSize), {}}};
    SegmentWriterOptions options;
    options.compress = GetParam();  // compress
    WriteAndOpen(kPath, 3, options);
  }

  static constexpr char kPath[] = "/000003.vlog";
};

TEST_P(SegmentReaderRangeTest, RangesMatchTheValueAtEveryEdge) {
  constexpr uint64_t kAll = ~uint64_t{0};
  constexpr uint64_t kChunk = kDefaultValueChunkSize;
  for (const Entry& e : entries_) {
    const uint64_t size = e.value.size();
    const bool chunked = size > kChunk;
    for (uint64_t offset : {uint64_t{0}, uint64_t{1}, kChunk - 1, kChunk, kChunk + 1, size / 3,
                            size - 1, size, size + 1, kAll}) {
      for (uint64_t length : {uint64_t{0}, uint64_t{1}, uint64_t{4096}, kChunk, kChunk + 1, size,
                              kAll}) {
        for (bool verify : {false, true}) {
          std::string out = "stale";
          bool whole = true;
          absl::Status s =
              reader_->ReadValueRange(e.pointer, e.key, offset, length, verify, &out, &whole);
          ASSERT_TRUE(s.ok()) << e.key << ": " << s;
          const bool zstd = GetParam() && e.key == "small-squeezy";
          if (chunked) {
            EXPECT_FALSE(whole) << e.key;
          } else {
            EXPECT_EQ(whole, verify || zstd) << e.key;
          }
          if (whole) {
            EXPECT_TRUE(out.empty());
            continue;
          }
          const std::string want = offset >= size ? "" : e.value.substr(offset, length);
          ASSERT_EQ(out, want) << e.key << " offset " << offset << " length " << length;
        }
      }
    }
  }
}

TEST_P(SegmentReaderRangeTest, DamagedChunkFailsOnlyTheRangesThatReadIt) {
  const Entry& e = entries_[2];  // "mixed", 300,000 bytes: 5 chunks
  const std::string original = fs_.ReadFileToString(kPath).value();
  // The third chunk's stored bytes: find them through the table.
  const uint64_t value_start = e.pointer.offset + kRecordHeaderSize + e.key.size();
  ChunkTableHeader header;
  std::vector<ChunkRef> chunks;
  ASSERT_TRUE(ParseChunkTable(std::string_view(original).substr(
                                  value_start, e.pointer.size - kRecordHeaderSize - e.key.size()),
                              &header, &chunks)
                  .ok());
  ASSERT_EQ(chunks.size(), 5u);
  std::string damaged = original;
  damaged[value_start + chunks[2].stored_offset + chunks[2].stored_size / 2] ^= 0x04;
  ASSERT_TRUE(fs_.WriteFileFromString(kPath, damaged).ok());
  OpenReader();
  const uint64_t c = kDefaultValueChunkSize;
  struct Case {
    uint64_t offset, length;
    bool reads_chunk_2;
  };
  for (const Case& k : {Case{0, 100, false}, Case{c - 10, 20, false}, Case{2 * c - 1, 1, false},
                        Case{2 * c - 1, 2, true}, Case{2 * c + 5, 10, true},
                        Case{3 * c, 50000, false}, Case{c, 3 * c, true}, Case{0, ~0ull, true}}) {
    for (bool verify : {false, true}) {
      std::string out;
      bool whole = false;
      absl::Status s = reader_->ReadValueRange(e.pointer, e.key, k.offset, k.length, verify,
                                               &out, &whole);
      if (k.reads_chunk_2 && !verify && !GetParam()) {
        // Unverified over raw chunks: the range's bytes alone, unchecked
        // (docs/blob_reads.md); the damage is not seen.
        EXPECT_TRUE(s.ok()) << s;
      } else if (k.reads_chunk_2) {
        EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << k.offset << " " << s;
        EXPECT_THAT(s.message(), HasSubstr(kPath));
        EXPECT_THAT(s.message(), HasSubstr("chunk 2"));
      } else {
        ASSERT_TRUE(s.ok()) << k.offset << " " << s;
        EXPECT_EQ(out, e.value.substr(k.offset, k.length));
      }
    }
  }
  // The whole record's checksum still catches it.
  std::string value;
  EXPECT_EQ(reader_->Read(e.pointer, e.key, &value).code(), absl::StatusCode::kDataLoss);
}

TEST_P(SegmentReaderRangeTest, ChunkedRecordsHoldTheirValueWithALittleTable) {
  const Entry& exact = entries_[3];
  if (!GetParam()) {
    EXPECT_EQ(exact.pointer.size,
              RecordSize(exact.key.size(), 4 * kDefaultValueChunkSize + kChunkTableHeaderSize +
                                               4 * kChunkEntrySize));
  }
  std::string value;
  for (const Entry& e : entries_) {
    ASSERT_TRUE(reader_->Read(e.pointer, e.key, &value).ok()) << e.key;
    EXPECT_EQ(value, e.value);
  }
  if (GetParam()) {
    // The runs compress chunk by chunk; the random half does not.
    EXPECT_LT(entries_[2].pointer.size, 150000u + 20000u);
  }
}

INSTANTIATE_TEST_SUITE_P(Compression, SegmentReaderRangeTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Zstd" : "None"; });

class SegmentReaderChecksTest : public OneSegmentTest<::testing::Test> {
 protected:
  void SetUp() override {
    entries_ = {{"alpha", "first value", {}}, {"beta", "second value", {}},
                {"gamma", std::string(3000, 'g'), {}}};
    SegmentWriterOptions options;
    options.compress = true;
    ASSERT_TRUE(fs_.CreateDir("/db").ok());
    WriteAndOpen(kPath, 9, options);
  }

  static constexpr char kPath[] = "/db/000009.vlog";
};

TEST_F(SegmentReaderChecksTest, WrongKeyIsDataLossNamingFileAndOffset) {
  std::string value = "untouched";
  absl::Status s = reader_->Read(entries_[1].pointer, "alpha", &value);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr(kPath));
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("offset ", entries_[1].pointer.offset)));
  EXPECT_TRUE(value.empty()) << "no partial value on failure";
}

TEST_F(SegmentReaderChecksTest, PointerToAnotherSegmentIsDataLoss) {
  ValuePointer p = entries_[0].pointer;
  p.segment_id = 10;
  std::string value;
  absl::Status s = reader_->Read(p, "alpha", &value);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr("segment 10"));
}

TEST_F(SegmentReaderChecksTest, MisdirectedPointersAreDataLoss) {
  const ValuePointer good = entries_[1].pointer;
  const uint64_t file_size = fs_.GetFileSize(kPath).value();
  const std::vector<ValuePointer> bad = {
      {9, good.offset, good.size + 1},               // size disagrees with the record
      {9, good.offset, good.size - 1},               // cut short
      {9, good.offset + 1, good.size},               // not a record boundary
      {9, 0, good.size},                             // into the header
      {9, file_size - 5, 20},                        // past the end of the file
      {9, file_size + 100, 20},                      // wholly past the end
      {9, kSegmentHeaderSize, 200u << 20},           // huge: refused before allocating
      {9, kSegmentHeaderSize, 0xffffffffu},          // beyond any record
      {9, kSegmentHeaderSize, kRecordHeaderSize - 1},
  };
  for (const ValuePointer& p : bad) {
    std::string value;
    absl::Status s = reader_->Read(p, "beta", &value);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << p.DebugString() << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr(kPath));
  }
}

TEST_F(SegmentReaderChecksTest, FlippingAnyByteNeverYieldsAWrongValue) {
  const std::string original = fs_.ReadFileToString(kPath).value();
  int failures = 0;
  for (size_t i = 0; i < original.size(); ++i) {
    std::string damaged = original;
    damaged[i] ^= static_cast<char>(1 << (i % 8));
    ASSERT_TRUE(fs_.WriteFileFromString(kPath, damaged).ok());
    auto reader = SegmentReader::Open(&fs_, kPath, 9, false);
    if (!reader.ok()) {
      // Header bytes: the version field is "refused", everything else DataLoss.
      EXPECT_LT(i, kSegmentHeaderSize);
      EXPECT_TRUE(reader.status().code() == absl::StatusCode::kDataLoss ||
                  reader.status().code() == absl::StatusCode::kFailedPrecondition)
          << reader.status();
      ++failures;
      continue;
    }
    for (const Entry& e : entries_) {
      std::string value;
      absl::Status s = (*reader)->Read(e.pointer, e.key, &value);
      if (s.ok()) {
        EXPECT_EQ(value, e.value) << "flip at " << i;
      } else {
        EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
        ++failures;
      }
    }
  }
  // Every flipped byte is covered by a checksum, so each one fails something.
  EXPECT_EQ(failures, static_cast<int>(original.size()));
}

TEST_F(SegmentReaderChecksTest, MultiReadReportsEachPointer) {
  std::vector<ValuePointer> pointers;
  std::vector<std::string_view> keys;
  for (const Entry& e : entries_) {
    pointers.push_back(e.pointer);
    keys.push_back(e.key);
  }
  keys[1] = "not-beta";
  pointers.push_back({8, entries_[0].pointer.offset, entries_[0].pointer.size});
  keys.push_back("alpha");
  std::vector<std::string> values;
  std::vector<absl::Status> statuses;
  absl::Status s = reader_->MultiRead(pointers, keys, &values, &statuses);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  ASSERT_EQ(statuses.size(), 4u);
  EXPECT_TRUE(statuses[0].ok());
  EXPECT_EQ(values[0], entries_[0].value);
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(values[1].empty());
  EXPECT_TRUE(statuses[2].ok());
  EXPECT_EQ(values[2], entries_[2].value);
  EXPECT_EQ(statuses[3].code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s, statuses[1]) << "the first failure in index order";

  EXPECT_EQ(reader_->MultiRead(pointers, absl::MakeSpan(keys).subspan(1), &values, &statuses)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SegmentReaderOpenTest, RefusesBadHeaders) {
  io::MemoryFileSystem fs;
  std::vector<Entry> entries = {{"k", "v", {}}};
  WriteSegment(&fs, "/000003.vlog", 3, {}, &entries);

  // Missing: a pointer names it, so this is lost data, not an absent key.
  EXPECT_EQ(SegmentReader::Open(&fs, "/000004.vlog", 4, false).status().code(),
            absl::StatusCode::kDataLoss);
  absl::Status wrong_id = SegmentReader::Open(&fs, "/000003.vlog", 4, false).status();
  EXPECT_EQ(wrong_id.code(), absl::StatusCode::kDataLoss) << wrong_id;

  std::string bytes = fs.ReadFileToString("/000003.vlog").value();
  io::EncodeFixed32(bytes.data() + 8, kSegmentFormatVersion + 1);
  ASSERT_TRUE(fs.WriteFileFromString("/000003.vlog", bytes).ok());
  absl::Status newer = SegmentReader::Open(&fs, "/000003.vlog", 3, false).status();
  EXPECT_EQ(newer.code(), absl::StatusCode::kFailedPrecondition) << newer;
  EXPECT_THAT(newer.message(), HasSubstr(absl::StrCat("version ", kSegmentFormatVersion + 1)));

  ASSERT_TRUE(fs.WriteFileFromString("/000003.vlog", "").ok());
  EXPECT_EQ(SegmentReader::Open(&fs, "/000003.vlog", 3, false).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(SegmentWriterTest, RejectsOversizedInputBeforeAnyIo) {
  io::MemoryFileSystem fs;
  auto writer = SegmentWriter::Create(&fs, "/1.vlog", 1, {});
  ASSERT_TRUE(writer.ok());
  const std::string big_key(kMaxRecordKeySize + 1, 'k');
  EXPECT_EQ((*writer)->Append(big_key, "v").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*writer)->size(), kSegmentHeaderSize);
  EXPECT_TRUE((*writer)->Append(std::string(kMaxRecordKeySize, 'k'), "v").ok());
  // A value over the limit: a view of the right length over a small buffer
  // (the writer must refuse before touching its bytes).
  const std::string small(16, 'v');
  const std::string_view huge(small.data(), kMaxRecordValueSize + 1);
  const uint64_t before = (*writer)->size();
  EXPECT_EQ((*writer)->Append("k", huge).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*writer)->size(), before);
  EXPECT_TRUE((*writer)->Close().ok());
  EXPECT_EQ((*writer)->Append("k", "v").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*writer)->file(), nullptr);
}

// A value near kMaxRecordValueSize stores longer than itself once chunked
// (its table comes first): such records must read back through every reader,
// and a writer must refuse one that cannot.
// The sizes alone, in every run: the largest value's record, chunk table
// and all, fits the readers' cap.
TEST(SegmentWriterTest, LargestValuesFitTheReadersCap) {
  for (const size_t key_size : {size_t{1}, size_t{7}, kMaxRecordKeySize}) {
    EXPECT_LE(UncompressedRecordSize(key_size, kMaxRecordValueSize), kMaxRecordSize)
        << key_size;
    EXPECT_GT(UncompressedRecordSize(key_size, kMaxRecordValueSize),
              RecordSize(key_size, kMaxRecordValueSize));
  }
}

// The read back itself takes about 6 s and 1.3 GB: the long form only
// (CAIRN_LONG=1, scripts/test --long).
TEST(SegmentWriterTest, LargestValuesReadBackChunked) {
  const char* long_form = std::getenv("CAIRN_LONG");
  if (long_form == nullptr || std::string(long_form) != "1") {
    GTEST_SKIP() << "256 MiB values: CAIRN_LONG=1 (scripts/test --long)";
  }
  io::MemoryFileSystem fs;
  // Incompressible (and the writer does not compress): raw chunks, so the
  // stored value is the value plus its whole table. One buffer for both.
  std::string largest(kMaxRecordValueSize, '\0');
  std::mt19937_64 rng(11);
  for (size_t i = 0; i < largest.size(); i += 8) {
    const uint64_t r = rng();
    std::memcpy(largest.data() + i, &r, std::min<size_t>(8, largest.size() - i));
  }
  const std::string_view values[] = {largest,
                                     std::string_view(largest).substr(0, largest.size() - 300)};
  const std::string keys[] = {"largest", "largest-less-300"};
  ValuePointer pointers[2];
  {
    auto writer = SegmentWriter::Create(&fs, "/9.vlog", 9, {});
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<ValuePointer> p = (*writer)->Append(keys[i], values[i]);
      ASSERT_TRUE(p.ok()) << p.status();
      pointers[i] = *p;
      EXPECT_EQ(p->size, UncompressedRecordSize(keys[i].size(), values[i].size()));
      EXPECT_GT(p->size, RecordSize(keys[i].size(), kMaxRecordValueSize));
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  EXPECT_LE(pointers[0].size, kMaxRecordSize);

  auto reader = SegmentReader::Open(&fs, "/9.vlog", 9, false);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string got;
  for (int i = 0; i < 2; ++i) {
    absl::Status s = (*reader)->Read(pointers[i], keys[i], &got);
    ASSERT_TRUE(s.ok()) << s;
    // Not EXPECT_EQ: a failure would print 256 MiB.
    EXPECT_TRUE(got == values[i]) << keys[i];
    // A range at the value's end: the last chunk, through the table.
    bool read_whole = true;
    s = (*reader)->ReadValueRange(pointers[i], keys[i], values[i].size() - 1000, 1000,
                                  /*verify=*/true, &got, &read_whole);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_FALSE(read_whole);
    EXPECT_TRUE(got == values[i].substr(values[i].size() - 1000)) << keys[i];
  }
  got.clear();
  got.shrink_to_fit();

  // The scanner, as a sealed segment's scan (any bad record is DataLoss),
  // then stepping over the first as a known dead record.
  for (bool skip_first : {false, true}) {
    SegmentScannerOptions options;
    options.allow_torn_tail = false;
    if (skip_first) {
      options.known_dead = {{pointers[0].offset, pointers[0].offset + pointers[0].size}};
    }
    auto scanner = SegmentScanner::Open(&fs, "/9.vlog", 9, options);
    ASSERT_TRUE(scanner.ok()) << scanner.status();
    ScannedRecord record;
    for (int i = skip_first ? 1 : 0; i < 2; ++i) {
      ASSERT_TRUE((*scanner)->Next(&record)) << (*scanner)->status();
      EXPECT_EQ(record.pointer(9), pointers[i]);
      EXPECT_EQ(record.key, keys[i]);
      EXPECT_TRUE(record.value == values[i]) << keys[i];
    }
    EXPECT_FALSE((*scanner)->Next(&record));
    EXPECT_TRUE((*scanner)->status().ok()) << (*scanner)->status();
    EXPECT_FALSE((*scanner)->torn_tail());
  }

  // In 1 KiB chunks the table alone (2.25 MiB) takes the stored value past
  // kMaxRecordStoredSize: refused before anything is written.
  SegmentWriterOptions small_chunks;
  small_chunks.chunk_size = 1024;
  auto writer = SegmentWriter::Create(&fs, "/10.vlog", 10, small_chunks);
  ASSERT_TRUE(writer.ok()) << writer.status();
  absl::StatusOr<ValuePointer> refused = (*writer)->Append("k", largest);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("/10.vlog"));
  EXPECT_EQ((*writer)->size(), kSegmentHeaderSize);
  EXPECT_TRUE((*writer)->Append("k", "v").ok());  // not a sticky error
  EXPECT_TRUE((*writer)->Close().ok());
}

TEST(SegmentWriterTest, RejectsBadCompressionLevel) {
  io::MemoryFileSystem fs;
  SegmentWriterOptions options;
  options.compress = true;
  options.compression_level = 40;
  EXPECT_EQ(SegmentWriter::Create(&fs, "/1.vlog", 1, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SegmentWriterTest, ChargesFreshWritesAndGcOutputToTheirCategories) {
  io::MemoryFileSystem fs;
  SegmentWriterOptions gc;
  gc.kind = SegmentKind::kGcOutput;
  std::vector<Entry> a = {{"k", std::string(1000, 'x'), {}}};
  std::vector<Entry> b = a;
  WriteSegment(&fs, "/1.vlog", 1, {}, &a);
  WriteSegment(&fs, "/2.vlog", 2, gc, &b);
  EXPECT_EQ(fs.stats().Get(io::IoCategory::kValueLog).bytes_written,
            kSegmentHeaderSize + a[0].pointer.size);
  EXPECT_EQ(fs.stats().Get(io::IoCategory::kGc).bytes_written,
            kSegmentHeaderSize + b[0].pointer.size);
  auto reader = SegmentReader::Open(&fs, "/2.vlog", 2, false);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->kind(), SegmentKind::kGcOutput);
}

TEST(SegmentWriterTest, HeaderIsDurableFromCreation) {
  auto fault = std::make_shared<io::FaultFileSystem>(std::make_shared<io::MemoryFileSystem>());
  auto writer = SegmentWriter::Create(fault.get(), "/7.vlog", 7, {});
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Append("k", "unsynced value").ok());
  ASSERT_TRUE((*writer)->Flush().ok());
  fault->SetFilesystemActive(false);
  writer->reset();
  ASSERT_TRUE(fault->SimulateCrash(io::CrashMode::kDropUnsynced, 1).ok());
  EXPECT_EQ(fault->GetFileSize("/7.vlog").value(), kSegmentHeaderSize);
  EXPECT_TRUE(SegmentReader::Open(fault.get(), "/7.vlog", 7, false).ok());
}

TEST(SegmentWriterTest, WithoutTheHeaderSyncNothingIsDurableUntilTheCallerSyncs) {
  SegmentWriterOptions o;
  o.sync_header = false;  // as GC output and the flush's segments
  auto fault = std::make_shared<io::FaultFileSystem>(std::make_shared<io::MemoryFileSystem>());
  {
    auto writer = SegmentWriter::Create(fault.get(), "/7.vlog", 7, o);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append("k", "unsynced value").ok());
    ASSERT_TRUE((*writer)->Flush().ok());
    fault->SetFilesystemActive(false);
  }
  ASSERT_TRUE(fault->SimulateCrash(io::CrashMode::kDropUnsynced, 1).ok());
  EXPECT_EQ(fault->GetFileSize("/7.vlog").value(), 0u);  // an orphan for open to remove

  // Once the caller syncs, header and records are durable together.
  absl::StatusOr<ValuePointer> ptr = absl::InternalError("unset");
  {
    auto writer = SegmentWriter::Create(fault.get(), "/8.vlog", 8, o);
    ASSERT_TRUE(writer.ok());
    ptr = (*writer)->Append("k", "synced value");
    ASSERT_TRUE(ptr.ok());
    ASSERT_TRUE((*writer)->Sync().ok());
    fault->SetFilesystemActive(false);
  }
  ASSERT_TRUE(fault->SimulateCrash(io::CrashMode::kDropUnsynced, 2).ok());
  EXPECT_EQ(fault->GetFileSize("/8.vlog").value(), kSegmentHeaderSize + ptr->size);
  auto reader = SegmentReader::Open(fault.get(), "/8.vlog", 8, false);
  ASSERT_TRUE(reader.ok()) << reader.status();
}

TEST(SegmentWriterTest, ErrorsAreSticky) {
  auto fault = std::make_shared<io::FaultFileSystem>(std::make_shared<io::MemoryFileSystem>());
  auto writer = SegmentWriter::Create(fault.get(), "/7.vlog", 7, {});
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Append("a", "1").ok());
  fault->FailAfter(0, io::InjectedNoSpaceError("test"), io::FaultKind::kAnyWrite,
                   /*persistent=*/false);
  absl::Status first = (*writer)->Append("b", "2").status();
  EXPECT_EQ(first.code(), absl::StatusCode::kResourceExhausted) << first;
  // The fault fired once, but the writer no longer trusts its file.
  EXPECT_EQ((*writer)->Append("c", "3").status(), first);
  EXPECT_EQ((*writer)->Sync(), first);
  EXPECT_EQ((*writer)->Close(), first);
}

// MultiRead of 100 pointers equals 100 Reads, on every backend.
struct Backend {
  std::string name;
  io::IoBackend backend;  // unused for "memory"
  bool direct;
};
void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }

class SegmentReaderBackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam().name == "memory") {
      fs_ = std::make_shared<io::MemoryFileSystem>();
      dir_ = "/db";
      ASSERT_TRUE(fs_->CreateDir(dir_).ok());
      return;
    }
    auto fs = io::NewFileSystem(GetParam().backend);
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *fs;
    // Says whether io_uring was really used or the POSIX fallback was taken.
    RecordProperty("file_system", fs_->Name());
    char tmpl[] = "/tmp/cairn_vlog_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (GetParam().name != "memory") std::filesystem::remove_all(dir_);
  }

  std::shared_ptr<io::FileSystem> fs_;
  std::string dir_;
};

TEST_P(SegmentReaderBackendTest, MultiReadOfAHundredEqualsAHundredReads) {
  std::mt19937_64 rng(99);
  std::vector<Entry> entries;
  for (int i = 0; i < 100; ++i) {
    std::string value = (i % 3 == 0) ? CompressibleBytes(rng, 1 + rng() % 20000)
                                     : RandomBytes(rng, rng() % 9000);
    entries.push_back({absl::StrCat("key-", i), std::move(value), {}});
  }
  SegmentWriterOptions options;
  options.compress = true;
  options.direct_writes = GetParam().direct;
  const std::string path = io::JoinPath(dir_, "000011.vlog");
  WriteSegment(fs_.get(), path, 11, options, &entries);

  auto reader = SegmentReader::Open(fs_.get(), path, 11, GetParam().direct);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<ValuePointer> pointers;
  std::vector<std::string_view> keys;
  // Out of file order, as a MultiGet would ask.
  std::vector<size_t> order(entries.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i : order) {
    pointers.push_back(entries[i].pointer);
    keys.push_back(entries[i].key);
  }
  std::vector<std::string> values;
  std::vector<absl::Status> statuses;
  const uint64_t reads_before = fs_->stats().Get(io::IoCategory::kValueLog).read_ops;
  ASSERT_TRUE((*reader)->MultiRead(pointers, keys, &values, &statuses).ok())
      << fs_->Name();
  EXPECT_GE(fs_->stats().Get(io::IoCategory::kValueLog).read_ops - reads_before, 100u);
  for (size_t j = 0; j < order.size(); ++j) {
    std::string single;
    ASSERT_TRUE((*reader)->Read(pointers[j], keys[j], &single).ok());
    EXPECT_EQ(values[j], single);
    EXPECT_EQ(values[j], entries[order[j]].value);
    EXPECT_TRUE(statuses[j].ok());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Backends, SegmentReaderBackendTest,
    ::testing::Values(Backend{"memory", io::IoBackend::kAuto, false},
                      Backend{"posix", io::IoBackend::kPosix, false},
                      Backend{"posix_direct", io::IoBackend::kPosix, true},
                      Backend{"uring", io::IoBackend::kUring, false},
                      Backend{"uring_direct", io::IoBackend::kUring, true}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cairn::vlog
