#include "vlog/value_pointer.h"

#include <limits>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "vlog/vlog_format.h"

namespace cairn::vlog {
namespace {

TEST(ValuePointerTest, RandomPointersRoundTrip) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 10000; ++i) {
    // Mix small and huge fields so every varint length is exercised.
    const int shift = static_cast<int>(rng() % 64);
    ValuePointer p{rng() >> shift, rng() >> (rng() % 64),
                   static_cast<uint32_t>(kRecordHeaderSize + (rng() >> (32 + rng() % 32)))};
    std::string bytes = EncodeValuePointer(p);
    EXPECT_LE(bytes.size(), kMaxEncodedValuePointerSize);
    absl::StatusOr<ValuePointer> back = DecodeValuePointer(bytes);
    ASSERT_TRUE(back.ok()) << back.status() << " for " << p.DebugString();
    EXPECT_EQ(*back, p);
  }
}

TEST(ValuePointerTest, TypicalPointerFitsInTenBytes) {
  // Segment 5000, 3 GiB into it, a 64 KiB record.
  const ValuePointer p{5000, 3ull << 30, 64 * 1024 + 40};
  EXPECT_LE(EncodeValuePointer(p).size(), 10u);
}

TEST(ValuePointerTest, DecodeFromAdvancesPastOnePointer) {
  std::string bytes;
  const ValuePointer a{1, 28, 100}, b{2, 1u << 20, 4096};
  a.EncodeTo(&bytes);
  b.EncodeTo(&bytes);
  std::string_view in = bytes;
  ValuePointer x, y;
  ASSERT_TRUE(ValuePointer::DecodeFrom(&in, &x));
  ASSERT_TRUE(ValuePointer::DecodeFrom(&in, &y));
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(x, a);
  EXPECT_EQ(y, b);
}

TEST(ValuePointerTest, EveryTruncationIsDataLoss) {
  const std::string bytes = EncodeValuePointer({1u << 30, 1ull << 40, 1u << 25});
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(DecodeValuePointer(bytes.substr(0, n)).status().code(),
              absl::StatusCode::kDataLoss)
        << "cut at " << n;
  }
}

TEST(ValuePointerTest, TrailingBytesAreDataLoss) {
  std::string bytes = EncodeValuePointer({3, 28, 20});
  bytes.push_back('\0');
  EXPECT_EQ(DecodeValuePointer(bytes).status().code(), absl::StatusCode::kDataLoss);
}

TEST(ValuePointerTest, SizeBelowARecordHeaderIsDataLoss) {
  EXPECT_EQ(DecodeValuePointer(EncodeValuePointer({3, 28, kRecordHeaderSize - 1}))
                .status()
                .code(),
            absl::StatusCode::kDataLoss);
}

TEST(ValuePointerTest, GarbageNeverCrashes) {
  std::mt19937_64 rng(7);
  int ok = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(rng() % 30, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    absl::StatusOr<ValuePointer> p = DecodeValuePointer(bytes);
    if (p.ok()) {
      ++ok;
      // Whatever decodes names a pointer that survives a round trip.
      EXPECT_EQ(DecodeValuePointer(EncodeValuePointer(*p)).value(), *p);
      EXPECT_GE(p->size, kRecordHeaderSize);
    } else {
      EXPECT_EQ(p.status().code(), absl::StatusCode::kDataLoss);
    }
  }
  EXPECT_LT(ok, 20000);
}

}  // namespace
}  // namespace cairn::vlog
