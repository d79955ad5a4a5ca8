// Reads take their view without the DB mutex (core/super_version.h). These
// tests race Gets, MultiGets and scans against memtable switches, flushes,
// compactions and value-log GC, and check that no read ever misses a write
// acknowledged before it began or goes back in time. Run under TSan (label
// tsan) they also check the lock-free handoff itself.
#include <array>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

constexpr int kKeys = 64;

std::string Key(int i) { return absl::StrFormat("key%04d", i); }

// "<key>:<generation>:" padded to size: the value names its key and the
// write that produced it.
std::string Value(int key, uint64_t generation, size_t size) {
  std::string v = absl::StrFormat("%s:%d:", Key(key), generation);
  v.resize(size, 'v');
  return v;
}

uint64_t GenerationOf(const std::string& value, int key) {
  const std::string prefix = Key(key) + ":";
  EXPECT_EQ(value.substr(0, prefix.size()), prefix) << "a value of another key";
  const size_t end = value.find(':', prefix.size());
  uint64_t g = 0;
  EXPECT_TRUE(absl::SimpleAtoi(value.substr(prefix.size(), end - prefix.size()), &g)) << value;
  return g;
}

Options RaceOptions() {
  Options o;
  o.memtable_size = 64 << 10;  // switch often
  o.target_file_size = 64 << 10;
  o.value_separation_threshold = 256;
  o.value_log_segment_size = 64 << 10;
  o.gc_space_amp_trigger = 0;  // the test runs GC itself
  return o;
}

TEST(ReadViewTest, ReadsRacingFlushesCompactionsAndGcMissNoAcknowledgedWrite) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  auto opened = OpenWithFileSystem(RaceOptions(), "/db", fs);
  ASSERT_OK(opened.status());
  std::unique_ptr<DB> db = *std::move(opened);
  // acked[i]: the newest generation of key i whose Put returned.
  std::array<std::atomic<uint64_t>, kKeys> acked{};
  for (int i = 0; i < kKeys; ++i) ASSERT_OK(db->Put({}, Key(i), Value(i, 0, 600)));

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::thread writer([&] {
    for (uint64_t g = 1; !stop.load(std::memory_order_acquire); ++g) {
      for (int i = 0; i < kKeys; ++i) {
        // Small and large values: inline and separated.
        ASSERT_OK(db->Put({}, Key(i), Value(i, g, i % 2 == 0 ? 600 : 100)));
        acked[i].store(g, std::memory_order_release);
      }
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      std::array<uint64_t, kKeys> seen{};
      std::string value;
      for (uint64_t n = 0; !stop.load(std::memory_order_acquire); ++n) {
        const int i = static_cast<int>((n * 7 + t) % kKeys);
        if (t == 3 && n % 50 == 0) {
          // A scan now and then: every key, each at or after what was acked.
          std::array<uint64_t, kKeys> floor;
          for (int k = 0; k < kKeys; ++k) floor[k] = acked[k].load(std::memory_order_acquire);
          auto it = db->NewIterator({});
          int k = 0;
          for (it->SeekToFirst(); it->Valid(); it->Next(), ++k) {
            ASSERT_EQ(it->key(), Key(k));
            ASSERT_GE(GenerationOf(std::string(it->value()), k), floor[k]);
          }
          ASSERT_OK(it->status());
          ASSERT_EQ(k, kKeys);
          continue;
        }
        const uint64_t floor = acked[i].load(std::memory_order_acquire);
        ASSERT_OK(db->Get({}, Key(i), &value));
        const uint64_t g = GenerationOf(value, i);
        ASSERT_GE(g, floor) << "missed a write acknowledged before the read";
        ASSERT_GE(g, seen[i]) << "went back in time";
        seen[i] = g;
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  // Enough rounds that readers overlap many switches, flushes,
  // compactions and collections (the writer switches memtables on its own
  // too), whatever the scheduler does.
  for (int round = 0; round < 8 || reads.load() < 20000; ++round) {
    ASSERT_OK(db->Flush());
    if (round % 2 == 0) {
      ASSERT_OK(db->CompactRange(nullptr, nullptr));
    }
    ASSERT_OK(db->RunGC().status());
  }
  stop.store(true, std::memory_order_release);
  writer.join();
  for (auto& r : readers) r.join();
  EXPECT_GT(reads.load(), 0u);
}

TEST(ReadViewTest, MultiGetSeesOneStateWhileMemtablesSwitch) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  auto opened = OpenWithFileSystem(RaceOptions(), "/db", fs);
  ASSERT_OK(opened.status());
  std::unique_ptr<DB> db = *std::move(opened);
  // Each batch writes one generation to every key atomically; a MultiGet of
  // all keys must see one generation for all of them.
  auto write_generation = [&](uint64_t g) {
    WriteBatch batch;
    for (int i = 0; i < kKeys; ++i) batch.Put(Key(i), Value(i, g, i % 2 == 0 ? 600 : 100));
    return db->Write({}, batch);
  };
  ASSERT_OK(write_generation(0));
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t g = 1; !stop.load(std::memory_order_acquire); ++g) {
      ASSERT_OK(write_generation(g));
    }
  });
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back(Key(i));
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  for (int n = 0; n < 200; ++n) {
    std::vector<std::string> values;
    const std::vector<absl::Status> statuses = db->MultiGet({}, views, &values);
    const uint64_t g = GenerationOf(values[0], 0);
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_OK(statuses[i]);
      ASSERT_EQ(GenerationOf(values[i], i), g) << "key " << i << " of batch " << n;
    }
    if (n % 40 == 0) {
      ASSERT_OK(db->Flush());
    }
  }
  stop.store(true, std::memory_order_release);
  writer.join();
}

}  // namespace
}  // namespace cairn
