// I/O error sweep (docs/testing.md): a fixed, deterministic workload of 2,000
// operations (puts on both sides of the separation threshold, deletes,
// batches, sync writes, reads, flushes, value-log GC through RunGC, over
// 64 KiB segments) runs through io::FaultFileSystem over
// io::MemoryFileSystem, once clean to count its I/O operations, then once per
// case with the k-th operation of one kind failing, once or for good:
//
//   EIO on a write (Append/Flush/Sync/Close), EIO on a sync (file or
//   directory), ENOSPC on a write, a short write (half the bytes reach the
//   file, then EIO), EIO on a read.
//
// k runs over every 10th matching operation (every one with CAIRN_LONG=1)
// until a run injects no fault. For each case the engine must:
//   - report a failed write or sync: some operation returns an error (it
//     never retries one);
//   - answer reads correctly or fail them cleanly (never a wrong value);
//   - after a failed write, sync or flush, refuse every later write until it
//     is reopened, with a message that says so (fail-stop, invariant 10);
//   - after ClearFaults, a crash that drops unsynced bytes and a reopen, hold
//     a prefix of the acknowledged writes containing every acknowledged sync
//     write (plus, possibly, the write that failed), and accept writes again.
// Violations are collected and reported together with the case that found
// them, which replays exactly: the workload is fixed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

using Model = std::map<std::string, std::string>;

struct WorkOp {
  enum class Kind { kWrite, kGet, kScan, kFlush, kGc } kind = Kind::kWrite;
  // For writes: (key, value or nullopt for a delete).
  std::vector<std::pair<std::string, std::optional<std::string>>> updates;
  bool sync = false;
  std::string key;  // for kGet
};

void Apply(const WorkOp& op, Model* m) {
  for (const auto& [k, v] : op.updates) {
    if (v.has_value()) {
      (*m)[k] = *v;
    } else {
      m->erase(k);
    }
  }
}

// The fixed workload: the same 2,000 operations every run.
std::vector<WorkOp> MakeWorkload() {
  std::mt19937_64 rng(20240611);
  auto key = [&] { return absl::StrFormat("key%04d", static_cast<int>(rng() % 300)); };
  auto value = [&] {
    const int r = static_cast<int>(rng() % 100);
    // Half below the separation threshold of 100 bytes, a few large.
    const size_t len = r < 50 ? rng() % 100 : (r < 95 ? 100 + rng() % 500 : 600 + rng() % 3400);
    std::string v(len, '\0');
    for (auto& c : v) c = static_cast<char>('a' + rng() % 26);
    return v;
  };
  std::vector<WorkOp> ops;
  for (int i = 0; i < 2000; ++i) {
    WorkOp op;
    const int r = static_cast<int>(rng() % 100);
    if (r < 50) {
      op.sync = rng() % 8 == 0;
      op.updates.emplace_back(key(), value());
    } else if (r < 62) {
      op.sync = rng() % 8 == 0;
      op.updates.emplace_back(key(), std::nullopt);
    } else if (r < 74) {
      op.sync = rng() % 4 == 0;
      const int n = 2 + static_cast<int>(rng() % 6);
      for (int j = 0; j < n; ++j) {
        op.updates.emplace_back(key(), rng() % 3 == 0 ? std::nullopt : std::optional(value()));
      }
    } else if (r < 94) {
      op.kind = WorkOp::Kind::kGet;
      op.key = key();
    } else if (r < 96) {
      op.kind = WorkOp::Kind::kScan;
    } else if (r < 98) {
      op.kind = WorkOp::Kind::kFlush;
    } else {
      op.kind = WorkOp::Kind::kGc;
    }
    ops.push_back(std::move(op));
  }
  return ops;
}

struct FaultType {
  const char* name;
  io::FaultKind kind;
  bool no_space;
};
constexpr FaultType kFaultTypes[] = {
    {"eio-write", io::FaultKind::kAnyWrite, false},
    {"eio-sync", io::FaultKind::kSync, false},
    {"enospc-write", io::FaultKind::kAnyWrite, true},
    {"short-write", io::FaultKind::kShortWrite, false},
    {"eio-read", io::FaultKind::kRead, false},
};

struct Fault {
  const FaultType* type;
  uint64_t k;
  bool persistent;
  bool drop_dir_entries;  // FaultFileSystemOptions::drop_unsynced_dir_entries
};

struct CaseResult {
  uint64_t ops_seen = 0;
  uint64_t gc_victims = 0;  // segments RunGC collected
  uint64_t faults_injected = 0;
  std::vector<std::string> violations;
};

// True when replaying seq[0, p) onto start gives want for some p >= min_len.
bool IsPrefixState(const Model& start, const std::vector<const WorkOp*>& seq, size_t min_len,
                   const Model& want) {
  Model m = start;
  for (size_t p = 0; p <= seq.size(); ++p) {
    if (p > 0) Apply(*seq[p - 1], &m);
    if (p >= min_len && m == want) return true;
  }
  return false;
}

class FaultSweepTest : public ::testing::TestWithParam<size_t> {
 protected:
  Options MakeOptions() const {
    Options o;
    // No info log: it ignores its own write errors by design, so a fault
    // injected there would fail nothing the sweep could check.
    o.max_info_log_size = 0;
    o.memtable_size = 64 << 10;
    o.target_file_size = 64 << 10;
    o.level0_compaction_trigger = 2;
    o.value_separation_threshold = GetParam();
    // GC runs where the workload says (RunGC), on segments small enough to
    // have victims; background GC would make the I/O order vary.
    o.value_log_segment_size = 64 << 10;
    o.gc_space_amp_trigger = 0;
    return o;
  }

  // Runs the workload with fault (none: a clean run) and checks everything
  // the header lists.
  CaseResult RunCase(const std::vector<WorkOp>& ops, const std::optional<Fault>& fault) {
    CaseResult result;
    auto add = [&](std::string what) { result.violations.push_back(std::move(what)); };
    auto base = std::make_shared<io::MemoryFileSystem>();
    io::FaultFileSystemOptions fopts;
    fopts.drop_unsynced_dir_entries = fault.has_value() && fault->drop_dir_entries;
    auto fs = std::make_shared<io::FaultFileSystem>(base, fopts);
    if (fault.has_value()) {
      fs->FailAfter(fault->k,
                    fault->type->no_space ? io::InjectedNoSpaceError(fault->type->name)
                                          : io::InjectedIoError(fault->type->name),
                    fault->type->kind, fault->persistent);
    }

    std::vector<const WorkOp*> acked;
    const WorkOp* failed = nullptr;  // the write whose outcome is unknown
    Model model;                     // acknowledged writes applied
    bool saw_error = false;
    std::optional<absl::Status> write_error;  // first failed write, flush or open
    uint64_t gc_victims = 0;
    std::unique_ptr<DB> db;
    {
      auto opened = OpenWithFileSystem(MakeOptions(), "/db", fs);
      if (opened.ok()) {
        db = std::move(*opened);
      } else {
        saw_error = true;
        write_error = opened.status();
      }
    }
    for (size_t i = 0; db != nullptr && !write_error.has_value() && i < ops.size(); ++i) {
      const WorkOp& op = ops[i];
      switch (op.kind) {
        case WorkOp::Kind::kWrite: {
          WriteBatch b;
          for (const auto& [k, v] : op.updates) v.has_value() ? b.Put(k, *v) : b.Delete(k);
          WriteOptions wo;
          wo.sync = op.sync;
          const absl::Status s = db->Write(wo, b);
          if (s.ok()) {
            acked.push_back(&op);
            Apply(op, &model);
          } else {
            failed = &op;
            write_error = s;
          }
          break;
        }
        case WorkOp::Kind::kGet: {
          std::string v;
          const absl::Status s = db->Get(ReadOptions(), op.key, &v);
          auto it = model.find(op.key);
          if (s.ok() && (it == model.end() || it->second != v)) {
            add(absl::StrCat("Get(", op.key, ") returned a wrong value"));
          } else if (absl::IsNotFound(s) && it != model.end()) {
            add(absl::StrCat("Get(", op.key, ") missed an acknowledged value"));
          } else if (!s.ok() && !absl::IsNotFound(s)) {
            saw_error = true;  // a clean read failure
          }
          break;
        }
        case WorkOp::Kind::kScan:
          if (!CheckScan(db.get(), {&model}, &saw_error)) add("a scan returned a wrong state");
          break;
        case WorkOp::Kind::kFlush: {
          const absl::Status s = db->Flush();
          if (!s.ok()) write_error = s;
          break;
        }
        case WorkOp::Kind::kGc: {
          // A failed collection stops writes like a failed write.
          const absl::StatusOr<GcResult> gc = db->RunGC();
          if (!gc.ok()) {
            write_error = gc.status();
          } else {
            gc_victims += gc->victims;
          }
          break;
        }
      }
    }
    if (db != nullptr && !write_error.has_value()) {
      const absl::Status s = db->WaitForBackgroundWork();
      if (!s.ok()) write_error = s;
    }
    if (write_error.has_value()) saw_error = true;
    result.faults_injected = fs->faults_injected();
    result.gc_victims = gc_victims;
    result.ops_seen = fs->ops_seen();
    // A failed write or sync must be reported: the engine never retries
    // one. A failed read may be absorbed (a later read of the same bytes
    // succeeds, or background work is redone) as long as every answer was
    // right, which the checks above hold it to.
    if (result.faults_injected > 0 && !saw_error && fault.has_value() &&
        fault->type->kind != io::FaultKind::kRead) {
      add("a write-side fault was injected but no operation reported an error");
    }

    Model with_failed = model;
    if (failed != nullptr) Apply(*failed, &with_failed);
    const WorkOp* probe = nullptr;
    WorkOp probe_op;
    if (db != nullptr && write_error.has_value()) {
      // Fail-stop: no write may succeed until the DB is reopened.
      probe_op.updates.emplace_back("probe-after-error", std::optional<std::string>("x"));
      const absl::Status s = db->Put(WriteOptions(), "probe-after-error", "x");
      if (s.ok()) {
        add(absl::StrCat("a write succeeded after the error \"", write_error->ToString(),
                         "\" (no fail-stop)"));
        probe = &probe_op;
        Apply(probe_op, &model);
        Apply(probe_op, &with_failed);
      } else if (!absl::StrContains(s.message(), "reopen")) {
        add(absl::StrCat("a write after the error \"", write_error->ToString(),
                         "\" failed without saying the DB must be reopened: ", s.ToString()));
      }
      // Reads keep working or fail cleanly.
      if (!CheckScan(db.get(), {&model, &with_failed}, &saw_error)) {
        add("a scan after the error returned a wrong state");
      }
    }

    // The space (or the device) comes back; the process dies; the machine
    // loses what was not synced; the DB reopens.
    fs->ClearFaults();
    fs->SetFilesystemActive(false);
    db.reset();
    const uint64_t crash_seed = fault.has_value() ? fault->k : 0;
    if (absl::Status s = fs->SimulateCrash(io::CrashMode::kDropUnsynced, crash_seed); !s.ok()) {
      add(absl::StrCat("SimulateCrash: ", s.ToString()));
      return result;
    }
    auto reopened = OpenWithFileSystem(MakeOptions(), "/db", fs);
    if (!reopened.ok()) {
      add(absl::StrCat("reopen after the fault failed: ", reopened.status().ToString()));
      return result;
    }
    db = std::move(*reopened);
    Model recovered;
    {
      auto it = db->NewIterator(ReadOptions());
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        recovered.emplace(std::string(it->key()), std::string(it->value()));
      }
      if (!it->status().ok()) {
        add(absl::StrCat("scan after reopen: ", it->status().ToString()));
        return result;
      }
    }
    // The candidate write orders: with and without the failed write.
    std::vector<std::vector<const WorkOp*>> orders(1, acked);
    if (failed != nullptr) {
      orders.push_back(acked);
      orders.back().push_back(failed);
    }
    bool matched = false;
    for (auto& order : orders) {
      if (probe != nullptr) order.push_back(probe);
      size_t last_sync = 0;
      for (size_t i = 0; i < order.size(); ++i) {
        if (order[i]->sync) last_sync = i + 1;
      }
      matched = matched || IsPrefixState(Model(), order, last_sync, recovered);
    }
    if (!matched) {
      add(absl::StrCat("after the crash the state is no prefix of the ", acked.size(),
                       " acknowledged writes holding every acknowledged sync write (",
                       recovered.size(), " keys recovered)"));
    }
    // And the DB takes writes again.
    absl::Status s = db->Put(WriteOptions{.sync = true}, "after-reopen", "y");
    std::string v;
    if (s.ok()) s = db->Get(ReadOptions(), "after-reopen", &v);
    if (!s.ok() || v != "y") add(absl::StrCat("no write after the reopen: ", s.ToString()));
    return result;
  }

  // Scans db: OK when it fails cleanly or equals one of the models.
  static bool CheckScan(DB* db, std::vector<const Model*> models, bool* saw_error) {
    Model got;
    auto it = db->NewIterator(ReadOptions());
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      got.emplace(std::string(it->key()), std::string(it->value()));
    }
    if (!it->status().ok()) {
      *saw_error = true;
      return true;
    }
    for (const Model* m : models) {
      if (got == *m) return true;
    }
    return false;
  }
};

TEST_P(FaultSweepTest, EveryInjectedFaultFailsCleanlyAndRecovers) {
  const char* l = std::getenv("CAIRN_LONG");
  uint64_t step = (l != nullptr && std::string(l) == "1") ? 1 : 10;
  // CAIRN_SWEEP_STEP=<n> overrides the step (to bisect a violation quickly).
  if (const char* st = std::getenv("CAIRN_SWEEP_STEP")) step = std::max<uint64_t>(1, std::strtoull(st, nullptr, 10));
  const std::vector<WorkOp> ops = MakeWorkload();

  const auto start = std::chrono::steady_clock::now();
  const CaseResult clean = RunCase(ops, std::nullopt);
  std::printf("fault_sweep: clean run %.3f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  ASSERT_TRUE(clean.violations.empty()) << clean.violations.front();
  const uint64_t n = clean.ops_seen;
  std::printf("fault_sweep: the workload does %llu I/O operations (N); RunGC collected %llu "
              "segments\n",
              static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(clean.gc_victims));
  // Separated, the sweep must cover GC at work, not just its calls.
  if (GetParam() != kInlineValues) {
    ASSERT_GT(clean.gc_victims, 0u);
  }

  uint64_t cases = 0;
  std::vector<std::string> violations;
  for (const FaultType& type : kFaultTypes) {
    uint64_t type_cases = 0;
    for (bool persistent : {false, true}) {
      // k past the last matching operation injects nothing: the sweep of
      // this kind is done.
      for (uint64_t k = 0; k <= n; k += step) {
        const Fault fault{&type, k, persistent, (k / step) % 2 == 1};
        const CaseResult r = RunCase(ops, fault);
        ++cases;
        ++type_cases;
        for (const std::string& v : r.violations) {
          violations.push_back(absl::StrFormat("[%s k=%d %s%s] %s", type.name, k,
                                               persistent ? "persistent" : "once",
                                               fault.drop_dir_entries ? " drop-dir-entries" : "",
                                               v));
        }
        if (r.faults_injected == 0) break;
      }
    }
    std::printf("fault_sweep: %-12s %llu cases\n", type.name,
                static_cast<unsigned long long>(type_cases));
  }
  std::printf("fault_sweep: %llu cases, %zu violations\n", static_cast<unsigned long long>(cases),
              violations.size());
  for (size_t i = 0; i < violations.size(); ++i) {
    if (i < 20) {
      ADD_FAILURE() << violations[i];
    } else {
      std::printf("fault_sweep: violation %s\n", violations[i].c_str());
    }
  }
  EXPECT_TRUE(violations.empty()) << violations.size() << " violations";
}

// The minimal form of the fail-stop rule the sweep checks: whichever sync of
// a Flush fails (the old WAL's, the new WAL's, the directory's, the table's,
// the manifest's), the next write must fail and say that the DB must be
// reopened (docs/testing.md, invariant 10).
TEST(FailStopTest, EveryFailedSyncInAFlushStopsWrites) {
  Options o;
  o.memtable_size = 64 << 10;
  for (uint64_t k = 0;; ++k) {
    SCOPED_TRACE(absl::StrCat("the sync that fails: #", k, " of the Flush"));
    auto fs = std::make_shared<io::FaultFileSystem>(std::make_shared<io::MemoryFileSystem>());
    auto db = OpenWithFileSystem(o, "/db", fs);
    ASSERT_OK(db);
    ASSERT_OK((*db)->Put(WriteOptions(), "a", "1"));
    fs->FailAfter(k, io::InjectedIoError("sync"), io::FaultKind::kSync, /*persistent=*/false);
    const absl::Status flush = (*db)->Flush();
    const absl::Status wait = (*db)->WaitForBackgroundWork();
    if (fs->faults_injected() == 0) {
      ASSERT_OK(flush);
      ASSERT_GT(k, 0u);
      break;
    }
    EXPECT_FALSE(flush.ok() && wait.ok()) << "a failed sync went unreported";
    const absl::Status put = (*db)->Put(WriteOptions(), "b", "2");
    if (put.ok()) {
      ADD_FAILURE() << "a write was accepted after a failed sync: " << flush;
    } else {
      EXPECT_TRUE(absl::StrContains(put.message(), "reopen"))
          << "the refusal does not say the DB must be reopened: " << put;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, FaultSweepTest, ::testing::Values(kInlineValues, size_t{100}),
                         [](const auto& info) {
                           return std::string(info.param == kInlineValues ? "inline"
                                                                          : "separated");
                         });

}  // namespace
}  // namespace cairn
