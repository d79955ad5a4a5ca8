// Iterators with ReadOptions::iterate_lower_bound / iterate_upper_bound:
// every move matches a std::map model restricted to [lower, upper), at every
// bound, forward and reverse, at a snapshot and with deletions; and the value
// prefetch window never reads a value past the upper bound.
#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

using Model = std::map<std::string, std::string>;

std::string Key(int i) { return absl::StrFormat("k%03d", i); }

Options TestOptions() {
  Options o;
  o.memtable_size = 64 << 10;
  o.block_size = 1024;
  o.target_file_size = 64 << 10;
  // Blocks only: the read counts are of values read from the value log.
  o.cache_size = 0;
  o.block_cache_size = 8 << 20;
  // Values go to the value log as they are written, where each test places
  // them (the flush's key-ordered placement: KeyOrderScanReadsTest).
  o.separate_at_flush_below = 0;
  // KeyOrderScanReadsTest's 1,000-byte values are separated too.
  o.value_separation_threshold = 512;
  return o;
}

// The model's entries in [lower, upper).
std::vector<std::pair<std::string, std::string>> InRange(const Model& m,
                                                         const std::optional<std::string>& lower,
                                                         const std::optional<std::string>& upper) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : m) {
    if (lower && k < *lower) continue;
    if (upper && k >= *upper) continue;
    out.emplace_back(k, v);
  }
  return out;
}

class BoundedIterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = std::make_shared<io::MemoryFileSystem>();
    auto db = OpenWithFileSystem(TestOptions(), "/db", fs_);
    ASSERT_OK(db);
    db_ = std::move(*db);
  }

  // Puts, overwrites and deletes over 60 keys, inline (300 bytes) and
  // separated (2,000 bytes) values, some flushed to tables and some left in
  // the memtable, with a snapshot taken halfway.
  void Load() {
    std::mt19937 rng(7);
    for (int round = 0; round < 2; ++round) {
      for (int step = 0; step < 150; ++step) {
        const std::string k = Key(static_cast<int>(rng() % 60));
        if (rng() % 5 == 0) {
          ASSERT_OK(db_->Delete({}, k));
          model_.erase(k);
        } else {
          const size_t size = rng() % 3 == 0 ? 300 : 2000;
          std::string v = absl::StrFormat("%s-%d-%d-", k, round, step);
          v.resize(size, static_cast<char>('a' + step % 26));
          ASSERT_OK(db_->Put({}, k, v));
          model_[k] = v;
        }
        if (step == 100) {
          ASSERT_OK(db_->Flush());
        }
      }
      if (round == 0) {
        snapshot_ = db_->GetSnapshot();
        snapshot_model_ = model_;
      }
    }
  }

  void TearDown() override {
    if (snapshot_ != nullptr) db_->ReleaseSnapshot(snapshot_);
  }

  // Checks every kind of move of one iterator against the model.
  void CheckBounds(const Model& model, const Snapshot* snap, int depth,
                   const std::optional<std::string>& lower,
                   const std::optional<std::string>& upper) {
    const std::string where = absl::StrFormat(
        "lower=%s upper=%s snapshot=%d depth=%d", lower.value_or("<none>"),
        upper.value_or("<none>"), snap != nullptr, depth);
    std::string_view lower_view, upper_view;
    ReadOptions ro;
    ro.snapshot = snap;
    ro.value_prefetch_depth = depth;
    if (lower) {
      lower_view = *lower;
      ro.iterate_lower_bound = &lower_view;
    }
    if (upper) {
      upper_view = *upper;
      ro.iterate_upper_bound = &upper_view;
    }
    const auto want = InRange(model, lower, upper);
    auto it = db_->NewIterator(ro);

    size_t i = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++i) {
      ASSERT_LT(i, want.size()) << where;
      ASSERT_EQ(it->key(), want[i].first) << where;
      ASSERT_EQ(it->value(), want[i].second) << where;
    }
    ASSERT_OK(it->status());
    ASSERT_EQ(i, want.size()) << where;

    i = want.size();
    for (it->SeekToLast(); it->Valid(); it->Prev()) {
      ASSERT_GT(i, 0u) << where;
      --i;
      ASSERT_EQ(it->key(), want[i].first) << where;
      ASSERT_EQ(it->value(), want[i].second) << where;
    }
    ASSERT_OK(it->status());
    ASSERT_EQ(i, 0u) << where;

    for (int t = -1; t <= 61; t += 4) {
      const std::string target = t < 0 ? "" : Key(t) + (t % 8 == 3 ? "x" : "");
      // Seek: the first entry >= target inside the bounds.
      auto first = std::lower_bound(want.begin(), want.end(), target,
                                    [](const auto& e, const std::string& k) { return e.first < k; });
      it->Seek(target);
      if (first == want.end()) {
        ASSERT_FALSE(it->Valid()) << where << " seek " << target;
      } else {
        ASSERT_TRUE(it->Valid()) << where << " seek " << target;
        ASSERT_EQ(it->key(), first->first) << where;
        ASSERT_EQ(it->value(), first->second) << where;
        // Two steps on and back: turning at the bound stays exact.
        it->Next();
        auto next = std::next(first);
        ASSERT_EQ(it->Valid(), next != want.end()) << where << " next after " << target;
        if (next != want.end()) {
          ASSERT_EQ(it->key(), next->first) << where;
        }
        if (it->Valid()) {
          it->Prev();
          ASSERT_TRUE(it->Valid()) << where;
          ASSERT_EQ(it->key(), first->first) << where;
          ASSERT_EQ(it->value(), first->second) << where;
        }
      }
      // SeekForPrev: the last entry <= target inside the bounds.
      auto last = std::upper_bound(want.begin(), want.end(), target,
                                   [](const std::string& k, const auto& e) { return k < e.first; });
      it->SeekForPrev(target);
      if (last == want.begin()) {
        ASSERT_FALSE(it->Valid()) << where << " seek-for-prev " << target;
      } else {
        --last;
        ASSERT_TRUE(it->Valid()) << where << " seek-for-prev " << target;
        ASSERT_EQ(it->key(), last->first) << where;
        ASSERT_EQ(it->value(), last->second) << where;
        it->Prev();
        ASSERT_EQ(it->Valid(), last != want.begin()) << where << " prev after " << target;
        if (it->Valid()) {
          ASSERT_EQ(it->key(), std::prev(last)->first) << where;
          it->Next();
          ASSERT_TRUE(it->Valid()) << where;
          ASSERT_EQ(it->key(), last->first) << where;
          ASSERT_EQ(it->value(), last->second) << where;
        }
      }
      ASSERT_OK(it->status());
    }
  }

  std::shared_ptr<io::MemoryFileSystem> fs_;
  std::unique_ptr<DB> db_;
  Model model_, snapshot_model_;
  const Snapshot* snapshot_ = nullptr;
};

TEST_F(BoundedIterTest, EveryMoveMatchesTheModelAtEveryBound) {
  Load();
  // Bounds on keys that exist, that were deleted, between keys, before the
  // first and after the last, and equal (an empty range).
  std::vector<std::optional<std::string>> bounds = {std::nullopt, "", "a", Key(0)};
  for (int i = 1; i < 60; i += 7) bounds.push_back(Key(i));
  for (int i = 2; i < 60; i += 13) bounds.push_back(Key(i) + "x");
  bounds.push_back("z");
  int checked = 0;
  for (const auto& lower : bounds) {
    for (const auto& upper : bounds) {
      for (int depth : {1, 32}) {
        CheckBounds(model_, nullptr, depth, lower, upper);
        CheckBounds(snapshot_model_, snapshot_, depth, lower, upper);
        if (HasFatalFailure()) return;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int>(bounds.size() * bounds.size() * 2));
}

TEST_F(BoundedIterTest, LowerAboveUpperShowsNothing) {
  ASSERT_OK(db_->Put({}, Key(5), "v"));
  const std::string lower_s = Key(6), upper_s = Key(4);
  std::string_view lower = lower_s, upper = upper_s;
  ReadOptions ro;
  ro.iterate_lower_bound = &lower;
  ro.iterate_upper_bound = &upper;
  auto it = db_->NewIterator(ro);
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  it->SeekToLast();
  EXPECT_FALSE(it->Valid());
  it->Seek(Key(5));
  EXPECT_FALSE(it->Valid());
  ASSERT_OK(it->status());
}

// Value-log reads for scans of n entries. Each scanned value is written
// next to a 5,000-byte padding value of another key range, in a shuffled
// order, so that no two records of a scan lie within the 4 KiB the fetcher
// merges into one read: every value read is one device read, and the
// counts below are exact.
class ScanReadsTest : public BoundedIterTest {
 protected:
  static constexpr int kKeys = 400;
  void SetUp() override {
    BoundedIterTest::SetUp();
    std::vector<int> order(kKeys);
    for (int i = 0; i < kKeys; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(11));
    for (int i : order) {
      ASSERT_OK(db_->Put({}, Key(i), std::string(3000, 'a' + i % 26)));
      ASSERT_OK(db_->Put({}, "pad" + Key(i), std::string(5000, 'p')));
    }
    ASSERT_OK(db_->Flush());
    std::string v;
    ASSERT_OK(db_->Get({}, Key(0), &v));  // opens the segment (reads its header)
  }

  // Value-log reads of one scan of n entries from Key(start). A bounded
  // scan ends at the upper bound, the way a caller of a range would; an
  // unbounded one stops after n entries, without a further Next.
  uint64_t ScanReads(int start, int n, bool bounded) {
    const std::string upper_s = Key(start + n);
    std::string_view upper = upper_s;
    ReadOptions ro;
    if (bounded) ro.iterate_upper_bound = &upper;
    const uint64_t before = db_->GetStats().vlog_reads;
    {
      auto it = db_->NewIterator(ro);
      int seen = 0;
      for (it->Seek(Key(start)); it->Valid(); ++seen) {
        EXPECT_EQ(it->key(), Key(start + seen));
        EXPECT_EQ(it->value().size(), 3000u);
        if (!bounded && seen + 1 == n) {
          ++seen;
          break;
        }
        it->Next();
      }
      EXPECT_EQ(seen, n);
      EXPECT_OK(it->status());
    }
    return db_->GetStats().vlog_reads - before;
  }
};

TEST_F(ScanReadsTest, BoundedScanReadsOnlyTheValuesItShows) {
  for (int n : {1, 2, 3, 10, 100, 250}) {
    EXPECT_EQ(ScanReads(17, n, /*bounded=*/true), static_cast<uint64_t>(n)) << n;
  }
}

TEST_F(ScanReadsTest, AReadOfAValueAtARandomPlaceTakesOnlyItsRecord) {
  // No readahead (a bounded scan; the records lie apart): each read covers
  // its record at the file's read granularity (1 byte here, in memory), not
  // the whole 4 KiB blocks around it, whose other bytes are other keys'.
  const uint64_t before = db_->GetStats().vlog_bytes_read;
  constexpr int kValues = 10;
  EXPECT_EQ(ScanReads(60, kValues, /*bounded=*/true), static_cast<uint64_t>(kValues));
  const uint64_t bytes = db_->GetStats().vlog_bytes_read - before;
  const uint64_t record = 13 + Key(60).size() + 3000;  // header, key, value
  EXPECT_EQ(bytes, kValues * record);
}

// The reads a scan of n values of kRecordBytes each (at random places, a
// read each) may start: one per kUnboundedValuesPerPrefetch values, plus
// half the bytes taken (at most kUnboundedPrefetchBytes) in reads.
uint64_t UnboundedReadBound(int n) {
  constexpr uint64_t kRecordBytes = 3000;  // and a few bytes of header and key
  const uint64_t ahead_bytes = std::min<uint64_t>(kUnboundedPrefetchBytes,
                                                  n * kRecordBytes / kUnboundedPrefetchShare);
  return n + n / kUnboundedValuesPerPrefetch + ahead_bytes / kRecordBytes;
}

TEST_F(ScanReadsTest, ShortUnboundedScanReadsLittleAhead) {
  // Half of one value's bytes is less than a value: nothing ahead. Two and
  // three values read at most one more.
  EXPECT_EQ(ScanReads(30, 1, false), 1u);
  EXPECT_LE(ScanReads(30, 2, false), UnboundedReadBound(2));
  EXPECT_LE(ScanReads(30, 3, false), UnboundedReadBound(3));
  EXPECT_EQ(UnboundedReadBound(3), 4u);
}

TEST_F(ScanReadsTest, LongerUnboundedScanReadsAheadHalfItsBytesAndFivePercentMore) {
  for (int n : {10, 21, 40, 100, 250}) {
    const uint64_t reads = ScanReads(30, n, false);
    // Some records may fall inside an earlier read's readahead by chance
    // (placement is random here): never more reads than the bound.
    EXPECT_GE(reads, static_cast<uint64_t>(n / 2)) << n;
    EXPECT_LE(reads, UnboundedReadBound(n)) << n;
    EXPECT_LE(static_cast<double>(reads) / n, 1.55) << n;
    if (n >= 40) {
      EXPECT_GT(reads, static_cast<uint64_t>(n)) << n << ": nothing read ahead";
    }
  }
}

TEST_F(ScanReadsTest, ByteBudgetCapsTheWindow) {
  // A budget of one record: the window never holds more than one read, so
  // an unbounded scan reads at most one value past its end.
  const uint64_t before = db_->GetStats().vlog_reads;
  ReadOptions ro;
  ro.value_prefetch_bytes = 1;
  {
    auto it = db_->NewIterator(ro);
    int seen = 0;
    for (it->Seek(Key(100)); seen < 50; it->Next(), ++seen) {
      ASSERT_TRUE(it->Valid());
      ASSERT_EQ(it->value().size(), 3000u);
    }
  }
  EXPECT_LE(db_->GetStats().vlog_reads - before, 51u);
}

// Values written in key order lie next to each other in the segment: a scan
// reads them in a few large reads, a read joining the records that follow
// its own, and still reads at most 5% more times than it shows values, and
// past its end at most about as many bytes as it took.
class KeyOrderScanReadsTest : public BoundedIterTest {
 protected:
  static constexpr int kKeys = 400;
  static constexpr size_t kValueSize = 1000;
  void SetUp() override {
    BoundedIterTest::SetUp();
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_OK(db_->Put({}, Key(i), std::string(kValueSize, 'a' + i % 26)));
    }
    ASSERT_OK(db_->Flush());
    std::string v;
    ASSERT_OK(db_->Get({}, Key(0), &v));  // opens the segment (reads its header)
  }

  struct Cost {
    uint64_t reads = 0, bytes = 0;
  };
  // An unbounded scan of n entries from Key(start), without a further Next.
  Cost Scan(int start, int n) {
    const Stats before = db_->GetStats();
    {
      auto it = db_->NewIterator(ReadOptions());
      int seen = 0;
      for (it->Seek(Key(start)); it->Valid(); it->Next()) {
        EXPECT_EQ(it->key(), Key(start + seen));
        EXPECT_EQ(it->value(), std::string(kValueSize, 'a' + (start + seen) % 26));
        if (++seen == n) break;
      }
      EXPECT_EQ(seen, n);
      EXPECT_OK(it->status());
    }
    const Stats after = db_->GetStats();
    return {after.vlog_reads - before.vlog_reads, after.vlog_bytes_read - before.vlog_bytes_read};
  }
};

TEST_F(KeyOrderScanReadsTest, NeighbouringValuesShareReads) {
  for (int n : {1, 2, 3, 10, 20, 100, 250}) {
    const Cost c = Scan(50, n);
    EXPECT_LE(static_cast<double>(c.reads), std::max(1.0, 1.05 * n)) << n;
    // Past the end: the window (at most what the scan took, or the first
    // run's 16 KiB) and the readahead of its last read (as much again),
    // plus the blocks the reads are widened to.
    const uint64_t shown = static_cast<uint64_t>(n) * (kValueSize + 20);
    EXPECT_LE(c.bytes, shown + 2 * std::max<uint64_t>(shown, 16 << 10) + 16384) << n;
    if (n >= 100) {
      EXPECT_LE(c.reads, static_cast<uint64_t>(n / 10)) << n;
    }
  }
}

// The value-log reads and bytes of an unbounded scan of n entries of db from
// Key(start), each value value_size bytes of 'a' + i % 26, without a
// further Next.
struct ScanCost {
  uint64_t reads = 0, bytes = 0;
};
ScanCost ScanAndCount(DB& db, int start, int n, size_t value_size) {
  const Stats before = db.GetStats();
  {
    auto it = db.NewIterator(ReadOptions());
    int seen = 0;
    for (it->Seek(Key(start)); it->Valid(); it->Next()) {
      EXPECT_EQ(it->value(), std::string(value_size, 'a' + (start + seen) % 26));
      if (++seen == n) break;
    }
    EXPECT_EQ(seen, n);
    EXPECT_OK(it->status());
  }
  const Stats after = db.GetStats();
  return {after.vlog_reads - before.vlog_reads, after.vlog_bytes_read - before.vlog_bytes_read};
}

// A database in memory whose small values reach the value log at flush, in
// key order, a segment per flush of memtable_size.
absl::StatusOr<std::unique_ptr<DB>> OpenSeparatingAtFlush(size_t memtable_size) {
  Options o = TestOptions();
  o.separate_at_flush_below = 16 << 10;
  o.memtable_size = memtable_size;
  return OpenWithFileSystem(o, "/db", std::make_shared<io::MemoryFileSystem>());
}

// Two flushes, each moving its values into a segment of its own in key
// order (separate_at_flush_below), the first of the even keys and the second
// of the odd ones, so that a scan alternates between them. The first scan
// reads each segment's first record alone (it cannot yet know the segment
// is in key order), then reads ahead; once it has found them in key order,
// later scans read ahead from their first read of each.
TEST(KeyOrderHintTest, ALaterScanReadsAheadFromItsFirstReadOfEachSegment) {
  auto opened = OpenSeparatingAtFlush(4 << 20);  // one flush, one segment, per parity
  ASSERT_OK(opened.status());
  std::unique_ptr<DB> db = *std::move(opened);
  constexpr int kKeys = 400;
  constexpr size_t kValueSize = 1000;
  for (int parity : {0, 1}) {
    for (int i = parity; i < kKeys; i += 2) {
      ASSERT_OK(db->Put({}, Key(i), std::string(kValueSize, 'a' + i % 26)));
    }
    ASSERT_OK(db->Flush());
  }
  std::string v;
  ASSERT_OK(db->Get({}, Key(0), &v));  // opens both segments (reads their headers)
  ASSERT_OK(db->Get({}, Key(1), &v));
  // 12 entries, 6 from each segment: within a first read's 16 KiB of each.
  EXPECT_GE(ScanAndCount(*db, 100, 12, kValueSize).reads, 3u);
  EXPECT_EQ(ScanAndCount(*db, 300, 12, kValueSize).reads, 2u);
  // A scan of one value reads only its segment, although the other is known
  // in key order too: the other's first read waits for a second value.
  EXPECT_EQ(ScanAndCount(*db, 200, 1, kValueSize).reads, 1u);
  EXPECT_EQ(ScanAndCount(*db, 250, 2, kValueSize).reads, 2u);
  // Bounded, no read goes past the bound: each value in range is read once.
  const std::string upper = Key(352);
  std::string_view upper_view = upper;
  ReadOptions ro;
  ro.iterate_upper_bound = &upper_view;
  const uint64_t before = db->GetStats().vlog_reads;
  {
    auto it = db->NewIterator(ro);
    int seen = 0;
    for (it->Seek(Key(350)); it->Valid(); it->Next(), ++seen) {
      EXPECT_EQ(it->value(), std::string(kValueSize, 'a' + (350 + seen) % 26));
    }
    EXPECT_EQ(seen, 2);
    EXPECT_OK(it->status());
  }
  EXPECT_EQ(db->GetStats().vlog_reads - before, 2u);
}

// Five flushes, each moving a fifth of the keys (i % 5) into a segment of
// its own in key order, so that a scan takes its values from five runs in
// turn, as a scan of a database loaded in random order does. An unbounded
// scan reads ahead in each segment about what it took from that segment,
// as RocksDB's readahead grows per file: sized by what it took from all
// five, it read ahead that much in each, and a 100-entry scan of 4 KiB
// values read three times the values it showed.
TEST(KeyOrderHintTest, ReadaheadInEachSegmentFollowsWhatTheScanTookFromIt) {
  auto opened = OpenSeparatingAtFlush(8 << 20);  // one flush, one segment, per fifth
  ASSERT_OK(opened.status());
  std::unique_ptr<DB> db = *std::move(opened);
  // Five digits: Key() sorts in number order only up to 999, and each
  // segment must reach well past the scan, whose readahead would otherwise
  // stop at its end.
  auto key = [](int i) { return absl::StrFormat("key%05d", i); };
  auto value = [](int i) { return std::string(1000, 'a' + i % 26); };
  constexpr int kKeys = 10000;
  constexpr int kRuns = 5;
  for (int run = 0; run < kRuns; ++run) {
    for (int i = run; i < kKeys; i += kRuns) ASSERT_OK(db->Put({}, key(i), value(i)));
    ASSERT_OK(db->Flush());
  }
  // An unbounded scan of n entries from key(start), without a further Next.
  auto scan = [&](int start, int n) {
    const Stats before = db->GetStats();
    {
      auto it = db->NewIterator(ReadOptions());
      int seen = 0;
      for (it->Seek(key(start)); it->Valid() && seen < n; it->Next(), ++seen) {
        EXPECT_EQ(it->key(), key(start + seen));
        EXPECT_EQ(it->value(), value(start + seen));
      }
      EXPECT_EQ(seen, n);
      EXPECT_OK(it->status());
    }
    return db->GetStats().vlog_bytes_read - before.vlog_bytes_read;
  };
  std::string v;
  for (int run = 0; run < kRuns; ++run) ASSERT_OK(db->Get({}, key(run), &v));  // opens each
  scan(1000, 200);  // finds the segments in key order
  constexpr int kShown = 400;
  const uint64_t bytes = scan(5000, kShown);
  const uint64_t shown = kShown * (1000 + 20);
  // Each segment gave a fifth of what was shown; past it, the window and
  // the readahead of its last read (each at most what the scan took from
  // the segment, at least the first run's 16 KiB), and a block at each end
  // of each read: 553 KB. Sized by what the scan took from all five, each
  // segment's last reads reached that far ahead: 1.74 MB.
  const uint64_t per_run = std::max<uint64_t>(shown / kRuns, 16 << 10);
  EXPECT_LE(bytes, shown + kRuns * (2 * per_run + 4 * 4096));
}

// A segment whose values lie at random places, where an early scan happened
// to find two neighbouring keys' records side by side: the next scan that
// reads ahead on that hint finds it wrong and drops it, so scans after it
// read their first value alone again.
TEST(KeyOrderHintTest, AHintThatProvesWrongIsDropped) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  auto opened = OpenWithFileSystem(TestOptions(), "/db", fs);
  ASSERT_OK(opened.status());
  std::unique_ptr<DB> db = *std::move(opened);
  constexpr int kKeys = 200;
  constexpr size_t kValueSize = 3000;
  // k000 and k001 side by side, then the rest in random order, each with a
  // 5,000-byte record of another key after it: no other two neighbouring
  // keys' records lie within a read's gap.
  std::vector<int> order;
  for (int i = 2; i < kKeys; ++i) order.push_back(i);
  std::shuffle(order.begin(), order.end(), std::mt19937(5));
  order.insert(order.begin(), {0, 1});
  for (int i : order) {
    ASSERT_OK(db->Put({}, Key(i), std::string(kValueSize, 'a' + i % 26)));
    if (i != 0) {
      ASSERT_OK(db->Put({}, "pad" + Key(i), std::string(5000, 'p')));
    }
  }
  ASSERT_OK(db->Flush());
  std::string v;
  ASSERT_OK(db->Get({}, Key(0), &v));  // opens the segment (reads its header)
  auto scan_bytes = [&](int start, int n) { return ScanAndCount(*db, start, n, kValueSize).bytes; };
  const uint64_t alone = scan_bytes(150, 1);
  EXPECT_LE(alone, 8192u);  // one record, widened to whole blocks
  scan_bytes(0, 2);         // k000, k001: side by side, the hint is taken
  EXPECT_GE(scan_bytes(150, 1), uint64_t{16} << 10);  // reads ahead on it
  scan_bytes(100, 5);       // the next records lie at random places: dropped
  EXPECT_EQ(scan_bytes(150, 1), alone);
}

// Reads are of whole 4 KiB blocks: a bounded scan, which never reads ahead,
// reads each block that holds its values once, whether a value is read
// alone or shares a block with one read before.
TEST_F(KeyOrderScanReadsTest, BoundedScanReadsEachBlockOnce) {
  const std::string upper = Key(50 + 40);
  std::string_view upper_view = upper;
  ReadOptions ro;
  ro.iterate_upper_bound = &upper_view;
  const Stats before = db_->GetStats();
  int seen = 0;
  {
    auto it = db_->NewIterator(ro);
    for (it->Seek(Key(50)); it->Valid(); it->Next(), ++seen) {
      ASSERT_EQ(it->value(), std::string(kValueSize, 'a' + (50 + seen) % 26));
    }
    ASSERT_OK(it->status());
  }
  ASSERT_EQ(seen, 40);
  const Stats after = db_->GetStats();
  // The first kPrefetchAfterValues values (none now) are read alone, as
  // Gets; the rest in whole blocks, each read at most once (a record that straddles
  // the end of a read starts the next one at its own block).
  const uint64_t records = static_cast<uint64_t>(seen - kPrefetchAfterValues) * (kValueSize + 20);
  const uint64_t blocks = records / 4096 + 2;
  EXPECT_LE(after.vlog_bytes_read - before.vlog_bytes_read,
            blocks * 4096 + kPrefetchAfterValues * (kValueSize + 20) + 2 * 4096);
  EXPECT_LE(after.vlog_reads - before.vlog_reads, static_cast<uint64_t>(seen) / 2);
}

// A scan shows every form a record takes (raw, zstd, chunked raw, chunked
// compressed): the value of a raw record is shown where the read put it,
// the others decompressed; each stays valid until the iterator moves.
TEST(ScanValueFormsTest, EveryRecordFormScansAndReadsBack) {
  for (const Compression c : {Compression::kNone, Compression::kZstd}) {
    SCOPED_TRACE(static_cast<int>(c));
    Options o = TestOptions();
    o.value_compression = c;
    auto opened = OpenWithFileSystem(o, "/db", std::make_shared<io::MemoryFileSystem>());
    ASSERT_OK(opened.status());
    std::unique_ptr<DB> db = *std::move(opened);
    std::mt19937 rng(5);
    Model model;
    const size_t sizes[] = {700, 3000, 5000, 70000, 200000};
    for (int i = 0; i < 60; ++i) {
      const size_t n = sizes[i % 5];
      std::string v(n, '\0');
      // Half compressible (runs of one letter), half noise.
      for (size_t j = 0; j < n; ++j) {
        v[j] = (i / 5) % 2 == 0 ? static_cast<char>('a' + (j / 512) % 26)
                                : static_cast<char>(rng());
      }
      model[Key(i)] = v;
      ASSERT_OK(db->Put({}, Key(i), v));
    }
    ASSERT_OK(db->Flush());
    for (int pass = 0; pass < 2; ++pass) {  // the second from the value cache
      auto it = db->NewIterator(ReadOptions());
      auto m = model.begin();
      for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
        ASSERT_NE(m, model.end());
        ASSERT_EQ(it->key(), m->first);
        const std::string_view shown = it->value();
        ASSERT_EQ(shown, m->second) << m->first;
        ASSERT_EQ(it->value().data(), shown.data());  // the same bytes until it moves
      }
      ASSERT_OK(it->status());
      EXPECT_EQ(m, model.end());
    }
    std::string got;
    for (const auto& [k, v] : model) {
      ASSERT_OK(db->Get({}, k, &got));
      ASSERT_EQ(got, v) << k;
    }
  }
}

}  // namespace
}  // namespace cairn
