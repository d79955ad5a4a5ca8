// Tests for RunCompaction and CompactionIterator over real tables in a
// MemoryFileSystem: the merge against a std::map model, versions kept and
// dropped around snapshots, tombstones dropped only with nothing below, the
// listener hearing exactly the dropped values, output cuts (target size,
// user-key boundaries, grandparent overlap), trivial moves, clean failure on
// write errors and corrupt inputs, and subcompactions (a split job's output
// equals the unsplit one's, its ranges do not overlap, one failing range
// fails the whole job).
#include "lsm/compaction_job.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "lsm/compaction.h"
#include "lsm/dbformat.h"
#include "lsm/filename.h"
#include "lsm/subcompaction.h"
#include "lsm/table_builder.h"
#include "lsm/table_cache.h"
#include "lsm/version.h"

namespace cairn::lsm {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAreArray;

constexpr char kDb[] = "/db";

struct Entry {
  std::string user_key;
  SequenceNumber seq = 0;
  ValueType type = ValueType::kValue;
  std::string value;

  bool operator==(const Entry& o) const {
    return std::tie(user_key, seq, type, value) == std::tie(o.user_key, o.seq, o.type, o.value);
  }
  // Internal-key order.
  bool operator<(const Entry& o) const {
    if (user_key != o.user_key) return user_key < o.user_key;
    return seq > o.seq;
  }
};

std::ostream& operator<<(std::ostream& os, const Entry& e) {
  return os << e.user_key << "@" << e.seq << ":" << static_cast<int>(e.type) << "=" << e.value;
}

Entry Put(std::string key, SequenceNumber seq, ValueType type = ValueType::kValue) {
  return {std::move(key), seq, type, absl::StrFormat("value@%d", seq)};
}
Entry Del(std::string key, SequenceNumber seq) {
  return {std::move(key), seq, ValueType::kDeletion, ""};
}

class RecordingListener : public CompactionListener {
 public:
  void OnValueDropped(std::string_view user_key, ValueType type,
                      std::string_view stored_value) override {
    dropped.push_back({std::string(user_key), 0, type, std::string(stored_value)});
  }
  // Entries without their sequence (the listener is not told it).
  std::vector<Entry> dropped;
};

// e without its sequence, to compare with what the listener heard.
Entry Unsequenced(Entry e) {
  e.seq = 0;
  return e;
}

class CompactionJobTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs_->CreateDir(kDb).ok());
    options_.block_size = 256;
    options_.compress = false;
    cache_ = std::make_unique<TableCache>(fs_.get(), kDb, options_, nullptr, nullptr);
  }

  // Writes a table of entries (any order) and returns its metadata.
  std::shared_ptr<FileMetaData> MakeTable(std::vector<Entry> entries) {
    std::sort(entries.begin(), entries.end());
    auto meta = std::make_shared<FileMetaData>();
    meta->number = next_number_++;
    auto file = fs_->NewWritableFile(TableFileName(kDb, meta->number), {});
    EXPECT_TRUE(file.ok()) << file.status();
    TableBuilder builder(options_, file->get());
    meta->smallest_seq = kMaxSequenceNumber;
    for (const Entry& e : entries) {
      std::string key;
      AppendInternalKey(&key, e.user_key, e.seq, e.type);
      EXPECT_TRUE(builder.Add(key, e.value).ok());
      meta->smallest_seq = std::min(meta->smallest_seq, e.seq);
      meta->largest_seq = std::max(meta->largest_seq, e.seq);
    }
    EXPECT_TRUE(builder.Finish().ok());
    EXPECT_TRUE((*file)->Close().ok());
    meta->file_size = builder.FileSize();
    meta->num_entries = builder.NumEntries();
    meta->smallest = builder.smallest_key();
    meta->largest = builder.largest_key();
    return meta;
  }

  static std::shared_ptr<const Version> MakeVersion(std::array<FileList, kNumLevels> levels) {
    std::sort(levels[0].begin(), levels[0].end(),
              [](const auto& a, const auto& b) { return a->number > b->number; });
    for (int level = 1; level < kNumLevels; ++level) {
      std::sort(levels[level].begin(), levels[level].end(), [](const auto& a, const auto& b) {
        return CompareInternalKeys(a->smallest, b->smallest) < 0;
      });
    }
    return std::make_shared<const Version>(std::move(levels));
  }

  std::vector<Entry> ReadTable(uint64_t number, uint64_t size) {
    std::vector<Entry> out;
    auto it = cache_->NewIterator({}, number, size);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ParsedInternalKey k;
      EXPECT_TRUE(ParseInternalKey(it->key(), &k));
      out.push_back({std::string(k.user_key), k.sequence, k.type, std::string(it->value())});
    }
    EXPECT_TRUE(it->status().ok()) << it->status();
    return out;
  }

  // Every entry of the edit's new files, in file order.
  std::vector<Entry> ReadOutputs(const VersionEdit& edit) {
    std::vector<Entry> out;
    for (const auto& [level, f] : edit.new_files()) {
      for (Entry& e : ReadTable(f.number, f.file_size)) out.push_back(std::move(e));
    }
    return out;
  }

  CompactionJobEnv Env(std::vector<SequenceNumber> snapshots = {},
                       SequenceNumber latest = kMaxSequenceNumber) {
    CompactionJobEnv env;
    env.fs = fs_.get();
    env.dbname = kDb;
    env.table_cache = cache_.get();
    env.table_options = options_;
    env.new_file_number = [this] { return next_number_++; };
    env.snapshots = std::move(snapshots);
    env.latest_sequence = latest;
    env.listener = &listener_;
    return env;
  }

  // Table files in the database directory.
  std::vector<std::string> TableFiles() {
    auto names = fs_->ListDir(kDb);
    EXPECT_TRUE(names.ok());
    std::vector<std::string> tables;
    for (const auto& n : *names) {
      uint64_t number;
      FileType type;
      if (ParseFileName(n, &number, &type) && type == FileType::kTable) tables.push_back(n);
    }
    std::sort(tables.begin(), tables.end());
    return tables;
  }

  std::shared_ptr<io::MemoryFileSystem> fs_ = std::make_shared<io::MemoryFileSystem>();
  TableOptions options_;
  std::unique_ptr<TableCache> cache_;
  uint64_t next_number_ = 1;
  RecordingListener listener_;
  CompactionOptions copts_{.target_file_size = 1 << 20};
};

// Compacts one input file of `level` into `output_level`, with nothing
// else overlapping unless given.
std::unique_ptr<Compaction> Compact(const CompactionOptions& o, int level, int output_level,
                                    FileList inputs, FileList outputs = {},
                                    FileList grandparents = {}) {
  return std::make_unique<Compaction>(o, level, output_level, std::move(inputs),
                                      std::move(outputs), std::move(grandparents),
                                      /*manual=*/false, 1.0);
}

// Rewrites one last-level file in place (never a trivial move).
std::unique_ptr<Compaction> Rewrite(const CompactionOptions& o, std::shared_ptr<FileMetaData> f) {
  return std::make_unique<Compaction>(o, kNumLevels - 1, kNumLevels - 1, FileList{std::move(f)},
                                      FileList{}, FileList{}, /*manual=*/true, 0.0);
}

TEST_F(CompactionJobTest, MergeMatchesAModelAndDropsEverythingHidden) {
  std::mt19937 rng(7);
  std::map<std::string, Entry> model;  // newest entry per key
  std::vector<Entry> all;
  SequenceNumber seq = 0;
  auto workload = [&](int n) {
    std::vector<Entry> entries;
    for (int i = 0; i < n; ++i) {
      const std::string key = absl::StrFormat("key%04d", rng() % 400);
      const int kind = static_cast<int>(rng() % 10);
      Entry e = kind < 2   ? Del(key, ++seq)
                : kind < 5 ? Put(key, ++seq, ValueType::kValuePointer)
                           : Put(key, ++seq);
      model[key] = e;
      all.push_back(e);
      entries.push_back(std::move(e));
    }
    return entries;
  };
  std::array<FileList, kNumLevels> levels;
  levels[6].push_back(MakeTable(workload(300)));
  for (int i = 0; i < 4; ++i) levels[0].push_back(MakeTable(workload(150)));
  auto v = MakeVersion(levels);

  auto c = PickCompaction(*v, copts_);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->output_level(), 6);
  ASSERT_EQ(c->NumInputFiles(), 5u);
  VersionEdit edit;
  CompactionJobStats stats;
  ASSERT_TRUE(RunCompaction(*c, *v, Env(), &edit, &stats).ok());

  std::vector<Entry> expected;
  uint64_t tombstones = 0;
  for (const auto& [key, e] : model) {
    if (e.type == ValueType::kDeletion) {
      ++tombstones;
    } else {
      expected.push_back(e);
    }
  }
  EXPECT_EQ(ReadOutputs(edit), expected);

  // The listener heard every input value that is not in the output, once.
  std::vector<Entry> dropped;
  for (const Entry& e : all) {
    if (e.type != ValueType::kDeletion && std::find(expected.begin(), expected.end(), e) ==
                                              expected.end()) {
      dropped.push_back(Unsequenced(e));
    }
  }
  EXPECT_THAT(listener_.dropped, UnorderedElementsAreArray(dropped));

  EXPECT_FALSE(stats.trivial_move);
  EXPECT_EQ(stats.input_files[0], 4u);
  EXPECT_EQ(stats.input_files[1], 1u);
  EXPECT_EQ(stats.input_bytes[0] + stats.input_bytes[1], c->InputBytes());
  EXPECT_EQ(stats.input_entries, all.size());
  EXPECT_EQ(stats.output_entries, expected.size());
  EXPECT_EQ(stats.dropped_tombstones, tombstones);
  EXPECT_EQ(stats.dropped_obsolete + stats.dropped_tombstones + stats.output_entries,
            stats.input_entries);
  EXPECT_EQ(stats.dropped_values, dropped.size());
  EXPECT_EQ(stats.output_files, edit.new_files().size());
  uint64_t output_bytes = 0;
  for (const auto& [level, f] : edit.new_files()) output_bytes += f.file_size;
  EXPECT_EQ(stats.output_bytes, output_bytes);
  EXPECT_EQ(fs_->stats().Get(io::IoCategory::kCompaction).bytes_written, output_bytes);
  EXPECT_GE(fs_->stats().Get(io::IoCategory::kCompaction).sync_ops, stats.output_files);

  // The edit applies to the version it was picked from.
  VersionBuilder builder(v.get());
  ASSERT_TRUE(builder.Apply(edit).ok());
  auto next = builder.Build();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ((*next)->NumFiles(0), 0u);
  EXPECT_EQ((*next)->NumFiles(6), edit.new_files().size());
}

// Whether the policy keeps e: some reader (a snapshot or the latest state)
// sees it as the newest version of its key, and it is not a tombstone at the
// bottom that every snapshot already sees.
std::vector<Entry> ExpectedKept(const std::vector<Entry>& sorted, bool bottom,
                                const std::vector<SequenceNumber>& snapshots,
                                SequenceNumber latest) {
  std::vector<SequenceNumber> readers = snapshots;
  readers.push_back(latest);
  std::vector<Entry> kept;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const Entry& e = sorted[i];
    bool visible = false;
    for (SequenceNumber r : readers) {
      if (e.seq > r) continue;
      // Newest of its key at or below r: no newer version of the key <= r.
      bool newest = true;
      for (size_t j = 0; j < i; ++j) {
        if (sorted[j].user_key == e.user_key && sorted[j].seq <= r) newest = false;
      }
      visible |= newest;
    }
    if (!visible) continue;
    const bool all_snapshots_see_it = std::all_of(
        snapshots.begin(), snapshots.end(), [&](SequenceNumber s) { return s >= e.seq; });
    if (bottom && e.type == ValueType::kDeletion && all_snapshots_see_it) continue;
    kept.push_back(e);
  }
  return kept;
}

// What a reader at r sees for key in entries (sorted): the newest value at
// or below r, or nothing.
std::string ReadAt(const std::vector<Entry>& sorted, const std::string& key, SequenceNumber r) {
  for (const Entry& e : sorted) {
    if (e.user_key != key || e.seq > r) continue;
    return e.type == ValueType::kDeletion ? "<none>" : e.value;
  }
  return "<none>";
}

TEST_F(CompactionJobTest, SnapshotsKeepTheNewestVersionEachOneSees) {
  std::mt19937 rng(11);
  for (int round = 0; round < 40; ++round) {
    const bool bottom = round % 2 == 0;
    std::vector<Entry> entries;
    SequenceNumber seq = 0;
    for (int k = 0; k < 20; ++k) {
      const std::string key = absl::StrFormat("k%02d", k);
      const int versions = 1 + static_cast<int>(rng() % 6);
      for (int i = 0; i < versions; ++i) {
        seq += 1 + rng() % 3;
        entries.push_back(rng() % 3 == 0 ? Del(key, seq) : Put(key, seq));
      }
    }
    std::vector<SequenceNumber> snapshots;
    const int num_snapshots = static_cast<int>(rng() % 5);
    for (int i = 0; i < num_snapshots; ++i) snapshots.push_back(1 + rng() % seq);
    std::sort(snapshots.begin(), snapshots.end());
    const SequenceNumber latest = seq;
    std::sort(entries.begin(), entries.end());

    // Split the history between L4 and L5: the newer half above.
    std::vector<Entry> upper, lower;
    for (const Entry& e : entries) (e.seq > seq / 2 ? upper : lower).push_back(e);
    std::array<FileList, kNumLevels> levels;
    levels[4].push_back(MakeTable(upper));
    levels[5].push_back(MakeTable(lower));
    if (!bottom) levels[6].push_back(MakeTable({Put("k", 0), Put("z", 0)}));
    auto v = MakeVersion(levels);
    auto c = Compact(copts_, 4, 5, v->files(4), v->files(5), v->files(6));
    listener_.dropped.clear();
    VersionEdit edit;
    CompactionJobStats stats;
    ASSERT_TRUE(RunCompaction(*c, *v, Env(snapshots, latest), &edit, &stats).ok());

    const std::vector<Entry> out = ReadOutputs(edit);
    ASSERT_EQ(out, ExpectedKept(entries, bottom, snapshots, latest))
        << "round " << round << " snapshots " << ::testing::PrintToString(snapshots);
    std::vector<SequenceNumber> readers = snapshots;
    readers.push_back(latest);
    for (int k = 0; k < 20; ++k) {
      const std::string key = absl::StrFormat("k%02d", k);
      for (SequenceNumber r : readers) {
        EXPECT_EQ(ReadAt(out, key, r), ReadAt(entries, key, r)) << key << " at " << r;
      }
    }
    std::vector<Entry> dropped;
    for (const Entry& e : entries) {
      if (e.type != ValueType::kDeletion && std::find(out.begin(), out.end(), e) == out.end()) {
        dropped.push_back(Unsequenced(e));
      }
    }
    EXPECT_THAT(listener_.dropped, UnorderedElementsAreArray(dropped));
  }
}

TEST_F(CompactionJobTest, TombstoneAtTheBottomGoesWithWhatItHides) {
  auto upper = MakeTable({Del("a", 30), Put("b", 31)});
  auto lower = MakeTable({Put("a", 10), Put("a", 20, ValueType::kValuePointer), Put("b", 11)});
  auto v = MakeVersion({FileList{}, {}, {}, {}, {}, {upper}, {lower}});
  VersionEdit edit;
  CompactionJobStats stats;
  ASSERT_TRUE(RunCompaction(*Compact(copts_, 5, 6, {upper}, {lower}), *v, Env(), &edit, &stats)
                  .ok());
  EXPECT_THAT(ReadOutputs(edit), ElementsAre(Put("b", 31)));
  EXPECT_THAT(listener_.dropped,
              UnorderedElementsAreArray({Unsequenced(Put("a", 20, ValueType::kValuePointer)),
                                         Unsequenced(Put("a", 10)), Unsequenced(Put("b", 11))}));
  EXPECT_EQ(stats.dropped_tombstones, 1u);
  EXPECT_EQ(stats.dropped_obsolete, 3u);
  EXPECT_EQ(stats.dropped_value_bytes, 3 * Put("a", 10).value.size());
}

TEST_F(CompactionJobTest, TombstoneStaysWhileADeeperLevelMayHoldItsKey) {
  auto upper = MakeTable({Del("a", 30), Del("m", 31)});
  auto lower = MakeTable({Put("a", 10), Put("m", 11)});
  auto deeper = MakeTable({Put("k", 1), Put("n", 2)});  // covers "m", not "a"
  auto v = MakeVersion({FileList{}, {}, {}, {}, {upper}, {lower}, {deeper}});
  VersionEdit edit;
  ASSERT_TRUE(
      RunCompaction(*Compact(copts_, 4, 5, {upper}, {lower}, {deeper}), *v, Env(), &edit, nullptr)
          .ok());
  EXPECT_THAT(ReadOutputs(edit), ElementsAre(Del("m", 31)));
  EXPECT_THAT(listener_.dropped,
              UnorderedElementsAreArray({Unsequenced(Put("a", 10)), Unsequenced(Put("m", 11))}));
}

TEST_F(CompactionJobTest, TombstoneStaysWhileASnapshotSeesAnOlderValue) {
  auto upper = MakeTable({Del("a", 30), Del("b", 31)});
  auto lower = MakeTable({Put("a", 10), Put("b", 11)});
  auto v = MakeVersion({FileList{}, {}, {}, {}, {}, {upper}, {lower}});
  VersionEdit edit;
  // Snapshot 20 still sees a@10 and b@11; snapshot 35 sees both deleted.
  ASSERT_TRUE(RunCompaction(*Compact(copts_, 5, 6, {upper}, {lower}), *v, Env({20, 35}, 40),
                            &edit, nullptr)
                  .ok());
  EXPECT_THAT(ReadOutputs(edit), ElementsAre(Del("a", 30), Put("a", 10), Del("b", 31),
                                             Put("b", 11)));
  EXPECT_THAT(listener_.dropped, IsEmpty());

  // Once only snapshot 35 is left, both go.
  VersionEdit edit2;
  ASSERT_TRUE(RunCompaction(*Compact(copts_, 5, 6, {upper}, {lower}), *v, Env({35}, 40), &edit2,
                            nullptr)
                  .ok());
  EXPECT_THAT(ReadOutputs(edit2), IsEmpty());
  EXPECT_EQ(listener_.dropped.size(), 2u);
}

TEST_F(CompactionJobTest, OutputsAreCutAtTheTargetSizeButNeverSplitAUserKey) {
  std::vector<Entry> entries;
  std::vector<SequenceNumber> snapshots;
  SequenceNumber seq = 0;
  for (int k = 0; k < 300; ++k) {
    const std::string key = absl::StrFormat("key%04d", k);
    // Key 150 has 100 versions, each held by a snapshot: 100 x ~110 bytes,
    // more than one target file.
    const int versions = k == 150 ? 100 : 1;
    for (int i = 0; i < versions; ++i) {
      entries.push_back({key, ++seq, ValueType::kValue, std::string(100, 'a' + k % 26)});
      if (versions > 1) snapshots.push_back(seq);
    }
  }
  auto input = MakeTable(entries);
  auto v = MakeVersion({FileList{}, {}, {}, {}, {}, {}, {input}});
  CompactionOptions o = copts_;
  o.target_file_size = 4096;
  VersionEdit edit;
  CompactionJobStats stats;
  ASSERT_TRUE(RunCompaction(*Rewrite(o, input), *v, Env(snapshots), &edit, &stats).ok());
  ASSERT_GE(edit.new_files().size(), 8u);
  EXPECT_EQ(ReadOutputs(edit).size(), entries.size());
  EXPECT_THAT(listener_.dropped, IsEmpty());
  const auto& files = edit.new_files();
  for (size_t i = 0; i < files.size(); ++i) {
    const FileMetaData& f = files[i].second;
    EXPECT_EQ(files[i].first, 6);
    if (i + 1 < files.size()) {
      EXPECT_GE(f.file_size, o.target_file_size) << i;
      EXPECT_LT(ExtractUserKey(f.largest), ExtractUserKey(files[i + 1].second.smallest)) << i;
    }
    EXPECT_EQ(f.num_entries, ReadTable(f.number, f.file_size).size());
  }
  // All 100 versions of key0150 share one file.
  int holders = 0;
  for (const auto& [level, f] : files) {
    const auto table = ReadTable(f.number, f.file_size);
    holders += std::any_of(table.begin(), table.end(),
                           [](const Entry& e) { return e.user_key == "key0150"; });
  }
  EXPECT_EQ(holders, 1);
}

TEST_F(CompactionJobTest, OutputsAreCutWhenTheyOverlapTooMuchOfTheGrandparents) {
  std::vector<Entry> entries;
  for (int k = 0; k < 100; ++k) entries.push_back(Put(absl::StrFormat("key%04d", k), k + 1));
  auto input = MakeTable(entries);
  // Grandparents: ten 1 MiB files (metadata only, never read), ten keys each.
  FileList grandparents;
  for (int g = 0; g < 10; ++g) {
    auto f = std::make_shared<FileMetaData>();
    f->number = 1000 + g;
    f->file_size = 1 << 20;
    AppendInternalKey(&f->smallest, absl::StrFormat("key%04d", g * 10), 0, ValueType::kValue);
    AppendInternalKey(&f->largest, absl::StrFormat("key%04d", g * 10 + 9), 0, ValueType::kValue);
    grandparents.push_back(f);
  }
  auto v = MakeVersion({FileList{}, {}, {}, {}, {input}, {}, grandparents});
  CompactionOptions o = copts_;  // 1 MiB files, cut past 2 MiB of grandparents
  o.max_grandparent_overlap_factor = 2;
  VersionEdit edit;
  ASSERT_TRUE(RunCompaction(*Compact(o, 4, 5, {input}, {}, grandparents), *v, Env(), &edit,
                            nullptr)
                  .ok());
  // Each output spans at most three grandparents: a cut every 30 keys.
  ASSERT_EQ(edit.new_files().size(), 4u);
  EXPECT_EQ(ExtractUserKey(edit.new_files()[1].second.smallest), "key0030");
  EXPECT_EQ(ReadOutputs(edit), entries);
}

TEST_F(CompactionJobTest, TrivialMoveOnlyMovesTheFile) {
  auto f = MakeTable({Put("a", 1), Put("a", 2), Del("b", 3)});
  auto v = MakeVersion({FileList{}, {}, {}, {}, {f}, {}, {}});
  auto c = Compact(copts_, 4, 5, {f});
  ASSERT_TRUE(c->IsTrivialMove());
  const auto before = TableFiles();
  VersionEdit edit;
  CompactionJobStats stats;
  ASSERT_TRUE(RunCompaction(*c, *v, Env(), &edit, &stats).ok());
  EXPECT_TRUE(stats.trivial_move);
  EXPECT_EQ(stats.input_files[0], 1u);
  EXPECT_EQ(stats.output_files, 0u);
  EXPECT_THAT(edit.deleted_files(), ElementsAre(std::pair<int, uint64_t>(4, f->number)));
  ASSERT_EQ(edit.new_files().size(), 1u);
  EXPECT_EQ(edit.new_files()[0].first, 5);
  EXPECT_EQ(edit.new_files()[0].second.number, f->number);
  EXPECT_EQ(edit.new_files()[0].second.largest, f->largest);
  EXPECT_THAT(listener_.dropped, IsEmpty());
  EXPECT_EQ(TableFiles(), before);
  EXPECT_EQ(fs_->stats().Get(io::IoCategory::kCompaction).bytes_written, 0u);
  VersionBuilder builder(v.get());
  ASSERT_TRUE(builder.Apply(edit).ok());
  auto next = builder.Build();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ((*next)->NumFiles(4), 0u);
  ASSERT_EQ((*next)->NumFiles(5), 1u);
  EXPECT_EQ((*next)->files(5)[0]->number, f->number);
}

TEST_F(CompactionJobTest, WriteErrorRemovesEveryOutputAndIsReturned) {
  std::vector<Entry> entries;
  for (int k = 0; k < 400; ++k) {
    entries.push_back({absl::StrFormat("key%04d", k), static_cast<SequenceNumber>(k + 1),
                       ValueType::kValue, std::string(50, 'v')});
  }
  auto input = MakeTable(entries);
  auto v = MakeVersion({FileList{}, {}, {}, {}, {}, {}, {input}});
  CompactionOptions o = copts_;
  o.target_file_size = 4096;  // several outputs, so a failure can follow finished ones
  const auto before = TableFiles();
  io::FaultFileSystem fault(fs_);
  int failures = 0;
  bool failed_after_a_finished_output = false;
  for (uint64_t n : {0, 1, 5, 20, 40, 80, 160}) {
    const uint64_t first_number = next_number_;
    fault.FailAfter(n, io::InjectedIoError("test"), io::FaultKind::kAnyWrite, /*persistent=*/true);
    CompactionJobEnv env = Env();
    env.fs = &fault;
    VersionEdit edit;
    CompactionJobStats stats;
    const absl::Status s = RunCompaction(*Rewrite(o, input), *v, env, &edit, &stats);
    if (s.ok()) {
      // Past the job's last write: then it must have succeeded completely.
      EXPECT_EQ(ReadOutputs(edit), entries);
      break;
    }
    ++failures;
    // A second output was started only after the first was synced and closed.
    failed_after_a_finished_output |= next_number_ - first_number >= 2;
    EXPECT_EQ(s.code(), io::InjectedIoError("test").code()) << s;
    EXPECT_TRUE(edit.new_files().empty());
    EXPECT_TRUE(edit.deleted_files().empty());
    EXPECT_EQ(TableFiles(), before) << "after " << n << " writes";
  }
  EXPECT_GE(failures, 5);
  EXPECT_TRUE(failed_after_a_finished_output);
}

TEST_F(CompactionJobTest, CorruptInputIsDataLossAndLeavesNoOutputs) {
  std::vector<Entry> entries;
  for (int k = 0; k < 200; ++k) entries.push_back(Put(absl::StrFormat("key%04d", k), k + 1));
  auto input = MakeTable(entries);
  auto v = MakeVersion({FileList{}, {}, {}, {}, {}, {}, {input}});
  const std::string path = TableFileName(kDb, input->number);
  auto contents = fs_->ReadFileToString(path);
  ASSERT_TRUE(contents.ok());
  (*contents)[contents->size() / 2] ^= 0x40;  // inside a data block
  ASSERT_TRUE(fs_->WriteFileFromString(path, *contents).ok());
  const auto before = TableFiles();
  CompactionOptions o = copts_;
  o.target_file_size = 1024;
  VersionEdit edit;
  const absl::Status s = RunCompaction(*Rewrite(o, input), *v, Env(), &edit, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr(path));
  EXPECT_TRUE(edit.new_files().empty());
  EXPECT_EQ(TableFiles(), before);
}

TEST_F(CompactionJobTest, RangeCompactionOfTheLastLevelDropsTombstones) {
  auto f = MakeTable({Put("a", 1), Del("a", 2), Put("b", 3), Put("b", 4)});
  auto v = MakeVersion({FileList{}, {}, {}, {}, {}, {}, {f}});
  auto c = PickRangeCompaction(*v, copts_, 6, nullptr, nullptr);
  ASSERT_NE(c, nullptr);
  VersionEdit edit;
  ASSERT_TRUE(RunCompaction(*c, *v, Env(), &edit, nullptr).ok());
  EXPECT_THAT(ReadOutputs(edit), ElementsAre(Put("b", 4)));
  EXPECT_THAT(edit.deleted_files(), ElementsAre(std::pair<int, uint64_t>(6, f->number)));
  EXPECT_THAT(listener_.dropped,
              UnorderedElementsAreArray({Unsequenced(Put("a", 1)), Unsequenced(Put("b", 3))}));
}

TEST_F(CompactionJobTest, EnvWithoutNewFileNumberIsInvalidArgument) {
  auto f = MakeTable({Put("a", 1)});
  auto g = MakeTable({Put("a", 0)});
  auto v = MakeVersion({FileList{}, {}, {}, {}, {}, {f}, {g}});
  CompactionJobEnv env = Env();
  env.new_file_number = nullptr;
  VersionEdit edit;
  EXPECT_EQ(RunCompaction(*Compact(copts_, 5, 6, {f}, {g}), *v, env, &edit, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(edit.deleted_files().empty());
}


// Inputs for the subcompaction tests: four L0 files and one L6 file over
// 2000 keys, with overwrites, tombstones and pointers, so that ranges see
// hidden versions and droppable tombstones at their edges.
struct SplitInputs {
  std::shared_ptr<const Version> version;
  SequenceNumber seq = 0;
};

SplitInputs MakeSplitInputs(uint32_t seed,
                            const std::function<std::shared_ptr<FileMetaData>(std::vector<Entry>)>&
                                make_table) {
  std::mt19937 rng(seed);
  SplitInputs in;
  auto workload = [&](int n) {
    std::vector<Entry> entries;
    for (int i = 0; i < n; ++i) {
      const std::string key = absl::StrFormat("key%05d", rng() % 2000);
      const int kind = static_cast<int>(rng() % 10);
      entries.push_back(kind < 2   ? Del(key, ++in.seq)
                        : kind < 4 ? Put(key, ++in.seq, ValueType::kValuePointer)
                                   : Put(key, ++in.seq));
    }
    return entries;
  };
  std::array<FileList, kNumLevels> levels;
  levels[6].push_back(make_table(workload(2000)));
  for (int i = 0; i < 4; ++i) levels[0].push_back(make_table(workload(1500)));
  std::sort(levels[0].begin(), levels[0].end(),
            [](const auto& a, const auto& b) { return a->number > b->number; });
  in.version = std::make_shared<const Version>(std::move(levels));
  return in;
}

// The L0 -> L6 compaction of in, with output files small enough that its
// input is many files' worth and the job may split.
std::unique_ptr<Compaction> PickSplittable(const SplitInputs& in) {
  return PickCompaction(*in.version, CompactionOptions{.target_file_size = 8 << 10});
}

TEST_F(CompactionJobTest, SplitCompactionWritesWhatTheUnsplitOneWrites) {
  const SplitInputs in =
      MakeSplitInputs(23, [this](std::vector<Entry> e) { return MakeTable(std::move(e)); });
  auto c = PickSplittable(in);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->output_level(), 6);
  ASSERT_GE(SubcompactionCount(*c, 4), 4);
  const std::vector<SequenceNumber> snapshots = {in.seq / 3, in.seq / 2};

  VersionEdit whole_edit;
  CompactionJobStats whole;
  ASSERT_TRUE(RunCompaction(*c, *in.version, Env(snapshots, in.seq), &whole_edit, &whole).ok());
  const std::vector<Entry> whole_dropped = std::move(listener_.dropped);
  listener_.dropped.clear();
  EXPECT_EQ(whole.subcompactions, 1u);

  CompactionJobEnv env = Env(snapshots, in.seq);
  env.max_subcompactions = 4;
  // Not thread-safe on purpose: the ranges call it one at a time.
  std::vector<uint64_t> created;
  env.output_created = [&](uint64_t number) {
    EXPECT_TRUE(fs_->FileExists(TableFileName(kDb, number))) << number;
    created.push_back(number);
  };
  VersionEdit split_edit;
  CompactionJobStats split;
  ASSERT_TRUE(RunCompaction(*c, *in.version, env, &split_edit, &split).ok());
  EXPECT_EQ(split.subcompactions, 4u);
  // Each output was announced once it existed (the DB starts syncing its
  // directory entry then).
  std::vector<uint64_t> outputs;
  for (const auto& [level, f] : split_edit.new_files()) outputs.push_back(f.number);
  EXPECT_THAT(created, UnorderedElementsAreArray(outputs));

  // The same entries, in the same order, and the same values heard dropped.
  EXPECT_EQ(ReadOutputs(split_edit), ReadOutputs(whole_edit));
  EXPECT_THAT(listener_.dropped, UnorderedElementsAreArray(whole_dropped));
  EXPECT_EQ(split.input_entries, whole.input_entries);
  EXPECT_EQ(split.output_entries, whole.output_entries);
  EXPECT_EQ(split.dropped_obsolete, whole.dropped_obsolete);
  EXPECT_EQ(split.dropped_tombstones, whole.dropped_tombstones);
  EXPECT_EQ(split.dropped_values, whole.dropped_values);

  // One edit holds every output and removes every input; the outputs are in
  // key order and no two share a user key.
  EXPECT_EQ(split_edit.new_files().size(), split.output_files);
  EXPECT_EQ(split_edit.deleted_files().size(), c->NumInputFiles());
  for (size_t i = 1; i < split_edit.new_files().size(); ++i) {
    const FileMetaData& prev = split_edit.new_files()[i - 1].second;
    const FileMetaData& next = split_edit.new_files()[i].second;
    EXPECT_LT(prev.largest_user_key(), next.smallest_user_key()) << "outputs " << i - 1 << ", " << i;
  }
  VersionBuilder builder(in.version.get());
  ASSERT_TRUE(builder.Apply(split_edit).ok());
  auto next = builder.Build();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ((*next)->NumFiles(6), split_edit.new_files().size());
}

TEST_F(CompactionJobTest, SubcompactionBoundariesCutTheInputIntoSimilarRanges) {
  const SplitInputs in =
      MakeSplitInputs(29, [this](std::vector<Entry> e) { return MakeTable(std::move(e)); });
  auto c = PickSplittable(in);
  ASSERT_NE(c, nullptr);
  const std::vector<std::string> cuts = SubcompactionBoundaries(*c, cache_.get(), 4);
  ASSERT_EQ(cuts.size(), 3u);
  EXPECT_TRUE(std::is_sorted(cuts.begin(), cuts.end()));
  EXPECT_TRUE(std::adjacent_find(cuts.begin(), cuts.end()) == cuts.end());
  EXPECT_GT(cuts.front(), c->smallest_user_key());
  EXPECT_LE(cuts.back(), c->largest_user_key());
  // Keys are uniform, so each range holds about a quarter of them.
  const std::vector<std::string> quarter = {"key00500", "key01000", "key01500"};
  for (size_t i = 0; i < cuts.size(); ++i) {
    EXPECT_NEAR(std::stoi(cuts[i].substr(3)), std::stoi(quarter[i].substr(3)), 150) << cuts[i];
  }
  EXPECT_TRUE(SubcompactionBoundaries(*c, cache_.get(), 1).empty());
  // A small job is not split.
  EXPECT_EQ(SubcompactionCount(*c, 1), 1);
  CompactionOptions big = copts_;
  big.target_file_size = 64 << 20;
  EXPECT_EQ(SubcompactionCount(*PickCompaction(*in.version, big), 4), 1);
}

TEST_F(CompactionJobTest, FailureInOneRangeFailsTheWholeJobAndLeavesNoOutput) {
  const SplitInputs in =
      MakeSplitInputs(31, [this](std::vector<Entry> e) { return MakeTable(std::move(e)); });
  auto c = PickSplittable(in);
  ASSERT_NE(c, nullptr);
  const auto before = TableFiles();
  io::FaultFileSystem fault(fs_);
  int failures = 0;
  for (uint64_t n : {0, 3, 10, 30, 60, 100, 200}) {
    fault.FailAfter(n, io::InjectedIoError("test"), io::FaultKind::kAnyWrite, /*persistent=*/true);
    CompactionJobEnv env = Env();
    env.fs = &fault;
    env.max_subcompactions = 4;
    VersionEdit edit;
    CompactionJobStats stats;
    const absl::Status s = RunCompaction(*c, *in.version, env, &edit, &stats);
    if (s.ok()) break;  // past the job's last write
    ++failures;
    EXPECT_EQ(stats.subcompactions, 4u);
    EXPECT_EQ(s.code(), io::InjectedIoError("test").code()) << s;
    EXPECT_TRUE(edit.new_files().empty());
    EXPECT_TRUE(edit.deleted_files().empty());
    EXPECT_EQ(TableFiles(), before) << "after " << n << " writes";
  }
  EXPECT_GE(failures, 5);
}
}  // namespace
}  // namespace cairn::lsm
