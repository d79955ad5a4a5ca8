#include "lsm/merging_iterator.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "lsm/dbformat.h"
#include "lsm/memtable.h"

namespace cairn::lsm {
namespace {

using Entries = std::vector<std::pair<std::string, std::string>>;

std::string IKey(std::string_view user_key, SequenceNumber seq) {
  std::string k;
  AppendInternalKey(&k, user_key, seq, ValueType::kValue);
  return k;
}

// VectorIterator walks sorted entries; after `fail_after` moves it turns
// invalid with an IO error, like a table whose next block fails to read.
class VectorIterator : public InternalIterator {
 public:
  explicit VectorIterator(Entries entries, int fail_after = -1)
      : entries_(std::move(entries)), fail_after_(fail_after) {
    std::sort(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
      return CompareInternalKeys(a.first, b.first) < 0;
    });
  }
  bool Valid() const override { return status_.ok() && pos_ >= 0 && pos_ < Size(); }
  void SeekToFirst() override { Move(0); }
  void SeekToLast() override { Move(Size() - 1); }
  void Seek(std::string_view target) override {
    int i = 0;
    while (i < Size() && CompareInternalKeys(entries_[i].first, target) < 0) ++i;
    Move(i);
  }
  void SeekForPrev(std::string_view target) override {
    int i = Size() - 1;
    while (i >= 0 && CompareInternalKeys(entries_[i].first, target) > 0) --i;
    Move(i);
  }
  void Next() override { Move(pos_ + 1); }
  void Prev() override { Move(pos_ - 1); }
  std::string_view key() const override { return entries_[pos_].first; }
  std::string_view value() const override { return entries_[pos_].second; }
  absl::Status status() const override { return status_; }

 private:
  int Size() const { return static_cast<int>(entries_.size()); }
  void Move(int pos) {
    pos_ = pos;
    if (fail_after_ >= 0 && moves_++ >= fail_after_) {
      status_ = absl::UnavailableError("injected read failure");
    }
  }
  Entries entries_;
  int pos_ = -1;
  int fail_after_;
  int moves_ = 0;
  absl::Status status_;
};

std::vector<std::string> ForwardKeys(InternalIterator* it) {
  std::vector<std::string> keys;
  for (it->SeekToFirst(); it->Valid(); it->Next()) keys.emplace_back(it->key());
  return keys;
}

std::vector<std::string> ReverseKeys(InternalIterator* it) {
  std::vector<std::string> keys;
  for (it->SeekToLast(); it->Valid(); it->Prev()) keys.emplace_back(it->key());
  return keys;
}

TEST(MergingIteratorTest, NoChildrenIsEmpty) {
  auto it = NewMergingIterator({});
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

TEST(MergingIteratorTest, InterleavesChildrenInInternalKeyOrder) {
  std::vector<std::unique_ptr<InternalIterator>> children;
  children.push_back(
      std::make_unique<VectorIterator>(Entries{{IKey("a", 1), "a1"}, {IKey("c", 1), "c1"}}));
  children.push_back(std::make_unique<VectorIterator>(Entries{}));
  children.push_back(
      std::make_unique<VectorIterator>(Entries{{IKey("a", 5), "a5"}, {IKey("b", 2), "b2"}}));
  auto it = NewMergingIterator(std::move(children));
  const std::vector<std::string> expected = {IKey("a", 5), IKey("a", 1), IKey("b", 2),
                                             IKey("c", 1)};
  EXPECT_EQ(ForwardKeys(it.get()), expected);
  EXPECT_EQ(ReverseKeys(it.get()), std::vector<std::string>(expected.rbegin(), expected.rend()));
  it->Seek(IKey("a", 3));
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "a1");
  it->SeekForPrev(IKey("b", 1));
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "b2");
  it->Prev();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "a1");
  it->Next();
  it->Next();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "c1");
}

// Random children (some empty, some memtables) against a std::map oracle,
// under random seeks and random direction changes.
TEST(MergingIteratorTest, MatchesStdMapUnderRandomMovesAndDirectionChanges) {
  absl::BitGen gen;
  for (int round = 0; round < 40; ++round) {
    const int num_children = absl::Uniform(absl::IntervalClosed, gen, 1, 8);
    std::vector<Entries> parts(num_children);
    std::vector<std::unique_ptr<MemTable>> mems;
    std::map<std::string, std::string, InternalKeyLess> model;
    const int num_keys = absl::Uniform(gen, 0, 200);
    for (SequenceNumber seq = 1; seq <= static_cast<SequenceNumber>(num_keys); ++seq) {
      const std::string user_key = absl::StrFormat("k%02d", absl::Uniform(gen, 0, 40));
      const std::string ikey = IKey(user_key, seq);
      const std::string value = absl::StrCat("v", seq);
      parts[absl::Uniform(gen, 0, num_children)].emplace_back(ikey, value);
      model[ikey] = value;
    }
    std::vector<std::unique_ptr<InternalIterator>> children;
    for (auto& part : parts) {
      if (absl::Bernoulli(gen, 0.5)) {
        children.push_back(std::make_unique<VectorIterator>(part));
      } else {
        auto mem = std::make_unique<MemTable>();
        for (const auto& [k, v] : part) {
          ParsedInternalKey p;
          ASSERT_TRUE(ParseInternalKey(k, &p));
          mem->Add(p.sequence, p.type, p.user_key, v);
        }
        children.push_back(mem->NewIterator());
        mems.push_back(std::move(mem));
      }
    }
    auto it = NewMergingIterator(std::move(children));

    auto oracle = model.end();  // end() means "not valid".
    for (int step = 0; step < 400; ++step) {
      const std::string target = MakeLookupKey(absl::StrFormat("k%02d", absl::Uniform(gen, 0, 41)),
                                               absl::Uniform<SequenceNumber>(gen, 0, num_keys + 2));
      const bool valid = oracle != model.end();
      switch (valid ? absl::Uniform(gen, 0, 8) : absl::Uniform(gen, 0, 4)) {
        case 0:
          it->Seek(target);
          oracle = model.lower_bound(target);
          break;
        case 1: {
          it->SeekForPrev(target);
          auto ub = model.upper_bound(target);
          oracle = ub == model.begin() ? model.end() : std::prev(ub);
          break;
        }
        case 2:
          it->SeekToFirst();
          oracle = model.begin();
          break;
        case 3:
          it->SeekToLast();
          oracle = model.empty() ? model.end() : std::prev(model.end());
          break;
        case 4:
        case 5:
          it->Next();
          ++oracle;
          break;
        default:
          it->Prev();
          oracle = oracle == model.begin() ? model.end() : std::prev(oracle);
          break;
      }
      ASSERT_EQ(it->Valid(), oracle != model.end()) << "round " << round << " step " << step;
      if (it->Valid()) {
        ASSERT_EQ(it->key(), oracle->first) << "round " << round << " step " << step;
        ASSERT_EQ(it->value(), oracle->second);
      }
      ASSERT_TRUE(it->status().ok());
    }
  }
}

TEST(MergingIteratorTest, DuplicateKeysAcrossChildrenAreAllYieldedInBothDirections) {
  std::vector<std::unique_ptr<InternalIterator>> children;
  children.push_back(
      std::make_unique<VectorIterator>(Entries{{IKey("a", 1), "first"}, {IKey("b", 1), "b"}}));
  children.push_back(
      std::make_unique<VectorIterator>(Entries{{IKey("a", 1), "second"}, {IKey("c", 1), "c"}}));
  auto it = NewMergingIterator(std::move(children));
  std::vector<std::string> values;
  for (it->SeekToFirst(); it->Valid(); it->Next()) values.emplace_back(it->value());
  EXPECT_EQ(values, (std::vector<std::string>{"first", "second", "b", "c"}));
  values.clear();
  for (it->SeekToLast(); it->Valid(); it->Prev()) values.emplace_back(it->value());
  EXPECT_EQ(values, (std::vector<std::string>{"c", "b", "second", "first"}));

  // Turning around on a duplicate steps to its twin, not past it.
  it->SeekToFirst();
  it->Next();
  ASSERT_EQ(it->value(), "second");
  it->Prev();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "first");
  it->Next();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "second");
  it->Next();
  it->Prev();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "second");
}

TEST(MergingIteratorTest, ChildThatFailsToOpenMakesTheMergeInvalid) {
  std::vector<std::unique_ptr<InternalIterator>> children;
  children.push_back(std::make_unique<VectorIterator>(Entries{{IKey("a", 1), "a"}}));
  children.push_back(NewErrorIterator(absl::DataLossError("table 7: bad footer")));
  children.push_back(NewErrorIterator(absl::InternalError("second error")));
  auto it = NewMergingIterator(std::move(children));
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(it->status().message(), "table 7: bad footer");
  it->Seek(IKey("a", 5));
  EXPECT_FALSE(it->Valid());
}

TEST(MergingIteratorTest, ChildFailingMidScanStopsTheMergeWithItsError) {
  Entries healthy, failing;
  for (int i = 0; i < 10; ++i) {
    healthy.emplace_back(IKey(absl::StrFormat("k%02d", 2 * i), 1), "h");
    failing.emplace_back(IKey(absl::StrFormat("k%02d", 2 * i + 1), 1), "f");
  }
  std::vector<std::unique_ptr<InternalIterator>> children;
  children.push_back(std::make_unique<VectorIterator>(healthy));
  children.push_back(std::make_unique<VectorIterator>(failing, /*fail_after=*/3));
  auto it = NewMergingIterator(std::move(children));
  int seen = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++seen;
  // The failing child yields 3 entries before its 4th move fails; the merge
  // must stop there rather than go on with the healthy child alone.
  EXPECT_LT(seen, 10);
  EXPECT_EQ(it->status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace cairn::lsm
