// Micro benchmarks of SST data blocks: building (encode) a 4 KiB block of
// 16-byte keys and 100-byte values, parsing it, seeking in it and scanning
// it (decode).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "lsm/block.h"
#include "lsm/block_builder.h"
#include "lsm/dbformat.h"

namespace cairn::bench {
namespace {

constexpr size_t kBlockSize = 4096;

std::string InternalKey(uint64_t i) {
  std::string key;
  lsm::AppendInternalKey(&key, absl::StrFormat("%016d", i), i + 1, lsm::ValueType::kValue);
  return key;
}

// The keys of one full block, in order.
std::vector<std::string> BlockKeys() {
  std::vector<std::string> keys;
  for (uint64_t i = 0; keys.size() * (24 + 100) < kBlockSize; ++i) keys.push_back(InternalKey(i));
  return keys;
}

std::string BuildBlock(const std::vector<std::string>& keys, const std::string& value) {
  lsm::BlockBuilder builder;
  for (const std::string& k : keys) builder.Add(k, value);
  return std::string(builder.Finish());
}

void BM_BlockBuild(benchmark::State& state) {
  const std::vector<std::string> keys = BlockKeys();
  const std::string value(100, 'v');
  lsm::BlockBuilder builder;
  for (auto _ : state) {
    builder.Reset();
    for (const std::string& k : keys) builder.Add(k, value);
    benchmark::DoNotOptimize(builder.Finish().size());
  }
  state.SetItemsProcessed(state.iterations() * keys.size());
  state.SetBytesProcessed(state.iterations() * kBlockSize);
}
BENCHMARK(BM_BlockBuild);

void BM_BlockParse(benchmark::State& state) {
  const std::string contents = BuildBlock(BlockKeys(), std::string(100, 'v'));
  for (auto _ : state) {
    auto block = lsm::Block::Create(contents, "bench");
    if (!block.ok()) {
      state.SkipWithError(block.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(block->get());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BlockParse);

void BM_BlockSeek(benchmark::State& state) {
  const std::vector<std::string> keys = BlockKeys();
  auto block = lsm::Block::Create(BuildBlock(keys, std::string(100, 'v')), "bench");
  if (!block.ok()) {
    state.SkipWithError(block.status().ToString().c_str());
    return;
  }
  std::unique_ptr<lsm::InternalIterator> it = (*block)->NewIterator();
  absl::InsecureBitGen gen;
  for (auto _ : state) {
    it->Seek(keys[absl::Uniform<size_t>(gen, 0, keys.size())]);
    benchmark::DoNotOptimize(it->Valid());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BlockSeek);

void BM_BlockScan(benchmark::State& state) {
  auto block = lsm::Block::Create(BuildBlock(BlockKeys(), std::string(100, 'v')), "bench");
  if (!block.ok()) {
    state.SkipWithError(block.status().ToString().c_str());
    return;
  }
  int64_t entries = 0;
  for (auto _ : state) {
    std::unique_ptr<lsm::InternalIterator> it = (*block)->NewIterator();
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      benchmark::DoNotOptimize(it->value().data());
      ++entries;
    }
  }
  state.SetItemsProcessed(entries);
  state.SetBytesProcessed(state.iterations() * (*block)->size());
}
BENCHMARK(BM_BlockScan);

}  // namespace
}  // namespace cairn::bench
