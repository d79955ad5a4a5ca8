// SpaceLedger alone, with no DB: its events and the figures it answers
// with (core/space_ledger.h; docs/gc.md, "Counting garbage in time").
#include "core/space_ledger.h"

#include <array>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "lsm/version.h"

namespace cairn {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class SpaceLedgerTest : public ::testing::Test {
 protected:
  SpaceLedger::Settings Settings() const {
    return {.gc_space_amp_trigger = 1.5,
            .memtable_size = 64 * kMiB,
            .max_memtable_value_bytes = 512 * kMiB};
  }
  SpaceLedger::Sources Sources() {
    return {.figures = [this] { return figures_; },
            .current_version = [this] { return version_; },
            .average_record = [] { return uint64_t{4096}; }};
  }
  // A version whose L0 holds the given tables (number, entries).
  void SetLevel0(const std::vector<std::pair<uint64_t, uint64_t>>& tables) {
    std::array<lsm::FileList, lsm::kNumLevels> files;
    for (const auto& [number, entries] : tables) {
      auto f = std::make_shared<lsm::FileMetaData>();
      f->number = number;
      f->num_entries = entries;
      files[0].push_back(f);
    }
    version_ = std::make_shared<lsm::Version>(files);
  }

  SpaceLedger::Figures figures_;
  std::shared_ptr<const lsm::Version> version_ = std::make_shared<lsm::Version>();
};

TEST_F(SpaceLedgerTest, TheFigureCountsTheSetTheWaitingAndGcsCopies) {
  SpaceLedger ledger(Settings(), Sources());
  figures_.set.bytes = 100 * kMiB;
  figures_.set.garbage_bytes = 30 * kMiB;
  figures_.set.punched_bytes = 10 * kMiB;  // punched garbage takes no space
  figures_.set.obsolete_bytes = 5 * kMiB;  // collected already
  figures_.active_bytes = 2 * kMiB;
  figures_.pending_victim_bytes = 5 * kMiB;
  figures_.pending_victim_garbage = 4 * kMiB;
  figures_.foreseen_bytes = 3 * kMiB;
  figures_.imm_flush_value_bytes = 1 * kMiB;
  SpaceLedger::ValueLogSpace s = ledger.Space(false);
  EXPECT_EQ(s.bytes, (90 - 10 + 2 + 1) * kMiB);
  EXPECT_EQ(s.garbage, (20 - 4 + 3) * kMiB);
  EXPECT_EQ(s.uncounted, 0u);
  // A GC job's copies: garbage while its victims stay, bytes until its
  // output is listed.
  ledger.GcCopied(6 * kMiB);
  s = ledger.Space(false);
  EXPECT_EQ(s.bytes, (83 + 6) * kMiB);
  EXPECT_EQ(s.garbage, (19 + 6) * kMiB);
  ledger.GcUnlistedReleased(6 * kMiB);
  ledger.GcCopiesReleased(6 * kMiB);
  s = ledger.Space(false);
  EXPECT_EQ(s.bytes, 83 * kMiB);
  EXPECT_EQ(s.garbage, 19 * kMiB);
  EXPECT_DOUBLE_EQ(s.amplification(), 83.0 / 64.0);
}

TEST_F(SpaceLedgerTest, TheMemtableHidesAtLeastWhatItSupersededAndNothingOfGcsRewrites) {
  SpaceLedger ledger(Settings(), Sources());
  figures_.set.bytes = 100 * kMiB;
  EXPECT_FALSE(ledger.MemHasPointers());
  ledger.GroupInserted({.named = 8 * kMiB, .superseded = 3 * kMiB});
  ledger.GroupInserted({.named = 4 * kMiB, .gc_rewrite = true});
  EXPECT_TRUE(ledger.MemHasPointers());
  // The yield is 0 until a flush or an L0 compaction shows one.
  EXPECT_EQ(ledger.MemTableGarbageEstimate(), 3 * kMiB);
  EXPECT_EQ(ledger.Space(true).uncounted, 3 * kMiB);
  // The switch hands over what the memtable names, but GC's rewrites.
  const SpaceLedger::SwitchedMemTable switched = ledger.MemTableSwitched();
  EXPECT_EQ(switched.value_bytes, 8 * kMiB);
  EXPECT_EQ(switched.deleted_bytes, 0u);
  EXPECT_FALSE(ledger.MemHasPointers());
  EXPECT_EQ(ledger.MemTableGarbageEstimate(), 0u);
}

TEST_F(SpaceLedgerTest, FlushesAndL0CompactionsTeachTheYield) {
  SpaceLedger ledger(Settings(), Sources());
  figures_.set.bytes = 100 * kMiB;
  // A flush that foresaw what it hides: exact, and half of it hid garbage.
  ledger.TableFlushed(7, 8 * kMiB, 0, 4 * kMiB);
  EXPECT_DOUBLE_EQ(ledger.yield(), 0.25);  // half way from 0 to 0.5
  // One estimated: its named bytes wait in L0 at the yield.
  ledger.TableFlushed(8, 8 * kMiB, 0, std::nullopt);
  SetLevel0({{7, 100}, {8, 100}});
  EXPECT_EQ(ledger.Space(true).uncounted, 2 * kMiB);  // 8 MiB at 0.25
  // Their compaction counted all 8 MiB as garbage: yield 1 for it.
  const uint64_t inputs[] = {7, 8};
  ledger.Level0Compacted(inputs, 8 * kMiB);
  EXPECT_DOUBLE_EQ(ledger.yield(), 0.625);
  SetLevel0({});
  EXPECT_EQ(ledger.Space(true).uncounted, 0u);
  // A table from before the open is estimated at the mean record.
  SetLevel0({{3, 10}});
  EXPECT_EQ(ledger.Space(true).uncounted, static_cast<uint64_t>(0.625 * 10 * 4096));
}

TEST_F(SpaceLedgerTest, L0IsCompactedWhenWhatItMayHideCouldPassTheTrigger) {
  SpaceLedger ledger(Settings(), Sources());
  figures_.set.bytes = 100 * kMiB;
  ledger.TableFlushed(7, 10 * kMiB, 0, std::nullopt);
  SetLevel0({{7, 1000}});
  // 100 over 90 live at worst: under 1.5, and a yield of 0 hides nothing.
  EXPECT_FALSE(ledger.NeedsGarbageCompaction());
  ledger.TableFlushed(8, 30 * kMiB, 0, std::nullopt);
  SetLevel0({{7, 1000}, {8, 1000}});
  // 100 over 60 live at worst: past 1.5.
  EXPECT_TRUE(ledger.NeedsGarbageCompaction());
  EXPECT_TRUE(ledger.HiddenGarbageMayPass(1.5));
  EXPECT_FALSE(ledger.HiddenGarbageMayPass(3.0));
}

TEST_F(SpaceLedgerTest, AMemtableIsFullByWhatItNamesOrHides) {
  SpaceLedger::Settings settings = Settings();
  settings.max_memtable_value_bytes = 16 * kMiB;
  SpaceLedger ledger(settings, Sources());
  figures_.set.bytes = 1024 * kMiB;
  EXPECT_FALSE(ledger.MemTableFull());  // empty
  ledger.GroupInserted({.named = 8 * kMiB});
  EXPECT_FALSE(ledger.MemTableFull());
  ledger.GroupInserted({.named = 8 * kMiB});
  EXPECT_TRUE(ledger.MemTableFull());  // the cap on named bytes
  ledger.MemTableSwitched();
  // A small log: what the memtable names could hide more than a quarter of
  // the garbage the trigger allows over the rest.
  figures_.set.bytes = 16 * kMiB;
  ledger.GroupInserted({.named = 4 * kMiB});
  EXPECT_TRUE(ledger.MemTableFull());
  ledger.MemTableSwitched();
  // Garbage the memtable holds itself: a quarter of the allowance over live.
  figures_.set.bytes = 1024 * kMiB;
  ledger.GroupInserted({.named = 1, .superseded = 100 * kMiB});
  EXPECT_FALSE(ledger.MemTableFull());
  ledger.GroupInserted({.named = 1, .superseded = 100 * kMiB});
  EXPECT_TRUE(ledger.MemTableFull());
}

}  // namespace
}  // namespace cairn
