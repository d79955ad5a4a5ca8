// Micro benchmarks of the bloom filter: building a filter for 100k keys and
// probing it for present and absent keys, at 10 bits per key.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "lsm/bloom_filter.h"

namespace cairn::bench {
namespace {

constexpr uint64_t kKeys = 100000;

std::string Key(uint64_t i) { return absl::StrFormat("%016d", i); }

std::string BuildFilter(int bits_per_key) {
  lsm::BloomFilterBuilder builder(bits_per_key);
  for (uint64_t i = 0; i < kKeys; ++i) builder.AddKey(Key(i));
  return builder.Finish();
}

void BM_BloomBuild(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(BuildFilter(10).size());
  state.SetItemsProcessed(state.iterations() * kKeys);
}
BENCHMARK(BM_BloomBuild);

// range(0) = 1 probes keys that were added, 0 keys that were not.
void BM_BloomProbe(benchmark::State& state) {
  const bool present = state.range(0) == 1;
  const std::string data = BuildFilter(10);
  auto filter = lsm::BloomFilter::Parse(data, "bench");
  if (!filter.ok()) {
    state.SkipWithError(filter.status().ToString().c_str());
    return;
  }
  std::vector<std::string> keys;
  absl::InsecureBitGen gen;
  for (int i = 0; i < 4096; ++i) {
    const uint64_t k = absl::Uniform<uint64_t>(gen, 0, kKeys);
    keys.push_back(Key(present ? k : k + kKeys));
  }
  size_t i = 0;
  int64_t matches = 0;
  for (auto _ : state) {
    matches += filter->KeyMayMatch(keys[i++ & 4095]) ? 1 : 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["match_rate"] =
      state.iterations() ? static_cast<double>(matches) / state.iterations() : 0;
}
BENCHMARK(BM_BloomProbe)->Arg(1)->Arg(0);

}  // namespace
}  // namespace cairn::bench
