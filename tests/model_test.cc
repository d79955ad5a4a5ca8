// Randomized model test: puts, deletes, expiring puts (an absolute expiry or
// a write's TTL, against a fake clock the test moves), batches, snapshots,
// iterators in both directions, flushes, clean reopens and crashes, checked
// against a std::map oracle that expires its entries by the same clock.
// Crashes go through the fault-injecting file system: after each, the
// recovered state must equal the acknowledged write order replayed to some
// prefix that holds every acknowledged sync write (docs/testing.md).
//
// Seeds are printed; CAIRN_MODEL_SEED=<n> replays one. CAIRN_LONG=1 runs
// more cycles.
#include <cstdlib>
#include <map>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/db_impl.h"
#include "core/testing/ttl_helpers.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

using testing_clock::FakeClock;

// A value and its expiry (microseconds since the epoch; 0: none).
struct Entry {
  std::string value;
  uint64_t expiry = 0;
  bool operator==(const Entry&) const = default;
};
using Model = std::map<std::string, Entry>;
// What reads show: the model's entries not expired at some time.
using Visible = std::map<std::string, std::string>;

Visible VisibleAt(const Model& m, uint64_t now) {
  Visible v;
  for (const auto& [k, e] : m) {
    if (e.expiry == 0 || e.expiry > now) v.emplace(k, e.value);
  }
  return v;
}

struct Update {
  Update(std::string k, std::optional<Entry> v, std::optional<std::string> end = {})
      : key(std::move(k)), value(std::move(v)), range_end(std::move(end)) {}
  std::string key;
  // nullopt: a delete. An expiring put's entry carries its absolute expiry
  // (a TTL given with the write is turned into one when it is written).
  std::optional<Entry> value;
  // Set: DeleteRange(key, *range_end) (value unused).
  std::optional<std::string> range_end;
};

struct Op {
  // One acknowledged write: a batch of puts, deletes and range deletes.
  std::vector<Update> updates;
  bool sync = false;
  uint64_t ttl_seconds = 0;  // WriteOptions::ttl_seconds
};

void Apply(const Op& op, Model* m) {
  for (const Update& u : op.updates) {
    if (u.range_end.has_value()) {
      m->erase(m->lower_bound(u.key), m->lower_bound(*u.range_end));
    } else if (u.value.has_value()) {
      (*m)[u.key] = *u.value;
    } else {
      m->erase(u.key);
    }
  }
}

struct ModelTestParams {
  const char* name;
  size_t value_separation_threshold;
};

class ModelTest : public ::testing::TestWithParam<ModelTestParams> {
 protected:
  Options MakeOptions() const {
    Options o;
    o.memtable_size = 64 << 10;  // many flushes
    o.block_size = 512;
    o.target_file_size = 64 << 10;
    o.level0_compaction_trigger = 2;
    o.value_separation_threshold = GetParam().value_separation_threshold;
    o.value_log_segment_size = 64 << 10;  // many segments
    o.gc_min_garbage_ratio = 0.3;          // GC finds victims often
    return o;
  }

  static int Cycles(int normal, int long_run) {
    const char* l = std::getenv("CAIRN_LONG");
    return (l != nullptr && std::string(l) == "1") ? long_run : normal;
  }

  static std::vector<uint64_t> Seeds(int n) {
    if (const char* s = std::getenv("CAIRN_MODEL_SEED")) return {std::strtoull(s, nullptr, 10)};
    std::vector<uint64_t> seeds;
    std::random_device rd;
    for (int i = 0; i < n; ++i) seeds.push_back((uint64_t{rd()} << 32) | rd());
    return seeds;
  }
};

class Driver {
 public:
  Driver(uint64_t seed, Options options, std::shared_ptr<io::FileSystem> fs)
      : rng_(seed), options_(options), fs_(std::move(fs)) {
    options_.clock = clock_;
  }

  void Open() {
    auto db = OpenWithFileSystem(options_, "/db", fs_);
    ASSERT_OK(db);
    db_ = std::move(*db);
  }
  void Close() {
    ReleaseSnapshots();
    db_.reset();
  }

  std::string RandomKey() {
    const int n = std::uniform_int_distribution<int>(0, 199)(rng_);
    return absl::StrFormat("key%04d", n);
  }
  std::string RandomValue() {
    const int r = std::uniform_int_distribution<int>(0, 99)(rng_);
    size_t len = r < 60 ? r : (r < 95 ? 200 + r * 10 : 5000 + r * 100);
    std::string v(len, '\0');
    for (auto& c : v) c = static_cast<char>('a' + rng_() % 26);
    return v;
  }
  // A put: one in five expires 1 to 20 seconds from now.
  Entry RandomEntry() {
    Entry e{RandomValue(), 0};
    if (rng_() % 5 == 0) e.expiry = clock_->NowMicros() + (1 + rng_() % 20) * 1'000'000;
    return e;
  }

  // Runs n random operations; writes are logged in *log once acknowledged.
  void Run(int n, std::vector<Op>* log, bool check_reads) {
    for (int i = 0; i < n; ++i) {
      const int r = std::uniform_int_distribution<int>(0, 99)(rng_);
      if (r < 45) {
        Op op;
        op.sync = rng_() % 8 == 0;
        op.updates.emplace_back(RandomKey(), RandomEntry());
        // Now and then the write's own TTL instead, for its plain puts.
        if (rng_() % 10 == 0) op.ttl_seconds = 1 + rng_() % 20;
        Write(op, log);
      } else if (r < 60) {
        Op op;
        op.sync = rng_() % 8 == 0;
        op.updates.emplace_back(RandomKey(), std::nullopt);
        Write(op, log);
      } else if (r < 70) {
        Op op;
        op.sync = rng_() % 4 == 0;
        const int k = 1 + rng_() % 8;
        for (int j = 0; j < k; ++j) {
          if (rng_() % 8 == 0) {
            AddRangeDelete(&op);
          } else {
            op.updates.emplace_back(RandomKey(),
                                    rng_() % 3 == 0 ? std::nullopt : std::optional(RandomEntry()));
          }
        }
        Write(op, log);
      } else if (r < 73) {
        // DeleteRange (2026-12-07): a range of up to a tenth of the keys.
        Op op;
        op.sync = rng_() % 8 == 0;
        AddRangeDelete(&op);
        Write(op, log);
      } else if (r < 80 && check_reads) {
        CheckGet(RandomKey(), model_, nullptr);
      } else if (r < 84) {
        if (snapshots_.size() < 4) {
          snapshots_.push_back({db_->GetSnapshot(), model_});
        } else {
          const size_t idx = rng_() % snapshots_.size();
          CheckSnapshot(snapshots_[idx]);
          db_->ReleaseSnapshot(snapshots_[idx].first);
          snapshots_.erase(snapshots_.begin() + idx);
        }
      } else if (r < 88 && check_reads) {
        CheckIterator(nullptr, model_);
      } else if (r < 90) {
        ASSERT_OK(db_->Flush());
      } else if (r < 91) {
        ASSERT_OK(db_->CompactRange(nullptr, nullptr));
      } else if (r < 93) {
        auto gc = db_->RunGC();
        ASSERT_OK(gc);
      } else if (r < 96) {
        clock_->AdvanceSeconds(1 + rng_() % 6);
      } else if (check_reads && !snapshots_.empty()) {
        CheckSnapshot(snapshots_[rng_() % snapshots_.size()]);
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  void AddRangeDelete(Op* op) {
    std::string begin = RandomKey(), end = RandomKey();
    if (begin > end) std::swap(begin, end);
    if (begin == end) end += "~";  // never empty: begin < end
    // Mostly short ranges, so that most keys stay live.
    if (rng_() % 4 != 0) end = std::min(end, begin.substr(0, 6) + "9~");
    op->updates.emplace_back(begin, std::nullopt, end);
  }

  void Write(Op op, std::vector<Op>* log) {
    WriteBatch b;
    for (Update& u : op.updates) {
      if (u.range_end.has_value()) {
        b.DeleteRange(u.key, *u.range_end);
      } else if (!u.value.has_value()) {
        b.Delete(u.key);
      } else if (u.value->expiry != 0) {
        b.PutWithExpiry(u.key, u.value->value, u.value->expiry);
      } else {
        b.Put(u.key, u.value->value);
        // The DB measures the TTL from the clock, which stands still here.
        if (op.ttl_seconds != 0) {
          u.value->expiry = clock_->NowMicros() + op.ttl_seconds * 1'000'000;
        }
      }
    }
    WriteOptions wo;
    wo.sync = op.sync;
    wo.ttl_seconds = op.ttl_seconds;
    absl::Status s = db_->Write(wo, b);
    ASSERT_OK(s);
    Apply(op, &model_);
    if (log != nullptr) log->push_back(op);
  }

  Visible VisibleNow(const Model& m) { return VisibleAt(m, clock_->NowMicros()); }

  void CheckGet(const std::string& key, const Model& m, const Snapshot* snap) {
    ReadOptions ro;
    ro.snapshot = snap;
    std::string v;
    absl::Status s = db_->Get(ro, key, &v);
    const Visible visible = VisibleNow(m);
    auto it = visible.find(key);
    if (it == visible.end()) {
      ASSERT_TRUE(absl::IsNotFound(s)) << key << ": " << s;
    } else {
      ASSERT_TRUE(s.ok()) << key << ": " << s;
      ASSERT_EQ(v, it->second) << key;
    }
  }

  void CheckIterator(const Snapshot* snap, const Model& model) {
    const Visible m = VisibleNow(model);
    ReadOptions ro;
    ro.snapshot = snap;
    auto it = db_->NewIterator(ro);
    auto mit = m.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++mit) {
      ASSERT_NE(mit, m.end()) << "extra key " << it->key();
      ASSERT_EQ(it->key(), mit->first);
      ASSERT_EQ(it->value(), mit->second);
    }
    ASSERT_OK(it->status());
    ASSERT_EQ(mit, m.end()) << "missing key " << mit->first;
    auto rit = m.rbegin();
    for (it->SeekToLast(); it->Valid(); it->Prev(), ++rit) {
      ASSERT_NE(rit, m.rend());
      ASSERT_EQ(it->key(), rit->first);
    }
    ASSERT_EQ(rit, m.rend());
    // A seek, then a few random steps in both directions.
    const std::string target = RandomKey();
    it->Seek(target);
    auto pos = m.lower_bound(target);
    for (int step = 0; step < 10; ++step) {
      if (pos == m.end()) {
        ASSERT_FALSE(it->Valid());
        break;
      }
      ASSERT_TRUE(it->Valid());
      ASSERT_EQ(it->key(), pos->first);
      ASSERT_EQ(it->value(), pos->second);
      if (rng_() % 2 == 0) {
        it->Next();
        ++pos;
      } else {
        if (pos == m.begin()) {
          it->Prev();
          ASSERT_FALSE(it->Valid());
          break;
        }
        it->Prev();
        --pos;
      }
    }
  }

  void CheckSnapshot(const std::pair<const Snapshot*, Model>& snap) {
    CheckGet(RandomKey(), snap.second, snap.first);
    CheckIterator(snap.first, snap.second);
  }

  Visible ReadAll() {
    Visible m;
    auto it = db_->NewIterator(ReadOptions());
    for (it->SeekToFirst(); it->Valid(); it->Next()) m[std::string(it->key())] = it->value();
    EXPECT_OK(it->status());
    return m;
  }

  void ReleaseSnapshots() {
    for (auto& s : snapshots_) db_->ReleaseSnapshot(s.first);
    snapshots_.clear();
  }

  Model& model() { return model_; }
  Visible visible_model() { return VisibleNow(model_); }
  DB* db() { return db_.get(); }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
  Options options_;
  std::shared_ptr<io::FileSystem> fs_;
  // Moves only forward, by the test's steps; shared by every open.
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  std::unique_ptr<DB> db_;
  Model model_;
  std::vector<std::pair<const Snapshot*, Model>> snapshots_;
};

TEST_P(ModelTest, RandomOperationsWithReopens) {
  for (uint64_t seed : Seeds(Cycles(2, 10))) {
    SCOPED_TRACE(absl::StrCat("CAIRN_MODEL_SEED=", seed));
    auto fs = std::make_shared<io::MemoryFileSystem>();
    Driver d(seed, MakeOptions(), fs);
    d.Open();
    ASSERT_FALSE(HasFatalFailure());
    for (int round = 0; round < Cycles(6, 30); ++round) {
      d.Run(400, nullptr, /*check_reads=*/true);
      ASSERT_FALSE(HasFatalFailure());
      d.Close();
      d.Open();
      ASSERT_FALSE(HasFatalFailure());
      ASSERT_EQ(d.ReadAll(), d.visible_model());
    }
  }
}

TEST_P(ModelTest, CrashesRecoverAPrefixHoldingEverySyncedWrite) {
  const io::CrashMode kModes[] = {io::CrashMode::kDropUnsynced, io::CrashMode::kKeepRandomPrefix,
                                  io::CrashMode::kTearLastWrite};
  int cycles = 0;
  for (uint64_t seed : Seeds(Cycles(2, 10))) {
    SCOPED_TRACE(absl::StrCat("CAIRN_MODEL_SEED=", seed));
    auto base = std::make_shared<io::MemoryFileSystem>();
    io::FaultFileSystemOptions fopts;
    fopts.drop_unsynced_dir_entries = true;
    auto fs = std::make_shared<io::FaultFileSystem>(base, fopts);
    Driver d(seed, MakeOptions(), fs);
    d.Open();
    ASSERT_FALSE(HasFatalFailure());
    for (int round = 0; round < Cycles(25, 250); ++round, ++cycles) {
      const Model before = d.model();
      std::vector<Op> log;
      d.Run(150, &log, /*check_reads=*/round % 5 == 0);
      ASSERT_FALSE(HasFatalFailure());
      // Crash: the process dies, then the machine loses what was not durable.
      d.ReleaseSnapshots();
      fs->SetFilesystemActive(false);
      d.Close();
      const io::CrashMode mode = kModes[d.rng()() % 3];
      ASSERT_OK(fs->SimulateCrash(mode, d.rng()()));
      d.Open();
      ASSERT_FALSE(HasFatalFailure());
      const Visible recovered = d.ReadAll();
      // Find the prefix of the log that the recovered state equals; it must
      // include the last sync write.
      size_t last_sync = 0;
      for (size_t i = 0; i < log.size(); ++i) {
        if (log[i].sync) last_sync = i + 1;
      }
      Model m = before;
      std::optional<size_t> match;
      for (size_t p = 0; p <= log.size(); ++p) {
        if (p > 0) Apply(log[p - 1], &m);
        if (p >= last_sync && d.VisibleNow(m) == recovered) {
          match = p;
          break;
        }
      }
      ASSERT_TRUE(match.has_value())
          << "round " << round << " mode " << static_cast<int>(mode)
          << ": recovered state is no prefix of the acknowledged writes holding the last sync "
             "write (of "
          << log.size() << " writes, last sync at " << last_sync << ")";
      // The prefix, with its expiries, is the model from here on.
      d.model() = m;
    }
  }
  std::printf("crash cycles: %d\n", cycles);
}

INSTANTIATE_TEST_SUITE_P(Modes, ModelTest,
                         ::testing::Values(ModelTestParams{"inline", kInlineValues},
                                           ModelTestParams{"separated_all", 0},
                                           ModelTestParams{"separated_100", 100}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace cairn
