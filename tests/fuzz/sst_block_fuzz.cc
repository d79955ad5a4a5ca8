// Fuzzes Block (lsm/block.h): Create over arbitrary contents, then iterate
// both ways and seek. Bad bytes must end in a DataLoss status, never a crash
// or a read outside the contents (ASan watches).
#include <cstddef>
#include <cstdint>
#include <string>

#include "lsm/block.h"
#include "lsm/dbformat.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::FuzzInput in(data, size);
  // The first piece names the seek target; the rest is the block.
  const std::string target = cairn::lsm::MakeLookupKey(in.Piece(), lsm::kMaxSequenceNumber);
  auto block = lsm::Block::Create(std::string(in.Rest()), "fuzz block");
  if (!block.ok()) {
    FUZZ_CHECK(absl::IsDataLoss(block.status()));
    return 0;
  }
  auto it = (*block)->NewIterator();
  fuzz::WalkIterator(it.get(), target);
  const absl::Status s = it->status();
  FUZZ_CHECK(s.ok() || absl::IsDataLoss(s));
  return 0;
}
