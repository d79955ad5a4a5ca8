// Background value-log GC through the DB (issue 12): the space bound under
// sustained overwrites and after a settle step (one that counts the
// garbage an estimate misses), a close or a second job
// during a collection leaving nothing uncounted, a small key set
// overwritten before any flush, short sessions that leave no segment
// each behind, and small segments merged.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "core/testing/gc_helpers.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/status_macros.h"
#include "io/memory_file_system.h"
#include "lsm/filename.h"
#include "vlog/vlog_format.h"

namespace cairn {
namespace {

using gc_testing::GcOptions;
using gc_testing::Value;
using gc_testing::SegmentFiles;
using gc_testing::SegmentBytes;
using gc_testing::ExpectModel;
using gc_testing::ReopenAndExpectModel;

// What GC saw, printed where a space bound is about to fail.
void PrintStats(DB* db) {
  std::string text;
  db->GetProperty("cairn.stats", &text);
  std::printf("%s\n", text.c_str());
}

// Puts key00000 .. key<n-1>, key i with Value(seed + i, size).
absl::Status PutEach(DB* db, int n, size_t size, int seed) {
  for (int i = 0; i < n; ++i) {
    CAIRN_RETURN_IF_ERROR(db->Put({}, absl::StrFormat("key%05d", i), Value(seed + i, size)));
  }
  return absl::OkStatus();
}

// Issue 6's space bound: a fixed live set overwritten 5 times, in a fresh
// random order each time, with background GC at its defaults. The value log
// stays within 2x the live bytes throughout (sampled), and within 1.5x once
// the writes stop and background work settles. Garbage counting keeps up
// through compactions of L0 forced for the value log (docs/gc.md).
TEST(GcSpaceTest, FiveOverwritesOfAFixedLiveSetStayWithinTheBound) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;
  o.memtable_size = 64 << 10;  // the smallest allowed: ~1,400 keys a memtable
  o.value_separation_threshold = 256;
  o.value_log_segment_size = 256 << 10;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  constexpr int kKeys = 12000;
  constexpr size_t kValueSize = 1000;
  // A record: 13-byte header, the 8-byte key, the value.
  const double live = kKeys * (kValueSize + 8 + 13);
  std::mt19937 rng(11);
  std::vector<int> order(kKeys);
  for (int i = 0; i < kKeys; ++i) order[i] = i;
  double max_amp = 0;
  for (int round = 0; round <= 5; ++round) {  // the load, then 5 overwrites
    std::shuffle(order.begin(), order.end(), rng);
    for (int j = 0; j < kKeys; ++j) {
      const std::string k = absl::StrFormat("key%05d", order[j]);
      ASSERT_TRUE(db->Put({}, k, Value(round * 100003 + order[j], kValueSize)).ok());
      // No pacing: the in-memory file system writes far faster than GC can
      // read and look up, so the delayed-write rate (gc::GcController) is
      // what keeps the bound, without ever holding up GC's own rewrites.
      if (round > 0 && j % 250 == 0) max_amp = std::max(max_amp, SegmentBytes(fs.get()) / live);
    }
  }
  ASSERT_TRUE(db->Flush().ok());
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  // Background GC finishes what the last writes left (bounded wait: up to
  // 20 s, for the sanitizer builds on a loaded 2-core runner, where 5 s
  // once ended at 1.51).
  double final_amp = SegmentBytes(fs.get()) / live;
  for (int i = 0; i < 400 && final_amp > 1.5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    final_amp = SegmentBytes(fs.get()) / live;
  }
  const Stats st = db->GetStats();
  std::printf("value-log space amplification: max %.2f, final %.2f; gc wrote %.2f per user byte; "
              "writes delayed %.2f s, longest wait %.1f ms (delay set %.1f ms), %llu stops\n",
              max_amp, final_amp, static_cast<double>(st.gc_bytes_written) / st.user_bytes_written,
              st.stall_micros / 1e6, st.stall_max_micros / 1e3, st.stall_max_delay_micros / 1e3,
              static_cast<unsigned long long>(st.stall_stops));
  // Writes are slowed, never held: no delay for value-log space past the
  // controller's 100 ms cap. The delay the engine set is checked, not the
  // wait as measured: that one also holds the waits for this test's tiny
  // memtables to flush (hundreds of stops), which a loaded sanitizer
  // runner stretched to 157 ms once.
  EXPECT_LE(st.stall_max_delay_micros, 100'000u);
  EXPECT_LE(max_amp, 2.0);
  EXPECT_LE(final_amp, 1.5);
  EXPECT_GT(st.gc_runs, 0u);
  // Every value reads back as last written.
  for (int i = 0; i < kKeys; i += 7) {
    std::string v;
    ASSERT_TRUE(db->Get({}, absl::StrFormat("key%05d", i), &v).ok());
    ASSERT_EQ(v, Value(5 * 100003 + i, kValueSize));
  }
}

// A settle step (WaitForBackgroundWork) leaves a burst that stayed under
// GC's trigger as it is: no GC, no write amplification for space the user's
// trigger does not ask for (a random load settles at its own figure). After
// a burst that passed the trigger it brings the value log down to the
// settle mark, under the stop mark where background GC rests: the figure
// a benchmark or a user sees after WaitForBackgroundWork is the low one.
TEST(GcSpaceTest, ASettleStepBringsABurstPastTheTriggerDownToTheSettleMark) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;
  o.memtable_size = 64 << 10;
  o.value_separation_threshold = 256;
  o.separate_at_flush_below = 0;  // values reach segments as they are written
  o.value_log_segment_size = 128 << 10;
  // Overwriting the oldest keys in order kills whole runs of records, which
  // punching would free at once (core/punch_test.cc): this test is about
  // the garbage GC must copy to free.
  o.gc_punch_holes = false;
  o.gc_space_amp_trigger = 1.5;  // stop mark 1.3, settle mark 1.25
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  constexpr int kKeys = 4000;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(db->Put({}, absl::StrFormat("key%05d", i), Value(i, 1000)).ok());
  }
  // The oldest segments' keys again: about 1.3x, past the settle mark and
  // well under the trigger (the estimate of what L0 and the memtable hide
  // moves the figure while the writes run), and the first segments are
  // mostly garbage.
  int overwritten = kKeys * 30 / 100;
  for (int i = 0; i < overwritten; ++i) {
    ASSERT_TRUE(db->Put({}, absl::StrFormat("key%05d", i), Value(i + kKeys, 1000)).ok());
  }
  ASSERT_TRUE(db->CompactRange(nullptr, nullptr).ok());  // every old version counted
  const double under = db->GetStats().vlog_space_amplification;
  ASSERT_GT(under, 1.25);
  ASSERT_LT(under, 1.5);
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  Stats st = db->GetStats();
  std::printf("under the trigger: value-log space amplification %.3f before the settle, %.3f "
              "after\n",
              under, st.vlog_space_amplification);
  EXPECT_EQ(st.gc_runs, 0u) << "a burst under the trigger costs no GC";
  EXPECT_DOUBLE_EQ(st.vlog_space_amplification, under);

  // The next keys too, past the trigger: background GC starts, and the
  // settle takes the log down to the settle mark from wherever GC is.
  for (int i = overwritten; i < kKeys * 70 / 100; ++i) {
    ASSERT_TRUE(db->Put({}, absl::StrFormat("key%05d", i), Value(i + kKeys, 1000)).ok());
  }
  overwritten = kKeys * 70 / 100;
  ASSERT_TRUE(db->CompactRange(nullptr, nullptr).ok());
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  st = db->GetStats();
  std::printf("past the trigger: %.3f after the settle, %llu GC runs\n",
              st.vlog_space_amplification, static_cast<unsigned long long>(st.gc_runs));
  EXPECT_LE(st.vlog_space_amplification, 1.25);
  EXPECT_GT(st.gc_runs, 0u);
  for (int i = 0; i < kKeys; i += 13) {
    std::string v;
    ASSERT_TRUE(db->Get({}, absl::StrFormat("key%05d", i), &v).ok());
    ASSERT_EQ(v, Value(i < overwritten ? i + kKeys : i, 1000));
  }
}

// Garbage never lost track of (issue 12): a close that lands while
// background GC is moving records cancels the job cleanly. Its unwritten
// copies are counted as garbage in its last edit, so the next open finds
// nothing to recount: every byte of every segment is referenced or counted.
// With two jobs at once (Options::max_background_gc), each picks while the
// other's victims are on their way to obsolete.
TEST(GcLedgerTest, CloseDuringBackgroundGcLeavesNothingUncounted) {
  for (const int jobs : {1, 2}) {
    SCOPED_TRACE(absl::StrCat(jobs, " GC jobs at once"));
    auto fs = std::make_shared<io::MemoryFileSystem>();
    Options o;
    o.max_background_gc = jobs;
    o.memtable_size = 64 << 10;
    o.value_separation_threshold = 256;
    o.value_log_segment_size = 64 << 10;
    o.gc_bytes_per_sec = 0;
    std::map<std::string, std::string> model;
    std::mt19937 rng(5);
    uint64_t gc_runs = 0;
    for (int cycle = 0; cycle < 12; ++cycle) {
      auto opened = OpenWithFileSystem(o, "/db", fs);
      ASSERT_TRUE(opened.ok()) << opened.status();
      std::unique_ptr<DB> db = std::move(*opened);
      EXPECT_EQ(db->GetStats().gc_recounted_bytes, 0u) << "cycle " << cycle;
      for (int j = 0; j < 3000; ++j) {
        const std::string k = absl::StrFormat("key%04d", rng() % 1500);
        const std::string v = Value(cycle * 100003 + j, 700);
        const absl::Status put = db->Put({}, k, v);
        ASSERT_TRUE(put.ok()) << put;
        model[k] = v;
      }
      gc_runs += db->GetStats().gc_runs;
      db.reset();  // background GC is usually mid-job here
    }
    EXPECT_GT(gc_runs, 0u);
    ReopenAndExpectModel(o, fs, model);
  }
}

// Background jobs run side by side (Options::max_background_gc), each on
// segments it has claimed. The first job to reach its pointer rewrite is
// held there, its output already sealed in the manifest with no pointer into
// it, while writes go on: another job must finish meanwhile, on victims of
// its own, and every value must read back, before and after a reopen, with
// nothing left for the open to recount.
TEST(GcConcurrencyTest, AJobFinishesWhileAnotherWaitsBeforeItsRewrite) {
  std::atomic<bool> hook_taken{false}, held{false}, release{false};
  std::atomic<uint64_t> runs_at_hold{0}, runs_while_held{0};
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;
  o.memtable_size = 64 << 10;
  o.value_separation_threshold = 256;
  o.separate_at_flush_below = 0;  // garbage is counted at each flush
  o.value_log_segment_size = 64 << 10;
  o.max_background_gc = 2;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  DB* const raw = db.get();
  static_cast<DBImpl*>(raw)->before_gc_rewrite_for_testing = [&] {
    if (hook_taken.exchange(true)) return;
    runs_at_hold = raw->GetStats().gc_runs;
    held = true;
    // Bounded: a job that never came would fail the test, not hang it.
    for (int i = 0; i < 3000 && !release.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    runs_while_held = raw->GetStats().gc_runs - runs_at_hold.load();
    held = false;
  };
  std::map<std::string, std::string> model;
  std::mt19937 rng(23);
  for (int j = 0; j < 400000 && !release.load(); ++j) {
    const std::string k = absl::StrFormat("key%04d", rng() % 1500);
    const std::string v = Value(j, 700);
    const absl::Status put = db->Put({}, k, v);
    ASSERT_TRUE(put.ok()) << put;
    model[k] = v;
    if (j % 64 == 0 && held.load() && db->GetStats().gc_runs > runs_at_hold.load()) {
      release = true;
    }
  }
  release = true;
  while (hook_taken.load() && held.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(hook_taken.load()) << "no background job reached its rewrite";
  EXPECT_GT(runs_while_held.load(), 0u) << "no job finished while the first one waited";
  ASSERT_TRUE(db->Flush().ok());
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  ExpectModel(db.get(), model);
  db.reset();
  ReopenAndExpectModel(o, fs, model);
}

// Garbage known in time (issue 12): a small set of keys overwritten again
// and again fills the memtable with garbage long before its own bytes fill
// it. The memtable is flushed by the garbage it hides, so GC can count and
// collect it: the value log stays bounded, and within 1.5x the live bytes
// plus one segment once settled. With 1 MiB segments, the default 16 MiB, and
// 64 MiB (the default until 2026-12-07), which these writes (31 MiB)
// never fill: the active segment, past GC's floor in garbage while nothing
// else is, is sealed for GC (gc::VictimPolicy::ShouldSealActive). Before
// that, 64 MiB segments left a 49 MiB value log for 2.4 MB live.
class SmallKeySetTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(SmallKeySetTest, OverwrittenBeforeAnyFlushStaysBounded) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;  // the defaults: a 64 MiB memtable, which pointers never fill
  const uint64_t segment = GetParam() == 0 ? o.value_log_segment_size : GetParam();
  o.value_log_segment_size = segment;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  constexpr int kKeys = 150;
  constexpr size_t kValueSize = 16 << 10;
  const double live = kKeys * (kValueSize + 8 + 13);
  double max_bytes = 0;
  for (int j = 0; j < 2000; ++j) {
    ASSERT_TRUE(db->Put({}, absl::StrFormat("key%04d", j % kKeys), Value(j, kValueSize)).ok());
    if (j % 50 == 0) max_bytes = std::max(max_bytes, static_cast<double>(SegmentBytes(fs.get())));
  }
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  const double final_bytes = static_cast<double>(SegmentBytes(fs.get()));
  const Stats stats = db->GetStats();
  std::printf("small key set, %llu MiB segments: value log max %.2f, final %.2f of live; "
              "%llu of 2000 writes delayed for space; %llu active segments sealed early\n",
              static_cast<unsigned long long>(segment >> 20), max_bytes / live,
              final_bytes / live, static_cast<unsigned long long>(stats.stall_slowdowns),
              static_cast<unsigned long long>(stats.gc_active_seals));
  if (final_bytes > 1.5 * live + (1 << 20)) PrintStats(db.get());  // for the failure below
  // Before memtables were flushed by the garbage they hide, this workload
  // grew the value log to 20x live. Segments of 1 MiB over 2.4 MB live
  // leave GC a coarse unit: the peak was measured at 2.2-3.6x live, at
  // 1.8-2.7x since a memtable is flushed for the worst case of what its
  // pointers hide, and at 1.6-2.4x (median 1.66) since that flush comes
  // past 256 KiB of named values instead of 1 MiB, and at 1.44-1.92x
  // (median 1.50) since L0 is compacted for what it is estimated to hide
  // (docs/decisions/20261206_small_log_counting_lag.md): issue 12's "1.5x
  // live plus one segment" (1.93x here) held in all of 24 runs, but a busy
  // machine stretches the tail, so the bound asserted is twice the
  // allowance over live. Once settled it is back within the 1.5x target.
  EXPECT_LE(max_bytes, 2.0 * live + static_cast<double>(segment));
  EXPECT_LE(final_bytes, 1.5 * live + (1 << 20));
  // The space figures count a victim waiting for its rewrites' durability
  // as collected; a settle gives it its sync, so none is left on disk. In
  // one CI run a victim of 2.3 MiB was (final 1.96x live).
  EXPECT_EQ(stats.gc_victim_bytes_waiting, 0u);
  // Writes wait for space only while GC collects. Here the garbage sits in
  // the memtable until the flush it triggers, so GC is mostly idle: when
  // writes were delayed regardless, 773 of the 2,000 were (7.7 s of an
  // 8 s test with 1 MiB segments); now 80-150 with 1 MiB segments and
  // 160-360 with 64 MiB ones, where GC waits for the active segment.
  EXPECT_LE(stats.stall_slowdowns, 600u);
  for (int i = 0; i < kKeys; ++i) {
    std::string v;
    ASSERT_TRUE(db->Get({}, absl::StrFormat("key%04d", i), &v).ok());
    ASSERT_EQ(v, Value(1999 - ((1999 - i) % kKeys), kValueSize)) << i;
  }
  db.reset();
  // Every byte is referenced or counted across the seals and their jobs.
  opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ((*opened)->GetStats().gc_recounted_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(SegmentSizes, SmallKeySetTest,
                         ::testing::Values(uint64_t{1} << 20, uint64_t{0}, uint64_t{64} << 20),
                         [](const ::testing::TestParamInfo<uint64_t>& info) {
                           if (info.param == 0) return std::string("default_segment");
                           return absl::StrCat("segment_", info.param >> 20, "mib");
                         });

// A settle step counts the garbage the memtable and L0 hide instead of
// trusting the estimate of it. A load whose L0 compactions counted no
// garbage leaves the estimate's yield at 0; an overwrite of 60 of its 100
// keys, held in the memtable and L0 (a flush for what the memtable may
// hide comes past 256 KiB of named values, but the L0 compaction that
// would count it only once L0's worst case passes the trigger; no key
// twice), takes the value log to 1.6x live while the estimate still says
// 1.0x. Before, the settle step read that estimate and left 1.6x behind.
// Since flushes foresee what their tables hide (the test after this one),
// only the memtable's share is estimated, and GC may start before the
// settle.
TEST(GcSpaceTest, ASettleCountsWhatTheEstimateMisses) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;
  o.value_log_segment_size = 1 << 20;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  constexpr int kKeys = 100, kOverwritten = 60;
  constexpr size_t kValueSize = 16 << 10;
  const double live = kKeys * (kValueSize + 8 + 13);
  ASSERT_TRUE(PutEach(db.get(), kKeys, kValueSize, 0).ok());
  ASSERT_TRUE(db->CompactRange(nullptr, nullptr).ok());  // a load: nothing counted
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  // Past 1.5x live the flushes' foreseen garbage may start GC already: the
  // settle must bring down whatever it is left.
  ASSERT_TRUE(PutEach(db.get(), kOverwritten, kValueSize, kKeys).ok());
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  const double settled = static_cast<double>(SegmentBytes(fs.get()));
  std::printf("settled at %.2f of live\n", settled / live);
  if (settled > 1.3 * live) PrintStats(db.get());
  EXPECT_LE(settled, 1.3 * live);
  for (int i = 0; i < kKeys; ++i) {
    std::string v;
    ASSERT_TRUE(db->Get({}, absl::StrFormat("key%05d", i), &v).ok());
    ASSERT_EQ(v, Value(i < kOverwritten ? kKeys + i : i, kValueSize)) << i;
  }
  db.reset();
  opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ((*opened)->GetStats().gc_recounted_bytes, 0u);
}

// What an L0 table hides is foreseen at its flush (docs/gc.md, "Garbage
// foreseen at flush"): each flushed key's older version in the tables below
// is looked up, and the record a pointer names there is garbage GC acts on
// at once, before the compaction that counts it. Before, L0 had to be
// compacted for it (a compaction rewriting the whole level of pointers
// below) or GC waited. Here only RunGC collects and one L0 table starts no
// compaction: 40 of 100 keys overwritten and flushed are foreseen exactly;
// RunGC collects the segment they emptied with no compaction; a flush
// under a snapshot foresees nothing (the snapshot still reads the older
// versions); the compaction that counts the rest takes it off the list.
TEST(GcSpaceTest, AFlushForeseesWhatItsTableHidesAndGcActsOnItWithoutACompaction) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;
  o.value_log_segment_size = 1 << 20;
  o.gc_space_amp_trigger = 0;  // only RunGC collects
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  constexpr int kKeys = 100, kOverwritten = 40;
  constexpr size_t kValueSize = 16 << 10;
  const uint64_t record = vlog::RecordSize(8, kValueSize);
  const auto compactions = [&] {
    uint64_t n = 0;
    for (const LevelStats& l : db->GetStats().levels) n += l.compactions;
    return n;
  };
  ASSERT_TRUE(PutEach(db.get(), kKeys, kValueSize, 0).ok());
  ASSERT_TRUE(db->Flush().ok());
  ASSERT_TRUE(db->CompactRange(nullptr, nullptr).ok());
  const Stats loaded = db->GetStats();
  EXPECT_EQ(loaded.vlog_foreseen_garbage_bytes, 0u);  // a load hides nothing
  const uint64_t compactions_before = compactions();

  ASSERT_TRUE(PutEach(db.get(), kOverwritten, kValueSize, kKeys).ok());
  ASSERT_TRUE(db->Flush().ok());
  Stats st = db->GetStats();
  EXPECT_EQ(st.vlog_foreseen_garbage_bytes, kOverwritten * record);
  EXPECT_EQ(st.vlog_garbage_bytes, loaded.vlog_garbage_bytes);  // nothing counted yet
  EXPECT_EQ(st.levels[0].files, 1u);
  absl::StatusOr<GcResult> r = db->RunGC();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->victims, 1u);
  EXPECT_GE(r->segments_freed, 1u);
  EXPECT_EQ(compactions(), compactions_before);
  // The victims' foreseen records went with them.
  const uint64_t foreseen = db->GetStats().vlog_foreseen_garbage_bytes;
  EXPECT_LT(foreseen, kOverwritten * record);
  for (int i = 0; i < kKeys; ++i) {
    std::string v;
    ASSERT_TRUE(db->Get({}, absl::StrFormat("key%05d", i), &v).ok());
    ASSERT_EQ(v, Value(i < kOverwritten ? kKeys + i : i, kValueSize)) << i;
  }

  const Snapshot* snap = db->GetSnapshot();
  for (int i = kOverwritten; i < kOverwritten + 10; ++i) {
    ASSERT_TRUE(db->Put({}, absl::StrFormat("key%05d", i), Value(2 * kKeys + i, kValueSize)).ok());
  }
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(db->GetStats().vlog_foreseen_garbage_bytes, foreseen);
  ReadOptions at_snap;
  at_snap.snapshot = snap;
  std::string v;
  ASSERT_TRUE(db->Get(at_snap, absl::StrFormat("key%05d", kOverwritten), &v).ok());
  EXPECT_EQ(v, Value(kOverwritten, kValueSize));
  db->ReleaseSnapshot(snap);

  ASSERT_TRUE(db->CompactRange(nullptr, nullptr).ok());
  st = db->GetStats();
  EXPECT_EQ(st.vlog_foreseen_garbage_bytes, 0u);
  EXPECT_GT(st.vlog_garbage_bytes, loaded.vlog_garbage_bytes);
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(db->Get({}, absl::StrFormat("key%05d", i), &v).ok());
    const int seed = i < kOverwritten ? kKeys + i : i < kOverwritten + 10 ? 2 * kKeys + i : i;
    ASSERT_EQ(v, Value(seed, kValueSize)) << i;
  }
}

// GC's rewrites hide no garbage (docs/gc.md, "GC's rewrites hide no
// garbage"): each supersedes a record of a victim already collected. When
// the estimate scaled the bytes they name by the yield like a user write's,
// a settle's own rewrites read as fresh garbage, held the figure over the
// settle mark, and GC went on past it (a 4 KiB load of 1 GiB settled at
// 1.07-1.17x instead of near 1.25). Here, with background GC off: a yield
// of 0.5 from one L0 compaction, then RunGC's rewrites in the memtable and,
// once flushed, in L0: the figure GC steers by stays the counted one.
TEST(GcSpaceTest, GcRewritesAddNothingToTheHiddenGarbageEstimate) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;
  o.gc_space_amp_trigger = 0;
  o.value_log_segment_size = 1 << 20;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  auto* impl = static_cast<DBImpl*>(db.get());
  constexpr int kKeys = 200;
  constexpr size_t kValueSize = 32 << 10;  // written to the log as they come
  ASSERT_TRUE(PutEach(db.get(), kKeys, kValueSize, 0).ok());
  ASSERT_TRUE(db->CompactRange(nullptr, nullptr).ok());  // counts nothing
  // Two keys of every three overwritten: each of the load's segments is two
  // thirds garbage once the L0 compaction counts it (past RunGC's floor of
  // a half), and the yield is 0.5 (half of 0, half of 1).
  for (int i = 0; i < kKeys; ++i) {
    if (i % 3 == 0) continue;
    ASSERT_TRUE(db->Put({}, absl::StrFormat("key%05d", i), Value(kKeys + i, kValueSize)).ok());
  }
  ASSERT_TRUE(db->CompactRange(nullptr, nullptr).ok());
  const double counted_before = impl->ValueLogSpaceAmplificationForTesting(false);
  EXPECT_GT(counted_before, 1.3);
  EXPECT_DOUBLE_EQ(impl->ValueLogSpaceAmplificationForTesting(true), counted_before);
  auto r = db->RunGC();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GE(r->records_relocated, 30u);  // the rewrites are in the memtable
  const double counted = impl->ValueLogSpaceAmplificationForTesting(false);
  EXPECT_LT(counted, counted_before);
  EXPECT_DOUBLE_EQ(impl->ValueLogSpaceAmplificationForTesting(true), counted);
  ASSERT_TRUE(db->Flush().ok());  // now in an L0 table
  EXPECT_DOUBLE_EQ(impl->ValueLogSpaceAmplificationForTesting(true),
                   impl->ValueLogSpaceAmplificationForTesting(false));
  for (int i = 0; i < kKeys; ++i) {
    std::string v;
    ASSERT_TRUE(db->Get({}, absl::StrFormat("key%05d", i), &v).ok());
    ASSERT_EQ(v, Value(i % 3 == 0 ? i : kKeys + i, kValueSize)) << i;
  }
}

// RunGC alone (no background GC): it seals an active segment that holds
// most of the garbage, and collects it.
TEST(GcLedgerTest, RunGcSealsAnActiveSegmentFullOfGarbage) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;
  o.gc_space_amp_trigger = 0;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  constexpr int kKeys = 50;
  constexpr size_t kValueSize = 32 << 10;
  for (int j = 0; j < 500; ++j) {
    ASSERT_TRUE(db->Put({}, absl::StrFormat("key%04d", j % kKeys), Value(j, kValueSize)).ok());
  }
  ASSERT_TRUE(db->Flush().ok());  // counts what the memtable hides
  const uint64_t before = SegmentBytes(fs.get());
  EXPECT_GE(before, 500u * kValueSize);
  auto r = db->RunGC();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->segments_freed, 1u);
  EXPECT_EQ(db->GetStats().gc_active_seals, 1u);
  const uint64_t after = SegmentBytes(fs.get());
  EXPECT_LE(after, 2u * kKeys * kValueSize) << "from " << before;
  for (int i = 0; i < kKeys; ++i) {
    std::string v;
    ASSERT_TRUE(db->Get({}, absl::StrFormat("key%04d", i), &v).ok());
    ASSERT_EQ(v, Value(450 + i, kValueSize)) << i;
  }
  // Writes go on into a new active segment.
  ASSERT_TRUE(db->Put({}, "key0000", Value(7, kValueSize)).ok());
  std::string v;
  ASSERT_TRUE(db->Get({}, "key0000", &v).ok());
  EXPECT_EQ(v, Value(7, kValueSize));
  db.reset();
  opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ((*opened)->GetStats().gc_recounted_bytes, 0u);
  ASSERT_TRUE((*opened)->Get({}, "key0000", &v).ok());
  EXPECT_EQ(v, Value(7, kValueSize));
}

// Deletions (issue 12, space bounded in the life of a database): a
// deletion names no value, so nothing counted the values it hides below
// until its memtable filled, 64 MiB of deletions later, and its table was
// compacted. Deleting three quarters of a database left every byte on disk.
// Now a deletion counts as one value of the mean size in the garbage the
// memtable may hide: the memtable is flushed for it, L0 is compacted for it,
// and GC gives the space back.
TEST(GcLedgerTest, DeletingMostKeysGivesTheirSpaceBack) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;
  o.value_log_segment_size = 1 << 20;
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<DB> db = std::move(*opened);
  constexpr int kKeys = 2000;
  constexpr size_t kValueSize = 8 << 10;
  ASSERT_TRUE(PutEach(db.get(), kKeys, kValueSize, 0).ok());
  ASSERT_TRUE(db->Flush().ok());
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  const uint64_t full = SegmentBytes(fs.get());
  for (int i = 0; i < kKeys; ++i) {
    if (i % 4 == 0) continue;
    ASSERT_TRUE(db->Delete({}, absl::StrFormat("key%05d", i)).ok());
  }
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  const double live = (kKeys / 4) * (kValueSize + 8 + 13);
  const uint64_t after = SegmentBytes(fs.get());
  std::printf("deletions: value log %.1f MiB full, %.1f MiB after deleting 3/4 (%.2f of live)\n",
              full / 1048576.0, after / 1048576.0, after / live);
  EXPECT_GE(static_cast<double>(full), 3.5 * live);
  EXPECT_LE(static_cast<double>(after), 1.5 * live + (1 << 20));
  const Stats stats = db->GetStats();
  EXPECT_EQ(stats.gc_victim_bytes_waiting, 0u);
  if (static_cast<double>(after) > 1.5 * live + (1 << 20)) PrintStats(db.get());
  for (int i = 0; i < kKeys; ++i) {
    std::string v;
    const absl::Status st = db->Get({}, absl::StrFormat("key%05d", i), &v);
    if (i % 4 == 0) {
      ASSERT_TRUE(st.ok()) << i << ": " << st;
      ASSERT_EQ(v, Value(i, kValueSize)) << i;
    } else {
      ASSERT_TRUE(absl::IsNotFound(st)) << i << ": " << st;
    }
  }
  db.reset();
  opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ((*opened)->GetStats().gc_recounted_bytes, 0u);
}

// Segment files (issue 12): a short session continues the segment the last
// one left unsealed, so 300 sessions do not leave 300 segment files.
// Both placements: values separated as written continue the last session's
// segment; values left for the flush (the default) are few enough per
// session that the flush at open keeps them in its table.
class ShortSessionsTest : public ::testing::TestWithParam<size_t> {};

TEST_P(ShortSessionsTest, ShortSessionsLeaveNoSegmentPerSession) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o = GcOptions();
  o.value_log_segment_size = 1 << 20;
  o.separate_at_flush_below = GetParam();
  for (int session = 0; session < 300; ++session) {
    auto opened = OpenWithFileSystem(o, "/db", fs);
    ASSERT_TRUE(opened.ok()) << opened.status();
    ASSERT_TRUE((*opened)->Put({}, absl::StrFormat("key%04d", session), Value(session, 1000)).ok());
  }
  // 300 records of about 1 KiB fit in one 1 MiB segment.
  EXPECT_LE(SegmentFiles(fs.get()), 1u);
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ((*opened)->GetStats().gc_recounted_bytes, 0u);
  for (int session = 0; session < 300; ++session) {
    std::string v;
    ASSERT_TRUE((*opened)->Get({}, absl::StrFormat("key%04d", session), &v).ok());
    ASSERT_EQ(v, Value(session, 1000));
  }
}

INSTANTIATE_TEST_SUITE_P(Placement, ShortSessionsTest,
                         ::testing::Values(size_t{0}, Options().separate_at_flush_below));

// Issue 12, item 6, with background GC: sessions that each flush a few
// values left for the flush leave a small segment each; below its trigger
// GC merges them once there are gc::kMinSmallSegmentsToMerge, and never
// fewer (docs/gc.md, "Merging small segments").
TEST(GcMergeTest, BackgroundGcMergesSmallSegmentsBelowItsTrigger) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o = gc_testing::SmallSegmentOptions();
  std::map<std::string, std::string> model;
  // Seven sessions without background GC: seven small segments.
  gc_testing::SmallSegmentSessions(o, fs, 0, 7, &model);
  o.gc_space_amp_trigger = 1.5;  // background GC at its default from here
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  DB* db = opened->get();
  ASSERT_TRUE(db->WaitForBackgroundWork().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a GC round or more
  EXPECT_EQ(SegmentFiles(fs.get()), 7u);
  EXPECT_EQ(db->GetStats().gc_runs, 0u);
  // The eighth: nothing is garbage, only a merge brings the count down.
  gc_testing::PutTenAndFlush(db, 7, &model);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (SegmentFiles(fs.get()) > 1 && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(db->WaitForBackgroundWork().ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(SegmentFiles(fs.get()), 1u);
  const Stats st = db->GetStats();
  EXPECT_EQ(st.gc_runs, 8u);
  EXPECT_GE(st.gc_bytes_relocated, 8u * 10 * 1000);
  EXPECT_EQ(st.gc_records_dropped, 0u);
  ExpectModel(db, model);
  opened->reset();
  ReopenAndExpectModel(o, fs, model);
}

}  // namespace
}  // namespace cairn
