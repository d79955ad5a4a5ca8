// Helpers shared by the vlog/ tests: deterministic random bytes and the
// golden-hex extraction from the format pages in docs/.
//
// Test-only; included by vlog/*_test.cc, never by the library.
#ifndef CAIRN_VLOG_VLOG_TEST_UTIL_H_
#define CAIRN_VLOG_VLOG_TEST_UTIL_H_

#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace cairn::vlog::testing {

// n bytes of uniformly random data (incompressible).
inline std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// n bytes drawn from a small alphabet in runs (compresses well).
inline std::string CompressibleBytes(std::mt19937_64& rng, size_t n) {
  std::string s;
  s.reserve(n);
  while (s.size() < n) {
    const char c = static_cast<char>('a' + rng() % 4);
    s.append(std::min<size_t>(n - s.size(), 1 + rng() % 32), c);
  }
  return s;
}

// The hex bytes between the lines containing "golden:<name>:begin" and
// "golden:<name>:end" of docs/<page>. Each line holds hex byte pairs, then
// optionally '#' and a note; code fences are skipped.
inline std::string GoldenBytesFromDoc(std::string_view page, std::string_view name) {
  const std::string path = std::string(CAIRN_SOURCE_DIR) + "/docs/" + std::string(page);
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path << " missing";
  const std::string begin = "golden:" + std::string(name) + ":begin";
  const std::string end = "golden:" + std::string(name) + ":end";
  std::string line, bytes;
  bool inside = false, seen_end = false;
  while (std::getline(in, line)) {
    if (line.find(begin) != std::string::npos) {
      inside = true;
      continue;
    }
    if (line.find(end) != std::string::npos) {
      seen_end = inside;
      break;
    }
    if (!inside || absl::StartsWith(line, "```")) continue;
    const absl::string_view hex = absl::string_view(line).substr(0, line.find('#'));
    for (absl::string_view token : absl::StrSplit(hex, ' ', absl::SkipWhitespace())) {
      EXPECT_EQ(token.size(), 2u) << "bad hex token '" << token << "' in: " << line;
      if (token.size() != 2 || !absl::ascii_isxdigit(token[0]) ||
          !absl::ascii_isxdigit(token[1])) {
        ADD_FAILURE() << "bad hex token '" << token << "' in: " << line;
        continue;
      }
      bytes += absl::HexStringToBytes(token);
    }
  }
  EXPECT_TRUE(seen_end) << "markers golden:" << name << " not found in " << path;
  return bytes;
}

inline std::string Hex(std::string_view s) {
  return absl::BytesToHexString(absl::string_view(s.data(), s.size()));
}

}  // namespace cairn::vlog::testing

#endif  // CAIRN_VLOG_VLOG_TEST_UTIL_H_
