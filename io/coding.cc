#include "io/coding.h"

namespace cairn::io {

void PutFixed16(std::string* dst, uint16_t v) {
  char buf[2];
  EncodeFixed16(buf, v);
  dst->append(buf, 2);
}
void PutFixed32(std::string* dst, uint32_t v) {
  char buf[4];
  EncodeFixed32(buf, v);
  dst->append(buf, 4);
}
void PutFixed64(std::string* dst, uint64_t v) {
  char buf[8];
  EncodeFixed64(buf, v);
  dst->append(buf, 8);
}

char* EncodeVarint64(char* dst, uint64_t v) {
  auto* p = reinterpret_cast<unsigned char*>(dst);
  while (v >= 0x80) {
    *p++ = static_cast<unsigned char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<unsigned char>(v);
  return reinterpret_cast<char*>(p);
}
char* EncodeVarint32(char* dst, uint32_t v) { return EncodeVarint64(dst, v); }

int VarintLength(uint64_t v) {
  int len = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++len;
  }
  return len;
}

void PutVarint32(std::string* dst, uint32_t v) { PutVarint64(dst, v); }
void PutVarint64(std::string* dst, uint64_t v) {
  char buf[kMaxVarint64Bytes];
  char* end = EncodeVarint64(buf, v);
  dst->append(buf, end - buf);
}
void PutLengthPrefixed(std::string* dst, std::string_view value) {
  PutVarint64(dst, value.size());
  dst->append(value);
}

bool GetFixed16(std::string_view* input, uint16_t* value) {
  if (input->size() < 2) return false;
  *value = DecodeFixed16(input->data());
  input->remove_prefix(2);
  return true;
}
bool GetFixed32(std::string_view* input, uint32_t* value) {
  if (input->size() < 4) return false;
  *value = DecodeFixed32(input->data());
  input->remove_prefix(4);
  return true;
}
bool GetFixed64(std::string_view* input, uint64_t* value) {
  if (input->size() < 8) return false;
  *value = DecodeFixed64(input->data());
  input->remove_prefix(8);
  return true;
}

bool GetVarint64Slow(std::string_view* input, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0, i = 0; i < kMaxVarint64Bytes && i < static_cast<int>(input->size());
       ++i, shift += 7) {
    uint64_t byte = static_cast<unsigned char>((*input)[i]);
    // The tenth byte may carry only the top bit of a 64-bit value.
    if (i == kMaxVarint64Bytes - 1 && byte > 1) return false;
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      input->remove_prefix(i + 1);
      return true;
    }
  }
  return false;
}

bool GetVarint32Slow(std::string_view* input, uint32_t* value) {
  std::string_view copy = *input;
  uint64_t v;
  if (!GetVarint64Slow(&copy, &v) || v > UINT32_MAX) return false;
  *value = static_cast<uint32_t>(v);
  *input = copy;
  return true;
}

bool GetBytes(std::string_view* input, size_t n, std::string_view* result) {
  if (input->size() < n) return false;
  *result = input->substr(0, n);
  input->remove_prefix(n);
  return true;
}

bool GetLengthPrefixed(std::string_view* input, std::string_view* result) {
  uint64_t len;
  std::string_view copy = *input;
  if (!GetVarint64(&copy, &len) || len > copy.size()) return false;
  *result = copy.substr(0, len);
  copy.remove_prefix(len);
  *input = copy;
  return true;
}

}  // namespace cairn::io
