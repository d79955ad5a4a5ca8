// ReadOptions::keys_only (issue 60, item 2): listing the keys of separated
// values reads no value-log byte (the engine's own counters say so), in both
// directions, with bounds, at a snapshot and on a read-only open; the keys,
// value sizes and on-demand values agree with a normal iterator's; and a
// value that cannot be read fails value(), not the listing.
#include <cstdint>
#include <map>
#include <optional>
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

std::string Key(int i) { return absl::StrFormat("key%06d", i); }

Options TestOptions() {
  Options o;
  // Blocks only, no value cache: every value read goes to the value log
  // and is counted there.
  o.cache_size = 0;
  o.block_cache_size = 8 << 20;
  o.value_separation_threshold = 1024;
  o.separate_at_flush_below = 0;
  o.memtable_size = 1 << 20;
  return o;
}

// An entry as an iterator showed it.
struct Shown {
  std::string key;
  uint64_t size = 0;
  bool operator==(const Shown&) const = default;
};

class KeysOnlyIterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = std::make_shared<io::MemoryFileSystem>();
    Open();
  }
  void Open() {
    db_.reset();
    auto db = OpenWithFileSystem(TestOptions(), "/db", fs_);
    ASSERT_OK(db);
    db_ = std::move(*db);
  }

  void Put(const std::string& k, std::string v) {
    ASSERT_OK(db_->Put({}, k, v));
    model_[k] = std::move(v);
  }

  // Every entry, forward or reverse, with value_size() (and not value()).
  static std::vector<Shown> List(DB* db, ReadOptions ro, bool reverse) {
    std::vector<Shown> out;
    auto it = db->NewIterator(ro);
    if (reverse) {
      for (it->SeekToLast(); it->Valid(); it->Prev()) {
        out.push_back({std::string(it->key()), it->value_size()});
      }
    } else {
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        out.push_back({std::string(it->key()), it->value_size()});
      }
    }
    EXPECT_OK(it->status());
    return out;
  }

  std::shared_ptr<io::MemoryFileSystem> fs_;
  std::unique_ptr<DB> db_;
  std::map<std::string, std::string> model_;
};

TEST_F(KeysOnlyIterTest, ListingKeysOf64KiBValuesReadsNoValueLogByte) {
  // 300 values of 64 KiB (19 MiB of value log): 250 in tables, 50 still in
  // the memtable, and a few inline values among them.
  constexpr int kKeys = 300;
  for (int i = 0; i < kKeys; ++i) {
    Put(Key(i), i % 50 == 7 ? Value(i, 100) : Value(i, 64 << 10));
    if (i == 249) {
      ASSERT_OK(db_->Flush());
    }
  }
  ReadOptions keys_only;
  keys_only.keys_only = true;
  const Stats before = db_->GetStats();
  for (bool reverse : {false, true}) {
    const std::vector<Shown> shown = List(db_.get(), keys_only, reverse);
    ASSERT_EQ(shown.size(), static_cast<size_t>(kKeys));
    for (const Shown& s : shown) EXPECT_EQ(s.size, model_[s.key].size()) << s.key;
  }
  const Stats after = db_->GetStats();
  EXPECT_EQ(after.vlog_reads, before.vlog_reads);
  EXPECT_EQ(after.vlog_bytes_read, before.vlog_bytes_read);
  // At most the tables' bytes (two listings: each at most all of them).
  EXPECT_LE(after.table_bytes_read - before.table_bytes_read, 2 * after.sst_bytes);

  // The same listing without keys_only reads every separated value.
  const Stats full_before = db_->GetStats();
  EXPECT_EQ(List(db_.get(), {}, false).size(), static_cast<size_t>(kKeys));
  EXPECT_GE(db_->GetStats().vlog_bytes_read - full_before.vlog_bytes_read,
            uint64_t{kKeys - kKeys / 50} * (64 << 10));

  // value() on demand reads just that value, alone.
  auto it = db_->NewIterator(keys_only);
  it->Seek(Key(123));
  ASSERT_TRUE(it->Valid());
  const Stats one_before = db_->GetStats();
  EXPECT_EQ(it->value(), model_[Key(123)]);
  EXPECT_EQ(db_->GetStats().vlog_reads - one_before.vlog_reads, 1u);
  EXPECT_EQ(it->value_size(), it->value().size());
  it->Next();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(db_->GetStats().vlog_reads - one_before.vlog_reads, 1u);  // not prefetched
}

TEST_F(KeysOnlyIterTest, AgreesWithANormalIteratorAcrossBoundsSnapshotsAndDirections) {
  std::mt19937 rng(60);
  const Snapshot* snap = nullptr;
  std::map<std::string, std::string> snap_model;
  for (int step = 0; step < 3000; ++step) {
    const std::string k = Key(static_cast<int>(rng() % 400));
    if (rng() % 6 == 0) {
      ASSERT_OK(db_->Delete({}, k));
      model_.erase(k);
    } else {
      // Inline, separated, and the 64 KiB edge of chunking.
      const size_t sizes[] = {0, 200, 1023, 1024, 5000, 64 << 10};
      Put(k, Value(step, sizes[rng() % 6]));
    }
    if (step % 700 == 699) {
      ASSERT_OK(db_->Flush());
    }
    if (step == 1500) {
      snap = db_->GetSnapshot();
      snap_model = model_;
    }
  }
  int compared = 0;
  for (const Snapshot* s : {static_cast<const Snapshot*>(nullptr), snap}) {
    const auto& model = s == nullptr ? model_ : snap_model;
    for (const auto& [lo, hi] : std::vector<std::pair<std::optional<std::string>,
                                                      std::optional<std::string>>>{
             {std::nullopt, std::nullopt}, {Key(50), Key(250)}, {Key(100), std::nullopt},
             {std::nullopt, Key(7)}, {Key(300), Key(300)}}) {
      std::string_view lo_view, hi_view;
      ReadOptions normal;
      normal.snapshot = s;
      if (lo) normal.iterate_lower_bound = &(lo_view = *lo);
      if (hi) normal.iterate_upper_bound = &(hi_view = *hi);
      ReadOptions lazy = normal;
      lazy.keys_only = true;
      for (bool reverse : {false, true}) {
        const std::vector<Shown> want = List(db_.get(), normal, reverse);
        ASSERT_EQ(List(db_.get(), lazy, reverse), want);
        size_t in_model = 0;
        for (const auto& [k, v] : model) in_model += (!lo || k >= *lo) && (!hi || k < *hi);
        EXPECT_EQ(want.size(), in_model);
        ++compared;
      }
      // Values on demand, every other entry, after seeks and turns.
      auto a = db_->NewIterator(normal);
      auto b = db_->NewIterator(lazy);
      a->Seek(Key(120));
      b->Seek(Key(120));
      for (int i = 0; a->Valid(); ++i) {
        ASSERT_TRUE(b->Valid());
        ASSERT_EQ(a->key(), b->key());
        if (i % 2 == 0) {
          ASSERT_EQ(b->value(), a->value()) << a->key();
          ASSERT_EQ(b->value(), model.at(std::string(a->key())));
        }
        if (i == 20) {
          a->Prev();
          b->Prev();
        } else {
          a->Next();
          b->Next();
        }
      }
      EXPECT_FALSE(b->Valid());
      ASSERT_OK(b->status());
    }
  }
  EXPECT_EQ(compared, 20);
  db_->ReleaseSnapshot(snap);
}

TEST_F(KeysOnlyIterTest, ChunkedValueSizeIsItsStoredLength) {
  // Over 64 KiB a value is stored chunked, behind its chunk table: what the
  // pointer gives is that stored length (cairn/iterator.h).
  Put("big", Value(1, 100 << 10));
  ASSERT_OK(db_->Flush());
  ReadOptions ro;
  ro.keys_only = true;
  auto it = db_->NewIterator(ro);
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value_size(),
            (100u << 10) + vlog::ChunkTableSize(100 << 10, vlog::kDefaultValueChunkSize));
  EXPECT_EQ(it->value(), model_["big"]);
  EXPECT_EQ(it->value_size(),
            (100u << 10) + vlog::ChunkTableSize(100 << 10, vlog::kDefaultValueChunkSize));
}

TEST_F(KeysOnlyIterTest, ReadOnlyOpenListsKeysAndADamagedValueFailsOnlyItsRead) {
  for (int i = 0; i < 40; ++i) Put(Key(i), Value(i, 8 << 10));
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->Close());
  db_.reset();
  // Damage the value of key 17 in its segment.
  bool damaged = false;
  auto names = fs_->ListDir("/db");
  ASSERT_OK(names);
  for (const std::string& name : *names) {
    if (!name.ends_with(".vlog")) continue;
    auto contents = fs_->ReadFileToString("/db/" + name);
    ASSERT_OK(contents);
    const size_t at = contents->find(Key(17));
    if (at == std::string::npos) continue;
    (*contents)[at + Key(17).size() + 100] ^= 0x40;
    ASSERT_OK(fs_->WriteFileFromString("/db/" + name, *contents));
    damaged = true;
  }
  ASSERT_TRUE(damaged);
  auto ro_db = OpenForReadOnlyWithFileSystem(TestOptions(), "/db", fs_);
  ASSERT_OK(ro_db);
  ReadOptions ro;
  ro.keys_only = true;
  const Stats before = (*ro_db)->GetStats();
  for (bool reverse : {false, true}) {
    const std::vector<Shown> shown = List(ro_db->get(), ro, reverse);
    ASSERT_EQ(shown.size(), 40u);
    for (const Shown& s : shown) EXPECT_EQ(s.size, 8u << 10);
  }
  EXPECT_EQ((*ro_db)->GetStats().vlog_bytes_read, before.vlog_bytes_read);
  auto it = (*ro_db)->NewIterator(ro);
  it->Seek(Key(16));
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), model_[Key(16)]);
  it->Next();
  ASSERT_TRUE(it->Valid());
  EXPECT_TRUE(it->value().empty());
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(absl::IsDataLoss(it->status())) << it->status();
  // The error stays, as a move's does: nothing more is shown.
  it->Seek(Key(30));
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(absl::IsDataLoss(it->status()));
  // A normal iterator stops at the same entry while moving.
  auto normal = (*ro_db)->NewIterator({});
  normal->Seek(Key(17));
  EXPECT_FALSE(normal->Valid());
  EXPECT_TRUE(absl::IsDataLoss(normal->status()));
}

}  // namespace
}  // namespace cairn
