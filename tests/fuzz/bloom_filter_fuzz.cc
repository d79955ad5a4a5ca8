// Fuzzes BloomFilter (lsm/bloom_filter.h): Parse over arbitrary filter bytes
// and probe it with keys taken from the input; and, as a property, a filter
// built from the input's keys must match every one of them (no false
// negatives).
//
// Input: a piece (length byte + bytes) holding the filter, then keys as
// pieces.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lsm/bloom_filter.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::FuzzInput in(data, size);
  const int bits_per_key = 1 + in.Byte() % 20;
  const std::string filter_bytes(in.Piece());
  std::vector<std::string> keys;
  while (!in.empty() && keys.size() < 512) keys.emplace_back(in.Piece());

  auto parsed = lsm::BloomFilter::Parse(filter_bytes, "fuzz filter");
  if (parsed.ok()) {
    for (const std::string& k : keys) parsed->KeyMayMatch(k);
  } else {
    FUZZ_CHECK(absl::IsDataLoss(parsed.status()));
  }

  lsm::BloomFilterBuilder builder(bits_per_key);
  for (const std::string& k : keys) builder.AddKey(k);
  const std::string built = builder.Finish();
  auto filter = lsm::BloomFilter::Parse(built, "built filter");
  FUZZ_CHECK(filter.ok());
  for (const std::string& k : keys) FUZZ_CHECK(filter->KeyMayMatch(k));
  return 0;
}
