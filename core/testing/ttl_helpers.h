// Helpers of the expiry and compaction-filter tests: a Clock whose time
// moves only when the test says, small options, and a fixture over a DB in
// memory.
#ifndef CAIRN_CORE_TESTING_TTL_HELPERS_H_
#define CAIRN_CORE_TESTING_TTL_HELPERS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "cairn/compaction_filter.h"
#include "cairn/db.h"
#include "cairn/options.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn::testing_clock {

class FakeClock : public Clock {
 public:
  // Starts on 2026-12-07 (a realistic epoch time, far from 0).
  static constexpr uint64_t kStart = uint64_t{1'796'601'600} * 1'000'000;

  uint64_t NowMicros() override { return now_.load(); }
  void Set(uint64_t micros) { now_.store(micros); }
  void AdvanceSeconds(uint64_t s) { now_.fetch_add(s * 1'000'000); }

 private:
  std::atomic<uint64_t> now_{kStart};
};

// Small options for the expiry and filter tests: separated values from 100
// bytes on (or every value inline), written to the value log as they come;
// blocks cached, values not (every value read is a counted value-log read);
// GC only when a test runs it.
inline Options SmallOptions(bool separated) {
  Options o;
  o.cache_size = 0;
  o.block_cache_size = 4 << 20;
  o.value_separation_threshold = separated ? 100 : kInlineValues;
  o.separate_at_flush_below = 0;
  o.memtable_size = 1 << 20;
  o.gc_space_amp_trigger = 0;
  return o;
}

// A DB in memory under SmallOptions(GetParam()) with clock_ and filter_
// (set filter_ before SmallDbTest::SetUp). GetParam(): separated values or
// inline ones.
class SmallDbTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    fs_ = std::make_shared<io::MemoryFileSystem>();
    clock_ = std::make_shared<FakeClock>();
    Open();
  }
  Options MakeOptions() {
    Options o = SmallOptions(GetParam());
    o.clock = clock_;
    o.compaction_filter = filter_;
    return o;
  }
  void Open() {
    db_.reset();
    auto db = OpenWithFileSystem(MakeOptions(), "/db", fs_);
    ASSERT_OK(db);
    db_ = std::move(*db);
  }
  // The key's value, or "NOT_FOUND".
  std::string Get(const std::string& k) {
    std::string v;
    const absl::Status s = db_->Get({}, k, &v);
    EXPECT_TRUE(s.ok() || absl::IsNotFound(s)) << s;
    return s.ok() ? v : "NOT_FOUND";
  }

  std::shared_ptr<io::MemoryFileSystem> fs_;
  std::shared_ptr<FakeClock> clock_;
  std::shared_ptr<CompactionFilter> filter_;
  std::unique_ptr<DB> db_;
};

}  // namespace cairn::testing_clock

#endif  // CAIRN_CORE_TESTING_TTL_HELPERS_H_
