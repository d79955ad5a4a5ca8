// Compaction filters (issue 60, item 4): keep, remove and change; a filter
// over separated values that decides by key reads no value-log byte, and one
// that asks reads just what it asks for; removed and replaced separated
// values become garbage; snapshots protect what they see; a removed entry
// does not bring back an older version from a level below; a filter that
// throws or answers garbage fails the compaction with a clear status, loses
// nothing, and leaves the inputs as they were.
#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "cairn/compaction_filter.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "core/testing/ttl_helpers.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

std::string Key(int i) { return absl::StrFormat("key%04d", i); }

// Decides by the key's prefix: "drop" removes, "change" replaces a value of
// 40 bytes or more with "changed:<size>", "read" reads the value (and keeps it), "throw"
// throws, "bad" answers a decision outside the enum, "vdrop" removes the
// value "newer" alone; anything else stays.
class PrefixFilter : public CompactionFilter {
 public:
  Decision Filter(const Context&, std::string_view k, Value& value, uint64_t,
                  std::string* new_value) override {
    const absl::string_view key(k.data(), k.size());
    calls.fetch_add(1);
    if (absl::StartsWith(key, "drop")) return Decision::kRemove;
    // Every compaction an entry goes through calls the filter again: the
    // change is made once, to values of 40 bytes or more.
    if (absl::StartsWith(key, "change") && value.size() >= 40) {
      *new_value = absl::StrFormat("changed:%d", value.size());
      return Decision::kChangeValue;
    }
    if (absl::StartsWith(key, "read")) {
      absl::StatusOr<std::string_view> v = value.Read();
      if (v.ok()) bytes_read.fetch_add(v->size());
      return Decision::kKeep;
    }
    if (absl::StartsWith(key, "vdrop")) {
      absl::StatusOr<std::string_view> v = value.Read();
      return v.ok() && *v == "newer" ? Decision::kRemove : Decision::kKeep;
    }
    if (absl::StartsWith(key, "throw")) throw std::runtime_error("filter broke");
    if (absl::StartsWith(key, "bad")) return static_cast<Decision>(7);
    return Decision::kKeep;
  }
  const char* Name() const override { return "PrefixFilter"; }

  std::atomic<uint64_t> calls{0}, bytes_read{0};
};

class CompactionFilterTest : public testing_clock::SmallDbTest {
 protected:
  void SetUp() override {
    prefix_filter_ = std::make_shared<PrefixFilter>();
    filter_ = prefix_filter_;
    SmallDbTest::SetUp();
  }
  std::string Big(char c) { return std::string(GetParam() ? 500 : 50, c); }

  std::shared_ptr<PrefixFilter> prefix_filter_;
};

TEST_P(CompactionFilterTest, KeepRemoveChange) {
  ASSERT_OK(db_->Put({}, "keep1", Big('k')));
  ASSERT_OK(db_->Put({}, "drop1", Big('d')));
  ASSERT_OK(db_->Put({}, "change1", Big('c')));
  ASSERT_OK(db_->Flush());
  EXPECT_EQ(prefix_filter_->calls.load(), 0u) << "flushes do not filter";
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  EXPECT_EQ(Get("keep1"), Big('k'));
  EXPECT_EQ(Get("drop1"), "NOT_FOUND");
  EXPECT_EQ(Get("change1"), absl::StrFormat("changed:%d", Big('c').size()));
  const Stats st = db_->GetStats();
  EXPECT_EQ(st.filter_removed, 1u);
  EXPECT_EQ(st.filter_changed, 1u);
  // The changed value survives a reopen, and the removed key stays gone.
  Open();
  EXPECT_EQ(Get("change1"), absl::StrFormat("changed:%d", Big('c').size()));
  EXPECT_EQ(Get("drop1"), "NOT_FOUND");
}

TEST_P(CompactionFilterTest, RemovedEntryDoesNotResurrectAnOlderVersionBelow) {
  // "older" at the bottom, which the filter keeps; "newer" above it, which
  // it removes: the removal is a tombstone, so "older" stays hidden as it
  // was, through every level down to the bottom.
  ASSERT_OK(db_->Put({}, "vdrop1", "older"));
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  EXPECT_EQ(Get("vdrop1"), "older");
  ASSERT_OK(db_->Put({}, "vdrop1", "newer"));
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  EXPECT_EQ(Get("vdrop1"), "NOT_FOUND");
  EXPECT_EQ(db_->GetStats().filter_removed, 1u);
  Open();
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  EXPECT_EQ(Get("vdrop1"), "NOT_FOUND");
}

TEST_P(CompactionFilterTest, SnapshotsProtectWhatTheySee) {
  ASSERT_OK(db_->Put({}, "drop1", Big('1')));
  const Snapshot* snap = db_->GetSnapshot();
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  ReadOptions ro;
  ro.snapshot = snap;
  std::string v;
  ASSERT_OK(db_->Get(ro, "drop1", &v));
  EXPECT_EQ(v, Big('1'));
  EXPECT_EQ(db_->GetStats().filter_removed, 0u);
  db_->ReleaseSnapshot(snap);
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  EXPECT_EQ(Get("drop1"), "NOT_FOUND");
  EXPECT_EQ(db_->GetStats().filter_removed, 1u);
}

TEST_P(CompactionFilterTest, ThrowingOrBadFilterFailsTheCompactionAndLosesNothing) {
  for (const char* key : {"throw1", "bad1"}) {
    SCOPED_TRACE(key);
    SetUp();
    ASSERT_OK(db_->Put({}, key, Big('t')));
    ASSERT_OK(db_->Put({}, "keep1", Big('k')));
    const absl::Status s = db_->CompactRange(nullptr, nullptr);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("PrefixFilter"), std::string::npos) << s;
    if (std::string_view(key) == "throw1") {
      EXPECT_TRUE(absl::IsAborted(s)) << s;
      EXPECT_NE(s.message().find("filter broke"), std::string::npos) << s;
    } else {
      EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    }
    // Reads go on; writes stop with the background error; a reopen
    // without the filter finds everything.
    EXPECT_EQ(Get(key), Big('t'));
    EXPECT_FALSE(db_->Put({}, "after", "x").ok());
    db_.reset();
    auto o = MakeOptions();
    o.compaction_filter = nullptr;
    auto db = OpenWithFileSystem(o, "/db", fs_);
    ASSERT_OK(db);
    std::string v;
    ASSERT_OK((*db)->Get({}, key, &v));
    EXPECT_EQ(v, Big('t'));
    ASSERT_OK((*db)->Get({}, "keep1", &v));
    ASSERT_OK((*db)->CompactRange(nullptr, nullptr));
  }
}

INSTANTIATE_TEST_SUITE_P(Values, CompactionFilterTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Separated" : "Inline"; });

// A filter over blob keys reads no value-log byte unless it asks, and what
// it removes or replaces becomes garbage at once.
TEST(CompactionFilterBlobTest, ReadsOnlyWhatItAsksAndCountsGarbage) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  auto filter = std::make_shared<PrefixFilter>();
  Options o = testing_clock::SmallOptions(/*separated=*/true);
  o.compaction_filter = filter;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_OK(opened);
  std::unique_ptr<DB> db = std::move(*opened);
  for (int i = 0; i < 50; ++i) {
    ASSERT_OK(db->Put({}, "drop" + Key(i), std::string(2000, 'd')));
    ASSERT_OK(db->Put({}, "keep" + Key(i), std::string(2000, 'k')));
  }
  ASSERT_OK(db->Flush());
  // By key alone: not one value-log read.
  const Stats before = db->GetStats();
  ASSERT_OK(db->CompactRange(nullptr, nullptr));
  const Stats after = db->GetStats();
  EXPECT_GT(filter->calls.load(), 100u);
  EXPECT_EQ(after.filter_removed, 50u);
  EXPECT_EQ(after.filter_value_reads, 0u);
  EXPECT_EQ(after.vlog_reads, before.vlog_reads) << "a filter by key reads no value";
  EXPECT_EQ(after.vlog_bytes_read, before.vlog_bytes_read);
  EXPECT_GE(after.vlog_garbage_bytes - before.vlog_garbage_bytes, uint64_t{50} * 2000);
  // A filter that asks reads the value, once per compaction the entry goes
  // through, and nothing else (a segment's first read may also read its
  // header).
  ASSERT_OK(db->Put({}, "read1", std::string(3000, 'r')));
  ASSERT_OK(db->Flush());
  ASSERT_OK(db->CompactRange(nullptr, nullptr));
  const Stats read = db->GetStats();
  EXPECT_GE(read.filter_value_reads, 1u);
  EXPECT_EQ(read.filter_value_bytes_read, read.filter_value_reads * 3000);
  EXPECT_EQ(filter->bytes_read.load(), read.filter_value_bytes_read);
  EXPECT_GE(read.vlog_bytes_read - after.vlog_bytes_read, read.filter_value_bytes_read);
  EXPECT_LE(read.vlog_bytes_read - after.vlog_bytes_read,
            read.filter_value_bytes_read + read.filter_value_reads * 8192);
  std::string v;
  ASSERT_OK(db->Get({}, "keep" + Key(7), &v));
  EXPECT_EQ(v, std::string(2000, 'k'));
  EXPECT_TRUE(absl::IsNotFound(db->Get({}, "drop" + Key(7), &v)));
  ASSERT_OK(db->RunGC().status());
  ASSERT_OK(db->Get({}, "keep" + Key(9), &v));
}

}  // namespace
}  // namespace cairn
