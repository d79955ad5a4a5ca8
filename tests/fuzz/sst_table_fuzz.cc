// Fuzzes Table (lsm/table.h) over arbitrary file bytes: Open, iterate both
// ways, seek, Get, VerifyAll. Errors must be clean statuses (DataLoss,
// FailedPrecondition for an unknown version, InvalidArgument); never a crash.
//
// Input: a piece naming a user key to look up and seek to, then the file.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "io/memory_file_system.h"
#include "lsm/block_cache.h"
#include "lsm/dbformat.h"
#include "lsm/table.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::FuzzInput in(data, size);
  const std::string user_key(in.Piece());
  const std::string_view contents = in.Rest();
  io::MemoryFileSystem fs;
  if (!fs.WriteFileFromString("/000005.sst", contents).ok()) return 0;
  auto file = fs.NewRandomAccessFile("/000005.sst", {});
  if (!file.ok()) return 0;
  lsm::BlockCache cache(1 << 20);
  auto table = lsm::Table::Open(lsm::TableOptions(), std::move(*file), contents.size(), 5, &cache,
                                nullptr);
  if (!table.ok()) return 0;
  const std::string lookup = lsm::MakeLookupKey(user_key, lsm::kMaxSequenceNumber);
  lsm::TableGetResult result;
  (*table)->Get(lsm::TableReadOptions(), lookup, &result).IgnoreError();
  auto it = (*table)->NewIterator(lsm::TableReadOptions());
  fuzz::WalkIterator(it.get(), lookup);
  (*table)->VerifyAll().IgnoreError();
  return 0;
}
