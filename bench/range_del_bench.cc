// Reads that meet many range tombstones (issue 60): a Get and an iterator
// Seek over a DB whose key space holds 0 or 1,000 range tombstones, in the
// memtable or (flushed) in a table. The tombstones are fragmented and cached
// per memtable and per table version (lsm/range_tombstone.h), so the target
// is at most 2x the cost with none. Each tombstone deletes a gap between
// live keys, so both cases find the same keys.
//
//   cairn_micro_bench --benchmark_filter=RangeTombstones
//
// Args: tombstones (0 or 1000), flushed (0: in the memtable, 1: in a table).
#include <cstdint>
#include <memory>
#include <string>

#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "cairn/db.h"
#include "cairn/iterator.h"
#include "core/db_impl.h"
#include "io/memory_file_system.h"

namespace cairn::bench {
namespace {

constexpr int kKeys = 100000;

std::string Key(int i) { return absl::StrFormat("key%08d", i); }

std::unique_ptr<DB> BuildDb(int tombstones, bool flushed) {
  Options o;
  o.memtable_size = 256 << 20;  // everything stays where it is put
  auto db = OpenWithFileSystem(o, "/db", std::make_shared<io::MemoryFileSystem>());
  if (!db.ok()) return nullptr;
  for (int i = 0; i < kKeys; ++i) {
    if (!(*db)->Put(WriteOptions(), Key(i), "value").ok()) return nullptr;
  }
  if (flushed && !(*db)->Flush().ok()) return nullptr;
  // [key_i "a", key_i "b"): between key i and key i+1, holding no live key.
  const int step = kKeys / (tombstones + 1);
  for (int t = 0; t < tombstones; ++t) {
    const std::string k = Key((t + 1) * step);
    if (!(*db)->DeleteRange(WriteOptions(), k + "a", k + "b").ok()) return nullptr;
  }
  if (flushed && !(*db)->Flush().ok()) return nullptr;
  return *std::move(db);
}

void BM_GetWithRangeTombstones(benchmark::State& state) {
  auto db = BuildDb(static_cast<int>(state.range(0)), state.range(1) != 0);
  if (db == nullptr) return state.SkipWithError("could not build the database");
  absl::InsecureBitGen gen;
  std::string value;
  for (auto _ : state) {
    if (!db->Get(ReadOptions(), Key(absl::Uniform<int>(gen, 0, kKeys)), &value).ok()) {
      return state.SkipWithError("a live key was not found");
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GetWithRangeTombstones)->ArgsProduct({{0, 1000}, {0, 1}});

void BM_SeekWithRangeTombstones(benchmark::State& state) {
  auto db = BuildDb(static_cast<int>(state.range(0)), state.range(1) != 0);
  if (db == nullptr) return state.SkipWithError("could not build the database");
  absl::InsecureBitGen gen;
  auto it = db->NewIterator(ReadOptions());
  for (auto _ : state) {
    it->Seek(Key(absl::Uniform<int>(gen, 0, kKeys - 1)));
    if (!it->Valid()) return state.SkipWithError("a seek found nothing");
    benchmark::DoNotOptimize(it->key());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SeekWithRangeTombstones)->ArgsProduct({{0, 1000}, {0, 1}});

}  // namespace
}  // namespace cairn::bench
