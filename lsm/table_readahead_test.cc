// Tests for an iterator's readahead (TableReadOptions::readahead_size): the
// automatic pattern (single blocks until two are taken in file order, then
// reads growing from kInitialReadahead to kMaxReadahead, starting over after
// a jump), fixed-size reads for compaction inputs, backward iteration, the
// block cache, and damage found inside a read-ahead buffer.
#include <map>
#include <string>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
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

std::string Key(int i) {
  std::string k;
  AppendInternalKey(&k, absl::StrFormat("key%07d", i), 1, ValueType::kValue);
  return k;
}

class TableReadaheadTest : public testing::Test {
 protected:
  // num entries of value_size bytes in blocks of about block_size bytes,
  // uncompressed, so the table's data bytes are known.
  void Build(int num, size_t value_size, size_t block_size) {
    for (int i = 0; i < num; ++i) {
      model_[Key(i)] = std::string(value_size, static_cast<char>('a' + i % 26));
    }
    options_.block_size = block_size;
    options_.compress = false;
    auto file = fs_.NewWritableFile("/t.sst", {});
    ASSERT_TRUE(file.ok());
    TableBuilder builder(options_, file->get());
    for (const auto& [k, v] : model_) ASSERT_TRUE(builder.Add(k, v).ok());
    ASSERT_TRUE(builder.Finish().ok());
    ASSERT_TRUE((*file)->Close().ok());
    size_ = builder.FileSize();
  }

  void Open(BlockCache* cache = nullptr) {
    auto file = fs_.NewRandomAccessFile("/t.sst", {});
    ASSERT_TRUE(file.ok());
    auto table = Table::Open(options_, *std::move(file), size_, 1, cache, &counters_);
    ASSERT_TRUE(table.ok()) << table.status();
    table_ = *std::move(table);
    // Count only what the tests' reads do, not Open's.
    counters_.block_reads = 0;
    counters_.block_bytes_read = 0;
  }

  // The data blocks' bytes: everything before the filter or properties.
  uint64_t DataBytes() {
    auto handles = table_->DataBlockHandles();
    EXPECT_TRUE(handles.ok());
    return handles->back().offset + handles->back().size + kBlockTrailerSize;
  }

  // Scans forward from the first entry and checks every entry.
  void ScanAll(const TableReadOptions& ro) {
    auto it = table_->NewIterator(ro);
    auto m = model_.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
      ASSERT_NE(m, model_.end());
      ASSERT_EQ(it->key(), m->first);
      ASSERT_EQ(it->value(), m->second);
    }
    EXPECT_EQ(m, model_.end());
    EXPECT_TRUE(it->status().ok()) << it->status();
  }

  io::MemoryFileSystem fs_;
  TableOptions options_;
  Model model_;
  uint64_t size_ = 0;
  ReadCounters counters_;
  std::unique_ptr<Table> table_;
};

TEST_F(TableReadaheadTest, AutomaticReadaheadScansInFewReads) {
  Build(4000, 200, 1024);  // about 800 KiB in about 800 blocks
  Open();
  const uint64_t blocks = table_->properties().num_data_blocks;
  ASSERT_GT(blocks, 600u);
  ScanAll({});
  // Two single blocks, then reads of 8, 16, ..., 256 KiB beyond their block.
  EXPECT_LE(counters_.block_reads, 12u);
  EXPECT_GE(counters_.block_bytes_read, DataBytes());
  EXPECT_LE(counters_.block_bytes_read, DataBytes() + kMaxReadahead + 4096);
}

TEST_F(TableReadaheadTest, FirstBlocksAfterASeekAreReadAlone) {
  Build(4000, 200, 1024);
  Open();
  auto it = table_->NewIterator({});
  it->Seek(Key(2000));
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(counters_.block_reads, 1u);
  const uint64_t one_block = counters_.block_bytes_read;
  EXPECT_LT(one_block, 2048u);
  // Into the next block: one more read of one block.
  int key = 2000;
  auto step_to_next_block = [&] {
    const uint64_t reads = counters_.block_reads;
    while (counters_.block_reads == reads) {
      it->Next();
      ++key;
      ASSERT_TRUE(it->Valid());
      ASSERT_EQ(it->key(), Key(key));
    }
  };
  step_to_next_block();
  EXPECT_EQ(counters_.block_reads, 2u);
  EXPECT_LT(counters_.block_bytes_read, 2 * one_block + 512);
  // The third block in order starts the readahead: one read covering the
  // block and kInitialReadahead beyond it.
  step_to_next_block();
  EXPECT_EQ(counters_.block_reads, 3u);
  const uint64_t third = counters_.block_bytes_read - 2 * one_block;
  EXPECT_GE(third + 1024, kInitialReadahead);
  // The blocks it covered come without a read.
  for (int i = 0; i < 20; ++i) {
    it->Next();
    ASSERT_TRUE(it->Valid());
    ASSERT_EQ(it->key(), Key(++key));
  }
  EXPECT_EQ(counters_.block_reads, 3u);

  // A jump starts over: one block.
  const uint64_t before = counters_.block_bytes_read;
  it->Seek(Key(100));
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(counters_.block_reads, 4u);
  EXPECT_LT(counters_.block_bytes_read - before, 2048u);
}

TEST_F(TableReadaheadTest, FixedReadaheadReadsAtLeastThatMuch) {
  Build(4000, 200, 1024);
  Open();
  TableReadOptions ro;
  ro.readahead_size = 64 * 1024;
  ScanAll(ro);
  const uint64_t data = DataBytes();
  EXPECT_LE(counters_.block_reads, data / (64 * 1024) + 2);
  EXPECT_GE(counters_.block_reads, data / (64 * 1024));
  // Each read starts at its block's device block, so a block cut off at the
  // end of one read is read again by the next.
  EXPECT_LE(counters_.block_bytes_read, data + 64 * 1024 + counters_.block_reads * (4096 + 2048));
}

TEST_F(TableReadaheadTest, BackwardScansAndSeeksStayExact) {
  Build(3000, 150, 512);
  Open();
  for (size_t fixed : {size_t{0}, size_t{4096}, size_t{1} << 20}) {
    TableReadOptions ro;
    ro.readahead_size = fixed;
    auto it = table_->NewIterator(ro);
    auto r = model_.rbegin();
    for (it->SeekToLast(); it->Valid(); it->Prev(), ++r) {
      ASSERT_NE(r, model_.rend());
      ASSERT_EQ(it->key(), r->first);
      ASSERT_EQ(it->value(), r->second);
    }
    EXPECT_EQ(r, model_.rend());
    // Seeks back and forth, each followed by a short scan.
    for (int target : {2900, 10, 1500, 1499, 2999, 0, 700}) {
      it->Seek(Key(target));
      for (int i = target; i < std::min(target + 40, 3000); ++i) {
        ASSERT_TRUE(it->Valid()) << fixed << " " << target;
        ASSERT_EQ(it->key(), Key(i));
        ASSERT_EQ(it->value(), model_[Key(i)]);
        it->Next();
      }
    }
    EXPECT_TRUE(it->status().ok()) << it->status();
  }
}

TEST_F(TableReadaheadTest, CachedBlocksNeedNoRead) {
  Build(2000, 200, 1024);
  BlockCache cache(64 << 20);
  Open(&cache);
  ScanAll({});
  const uint64_t reads = counters_.block_reads;
  EXPECT_GT(reads, 0u);
  ScanAll({});
  EXPECT_EQ(counters_.block_reads, reads);
  TableReadOptions fixed;
  fixed.readahead_size = 1 << 20;
  ScanAll(fixed);
  EXPECT_EQ(counters_.block_reads, reads);
}

TEST_F(TableReadaheadTest, DamageInsideAReadaheadBufferIsDataLoss) {
  Build(2000, 200, 1024);
  Open();
  auto handles = table_->DataBlockHandles();
  ASSERT_TRUE(handles.ok());
  const BlockHandle bad = (*handles)[handles->size() / 2];
  auto bytes = fs_.ReadFileToString("/t.sst");
  ASSERT_TRUE(bytes.ok());
  (*bytes)[bad.offset + 7] ^= 0x20;
  ASSERT_TRUE(fs_.WriteFileFromString("/t.sst", *bytes).ok());
  Open();
  for (size_t fixed : {size_t{0}, size_t{1} << 20}) {
    TableReadOptions ro;
    ro.readahead_size = fixed;
    auto it = table_->NewIterator(ro);
    auto m = model_.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
      ASSERT_EQ(it->key(), m->first);
      ASSERT_EQ(it->value(), m->second);
    }
    EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss) << it->status();
    EXPECT_THAT(std::string(it->status().message()),
                HasSubstr(absl::StrFormat("/t.sst: block at offset %d", bad.offset)));
    EXPECT_NE(m, model_.end());
  }
}

}  // namespace
}  // namespace cairn::lsm
