// DB::GetRange and Get into a PinnableValue: ranges over uncompressed,
// compressed and inline values match the model at every edge, a ranged read
// with checksums off reads only the bytes it returns, and a cached value is
// shared rather than copied.
#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

// Bytes that zstd shrinks (runs of 64 equal bytes) or cannot (a mixing
// hash of each position).
std::string MakeValue(size_t size, bool compressible, int seed) {
  std::string v(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    uint64_t h = (i / (compressible ? 64 : 1)) * 0x9E3779B97F4A7C15ull + seed;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    v[i] = static_cast<char>(h ^ (h >> 31));
  }
  return v;
}

class BlobReadTest : public ::testing::TestWithParam<bool> {  // value compression
 protected:
  void SetUp() override {
    fs_ = std::make_shared<io::MemoryFileSystem>();
    Open();
  }

  void Open() {
    Options o;
    o.value_separation_threshold = 1024;  // the 1 KiB default these tests were written for
    o.value_compression = GetParam() ? Compression::kZstd : Compression::kNone;
    if (segment_size_ != 0) {
      o.value_log_segment_size = segment_size_;
      o.gc_space_amp_trigger = 0;  // the test runs GC itself
    }
    if (cache_size_ == 0) {
      // Blocks only: every value read goes to the value log.
      o.cache_size = 0;
      o.block_cache_size = 8 << 20;
    } else {
      o.value_cache_size = cache_size_;
    }
    auto db = OpenWithFileSystem(o, "/db", fs_);
    ASSERT_OK(db);
    db_ = std::move(*db);
  }

  void PutValue(const std::string& key, std::string value) {
    ASSERT_OK(db_->Put({}, key, value));
    model_[key] = std::move(value);
  }

  std::shared_ptr<io::MemoryFileSystem> fs_;
  std::unique_ptr<DB> db_;
  std::map<std::string, std::string> model_;
  size_t cache_size_ = 0;
  uint64_t segment_size_ = 0;  // 0: the default
};

TEST_P(BlobReadTest, RangesMatchTheModelAtEveryEdge) {
  PutValue("inline", MakeValue(300, true, 1));
  PutValue("small", MakeValue(5000, false, 2));
  PutValue("squeezy", MakeValue(200 << 10, true, 3));
  PutValue("random", MakeValue(300 << 10, false, 4));
  PutValue("empty-inline", "");
  ASSERT_OK(db_->Flush());
  constexpr uint64_t kAll = std::numeric_limits<uint64_t>::max();
  int checked = 0;
  for (const auto& [key, value] : model_) {
    const uint64_t size = value.size();
    for (uint64_t offset : {uint64_t{0}, uint64_t{1}, size / 3, size == 0 ? 0 : size - 1, size,
                            size + 1, kAll}) {
      for (uint64_t length : {uint64_t{0}, uint64_t{1}, uint64_t{4096}, size, kAll}) {
        for (bool verify : {true, false}) {
          ReadOptions ro;
          ro.verify_checksums = verify;
          std::string out = "stale";
          ASSERT_OK(db_->GetRange(ro, key, offset, length, &out));
          const std::string want = offset >= size ? "" : value.substr(offset, length);
          ASSERT_EQ(out, want) << absl::StrFormat("%s offset %d length %d verify %d", key,
                                                  offset, length, verify);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 5 * 7 * 5 * 2);
  std::string out;
  EXPECT_TRUE(absl::IsNotFound(db_->GetRange({}, "missing", 0, 10, &out)));
  ASSERT_OK(db_->Delete({}, "random"));
  EXPECT_TRUE(absl::IsNotFound(db_->GetRange({}, "random", 0, 10, &out)));
  EXPECT_TRUE(absl::IsInvalidArgument(
      db_->GetRange({}, std::string(kMaxKeySize + 1, 'k'), 0, 10, &out)));
}

TEST_P(BlobReadTest, RangeOfALargeValueReadsOnlyTheChunksItCovers) {
  // Values over 64 KiB are stored in 64 KiB chunks, each with its own
  // checksum (and, with compression, its own zstd frame): a verified range
  // reads the record's header, key and chunk table, then only the chunks it
  // covers, and checks them. Unverified, raw chunks give just the range's
  // bytes; compressed ones are read and checked as when verified.
  PutValue("plain", MakeValue(1 << 20, false, 5));
  PutValue("squeezy", MakeValue(1 << 20, true, 6));
  ASSERT_OK(db_->Flush());
  auto bytes_read = [&](const std::string& key, uint64_t offset, bool verify) {
    ReadOptions ro;
    ro.verify_checksums = verify;
    const uint64_t before = db_->GetStats().vlog_bytes_read;
    std::string out;
    EXPECT_OK(db_->GetRange(ro, key, offset, 64 << 10, &out));
    EXPECT_EQ(out, model_[key].substr(offset, 64 << 10));
    return db_->GetStats().vlog_bytes_read - before;
  };
  bytes_read("plain", 0, true);  // opens the segment (its header read)
  // Header (13), key (5 or 7) and the first read's share of the table: 16
  // bytes and 9 per chunk, 16 chunks, one more guessed.
  constexpr uint64_t kHead = 13 + 7 + 16 + 17 * 9;
  constexpr uint64_t k64 = uint64_t{64} << 10;
  for (bool verify : {true, false}) {
    // On a chunk boundary: one chunk, or the range alone.
    const uint64_t aligned = bytes_read("plain", 320 << 10, verify);
    EXPECT_GE(aligned, k64);
    EXPECT_LE(aligned, k64 + kHead);
    // Across a boundary: two chunks, or the range alone.
    const uint64_t across = bytes_read("plain", 300 << 10, verify);
    EXPECT_GE(across, verify ? 2 * k64 : k64);
    EXPECT_LE(across, (verify ? 2 * k64 : k64) + kHead);
    const uint64_t squeezed = bytes_read("squeezy", 300 << 10, verify);
    if (GetParam()) {
      // Two compressed chunks: a fraction of the 128 KiB they hold.
      EXPECT_LT(squeezed, uint64_t{32} << 10);
    } else {
      EXPECT_LE(squeezed, (verify ? 2 * k64 : k64) + kHead);
    }
  }
}

TEST_P(BlobReadTest, ChunkedValuesKeepTheirChunksThroughGcAndReopen) {
  // GC copies a chunked record as it is stored; ranges and whole reads of
  // the copy match, after a reopen too.
  segment_size_ = 512 << 10;  // a few values per segment, so some are sealed
  db_.reset();
  Open();
  for (int i = 0; i < 6; ++i) {
    PutValue(absl::StrCat("big", i), MakeValue((200 << 10) + i * 1000, i % 2 == 0, 20 + i));
  }
  for (int i = 0; i < 5; ++i) ASSERT_OK(db_->Delete({}, absl::StrCat("big", i)));
  for (int i = 0; i < 5; ++i) model_.erase(absl::StrCat("big", i));
  PutValue("after", MakeValue(100 << 10, true, 40));
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));  // counts the deleted values as garbage
  absl::StatusOr<GcResult> gc = db_->RunGC();
  ASSERT_OK(gc);
  EXPECT_GE(gc->victims, 1u);
  EXPECT_GE(gc->records_relocated, 1u);
  for (int round = 0; round < 2; ++round) {
    for (const auto& [key, value] : model_) {
      std::string whole;
      ASSERT_OK(db_->Get({}, key, &whole));
      EXPECT_EQ(whole, value) << key;
      for (uint64_t offset : {uint64_t{0}, uint64_t{65535}, uint64_t{100000}}) {
        for (bool verify : {true, false}) {
          ReadOptions ro;
          ro.verify_checksums = verify;
          std::string out;
          ASSERT_OK(db_->GetRange(ro, key, offset, 70000, &out));
          EXPECT_EQ(out, value.substr(offset, 70000)) << key << " " << offset;
        }
      }
    }
    db_.reset();
    Open();
  }
}

TEST_P(BlobReadTest, UnverifiedRangeOfAValueUnderAChunkReadsOnlyItsBytes) {
  // A value stored whole (at most 64 KiB) has one checksum over all of it: a
  // verified range reads the record whole, an unverified one only its bytes.
  PutValue("plain", MakeValue(60 << 10, false, 8));
  ASSERT_OK(db_->Flush());
  auto bytes_read = [&](bool verify) {
    ReadOptions ro;
    ro.verify_checksums = verify;
    const uint64_t before = db_->GetStats().vlog_bytes_read;
    std::string out;
    EXPECT_OK(db_->GetRange(ro, "plain", 1000, 4096, &out));
    EXPECT_EQ(out, model_["plain"].substr(1000, 4096));
    return db_->GetStats().vlog_bytes_read - before;
  };
  bytes_read(true);  // opens the segment
  EXPECT_GE(bytes_read(true), uint64_t{60} << 10);
  const uint64_t part = bytes_read(false);
  EXPECT_GE(part, 4096u);
  // The header and key, with the guess at a chunk table, then the range.
  EXPECT_LE(part, 4096u + 13 + 5 + 16 + 9);
}

TEST_P(BlobReadTest, UnverifiedRangeStillChecksTheRecordsKey) {
  PutValue("victim", MakeValue(100 << 10, false, 7));
  ASSERT_OK(db_->Flush());
  // Damage the key inside the record, under the open database (a reopen
  // would refuse: the segment is still being written, and the flush
  // recorded the record as synced): the header's lengths still agree.
  auto names = fs_->ListDir("/db");
  ASSERT_OK(names);
  int damaged = 0;
  for (const std::string& name : *names) {
    if (name.size() < 5 || name.substr(name.size() - 5) != ".vlog") continue;
    auto contents = fs_->ReadFileToString("/db/" + name);
    ASSERT_OK(contents);
    const size_t at = contents->find("victim");
    if (at == std::string::npos) continue;
    (*contents)[at] = 'V';
    ASSERT_OK(fs_->WriteFileFromString("/db/" + name, *contents));
    ++damaged;
  }
  ASSERT_EQ(damaged, 1);
  model_.clear();
  for (bool verify : {true, false}) {
    ReadOptions ro;
    ro.verify_checksums = verify;
    std::string out;
    absl::Status s = db_->GetRange(ro, "victim", 10, 10, &out);
    EXPECT_TRUE(absl::IsDataLoss(s)) << s;
    EXPECT_TRUE(out.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Compression, BlobReadTest, ::testing::Bool());

class PinnedGetTest : public BlobReadTest {
 protected:
  void SetUp() override {
    cache_size_ = 64 << 20;
    BlobReadTest::SetUp();
  }
};

TEST_P(PinnedGetTest, CachedValueIsSharedNotCopied) {
  PutValue("big", MakeValue(1 << 20, false, 8));
  PutValue("inline", "small value");
  ASSERT_OK(db_->Flush());
  PinnableValue first, second;
  ASSERT_OK(db_->Get({}, "big", &first));
  ASSERT_OK(db_->Get({}, "big", &second));
  ASSERT_EQ(first.value(), model_["big"]);
  ASSERT_EQ(second.value(), model_["big"]);
  EXPECT_TRUE(first.pinned());
  EXPECT_TRUE(second.pinned());
  EXPECT_EQ(first.value().data(), second.value().data());  // the same bytes
  EXPECT_EQ(db_->GetStats().value_cache_hits, 1u);
  // An inline value lands in the object's own buffer; NotFound leaves it
  // for the caller to ignore.
  ASSERT_OK(db_->Get({}, "inline", &first));
  EXPECT_FALSE(first.pinned());
  EXPECT_EQ(first.value(), "small value");
  EXPECT_TRUE(absl::IsNotFound(db_->Get({}, "missing", &first)));
  // The shared bytes outlive the cache entry and the DB.
  db_.reset();
  EXPECT_EQ(second.value(), model_["big"]);
}

TEST_P(BlobReadTest, PinnableGetWithoutACacheFillsItsOwnBuffer) {
  PutValue("big", MakeValue(200 << 10, false, 9));
  ASSERT_OK(db_->Flush());
  PinnableValue v;
  ASSERT_OK(db_->Get({}, "big", &v));
  EXPECT_FALSE(v.pinned());
  EXPECT_EQ(v.value(), model_["big"]);
}

INSTANTIATE_TEST_SUITE_P(Compression, PinnedGetTest, ::testing::Bool());

}  // namespace
}  // namespace cairn
