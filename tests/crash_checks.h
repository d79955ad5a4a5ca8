// Checks both crash suites (tests/crash_test.cc, kill -9; tests/
// power_loss_test.cc, power loss) make after each reopen: the seed a run
// starts from, the scan of the recovered database and point reads against
// it. gtest assertions; test code only.
#ifndef CAIRN_TESTS_CRASH_CHECKS_H_
#define CAIRN_TESTS_CRASH_CHECKS_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "gtest/gtest.h"
#include "io/testing/status_matchers.h"
#include "tests/crash_op_log.h"

namespace cairn::crash {

// CAIRN_LONG=1 asks for the long run.
inline bool LongRun() {
  const char* l = std::getenv("CAIRN_LONG");
  return l != nullptr && std::string(l) == "1";
}

// CAIRN_CRASH_SEED when set, else a fresh random seed.
inline uint64_t CrashBaseSeed() {
  if (const char* s = std::getenv("CAIRN_CRASH_SEED")) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (uint64_t{rd()} << 32) | rd();
}

// Every key and value a full scan of db returns; the scan's status must be OK.
inline void ScanAll(DB* db, Model* out) {
  auto it = db->NewIterator(ReadOptions());
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    out->emplace(std::string(it->key()), std::string(it->value()));
  }
  ASSERT_OK(it->status());
}

// Get agrees with the scan (recovered) for every key ops touched.
inline void ExpectPointReadsAgree(DB* db, const Model& recovered,
                                  const std::vector<LoggedOp>& ops) {
  std::set<std::string> touched;
  for (const LoggedOp& op : ops) {
    for (const Update& u : op.updates) {
      touched.insert(u.key);
      if (u.range_end.empty()) continue;
      // A range delete touches every key of its range: those the scan
      // still shows, and (the workload's keys being "key%05d") the others.
      for (auto it = recovered.lower_bound(u.key);
           it != recovered.end() && it->first < u.range_end; ++it) {
        touched.insert(it->first);
      }
      int first = 0, end = 0;
      if (std::sscanf(u.key.c_str(), "key%d", &first) == 1 &&
          std::sscanf(u.range_end.c_str(), "key%d", &end) == 1) {
        for (int i = first; i < end; ++i) touched.insert(absl::StrFormat("key%05d", i));
      }
    }
  }
  for (const std::string& key : touched) {
    std::string v;
    const absl::Status s = db->Get(ReadOptions(), key, &v);
    auto it = recovered.find(key);
    if (it == recovered.end()) {
      ASSERT_TRUE(absl::IsNotFound(s)) << key << ": " << s;
    } else {
      ASSERT_TRUE(s.ok()) << key << ": " << s;
      ASSERT_EQ(v, it->second) << key;
    }
  }
}

}  // namespace cairn::crash

#endif  // CAIRN_TESTS_CRASH_CHECKS_H_
