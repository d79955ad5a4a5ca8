// hello_cairn: open a database, write, read back, scan, print stats.
// Usage: hello_cairn <directory>
#include <cstdio>
#include <string>

#include "cairn/db.h"

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
    absl::Status s = (*db)->Put(sync, "key" + std::to_string(i), std::string(1000, 'v'));
    if (!s.ok()) {
      std::fprintf(stderr, "put: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  std::string value;
  absl::Status s = (*db)->Get(cairn::ReadOptions(), "key42", &value);
  if (!s.ok() || value.size() != 1000) {
    std::fprintf(stderr, "get: %s\n", s.ToString().c_str());
    return 1;
  }
  int n = 0;
  auto it = (*db)->NewIterator(cairn::ReadOptions());
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  std::printf("hello_cairn: %d keys, io backend %s\n", n, (*db)->GetStats().io_backend.c_str());
  return n == 100 ? 0 : 1;
}
