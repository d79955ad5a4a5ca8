// Tests for TableBuilder and Table: round trips against a std::map oracle
// (with and without compression), snapshot and deletion semantics of Get,
// bloom and cache counters, the index estimates compactions split by, footer
// checks, a corruption sweep over every byte and every truncation, and the
// golden example of docs/table_format.md.
#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/checksum.h"
#include "io/coding.h"
#include "io/memory_file_system.h"
#include "lsm/block_cache.h"
#include "lsm/dbformat.h"
#include "lsm/read_counters.h"
#include "lsm/table.h"
#include "lsm/table_builder.h"
#include "lsm/table_format.h"

namespace cairn::lsm {
namespace {

using Model = std::map<std::string, std::string, InternalKeyLess>;
using testing::HasSubstr;

std::string IKey(std::string_view user_key, SequenceNumber seq,
                 ValueType type = ValueType::kValue) {
  std::string k;
  AppendInternalKey(&k, user_key, seq, type);
  return k;
}

std::string UserKey(int i) { return absl::StrFormat("key%06d", i); }

// num_keys user keys (even numbers only, so odd ones are absent), each with
// one to three versions; about 15% deletions and 15% value pointers. Values
// repeat a few letters so zstd can shrink them.
Model RandomModel(uint64_t seed, int num_keys) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> versions(1, 3), kind(0, 99), len(0, 120), letter(0, 3);
  Model model;
  SequenceNumber seq = 1;
  for (int i = 0; i < num_keys; ++i) {
    const int n = versions(rng);
    for (int v = 0; v < n; ++v) {
      const int k = kind(rng);
      const ValueType type = k < 15   ? ValueType::kDeletion
                             : k < 30 ? ValueType::kValuePointer
                                      : ValueType::kValue;
      std::string value;
      if (type != ValueType::kDeletion) {
        value.assign(len(rng), static_cast<char>('a' + letter(rng)));
        value += absl::StrFormat("#%d", seq);
      }
      model[IKey(UserKey(2 * i), seq++, type)] = value;
    }
  }
  return model;
}

// What Get must return for user_key at snapshot, according to the model.
TableGetResult Expected(const Model& model, std::string_view user_key, SequenceNumber snapshot) {
  TableGetResult r;
  auto it = model.lower_bound(MakeLookupKey(user_key, snapshot));
  ParsedInternalKey parsed;
  if (it != model.end() && ParseInternalKey(it->first, &parsed) && parsed.user_key == user_key) {
    r.found = true;
    r.type = parsed.type;
    r.sequence = parsed.sequence;
    r.value = it->second;
  }
  return r;
}

class TableTest : public testing::Test {
 protected:
  // Writes model as a table at path and returns the file size.
  uint64_t Build(const Model& model, const TableOptions& options,
                 const std::string& path = "/t.sst") {
    auto file = fs_.NewWritableFile(path, {});
    EXPECT_TRUE(file.ok()) << file.status();
    TableBuilder builder(options, file->get());
    for (const auto& [k, v] : model) EXPECT_TRUE(builder.Add(k, v).ok());
    EXPECT_EQ(builder.NumEntries(), model.size());
    EXPECT_TRUE(builder.Finish().ok());
    EXPECT_TRUE((*file)->Close().ok());
    EXPECT_EQ(builder.FileSize(), (*file)->Size());
    if (!model.empty()) {
      EXPECT_EQ(builder.smallest_key(), model.begin()->first);
      EXPECT_EQ(builder.largest_key(), model.rbegin()->first);
    }
    return builder.FileSize();
  }

  absl::StatusOr<std::unique_ptr<Table>> Open(const TableOptions& options, uint64_t size,
                                              const std::string& path = "/t.sst",
                                              uint64_t number = 1, BlockCache* cache = nullptr) {
    auto file = fs_.NewRandomAccessFile(path, {});
    if (!file.ok()) return file.status();
    return Table::Open(options, *std::move(file), size, number, cache, &counters_);
  }

  static void ExpectIterationMatches(const Table& table, const Model& model) {
    auto it = table.NewIterator({});
    auto m = model.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
      ASSERT_NE(m, model.end());
      ASSERT_EQ(it->key(), m->first);
      ASSERT_EQ(it->value(), m->second);
    }
    EXPECT_EQ(m, model.end());
    auto r = model.rbegin();
    for (it->SeekToLast(); it->Valid(); it->Prev(), ++r) {
      ASSERT_NE(r, model.rend());
      ASSERT_EQ(it->key(), r->first);
      ASSERT_EQ(it->value(), r->second);
    }
    EXPECT_EQ(r, model.rend());
    EXPECT_TRUE(it->status().ok()) << it->status();
  }

  io::MemoryFileSystem fs_;
  ReadCounters counters_;
};

class TableRoundTripTest : public TableTest, public testing::WithParamInterface<bool> {};

TEST_P(TableRoundTripTest, ThousandsOfEntriesReadBackExactly) {
  TableOptions options;
  options.compress = GetParam();
  options.block_size = 1024;
  const Model model = RandomModel(GetParam() ? 11 : 12, 3000);
  const uint64_t size = Build(model, options);
  auto table = Open(options, size);
  ASSERT_TRUE(table.ok()) << table.status();
  const Table& t = **table;

  EXPECT_EQ(t.num_entries(), model.size());
  uint64_t deletions = 0, raw_keys = 0, raw_values = 0;
  for (const auto& [k, v] : model) {
    deletions += ExtractTag(k) % 256 == static_cast<int>(ValueType::kDeletion);
    raw_keys += k.size();
    raw_values += v.size();
  }
  EXPECT_EQ(t.num_deletions(), deletions);
  EXPECT_EQ(t.raw_key_bytes(), raw_keys);
  EXPECT_EQ(t.raw_value_bytes(), raw_values);
  EXPECT_EQ(t.smallest_sequence(), 1u);
  EXPECT_EQ(t.largest_sequence(), model.size());
  EXPECT_GT(t.properties().num_data_blocks, 10u);
  EXPECT_TRUE(t.VerifyAll().ok()) << t.VerifyAll();

  ExpectIterationMatches(t, model);
  // Every user key (present and absent) at the latest state and at a few
  // older snapshots.
  for (int i = 0; i < 6000; ++i) {
    for (SequenceNumber snap : {kMaxSequenceNumber, SequenceNumber{1}, SequenceNumber(i / 2),
                                SequenceNumber(i + 3)}) {
      TableGetResult got;
      ASSERT_TRUE(t.Get({}, MakeLookupKey(UserKey(i), snap), &got).ok());
      const TableGetResult want = Expected(model, UserKey(i), snap);
      ASSERT_EQ(got.found, want.found) << UserKey(i) << " @" << snap;
      if (!want.found) continue;
      EXPECT_EQ(got.type, want.type);
      EXPECT_EQ(got.sequence, want.sequence);
      EXPECT_EQ(got.value, want.value);
    }
  }
}

TEST_P(TableRoundTripTest, SeeksInBothDirectionsMatchModel) {
  TableOptions options;
  options.compress = GetParam();
  options.block_size = 512;
  const Model model = RandomModel(7, 800);
  auto table = Open(options, Build(model, options));
  ASSERT_TRUE(table.ok()) << table.status();
  auto it = (*table)->NewIterator({});
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> key(-3, 1603), seq(0, 2500);
  for (int i = 0; i < 3000; ++i) {
    const std::string target = MakeLookupKey(UserKey(key(rng)), seq(rng));
    it->Seek(target);
    auto lb = model.lower_bound(target);
    ASSERT_EQ(it->Valid(), lb != model.end());
    if (lb != model.end()) {
      EXPECT_EQ(it->key(), lb->first);
      it->Prev();
      ASSERT_EQ(it->Valid(), lb != model.begin());
      if (lb != model.begin()) {
        EXPECT_EQ(it->key(), std::prev(lb)->first);
      }
    }
    it->SeekForPrev(target);
    auto ub = model.upper_bound(target);
    ASSERT_EQ(it->Valid(), ub != model.begin());
    if (ub != model.begin()) {
      EXPECT_EQ(it->key(), std::prev(ub)->first);
      it->Next();
      ASSERT_EQ(it->Valid(), ub != model.end());
      if (ub != model.end()) {
        EXPECT_EQ(it->key(), ub->first);
      }
    }
  }
  EXPECT_TRUE(it->status().ok());
}

INSTANTIATE_TEST_SUITE_P(Compression, TableRoundTripTest, testing::Bool(),
                         [](const auto& info) { return info.param ? "Zstd" : "None"; });

TEST_F(TableTest, CompressionShrinksCompressibleData) {
  const Model model = RandomModel(5, 2000);
  TableOptions plain, zstd;
  plain.compress = false;
  const uint64_t plain_size = Build(model, plain, "/plain.sst");
  const uint64_t zstd_size = Build(model, zstd, "/zstd.sst");
  EXPECT_LT(zstd_size, plain_size * 3 / 4);
}

TEST_F(TableTest, GetHonoursSnapshotsAndDeletions) {
  Model model{{IKey("a", 9), "a9"},
              {IKey("b", 8, ValueType::kDeletion), ""},
              {IKey("b", 5), "b5"},
              {IKey("c", 7, ValueType::kValuePointer), "ptr-bytes"},
              {IKey("c", 3), "c3"}};
  TableOptions options;
  auto table = Open(options, Build(model, options));
  ASSERT_TRUE(table.ok()) << table.status();
  auto get = [&](std::string_view user, SequenceNumber snap) {
    TableGetResult r;
    EXPECT_TRUE((*table)->Get({}, MakeLookupKey(user, snap), &r).ok());
    return r;
  };
  TableGetResult r = get("b", kMaxSequenceNumber);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.type, ValueType::kDeletion);
  EXPECT_EQ(r.sequence, 8u);
  r = get("b", 7);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.type, ValueType::kValue);
  EXPECT_EQ(r.value, "b5");
  EXPECT_FALSE(get("b", 4).found);
  r = get("c", 100);
  EXPECT_EQ(r.type, ValueType::kValuePointer);
  EXPECT_EQ(r.value, "ptr-bytes");
  EXPECT_EQ(get("c", 6).value, "c3");
  EXPECT_EQ(get("a", 9).value, "a9");
  EXPECT_FALSE(get("a", 8).found);
  EXPECT_FALSE(get("", kMaxSequenceNumber).found);
  EXPECT_FALSE(get("bb", kMaxSequenceNumber).found);
  EXPECT_FALSE(get("d", kMaxSequenceNumber).found);
  TableGetResult bad;
  EXPECT_EQ((*table)->Get({}, "short", &bad).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TableTest, BloomFilterRejectsMostAbsentKeysAndCountsProbes) {
  const Model model = RandomModel(9, 2000);
  TableOptions options;
  auto table = Open(options, Build(model, options));
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_TRUE((*table)->has_filter());
  const ReadCounters& c = counters_;
  const uint64_t reads_before = c.block_reads;
  for (int i = 0; i < 2000; ++i) {
    TableGetResult r;
    ASSERT_TRUE((*table)->Get({}, MakeLookupKey(UserKey(2 * i + 1), kMaxSequenceNumber), &r).ok());
    EXPECT_FALSE(r.found);
  }
  EXPECT_EQ(c.bloom_probes, 2000u);
  EXPECT_GT(c.bloom_rejections, 1940u);  // about 1% false positives expected
  EXPECT_EQ(c.bloom_rejections + c.bloom_false_positives, 2000u);
  // Only false positives touched a data block.
  EXPECT_EQ(c.block_reads - reads_before, c.bloom_false_positives.load());
}

TEST_F(TableTest, NoFilterWhenBitsPerKeyIsZero) {
  const Model model = RandomModel(9, 100);
  TableOptions options;
  options.bloom_bits_per_key = 0;
  auto table = Open(options, Build(model, options));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_FALSE((*table)->has_filter());
  TableGetResult r;
  ASSERT_TRUE((*table)->Get({}, MakeLookupKey(UserKey(1), kMaxSequenceNumber), &r).ok());
  EXPECT_FALSE(r.found);
  EXPECT_EQ(counters_.bloom_probes, 0u);
  ExpectIterationMatches(**table, model);
}

// For splitting compactions: index separators spread over the table, and
// block offsets that grow with the key, from the index alone.
TEST_F(TableTest, IndexSamplesAndOffsetsNeedNoDataBlock) {
  const Model model = RandomModel(5, 2000);
  for (int bloom_bits : {10, 0}) {
    SCOPED_TRACE(bloom_bits);
    TableOptions options;
    options.compress = false;
    options.bloom_bits_per_key = bloom_bits;
    const uint64_t size = Build(model, options);
    auto table = Open(options, size);
    ASSERT_TRUE(table.ok()) << table.status();
    const uint64_t reads_before = counters_.block_reads;

    const std::vector<std::string> samples = (*table)->SampleIndexKeys(16);
    EXPECT_GE(samples.size(), 16u);
    EXPECT_LE(samples.size(), 32u);
    EXPECT_TRUE(std::is_sorted(samples.begin(), samples.end(), InternalKeyLess()));

    auto offset = [&](int i) {
      return (*table)->ApproximateOffsetOf(MakeLookupKey(UserKey(i), kMaxSequenceNumber));
    };
    const uint64_t data_end =
        (*table)->ApproximateOffsetOf(MakeLookupKey("zzz", kMaxSequenceNumber));
    EXPECT_LT(data_end, size);  // the index and properties follow the data
    EXPECT_EQ(offset(0), 0u);
    uint64_t last = 0;
    for (int i = 0; i < 4000; i += 97) {
      EXPECT_GE(offset(i), last) << i;
      last = offset(i);
    }
    EXPECT_LE(last, data_end);
    // Keys and values are spread evenly, so half the keys lie about halfway.
    EXPECT_NEAR(static_cast<double>(offset(2000)) / data_end, 0.5, 0.1);
    EXPECT_EQ(counters_.block_reads, reads_before);
  }
}

// Property tag 9 (2026-12-07): the value-log bytes a table's pointers name,
// summed by the builder's callback, read back; a table without it (written
// before, or by a builder without the callback) says so. And the
// interpolated offsets size estimates use: monotone, and finer than a block.
TEST_F(TableTest, ValuePointerBytesAndInterpolatedOffsets) {
  const Model model = RandomModel(9, 4000);
  TableOptions options;
  options.block_size = 1024;
  options.value_pointer_bytes = [](std::string_view pointer) -> uint64_t {
    return 1000 + pointer.size();
  };
  uint64_t want = 0, pointers = 0;
  for (const auto& [k, v] : model) {
    if (ExtractTag(k) % 256 == static_cast<int>(ValueType::kValuePointer)) {
      want += 1000 + v.size();
      ++pointers;
    }
  }
  ASSERT_GT(pointers, 0u);
  auto table = Open(options, Build(model, options));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_TRUE((*table)->properties().has_value_pointer_bytes);
  EXPECT_EQ((*table)->properties().value_pointer_bytes, want);
  EXPECT_EQ((*table)->properties().num_value_pointers, pointers);

  TableOptions plain;
  plain.block_size = 1024;
  auto old = Open(plain, Build(model, plain, "/old.sst"), "/old.sst", 2);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_FALSE((*old)->properties().has_value_pointer_bytes);
  EXPECT_EQ((*old)->properties().value_pointer_bytes, 0u);

  const std::string smallest = UserKey(0);
  const double end = (*table)->InterpolatedOffsetOf("zzz", smallest);
  EXPECT_EQ(end, static_cast<double>((*table)->DataEnd()));
  EXPECT_EQ((*table)->InterpolatedOffsetOf("", smallest), 0.0);
  double last = 0;
  for (int i = 0; i < 8000; i += 7) {
    const double at = (*table)->InterpolatedOffsetOf(UserKey(i), smallest);
    ASSERT_GE(at, last) << i;
    last = at;
  }
  // A twentieth of the keys, anywhere, is about a twentieth of the data
  // (their values' lengths vary, so only about).
  for (int from : {0, 1000, 3998, 7000}) {
    const double share = ((*table)->InterpolatedOffsetOf(UserKey(from + 400), smallest) -
                          (*table)->InterpolatedOffsetOf(UserKey(from), smallest)) /
                         end;
    EXPECT_NEAR(share, 0.05, 0.01) << from;
  }
}

TEST_F(TableTest, BlockCacheServesRepeatedReads) {
  const Model model = RandomModel(4, 500);
  TableOptions options;
  options.block_size = 256;
  BlockCache cache(1 << 20);
  auto table = Open(options, Build(model, options), "/t.sst", 7, &cache);
  ASSERT_TRUE(table.ok()) << table.status();
  const std::string present = ExtractUserKey(model.begin()->first).data();
  const std::string lookup = MakeLookupKey(ExtractUserKey(model.begin()->first), kMaxSequenceNumber);
  TableGetResult r;
  ASSERT_TRUE((*table)->Get({}, lookup, &r).ok());
  EXPECT_TRUE(r.found);
  EXPECT_EQ(counters_.block_cache_misses, 1u);
  EXPECT_EQ(counters_.block_cache_hits, 0u);
  const uint64_t reads = counters_.block_reads;
  ASSERT_TRUE((*table)->Get({}, lookup, &r).ok());
  EXPECT_EQ(counters_.block_cache_hits, 1u);
  EXPECT_EQ(counters_.block_reads, reads);  // no device read
  EXPECT_GT(cache.usage(), 0u);

  // fill_cache = false reads without inserting.
  TableReadOptions no_fill;
  no_fill.fill_cache = false;
  const size_t usage = cache.usage();
  auto it = (*table)->NewIterator(no_fill);
  int n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  EXPECT_EQ(n, static_cast<int>(model.size()));
  EXPECT_EQ(cache.usage(), usage);
  EXPECT_EQ(counters_.block_cache_misses + counters_.block_cache_hits,
            2 + (*table)->properties().num_data_blocks);
}

TEST_F(TableTest, EmptyTableOpensAndHoldsNothing) {
  TableOptions options;
  auto table = Open(options, Build({}, options));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ((*table)->num_entries(), 0u);
  auto it = (*table)->NewIterator({});
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  it->SeekForPrev(IKey("z", 1));
  EXPECT_FALSE(it->Valid());
  TableGetResult r;
  EXPECT_TRUE((*table)->Get({}, MakeLookupKey("a", 5), &r).ok());
  EXPECT_FALSE(r.found);
  EXPECT_TRUE((*table)->VerifyAll().ok());
}

TEST_F(TableTest, BuilderRejectsOutOfOrderAndMalformedKeys) {
  auto file = fs_.NewWritableFile("/bad.sst", {});
  ASSERT_TRUE(file.ok());
  TableBuilder builder(TableOptions{}, file->get());
  ASSERT_TRUE(builder.Add(IKey("b", 5), "x").ok());
  EXPECT_EQ(builder.Add(IKey("b", 5), "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(builder.Add(IKey("b", 6), "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(builder.Add(IKey("a", 9), "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(builder.Add("short", "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(builder.Add(IKey("b", 4), "x").ok());
  EXPECT_EQ(builder.NumEntries(), 2u);
  builder.Abandon();
  EXPECT_FALSE(builder.Add(IKey("c", 1), "x").ok());
}

TEST_F(TableTest, ShortFileIsDataLoss) {
  ASSERT_TRUE(fs_.WriteFileFromString("/short.sst", "tiny").ok());
  auto table = Open(TableOptions{}, 4, "/short.sst");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(table.status().message()), HasSubstr("/short.sst"));
}

TEST_F(TableTest, BadMagicIsNotAnSstFile) {
  ASSERT_TRUE(fs_.WriteFileFromString("/junk.sst", std::string(200, 'j')).ok());
  auto table = Open(TableOptions{}, 200, "/junk.sst");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(table.status().message()), HasSubstr("not an SST file"));
}

TEST_F(TableTest, UnknownVersionIsRefusedClearly) {
  TableOptions options;
  const uint64_t size = Build(RandomModel(1, 10), options);
  auto bytes = fs_.ReadFileToString("/t.sst");
  ASSERT_TRUE(bytes.ok());
  // Rewrite the version and re-seal the footer, as a newer build would.
  char* footer = bytes->data() + size - kFooterSize;
  io::EncodeFixed32(footer + 48, kTableFormatVersion + 1);
  io::EncodeFixed32(footer + 52, io::Checksum32(std::string_view(footer, 52)));
  ASSERT_TRUE(fs_.WriteFileFromString("/t.sst", *bytes).ok());
  auto table = Open(options, size);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(table.status().message()),
              HasSubstr(absl::StrCat("version ", kTableFormatVersion + 1)));
}

// Flips every byte of a small table, and truncates it at every length. Every
// byte is covered by a checksum or the magic, so each mutation must be caught
// by Open or VerifyAll as DataLoss; and no read may ever return data that
// differs from the model.
TEST_F(TableTest, CorruptionSweepNeverCrashesOrLies) {
  Model model;
  for (int i = 0; i < 12; ++i) model[IKey(UserKey(i), 100 + i)] = absl::StrFormat("value-%d", i);
  model[IKey(UserKey(3), 50, ValueType::kDeletion)] = "";
  TableOptions options;
  options.block_size = 64;  // several data blocks
  const uint64_t size = Build(model, options, "/good.sst");
  auto good = fs_.ReadFileToString("/good.sst");
  ASSERT_TRUE(good.ok());

  auto check = [&](const std::string& bytes, const std::string& what) {
    ASSERT_TRUE(fs_.WriteFileFromString("/bad.sst", bytes).ok());
    auto table = Open(options, bytes.size(), "/bad.sst");
    if (!table.ok()) {
      EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss) << what << table.status();
      return;
    }
    const Table& t = **table;
    EXPECT_EQ(t.VerifyAll().code(), absl::StatusCode::kDataLoss) << what;
    // Whatever reads still succeed must agree with the model.
    auto it = t.NewIterator({});
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      auto m = model.find(std::string(it->key()));
      ASSERT_NE(m, model.end()) << what;
      EXPECT_EQ(it->value(), m->second) << what;
    }
    if (!it->status().ok()) {
      EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss) << what;
    }
    for (int i = 0; i < 13; ++i) {
      TableGetResult r;
      absl::Status s = t.Get({}, MakeLookupKey(UserKey(i), kMaxSequenceNumber), &r);
      if (!s.ok()) {
        EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << what;
        continue;
      }
      const TableGetResult want = Expected(model, UserKey(i), kMaxSequenceNumber);
      // A damaged filter may only hide keys behind a DataLoss, never here:
      // the filter is checksummed, so a found/not-found answer is exact.
      EXPECT_EQ(r.found, want.found) << what << " key " << i;
      EXPECT_EQ(r.value, want.value) << what << " key " << i;
    }
  };
  for (size_t i = 0; i < size; ++i) {
    std::string bad = *good;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    check(bad, absl::StrFormat("flip at %d: ", i));
  }
  for (size_t len = 0; len < size; ++len) {
    check(good->substr(0, len), absl::StrFormat("truncate to %d: ", len));
  }
}

TEST_F(TableTest, ReadErrorsNameFileAndOffset) {
  Model model{{IKey("a", 1), "x"}, {IKey("b", 1), "y"}};
  TableOptions options;
  options.compress = false;
  Build(model, options);
  auto bytes = fs_.ReadFileToString("/t.sst");
  ASSERT_TRUE(bytes.ok());
  (*bytes)[4] ^= 1;  // inside the first data block, which starts at offset 0
  ASSERT_TRUE(fs_.WriteFileFromString("/t.sst", *bytes).ok());
  auto table = Open(options, bytes->size());
  ASSERT_TRUE(table.ok());
  TableGetResult r;
  absl::Status s = (*table)->Get({}, MakeLookupKey("a", 5), &r);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/t.sst: block at offset 0"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("checksum"));
  absl::Status v = (*table)->VerifyAll();
  EXPECT_EQ(v.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(v.message()), HasSubstr("/t.sst: block at offset 0"));
}

// The worked example of docs/table_format.md: the hex between the marker
// lines must be exactly what TableBuilder writes for these entries.
TEST_F(TableTest, GoldenExampleInFormatDocMatchesBuilder) {
  std::ifstream in(std::string(CAIRN_SOURCE_DIR) + "/docs/table_format.md");
  ASSERT_TRUE(in) << "docs/table_format.md not found";
  std::string line, hex;
  bool inside = false, seen_end = false;
  while (std::getline(in, line)) {
    if (line.find("<!-- golden-table-begin -->") != std::string::npos) {
      inside = true;
      continue;
    }
    if (line.find("<!-- golden-table-end -->") != std::string::npos) {
      seen_end = inside;
      break;
    }
    if (!inside || line.rfind("```", 0) == 0) continue;
    std::istringstream tokens(line.substr(0, line.find('#')));
    std::string token;
    while (tokens >> token) {
      ASSERT_EQ(token.size(), 2u) << "bad hex token '" << token << "' in: " << line;
      hex += token;
    }
  }
  ASSERT_TRUE(seen_end) << "golden markers missing";
  std::string expected;
  for (size_t i = 0; i < hex.size(); i += 2) {
    expected.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }

  Model model{{IKey("apple", 3), "red"},
              {IKey("apple", 1, ValueType::kDeletion), ""},
              {IKey("banana", 2), "yellow"}};
  TableOptions options;
  options.compress = false;
  options.bloom_bits_per_key = 10;
  // As a DB's tables do: tag 9 is written (0 here, no pointers).
  options.value_pointer_bytes = [](std::string_view) { return uint64_t{0}; };
  const uint64_t size = Build(model, options);
  auto bytes = fs_.ReadFileToString("/t.sst");
  ASSERT_TRUE(bytes.ok());
  ASSERT_EQ(bytes->size(), size);
  EXPECT_EQ(*bytes, expected) << "builder wrote:\n" << [&] {
    std::string dump;
    for (size_t i = 0; i < bytes->size(); ++i) {
      absl::StrAppendFormat(&dump, "%02x%s", static_cast<unsigned char>((*bytes)[i]),
                            i % 16 == 15 ? "\n" : " ");
    }
    return dump;
  }();
  auto table = Open(options, size);
  ASSERT_TRUE(table.ok()) << table.status();
  ExpectIterationMatches(**table, model);
}

}  // namespace
}  // namespace cairn::lsm
