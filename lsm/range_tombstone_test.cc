// Range tombstones in the LSM layer (2026-12-07): the fragmenter, the
// memtable's list, the filtering iterator, the compaction iterator's drops,
// and the table's range-deletion block (format 2) with its worked example.
#include "lsm/range_tombstone.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "io/checksum.h"
#include "io/coding.h"
#include "io/memory_file_system.h"
#include "io/testing/golden.h"
#include "lsm/compaction_iterator.h"
#include "lsm/memtable.h"
#include "lsm/range_del_iterator.h"
#include "lsm/table.h"
#include "lsm/table_builder.h"

namespace cairn::lsm {
namespace {

std::string Frags(const FragmentedRangeTombstones& f) {
  std::string out;
  for (const auto& fr : f.fragments()) {
    out += absl::StrFormat("[%s,%s)", fr.begin, fr.end);
    for (SequenceNumber s : fr.seqs) out += absl::StrFormat(":%d", s);
    out += " ";
  }
  return out;
}

TEST(FragmenterTest, CutsOverlapsIntoSortedPiecesWithTheirSequences) {
  FragmentedRangeTombstones f({{"c", "g", 5}, {"a", "e", 3}, {"f", "h", 7}, {"x", "x", 9}});
  EXPECT_EQ(f.num_tombstones(), 3u);  // the empty one is ignored
  EXPECT_EQ(Frags(f), "[a,c):3 [c,e):5:3 [e,f):5 [f,g):7:5 [g,h):7 ");
  EXPECT_EQ(f.MaxCoveringSeq("a", 100), 3u);
  EXPECT_EQ(f.MaxCoveringSeq("d", 100), 5u);
  EXPECT_EQ(f.MaxCoveringSeq("d", 4), 3u);  // the snapshot sees only the older one
  EXPECT_EQ(f.MaxCoveringSeq("d", 2), 0u);
  EXPECT_EQ(f.MaxCoveringSeq("h", 100), 0u);  // end is exclusive
  EXPECT_EQ(f.MaxCoveringSeq("0", 100), 0u);
  EXPECT_TRUE(f.Covers("d", 4, 100));
  EXPECT_FALSE(f.Covers("d", 5, 100));
  // Clipped re-export fragments back to the same pieces.
  FragmentedRangeTombstones again(f.ToTombstones());
  EXPECT_EQ(Frags(again), Frags(f));
  EXPECT_EQ(Frags(FragmentedRangeTombstones(f.ToTombstones("d", "g"))),
            "[d,e):5:3 [e,f):5 [f,g):7:5 ");
}

TEST(FragmenterTest, FindFragmentWithHintsWalksBothWays) {
  std::vector<RangeTombstone> ts;
  for (int i = 0; i < 1000; ++i) {
    ts.push_back({absl::StrFormat("k%05d", 2 * i), absl::StrFormat("k%05d", 2 * i + 1), 1u + i});
  }
  FragmentedRangeTombstones f(ts);
  ASSERT_EQ(f.fragments().size(), 1000u);
  int hint = -1;
  for (int i = 0; i < 2000; ++i) {
    const int got = f.FindFragment(absl::StrFormat("k%05d", i), hint);
    EXPECT_EQ(got, i % 2 == 0 ? i / 2 : -1) << i;
    if (got >= 0) hint = got;
  }
  for (int i = 1999; i >= 0; --i) {
    const int got = f.FindFragment(absl::StrFormat("k%05d", i), hint);
    EXPECT_EQ(got, i % 2 == 0 ? i / 2 : -1) << i;
    if (got >= 0) hint = got;
  }
}

TEST(MemTableRangeTest, TombstonesAreKeptBesideThePointEntries) {
  MemTable mem;
  EXPECT_TRUE(mem.empty());
  EXPECT_EQ(mem.RangeTombstones(), nullptr);
  mem.Add(1, ValueType::kValue, "b", "v1");
  mem.Add(2, ValueType::kRangeDeletion, "a", "c");
  EXPECT_EQ(mem.num_entries(), 1u);
  EXPECT_EQ(mem.num_range_deletions(), 1u);
  RangeTombstonesPtr first = mem.RangeTombstones();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first, mem.RangeTombstones());  // cached until the next one
  EXPECT_EQ(first->MaxCoveringSeq("b", 10), 2u);
  MemTable::Superseded old;
  EXPECT_FALSE(mem.AddAndFindSuperseded(3, ValueType::kRangeDeletion, "x", "z", &old));
  EXPECT_NE(first, mem.RangeTombstones());
  EXPECT_EQ(mem.RangeTombstoneList().size(), 2u);
  // The point entry is still there for readers at older snapshots.
  ValueType type;
  SequenceNumber seq;
  std::string value;
  ASSERT_TRUE(mem.Get("b", 10, &type, &seq, &value));
  EXPECT_EQ(value, "v1");
  MemTable only_ranges;
  only_ranges.Add(1, ValueType::kRangeDeletion, "a", "b");
  EXPECT_FALSE(only_ranges.empty());  // a flush must write it
}

std::vector<std::string> Walk(InternalIterator* it, bool forward) {
  std::vector<std::string> out;
  if (forward) {
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      out.push_back(absl::StrFormat("%s@%d", ExtractUserKey(it->key()), ExtractTag(it->key()) >> 8));
    }
  } else {
    for (it->SeekToLast(); it->Valid(); it->Prev()) {
      out.insert(out.begin(),
                 absl::StrFormat("%s@%d", ExtractUserKey(it->key()), ExtractTag(it->key()) >> 8));
    }
  }
  return out;
}

TEST(RangeDelIteratorTest, HidesCoveredVersionsAtTheSnapshot) {
  MemTable mem;
  mem.Add(1, ValueType::kValue, "a", "1");
  mem.Add(2, ValueType::kValue, "b", "2");
  mem.Add(3, ValueType::kValue, "c", "3");
  mem.Add(5, ValueType::kValue, "b", "5");  // newer than the tombstone
  RangeTombstoneSet set;
  set.Add(std::make_shared<FragmentedRangeTombstones>(
      std::vector<RangeTombstone>{{"b", "d", 4}}));
  for (bool forward : {true, false}) {
    auto it = NewRangeDelFilterIterator(mem.NewIterator(), set, 10);
    EXPECT_EQ(Walk(it.get(), forward), (std::vector<std::string>{"a@1", "b@5"}));
    auto old = NewRangeDelFilterIterator(mem.NewIterator(), set, 3);  // before the tombstone
    EXPECT_EQ(Walk(old.get(), forward).size(), 4u);
  }
  auto it = NewRangeDelFilterIterator(mem.NewIterator(), set, 10);
  it->Seek(MakeLookupKey("c", 10));
  EXPECT_FALSE(it->Valid());
  it->SeekForPrev(MakeLookupKey("c", 0));
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(ExtractUserKey(it->key()), "b");
}

struct Dropped : CompactionListener {
  void OnValueDropped(std::string_view user_key, ValueType, std::string_view) override {
    keys.emplace_back(user_key);
  }
  std::vector<std::string> keys;
};

TEST(CompactionRangeTest, DropsCoveredEntriesInTheTombstonesStripeOnly) {
  MemTable mem;
  mem.Add(1, ValueType::kValue, "a", "1");
  mem.Add(2, ValueType::kValue, "b", "2");
  mem.Add(4, ValueType::kValue, "c", "4");
  mem.Add(7, ValueType::kValue, "c", "7");  // newer than the tombstone: kept
  auto ranges = std::make_shared<FragmentedRangeTombstones>(
      std::vector<RangeTombstone>{{"a", "d", 6}});
  for (bool with_snapshot : {false, true}) {
    auto input = mem.NewIterator();
    Dropped dropped;
    // A snapshot at 3 still sees a@1 and b@2; c@4 is above it and below
    // the tombstone, so nobody sees it.
    CompactionIterator ci(input.get(), with_snapshot ? std::vector<SequenceNumber>{3}
                                                     : std::vector<SequenceNumber>{},
                          10, {}, &dropped, ranges);
    std::vector<std::string> kept;
    for (ci.SeekToFirst(); ci.Valid(); ci.Next()) {
      kept.push_back(absl::StrFormat("%s@%d", ci.ikey().user_key, ci.ikey().sequence));
    }
    ASSERT_TRUE(ci.status().ok());
    if (with_snapshot) {
      EXPECT_EQ(kept, (std::vector<std::string>{"a@1", "b@2", "c@7"}));
      EXPECT_EQ(dropped.keys, (std::vector<std::string>{"c"}));
    } else {
      EXPECT_EQ(kept, (std::vector<std::string>{"c@7"}));
      EXPECT_EQ(dropped.keys, (std::vector<std::string>{"a", "b", "c"}));
    }
    // c@4 goes as hidden by c@7 (same stripe) before the tombstone is asked.
    EXPECT_EQ(ci.stats().dropped_by_range, with_snapshot ? 0u : 2u);
  }
}

class RangeTableTest : public ::testing::Test {
 protected:
  // One entry and one tombstone, as in docs/table_format.md's second example.
  std::string BuildExample(TableBuilder** out_builder = nullptr) {
    auto file = fs_.NewWritableFile("/r.sst", {});
    EXPECT_TRUE(file.ok());
    TableOptions options;
    options.compress = false;
    options.bloom_bits_per_key = 0;
    options.value_pointer_bytes = [](std::string_view) { return uint64_t{0}; };
    TableBuilder builder(options, file->get());
    std::string k;
    AppendInternalKey(&k, "apple", 3, ValueType::kValue);
    EXPECT_TRUE(builder.Add(k, "red").ok());
    builder.AddRangeTombstone({"b", "d", 4});
    EXPECT_TRUE(builder.Finish().ok());
    EXPECT_TRUE((*file)->Close().ok());
    // The table's key range spans the tombstone.
    EXPECT_EQ(ExtractUserKey(builder.smallest_key()), "apple");
    EXPECT_EQ(ExtractUserKey(builder.largest_key()), "d");
    EXPECT_EQ(builder.NumRangeDeletions(), 1u);
    return *fs_.ReadFileToString("/r.sst");
  }
  absl::StatusOr<std::unique_ptr<Table>> Open(const std::string& bytes) {
    EXPECT_TRUE(fs_.WriteFileFromString("/o.sst", bytes).ok());
    auto file = fs_.NewRandomAccessFile("/o.sst", {});
    if (!file.ok()) return file.status();
    return Table::Open(TableOptions(), *std::move(file), bytes.size(), 1, nullptr, nullptr);
  }
  io::MemoryFileSystem fs_;
};

TEST_F(RangeTableTest, GoldenExampleInFormatDocMatchesBuilder) {
  const std::string bytes = BuildExample();
  const std::string expected =
      cairn::testing::GoldenBytesFromDoc("docs/table_format.md", "table-range-deletion");
  EXPECT_EQ(bytes, expected) << "builder wrote:\n" << [&] {
    std::string dump;
    for (size_t i = 0; i < bytes.size(); ++i) {
      absl::StrAppendFormat(&dump, "%02x%s", static_cast<unsigned char>(bytes[i]),
                            i % 16 == 15 ? "\n" : " ");
    }
    return dump;
  }();
  auto table = Open(bytes);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_NE((*table)->range_tombstones(), nullptr);
  EXPECT_EQ((*table)->range_tombstones()->MaxCoveringSeq("c", 10), 4u);
  EXPECT_TRUE((*table)->VerifyAll().ok());
}

TEST_F(RangeTableTest, DamageAndVersionsAreReportedClearly) {
  const std::string bytes = BuildExample();
  // Version 1 footer over a table that names a range-deletion block.
  std::string v1 = bytes;
  char* footer = v1.data() + v1.size() - kFooterSize;
  io::EncodeFixed32(footer + 48, 1);
  io::EncodeFixed32(footer + 52, io::Checksum32(std::string_view(footer, 52)));
  auto t1 = Open(v1);
  EXPECT_TRUE(absl::IsDataLoss(t1.status())) << t1.status();
  // A flipped byte in the tombstone block fails its checksum.
  auto table = Open(bytes);
  ASSERT_TRUE(table.ok());
  std::string flipped = bytes;
  flipped[(*table)->properties().range_deletion_handle.offset + 2] ^= 0x40;
  EXPECT_TRUE(absl::IsDataLoss(Open(flipped).status()));
  // Malformed contents.
  EXPECT_TRUE(absl::IsDataLoss(DecodeRangeDeletionBlock("\x01\x01z\x01\x61\x04", "x").status()));
  EXPECT_TRUE(absl::IsDataLoss(DecodeRangeDeletionBlock("\x02", "x").status()));
}

}  // namespace
}  // namespace cairn::lsm
