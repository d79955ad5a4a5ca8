#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/checksum.h"
#include "io/coding.h"
#include "io/memory_file_system.h"
#include "lsm/log_format.h"
#include "lsm/log_reader.h"
#include "lsm/log_writer.h"

namespace cairn::lsm {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kLogNumber = 7;

// The outcome of reading a whole log.
struct ReadResult {
  absl::Status open_status;  // Open's; the fields below are unset if not OK.
  std::vector<std::string> records;
  std::vector<uint64_t> offsets;  // last_record_offset() after each record.
  absl::Status status;
  bool torn = false;
  uint64_t valid_end = 0;
};

class LogTest : public ::testing::Test {
 protected:
  // Writes a log holding records; returns the offset each record starts at
  // (its first fragment).
  std::vector<uint64_t> Write(const std::vector<std::string>& records,
                              uint64_t log_number = kLogNumber, const std::string& path = kPath) {
    auto file = fs_.NewWritableFile(path, {.category = io::IoCategory::kWal});
    EXPECT_TRUE(file.ok()) << file.status();
    auto writer = LogWriter::Create(std::move(*file), log_number);
    EXPECT_TRUE(writer.ok()) << writer.status();
    std::vector<uint64_t> starts;
    for (const std::string& r : records) {
      const uint64_t before = (*writer)->size();
      EXPECT_TRUE((*writer)->AddRecord(r).ok());
      // The record starts after the trailer padding AddRecord may have put
      // first.
      const uint64_t in_block = before % kLogBlockSize;
      starts.push_back(kLogBlockSize - in_block < kLogFragmentHeaderSize
                           ? before + (kLogBlockSize - in_block)
                           : before);
    }
    EXPECT_TRUE((*writer)->Close().ok());
    return starts;
  }

  ReadResult Read(uint64_t log_number = kLogNumber, const std::string& path = kPath) {
    ReadResult result;
    auto reader = LogReader::Open(&fs_, path, log_number);
    result.open_status = reader.status();
    if (!reader.ok()) return result;
    std::string_view record;
    std::string scratch;
    while ((*reader)->ReadRecord(&record, &scratch)) {
      result.records.emplace_back(record);
      result.offsets.push_back((*reader)->last_record_offset());
    }
    result.status = (*reader)->status();
    result.torn = (*reader)->hit_torn_tail();
    result.valid_end = (*reader)->valid_end_offset();
    return result;
  }

  // Reads the whole log as a salvage does: on corruption, SkipCorruption
  // and read on. result.status is the reader's at the end.
  ReadResult ReadSkipping(std::vector<LogReader::SkippedRange>* skipped) {
    ReadResult result;
    auto reader = LogReader::Open(&fs_, kPath, kLogNumber);
    result.open_status = reader.status();
    if (!reader.ok()) return result;
    std::string_view record;
    std::string scratch;
    while (true) {
      while ((*reader)->ReadRecord(&record, &scratch)) {
        result.records.emplace_back(record);
        result.offsets.push_back((*reader)->last_record_offset());
      }
      std::optional<LogReader::SkippedRange> range = (*reader)->SkipCorruption();
      if (!range.has_value()) break;
      skipped->push_back(*range);
    }
    result.status = (*reader)->status();
    result.torn = (*reader)->hit_torn_tail();
    result.valid_end = (*reader)->valid_end_offset();
    return result;
  }

  std::string Contents(const std::string& path = kPath) {
    auto s = fs_.ReadFileToString(path);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : std::string();
  }
  void SetContents(std::string_view contents, const std::string& path = kPath) {
    ASSERT_TRUE(fs_.WriteFileFromString(path, contents).ok());
  }

  static inline const std::string kPath = "/000007.log";
  io::MemoryFileSystem fs_;
};

// A file header as the writer makes it, with any magic, version and number.
std::string Header(uint64_t magic, uint32_t version, uint64_t number);

std::vector<std::string> Prefix(const std::vector<std::string>& v, size_t n) {
  return std::vector<std::string>(v.begin(), v.begin() + n);
}

// Records compare exactly but print in short, so a failure does not print
// megabytes.
std::string Summary(const std::vector<std::string>& records) {
  std::string out = absl::StrCat(records.size(), " records:");
  for (const std::string& r : records) {
    if (r.size() <= 16) {
      absl::StrAppend(&out, " \"", r, "\"");
    } else {
      absl::StrAppend(&out, " <", r.size(), " bytes, xxh3 ", io::Checksum64(r), ">");
    }
  }
  return out;
}

struct Records {
  std::vector<std::string> v;
  bool operator==(const Records&) const = default;
  friend void PrintTo(const Records& r, std::ostream* os) { *os << Summary(r.v); }
};

TEST_F(LogTest, EmptyLogHasOnlyAHeaderAndNoRecords) {
  Write({});
  EXPECT_EQ(Contents().size(), kLogFileHeaderSize);
  ReadResult r = Read();
  ASSERT_TRUE(r.open_status.ok()) << r.open_status;
  EXPECT_TRUE(r.records.empty());
  EXPECT_TRUE(r.status.ok());
  EXPECT_FALSE(r.torn);
  EXPECT_EQ(r.valid_end, kLogFileHeaderSize);
}

TEST_F(LogTest, RecordsOfRandomSizesRoundTrip) {
  const uint32_t seed = std::random_device()();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::seed_seq seq{seed};
  absl::BitGen gen(seq);
  std::vector<std::string> records = {"", "a", std::string(kLogBlockSize * 3 + 17, 'x'), ""};
  for (int i = 0; i < 300; ++i) {
    size_t n;
    switch (absl::Uniform(gen, 0, 4)) {
      case 0:
        n = 0;
        break;
      case 1:
        n = absl::Uniform<size_t>(gen, 1, 100);
        break;
      case 2:
        n = absl::Uniform<size_t>(gen, 100, 5000);
        break;
      default:
        n = absl::Uniform<size_t>(gen, 5000, 3 * kLogBlockSize);
        break;
    }
    std::string r(n, '\0');
    for (char& c : r) c = static_cast<char>(absl::Uniform<int>(gen, 0, 256));
    records.push_back(std::move(r));
  }
  const std::vector<uint64_t> starts = Write(records);
  ReadResult r = Read();
  ASSERT_TRUE(r.open_status.ok()) << r.open_status;
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_FALSE(r.torn);
  ASSERT_EQ(r.records.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_TRUE(r.records[i] == records[i]) << "record " << i << " differs";
  }
  EXPECT_EQ(r.offsets, starts);
  EXPECT_EQ(r.valid_end, Contents().size());
  // Reading charges the WAL's I/O category.
  EXPECT_GE(fs_.stats().Get(io::IoCategory::kWal).bytes_read, Contents().size());
}

// A record that leaves 0..7 bytes in its block: below 7 the rest is a zero
// trailer and the next record starts in the next block.
TEST_F(LogTest, BlockTailsTooSmallForAFragmentArePaddedAndSkipped) {
  for (size_t tail = 0; tail <= kLogFragmentHeaderSize; ++tail) {
    SCOPED_TRACE(absl::StrCat("tail ", tail));
    const std::string first(kLogBlockSize - kLogFileHeaderSize - kLogFragmentHeaderSize - tail,
                            'f');
    const std::vector<uint64_t> starts = Write({first, "next", ""});
    if (tail < kLogFragmentHeaderSize) {
      EXPECT_EQ(starts[1], kLogBlockSize);
      EXPECT_EQ(Contents().substr(kLogBlockSize - tail, tail), std::string(tail, '\0'));
    } else {
      EXPECT_EQ(starts[1], kLogBlockSize - tail);  // A fragment header fits exactly.
    }
    ReadResult r = Read();
    ASSERT_TRUE(r.open_status.ok());
    EXPECT_EQ(Records{r.records}, (Records{{first, "next", ""}}));
    EXPECT_TRUE(r.status.ok());
    EXPECT_FALSE(r.torn);
    EXPECT_EQ(r.offsets, starts);
  }
}

// The last record spans a block boundary; cutting the file anywhere inside it
// must yield exactly the earlier records, as a torn tail.
TEST_F(LogTest, TornTailAtEveryTruncationOfTheLastRecordIsIgnored) {
  const std::string filler(kLogBlockSize - kLogFileHeaderSize - 2 * kLogFragmentHeaderSize - 100,
                           'f');
  const std::vector<std::string> records = {"small", filler, std::string(300, 'L')};
  const std::vector<uint64_t> starts = Write(records);
  const std::string full = Contents();
  ASSERT_LT(starts[2], kLogBlockSize);
  ASSERT_GT(full.size(), kLogBlockSize);  // The last record is fragmented.
  for (uint64_t cut = starts[2] + 1; cut < full.size(); ++cut) {
    SetContents(std::string_view(full).substr(0, cut));
    ReadResult r = Read();
    ASSERT_TRUE(r.open_status.ok()) << "cut " << cut;
    ASSERT_TRUE(r.status.ok()) << "cut " << cut << ": " << r.status;
    ASSERT_TRUE(r.torn) << "cut " << cut;
    ASSERT_EQ(Records{r.records}, Records{Prefix(records, 2)}) << "cut " << cut;
    ASSERT_EQ(r.valid_end, starts[2]) << "cut " << cut;
  }
  // Cut exactly at the record's start: a clean end.
  SetContents(std::string_view(full).substr(0, starts[2]));
  ReadResult r = Read();
  EXPECT_FALSE(r.torn);
  EXPECT_EQ(Records{r.records}, Records{Prefix(records, 2)});
}

TEST_F(LogTest, HeaderCutShortReadsAsAnEmptyTornLog) {
  Write({"a", "b"});
  const std::string full = Contents();
  for (size_t cut = 0; cut < kLogFileHeaderSize; ++cut) {
    SetContents(std::string_view(full).substr(0, cut));
    ReadResult r = Read();
    ASSERT_TRUE(r.open_status.ok()) << "cut " << cut;
    EXPECT_TRUE(r.records.empty());
    EXPECT_TRUE(r.status.ok());
    EXPECT_TRUE(r.torn);
    EXPECT_EQ(r.valid_end, 0u);
  }
}

TEST_F(LogTest, ZeroFilledSpaceAfterTheLastRecordIsATornTailBeforeVersionThree) {
  Write({"one", "two"});
  const std::string whole = Contents();
  for (uint32_t version : {1u, 2u}) {
    SCOPED_TRACE(version);
    SetContents(Header(kLogMagic, version, kLogNumber) + whole.substr(kLogFileHeaderSize) +
                std::string(5000, '\0'));
    ReadResult r = Read();
    ASSERT_TRUE(r.open_status.ok());
    EXPECT_EQ(Records{r.records}, (Records{{"one", "two"}}));
    EXPECT_TRUE(r.status.ok());
    EXPECT_TRUE(r.torn);
    EXPECT_EQ(r.valid_end, whole.size());
  }
}

// Version 3: a writer may fill zeros ahead of its appends
// (FileOptions::prefill_bytes), and a crash leaves them after the last
// record. Any length of them, across block boundaries, is the clean end.
TEST_F(LogTest, ZerosFromAFragmentStartToTheEndAreTheCleanEndInVersionThree) {
  const std::vector<std::string> records = {"one", std::string(40000, 'b'), "three"};
  Write(records);
  const std::string whole = Contents();
  for (size_t zeros : {size_t{1}, size_t{6}, size_t{7}, size_t{5000}, size_t{3 * kLogBlockSize}}) {
    SCOPED_TRACE(zeros);
    SetContents(whole + std::string(zeros, '\0'));
    ReadResult r = Read();
    ASSERT_TRUE(r.open_status.ok());
    EXPECT_EQ(Records{r.records}, Records{records});
    EXPECT_TRUE(r.status.ok()) << r.status;
    EXPECT_FALSE(r.torn);
    EXPECT_EQ(r.valid_end, whole.size());
  }
  // A log with no record, only its header and the zeros after it.
  Write({});
  SetContents(Contents() + std::string(256 << 10, '\0'));
  ReadResult empty = Read();
  ASSERT_TRUE(empty.open_status.ok());
  EXPECT_TRUE(empty.records.empty());
  EXPECT_TRUE(empty.status.ok());
  EXPECT_FALSE(empty.torn);
  EXPECT_EQ(empty.valid_end, kLogFileHeaderSize);
}

TEST_F(LogTest, ZerosAfterAPartOfARecordAreStillATornTail) {
  // A record whose last fragment never arrived, then the writer's zeros.
  const std::vector<uint64_t> starts = Write({"one", std::string(40000, 'b')});
  const std::string whole = Contents();
  SetContents(whole.substr(0, kLogBlockSize + 100) + std::string(kLogBlockSize, '\0'));
  ReadResult r = Read();
  ASSERT_TRUE(r.open_status.ok());
  EXPECT_EQ(Records{r.records}, (Records{{"one"}}));
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.torn);
  EXPECT_EQ(r.valid_end, starts[1]);
  // A fragment cut inside its payload, zeros after: torn, not clean.
  const std::vector<uint64_t> two = Write({"one", std::string(1000, 'c')});
  SetContents(Contents().substr(0, two[1] + 500) + std::string(5000, '\0'));
  r = Read();
  EXPECT_EQ(Records{r.records}, (Records{{"one"}}));
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.torn);
  EXPECT_EQ(r.valid_end, two[1]);
}

TEST_F(LogTest, ZerosFollowedByAValidFragmentAreCorruption) {
  const std::vector<uint64_t> starts = Write({"first", "second", "third"});
  std::string bytes = Contents();
  // "second" zeroed out whole, "third" after it intact.
  std::fill(bytes.begin() + static_cast<ptrdiff_t>(starts[1]),
            bytes.begin() + static_cast<ptrdiff_t>(starts[2]), '\0');
  SetContents(bytes + std::string(5000, '\0'));
  ReadResult r = Read();
  ASSERT_TRUE(r.open_status.ok());
  EXPECT_EQ(Records{r.records}, (Records{{"first"}}));
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status.message(), HasSubstr(absl::StrCat("offset ", starts[1])));
}

TEST_F(LogTest, BadRecordFollowedByAGoodOneIsDataLossNamingFileAndOffset) {
  const std::vector<uint64_t> starts = Write({"first", "second", "third"});
  std::string bytes = Contents();
  bytes[starts[1] + kLogFragmentHeaderSize + 2] ^= 0x40;  // Inside "second".
  SetContents(bytes);
  ReadResult r = Read();
  ASSERT_TRUE(r.open_status.ok());
  EXPECT_EQ(Records{r.records}, (Records{{"first"}}));
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status.message(), HasSubstr(kPath));
  EXPECT_THAT(r.status.message(), HasSubstr(absl::StrCat("offset ", starts[1])));
  EXPECT_FALSE(r.torn);
}

TEST_F(LogTest, DamagedFragmentInsideAMultiBlockRecordFailsTheWholeRecord) {
  const std::vector<std::string> records = {std::string(kLogBlockSize * 2, 'm'), "after"};
  const std::vector<uint64_t> starts = Write(records);
  std::string bytes = Contents();
  bytes[kLogBlockSize + 100] ^= 0x01;  // In the record's middle fragment.
  SetContents(bytes);
  ReadResult r = Read();
  EXPECT_TRUE(r.records.empty());
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status.message(), HasSubstr(absl::StrCat("offset ", starts[0])));
}

// Flip each byte of a small log: the reader must return a prefix of the
// records, exact, and then either fail with DataLoss or stop cleanly.
TEST_F(LogTest, FlippingAnyByteGivesDataLossOrACleanStopAndNeverAWrongRecord) {
  const std::vector<std::string> records = {"alpha", "", "gamma-gamma"};
  const std::vector<uint64_t> starts = Write(records);
  const std::string original = Contents();
  for (size_t i = 0; i < original.size(); ++i) {
    for (int mask : {0x01, 0x80, 0xff}) {
      SCOPED_TRACE(absl::StrCat("byte ", i, " mask ", mask));
      std::string bytes = original;
      bytes[i] = static_cast<char>(bytes[i] ^ mask);
      SetContents(bytes);
      ReadResult r = Read();
      if (i < kLogFileHeaderSize) {
        EXPECT_EQ(r.open_status.code(), absl::StatusCode::kDataLoss) << r.open_status;
        EXPECT_THAT(r.open_status.message(), HasSubstr(kPath));
        continue;
      }
      ASSERT_TRUE(r.open_status.ok()) << r.open_status;
      // The record holding byte i is the first one that cannot come back.
      size_t hit = 0;
      while (hit + 1 < starts.size() && starts[hit + 1] <= i) ++hit;
      EXPECT_EQ(Records{r.records}, Records{Prefix(records, hit)});
      if (hit + 1 < records.size()) {
        EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
        EXPECT_THAT(r.status.message(), HasSubstr(absl::StrCat("offset ", starts[hit])));
      } else {
        EXPECT_TRUE(r.status.ok()) << r.status;
        EXPECT_TRUE(r.torn);
        EXPECT_EQ(r.valid_end, starts[hit]);
      }
    }
  }
}

// The same sweep over the bytes around a block boundary that a fragmented
// record crosses.
TEST_F(LogTest, FlippingBytesAroundABlockBoundaryNeverReturnsAWrongRecord) {
  const std::vector<std::string> records = {
      std::string(kLogBlockSize - kLogFileHeaderSize - kLogFragmentHeaderSize - 40, 'a'),
      std::string(100, 'b'), "c"};
  const std::vector<uint64_t> starts = Write(records);
  const std::string original = Contents();
  for (size_t i = kLogBlockSize - 60; i < kLogBlockSize + 80; ++i) {
    SCOPED_TRACE(absl::StrCat("byte ", i));
    std::string bytes = original;
    bytes[i] ^= 0x10;
    SetContents(bytes);
    ReadResult r = Read();
    ASSERT_TRUE(r.open_status.ok());
    size_t hit = 0;
    while (hit + 1 < starts.size() && starts[hit + 1] <= i) ++hit;
    EXPECT_EQ(Records{r.records}, Records{Prefix(records, hit)});
    if (hit + 1 < records.size()) {
      EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
    } else {
      EXPECT_TRUE(r.status.ok());
      EXPECT_TRUE(r.torn);
    }
  }
}

TEST_F(LogTest, SkipCorruptionResumesAtTheRecordAfterABadOne) {
  const std::vector<uint64_t> starts = Write({"first", "second", "third"});
  std::string bytes = Contents();
  bytes[starts[1] + kLogFragmentHeaderSize + 2] ^= 0x40;  // Inside "second".
  SetContents(bytes);
  std::vector<LogReader::SkippedRange> skipped;
  ReadResult r = ReadSkipping(&skipped);
  ASSERT_TRUE(r.open_status.ok());
  EXPECT_EQ(Records{r.records}, (Records{{"first", "third"}}));
  EXPECT_EQ(r.offsets, (std::vector<uint64_t>{starts[0], starts[2]}));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].begin, starts[1]);
  EXPECT_EQ(skipped[0].end, starts[2]);
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_FALSE(r.torn);
}

TEST_F(LogTest, SkipCorruptionPassesOverTheRestOfABadMultiBlockRecord) {
  // The middle and last fragments of the bad record verify, but cannot
  // begin a record: reading resumes at "after", not at them.
  const std::vector<std::string> records = {"before", std::string(kLogBlockSize * 2, 'm'),
                                            "after"};
  const std::vector<uint64_t> starts = Write(records);
  std::string bytes = Contents();
  bytes[starts[1] + kLogFragmentHeaderSize + 1] ^= 0x01;  // In its first fragment.
  SetContents(bytes);
  std::vector<LogReader::SkippedRange> skipped;
  ReadResult r = ReadSkipping(&skipped);
  EXPECT_EQ(Records{r.records}, (Records{{"before", "after"}}));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].begin, starts[1]);
  EXPECT_EQ(skipped[0].end, starts[2]);
  EXPECT_TRUE(r.status.ok()) << r.status;
}

TEST_F(LogTest, SkipCorruptionDoesNothingAtACleanEndATornTailOrWithNoRecordStartAfter) {
  const std::vector<uint64_t> starts = Write({"first", std::string(kLogBlockSize * 2, 'm')});
  const std::string original = Contents();
  {
    auto reader = LogReader::Open(&fs_, kPath, kLogNumber);
    ASSERT_TRUE(reader.ok());
    std::string_view record;
    std::string scratch;
    while ((*reader)->ReadRecord(&record, &scratch)) {
    }
    EXPECT_FALSE((*reader)->SkipCorruption().has_value());  // Clean end.
  }
  SetContents(original.substr(0, original.size() - 3));
  std::vector<LogReader::SkippedRange> skipped;
  ReadResult r = ReadSkipping(&skipped);  // Torn tail: status OK, nothing to skip.
  EXPECT_TRUE(skipped.empty());
  EXPECT_TRUE(r.torn);
  // The last record's first fragment damaged: only fragments that cannot
  // begin a record follow, so the status stays DataLoss.
  std::string bytes = original;
  bytes[starts[1] + kLogFragmentHeaderSize + 1] ^= 0x01;
  SetContents(bytes);
  r = ReadSkipping(&skipped);
  EXPECT_TRUE(skipped.empty());
  EXPECT_EQ(Records{r.records}, (Records{{"first"}}));
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(r.valid_end, starts[1]);
}

// Flip each byte of a small log and read it as a salvage does: every record
// but the one hit comes back, exact and in order, and never a wrong one.
TEST_F(LogTest, SkippingCorruptionLosesOnlyTheRecordAFlippedByteHits) {
  const std::vector<std::string> records = {"alpha", "", "gamma-gamma", "delta"};
  const std::vector<uint64_t> starts = Write(records);
  const std::string original = Contents();
  for (size_t i = kLogFileHeaderSize; i < original.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("byte ", i));
    std::string bytes = original;
    bytes[i] ^= 0x20;
    SetContents(bytes);
    std::vector<LogReader::SkippedRange> skipped;
    ReadResult r = ReadSkipping(&skipped);
    ASSERT_TRUE(r.open_status.ok()) << r.open_status;
    size_t hit = 0;
    while (hit + 1 < starts.size() && starts[hit + 1] <= i) ++hit;
    std::vector<std::string> want = records;
    want.erase(want.begin() + static_cast<ptrdiff_t>(hit));
    EXPECT_EQ(Records{r.records}, Records{want});
    EXPECT_TRUE(r.status.ok()) << r.status;
    if (hit + 1 < records.size()) {
      ASSERT_EQ(skipped.size(), 1u);
      EXPECT_EQ(skipped[0].begin, starts[hit]);
      EXPECT_EQ(skipped[0].end, starts[hit + 1]);
    } else {
      EXPECT_TRUE(skipped.empty());  // The last record: a torn tail.
      EXPECT_TRUE(r.torn);
    }
  }
}

std::string Header(uint64_t magic, uint32_t version, uint64_t number) {
  std::string h;
  io::PutFixed64(&h, magic);
  io::PutFixed32(&h, version);
  io::PutFixed64(&h, number);
  io::PutFixed32(&h, io::Checksum32(h));
  return h;
}

TEST_F(LogTest, UnknownVersionIsRefusedWithFailedPrecondition) {
  Write({"record"});
  SetContents(Header(kLogMagic, kLogFormatVersion + 1, kLogNumber) +
              Contents().substr(kLogFileHeaderSize));
  ReadResult r = Read();
  EXPECT_EQ(r.open_status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.open_status.message(), HasSubstr(absl::StrCat("version ", kLogFormatVersion + 1)));
  EXPECT_THAT(r.open_status.message(), HasSubstr(kPath));
  // Even with no record after it, an unknown version is never read as empty.
  SetContents(Header(kLogMagic, 9, kLogNumber));
  EXPECT_EQ(Read().open_status.code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(LogTest, VersionOneStillReadsAndSaysWhichVersionItIs) {
  Write({"record", "another"});
  auto reader = LogReader::Open(&fs_, kPath, kLogNumber);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->format_version(), kLogFormatVersion);
  // A version 1 log (written before end records) reads the same records.
  SetContents(Header(kLogMagic, 1, kLogNumber) + Contents().substr(kLogFileHeaderSize));
  reader = LogReader::Open(&fs_, kPath, kLogNumber);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->format_version(), 1u);
  ReadResult r = Read();
  ASSERT_TRUE(r.open_status.ok()) << r.open_status;
  EXPECT_EQ(r.records, (std::vector<std::string>{"record", "another"}));
  EXPECT_FALSE(r.torn);
}

TEST_F(LogTest, WrongMagicIsDataLoss) {
  Write({"record"});
  SetContents(Header(0x1234, kLogFormatVersion, kLogNumber) +
              Contents().substr(kLogFileHeaderSize));
  ReadResult r = Read();
  EXPECT_EQ(r.open_status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.open_status.message(), HasSubstr("magic"));
}

TEST_F(LogTest, DamagedHeaderWithNothingValidAfterItIsATornEmptyLog) {
  Write({});
  SetContents(std::string(kLogFileHeaderSize, '\0') + std::string(100, '\0'));
  ReadResult r = Read();
  ASSERT_TRUE(r.open_status.ok()) << r.open_status;
  EXPECT_TRUE(r.records.empty());
  EXPECT_TRUE(r.torn);
  EXPECT_EQ(r.valid_end, 0u);
}

TEST_F(LogTest, FileOfAnotherLogNumberIsDataLoss) {
  Write({"record"}, /*log_number=*/6);
  ReadResult r = Read(/*log_number=*/7);
  EXPECT_EQ(r.open_status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.open_status.message(), HasSubstr("log 6"));
}

// A recycled file: the new log's records, then leftovers of an older log. The
// leftovers' checksums include the old log number, so they never verify here
// and the reader stops at a torn tail instead of replaying them.
TEST_F(LogTest, RecordsLeftOverFromAnotherLogAreNotReplayed) {
  Write({"old-1", "old-2", "old-3"}, /*log_number=*/3, "/old.log");
  const std::string old_bytes = Contents("/old.log");
  Write({"new"}, kLogNumber);
  const std::string new_bytes = Contents();
  SetContents(new_bytes + old_bytes.substr(new_bytes.size()));
  ReadResult r = Read();
  ASSERT_TRUE(r.open_status.ok());
  EXPECT_EQ(Records{r.records}, (Records{{"new"}}));
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.torn);
  EXPECT_EQ(r.valid_end, new_bytes.size());
}

TEST_F(LogTest, ReadsAreChargedToTheCategoryGiven) {
  Write({"edit"});
  const uint64_t wal_before = fs_.stats().Get(io::IoCategory::kWal).bytes_read;
  auto reader = LogReader::Open(&fs_, kPath, kLogNumber, io::IoCategory::kManifest);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(fs_.stats().Get(io::IoCategory::kManifest).bytes_read, Contents().size());
  EXPECT_EQ(fs_.stats().Get(io::IoCategory::kWal).bytes_read, wal_before);
}

TEST_F(LogTest, MissingFileIsNotFound) {
  EXPECT_EQ(Read(kLogNumber, "/missing.log").open_status.code(), absl::StatusCode::kNotFound);
}

TEST_F(LogTest, CreateRefusesANonEmptyFile) {
  Write({"x"});
  auto file = fs_.ReopenWritableFile(kPath, {.category = io::IoCategory::kWal});
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(LogWriter::Create(std::move(*file), kLogNumber).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(LogTest, WriterRefusesRecordsAfterClose) {
  auto file = fs_.NewWritableFile(kPath, {});
  ASSERT_TRUE(file.ok());
  auto writer = LogWriter::Create(std::move(*file), kLogNumber);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->AddRecord("a").ok());
  ASSERT_TRUE((*writer)->Sync().ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ((*writer)->AddRecord("b").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Records{Read().records}, Records{{"a"}});
}

// A WritableFile whose appends start failing after a budget of bytes.
class FailingFile : public io::WritableFile {
 public:
  explicit FailingFile(size_t budget) : budget_(budget) {}
  absl::Status Append(std::string_view data) override {
    if (data.size() > budget_) return absl::ResourceExhaustedError("disk full");
    budget_ -= data.size();
    contents_.append(data);
    return absl::OkStatus();
  }
  absl::Status Flush() override { return absl::OkStatus(); }
  absl::Status Sync() override { return absl::OkStatus(); }
  absl::Status Close() override { return absl::OkStatus(); }
  uint64_t Size() const override { return contents_.size(); }
  const std::string& path() const override { return path_; }

 private:
  size_t budget_;
  std::string contents_;
  const std::string path_ = "/failing.log";
};

TEST_F(LogTest, WriteErrorIsStickySoAPartialRecordStaysTheTail) {
  auto writer = LogWriter::Create(std::make_unique<FailingFile>(100), kLogNumber);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->AddRecord("fits").ok());
  EXPECT_EQ((*writer)->AddRecord(std::string(200, 'x')).code(),
            absl::StatusCode::kResourceExhausted);
  // A small record would fit, but the writer is broken now.
  EXPECT_EQ((*writer)->AddRecord("y").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((*writer)->Sync().code(), absl::StatusCode::kResourceExhausted);
}

// The worked example of docs/wal_format.md is this test's expected output, so
// the page and the code cannot drift apart.
TEST_F(LogTest, GoldenBytesMatchTheFormatDoc) {
  std::ifstream doc(std::string(CAIRN_SOURCE_DIR) + "/docs/wal_format.md");
  ASSERT_TRUE(doc.good()) << "cannot read docs/wal_format.md";
  std::string line, expected;
  bool inside = false;
  int lines = 0;
  while (std::getline(doc, line)) {
    if (line.find("<!-- golden:wal-example:begin -->") != std::string::npos) {
      inside = true;
      continue;
    }
    if (line.find("<!-- golden:wal-example:end -->") != std::string::npos) break;
    if (!inside || line.rfind("```", 0) == 0) continue;
    std::istringstream tokens(line.substr(0, line.find('#')));
    std::string token;
    while (tokens >> token) {
      ASSERT_EQ(token.size(), 2u) << "not a hex byte: " << token << " in: " << line;
      expected.push_back(static_cast<char>(std::stoi(token, nullptr, 16)));
    }
    ++lines;
  }
  ASSERT_GT(lines, 5) << "golden block not found";
  Write({"hello", "cairn!"}, /*log_number=*/7);
  const std::string actual = Contents();
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(static_cast<unsigned char>(actual[i]), static_cast<unsigned char>(expected[i]))
        << "byte " << i;
  }
  ReadResult r = Read();
  EXPECT_EQ(Records{r.records}, (Records{{"hello", "cairn!"}}));
}

}  // namespace
}  // namespace cairn::lsm
