// The C API's overhead (issue 58): a Get and a 100-entry scan of 4 KiB
// values through cairn/db.h and through cairn/c.h, on the same database,
// in one run. The values sit in the cache, so the figures are the API's
// CPU cost, which a device read would hide. Run:
//   build/release/bench/cairn_micro_bench --benchmark_filter=CApi
// (docs/c_api.md, "Overhead").
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "cairn/c.h"
#include "cairn/db.h"
#include "core/c_api_internal.h"

namespace cairn {
namespace {

constexpr int kKeys = 20000;
constexpr size_t kValueSize = 4096;

std::string Key(int i) { return absl::StrFormat("key%08d", i); }

std::string Dir() {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr ? tmp : "/tmp") + "/cairn_c_api_bench";
}

Options BenchOptions() {
  Options o;
  o.create_if_missing = true;
  o.cache_size = size_t{256} << 20;  // every value stays cached
  o.gc_space_amp_trigger = 0;
  return o;
}

// Builds the database once per process: 20,000 keys of 4 KiB, flushed and
// compacted.
void BuildOnce() {
  static bool built = false;
  if (built) return;
  built = true;
  std::filesystem::remove_all(Dir());
  std::unique_ptr<DB> db = std::move(DB::Open(BenchOptions(), Dir()).value());
  std::mt19937_64 rng(1);
  std::string value(kValueSize, '\0');
  for (int i = 0; i < kKeys; ++i) {
    for (char& c : value) c = static_cast<char>(rng());
    if (!db->Put({}, Key(i), value).ok()) std::abort();
  }
  if (!db->CompactRange(nullptr, nullptr).ok()) std::abort();
}

// One open database for both paths: opened through c.h, and its C++ DB
// (core/c_api_internal.h) for the C++ path, so that both read the same
// cache.
cairn_t* c_db = nullptr;

cairn_t* CDb() {
  BuildOnce();
  if (c_db == nullptr) {
    cairn_options_t* o = cairn_options_create();
    cairn_options_set_cache_size(o, size_t{256} << 20);
    cairn_options_set_gc_space_amp_trigger(o, 0);
    char* err = nullptr;
    c_db = cairn_open(o, Dir().c_str(), &err);
    cairn_options_destroy(o);
    if (err != nullptr) std::abort();
  }
  return c_db;
}

DB* CppDb() { return CDb()->db.get(); }

// At exit: the handles closed and the database removed.
struct Cleanup {
  ~Cleanup() {
    if (c_db != nullptr) cairn_release(c_db);
    std::filesystem::remove_all(Dir());
  }
} cleanup;

// Reads every value once, so that the measured loops find them cached.
template <typename GetFn>
void Warm(GetFn get) {
  for (int i = 0; i < kKeys; ++i) get(Key(i));
}

void BM_CApiGetCpp(benchmark::State& state) {
  DB* db = CppDb();
  std::string v;
  Warm([&](const std::string& k) { (void)db->Get({}, k, &v); });
  std::mt19937 rng(2);
  for (auto _ : state) {
    const std::string k = Key(static_cast<int>(rng() % kKeys));
    if (!db->Get({}, k, &v).ok()) state.SkipWithError("get failed");
    benchmark::DoNotOptimize(v.data());
  }
}
BENCHMARK(BM_CApiGetCpp);

// The C++ call cairn_get_into makes: the value pinned, then copied out.
void BM_CApiGetCppPinned(benchmark::State& state) {
  DB* db = CppDb();
  PinnableValue v;
  Warm([&](const std::string& k) { (void)db->Get({}, k, &v); });
  std::vector<char> buf(kValueSize);
  std::mt19937 rng(2);
  for (auto _ : state) {
    const std::string k = Key(static_cast<int>(rng() % kKeys));
    if (!db->Get({}, k, &v).ok()) state.SkipWithError("get failed");
    std::memcpy(buf.data(), v.value().data(), std::min(buf.size(), v.value().size()));
    benchmark::DoNotOptimize(buf.data());
  }
}
BENCHMARK(BM_CApiGetCppPinned);

void BM_CApiGetC(benchmark::State& state) {
  cairn_t* db = CDb();
  cairn_readoptions_t* ro = cairn_readoptions_create();
  std::vector<char> buf(kValueSize);
  char* err = nullptr;
  Warm([&](const std::string& k) {
    cairn_get_into(db, ro, k.data(), k.size(), buf.data(), buf.size(), &err);
  });
  std::mt19937 rng(2);
  for (auto _ : state) {
    const std::string k = Key(static_cast<int>(rng() % kKeys));
    const size_t n = cairn_get_into(db, ro, k.data(), k.size(), buf.data(), buf.size(), &err);
    if (err != nullptr || n != kValueSize) state.SkipWithError("get failed");
    benchmark::DoNotOptimize(buf.data());
  }
  cairn_readoptions_destroy(ro);
}
BENCHMARK(BM_CApiGetC);

// A full scan, so that the measured scans find every block and value cached
// whichever handle ran before.
void WarmScan(DB* db) {
  std::unique_ptr<Iterator> it = db->NewIterator({});
  size_t bytes = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) bytes += it->value().size();
  benchmark::DoNotOptimize(bytes);
}

void BM_CApiScan100Cpp(benchmark::State& state) {
  DB* db = CppDb();
  WarmScan(db);
  std::mt19937 rng(3);
  for (auto _ : state) {
    std::unique_ptr<Iterator> it = db->NewIterator({});
    size_t bytes = 0;
    int n = 0;
    for (it->Seek(Key(static_cast<int>(rng() % (kKeys - 100)))); it->Valid() && n < 100;
         it->Next(), ++n) {
      bytes += it->key().size() + it->value().size();
    }
    if (n != 100) state.SkipWithError("short scan");
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
BENCHMARK(BM_CApiScan100Cpp);

void WarmScan(cairn_t* db) {
  char* err = nullptr;
  cairn_iterator_t* it = cairn_create_iterator(db, nullptr, &err);
  size_t bytes = 0;
  for (cairn_iter_seek_to_first(it); cairn_iter_valid(it); cairn_iter_next(it)) {
    size_t vlen;
    cairn_iter_value(it, &vlen);
    bytes += vlen;
  }
  cairn_iter_destroy(it);
  benchmark::DoNotOptimize(bytes);
}

void BM_CApiScan100C(benchmark::State& state) {
  cairn_t* db = CDb();
  WarmScan(db);
  cairn_readoptions_t* ro = cairn_readoptions_create();
  std::mt19937 rng(3);
  char* err = nullptr;
  for (auto _ : state) {
    cairn_iterator_t* it = cairn_create_iterator(db, ro, &err);
    const std::string start = Key(static_cast<int>(rng() % (kKeys - 100)));
    size_t bytes = 0;
    int n = 0;
    for (cairn_iter_seek(it, start.data(), start.size()); cairn_iter_valid(it) && n < 100;
         cairn_iter_next(it), ++n) {
      size_t klen, vlen;
      cairn_iter_key(it, &klen);
      cairn_iter_value(it, &vlen);
      bytes += klen + vlen;
    }
    cairn_iter_destroy(it);
    if (n != 100) state.SkipWithError("short scan");
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations() * 100);
  cairn_readoptions_destroy(ro);
}
BENCHMARK(BM_CApiScan100C);

// The batch call copies each entry into the caller's buffer: one crossing
// per 100 entries.
void BM_CApiScan100CBatch(benchmark::State& state) {
  cairn_t* db = CDb();
  WarmScan(db);
  cairn_readoptions_t* ro = cairn_readoptions_create();
  std::vector<char> buf(100 * (kValueSize + 64));
  std::mt19937 rng(3);
  char* err = nullptr;
  for (auto _ : state) {
    cairn_iterator_t* it = cairn_create_iterator(db, ro, &err);
    const std::string start = Key(static_cast<int>(rng() % (kKeys - 100)));
    cairn_iter_seek(it, start.data(), start.size());
    size_t used = 0;
    const size_t n = cairn_iter_next_batch(it, buf.data(), buf.size(), 100, &used, &err);
    cairn_iter_destroy(it);
    if (n != 100) state.SkipWithError("short scan");
    benchmark::DoNotOptimize(used);
  }
  state.SetItemsProcessed(state.iterations() * 100);
  cairn_readoptions_destroy(ro);
}
BENCHMARK(BM_CApiScan100CBatch);

}  // namespace
}  // namespace cairn
