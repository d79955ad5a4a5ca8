// Tests of the encoding helpers (fixed, varint, length-prefixed), the XXH3
// checksum wrappers and the zstd wrappers.
#include "io/coding.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "io/checksum.h"
#include "io/compression.h"

namespace cairn::io {
namespace {

TEST(CodingTest, FixedRoundTripLittleEndian) {
  std::string s;
  PutFixed16(&s, 0xBEEF);
  PutFixed32(&s, 0x01020304);
  PutFixed64(&s, 0x0102030405060708ull);
  ASSERT_EQ(s.size(), 14u);
  EXPECT_EQ(static_cast<unsigned char>(s[0]), 0xEF);  // Low byte first.
  EXPECT_EQ(static_cast<unsigned char>(s[2]), 0x04);
  EXPECT_EQ(static_cast<unsigned char>(s[6]), 0x08);
  std::string_view in = s;
  uint16_t a;
  uint32_t b;
  uint64_t c;
  ASSERT_TRUE(GetFixed16(&in, &a));
  ASSERT_TRUE(GetFixed32(&in, &b));
  ASSERT_TRUE(GetFixed64(&in, &c));
  EXPECT_EQ(a, 0xBEEF);
  EXPECT_EQ(b, 0x01020304u);
  EXPECT_EQ(c, 0x0102030405060708ull);
  EXPECT_TRUE(in.empty());
  EXPECT_FALSE(GetFixed16(&in, &a));
}

TEST(CodingTest, FixedBoundaryValues) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{UINT32_MAX}, uint64_t{UINT64_MAX}}) {
    char buf[8];
    EncodeFixed64(buf, v);
    EXPECT_EQ(DecodeFixed64(buf), v);
    EncodeFixed32(buf, static_cast<uint32_t>(v));
    EXPECT_EQ(DecodeFixed32(buf), static_cast<uint32_t>(v));
  }
}

TEST(CodingTest, TruncatedFixedIsRejected) {
  std::string s;
  PutFixed64(&s, 42);
  std::string_view in = std::string_view(s).substr(0, 7);
  uint64_t v;
  EXPECT_FALSE(GetFixed64(&in, &v));
  uint32_t w;
  in = std::string_view(s).substr(0, 3);
  EXPECT_FALSE(GetFixed32(&in, &w));
}

TEST(CodingTest, Varint64RoundTripAtEveryLengthBoundary) {
  std::vector<uint64_t> values = {0, 1, UINT64_MAX};
  for (int bits = 7; bits < 64; bits += 7) {
    const uint64_t edge = uint64_t{1} << bits;
    values.insert(values.end(), {edge - 1, edge, edge + 1});
  }
  std::string s;
  for (uint64_t v : values) PutVarint64(&s, v);
  std::string_view in = s;
  for (uint64_t v : values) {
    const size_t before = in.size();
    uint64_t got;
    ASSERT_TRUE(GetVarint64(&in, &got)) << v;
    EXPECT_EQ(got, v);
    EXPECT_EQ(before - in.size(), static_cast<size_t>(VarintLength(v))) << v;
  }
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(VarintLength(0), 1);
  EXPECT_EQ(VarintLength(127), 1);
  EXPECT_EQ(VarintLength(128), 2);
  EXPECT_EQ(VarintLength(UINT64_MAX), kMaxVarint64Bytes);
}

TEST(CodingTest, Varint32RoundTripAndRejectsWiderValues) {
  std::string s;
  for (uint32_t v : {0u, 127u, 128u, 16383u, 16384u, UINT32_MAX}) PutVarint32(&s, v);
  std::string_view in = s;
  for (uint32_t v : {0u, 127u, 128u, 16383u, 16384u, UINT32_MAX}) {
    uint32_t got;
    ASSERT_TRUE(GetVarint32(&in, &got));
    EXPECT_EQ(got, v);
  }
  std::string wide;
  PutVarint64(&wide, uint64_t{UINT32_MAX} + 1);
  std::string_view win = wide;
  uint32_t got;
  EXPECT_FALSE(GetVarint32(&win, &got));
  EXPECT_EQ(win.size(), wide.size());  // Not consumed.
}

TEST(CodingTest, EncodeVarintReturnsTheByteAfter) {
  char buf[kMaxVarint64Bytes];
  EXPECT_EQ(EncodeVarint64(buf, 300) - buf, 2);
  EXPECT_EQ(EncodeVarint32(buf, UINT32_MAX) - buf, kMaxVarint32Bytes);
  EXPECT_EQ(EncodeVarint64(buf, UINT64_MAX) - buf, kMaxVarint64Bytes);
}

TEST(CodingTest, MalformedVarintsAreRejected) {
  uint64_t v;
  std::string_view empty;
  EXPECT_FALSE(GetVarint64(&empty, &v));
  // Truncated: continuation bit set on the last byte.
  std::string truncated = "\x80\x80";
  std::string_view in = truncated;
  EXPECT_FALSE(GetVarint64(&in, &v));
  // Eleven bytes: too long for 64 bits.
  std::string too_long(10, '\x80');
  too_long += '\x01';
  in = too_long;
  EXPECT_FALSE(GetVarint64(&in, &v));
  // Ten bytes whose last carries more than the 64th bit: overflow.
  std::string overflow(9, '\xff');
  overflow += '\x02';
  in = overflow;
  EXPECT_FALSE(GetVarint64(&in, &v));
  // Every prefix of a valid long varint is rejected.
  std::string valid;
  PutVarint64(&valid, UINT64_MAX);
  for (size_t n = 0; n < valid.size(); ++n) {
    in = std::string_view(valid).substr(0, n);
    EXPECT_FALSE(GetVarint64(&in, &v)) << n;
  }
}

TEST(CodingTest, LengthPrefixedRoundTripAndRejectsShortInput) {
  std::string s;
  PutLengthPrefixed(&s, "");
  PutLengthPrefixed(&s, "key");
  PutLengthPrefixed(&s, std::string(300, 'v'));
  std::string_view in = s;
  std::string_view a, b, c;
  ASSERT_TRUE(GetLengthPrefixed(&in, &a));
  ASSERT_TRUE(GetLengthPrefixed(&in, &b));
  ASSERT_TRUE(GetLengthPrefixed(&in, &c));
  EXPECT_EQ(a, "");
  EXPECT_EQ(b, "key");
  EXPECT_EQ(c, std::string(300, 'v'));
  EXPECT_TRUE(in.empty());

  std::string bad;
  PutVarint64(&bad, 10);
  bad += "short";
  in = bad;
  EXPECT_FALSE(GetLengthPrefixed(&in, &a));
  EXPECT_EQ(in.size(), bad.size());  // Not consumed.

  std::string_view bytes = "abcdef";
  std::string_view got;
  ASSERT_TRUE(GetBytes(&bytes, 4, &got));
  EXPECT_EQ(got, "abcd");
  EXPECT_FALSE(GetBytes(&bytes, 3, &got));
}

TEST(ChecksumTest, StreamingEqualsOneShotAndDetectsFlips) {
  std::mt19937_64 rng(1);
  std::string data(5000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  Checksummer sum;
  sum.Update(std::string_view(data).substr(0, 1234));
  sum.Update(std::string_view(data).substr(1234));
  EXPECT_EQ(sum.Digest64(), Checksum64(data));
  EXPECT_EQ(sum.Digest32(), Checksum32(data));
  EXPECT_EQ(Checksum32(data), static_cast<uint32_t>(Checksum64(data)));
  for (size_t i : {size_t{0}, size_t{2500}, data.size() - 1}) {
    std::string flipped = data;
    flipped[i] ^= 1;
    EXPECT_NE(Checksum64(flipped), Checksum64(data)) << i;
  }
  EXPECT_NE(Checksum64(""), Checksum64(std::string(1, '\0')));
}

TEST(CompressionTest, ZstdRoundTrip) {
  std::string input;
  for (int i = 0; i < 1000; ++i) input += "cairn value " + std::to_string(i % 17);
  std::string frame = "prefix";
  ASSERT_TRUE(ZstdCompress(input, 3, &frame).ok());
  ASSERT_EQ(frame.substr(0, 6), "prefix");  // Appended, not replaced.
  std::string_view body = std::string_view(frame).substr(6);
  EXPECT_LT(body.size(), input.size());
  std::string out = "junk";
  ASSERT_TRUE(ZstdUncompress(body, input.size(), &out).ok());
  EXPECT_EQ(out, input);

  std::string empty_frame;
  ASSERT_TRUE(ZstdCompress("", 1, &empty_frame).ok());
  ASSERT_TRUE(ZstdUncompress(empty_frame, 0, &out).ok());
  EXPECT_TRUE(out.empty());
}

TEST(CompressionTest, GarbageAndOversizedFramesAreDataLoss) {
  std::string out;
  EXPECT_TRUE(absl::IsDataLoss(ZstdUncompress("definitely not zstd", 1 << 20, &out)));
  EXPECT_TRUE(absl::IsDataLoss(ZstdUncompress("", 1 << 20, &out)));

  std::string frame;
  ASSERT_TRUE(ZstdCompress(std::string(10000, 'a'), 1, &frame).ok());
  EXPECT_TRUE(absl::IsDataLoss(ZstdUncompress(frame, 9999, &out)));
  // A truncated frame and one with its body corrupted fail cleanly.
  EXPECT_TRUE(absl::IsDataLoss(ZstdUncompress(frame.substr(0, frame.size() - 3), 10000, &out)));
  // Flipping any byte either still decodes (zstd frames here carry no
  // checksum; cairn's formats checksum their blocks) or is DataLoss, never a
  // crash or another code.
  for (size_t i = 0; i < frame.size(); ++i) {
    std::string corrupt = frame;
    corrupt[i] ^= 0x5a;
    absl::Status s = ZstdUncompress(corrupt, 10000, &out);
    EXPECT_TRUE(s.ok() || absl::IsDataLoss(s)) << "byte " << i << ": " << s;
  }
}

}  // namespace
}  // namespace cairn::io
