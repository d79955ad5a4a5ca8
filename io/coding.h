// Encoding helpers: fixed-width little-endian integers and LEB128 varints, the
// building blocks of every on-disk format in cairn.
//
// Decoders take a std::string_view* that they advance past what they consumed,
// and return false (leaving the input unspecified) when the bytes run out or
// are malformed. Bytes from disk are never trusted.
#ifndef CAIRN_IO_CODING_H_
#define CAIRN_IO_CODING_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace cairn::io {

constexpr int kMaxVarint32Bytes = 5;
constexpr int kMaxVarint64Bytes = 10;

inline void EncodeFixed16(char* dst, uint16_t v) {
  dst[0] = static_cast<char>(v);
  dst[1] = static_cast<char>(v >> 8);
}
inline void EncodeFixed32(char* dst, uint32_t v) {
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<char>(v >> (8 * i));
}
inline void EncodeFixed64(char* dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst[i] = static_cast<char>(v >> (8 * i));
}
inline uint16_t DecodeFixed16(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>(u[0] | (u[1] << 8));
}
inline uint32_t DecodeFixed32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint32_t>(u[0]) | (static_cast<uint32_t>(u[1]) << 8) |
         (static_cast<uint32_t>(u[2]) << 16) | (static_cast<uint32_t>(u[3]) << 24);
}
inline uint64_t DecodeFixed64(const char* p) {
  return static_cast<uint64_t>(DecodeFixed32(p)) |
         (static_cast<uint64_t>(DecodeFixed32(p + 4)) << 32);
}

void PutFixed16(std::string* dst, uint16_t v);
void PutFixed32(std::string* dst, uint32_t v);
void PutFixed64(std::string* dst, uint64_t v);
void PutVarint32(std::string* dst, uint32_t v);
void PutVarint64(std::string* dst, uint64_t v);
// Varint length, then the bytes.
void PutLengthPrefixed(std::string* dst, std::string_view value);

// Writes the varint for v at dst (room for kMaxVarint64Bytes); returns the
// byte after it.
char* EncodeVarint32(char* dst, uint32_t v);
char* EncodeVarint64(char* dst, uint64_t v);
int VarintLength(uint64_t v);

bool GetFixed16(std::string_view* input, uint16_t* value);
bool GetFixed32(std::string_view* input, uint32_t* value);
bool GetFixed64(std::string_view* input, uint64_t* value);
// Multi-byte varints (and malformed input) take the out-of-line path.
bool GetVarint32Slow(std::string_view* input, uint32_t* value);
bool GetVarint64Slow(std::string_view* input, uint64_t* value);
// One-byte varints are most of what block and record headers hold, so
// they are decoded inline.
inline bool GetVarint32(std::string_view* input, uint32_t* value) {
  if (!input->empty() && static_cast<unsigned char>(input->front()) < 0x80) {
    *value = static_cast<unsigned char>(input->front());
    input->remove_prefix(1);
    return true;
  }
  return GetVarint32Slow(input, value);
}
inline bool GetVarint64(std::string_view* input, uint64_t* value) {
  if (!input->empty() && static_cast<unsigned char>(input->front()) < 0x80) {
    *value = static_cast<unsigned char>(input->front());
    input->remove_prefix(1);
    return true;
  }
  return GetVarint64Slow(input, value);
}
bool GetLengthPrefixed(std::string_view* input, std::string_view* result);
// Takes exactly n bytes.
bool GetBytes(std::string_view* input, size_t n, std::string_view* result);

}  // namespace cairn::io

#endif  // CAIRN_IO_CODING_H_
