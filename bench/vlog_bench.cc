// Micro benchmark of value-log appends: SegmentWriter::Append of 16-byte
// keys with values of a few sizes into io::MemoryFileSystem (record framing,
// checksum and, with range(1) = 1, zstd). A new segment starts every 64 MiB
// to bound memory.
#include <cstdint>
#include <memory>
#include <string>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "io/memory_file_system.h"
#include "vlog/segment_writer.h"

namespace cairn::bench {
namespace {

constexpr uint64_t kRollBytes = 64u << 20;

// Half random, half repeated bytes: compressible about 2:1.
std::string MakeValue(size_t size) {
  absl::InsecureBitGen gen;
  std::string v(size, 0);
  for (size_t i = 0; i < size; ++i) {
    v[i] = (i / 32) % 2 == 0 ? static_cast<char>(absl::Uniform<int>(gen, 0, 256)) : 'x';
  }
  return v;
}

void BM_SegmentAppend(benchmark::State& state) {
  const std::string value = MakeValue(static_cast<size_t>(state.range(0)));
  vlog::SegmentWriterOptions options;
  options.compress = state.range(1) == 1;
  io::MemoryFileSystem fs;
  if (absl::Status s = fs.CreateDir("/vlog"); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  uint64_t id = 1;
  auto open = [&]() {
    // Two names, alternating, so the memory of the closed one is freed.
    const std::string path = absl::StrCat("/vlog/", id % 2, ".vlog");
    if (fs.FileExists(path)) fs.RemoveFile(path).IgnoreError();
    return vlog::SegmentWriter::Create(&fs, path, id, options);
  };
  auto writer = open();
  uint64_t i = 0;
  for (auto _ : state) {
    if (!writer.ok()) {
      state.SkipWithError(writer.status().ToString().c_str());
      break;
    }
    if ((*writer)->size() >= kRollBytes) {
      state.PauseTiming();
      (*writer)->Close().IgnoreError();
      ++id;
      writer = open();
      state.ResumeTiming();
      if (!writer.ok()) continue;
    }
    auto pointer = (*writer)->Append(absl::StrCat("key", 1000000000000 + i++), value);
    if (!pointer.ok()) {
      state.SkipWithError(pointer.status().ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * value.size());
}
BENCHMARK(BM_SegmentAppend)->ArgsProduct({{256, 4096, 65536}, {0, 1}});

}  // namespace
}  // namespace cairn::bench
