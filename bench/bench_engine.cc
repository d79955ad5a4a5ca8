// Parts of BenchEngine shared by every engine, and the RocksDB stand-in when
// cairn_bench is built without RocksDB.
#include "bench/bench_engine.h"

#include <sys/stat.h>

#include <filesystem>
#include <system_error>

namespace cairn::bench {

absl::Status BenchEngine::Scan(std::string_view start, int nexts,
                               std::optional<std::string_view> upper_bound, int* entries,
                               uint64_t* bytes) {
  *entries = 0;
  *bytes = 0;
  std::unique_ptr<BenchCursor> cursor =
      upper_bound ? NewBoundedCursor(*upper_bound) : NewCursor();
  cursor->Seek(start);
  for (int i = 0; i <= nexts && cursor->Valid(); ++i) {
    ++*entries;
    *bytes += cursor->key().size() + cursor->value().size();
    if (i < nexts) cursor->Next();
  }
  return cursor->status();
}

absl::Status BenchEngine::GetRange(std::string_view key, uint64_t offset, uint64_t length,
                                   std::string* out) {
  std::string whole;
  absl::Status s = Get(key, &whole);
  if (!s.ok()) return s;
  out->clear();
  if (offset < whole.size()) out->assign(whole, offset, length);
  return absl::OkStatus();
}

uint64_t DirectoryBytes(const std::string& dir) {
  std::error_code ec;
  uint64_t total = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_ec;
    // What the file takes on the device (st_blocks, as du counts it), the
    // same measure as cairn's Stats::disk_bytes: a punched hole or a sparse
    // tail takes nothing, a preallocated one counts.
    struct stat st;
    if (it->is_regular_file(size_ec) && ::stat(it->path().c_str(), &st) == 0) {
      total += static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  return total;
}

#ifndef CAIRN_HAVE_ROCKSDB
absl::StatusOr<std::unique_ptr<BenchEngine>> OpenRocksDbEngine(const EngineOptions&, bool) {
  return absl::UnimplementedError(
      "cairn_bench was built without RocksDB (install librocksdb-dev and reconfigure)");
}
#endif

}  // namespace cairn::bench
