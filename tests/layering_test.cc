// Checks the #include lines against the layering of docs/style.md: each folder may
// include only the folders below it, and lsm/ and vlog/ never each other.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace {

namespace fs = std::filesystem;

// folder -> folders of ours it may include (besides itself).
const std::map<std::string, std::set<std::string>>& Allowed() {
  static const auto* m = new std::map<std::string, std::set<std::string>>{
      {"io", {}},
      {"vlog", {"io"}},
      {"lsm", {"io"}},
      {"gc", {"vlog", "io"}},
      {"core", {"gc", "lsm", "vlog", "io", "cairn"}},
      // Tools, benchmarks and cross-folder tests use the public API, and
      // readers of the formats they dump or test.
      {"tools", {"cairn", "core", "gc", "lsm", "vlog", "io"}},
      {"bench", {"cairn", "core", "gc", "lsm", "vlog", "io"}},
      {"tests", {"cairn", "core", "gc", "lsm", "vlog", "io"}},
      {"examples", {"cairn"}},
  };
  return *m;
}

TEST(LayeringTest, IncludesFollowTheLayering) {
  const fs::path root = CAIRN_SOURCE_DIR;
  const std::regex include_re(R"re(^\s*#\s*include\s*"([^"/]+)/)re");
  int files_checked = 0;
  for (const auto& [folder, allowed] : Allowed()) {
    if (!fs::exists(root / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      const auto ext = entry.path().extension();
      if (ext != ".h" && ext != ".cc") continue;
      ++files_checked;
      std::ifstream in(entry.path());
      std::string line;
      int lineno = 0;
      while (std::getline(in, line)) {
        ++lineno;
        std::smatch m;
        if (!std::regex_search(line, m, include_re)) continue;
        const std::string target = m[1];
        if (!Allowed().count(target) && target != "cairn") continue;  // absl/, gtest/, ...
        if (target == folder) continue;
        EXPECT_TRUE(allowed.count(target))
            << fs::relative(entry.path(), root).string() << ":" << lineno << " includes "
            << target << "/, which " << folder << "/ may not use: " << line;
      }
    }
  }
  EXPECT_GT(files_checked, 10);
}

TEST(LayeringTest, PublicHeadersIncludeOnlyStdAbslAndCairn) {
  const fs::path dir = fs::path(CAIRN_SOURCE_DIR) / "core" / "include" / "cairn";
  const std::regex include_re(R"re(^\s*#\s*include\s*"([^"]+)")re");
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include_re)) continue;
      const std::string inc = m[1];
      EXPECT_TRUE(inc.rfind("absl/", 0) == 0 || inc.rfind("cairn/", 0) == 0)
          << entry.path().filename().string() << " includes " << inc;
    }
  }
}

}  // namespace
