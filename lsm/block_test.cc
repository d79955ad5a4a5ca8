// Tests for BlockBuilder and Block: round trips against a std::map oracle,
// restart points, every seek direction, and corrupt bytes.
#include <map>
#include <random>
#include <string>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/coding.h"
#include "lsm/block.h"
#include "lsm/block_builder.h"
#include "lsm/dbformat.h"

namespace cairn::lsm {
namespace {

using Model = std::map<std::string, std::string, InternalKeyLess>;

std::string IKey(std::string_view user_key, SequenceNumber seq,
                 ValueType type = ValueType::kValue) {
  std::string k;
  AppendInternalKey(&k, user_key, seq, type);
  return k;
}

std::string BuildBlock(const Model& model, int restart_interval = kDefaultBlockRestartInterval) {
  BlockBuilder builder(restart_interval);
  for (const auto& [k, v] : model) builder.Add(k, v);
  return std::string(builder.Finish());
}

std::shared_ptr<const Block> MustCreate(std::string contents) {
  auto block = Block::Create(std::move(contents), "test block");
  EXPECT_TRUE(block.ok()) << block.status();
  return block.ok() ? *block : nullptr;
}

// Keys sharing prefixes (so prefix compression matters), several versions of
// some user keys, and values of varied length.
Model RandomModel(std::mt19937_64& rng, int n) {
  Model model;
  std::uniform_int_distribution<int> user(0, n / 2), seq(1, 1000), len(0, 40);
  while (static_cast<int>(model.size()) < n) {
    std::string user_key = absl::StrFormat("user%06d", user(rng));
    model[IKey(user_key, seq(rng))] = std::string(len(rng), static_cast<char>('a' + seq(rng) % 26));
  }
  return model;
}

TEST(BlockTest, EmptyBlockHasNoEntries) {
  BlockBuilder builder;
  EXPECT_TRUE(builder.empty());
  auto block = MustCreate(std::string(builder.Finish()));
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->num_restarts(), 1u);
  auto it = block->NewIterator();
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  it->SeekToLast();
  EXPECT_FALSE(it->Valid());
  it->Seek(IKey("a", 1));
  EXPECT_FALSE(it->Valid());
  it->SeekForPrev(IKey("a", 1));
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

TEST(BlockTest, RestartPointEverySixteenEntries) {
  std::mt19937_64 rng(1);
  Model model = RandomModel(rng, 100);
  auto block = MustCreate(BuildBlock(model));
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->num_restarts(), 7u);  // ceil(100 / 16)
}

TEST(BlockTest, PrefixCompressionShrinksSharedKeys) {
  Model model;
  for (int i = 0; i < 64; ++i) model[IKey(absl::StrFormat("a-long-common-prefix-%04d", i), 5)] = "v";
  const std::string compressed = BuildBlock(model);
  size_t raw = 0;
  for (const auto& [k, v] : model) raw += k.size() + v.size();
  EXPECT_LT(compressed.size(), raw / 2);
}

TEST(BlockTest, ForwardAndBackwardIterationMatchModel) {
  for (int restart_interval : {1, 2, 16}) {
    std::mt19937_64 rng(restart_interval);
    Model model = RandomModel(rng, 500);
    auto block = MustCreate(BuildBlock(model, restart_interval));
    ASSERT_NE(block, nullptr);
    auto it = block->NewIterator();
    auto m = model.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
      ASSERT_NE(m, model.end());
      EXPECT_EQ(it->key(), m->first);
      EXPECT_EQ(it->value(), m->second);
    }
    EXPECT_EQ(m, model.end());
    auto r = model.rbegin();
    for (it->SeekToLast(); it->Valid(); it->Prev(), ++r) {
      ASSERT_NE(r, model.rend());
      EXPECT_EQ(it->key(), r->first);
      EXPECT_EQ(it->value(), r->second);
    }
    EXPECT_EQ(r, model.rend());
    EXPECT_TRUE(it->status().ok());
  }
}

TEST(BlockTest, SeekAndSeekForPrevMatchModel) {
  std::mt19937_64 rng(42);
  Model model = RandomModel(rng, 400);
  auto block = MustCreate(BuildBlock(model));
  ASSERT_NE(block, nullptr);
  auto it = block->NewIterator();
  std::uniform_int_distribution<int> user(-5, 210), seq(0, 1001);
  for (int i = 0; i < 2000; ++i) {
    const std::string target = IKey(absl::StrFormat("user%06d", user(rng)), seq(rng),
                                    kValueTypeForSeek);
    it->Seek(target);
    auto lb = model.lower_bound(target);
    if (lb == model.end()) {
      EXPECT_FALSE(it->Valid());
    } else {
      ASSERT_TRUE(it->Valid());
      EXPECT_EQ(it->key(), lb->first);
      // Prev from a Seek lands on the entry before it.
      it->Prev();
      if (lb == model.begin()) {
        EXPECT_FALSE(it->Valid());
      } else {
        ASSERT_TRUE(it->Valid());
        EXPECT_EQ(it->key(), std::prev(lb)->first);
      }
    }
    it->SeekForPrev(target);
    auto ub = model.upper_bound(target);
    if (ub == model.begin()) {
      EXPECT_FALSE(it->Valid());
    } else {
      ASSERT_TRUE(it->Valid());
      EXPECT_EQ(it->key(), std::prev(ub)->first);
      it->Next();
      if (ub == model.end()) {
        EXPECT_FALSE(it->Valid());
      } else {
        ASSERT_TRUE(it->Valid());
        EXPECT_EQ(it->key(), ub->first);
      }
    }
  }
  EXPECT_TRUE(it->status().ok());
}

TEST(BlockTest, SeekToExactKeyFindsIt) {
  std::mt19937_64 rng(7);
  Model model = RandomModel(rng, 300);
  auto block = MustCreate(BuildBlock(model));
  ASSERT_NE(block, nullptr);
  auto it = block->NewIterator();
  for (const auto& [k, v] : model) {
    it->Seek(k);
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->key(), k);
    it->SeekForPrev(k);
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->key(), k);
  }
}

TEST(BlockTest, BadRestartCountIsDataLoss) {
  Model model{{IKey("a", 1), "x"}, {IKey("b", 1), "y"}};
  std::string contents = BuildBlock(model);
  std::string too_many = contents;
  io::EncodeFixed32(too_many.data() + too_many.size() - 4, 1000);
  EXPECT_EQ(Block::Create(too_many, "b").status().code(), absl::StatusCode::kDataLoss);
  std::string zero = contents;
  io::EncodeFixed32(zero.data() + zero.size() - 4, 0);
  EXPECT_EQ(Block::Create(zero, "b").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(Block::Create("ab", "b").status().code(), absl::StatusCode::kDataLoss);
}

TEST(BlockTest, RestartPointOutsideEntriesIsDataLoss) {
  Model model;
  for (int i = 0; i < 40; ++i) model[IKey(absl::StrFormat("k%03d", i), 1)] = "v";
  std::string contents = BuildBlock(model);  // 3 restart points
  const size_t restarts = contents.size() - 4 - 3 * 4;
  io::EncodeFixed32(contents.data() + restarts + 4, static_cast<uint32_t>(restarts + 100));
  auto block = Block::Create(contents, "origin-name");
  EXPECT_EQ(block.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(block.status().message()), testing::HasSubstr("origin-name"));
}

TEST(BlockTest, TruncatedEntryIsDataLossNotCrash) {
  Model model{{IKey("apple", 3), std::string(50, 'x')}};
  std::string contents = BuildBlock(model);
  // Claim a value longer than the block: rewrite the value-length varint.
  ASSERT_EQ(contents[2], 50);
  contents[2] = 120;
  auto block = MustCreate(contents);
  ASSERT_NE(block, nullptr);
  auto it = block->NewIterator();
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(it->status().message()), testing::HasSubstr("block offset 0"));
  // The error is sticky.
  it->Seek(IKey("apple", 3));
  EXPECT_FALSE(it->Valid());
  EXPECT_FALSE(it->status().ok());
}

// Flips every byte and truncates at every length: the block either refuses to
// parse or iterates without reading out of bounds, reporting only DataLoss.
TEST(BlockTest, CorruptionSweepNeverCrashes) {
  std::mt19937_64 rng(99);
  Model model = RandomModel(rng, 40);
  const std::string good = BuildBlock(model, 4);
  auto exercise = [&](std::string bytes) {
    auto block = Block::Create(std::move(bytes), "sweep");
    if (!block.ok()) {
      EXPECT_EQ(block.status().code(), absl::StatusCode::kDataLoss);
      return;
    }
    auto it = (*block)->NewIterator();
    int steps = 0;
    for (it->SeekToFirst(); it->Valid() && steps < 1000; it->Next()) ++steps;
    for (it->SeekToLast(); it->Valid() && steps < 2000; it->Prev()) ++steps;
    for (const auto& [k, v] : model) {
      it->Seek(k);
      it->SeekForPrev(k);
    }
    if (!it->status().ok()) {
      EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss);
    }
  };
  for (size_t i = 0; i < good.size(); ++i) {
    for (unsigned char mask : {0x01, 0x80, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      exercise(bad);
    }
  }
  for (size_t len = 0; len < good.size(); ++len) exercise(good.substr(0, len));
}

TEST(BlockBuilderTest, ResetStartsAFreshBlock) {
  BlockBuilder builder;
  builder.Add(IKey("a", 1), "1");
  const std::string first(builder.Finish());
  builder.Reset();
  EXPECT_TRUE(builder.empty());
  builder.Add(IKey("a", 1), "1");
  EXPECT_EQ(builder.CurrentSizeEstimate(), first.size());
  EXPECT_EQ(std::string(builder.Finish()), first);
}

}  // namespace
}  // namespace cairn::lsm
