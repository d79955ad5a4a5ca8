// DB::GetRange and Get into a PinnableValue: ranges over uncompressed,
// compressed and inline values match the model at every edge, a ranged read
// with checksums off reads only the bytes it returns, and a cached value is
// shared rather than copied.
#include <cstdint>
#include <limits>
#include <map>
#include <string>

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
    o.value_compression = GetParam() ? Compression::kZstd : Compression::kNone;
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

TEST_P(BlobReadTest, UnverifiedRangeOfAnUncompressedValueReadsOnlyItsBytes) {
  // Random bytes do not compress, so this record is stored plain in both
  // modes; the squeezy one is a zstd frame when compression is on.
  PutValue("plain", MakeValue(1 << 20, false, 5));
  PutValue("squeezy", MakeValue(1 << 20, true, 6));
  ASSERT_OK(db_->Flush());
  auto bytes_read = [&](const std::string& key, bool verify) {
    ReadOptions ro;
    ro.verify_checksums = verify;
    const uint64_t before = db_->GetStats().vlog_bytes_read;
    std::string out;
    EXPECT_OK(db_->GetRange(ro, key, 300 << 10, 64 << 10, &out));
    EXPECT_EQ(out, model_[key].substr(300 << 10, 64 << 10));
    return db_->GetStats().vlog_bytes_read - before;
  };
  bytes_read("plain", true);  // opens the segment (its header read)
  const uint64_t part = bytes_read("plain", false);
  EXPECT_GE(part, uint64_t{64} << 10);
  EXPECT_LE(part, (uint64_t{64} << 10) + 13 + 5);  // + the record header and key
  EXPECT_GE(bytes_read("plain", true), uint64_t{1} << 20);
  // A zstd frame is read whole, as a verified read reads it, after the
  // header and key that showed it to be one (and it is smaller than the
  // value).
  const uint64_t squeezed = bytes_read("squeezy", false);
  if (GetParam()) {
    EXPECT_EQ(squeezed, bytes_read("squeezy", true) + 13 + 7);
    EXPECT_LT(squeezed, uint64_t{1} << 20);
  } else {
    EXPECT_LE(squeezed, (uint64_t{64} << 10) + 13 + 7);
  }
}

TEST_P(BlobReadTest, UnverifiedRangeStillChecksTheRecordsKey) {
  PutValue("victim", MakeValue(100 << 10, false, 7));
  ASSERT_OK(db_->Flush());
  db_.reset();
  // Damage the key inside the record: the header's lengths still agree.
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
  Open();
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
