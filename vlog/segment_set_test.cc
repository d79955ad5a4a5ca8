#include "vlog/segment_set.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/coding.h"

namespace cairn::vlog {
namespace {

using ::testing::HasSubstr;

// Replays extension records into a new set.
absl::Status Replay(const std::vector<ExtensionRecord>& records, SegmentSet* set) {
  for (const auto& [tag, payload] : records) {
    absl::Status s = set->DecodeAndApply(tag, payload);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

SegmentEdit Sample() {
  SegmentEdit e;
  e.AddSegment(5, SegmentKind::kFresh);
  e.AddSegment(6, SegmentKind::kGcOutput);
  e.SyncedTo(5, 1 << 20);
  e.SealSegment(5, 64 << 20, 60000);
  e.AddGarbage(5, 4096, 3);
  e.MarkObsolete(5);
  e.RemoveSegment(5);
  e.AddGarbage(6, uint64_t{1} << 40, 1);
  e.PunchRuns(6, {{28, 4153}, {4153, 8278}, {20000, 1u << 30}});
  return e;
}

TEST(SegmentEditTest, EncodeDecodeRoundTrip) {
  const SegmentEdit edit = Sample();
  SegmentEdit back;
  for (const auto& [tag, payload] : edit.Encode()) {
    EXPECT_TRUE(IsSegmentEditTag(tag));
    ASSERT_TRUE(back.DecodeRecord(tag, payload).ok());
  }
  EXPECT_EQ(back, edit) << back.DebugString() << "\nvs\n" << edit.DebugString();
}

TEST(SegmentEditTest, GarbageDeltasOfOneSegmentMerge) {
  SegmentEdit e;
  e.AddGarbage(7, 100, 1);
  e.AddGarbage(8, 50, 1);
  e.AddGarbage(7, 30, 2);
  ASSERT_EQ(e.changes().size(), 2u);
  EXPECT_EQ(e.changes()[0].bytes, 130u);
  EXPECT_EQ(e.changes()[0].records, 3u);
  // Not across a removal.
  e.MarkObsolete(7);
  e.RemoveSegment(7);
  e.AddGarbage(7, 1, 1);
  EXPECT_EQ(e.changes().size(), 5u);
}

TEST(SegmentEditTest, MalformedRecordsAreDataLoss) {
  SegmentEdit e;
  std::string payload;
  io::PutVarint64(&payload, 5);
  // Unknown tag, in our range and outside it.
  EXPECT_EQ(e.DecodeRecord(149, payload).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(e.DecodeRecord(7, payload).code(), absl::StatusCode::kDataLoss);
  // Missing fields, trailing bytes, unknown kind.
  EXPECT_EQ(e.DecodeRecord(101, payload).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(e.DecodeRecord(100, payload).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(e.DecodeRecord(103, payload + "x").code(), absl::StatusCode::kDataLoss);
  std::string bad_kind = payload;
  io::PutVarint32(&bad_kind, 3);
  absl::Status s = e.DecodeRecord(100, bad_kind);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("kind"));
  EXPECT_EQ(e.DecodeRecord(104, "").code(), absl::StatusCode::kDataLoss);
  // Punched runs: no runs, more runs than the payload can hold, an empty
  // run, a run past 2^64.
  std::string runs = payload;
  io::PutVarint64(&runs, 0);
  EXPECT_EQ(e.DecodeRecord(105, runs).code(), absl::StatusCode::kDataLoss);
  runs = payload;
  io::PutVarint64(&runs, 1000);
  io::PutVarint64(&runs, 28);
  io::PutVarint64(&runs, 100);
  EXPECT_EQ(e.DecodeRecord(105, runs).code(), absl::StatusCode::kDataLoss);
  runs = payload;
  io::PutVarint64(&runs, 1);
  io::PutVarint64(&runs, 28);
  io::PutVarint64(&runs, 0);
  EXPECT_EQ(e.DecodeRecord(105, runs).code(), absl::StatusCode::kDataLoss);
  runs = payload;
  io::PutVarint64(&runs, 2);
  io::PutVarint64(&runs, 28);
  io::PutVarint64(&runs, ~uint64_t{0} - 100);
  io::PutVarint64(&runs, 28);
  io::PutVarint64(&runs, 200);
  EXPECT_EQ(e.DecodeRecord(105, runs).code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(e.empty()) << "nothing half-decoded is kept";
}

TEST(SegmentSetTest, TracksTheLifeOfASegment) {
  SegmentSet set;
  SegmentEdit add;
  add.AddSegment(10, SegmentKind::kFresh);
  ASSERT_TRUE(set.Apply(add).ok());
  EXPECT_FALSE(set.Get(10)->sealed);

  SegmentEdit garbage_while_active;
  garbage_while_active.AddGarbage(10, 100, 1);
  ASSERT_TRUE(set.Apply(garbage_while_active).ok());
  EXPECT_EQ(set.Get(10)->garbage_ratio(), 0.0) << "no ratio before the size is known";

  SegmentEdit seal;
  seal.SealSegment(10, 1000, 10);
  ASSERT_TRUE(set.Apply(seal).ok());
  ASSERT_TRUE(set.Apply(seal).ok()) << "sealing again with equal values is a no-op";
  SegmentEdit more;
  more.AddGarbage(10, 150, 2);
  ASSERT_TRUE(set.Apply(more).ok());
  SegmentInfo info = *set.Get(10);
  EXPECT_TRUE(info.sealed);
  EXPECT_EQ(info.size, 1000u);
  EXPECT_EQ(info.records, 10u);
  EXPECT_EQ(info.garbage_bytes, 250u);
  EXPECT_EQ(info.garbage_records, 3u);
  EXPECT_DOUBLE_EQ(info.garbage_ratio(), 0.25);
  EXPECT_EQ(info.live_bytes(), 750u);
  SegmentSet::Totals t = set.GetTotals();
  EXPECT_EQ(t.segments, 1u);
  EXPECT_EQ(t.bytes, 1000u);
  EXPECT_EQ(t.live_bytes, 750u);
  EXPECT_EQ(t.garbage_bytes, 250u);

  SegmentEdit obsolete;
  obsolete.MarkObsolete(10);
  ASSERT_TRUE(set.Apply(obsolete).ok());
  t = set.GetTotals();
  EXPECT_EQ(t.obsolete_segments, 1u);
  EXPECT_EQ(t.obsolete_bytes, 1000u);
  EXPECT_EQ(t.live_bytes, 0u);
  EXPECT_THAT(set.DebugString(), HasSubstr("segment 10 fresh obsolete size 1000"));

  SegmentEdit remove;
  remove.RemoveSegment(10);
  ASSERT_TRUE(set.Apply(remove).ok());
  EXPECT_FALSE(set.Contains(10));
  // Compactions may still drop pointers into a removed segment.
  SegmentEdit late;
  late.AddGarbage(10, 5, 1);
  EXPECT_TRUE(set.Apply(late).ok());
  EXPECT_EQ(set.size(), 0u);
}

TEST(SegmentSetTest, EditsBreakingTheRulesChangeNothing) {
  SegmentSet set;
  SegmentEdit setup;
  setup.AddSegment(1, SegmentKind::kFresh);
  setup.SealSegment(1, 500, 5);
  ASSERT_TRUE(set.Apply(setup).ok());
  const std::vector<SegmentInfo> before = set.Segments();

  std::vector<SegmentEdit> bad(5);
  bad[0].AddSegment(1, SegmentKind::kFresh);  // exists
  bad[1].SealSegment(1, 600, 5);              // sealed differently
  bad[2].MarkObsolete(2);                     // unknown
  bad[3].RemoveSegment(1);                    // not obsolete
  // A good change before a bad one must not stick.
  bad[4].AddSegment(3, SegmentKind::kGcOutput);
  bad[4].AddGarbage(1, 10, 1);
  bad[4].SealSegment(4, 1, 1);
  for (const SegmentEdit& e : bad) {
    absl::Status s = set.Apply(e);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << e.DebugString();
    EXPECT_EQ(set.Segments(), before) << e.DebugString();
  }
  // The same through the manifest path is DataLoss.
  const std::vector<ExtensionRecord> records = bad[0].Encode();
  EXPECT_EQ(set.DecodeAndApply(records[0].first, records[0].second).code(),
            absl::StatusCode::kDataLoss);
}

TEST(SegmentSetTest, PunchedRunsMergeAndCountTheirWholeBlocks) {
  SegmentSet set;
  SegmentEdit e;
  e.AddSegment(9, SegmentKind::kFresh);
  ASSERT_TRUE(set.Apply(e).ok());
  e.Clear();
  e.PunchRuns(9, {{28, 8278}});
  EXPECT_EQ(set.Apply(e).code(), absl::StatusCode::kFailedPrecondition) << "not sealed";
  e.Clear();
  e.SealSegment(9, 100000, 24);
  e.AddGarbage(9, 50000, 12);
  ASSERT_TRUE(set.Apply(e).ok());
  // Two records of 4,125 bytes from offset 28: whole block 4096-8192.
  e.Clear();
  e.PunchRuns(9, {{28, 8278}});
  ASSERT_TRUE(set.Apply(e).ok());
  EXPECT_EQ(set.Get(9)->punched_bytes, 4096u);
  EXPECT_EQ(set.Get(9)->allocated_bytes(), 100000u - 4096u);
  EXPECT_EQ(set.GetTotals().punched_bytes, 4096u);
  // The next record joins the run: together they cover 4096-12288.
  e.Clear();
  e.PunchRuns(9, {{8278, 12403}});
  ASSERT_TRUE(set.Apply(e).ok());
  EXPECT_EQ(set.PunchedRuns(9), (std::vector<PunchRun>{{28, 12403}}));
  EXPECT_EQ(set.Get(9)->punched_bytes, 8192u);
  // Out of order, before the header, or past the size: refused whole.
  for (const std::vector<PunchRun>& bad :
       {std::vector<PunchRun>{{20000, 30000}, {15000, 16000}},
        std::vector<PunchRun>{{0, 5000}}, std::vector<PunchRun>{{90000, 100001}}}) {
    e.Clear();
    e.PunchRuns(9, bad);
    EXPECT_EQ(set.Apply(e).code(), absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(set.PunchedRuns(9), (std::vector<PunchRun>{{28, 12403}}));
  // A snapshot carries them.
  SegmentSet copy;
  ASSERT_TRUE(Replay(set.Snapshot(), &copy).ok());
  EXPECT_TRUE(copy == set);
  EXPECT_EQ(copy.PunchedRuns(9), set.PunchedRuns(9));
  // Removed, the segment's runs go too.
  e.Clear();
  e.MarkObsolete(9);
  ASSERT_TRUE(set.Apply(e).ok());
  EXPECT_EQ(set.GetTotals().punched_bytes, 0u) << "obsolete segments count whole";
  e.Clear();
  e.RemoveSegment(9);
  ASSERT_TRUE(set.Apply(e).ok());
  EXPECT_TRUE(set.PunchedRuns(9).empty());
}

TEST(SegmentSetTest, SyncedSizeOnlyRisesAndOnlyWhileTheSegmentIsWritten) {
  SegmentSet set;
  SegmentEdit e;
  e.AddSegment(3, SegmentKind::kFresh);
  e.SyncedTo(3, 5000);
  e.SyncedTo(3, 4000);  // an older sync, logged late: changes nothing
  ASSERT_TRUE(set.Apply(e).ok());
  EXPECT_EQ(set.Get(3)->synced_size, 5000u);
  // Sealed, its size bounds it; gone, a late floor is ignored.
  e.Clear();
  e.SealSegment(3, 9000, 7);
  e.SyncedTo(3, 9500);
  e.SyncedTo(44, 100);
  ASSERT_TRUE(set.Apply(e).ok()) << e.DebugString();
  EXPECT_EQ(set.Get(3)->synced_size, 0u);
  EXPECT_FALSE(set.Get(44).has_value());
  // The snapshot carries the floor of a segment being written.
  e.Clear();
  e.AddSegment(4, SegmentKind::kFresh);
  e.SyncedTo(4, 777);
  ASSERT_TRUE(set.Apply(e).ok());
  SegmentSet copy;
  ASSERT_TRUE(Replay(set.Snapshot(), &copy).ok());
  EXPECT_EQ(copy.Get(4)->synced_size, 777u);
  EXPECT_TRUE(copy == set);
}

TEST(SegmentSetTest, SnapshotReplaysToAnEqualSet) {
  std::mt19937_64 rng(3);
  SegmentSet set;
  std::vector<ExtensionRecord> log;  // what a manifest would hold
  uint64_t next_id = 1;
  std::vector<uint64_t> active, sealed, obsolete;
  std::map<uint64_t, uint64_t> sizes;
  for (int step = 0; step < 2000; ++step) {
    SegmentEdit e;
    switch (rng() % 7) {
      case 0:
        e.AddSegment(next_id, rng() % 2 ? SegmentKind::kFresh : SegmentKind::kGcOutput);
        active.push_back(next_id++);
        break;
      case 1:
        if (active.empty()) continue;
        sizes[active.front()] = 1000 + rng() % 100000;
        e.SealSegment(active.front(), sizes[active.front()], rng() % 1000);
        sealed.push_back(active.front());
        active.erase(active.begin());
        break;
      case 2:
        for (int i = 0; i < 3 && !sealed.empty(); ++i) {
          e.AddGarbage(sealed[rng() % sealed.size()], rng() % 500, 1);
        }
        break;
      case 3:
        if (sealed.empty()) continue;
        e.MarkObsolete(sealed.back());
        obsolete.push_back(sealed.back());
        sealed.pop_back();
        break;
      case 4:
        if (obsolete.empty()) continue;
        e.RemoveSegment(obsolete.front());
        obsolete.erase(obsolete.begin());
        break;
      case 5: {
        if (sealed.empty()) continue;
        const uint64_t id = sealed[rng() % sealed.size()];
        std::vector<PunchRun> runs;
        uint64_t at = kSegmentHeaderSize + rng() % 5000;
        while (runs.size() < 4) {
          const uint64_t end = at + 1 + rng() % 9000;
          if (end > sizes[id]) break;
          runs.push_back({at, end});
          at = end + rng() % 3000;
        }
        if (runs.empty()) continue;
        e.PunchRuns(id, runs);
        break;
      }
      case 6:
        if (active.empty()) continue;
        e.SyncedTo(active[rng() % active.size()], rng() % 100000);
        break;
    }
    if (e.empty()) continue;
    ASSERT_TRUE(set.Apply(e).ok()) << e.DebugString();
    e.EncodeTo(&log);
  }
  ASSERT_GT(set.size(), 10u);

  SegmentSet from_log;
  ASSERT_TRUE(Replay(log, &from_log).ok());
  EXPECT_TRUE(from_log == set);

  SegmentSet from_snapshot;
  const std::vector<ExtensionRecord> snapshot = set.Snapshot();
  ASSERT_TRUE(Replay(snapshot, &from_snapshot).ok());
  EXPECT_TRUE(from_snapshot == set) << from_snapshot.DebugString() << "\nvs\n"
                                    << set.DebugString();
  EXPECT_EQ(from_snapshot.Snapshot(), snapshot) << "snapshots are deterministic";
  EXPECT_EQ(from_snapshot.DebugString(), set.DebugString());
}

TEST(SegmentSetTest, GarbageBytesNeverCrashDecodeAndApply) {
  std::mt19937_64 rng(17);
  SegmentSet set;
  int ok = 0;
  for (int i = 0; i < 50000; ++i) {
    const uint32_t tag = 98 + static_cast<uint32_t>(rng() % 10);
    std::string payload(rng() % 24, '\0');
    for (char& c : payload) c = static_cast<char>(rng());
    absl::Status s = set.DecodeAndApply(tag, payload);
    if (s.ok()) {
      ++ok;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    }
  }
  EXPECT_GT(ok, 0);
  // Whatever was accepted is a consistent set that snapshots and replays.
  SegmentSet copy;
  ASSERT_TRUE(Replay(set.Snapshot(), &copy).ok());
  EXPECT_TRUE(copy == set);
}

}  // namespace
}  // namespace cairn::vlog

namespace cairn::vlog {
namespace {

// The totals are kept per edit; they must equal a walk over the segments
// after any sequence of edits, failed ones included.
TEST(SegmentSetTotalsTest, KeptTotalsEqualAWalkAfterRandomEdits) {
  SegmentSet set;
  std::mt19937_64 rng(7);
  uint64_t next_id = 1;
  for (int step = 0; step < 2000; ++step) {
    SegmentEdit edit;
    const uint64_t id = 1 + rng() % next_id;
    switch (rng() % 7) {
      case 0: edit.AddSegment(next_id++, SegmentKind::kFresh); break;
      case 1: edit.SealSegment(id, 1000 + rng() % 1000, 1 + rng() % 10); break;
      case 2: edit.AddGarbage(id, rng() % 300, 1); break;
      case 3: edit.MarkObsolete(id); break;
      case 4: edit.RemoveSegment(id); break;
      case 5:
        edit.PunchRuns(id, {{kSegmentHeaderSize + rng() % 500, 600 + rng() % 500}});
        break;  // fails unless sealed and inside it
      default:
        edit.AddGarbage(id, rng() % 100, 1);
        edit.MarkObsolete(id + 1);  // may fail, and then nothing changes
        break;
    }
    set.Apply(edit).IgnoreError();
    SegmentSet::Totals walk;
    for (const SegmentInfo& info : set.Segments()) {
      ++walk.segments;
      if (info.sealed) ++walk.sealed_segments;
      walk.bytes += info.size;
      if (info.obsolete) {
        ++walk.obsolete_segments;
        walk.obsolete_bytes += info.size;
        continue;
      }
      walk.garbage_bytes += info.garbage_bytes;
      walk.punched_bytes += info.punched_bytes;
      if (info.sealed) walk.live_bytes += info.live_bytes();
    }
    const SegmentSet::Totals kept = set.GetTotals();
    ASSERT_EQ(kept.segments, walk.segments) << step;
    ASSERT_EQ(kept.sealed_segments, walk.sealed_segments) << step;
    ASSERT_EQ(kept.obsolete_segments, walk.obsolete_segments) << step;
    ASSERT_EQ(kept.bytes, walk.bytes) << step;
    ASSERT_EQ(kept.garbage_bytes, walk.garbage_bytes) << step;
    ASSERT_EQ(kept.live_bytes, walk.live_bytes) << step;
    ASSERT_EQ(kept.obsolete_bytes, walk.obsolete_bytes) << step;
    ASSERT_EQ(kept.punched_bytes, walk.punched_bytes) << step;
  }
}

}  // namespace
}  // namespace cairn::vlog
