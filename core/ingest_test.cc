// DB::IngestExternalFiles on the in-memory file system: placement, the
// memtable rule, reads of ingested inline and separated values through
// every read path, snapshots, reopen, checkpoints, GC of overwritten
// ingested values, and every refusal leaving the database untouched.
// Crashes and injected faults at every step: core/ingest_fault_test.cc.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "core/external_file_set.h"
#include "core/testing/ingest_helpers.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

using testing_ingest::BuildSet;
using testing_ingest::IngestFixture;
using testing_ingest::Model;

class IngestTest : public IngestFixture {};

TEST_F(IngestTest, IngestsIntoAnEmptyDbAtTheLastLevelAndReadsEveryWay) {
  Open();
  Model set = BuildSet(*fs_, options_, "/in/a", "k", 0, 40, /*deletes_every=*/7);
  auto r = db_->IngestExternalFiles({"/in/a"}, {});
  ASSERT_OK(r.status());
  EXPECT_EQ(r->levels, std::vector<int>{lsm::kNumLevels - 1});
  EXPECT_EQ(r->copied_bytes, 0u);  // linked
  EXPECT_GT(r->segment_bytes, 0u);
  ExpectHolds(set);
  // Moved: the set is gone from where it was.
  EXPECT_FALSE(fs_->FileExists(FileSetDescriptorPath("/in/a")));
  // MultiGet of every key, present and deleted.
  std::vector<std::string_view> keys;
  for (const auto& [k, v] : set) keys.push_back(k);
  std::vector<std::string> values;
  std::vector<absl::Status> st = db_->MultiGet({}, keys, &values);
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto& want = set.at(std::string(keys[i]));
    if (want.has_value()) {
      ASSERT_OK(st[i]);
      EXPECT_EQ(values[i], *want);
    } else {
      EXPECT_TRUE(absl::IsNotFound(st[i])) << keys[i];
    }
  }
}

TEST_F(IngestTest, GoesAboveTheDataItOverlapsAndShadowsIt) {
  Open();
  for (int i = 0; i < 30; ++i) {
    ASSERT_OK(db_->Put({}, absl::StrFormat("k%04d", i), std::string(300, 'o')));
  }
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  // Overlaps the compacted data at the last level: one level above it.
  Model set = BuildSet(*fs_, options_, "/in/a", "k", 10, 20, 0);
  auto r = db_->IngestExternalFiles({"/in/a"}, {});
  ASSERT_OK(r.status());
  EXPECT_EQ(r->levels, std::vector<int>{lsm::kNumLevels - 2});
  // Disjoint from everything: the last level.
  Model disjoint = BuildSet(*fs_, options_, "/in/b", "z", 0, 5, 0);
  r = db_->IngestExternalFiles({"/in/b"}, {});
  ASSERT_OK(r.status());
  EXPECT_EQ(r->levels, std::vector<int>{lsm::kNumLevels - 1});
  ExpectHolds(set);
  ExpectHolds(disjoint);
  std::string v;
  ASSERT_OK(db_->Get({}, "k0005", &v));
  EXPECT_EQ(v, std::string(300, 'o'));
}

TEST_F(IngestTest, OverlappingAnL0TableItGoesToL0AboveIt) {
  Open();
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK(db_->Put({}, absl::StrFormat("k%04d", i), std::string(300, 'o')));
  }
  ASSERT_OK(db_->Flush());  // one L0 table, under the compaction trigger
  Model set = BuildSet(*fs_, options_, "/in/a", "k", 5, 10, 3);
  auto r = db_->IngestExternalFiles({"/in/a"}, {});
  ASSERT_OK(r.status());
  EXPECT_EQ(r->levels, std::vector<int>{0});
  ExpectHolds(set);
  std::string v;
  ASSERT_OK(db_->Get({}, "k0001", &v));
  EXPECT_EQ(v, std::string(300, 'o'));
  Reopen();
  ExpectHolds(set);
}

TEST_F(IngestTest, AMemtableWithWritesIsFlushedFirstOrTheIngestionRefused) {
  Open();
  ASSERT_OK(db_->Put({}, "k0003", "old"));
  Model set = BuildSet(*fs_, options_, "/in/a", "k", 0, 10, 0);
  IngestOptions refuse;
  refuse.allow_blocking_flush = false;
  auto r = db_->IngestExternalFiles({"/in/a"}, refuse);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  std::string v;
  ASSERT_OK(db_->Get({}, "k0003", &v));
  EXPECT_EQ(v, "old");
  EXPECT_TRUE(absl::IsNotFound(db_->Get({}, "k0001", &v)));
  EXPECT_TRUE(fs_->FileExists(FileSetDescriptorPath("/in/a")));  // untouched
  // Allowed: flushed, and the ingested version is the newer one.
  r = db_->IngestExternalFiles({"/in/a"}, {});
  ASSERT_OK(r.status());
  EXPECT_TRUE(r->flushed_memtable);
  ExpectHolds(set);
}

TEST_F(IngestTest, OneSequenceNewerThanEveryWriteAndSnapshotsDoNotSeeIt) {
  Open();
  ASSERT_OK(db_->Put({}, "k0001", "before"));
  ASSERT_OK(db_->Flush());
  const Snapshot* snap = db_->GetSnapshot();
  Model set = BuildSet(*fs_, options_, "/in/a", "k", 0, 10, 0);
  auto r = db_->IngestExternalFiles({"/in/a"}, {});
  ASSERT_OK(r.status());
  ReadOptions at_snap;
  at_snap.snapshot = snap;
  std::string v;
  ASSERT_OK(db_->Get(at_snap, "k0001", &v));
  EXPECT_EQ(v, "before");
  EXPECT_TRUE(absl::IsNotFound(db_->Get(at_snap, "k0002", &v)));
  db_->ReleaseSnapshot(snap);
  // A write after the ingestion is newer than it, across a reopen too.
  ASSERT_OK(db_->Put({}, "k0002", "after"));
  set["k0002"] = "after";
  ExpectHolds(set);
  Reopen();
  ExpectHolds(set);
  ASSERT_OK(db_->Put({}, "k0003", "later"));
  set["k0003"] = "later";
  ExpectHolds(set);
}

TEST_F(IngestTest, SeveralSetsInAnyOrderAreOneIngestion) {
  Open();
  Model a = BuildSet(*fs_, options_, "/in/a", "a", 0, 10, 3);
  Model b = BuildSet(*fs_, options_, "/in/b", "b", 0, 10, 0);
  IngestOptions copy;
  copy.move_files = false;
  auto r = db_->IngestExternalFiles({"/in/b", "/in/a"}, copy);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->levels.size(), 2u);
  EXPECT_EQ(r->copied_bytes, r->segment_bytes);  // copied, sets left as they were
  EXPECT_TRUE(fs_->FileExists(FileSetDescriptorPath("/in/a")));
  ExpectHolds(a);
  ExpectHolds(b);
  Reopen();
  ExpectHolds(a);
  ExpectHolds(b);
}

TEST_F(IngestTest, WhereLinksAreRefusedTheSegmentsAreCopied) {
  Open();
  Model set = BuildSet(*fs_, options_, "/in/a", "k", 0, 20, 0);
  fs_->SetLinksSupported(false);
  auto r = db_->IngestExternalFiles({"/in/a"}, {});
  ASSERT_OK(r.status());
  EXPECT_EQ(r->copied_bytes, r->segment_bytes);
  EXPECT_FALSE(fs_->FileExists(FileSetDescriptorPath("/in/a")));  // moved all the same
  ExpectHolds(set);
}

TEST_F(IngestTest, BadInputIsRefusedWithTheDatabaseUntouched) {
  Open();
  ASSERT_OK(db_->Put({}, "x", "1"));
  BuildSet(*fs_, options_, "/in/a", "k", 0, 10, 0);
  BuildSet(*fs_, options_, "/in/b", "k", 5, 10, 0);  // overlaps a
  EXPECT_EQ(db_->IngestExternalFiles({}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(db_->IngestExternalFiles({"/in/a", "/in/a"}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status overlap = db_->IngestExternalFiles({"/in/a", "/in/b"}, {}).status();
  EXPECT_EQ(overlap.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(overlap.message().find("/in/b"), std::string_view::npos) << overlap;
  EXPECT_TRUE(absl::IsNotFound(db_->IngestExternalFiles({"/in/none"}, {}).status()));
  // A set of a newer format version.
  auto desc = fs_->ReadFileToString(FileSetDescriptorPath("/in/a"));
  ASSERT_OK(desc.status());
  std::string newer = *desc;
  newer[8] = 9;
  ASSERT_OK(fs_->WriteFileFromString(FileSetDescriptorPath("/in/a"), newer));
  EXPECT_EQ(db_->IngestExternalFiles({"/in/a"}, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ExpectUntouched();
}

TEST_F(IngestTest, ADamagedFileIsDataLossNamingItAndNothingIsVisible) {
  Open();
  ASSERT_OK(db_->Put({}, "x", "1"));
  ASSERT_OK(db_->Flush());
  Model set = BuildSet(*fs_, options_, "/in/a", "k", 0, 20, 0);
  for (const std::string& path : {FileSetSegmentPath("/in/a", 1), FileSetTablePath("/in/a")}) {
    auto good = fs_->ReadFileToString(path);
    ASSERT_OK(good.status());
    std::string bad = *good;
    bad[bad.size() / 2] ^= 0x40;
    ASSERT_OK(fs_->WriteFileFromString(path, bad));
    const absl::Status s = db_->IngestExternalFiles({"/in/a"}, {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_NE(s.message().find(path), std::string_view::npos) << s;
    ExpectUntouched();
    ASSERT_OK(fs_->WriteFileFromString(path, *good));
  }
  ASSERT_OK(db_->IngestExternalFiles({"/in/a"}, {}).status());
  ExpectHolds(set);
}

TEST_F(IngestTest, OverwrittenIngestedValuesAreGarbageThatGcReclaims) {
  options_.gc_space_amp_trigger = 0;  // GC by RunGC only
  Open();
  Model set = BuildSet(*fs_, options_, "/in/a", "k", 0, 40, 0);
  ASSERT_OK(db_->IngestExternalFiles({"/in/a"}, {}).status());
  auto* impl = static_cast<DBImpl*>(db_.get());
  std::vector<uint64_t> adopted;
  for (const auto& info : impl->ValueLogSegmentsForTesting()) {
    EXPECT_TRUE(info.sealed);
    EXPECT_EQ(info.garbage_bytes, 0u);  // live data from the start
    adopted.push_back(info.segment_id);
  }
  ASSERT_FALSE(adopted.empty());
  for (auto& [k, v] : set) {
    v = std::string(10, 'n');  // inline now
    ASSERT_OK(db_->Put({}, k, *v));
  }
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  auto gc = db_->RunGC();
  ASSERT_OK(gc.status());
  ASSERT_OK(db_->WaitForBackgroundWork());
  for (const auto& info : impl->ValueLogSegmentsForTesting()) {
    EXPECT_EQ(std::count(adopted.begin(), adopted.end(), info.segment_id), 0)
        << "segment " << info.segment_id << " still held";
  }
  ExpectHolds(set);
  Reopen();
  ExpectHolds(set);
}

// GC checks a victim's records, then rewrites the live ones' pointers in
// the writer queue, trusting the memtables to hold every write since its
// check. An ingestion in between writes around the memtables; its versions
// must win over the relocated old ones (the crash test found this, seed
// 7160385702235792381).
TEST_F(IngestTest, AnIngestionBetweenGcChecksAndRewritesWins) {
  options_.gc_space_amp_trigger = 0;
  options_.gc_min_garbage_ratio = 0.25;
  Open();
  for (int i = 0; i < 60; ++i) {  // three segments
    ASSERT_OK(db_->Put({}, absl::StrFormat("k%04d", i), std::string(3000, 'o')));
  }
  for (int i = 0; i < 60; i += 2) {  // half garbage, so that GC picks them
    ASSERT_OK(db_->Put({}, absl::StrFormat("k%04d", i), std::string(3000, 'p')));
  }
  ASSERT_OK(db_->Flush());
  ASSERT_OK(db_->CompactRange(nullptr, nullptr));
  Model set = BuildSet(*fs_, options_, "/in/a", "k", 0, 60, 4);
  auto* impl = static_cast<DBImpl*>(db_.get());
  bool ingested = false;
  impl->before_gc_rewrite_for_testing = [&] {
    if (ingested) return;
    ingested = true;
    ASSERT_OK(db_->IngestExternalFiles({"/in/a"}, {}).status());
  };
  auto gc = db_->RunGC();
  ASSERT_OK(gc.status());
  EXPECT_TRUE(ingested) << gc->victims << " victims, " << gc->records_relocated << " relocated";
  ExpectHolds(set);
  Reopen();
  ExpectHolds(set);
}

TEST_F(IngestTest, ACheckpointAfterAnIngestionHoldsIt) {
  Open();
  Model set = BuildSet(*fs_, options_, "/in/a", "k", 0, 20, 4);
  ASSERT_OK(db_->IngestExternalFiles({"/in/a"}, {}).status());
  ASSERT_OK(db_->CreateCheckpoint("/cp").status());
  db_.reset();
  auto cp = OpenWithFileSystem(options_, "/cp", fs_);
  ASSERT_OK(cp.status());
  db_ = *std::move(cp);
  ExpectHolds(set);
}

TEST_F(IngestTest, AFailureAtEachStepLeavesNothingAndNoOrphans) {
  for (const char* step : {"adopted", "tables"}) {
    SCOPED_TRACE(step);
    Open();
    ASSERT_OK(db_->Put({}, "x", "1"));
    Model set = BuildSet(*fs_, options_, "/in/a", "k", 0, 20, 0);
    static_cast<DBImpl*>(db_.get())->ingest_step_for_testing = [&](std::string_view at) {
      return at == step ? absl::InternalError("injected") : absl::OkStatus();
    };
    EXPECT_EQ(db_->IngestExternalFiles({"/in/a"}, {}).status().code(), absl::StatusCode::kInternal);
    ExpectUntouched();
    ExpectNoOrphans();
    // The set is intact, and ingests once the fault is gone.
    static_cast<DBImpl*>(db_.get())->ingest_step_for_testing = nullptr;
    ASSERT_OK(db_->IngestExternalFiles({"/in/a"}, {}).status());
    ExpectHolds(set);
    Reopen();
    ExpectHolds(set);
    ExpectNoOrphans();
    Destroy();
  }
}

TEST_F(IngestTest, AFailureAfterTheEditStopsWritesAndTheReopenHasItAll) {
  Open();
  Model set = BuildSet(*fs_, options_, "/in/a", "k", 0, 20, 0);
  static_cast<DBImpl*>(db_.get())->ingest_step_for_testing = [](std::string_view at) {
    return at == "logged" ? absl::InternalError("injected") : absl::OkStatus();
  };
  EXPECT_FALSE(db_->IngestExternalFiles({"/in/a"}, {}).ok());
  EXPECT_FALSE(db_->Put({}, "y", "1").ok());  // fail-stop until reopened
  Reopen();
  ExpectHolds(set);
  ExpectNoOrphans();
}

}  // namespace
}  // namespace cairn
