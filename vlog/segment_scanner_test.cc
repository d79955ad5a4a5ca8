#include "vlog/segment_scanner.h"

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/coding.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "io/uring_file_system.h"
#include "vlog/segment_writer.h"
#include "vlog/vlog_test_util.h"

namespace cairn::vlog {
namespace {

using ::testing::HasSubstr;
using testing::CompressibleBytes;
using testing::RandomBytes;

struct Written {
  std::string key;
  std::string value;
  ValuePointer pointer;
};

class SegmentScannerTest : public ::testing::Test {
 protected:
  // Writes entries to kPath as segment kId and returns the file's bytes.
  std::string Write(std::vector<Written>* entries, bool compress = false) {
    SegmentWriterOptions options;
    options.compress = compress;
    auto writer = SegmentWriter::Create(&fs_, kPath, kId, options);
    EXPECT_TRUE(writer.ok()) << writer.status();
    for (Written& e : *entries) {
      absl::StatusOr<ValuePointer> p = (*writer)->Append(e.key, e.value);
      EXPECT_TRUE(p.ok()) << p.status();
      e.pointer = *p;
    }
    EXPECT_TRUE((*writer)->Close().ok());
    return fs_.ReadFileToString(kPath).value();
  }

  std::vector<Written> SmallEntries() {
    return {{"a", "1", {}}, {"bb", "", {}}, {"ccc", "three", {}}, {"", "empty key", {}},
            {"eeeee", std::string(40, 'e'), {}}};
  }

  struct ScanResult {
    absl::Status status;
    std::vector<ScannedRecord> records;  // views are dead; offsets and sizes are not
    std::vector<std::pair<std::string, std::string>> kvs;
    bool torn = false;
    uint64_t valid_end = 0;
  };

  ScanResult Scan(SegmentScannerOptions options = {}) {
    ScanResult r;
    auto scanner = SegmentScanner::Open(&fs_, kPath, kId, options);
    if (!scanner.ok()) {
      r.status = scanner.status();
      return r;
    }
    ScannedRecord rec;
    while ((*scanner)->Next(&rec)) {
      r.kvs.emplace_back(std::string(rec.key), std::string(rec.value));
      r.records.push_back(rec);
    }
    EXPECT_FALSE((*scanner)->Next(&rec)) << "stays at the end";
    r.status = (*scanner)->status();
    r.torn = (*scanner)->torn_tail();
    r.valid_end = (*scanner)->valid_end_offset();
    EXPECT_EQ((*scanner)->records_read(), r.records.size());
    return r;
  }

  static constexpr char kPath[] = "/000012.vlog";
  static constexpr uint64_t kId = 12;
  io::MemoryFileSystem fs_;
};

TEST_F(SegmentScannerTest, YieldsEveryRecordInOrder) {
  std::mt19937_64 rng(5);
  std::vector<Written> entries = SmallEntries();
  entries.push_back({"big", RandomBytes(rng, 3 << 20), {}});  // larger than a read
  entries.push_back({"runs", CompressibleBytes(rng, 100000), {}});  // chunked, compressed
  entries.push_back({"small-runs", CompressibleBytes(rng, 10000), {}});  // one zstd frame
  const std::string bytes = Write(&entries, /*compress=*/true);
  SegmentScannerOptions options;
  options.read_size = 4096;  // many windows, records straddling them
  ScanResult r = Scan(options);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_FALSE(r.torn);
  EXPECT_EQ(r.valid_end, bytes.size());
  ASSERT_EQ(r.records.size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(r.kvs[i].first, entries[i].key);
    EXPECT_EQ(r.kvs[i].second, entries[i].value) << i;
    EXPECT_EQ(r.records[i].pointer(kId), entries[i].pointer);
  }
  EXPECT_NE(r.records.back().flags & kRecordFlagZstd, 0);
  EXPECT_NE(r.records[r.records.size() - 2].flags & kRecordFlagChunked, 0);
  EXPECT_NE(r.records[r.records.size() - 3].flags & kRecordFlagChunked, 0);
}

// Punched runs (SegmentScannerOptions::skip_runs): the scan steps over
// them, whatever their blocks now hold, and yields every other record; a
// run that does not start at a record, or ends past the file, is DataLoss.
TEST_F(SegmentScannerTest, StepsOverPunchedRunsAndOnlyThose) {
  std::mt19937_64 rng(9);
  std::vector<Written> entries;
  for (int i = 0; i < 8; ++i) entries.push_back({absl::StrCat("k", i), RandomBytes(rng, 4096), {}});
  Write(&entries);
  // Records 2-4 are dead and punched: their whole blocks read as zeros.
  const PunchRun run{entries[2].pointer.offset, entries[5].pointer.offset};
  ASSERT_TRUE(fs_.PunchHoles(kPath, {{run.begin, run.end - run.begin}}).ok());
  for (const bool read_ahead : {false, true}) {
    SegmentScannerOptions options;
    options.allow_torn_tail = false;
    options.read_size = 4096;
    options.read_ahead = read_ahead;
    options.skip_runs = {run};
    ScanResult r = Scan(options);
    ASSERT_TRUE(r.status.ok()) << r.status;
    ASSERT_EQ(r.kvs.size(), 5u);
    const std::vector<int> kept = {0, 1, 5, 6, 7};
    for (size_t i = 0; i < kept.size(); ++i) {
      EXPECT_EQ(r.kvs[i].first, entries[kept[i]].key);
      EXPECT_EQ(r.kvs[i].second, entries[kept[i]].value);
    }
  }
  // Without the run the zeros are damage.
  SegmentScannerOptions blind;
  blind.allow_torn_tail = false;
  EXPECT_TRUE(absl::IsDataLoss(Scan(blind).status));
  // A run that starts inside a record, or ends past the file.
  const uint64_t past = entries[7].pointer.offset + (uint64_t{1} << 20);
  for (const std::vector<PunchRun>& bad :
       {std::vector<PunchRun>{{entries[1].pointer.offset + 1, run.end}},
        std::vector<PunchRun>{run, {entries[7].pointer.offset, past}}}) {
    SegmentScannerOptions options;
    options.allow_torn_tail = false;
    options.skip_runs = bad;
    ScanResult r = Scan(options);
    EXPECT_TRUE(absl::IsDataLoss(r.status)) << r.status;
    EXPECT_THAT(r.status.message(), HasSubstr("punched run"));
  }
}

// Read-ahead changes when bytes are read, never which records come out:
// the same records, torn tail and valid end with and without it, at every
// cut of a segment whose records straddle many windows.
TEST_F(SegmentScannerTest, ReadAheadYieldsTheSameScanAtEveryCut) {
  std::mt19937_64 rng(11);
  std::vector<Written> entries = SmallEntries();
  for (int i = 0; i < 12; ++i) entries.push_back({"v" + std::to_string(i), RandomBytes(rng, 1500), {}});
  entries.push_back({"big", RandomBytes(rng, 9000), {}});  // larger than a read
  const std::string bytes = Write(&entries);
  for (size_t cut = 0; cut <= bytes.size(); cut += 97) {
    ASSERT_TRUE(fs_.WriteFileFromString(kPath, bytes.substr(0, cut)).ok());
    SegmentScannerOptions plain;
    plain.read_size = 4096;
    SegmentScannerOptions ahead = plain;
    ahead.read_ahead = true;
    const ScanResult a = Scan(plain);
    const ScanResult b = Scan(ahead);
    ASSERT_EQ(a.status, b.status) << "cut " << cut;
    ASSERT_EQ(a.kvs, b.kvs) << "cut " << cut;
    EXPECT_EQ(a.torn, b.torn) << "cut " << cut;
    EXPECT_EQ(a.valid_end, b.valid_end) << "cut " << cut;
  }
}

// A read-ahead becomes the next window by a swap of buffers, with the start
// of the record the window ends in copied into its headroom (64 KiB). Records
// from a few bytes to past the headroom and past a read, straddling windows
// at every size: the same scan as without read-ahead.
TEST_F(SegmentScannerTest, ReadAheadSwapsInWindowsWhateverTheRecordsStraddle) {
  std::mt19937_64 rng(13);
  std::vector<Written> entries;
  for (int i = 0; i < 60; ++i) {
    const size_t size = i % 5 == 0 ? 40000 + rng() % 160000 : rng() % 9000;
    entries.push_back({"k" + std::to_string(i), RandomBytes(rng, size), {}});
  }
  const std::string bytes = Write(&entries);
  for (const size_t read_size : {size_t{4096}, size_t{96} << 10, size_t{1} << 20}) {
    SegmentScannerOptions plain;
    plain.read_size = read_size;
    SegmentScannerOptions ahead = plain;
    ahead.read_ahead = true;
    const ScanResult a = Scan(plain);
    const ScanResult b = Scan(ahead);
    ASSERT_TRUE(b.status.ok()) << b.status;
    ASSERT_EQ(a.kvs, b.kvs) << "read_size " << read_size;
    ASSERT_EQ(b.kvs.size(), entries.size());
    for (size_t i = 0; i < entries.size(); ++i) EXPECT_EQ(b.kvs[i].second, entries[i].value);
    EXPECT_EQ(b.valid_end, bytes.size());
  }
}

// Records known dead (SegmentScannerOptions::known_dead) are stepped over by
// the sizes their pointers give, unverified: here their bodies are zeroed,
// which would be DataLoss if they were parsed. Runs of them carry the scan
// past the window's end into the read-ahead. An entry whose size is not
// the one its header gives, or that starts inside a record, steps over
// nothing: that record is parsed and returned as any other.
TEST_F(SegmentScannerTest, StepsOverRecordsKnownDeadWithoutVerifyingThem) {
  std::mt19937_64 rng(17);
  std::vector<Written> entries;
  for (int i = 0; i < 200; ++i) {
    entries.push_back({"k" + std::to_string(i), RandomBytes(rng, 100 + rng() % 3000), {}});
  }
  std::string bytes = Write(&entries);
  std::vector<PunchRun> dead;
  std::vector<size_t> expected;  // indices of the records the scan returns
  for (size_t i = 0; i < entries.size(); ++i) {
    const ValuePointer& p = entries[i].pointer;
    const bool is_dead = (i / 7) % 2 == 0 || i % 5 == 0;  // runs past a 4 KiB window
    if (i % 31 == 0) {
      dead.push_back({p.offset, p.offset + p.size - 1});  // the wrong size
      expected.push_back(i);
    } else if (i % 37 == 0) {
      dead.push_back({p.offset + 3, p.offset + p.size});  // not a record's start
      expected.push_back(i);
    } else if (is_dead) {
      dead.push_back({p.offset, p.offset + p.size});
      std::fill(bytes.begin() + p.offset + kRecordHeaderSize, bytes.begin() + p.offset + p.size,
                '\0');
    } else {
      expected.push_back(i);
    }
  }
  ASSERT_TRUE(fs_.WriteFileFromString(kPath, bytes).ok());
  for (const bool read_ahead : {false, true}) {
    SegmentScannerOptions options;
    options.allow_torn_tail = false;
    options.read_size = 4096;
    options.read_ahead = read_ahead;
    options.known_dead = dead;
    auto scanner = SegmentScanner::Open(&fs_, kPath, kId, options);
    ASSERT_TRUE(scanner.ok()) << scanner.status();
    std::vector<std::string> keys;
    ScannedRecord rec;
    while ((*scanner)->Next(&rec)) keys.emplace_back(rec.key);
    ASSERT_TRUE((*scanner)->status().ok()) << (*scanner)->status();
    ASSERT_EQ(keys.size(), expected.size()) << "read_ahead " << read_ahead;
    for (size_t j = 0; j < expected.size(); ++j) EXPECT_EQ(keys[j], entries[expected[j]].key);
    EXPECT_EQ((*scanner)->known_dead_skipped(), entries.size() - expected.size());
    EXPECT_EQ((*scanner)->valid_end_offset(), bytes.size());
  }
  // Without the list the zeroed records are damage.
  SegmentScannerOptions blind;
  blind.allow_torn_tail = false;
  EXPECT_TRUE(absl::IsDataLoss(Scan(blind).status));
}

// The same on io_uring with O_DIRECT, where the read-ahead really is in
// flight on the ring while records are parsed.
TEST(SegmentScannerUringTest, ReadAheadOnTheRingWithDirectReads) {
  char tmpl[] = "/tmp/cairn_scanner_test_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  io::UringFileSystem fs;
  const std::string path = dir + "/000012.vlog";
  std::mt19937_64 rng(12);
  std::vector<Written> entries;
  {
    auto writer = SegmentWriter::Create(&fs, path, 12, {});
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int i = 0; i < 400; ++i) {
      Written e{"key" + std::to_string(i), RandomBytes(rng, 1000 + (i * 37) % 5000), {}};
      absl::StatusOr<ValuePointer> p = (*writer)->Append(e.key, e.value);
      ASSERT_TRUE(p.ok()) << p.status();
      e.pointer = *p;
      entries.push_back(std::move(e));
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  SegmentScannerOptions options;
  options.read_size = 64 << 10;
  options.direct_reads = true;
  options.read_ahead = true;
  options.allow_torn_tail = false;
  auto scanner = SegmentScanner::Open(&fs, path, 12, options);
  ASSERT_TRUE(scanner.ok()) << scanner.status();
  ScannedRecord rec;
  size_t i = 0;
  while ((*scanner)->Next(&rec)) {
    ASSERT_LT(i, entries.size());
    EXPECT_EQ(rec.key, entries[i].key);
    EXPECT_EQ(rec.value, entries[i].value) << i;
    EXPECT_EQ(rec.pointer(12), entries[i].pointer);
    ++i;
  }
  EXPECT_TRUE((*scanner)->status().ok()) << (*scanner)->status();
  EXPECT_EQ(i, entries.size());
  scanner->reset();
  std::filesystem::remove_all(dir);
}

TEST_F(SegmentScannerTest, StoredBytesWithoutUncompressing) {
  std::vector<Written> entries = {{"k", std::string(5000, 'q'), {}}};
  Write(&entries, /*compress=*/true);
  SegmentScannerOptions options;
  options.uncompress_values = false;
  auto scanner = SegmentScanner::Open(&fs_, kPath, kId, options);
  ASSERT_TRUE(scanner.ok());
  ScannedRecord rec;
  ASSERT_TRUE((*scanner)->Next(&rec));
  EXPECT_TRUE(rec.value.empty());
  EXPECT_LT(rec.stored_value.size(), 5000u);
  EXPECT_EQ(rec.flags, kRecordFlagZstd);
}

TEST_F(SegmentScannerTest, EmptySegmentEndsCleanly) {
  std::vector<Written> none;
  Write(&none);
  ScanResult r = Scan();
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.records.empty());
  EXPECT_FALSE(r.torn);
  EXPECT_EQ(r.valid_end, kSegmentHeaderSize);
}

TEST_F(SegmentScannerTest, TruncationAtEveryOffsetStopsAtTheTornTail) {
  std::vector<Written> entries = SmallEntries();
  const std::string bytes = Write(&entries);
  for (size_t cut = 0; cut <= bytes.size(); ++cut) {
    ASSERT_TRUE(fs_.WriteFileFromString(kPath, bytes.substr(0, cut)).ok());
    // Every record that ends at or before the cut, and nothing else.
    size_t complete = 0;
    uint64_t end = cut < kSegmentHeaderSize ? 0 : kSegmentHeaderSize;
    for (const Written& e : entries) {
      if (e.pointer.offset + e.pointer.size > cut) break;
      ++complete;
      end = e.pointer.offset + e.pointer.size;
    }
    ScanResult r = Scan();
    ASSERT_TRUE(r.status.ok()) << "cut " << cut << ": " << r.status;
    ASSERT_EQ(r.records.size(), complete) << "cut " << cut;
    for (size_t i = 0; i < complete; ++i) EXPECT_EQ(r.kvs[i].second, entries[i].value);
    EXPECT_EQ(r.valid_end, end) << "cut " << cut;
    EXPECT_EQ(r.torn, cut < kSegmentHeaderSize || end != cut) << "cut " << cut;

    // A sealed segment has no tail to forgive.
    SegmentScannerOptions sealed;
    sealed.allow_torn_tail = false;
    ScanResult s = Scan(sealed);
    if (end == cut && cut >= kSegmentHeaderSize) {
      EXPECT_TRUE(s.status.ok()) << s.status;
    } else {
      EXPECT_EQ(s.status.code(), absl::StatusCode::kDataLoss) << "cut " << cut;
    }
  }
}

TEST_F(SegmentScannerTest, FlippingAnyByteIsDataLossOrACleanStopNeverAWrongValue) {
  std::vector<Written> entries = SmallEntries();
  const std::string bytes = Write(&entries);
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit : {0, 7}) {
      std::string damaged = bytes;
      damaged[i] ^= static_cast<char>(1 << bit);
      ASSERT_TRUE(fs_.WriteFileFromString(kPath, damaged).ok());
      ScanResult r = Scan();
      // Whatever comes back before the stop is exactly what was written.
      ASSERT_LE(r.kvs.size(), entries.size());
      for (size_t j = 0; j < r.kvs.size(); ++j) {
        EXPECT_EQ(r.kvs[j].first, entries[j].key) << "flip " << i;
        EXPECT_EQ(r.kvs[j].second, entries[j].value) << "flip " << i;
      }
      if (r.status.ok()) {
        // Only damage in the last record may pass as a torn tail.
        EXPECT_TRUE(r.torn) << "flip " << i;
        EXPECT_GE(i, entries.back().pointer.offset) << "flip " << i;
        EXPECT_EQ(r.valid_end, entries.back().pointer.offset);
      } else if (i >= kSegmentHeaderSize) {
        EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss) << r.status;
        EXPECT_THAT(r.status.message(), HasSubstr(kPath));
      } else {
        EXPECT_TRUE(r.status.code() == absl::StatusCode::kDataLoss ||
                    r.status.code() == absl::StatusCode::kFailedPrecondition)
            << r.status;
      }
    }
  }
}

TEST_F(SegmentScannerTest, BadRecordFollowedByAGoodOneIsDataLoss) {
  std::vector<Written> entries = SmallEntries();
  std::string bytes = Write(&entries);
  const ValuePointer bad = entries[2].pointer;
  bytes[bad.offset + bad.size - 1] ^= 0x20;  // last value byte of "ccc"
  ASSERT_TRUE(fs_.WriteFileFromString(kPath, bytes).ok());
  ScanResult r = Scan();
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss) << r.status;
  EXPECT_THAT(r.status.message(), HasSubstr(kPath));
  EXPECT_THAT(r.status.message(), HasSubstr(absl::StrCat("offset ", bad.offset)));
  EXPECT_THAT(r.status.message(),
              HasSubstr(absl::StrCat("valid record at offset ", entries[3].pointer.offset)));
  EXPECT_EQ(r.records.size(), 2u);
}

TEST_F(SegmentScannerTest, CorruptLengthInTheMiddleIsDataLoss) {
  std::vector<Written> entries = SmallEntries();
  std::string bytes = Write(&entries);
  // A length pointing past the end of the file looks like a torn record
  // until the scanner finds the good records behind it.
  io::EncodeFixed32(bytes.data() + entries[1].pointer.offset + 8, 1 << 20);
  ASSERT_TRUE(fs_.WriteFileFromString(kPath, bytes).ok());
  EXPECT_EQ(Scan().status.code(), absl::StatusCode::kDataLoss);
}

TEST_F(SegmentScannerTest, ZeroedOrGarbageTailIsTorn) {
  std::mt19937_64 rng(11);
  std::vector<Written> entries = SmallEntries();
  const std::string bytes = Write(&entries);
  for (const std::string& tail : {std::string(5000, '\0'), RandomBytes(rng, 5000)}) {
    ASSERT_TRUE(fs_.WriteFileFromString(kPath, bytes + tail).ok());
    ScanResult r = Scan();
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_TRUE(r.torn);
    EXPECT_EQ(r.valid_end, bytes.size());
    EXPECT_EQ(r.records.size(), entries.size());
  }
}

TEST_F(SegmentScannerTest, ShortHeaderIsATornTailOnlyWhenTailsMayBeTorn) {
  ASSERT_TRUE(fs_.WriteFileFromString(kPath, "cairn").ok());
  ScanResult r = Scan();
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_TRUE(r.torn);
  EXPECT_EQ(r.valid_end, 0u);
  SegmentScannerOptions sealed;
  sealed.allow_torn_tail = false;
  EXPECT_EQ(Scan(sealed).status.code(), absl::StatusCode::kDataLoss);
}

TEST_F(SegmentScannerTest, WrongSegmentAndUnknownVersionAreRefused) {
  std::vector<Written> entries = SmallEntries();
  std::string bytes = Write(&entries);
  EXPECT_EQ(SegmentScanner::Open(&fs_, kPath, kId + 1, {}).status().code(),
            absl::StatusCode::kDataLoss);
  io::EncodeFixed32(bytes.data() + 8, 7);
  ASSERT_TRUE(fs_.WriteFileFromString(kPath, bytes).ok());
  absl::Status s = Scan().status;
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

TEST_F(SegmentScannerTest, ChargesReadsToTheConfiguredCategory) {
  std::vector<Written> entries = SmallEntries();
  const std::string bytes = Write(&entries);
  SegmentScannerOptions options;
  options.category = io::IoCategory::kValueLog;
  const uint64_t before = fs_.stats().Get(io::IoCategory::kValueLog).bytes_read;
  ASSERT_TRUE(Scan(options).status.ok());
  EXPECT_EQ(fs_.stats().Get(io::IoCategory::kValueLog).bytes_read - before, bytes.size());
}

// Crash images from the fault file system: every synced record survives, the
// scan ends cleanly, and what it returns is a prefix of what was written.
TEST(SegmentScannerCrashTest, CrashImagesScanToAPrefixWithEverySyncedRecord) {
  for (io::CrashMode mode : {io::CrashMode::kDropUnsynced, io::CrashMode::kKeepRandomPrefix,
                             io::CrashMode::kTearLastWrite}) {
    for (uint64_t seed = 0; seed < 40; ++seed) {
      auto base = std::make_shared<io::MemoryFileSystem>();
      io::FaultFileSystem fs(base);
      std::mt19937_64 rng(seed);
      auto writer = SegmentWriter::Create(&fs, "/000003.vlog", 3, {});
      ASSERT_TRUE(writer.ok());
      std::vector<std::pair<std::string, std::string>> written;
      size_t synced = 0;
      for (int i = 0; i < 30; ++i) {
        written.emplace_back(absl::StrCat("key", i), RandomBytes(rng, rng() % 300));
        ASSERT_TRUE((*writer)->Append(written.back().first, written.back().second).ok());
        if (rng() % 4 == 0) {
          ASSERT_TRUE((*writer)->Flush().ok());  // a separate write to tear
        }
        if (rng() % 8 == 0) {
          ASSERT_TRUE((*writer)->Sync().ok());
          synced = written.size();
        }
      }
      ASSERT_TRUE((*writer)->Flush().ok());
      fs.SetFilesystemActive(false);
      writer->reset();
      ASSERT_TRUE(fs.SimulateCrash(mode, seed).ok());

      auto scanner = SegmentScanner::Open(base.get(), "/000003.vlog", 3, {});
      ASSERT_TRUE(scanner.ok()) << scanner.status();
      ScannedRecord rec;
      size_t n = 0;
      while ((*scanner)->Next(&rec)) {
        ASSERT_LT(n, written.size());
        EXPECT_EQ(rec.key, written[n].first);
        EXPECT_EQ(rec.value, written[n].second);
        ++n;
      }
      ASSERT_TRUE((*scanner)->status().ok())
          << "mode " << static_cast<int>(mode) << " seed " << seed << ": "
          << (*scanner)->status();
      EXPECT_GE(n, synced) << "mode " << static_cast<int>(mode) << " seed " << seed;
      EXPECT_EQ((*scanner)->torn_tail(),
                (*scanner)->valid_end_offset() != (*scanner)->file_size());
    }
  }
}

}  // namespace
}  // namespace cairn::vlog
