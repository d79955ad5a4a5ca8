// Readers against GC, made to race (issue 63, item 1): tiny segments and
// memtables, no value cache, segment readers closed all the time (a reader
// cache that keeps nothing open), background GC at a low trigger with
// merges and punches, a driver thread that flushes, runs GC and releases
// snapshots, and readers that pause between lookup and value read. Every
// kind of read runs: Get, Get into a PinnableValue, GetRange, MultiGet,
// scans with prefetch, and iterators whose snapshot is released under
// them. Every read must succeed and show a value its key was given; the
// rule that keeps their segments on disk is core/retention.h's.
//
// Both I/O backends, on a real directory. A few seconds each by default;
// CAIRN_LONG=1 runs 15 minutes each (30 in all), CAIRN_RACE_SECONDS sets
// the seconds per backend.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "cairn/db.h"
#include "cairn/write_batch.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"

namespace cairn {
namespace {

constexpr int kKeys = 400;

std::string Key(int i) { return absl::StrFormat("key%05d", i); }

// A value that names its key and version, so that a reader can tell a
// value its key was given from anything else: "key00012/37/" then bytes
// drawn from both, 600 to 6,000 bytes in all.
std::string MakeValue(int key, uint64_t version) {
  std::string v = absl::StrCat(Key(key), "/", version, "/");
  std::mt19937_64 rng(key * 1000003ULL + version);
  const size_t size = 600 + rng() % 5400;
  while (v.size() < size) v.push_back(static_cast<char>('a' + rng() % 26));
  return v;
}

// Empty when value is one MakeValue gives key, else what is wrong.
std::string CheckValue(const std::string& key, const std::string& value) {
  const size_t slash = value.find('/');
  if (slash == std::string::npos || value.substr(0, slash) != key) {
    return absl::StrCat("value of ", key, " names another key: ", value.substr(0, 24), " (",
                        value.size(), " bytes)");
  }
  const size_t second = value.find('/', slash + 1);
  uint64_t version;
  int index;
  if (second == std::string::npos ||
      !absl::SimpleAtoi(value.substr(slash + 1, second - slash - 1), &version) ||
      !absl::SimpleAtoi(key.substr(3), &index)) {
    return absl::StrCat("value of ", key, " is malformed");
  }
  if (MakeValue(index, version) != value) return absl::StrCat("value of ", key, " is damaged");
  return "";
}

uint64_t SecondsPerBackend() {
  if (const char* s = std::getenv("CAIRN_RACE_SECONDS")) {
    uint64_t n;
    if (absl::SimpleAtoi(s, &n) && n > 0) return n;
  }
  if (const char* l = std::getenv("CAIRN_LONG"); l != nullptr && std::string(l) == "1") {
    return 900;
  }
  return 3;
}

class GcReadRaceTest : public ::testing::TestWithParam<IoBackendOption> {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/cairn_gc_read_race_", getpid(), "_",
                        static_cast<int>(GetParam()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Fail(std::string what) {
    absl::MutexLock l(&mu_);
    if (failures_.size() < 20) failures_.push_back(std::move(what));
    ++failure_count_;
  }
  void CheckRead(std::string_view key_view, const absl::Status& s, std::string_view value,
                 const char* how) {
    const std::string key(key_view);
    if (!s.ok()) {
      Fail(absl::StrCat(how, " ", key, ": ", s.ToString()));
      return;
    }
    if (std::string bad = CheckValue(key, std::string(value)); !bad.empty()) {
      Fail(absl::StrCat(how, ": ", bad));
    }
  }

  std::string dir_;
  absl::Mutex mu_;
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
  uint64_t failure_count_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST_P(GcReadRaceTest, EveryReadSucceedsWhileGcDeletesAndPunches) {
  Options o;
  o.io_backend = GetParam();
  o.memtable_size = 64 << 10;
  o.target_file_size = 64 << 10;
  o.value_separation_threshold = 512;
  o.separate_at_flush_below = 2048;  // some values wait for the flush: flush segments, merges
  o.value_log_segment_size = 64 << 10;
  o.gc_space_amp_trigger = 1.1;
  o.cache_size = 0;  // every value read goes to its segment
  auto opened = DB::Open(o, dir_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  DB* db = opened->get();
  auto* impl = static_cast<DBImpl*>(db);
  // Each key starts with a value, so that every read finds one.
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(db->Put({}, Key(i), MakeValue(i, 0)).ok());
  // Readers pause between lookup and value read now and then: the window
  // GC must not delete or punch in.
  std::atomic<uint64_t> pauses{0};
  impl->after_value_lookup_for_testing = [&pauses] {
    thread_local std::mt19937 rng(std::random_device{}());
    if (rng() % 3 == 0) {
      pauses.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 10000));
    }
  };

  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(SecondsPerBackend());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0}, writes{0}, gc_runs{0}, flushes{0};
  std::vector<std::thread> threads;
  // The writer: overwrites at random, now and then in a synced batch.
  threads.emplace_back([&] {
    std::mt19937_64 rng(1);
    std::vector<uint64_t> version(kKeys, 0);
    while (!stop.load()) {
      const int k = static_cast<int>(rng() % kKeys);
      WriteOptions wo;
      wo.sync = rng() % 64 == 0;
      absl::Status s;
      if (rng() % 32 == 0) {
        // A run of neighbours in one batch: their records lie side by side,
        // and the next such batch over them leaves a run to punch.
        const int first = k / 40 * 40;
        WriteBatch batch;
        for (int j = first; j < first + 40 && j < kKeys; ++j) {
          batch.Put(Key(j), MakeValue(j, ++version[j]));
        }
        s = db->Write(wo, batch);
      } else {
        s = db->Put(wo, Key(k), MakeValue(k, ++version[k]));
      }
      if (!s.ok()) Fail(absl::StrCat("write at ", Key(k), ": ", s.ToString()));
      writes.fetch_add(1, std::memory_order_relaxed);
    }
  });
  // The driver: flushes, GC rounds and closed segment readers, so that
  // reads start right after each.
  threads.emplace_back([&] {
    std::mt19937_64 rng(2);
    while (!stop.load()) {
      switch (rng() % 4) {
        case 0:
          if (absl::Status s = db->Flush(); !s.ok()) Fail(absl::StrCat("flush: ", s.ToString()));
          flushes.fetch_add(1, std::memory_order_relaxed);
          break;
        case 1: {
          absl::StatusOr<GcResult> r = db->RunGC();
          if (!r.ok()) Fail(absl::StrCat("RunGC: ", r.status().ToString()));
          gc_runs.fetch_add(1, std::memory_order_relaxed);
          break;
        }
        default:
          impl->EvictSegmentReadersForTesting();
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          break;
      }
    }
  });
  // The readers.
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      while (!stop.load()) {
        const int k = static_cast<int>(rng() % kKeys);
        const std::string key = Key(k);
        switch (rng() % 8) {
          case 0: {
            std::string v;
            const absl::Status s = db->Get({}, key, &v);
            CheckRead(key, s, v, "Get");
            break;
          }
          case 1:
          case 6: {
            PinnableValue v;
            const absl::Status s = db->Get({}, key, &v);
            CheckRead(key, s, v.value(), "Get into a PinnableValue");
            break;
          }
          case 2:
          case 7: {
            // The key's name and version lead every value: a range that
            // starts at 0 and holds them checks against the same value.
            std::string part;
            const absl::Status s = db->GetRange({}, key, 0, 1 << 20, &part);
            CheckRead(key, s, part, "GetRange");
            break;
          }
          case 3: {
            std::vector<std::string> keys;
            for (int j = 0; j < 8; ++j) keys.push_back(Key(static_cast<int>(rng() % kKeys)));
            const std::vector<std::string_view> views(keys.begin(), keys.end());
            std::vector<std::string> values;
            const std::vector<absl::Status> st = db->MultiGet({}, views, &values);
            for (size_t j = 0; j < keys.size(); ++j) {
              CheckRead(keys[j], st[j], values[j], "MultiGet");
            }
            break;
          }
          case 4: {
            ReadOptions ro;
            ro.value_prefetch_depth = 8;
            std::unique_ptr<Iterator> it = db->NewIterator(ro);
            int n = 0;
            for (it->Seek(key); it->Valid() && n < 30; it->Next(), ++n) {
              CheckRead(it->key(), absl::OkStatus(), it->value(), "scan");
            }
            if (!it->status().ok()) {
              Fail(absl::StrCat("scan from ", key, ": ", it->status().ToString()));
            }
            break;
          }
          case 5: {
            // An iterator on a snapshot, the snapshot released mid-scan.
            const Snapshot* snapshot = db->GetSnapshot();
            ReadOptions ro;
            ro.snapshot = snapshot;
            std::unique_ptr<Iterator> it = db->NewIterator(ro);
            int n = 0;
            for (it->Seek(key); it->Valid() && n < 30; it->Next(), ++n) {
              if (n == 3) {
                db->ReleaseSnapshot(snapshot);
                snapshot = nullptr;
              }
              CheckRead(it->key(), absl::OkStatus(), it->value(), "snapshot scan");
            }
            if (!it->status().ok()) {
              Fail(absl::StrCat("snapshot scan from ", key, ": ", it->status().ToString()));
            }
            if (snapshot != nullptr) db->ReleaseSnapshot(snapshot);
            break;
          }
        }
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    absl::MutexLock l(&mu_);
    if (failure_count_ > 0) break;
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  impl->after_value_lookup_for_testing = nullptr;
  const Stats st = db->GetStats();
  std::printf("race %s: %llu reads (%llu paused), %llu writes, %llu flushes, %llu RunGC, "
              "%llu segments freed, %llu punched runs\n",
              GetParam() == IoBackendOption::kPosix ? "posix" : "io_uring",
              static_cast<unsigned long long>(reads.load()),
              static_cast<unsigned long long>(pauses.load()),
              static_cast<unsigned long long>(writes.load()),
              static_cast<unsigned long long>(flushes.load()),
              static_cast<unsigned long long>(gc_runs.load()),
              static_cast<unsigned long long>(st.gc_segments_freed),
              static_cast<unsigned long long>(st.gc_punched_runs));
  absl::MutexLock l(&mu_);
  EXPECT_EQ(failure_count_, 0u);
  for (const std::string& f : failures_) ADD_FAILURE() << f;
  EXPECT_GT(st.gc_segments_freed, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, GcReadRaceTest,
                         ::testing::Values(IoBackendOption::kPosix, IoBackendOption::kUring),
                         [](const auto& info) {
                           return info.param == IoBackendOption::kPosix ? "posix" : "io_uring";
                         });

}  // namespace
}  // namespace cairn
