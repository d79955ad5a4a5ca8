#include "vlog/segment_reader_cache.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "io/fd_budget.h"
#include "io/memory_file_system.h"
#include "vlog/segment_writer.h"

namespace cairn::vlog {
namespace {

std::string PathOf(uint64_t id) { return absl::StrFormat("/db/%06d.vlog", id); }

class SegmentReaderCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs_.CreateDir("/db").ok());
    // Segments 1..3, each with ten records keyed "s<id>-k<i>".
    for (uint64_t id = 1; id <= 3; ++id) {
      auto writer = SegmentWriter::Create(&fs_, PathOf(id), id, {});
      ASSERT_TRUE(writer.ok());
      for (int i = 0; i < 10; ++i) {
        std::string key = absl::StrCat("s", id, "-k", i);
        std::string value = absl::StrCat("value of ", key, std::string(i * 100, '.'));
        absl::StatusOr<ValuePointer> p = (*writer)->Append(key, value);
        ASSERT_TRUE(p.ok());
        keys_.push_back(key);
        values_.push_back(value);
        pointers_.push_back(*p);
      }
      ASSERT_TRUE((*writer)->Close().ok());
    }
  }

  io::MemoryFileSystem fs_;
  SegmentReaderCache cache_{&fs_, PathOf, false};
  std::vector<std::string> keys_;
  std::vector<std::string> values_;
  std::vector<ValuePointer> pointers_;
};

TEST_F(SegmentReaderCacheTest, OpensReadersLazilyAndKeepsThem) {
  EXPECT_EQ(cache_.open_readers(), 0u);
  std::string value;
  ASSERT_TRUE(cache_.Read(pointers_[12], keys_[12], &value).ok());
  EXPECT_EQ(value, values_[12]);
  EXPECT_EQ(cache_.open_readers(), 1u);
  auto a = cache_.Get(2);
  auto b = cache_.Get(2);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(cache_.open_readers(), 1u);
}

TEST_F(SegmentReaderCacheTest, EvictedReaderOutlivesItsUsers) {
  auto held = cache_.Get(1);
  ASSERT_TRUE(held.ok());
  cache_.Evict(1);
  cache_.Evict(99);  // not open: no-op
  EXPECT_EQ(cache_.open_readers(), 0u);
  std::string value;
  ASSERT_TRUE((*held)->Read(pointers_[0], keys_[0], &value).ok());
  EXPECT_EQ(value, values_[0]);
  // The next use reopens.
  ASSERT_TRUE(cache_.Read(pointers_[1], keys_[1], &value).ok());
  EXPECT_NE(cache_.Get(1)->get(), held->get());
}

TEST_F(SegmentReaderCacheTest, HoldsAtMostMaxOpenReadersLeastRecentlyUsedClosedFirst) {
  SegmentReaderCache bounded(&fs_, PathOf, false, /*max_open=*/2);
  std::string value;
  ASSERT_TRUE(bounded.Read(pointers_[0], keys_[0], &value).ok());    // 1
  auto second = bounded.Get(2);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(bounded.Read(pointers_[3], keys_[3], &value).ok());    // 1 again: 2 is oldest
  ASSERT_TRUE(bounded.Read(pointers_[25], keys_[25], &value).ok());  // 3 closes 2
  EXPECT_EQ(value, values_[25]);
  EXPECT_EQ(bounded.open_readers(), 2u);
  // The reader closed by the bound stays usable by whoever holds it.
  ASSERT_TRUE((*second)->Read(pointers_[14], keys_[14], &value).ok());
  EXPECT_EQ(value, values_[14]);
  // Segment 2 is opened again on its next read, and closes the oldest (1).
  auto reopened = bounded.Get(2);
  ASSERT_TRUE(reopened.ok());
  EXPECT_NE(reopened->get(), second->get());
  EXPECT_EQ(bounded.open_readers(), 2u);
  // Every record still reads through the bounded cache, in any order.
  for (size_t j = 0; j < pointers_.size(); ++j) {
    const size_t k = (j * 7) % pointers_.size();
    ASSERT_TRUE(bounded.Read(pointers_[k], keys_[k], &value).ok());
    EXPECT_EQ(value, values_[k]);
    EXPECT_LE(bounded.open_readers(), 2u);
  }
  std::vector<std::string> values;
  std::vector<absl::Status> statuses;
  std::vector<std::string_view> keys(keys_.begin(), keys_.end());
  ASSERT_TRUE(bounded.MultiRead(pointers_, keys, &values, &statuses).ok());
  EXPECT_EQ(values, values_);
  EXPECT_LE(bounded.open_readers(), 2u);
}

TEST_F(SegmentReaderCacheTest, MultiReadAcrossSegmentsEqualsReads) {
  std::vector<ValuePointer> pointers;
  std::vector<std::string_view> keys;
  // Interleave segments: 3, 1, 2, 3, 1, 2, ...
  for (int i = 0; i < 10; ++i) {
    for (int seg : {2, 0, 1}) {
      pointers.push_back(pointers_[seg * 10 + i]);
      keys.push_back(keys_[seg * 10 + i]);
    }
  }
  // Plus one pointer into a segment that does not exist.
  pointers.push_back({7, kSegmentHeaderSize, 40});
  keys.push_back("missing");
  std::vector<std::string> values;
  std::vector<absl::Status> statuses;
  absl::Status s = cache_.MultiRead(pointers, keys, &values, &statuses);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  ASSERT_EQ(values.size(), pointers.size());
  for (size_t j = 0; j + 1 < pointers.size(); ++j) {
    ASSERT_TRUE(statuses[j].ok()) << statuses[j];
    std::string single;
    ASSERT_TRUE(cache_.Read(pointers[j], keys[j], &single).ok());
    EXPECT_EQ(values[j], single);
  }
  EXPECT_EQ(statuses.back().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(cache_.open_readers(), 3u) << "a failed open is not cached";
}

TEST_F(SegmentReaderCacheTest, ConcurrentReadersShareOneReaderPerSegment) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      std::string value;
      for (int i = 0; i < 300; ++i) {
        const size_t j = (i * 7 + t) % pointers_.size();
        ASSERT_TRUE(cache_.Read(pointers_[j], keys_[j], &value).ok());
        ASSERT_EQ(value, values_[j]);
        if (i % 50 == 0) cache_.Evict(pointers_[j].segment_id);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(cache_.open_readers(), 3u);
}

}  // namespace
}  // namespace cairn::vlog

namespace cairn::vlog {
namespace {

// With a budget, readers held past max_open count against it, idle ones
// close for a new open, and a MultiRead over more segments than the budget
// reads every value (docs/decisions/20261207_fd_budget.md).
class BudgetedSegmentReaderCacheTest : public SegmentReaderCacheTest {};

TEST_F(BudgetedSegmentReaderCacheTest, ReadersHeldPastTheBoundAreCounted) {
  // A budget of 16 leaves an eighth (2) to tables: readers may take 13.
  auto budget = std::make_shared<io::FdBudget>(16, absl::ZeroDuration());
  SegmentReaderCache bounded(&fs_, PathOf, false, /*max_open=*/1, budget);
  auto one = bounded.Get(1);
  auto two = bounded.Get(2);  // closes 1 in the cache, but 1 is held
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_EQ(bounded.open_readers(), 1u);
  EXPECT_EQ(budget->in_use(), 2u);
  one->reset();
  EXPECT_EQ(budget->in_use(), 1u);
}

TEST_F(BudgetedSegmentReaderCacheTest, ASpentBudgetClosesIdleReadersThenFails) {
  // A budget of 2, of which an eighth (none) is kept for tables.
  auto budget = std::make_shared<io::FdBudget>(2, absl::ZeroDuration());
  SegmentReaderCache cache(&fs_, PathOf, false, /*max_open=*/10, budget);
  auto one = cache.Get(1);
  ASSERT_TRUE(one.ok());
  {
    auto two = cache.Get(2);
    ASSERT_TRUE(two.ok());
  }
  // 2 is idle: it closes for 3.
  auto three = cache.Get(3);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(budget->in_use(), 2u);
  EXPECT_EQ(cache.open_readers(), 2u);
  // 1 and 3 are held: 2 cannot open.
  auto again = cache.Get(2);
  EXPECT_TRUE(io::IsFdShortage(again.status())) << again.status();
  one->reset();
  EXPECT_TRUE(cache.Get(2).ok());
}

TEST_F(BudgetedSegmentReaderCacheTest, MultiReadPastTheBudgetReadsEveryValue) {
  auto budget = std::make_shared<io::FdBudget>(1, absl::ZeroDuration());
  SegmentReaderCache cache(&fs_, PathOf, false, /*max_open=*/10, budget);
  std::vector<std::string_view> keys(keys_.begin(), keys_.end());
  std::vector<std::string> values;
  std::vector<absl::Status> statuses;
  ASSERT_TRUE(cache.MultiRead(pointers_, keys, &values, &statuses).ok());
  EXPECT_EQ(values, values_);
  EXPECT_LE(budget->in_use(), 1u);
}

}  // namespace
}  // namespace cairn::vlog
