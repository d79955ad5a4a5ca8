// Micro benchmarks of the memtable's skip list: inserting entries (MemTable
// Add: arena copy plus skip-list insert) and seeking an iterator, at a few
// memtable sizes. Keys are 16-byte zero-padded decimals like cairn_bench's.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "lsm/dbformat.h"
#include "lsm/memtable.h"

namespace cairn::bench {
namespace {

std::string UserKey(uint64_t i) { return absl::StrFormat("%016d", i); }

void BM_MemTableAdd(benchmark::State& state) {
  const std::string value(static_cast<size_t>(state.range(0)), 'v');
  absl::InsecureBitGen gen;
  auto mem = std::make_unique<lsm::MemTable>();
  lsm::SequenceNumber seq = 0;
  for (auto _ : state) {
    // A fresh memtable every 1M entries keeps the working set realistic.
    if (seq % (1 << 20) == (1 << 20) - 1) {
      state.PauseTiming();
      mem = std::make_unique<lsm::MemTable>();
      state.ResumeTiming();
    }
    mem->Add(++seq, lsm::ValueType::kValue, UserKey(absl::Uniform<uint64_t>(gen, 0, 1u << 30)),
             value);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MemTableAdd)->Arg(16)->Arg(1024);

void BM_MemTableSeek(benchmark::State& state) {
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  lsm::MemTable mem;
  for (uint64_t i = 0; i < n; ++i) mem.Add(i + 1, lsm::ValueType::kValue, UserKey(i * 2), "value");
  std::unique_ptr<lsm::InternalIterator> it = mem.NewIterator();
  absl::InsecureBitGen gen;
  std::string target;
  for (auto _ : state) {
    target.clear();
    lsm::AppendInternalKey(&target, UserKey(absl::Uniform<uint64_t>(gen, 0, 2 * n)),
                           lsm::kMaxSequenceNumber, lsm::kValueTypeForSeek);
    it->Seek(target);
    benchmark::DoNotOptimize(it->Valid());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MemTableSeek)->Arg(1 << 10)->Arg(1 << 17);

void BM_MemTableGet(benchmark::State& state) {
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  lsm::MemTable mem;
  for (uint64_t i = 0; i < n; ++i) mem.Add(i + 1, lsm::ValueType::kValue, UserKey(i), "value");
  absl::InsecureBitGen gen;
  lsm::ValueType type;
  lsm::SequenceNumber seq;
  std::string value;
  for (auto _ : state) {
    bool found = mem.Get(UserKey(absl::Uniform<uint64_t>(gen, 0, n)), lsm::kMaxSequenceNumber,
                         &type, &seq, &value);
    benchmark::DoNotOptimize(found);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MemTableGet)->Arg(1 << 17);

// GC's pattern: a batch of 1,024 random keys in ascending order, looked up
// (Get) in a memtable of 32 Ki random entries, then added to it, each
// search from the head (range(0) == 0) or from a cursor (1).
std::vector<std::string> SortedBatch(absl::InsecureBitGen& gen, size_t n) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < n; ++i) keys.push_back(UserKey(absl::Uniform<uint64_t>(gen, 0, 1u << 30)));
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

void BM_MemTableSortedBatch(benchmark::State& state) {
  const bool cursor = state.range(0) != 0;
  absl::InsecureBitGen gen;
  auto mem = std::make_unique<lsm::MemTable>();
  lsm::SequenceNumber seq = 0;
  for (int i = 0; i < (1 << 15); ++i) {
    mem->Add(++seq, lsm::ValueType::kValue, UserKey(absl::Uniform<uint64_t>(gen, 0, 1u << 30)),
             "pointer-sized");
  }
  lsm::ValueType type;
  lsm::SequenceNumber found_seq;
  std::string value;
  uint64_t items = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::vector<std::string> keys = SortedBatch(gen, 1024);
    state.ResumeTiming();
    {
      lsm::MemTable::Cursor c;
      for (const std::string& k : keys) {
        benchmark::DoNotOptimize(mem->Get(k, lsm::kMaxSequenceNumber, &type, &found_seq, &value,
                                          cursor ? &c : nullptr));
      }
    }
    {
      lsm::MemTable::Cursor c;
      for (const std::string& k : keys) {
        mem->Add(++seq, lsm::ValueType::kValue, k, "pointer-sized", cursor ? &c : nullptr);
      }
    }
    items += keys.size();
    if (mem->num_entries() > (1 << 16)) {
      state.PauseTiming();
      mem = std::make_unique<lsm::MemTable>();
      for (int i = 0; i < (1 << 15); ++i) {
        mem->Add(++seq, lsm::ValueType::kValue,
                 UserKey(absl::Uniform<uint64_t>(gen, 0, 1u << 30)), "pointer-sized");
      }
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(items));
}
BENCHMARK(BM_MemTableSortedBatch)->Arg(0)->Arg(1);

}  // namespace
}  // namespace cairn::bench
