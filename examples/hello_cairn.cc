// hello_cairn: open a database, write, read back, scan, print stats. The
// values (4 KiB) are above Options::value_separation_threshold (1 KiB), so
// they go to the value log and the LSM tree keeps pointers to them: being
// under Options::separate_at_flush_below (16 KiB), they wait in the WAL and
// the memtable until the flush, which writes them to the value log in key
// order (while GC collects they go to the value log as they are written).
// Usage: hello_cairn <directory>
#include <cstdio>
#include <string>

#include "cairn/db.h"

constexpr size_t kValueSize = 4096;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <directory>\n", argv[0]);
    return 2;
  }
  auto db = cairn::DB::Open(cairn::Options(), argv[1]);
  if (!db.ok()) {
    std::fprintf(stderr, "open: %s\n", db.status().ToString().c_str());
    return 1;
  }
  cairn::WriteOptions sync;
  sync.sync = true;
  for (int i = 0; i < 100; ++i) {
    absl::Status s = (*db)->Put(sync, "key" + std::to_string(i), std::string(kValueSize, 'v'));
    if (!s.ok()) {
      std::fprintf(stderr, "put: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  // Normally a full memtable is flushed in the background; here, now.
  if (absl::Status s = (*db)->Flush(); !s.ok()) {
    std::fprintf(stderr, "flush: %s\n", s.ToString().c_str());
    return 1;
  }
  std::string value;
  absl::Status s = (*db)->Get(cairn::ReadOptions(), "key42", &value);
  if (!s.ok() || value.size() != kValueSize) {
    std::fprintf(stderr, "get: %s\n", s.ToString().c_str());
    return 1;
  }
  int n = 0;
  auto it = (*db)->NewIterator(cairn::ReadOptions());
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  const cairn::Stats stats = (*db)->GetStats();
  std::printf("hello_cairn: %d keys, %llu value-log bytes written, io backend %s\n", n,
              static_cast<unsigned long long>(stats.vlog_bytes_written), stats.io_backend.c_str());
  // Every value went to the value log.
  return n == 100 && stats.vlog_bytes_written >= 100 * kValueSize ? 0 : 1;
}
