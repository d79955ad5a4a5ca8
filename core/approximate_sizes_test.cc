// DB::GetApproximateSizes and GetApproximateKeyCount (issue 60, item 3): on
// a uniform key space of 2k, 20k and 200k keys, small inline and separated
// values, in tables and still in the memtables, the key count, the tables'
// bytes, the memtables' bytes and the value-log bytes the range's pointers
// name are each within 10% of the truth; a larger range never gives a
// smaller estimate; a read-only open estimates as the writer did; bad input
// gets InvalidArgument before any work.
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "core/testing/gc_helpers.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"
#include "vlog/vlog_format.h"

namespace cairn {
namespace {

using gc_testing::Value;

std::string Key(int i) { return absl::StrFormat("user%08d", i); }

constexpr size_t kSmall = 100;   // inline
constexpr size_t kLarge = 2000;  // separated (threshold 1024)

struct Case {
  int keys;
  size_t value_size;
  bool flushed;  // else every key is still in the memtables
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.keys << " keys of " << c.value_size << " bytes, "
      << (c.flushed ? "in tables" : "in memtables");
}

class ApproximateSizesTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    fs_ = std::make_shared<io::MemoryFileSystem>();
    Options o;
    o.value_separation_threshold = 1024;
    o.separate_at_flush_below = 0;
    o.memtable_size = 64 << 20;
    o.max_memtable_value_bytes = uint64_t{256} << 20;
    o.target_file_size = 1 << 20;  // several tables per level
    // No GC: the space ledger would flush a memtable whose pointers could
    // hide much of the value log, and the InMemtables cases keep it all.
    o.gc_space_amp_trigger = 0;
    auto db = OpenWithFileSystem(o, "/db", fs_);
    ASSERT_OK(db);
    db_ = std::move(*db);
  }

  void Load(const Case& c) {
    // In a shuffled order: the tables' layout must not follow the writes.
    std::vector<int> order(c.keys);
    for (int i = 0; i < c.keys; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(c.keys));
    for (int i : order) ASSERT_OK(db_->Put({}, Key(i), Value(i, c.value_size)));
    if (c.flushed) {
      ASSERT_OK(db_->Flush());
      ASSERT_OK(db_->CompactRange(nullptr, nullptr));
      ASSERT_OK(db_->WaitForBackgroundWork());
    }
  }

  uint64_t Size(int from, int to, uint32_t flags) {
    const std::string a = Key(from), b = Key(to);
    Range r{a, b};
    uint64_t size = 0;
    EXPECT_OK(db_->GetApproximateSizes(&r, 1, &size, flags));
    return size;
  }
  uint64_t Count(int from, int to, uint32_t flags = kIncludeMemtables | kIncludeFiles) {
    const std::string a = Key(from), b = Key(to);
    absl::StatusOr<uint64_t> n = db_->GetApproximateKeyCount({a, b}, flags);
    EXPECT_OK(n);
    return n.value_or(0);
  }

  std::shared_ptr<io::MemoryFileSystem> fs_;
  std::unique_ptr<DB> db_;
};

void ExpectNear(double got, double truth, const std::string& what) {
  EXPECT_NEAR(got, truth, 0.10 * truth) << what << ": estimate " << got << ", truth " << truth;
}

TEST_P(ApproximateSizesTest, WithinTenPercentOfTheTruth) {
  const Case c = GetParam();
  Load(c);
  const bool separated = c.value_size >= 1024;
  const Stats stats = db_->GetStats();
  const int n = c.keys;
  // Ranges of 10% to 100% of the key space.
  const std::vector<std::pair<int, int>> ranges = {
      {0, n}, {n / 4, 3 * n / 4}, {n / 10, n / 10 + n / 5}, {n / 2, n / 2 + n / 10},
      {0, n / 3}, {2 * n / 3, n}};
  for (const auto& [from, to] : ranges) {
    const std::string what = absl::StrFormat("keys %d value %d flushed %d range [%d, %d)", n,
                                             c.value_size, c.flushed, from, to);
    const int keys = to - from;
    ExpectNear(Count(from, to), keys, what + " key count");
    if (separated) {
      const double record = vlog::kRecordHeaderSize + Key(0).size() + c.value_size;
      ExpectNear(Size(from, to, kIncludeValueLog), keys * record, what + " value log");
    }
    if (c.flushed) {
      // The tables hold the keys evenly: the range's share of their bytes.
      ExpectNear(Size(from, to, kIncludeFiles),
                 static_cast<double>(stats.sst_bytes) * keys / n, what + " tables");
      EXPECT_EQ(Size(from, to, kIncludeMemtables), 0u) << what;
    } else {
      // What the memtables hold: internal key and stored value per entry
      // (a pointer, of a few bytes, for a separated value).
      const double stored = separated ? 8 : c.value_size;
      ExpectNear(Size(from, to, kIncludeMemtables), keys * (Key(0).size() + 8 + stored),
                 what + " memtables");
      EXPECT_EQ(Size(from, to, kIncludeFiles), 0u) << what;
    }
    EXPECT_EQ(Count(from, to, c.flushed ? kIncludeMemtables : kIncludeFiles), 0u) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    UniformKeys, ApproximateSizesTest,
    ::testing::Values(Case{2000, kSmall, true}, Case{2000, kSmall, false},
                      Case{2000, kLarge, true}, Case{2000, kLarge, false},
                      Case{20000, kSmall, true}, Case{20000, kSmall, false},
                      Case{20000, kLarge, true}, Case{20000, kLarge, false},
                      Case{200000, kSmall, true}, Case{200000, kSmall, false}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return absl::StrFormat("Keys%d%s%s", info.param.keys,
                             info.param.value_size == kSmall ? "Small" : "Large",
                             info.param.flushed ? "InTables" : "InMemtables");
    });

TEST_F(ApproximateSizesTest, ALargerRangeNeverGivesASmallerEstimate) {
  // Tables on several levels, overwrites, deletions, and the memtable.
  std::mt19937 rng(60);
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 6000; ++i) {
      const int k = static_cast<int>(rng() % 20000);
      if (rng() % 10 == 0) {
        ASSERT_OK(db_->Delete({}, Key(k)));
      } else {
        ASSERT_OK(db_->Put({}, Key(k), Value(i, rng() % 2 == 0 ? kSmall : kLarge)));
      }
    }
    if (round < 3) {
      ASSERT_OK(db_->Flush());
    }
    if (round == 1) {
      ASSERT_OK(db_->CompactRange(nullptr, nullptr));
    }
  }
  ASSERT_OK(db_->WaitForBackgroundWork());
  for (uint32_t flags : {uint32_t{kIncludeFiles}, uint32_t{kIncludeMemtables},
                         uint32_t{kIncludeValueLog}, uint32_t{kIncludeFiles | kIncludeValueLog},
                         uint32_t{kIncludeMemtables | kIncludeFiles | kIncludeValueLog}}) {
    // The limit swept upward from a fixed start, and the start downward.
    uint64_t last = 0, last_count = 0;
    for (int to = 5000; to <= 21000; to += 37) {
      const uint64_t size = Size(5000, to, flags);
      ASSERT_GE(size, last) << "flags " << flags << " limit " << to;
      last = size;
      if (flags != kIncludeValueLog) {
        const uint64_t count = Count(5000, to, flags);
        ASSERT_GE(count, last_count) << "flags " << flags << " limit " << to;
        last_count = count;
      }
    }
    last = 0;
    for (int from = 15000; from >= 0; from -= 41) {
      const uint64_t size = Size(from, 15000, flags);
      ASSERT_GE(size, last) << "flags " << flags << " start " << from;
      last = size;
    }
    // Random nested pairs.
    for (int i = 0; i < 300; ++i) {
      int p[4];
      for (int& x : p) x = static_cast<int>(rng() % 21000);
      std::sort(p, p + 4);
      ASSERT_LE(Size(p[1], p[2], flags), Size(p[0], p[3], flags))
          << "flags " << flags << " " << p[0] << " " << p[1] << " " << p[2] << " " << p[3];
    }
  }
}

TEST_F(ApproximateSizesTest, BadInputIsInvalidArgumentAndEmptyRangesAreZero) {
  for (int i = 0; i < 100; ++i) ASSERT_OK(db_->Put({}, Key(i), Value(i, kLarge)));
  ASSERT_OK(db_->Flush());
  const std::string a = Key(10), b = Key(20);
  Range ranges[2] = {{a, b}, {b, a}};
  uint64_t sizes[2] = {7, 7};
  EXPECT_TRUE(absl::IsInvalidArgument(db_->GetApproximateSizes(ranges, 2, sizes)));
  EXPECT_EQ(sizes[0], 7u);  // nothing done
  EXPECT_TRUE(absl::IsInvalidArgument(db_->GetApproximateKeyCount({b, a}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(db_->GetApproximateSizes(nullptr, 1, sizes)));
  EXPECT_TRUE(absl::IsInvalidArgument(db_->GetApproximateSizes(ranges, 1, nullptr)));
  EXPECT_TRUE(absl::IsInvalidArgument(db_->GetApproximateSizes(ranges, -1, sizes)));
  EXPECT_TRUE(absl::IsInvalidArgument(db_->GetApproximateSizes(ranges, 1, sizes, 0)));
  EXPECT_TRUE(absl::IsInvalidArgument(db_->GetApproximateSizes(ranges, 1, sizes, 8)));
  EXPECT_TRUE(absl::IsInvalidArgument(db_->GetApproximateKeyCount({a, b}, kIncludeValueLog).status()));
  EXPECT_OK(db_->GetApproximateSizes(nullptr, 0, nullptr));
  Range empty{a, a};
  ASSERT_OK(db_->GetApproximateSizes(&empty, 1, sizes, kIncludeMemtables | kIncludeFiles |
                                                          kIncludeValueLog));
  EXPECT_EQ(sizes[0], 0u);
  EXPECT_EQ(*db_->GetApproximateKeyCount(empty), 0u);
  ASSERT_OK(db_->GetApproximateSizes(ranges, 1, sizes));
  EXPECT_GT(sizes[0], 10 * kLarge);
  ASSERT_OK(db_->Close());
  EXPECT_TRUE(absl::IsFailedPrecondition(db_->GetApproximateSizes(ranges, 1, sizes)));
}

TEST_F(ApproximateSizesTest, AReadOnlyOpenEstimatesAsTheWriterDid) {
  for (int i = 0; i < 2000; ++i) ASSERT_OK(db_->Put({}, Key(i), Value(i, kLarge)));
  ASSERT_OK(db_->Flush());
  for (int i = 2000; i < 2500; ++i) ASSERT_OK(db_->Put({}, Key(i), Value(i, kLarge)));
  constexpr uint32_t kAll = kIncludeMemtables | kIncludeFiles | kIncludeValueLog;
  const uint64_t before = Size(100, 2400, kAll);
  const uint64_t keys_before = Count(100, 2400);
  ASSERT_OK(db_->Close());
  // The WAL's 500 writes replay into the read-only view's memtable.
  Options o;
  o.value_separation_threshold = 1024;
  auto ro = OpenForReadOnlyWithFileSystem(o, "/db", fs_);
  ASSERT_OK(ro);
  db_ = std::move(*ro);
  EXPECT_NEAR(static_cast<double>(Size(100, 2400, kAll)), static_cast<double>(before),
              0.02 * static_cast<double>(before));
  EXPECT_NEAR(static_cast<double>(Count(100, 2400)), static_cast<double>(keys_before), 2300 * 0.02);
  EXPECT_NEAR(static_cast<double>(Count(100, 2400)), 2300, 230);
}

}  // namespace
}  // namespace cairn
