// Reads a worked example out of a docs/ page for a golden test: the hex
// bytes (text after '#' on a line is commentary) between the lines
// "<!-- golden:NAME:begin -->" and "<!-- golden:NAME:end -->", code fences
// skipped. Empty when the page or the block is missing (the test then fails
// on the size it expects).
#ifndef CAIRN_IO_TESTING_GOLDEN_H_
#define CAIRN_IO_TESTING_GOLDEN_H_

#include <fstream>
#include <sstream>
#include <string>

namespace cairn::testing {

inline std::string GoldenBytesFromDoc(const std::string& page, const std::string& name) {
  std::ifstream doc(std::string(CAIRN_SOURCE_DIR) + "/" + page);
  std::string line, bytes;
  bool inside = false;
  while (std::getline(doc, line)) {
    if (line.find("<!-- golden:" + name + ":begin -->") != std::string::npos) {
      inside = true;
      continue;
    }
    if (line.find("<!-- golden:" + name + ":end -->") != std::string::npos) break;
    if (!inside || line.rfind("```", 0) == 0) continue;
    std::istringstream tokens(line.substr(0, line.find('#')));
    std::string token;
    while (tokens >> token) bytes.push_back(static_cast<char>(std::stoi(token, nullptr, 16)));
  }
  return bytes;
}

}  // namespace cairn::testing

#endif  // CAIRN_IO_TESTING_GOLDEN_H_
