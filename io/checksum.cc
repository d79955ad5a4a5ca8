#include "io/checksum.h"

#include <xxhash.h>

namespace cairn::io {

uint64_t Checksum64(std::string_view data) { return XXH3_64bits(data.data(), data.size()); }
uint32_t Checksum32(std::string_view data) { return static_cast<uint32_t>(Checksum64(data)); }
uint32_t Checksum32(std::string_view data, uint64_t seed) {
  return static_cast<uint32_t>(XXH3_64bits_withSeed(data.data(), data.size(), seed));
}

Checksummer::Checksummer() : state_(XXH3_createState()) {
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}
Checksummer::~Checksummer() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }
void Checksummer::Update(std::string_view data) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data.data(), data.size());
}
uint64_t Checksummer::Digest64() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

}  // namespace cairn::io
