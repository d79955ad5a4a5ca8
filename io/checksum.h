// The one checksum of cairn's on-disk formats: XXH3 (64-bit), wrapped here
// so no other folder includes xxhash.h. Formats that store 32 bits keep the
// low half of the 64-bit hash (Checksum32).
#ifndef CAIRN_IO_CHECKSUM_H_
#define CAIRN_IO_CHECKSUM_H_

#include <cstdint>
#include <string_view>

namespace cairn::io {

uint64_t Checksum64(std::string_view data);
uint32_t Checksum32(std::string_view data);
// XXH3-64 with a seed, low half: binds a checksum to where its bytes belong.
uint32_t Checksum32(std::string_view data, uint64_t seed);

// Streaming form, for checksums over several non-adjacent pieces.
class Checksummer {
 public:
  Checksummer();
  ~Checksummer();
  Checksummer(const Checksummer&) = delete;
  Checksummer& operator=(const Checksummer&) = delete;
  void Update(std::string_view data);
  uint64_t Digest64() const;
  uint32_t Digest32() const { return static_cast<uint32_t>(Digest64()); }

 private:
  void* state_;  // XXH3_state_t, opaque to keep xxhash.h out of this header.
};

}  // namespace cairn::io

#endif  // CAIRN_IO_CHECKSUM_H_
