// Micro benchmark of the write-ahead log: LogWriter::AddRecord of records of
// a few sizes into io::MemoryFileSystem, so it measures framing and
// checksumming, not the disk. A new log starts every 64 MiB to bound memory.
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "io/memory_file_system.h"
#include "lsm/log_writer.h"

namespace cairn::bench {
namespace {

constexpr uint64_t kRollBytes = 64u << 20;

absl::StatusOr<std::unique_ptr<lsm::LogWriter>> NewLog(io::MemoryFileSystem* fs, uint64_t number) {
  const std::string path = absl::StrCat("/wal/", number, ".log");
  if (fs->FileExists(path)) {
    absl::Status s = fs->RemoveFile(path);
    if (!s.ok()) return s;
  }
  io::FileOptions options;
  options.category = io::IoCategory::kWal;
  auto file = fs->NewWritableFile(path, options);
  if (!file.ok()) return file.status();
  return lsm::LogWriter::Create(*std::move(file), number);
}

void BM_WalAddRecord(benchmark::State& state) {
  const std::string payload(static_cast<size_t>(state.range(0)), 'w');
  io::MemoryFileSystem fs;
  if (absl::Status s = fs.CreateDir("/wal"); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  uint64_t number = 1;
  auto log = NewLog(&fs, number % 2);
  for (auto _ : state) {
    if (!log.ok()) {
      state.SkipWithError(log.status().ToString().c_str());
      break;
    }
    if ((*log)->size() >= kRollBytes) {
      state.PauseTiming();
      (*log)->Close().IgnoreError();
      log = NewLog(&fs, ++number % 2);
      state.ResumeTiming();
      if (!log.ok()) continue;
    }
    if (absl::Status s = (*log)->AddRecord(payload); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * payload.size());
}
BENCHMARK(BM_WalAddRecord)->Arg(128)->Arg(4096)->Arg(65536);

}  // namespace
}  // namespace cairn::bench
