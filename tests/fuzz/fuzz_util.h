// Helpers shared by the libFuzzer targets in tests/fuzz: a reader that takes
// bounded pieces of the input, and a bounded walk of an iterator. A target
// calls FUZZ_CHECK for a property that must hold on any input; a failure
// aborts, which libFuzzer reports as a crash with the input that caused it.
#ifndef CAIRN_TESTS_FUZZ_FUZZ_UTIL_H_
#define CAIRN_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "lsm/internal_iterator.h"

#define FUZZ_CHECK(cond)                                                        \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                      \
      std::abort();                                                             \
    }                                                                           \
  } while (0)

namespace cairn::fuzz {

// FuzzInput hands out the input's bytes front to back; past the end it
// returns zeros and empty strings.
class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size)
      : rest_(reinterpret_cast<const char*>(data), size) {}
  bool empty() const { return rest_.empty(); }
  uint8_t Byte() {
    if (rest_.empty()) return 0;
    const uint8_t b = static_cast<uint8_t>(rest_[0]);
    rest_.remove_prefix(1);
    return b;
  }
  // Up to n bytes.
  std::string_view Bytes(size_t n) {
    const std::string_view out = rest_.substr(0, n);
    rest_.remove_prefix(out.size());
    return out;
  }
  // A piece whose length is the next byte (at most 255 bytes).
  std::string_view Piece() { return Bytes(Byte()); }
  std::string_view Rest() {
    const std::string_view out = rest_;
    rest_ = {};
    return out;
  }

 private:
  std::string_view rest_;
};

// Walks it forward from the first entry and backward from the last, at most
// limit steps each, touching every key and value; then a few seeks.
inline void WalkIterator(lsm::InternalIterator* it, std::string_view seek_target,
                         int limit = 10000) {
  size_t bytes = 0;
  int n = 0;
  for (it->SeekToFirst(); it->Valid() && n < limit; it->Next(), ++n) {
    bytes += it->key().size() + it->value().size();
  }
  it->status().IgnoreError();
  n = 0;
  for (it->SeekToLast(); it->Valid() && n < limit; it->Prev(), ++n) {
    bytes += it->key().size() + it->value().size();
  }
  it->status().IgnoreError();
  it->Seek(seek_target);
  for (n = 0; it->Valid() && n < 16; ++n) (n % 3 == 2) ? it->Prev() : it->Next();
  it->SeekForPrev(seek_target);
  for (n = 0; it->Valid() && n < 16; ++n) (n % 3 == 2) ? it->Next() : it->Prev();
  it->status().IgnoreError();
  // Keeps the reads of key() and value() from being optimized away.
  if (bytes == 1) std::fputc(' ', stderr);
}

}  // namespace cairn::fuzz

#endif  // CAIRN_TESTS_FUZZ_FUZZ_UTIL_H_
