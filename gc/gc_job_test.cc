#include "gc/gc_job.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gc/index_view.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "io/status_macros.h"
#include "vlog/segment_reader.h"
#include "vlog/segment_scanner.h"
#include "vlog/segment_set.h"
#include "vlog/segment_writer.h"
#include "vlog/vlog_test_util.h"

namespace cairn::gc {
namespace {

using vlog::SegmentEdit;
using vlog::SegmentEditTag;
using vlog::ValuePointer;

constexpr uint64_t kVictim = 7;
constexpr uint64_t kVictim2 = 8;  // WriteSecondVictim's
constexpr uint64_t kFresh = 9;  // segment holding the user's newer writes
constexpr int kKeys = 40;

std::string SegmentPath(uint64_t id) { return absl::StrFormat("/db/%06d.vlog", id); }

// The DB as the collector sees it: the latest key -> pointer map, the
// manifest's segment set and a log of calls. State changes only through
// calls that succeed, so it is also what a crash leaves durable. It can die
// at its n-th call, before or after the call takes effect.
class FakeIndex : public IndexView {
 public:
  absl::Status CheckLive(absl::Span<const std::string_view> keys,
                         absl::Span<const ValuePointer> pointers,
                         std::vector<bool>* live) override {
    CAIRN_RETURN_IF_ERROR(Enter("check"));
    ++check_calls;
    records_checked += keys.size();
    live->assign(keys.size(), false);
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = map.find(std::string(keys[i]));
      (*live)[i] = it != map.end() && it->second.segment_id == pointers[i].segment_id &&
                   it->second.offset == pointers[i].offset;
    }
    return Leave();
  }

  absl::StatusOr<size_t> RewritePointers(absl::Span<const std::string_view> keys,
                                         absl::Span<const ValuePointer> old_pointers,
                                         absl::Span<const ValuePointer> new_pointers,
                                         std::vector<bool>* replaced, bool sync) override {
    CAIRN_RETURN_IF_ERROR(Enter("rewrite"));
    rewrite_syncs.push_back(sync);
    if (before_rewrite) before_rewrite();
    if (rewrite_calls++ == refuse_rewrite_at) {
      return absl::AbortedError("refused before writing: the database is closing");
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      // No pointer may name bytes the manifest does not know as sealed.
      const auto info = set.Get(new_pointers[i].segment_id);
      EXPECT_TRUE(info.has_value() && info->sealed && !info->obsolete) << keys[i];
    }
    replaced->assign(keys.size(), false);
    size_t n = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = map.find(std::string(keys[i]));
      if (it == map.end() || !(it->second == old_pointers[i])) continue;
      it->second = new_pointers[i];
      (*replaced)[i] = true;
      ++n;
    }
    CAIRN_RETURN_IF_ERROR(Leave());
    return n;
  }

  absl::Status LogSegmentEdit(const SegmentEdit& edit) override {
    CAIRN_RETURN_IF_ERROR(Enter("edit"));
    CAIRN_RETURN_IF_ERROR(set.Apply(edit));
    edits.push_back(edit);
    for (const SegmentEdit::Change& c : edit.changes()) {
      events.push_back(absl::StrCat("edit ", SegmentEdit::ChangeDebugString(c)));
    }
    return Leave();
  }

  uint64_t NewFileNumber() override { return next_file++; }

  std::vector<vlog::PunchRun> KnownDeadRecords(uint64_t segment_id) override {
    auto it = known_dead.find(segment_id);
    return it == known_dead.end() ? std::vector<vlog::PunchRun>{} : it->second;
  }

  std::map<std::string, ValuePointer> map;
  vlog::SegmentSet set;
  std::vector<SegmentEdit> edits;
  std::vector<std::string> events;  // "check", "rewrite", "edit <change>"
  std::function<void()> before_rewrite;
  // The rewrite call numbered refuse_rewrite_at (from 0) is refused before
  // it writes anything, as a closing DB does.
  int refuse_rewrite_at = -1;
  int rewrite_calls = 0;
  std::vector<bool> rewrite_syncs;  // each call's sync argument
  uint64_t next_file = 20;
  int check_calls = 0;
  size_t records_checked = 0;  // records CheckLive was asked about
  std::map<uint64_t, std::vector<vlog::PunchRun>> known_dead;  // KnownDeadRecords' answers
  int calls = 0;
  // Crash injection: the call numbered die_at (from 0) kills the process,
  // before it takes effect or, with die_after_effect, after.
  int die_at = -1;
  bool die_after_effect = false;
  io::FaultFileSystem* fault_fs = nullptr;

 private:
  absl::Status Enter(const std::string& what) {
    if (dead_) return absl::UnavailableError("dead");
    if (calls++ == die_at && !die_after_effect) return Die();
    if (what != "edit") events.push_back(what);
    return absl::OkStatus();
  }
  absl::Status Leave() {
    if (calls - 1 == die_at && die_after_effect) return Die();
    return absl::OkStatus();
  }
  absl::Status Die() {
    dead_ = true;
    if (fault_fs != nullptr) fault_fs->SetFilesystemActive(false);
    return absl::UnavailableError("process died");
  }
  bool dead_ = false;
};

// One database image: the file systems, the fake index and a victim.
struct Harness {
  Harness()
      : base_(std::make_shared<io::MemoryFileSystem>()),
        fs_(std::make_unique<io::FaultFileSystem>(
            base_, io::FaultFileSystemOptions{.drop_unsynced_dir_entries = true})) {
    EXPECT_TRUE(base_->CreateDir("/db").ok());
    index_.fault_fs = fs_.get();
  }

  // Writes the victim: kKeys keys in shuffled order, one record each, plus a
  // second record for "k003" (whose first is then dead). Then "k001" is
  // overwritten in segment kFresh and "k002" deleted, so 3 of kKeys + 1
  // records are dead. Everything is durable before the job starts.
  void WriteVictim(bool compress = false, size_t value_size = 300) {
    std::mt19937_64 rng(42);
    std::vector<std::string> keys;
    for (int i = 0; i < kKeys; ++i) keys.push_back(absl::StrFormat("k%03d", i));
    std::shuffle(keys.begin(), keys.end(), rng);
    keys.push_back("k003");
    vlog::SegmentWriterOptions wo;
    wo.compress = compress;
    auto writer = vlog::SegmentWriter::Create(fs_.get(), SegmentPath(kVictim), kVictim, wo);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (const std::string& k : keys) {
      std::string v = compress ? vlog::testing::CompressibleBytes(rng, value_size)
                               : vlog::testing::RandomBytes(rng, value_size);
      auto p = (*writer)->Append(k, v);
      ASSERT_TRUE(p.ok()) << p.status();
      if (index_.map.count(k)) AddGarbage(kVictim, index_.map[k]);
      index_.map[k] = *p;
      values_[k] = v;
    }
    ASSERT_TRUE((*writer)->Sync().ok());
    ASSERT_TRUE((*writer)->Close().ok());
    SegmentEdit edit;
    edit.AddSegment(kVictim, vlog::SegmentKind::kFresh);
    edit.SealSegment(kVictim, (*writer)->size(), (*writer)->record_count());
    ASSERT_TRUE(index_.set.Apply(edit).ok());
    victim_size_ = (*writer)->size();

    auto fresh = vlog::SegmentWriter::Create(fs_.get(), SegmentPath(kFresh), kFresh, {});
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    ASSERT_TRUE(index_.set.Apply(AddSegmentEdit(kFresh)).ok());
    fresh_ = std::move(*fresh);
    Overwrite("k001", "newer value of k001");
    Delete("k002");
    ASSERT_TRUE(fs_->SyncDir("/db").ok());
  }

  // After WriteVictim: a second sealed victim, kVictim2, of 20 keys m000..
  // m019 in reverse order; "m005" is then overwritten in kFresh.
  void WriteSecondVictim() {
    std::mt19937_64 rng(7);
    auto writer = vlog::SegmentWriter::Create(fs_.get(), SegmentPath(kVictim2), kVictim2, {});
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int i = 19; i >= 0; --i) {
      const std::string k = absl::StrFormat("m%03d", i);
      const std::string v = vlog::testing::RandomBytes(rng, 500);
      auto p = (*writer)->Append(k, v);
      ASSERT_TRUE(p.ok()) << p.status();
      index_.map[k] = *p;
      values_[k] = v;
    }
    ASSERT_TRUE((*writer)->Sync().ok());
    ASSERT_TRUE((*writer)->Close().ok());
    SegmentEdit edit;
    edit.AddSegment(kVictim2, vlog::SegmentKind::kFresh);
    edit.SealSegment(kVictim2, (*writer)->size(), (*writer)->record_count());
    ASSERT_TRUE(index_.set.Apply(edit).ok());
    Overwrite("m005", "newer value of m005");
    ASSERT_TRUE(fs_->SyncDir("/db").ok());
  }

  absl::Status RunJobOnBoth(const GcJobOptions& options = {}) {
    const uint64_t victims[] = {kVictim, kVictim2};
    return RunGcJob(options, fs_.get(), SegmentPath, victims, &index_, &result_);
  }

  static SegmentEdit AddSegmentEdit(uint64_t id) {
    SegmentEdit e;
    e.AddSegment(id, vlog::SegmentKind::kFresh);
    return e;
  }

  void AddGarbage(uint64_t id, const ValuePointer& p) {
    dead_pointers_.push_back(p);
    SegmentEdit e;
    e.AddGarbage(id, p.size, 1);
    ASSERT_TRUE(index_.set.Apply(e).ok());
  }

  // A user Put of key into segment kFresh, durable.
  void Overwrite(const std::string& key, const std::string& value) {
    auto p = fresh_->Append(key, value);
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_TRUE(fresh_->Sync().ok());
    if (index_.map.count(key)) AddGarbage(index_.map[key].segment_id, index_.map[key]);
    index_.map[key] = *p;
    values_[key] = value;
  }

  void Delete(const std::string& key) {
    AddGarbage(index_.map[key].segment_id, index_.map[key]);
    index_.map.erase(key);
    values_.erase(key);
  }

  absl::Status RunJob(const GcJobOptions& options = {}) {
    return RunGcJob(options, fs_.get(), SegmentPath, kVictim, &index_, &result_);
  }

  // Every key's pointer names a known, non-obsolete segment whose record
  // reads back with the right key and value from fs_ as it is now.
  void ExpectNoDanglingPointer(const std::string& context) {
    for (const auto& [key, p] : index_.map) {
      SCOPED_TRACE(absl::StrCat(context, " key ", key, " at ", p.DebugString()));
      const auto info = index_.set.Get(p.segment_id);
      ASSERT_TRUE(info.has_value());
      EXPECT_FALSE(info->obsolete);
      auto reader = vlog::SegmentReader::Open(fs_.get(), SegmentPath(p.segment_id), p.segment_id,
                                              false);
      ASSERT_TRUE(reader.ok()) << reader.status();
      std::string value;
      ASSERT_TRUE((*reader)->Read(p, key, &value).ok());
      EXPECT_EQ(value, values_.at(key));
    }
    EXPECT_EQ(index_.map.size(), values_.size());
  }

  // Keys and flags of the records of segment id, in file order.
  std::vector<std::pair<std::string, uint8_t>> ScanSegment(uint64_t id) {
    vlog::SegmentScannerOptions so;
    so.allow_torn_tail = false;
    auto scanner = vlog::SegmentScanner::Open(fs_.get(), SegmentPath(id), id, so);
    EXPECT_TRUE(scanner.ok()) << scanner.status();
    std::vector<std::pair<std::string, uint8_t>> out;
    if (!scanner.ok()) return out;
    vlog::ScannedRecord r;
    while ((*scanner)->Next(&r)) out.emplace_back(std::string(r.key), r.flags);
    EXPECT_TRUE((*scanner)->status().ok()) << (*scanner)->status();
    return out;
  }

  std::shared_ptr<io::MemoryFileSystem> base_;
  std::unique_ptr<io::FaultFileSystem> fs_;
  std::unique_ptr<vlog::SegmentWriter> fresh_;
  FakeIndex index_;
  std::map<std::string, std::string> values_;
  uint64_t victim_size_ = 0;
  std::vector<ValuePointer> dead_pointers_;  // every record counted as garbage
  GcJobResult result_;
};

class GcJobTest : public ::testing::Test, public Harness {};

TEST_F(GcJobTest, LiveRecordsMoveAndReadBackAtTheirNewPointers) {
  WriteVictim();
  const size_t live = kKeys - 2;  // k001 overwritten, k002 deleted
  ASSERT_TRUE(RunJob().ok());
  ExpectNoDanglingPointer("after gc");
  EXPECT_EQ(result_.victim_ids, (std::vector<uint64_t>{kVictim}));
  EXPECT_EQ(result_.records_scanned, kKeys + 1u);
  EXPECT_EQ(result_.live_records, live);
  EXPECT_EQ(result_.records_dropped, 3u);
  EXPECT_EQ(result_.rewrites_lost, 0u);
  EXPECT_EQ(result_.bytes_read, victim_size_);
  const uint64_t out = result_.output_segment_id;
  ASSERT_NE(out, 0u);
  size_t moved = 0;
  for (const auto& [key, p] : index_.map) moved += p.segment_id == out;
  EXPECT_EQ(moved, live);
  const auto info = index_.set.Get(out);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->kind, vlog::SegmentKind::kGcOutput);
  EXPECT_TRUE(info->sealed);
  EXPECT_EQ(info->records, live);
  EXPECT_EQ(info->size, fs_->GetFileSize(SegmentPath(out)).value());
  EXPECT_EQ(info->garbage_bytes, 0u);
  EXPECT_EQ(result_.bytes_written, info->size);
  EXPECT_EQ(result_.bytes_relocated, info->size - vlog::kSegmentHeaderSize);
  EXPECT_TRUE(index_.set.Get(kVictim)->obsolete);
  // The job never deletes the victim; the DB does when nothing reads it.
  EXPECT_TRUE(fs_->FileExists(SegmentPath(kVictim)));
  EXPECT_GT(fs_->stats().Get(io::IoCategory::kGc).bytes_read, 0u);
  EXPECT_GT(fs_->stats().Get(io::IoCategory::kGc).bytes_written, 0u);
}

TEST_F(GcJobTest, RecordsKnownDeadAreDroppedWithoutALivenessCheck) {
  WriteVictim();
  // The three dead records of the victim (k003's first, k001's and k002's),
  // as a flush or compaction that dropped their pointers would list them.
  // Their bytes are zeroed: the scan steps over them by their pointers'
  // sizes without verifying them (only the header's lengths are read).
  std::vector<vlog::PunchRun> dead;
  std::string bytes = base_->ReadFileToString(SegmentPath(kVictim)).value();
  for (const ValuePointer& p : dead_pointers_) {
    if (p.segment_id != kVictim) continue;
    dead.push_back({p.offset, p.offset + p.size});
    std::fill(bytes.begin() + p.offset + vlog::kRecordHeaderSize, bytes.begin() + p.offset + p.size,
              '\0');
  }
  ASSERT_TRUE(base_->WriteFileFromString(SegmentPath(kVictim), bytes).ok());
  ASSERT_EQ(dead.size(), 3u);
  std::sort(dead.begin(), dead.end(),
            [](const vlog::PunchRun& a, const vlog::PunchRun& b) { return a.begin < b.begin; });
  index_.known_dead[kVictim] = dead;
  ASSERT_TRUE(RunJob().ok());
  ExpectNoDanglingPointer("after gc");
  EXPECT_EQ(result_.records_scanned, kKeys + 1u);
  EXPECT_EQ(result_.records_dropped, 3u);
  EXPECT_EQ(result_.records_known_dead, 3u);
  EXPECT_EQ(result_.live_records, kKeys - 2u);
  // Only the others were looked up.
  EXPECT_EQ(index_.records_checked, kKeys + 1u - 3u);
  EXPECT_TRUE(index_.set.Get(kVictim)->obsolete);
}

TEST_F(GcJobTest, KnownDeadRecordsThatNameNoRecordChangeNothing) {
  WriteVictim();
  // Entries inside records, past the end, or at a record's start with
  // another size than its header gives: no record is stepped over there,
  // so every record is checked as usual and every live one moves.
  std::vector<vlog::PunchRun> dead;
  for (const auto& [key, p] : index_.map) {
    if (p.segment_id != kVictim) continue;
    dead.push_back({p.offset, p.offset + p.size + 1});
    dead.push_back({p.offset + 1, p.offset + p.size});
  }
  dead.push_back({victim_size_ + 100, victim_size_ + 200});
  std::sort(dead.begin(), dead.end(),
            [](const vlog::PunchRun& a, const vlog::PunchRun& b) { return a.begin < b.begin; });
  index_.known_dead[kVictim] = dead;
  ASSERT_TRUE(RunJob().ok());
  ExpectNoDanglingPointer("after gc");
  EXPECT_EQ(result_.records_known_dead, 0u);
  EXPECT_EQ(result_.records_dropped, 3u);
  EXPECT_EQ(result_.live_records, kKeys - 2u);
  EXPECT_EQ(index_.records_checked, kKeys + 1u);
}

TEST_F(GcJobTest, OutputHoldsOnlyLiveRecordsInKeyOrder) {
  WriteVictim();
  ASSERT_TRUE(RunJob().ok());
  std::vector<std::string> keys;
  for (const auto& [k, flags] : ScanSegment(result_.output_segment_id)) keys.push_back(k);
  std::vector<std::string> expected;
  for (const auto& [k, p] : index_.map) {
    if (p.segment_id == result_.output_segment_id) expected.push_back(k);
  }
  EXPECT_EQ(keys, expected);  // std::map order: sorted, one record per key
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "k001"), 0);
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "k002"), 0);
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "k003"), 1);
}

TEST_F(GcJobTest, CompressedValuesSurviveWithTheOutputsCompressionSetting) {
  WriteVictim(/*compress=*/true, /*value_size=*/2000);
  GcJobOptions options;
  options.compress = true;
  ASSERT_TRUE(RunJob(options).ok());
  ExpectNoDanglingPointer("compressed output");
  for (const auto& [k, flags] : ScanSegment(result_.output_segment_id)) {
    EXPECT_EQ(flags & vlog::kRecordFlagZstd, vlog::kRecordFlagZstd) << k;
  }
  EXPECT_LT(result_.bytes_relocated, result_.live_records * 2000);
}

// Records are copied as stored: a job that does not compress still keeps
// compressed values compressed (no zstd round, no growth on disk).
TEST_F(GcJobTest, CompressedRecordsAreCopiedAsStoredByAJobThatDoesNotCompress) {
  WriteVictim(/*compress=*/true, /*value_size=*/2000);
  ASSERT_TRUE(RunJob().ok());
  ExpectNoDanglingPointer("uncompressed job");
  for (const auto& [k, flags] : ScanSegment(result_.output_segment_id)) {
    EXPECT_EQ(flags, vlog::kRecordFlagZstd) << k;
  }
  EXPECT_LT(result_.bytes_relocated, result_.live_records * 2000);
}

TEST_F(GcJobTest, UncompressedRecordsStayUncompressedByAJobThatDoesNotCompress) {
  WriteVictim(/*compress=*/false, /*value_size=*/2000);
  ASSERT_TRUE(RunJob().ok());
  ExpectNoDanglingPointer("uncompressed job");
  for (const auto& [k, flags] : ScanSegment(result_.output_segment_id)) EXPECT_EQ(flags, 0) << k;
}

// The whole records of segment id by key, as on disk.
std::map<std::string, std::string> RecordBytes(io::FileSystem* fs, uint64_t id) {
  vlog::SegmentScannerOptions so;
  so.allow_torn_tail = false;
  auto scanner = vlog::SegmentScanner::Open(fs, SegmentPath(id), id, so);
  EXPECT_TRUE(scanner.ok()) << scanner.status();
  std::map<std::string, std::string> out;
  if (!scanner.ok()) return out;
  vlog::ScannedRecord r;
  while ((*scanner)->Next(&r)) {
    EXPECT_EQ(r.bytes.size(), r.size);
    EXPECT_EQ(r.bytes.substr(vlog::kRecordHeaderSize, r.key.size()), r.key);
    out[std::string(r.key)] = std::string(r.bytes);  // the newest copy of a key wins
  }
  EXPECT_TRUE((*scanner)->status().ok()) << (*scanner)->status();
  return out;
}

// A job that does not compress writes each live record byte for byte as
// the victim holds it (no re-encoding: the checksum names no segment or
// offset), plain (false) and compressed (true) alike, in gathers of many
// records. Plain values of 100 KB make the output span more than one gather.
class GcJobCopyTest : public ::testing::TestWithParam<bool>, public Harness {};

TEST_P(GcJobCopyTest, EachLiveRecordIsCopiedByteForByte) {
  WriteVictim(/*compress=*/GetParam(), /*value_size=*/100000);
  const std::map<std::string, std::string> before = RecordBytes(fs_.get(), kVictim);
  ASSERT_TRUE(RunJob().ok());
  ExpectNoDanglingPointer("byte-for-byte copies");
  const std::map<std::string, std::string> after =
      RecordBytes(fs_.get(), result_.output_segment_id);
  EXPECT_EQ(after.size(), result_.live_records);
  if (!GetParam()) {
    EXPECT_GT(result_.bytes_relocated, 1u << 20) << "more than one gather";
  }
  for (const auto& [key, bytes] : after) {
    ASSERT_EQ(before.count(key), 1u) << key;
    EXPECT_EQ(bytes, before.at(key)) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(PlainAndCompressed, GcJobCopyTest, ::testing::Bool());

TEST_F(GcJobTest, RewriteThatLosesARaceIsRefusedAndCountedAsGarbage) {
  WriteVictim();
  ValuePointer lost_put;
  index_.before_rewrite = [&] {
    Overwrite("k010", "user write racing with gc");
    lost_put = index_.map["k010"];
    Delete("k011");
  };
  ASSERT_TRUE(RunJob().ok());
  ExpectNoDanglingPointer("after race");
  EXPECT_EQ(index_.map["k010"], lost_put);  // the user's write won
  EXPECT_EQ(index_.map.count("k011"), 0u);  // the delete stays a delete
  EXPECT_EQ(result_.rewrites_lost, 2u);
  const auto info = index_.set.Get(result_.output_segment_id);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->garbage_records, 2u);
  EXPECT_EQ(info->garbage_bytes, result_.garbage_bytes_lost);
  // Both copies are 300-byte values under 4-byte keys.
  EXPECT_EQ(result_.garbage_bytes_lost, 2 * vlog::RecordSize(4, 300));
  EXPECT_TRUE(index_.set.Get(kVictim)->obsolete);
}

// A close that refuses the write-back midway: the copies no pointer will
// ever name are counted as the output's garbage in the job's last edit, so
// the output's bytes are all either referenced or counted.
TEST_F(GcJobTest, WriteBackRefusedMidwayCountsTheUnwrittenCopiesAsGarbage) {
  WriteVictim();
  index_.refuse_rewrite_at = 1;
  GcJobOptions options;
  options.rewrite_batch_size = 10;
  const absl::Status s = RunJob(options);
  ASSERT_TRUE(absl::IsAborted(s)) << s;
  ExpectNoDanglingPointer("after a refused write-back");
  const auto output = index_.set.Get(result_.output_segment_id);
  ASSERT_TRUE(output.has_value());
  ASSERT_TRUE(output->sealed);
  EXPECT_FALSE(index_.set.Get(kVictim)->obsolete) << "some keys still point into the victim";
  // Referenced copies (pointers now in the index) plus counted garbage make
  // up every byte after the header.
  uint64_t referenced = 0, referenced_records = 0;
  for (const auto& [key, ptr] : index_.map) {
    if (ptr.segment_id != result_.output_segment_id) continue;
    referenced += ptr.size;
    ++referenced_records;
  }
  EXPECT_EQ(referenced_records, 10u) << "the first batch was written back";
  EXPECT_EQ(vlog::kSegmentHeaderSize + referenced + output->garbage_bytes, output->size);
  EXPECT_EQ(referenced_records + output->garbage_records, output->records);
  EXPECT_EQ(result_.live_records - 10, output->garbage_records);
}

TEST_F(GcJobTest, EditsFollowTheProtocolOrder) {
  WriteVictim();
  GcJobOptions options;
  options.liveness_batch_size = 16;
  options.rewrite_batch_size = 16;
  ASSERT_TRUE(RunJob(options).ok());
  const uint64_t out = result_.output_segment_id;
  const std::vector<std::string> expected = {
      "check", "check", "check",  // 41 records in batches of 16
      absl::StrCat("edit ", SegmentEdit::ChangeDebugString(
                                {SegmentEditTag::kNewSegment, out, vlog::SegmentKind::kGcOutput})),
      absl::StrCat("edit ", SegmentEdit::ChangeDebugString(
                                {SegmentEditTag::kSealSegment, out, vlog::SegmentKind::kFresh,
                                 index_.set.Get(out)->size, kKeys - 2})),
      "rewrite", "rewrite", "rewrite",  // 38 live keys in batches of 16
      absl::StrCat("edit ", SegmentEdit::ChangeDebugString(
                                {SegmentEditTag::kMarkObsolete, kVictim})),
  };
  EXPECT_EQ(index_.events, expected);
  // One sync per victim: the last batch's, which makes the earlier ones
  // durable before the victim is marked obsolete.
  EXPECT_EQ(index_.rewrite_syncs, (std::vector<bool>{false, false, true}));
}

TEST_F(GcJobTest, VictimWithoutLiveRecordsIsMarkedObsoleteWithoutOutput) {
  WriteVictim();
  for (int i = 0; i < kKeys; ++i) {
    const std::string k = absl::StrFormat("k%03d", i);
    if (index_.map.count(k) && index_.map[k].segment_id == kVictim) Delete(k);
  }
  const uint64_t next_file = index_.next_file;
  ASSERT_TRUE(RunJob().ok());
  EXPECT_EQ(result_.output_segment_id, 0u);
  EXPECT_EQ(result_.live_records, 0u);
  EXPECT_EQ(result_.records_dropped, kKeys + 1u);
  EXPECT_EQ(index_.next_file, next_file);
  ASSERT_EQ(index_.edits.size(), 1u);
  EXPECT_TRUE(index_.set.Get(kVictim)->obsolete);
  ExpectNoDanglingPointer("empty victim");
}

TEST_F(GcJobTest, CorruptVictimRecordIsDataLossAndNothingIsWritten) {
  WriteVictim();
  std::string bytes = base_->ReadFileToString(SegmentPath(kVictim)).value();
  bytes[bytes.size() / 2] ^= 0x40;  // inside some record in the middle
  ASSERT_TRUE(base_->WriteFileFromString(SegmentPath(kVictim), bytes).ok());
  const auto map_before = index_.map;
  const uint64_t next_file = index_.next_file;
  const absl::Status s = RunJob();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find(SegmentPath(kVictim)), std::string::npos) << s;
  EXPECT_EQ(index_.map, map_before);
  EXPECT_TRUE(index_.edits.empty());
  EXPECT_EQ(std::count(index_.events.begin(), index_.events.end(), "rewrite"), 0);
  EXPECT_EQ(index_.next_file, next_file);  // no output segment was started
  EXPECT_FALSE(index_.set.Get(kVictim)->obsolete);
}

// Runs the job (on one victim, or on two) once cleanly to count its index
// calls, then again for each call, dying before and after its effect: no
// crash leaves a pointer to bytes that are not durable.
void CrashAtEveryIndexCall(bool two_victims) {
  auto prepare = [two_victims](Harness& h) {
    h.WriteVictim();
    if (two_victims) h.WriteSecondVictim();
  };
  auto run = [two_victims](Harness& h) { return two_victims ? h.RunJobOnBoth() : h.RunJob(); };
  int total_calls = 0;
  {
    Harness clean;
    prepare(clean);
    ASSERT_TRUE(run(clean).ok());
    total_calls = clean.index_.calls;
  }
  // At least a check, the output's edit, a rewrite and the final edit.
  ASSERT_GE(total_calls, 4);
  for (int at = 0; at < total_calls; ++at) {
    for (bool after : {false, true}) {
      SCOPED_TRACE(absl::StrCat("die at call ", at, after ? " after" : " before", " its effect"));
      Harness t;
      prepare(t);
      t.index_.die_at = at;
      t.index_.die_after_effect = after;
      EXPECT_FALSE(run(t).ok());
      ASSERT_TRUE(t.fs_->SimulateCrash(io::CrashMode::kDropUnsynced, at).ok());
      t.ExpectNoDanglingPointer("after crash");
    }
  }
}

TEST_F(GcJobTest, CrashAtEveryIndexCallLeavesNoDanglingPointer) {
  CrashAtEveryIndexCall(/*two_victims=*/false);
}

TEST_F(GcJobTest, FileSystemFailureAtEveryOperationLeavesNoDanglingPointer) {
  uint64_t ops = 0;
  {
    Harness clean;
    clean.WriteVictim();
    const uint64_t before = clean.fs_->ops_seen();
    ASSERT_TRUE(clean.RunJob().ok());
    ops = clean.fs_->ops_seen() - before;
  }
  ASSERT_GT(ops, 5u);
  int failures = 0;
  for (uint64_t k = 0; k <= ops; ++k) {
    SCOPED_TRACE(absl::StrCat("fail from operation ", k));
    Harness t;
    t.WriteVictim();
    t.fs_->FailAfter(k, io::InjectedIoError("gc test"), io::FaultKind::kAny, true);
    const absl::Status s = t.RunJob();
    if (s.ok()) continue;
    ++failures;
    const bool rewrote = std::count(t.index_.events.begin(), t.index_.events.end(), "rewrite") > 0;
    if (!rewrote && t.result_.output_segment_id != 0) {
      // Failed before any pointer moved: the output is given up.
      const auto info = t.index_.set.Get(t.result_.output_segment_id);
      EXPECT_TRUE(!info.has_value() || info->obsolete);
    }
    t.fs_->SetFilesystemActive(false);
    t.fs_->ClearFaults();
    ASSERT_TRUE(t.fs_->SimulateCrash(io::CrashMode::kTearLastWrite, k).ok());
    t.ExpectNoDanglingPointer("after failure and crash");
  }
  EXPECT_GT(failures, 5);
}

TEST_F(GcJobTest, ByteBudgetKeepsTheJobUnderItsRate) {
  WriteVictim(/*compress=*/false, /*value_size=*/4000);
  GcJobOptions options;
  options.bytes_per_second = 1 << 20;
  ASSERT_TRUE(RunJob(options).ok());
  const double io_bytes = static_cast<double>(result_.bytes_read + result_.bytes_written);
  const double min_micros = io_bytes / options.bytes_per_second * 1e6;
  EXPECT_GT(io_bytes, 250e3);
  // The schedule lets the last charge run up to a millisecond early.
  EXPECT_GE(static_cast<double>(result_.micros), min_micros - 1000);
  EXPECT_GT(result_.throttled_micros, 0u);
  ExpectNoDanglingPointer("throttled");

  Harness unlimited;
  unlimited.WriteVictim(false, 4000);
  ASSERT_TRUE(unlimited.RunJob().ok());
  EXPECT_EQ(unlimited.result_.throttled_micros, 0u);
}

TEST_F(GcJobTest, PhaseTimesAccountForTheJobOutsideItsSleep) {
  WriteVictim(/*compress=*/false, /*value_size=*/4000);
  GcJobOptions options;
  options.bytes_per_second = 4 << 20;  // some sleep, to be left out of the phases
  ASSERT_TRUE(RunJob(options).ok());
  const GcJobResult& r = result_;
  EXPECT_GT(r.scan_micros, 0u);
  EXPECT_GT(r.liveness_micros + r.write_micros + r.rewrite_micros, 0u);
  // The phases do not overlap and exclude the throttle's sleep.
  EXPECT_LE(r.scan_micros + r.liveness_micros + r.write_micros + r.rewrite_micros +
                r.throttled_micros,
            r.micros + 4);  // rounding: one microsecond per phase
  EXPECT_NE(r.DebugString().find("scan "), std::string::npos) << r.DebugString();
}

TEST_F(GcJobTest, InvalidOptionsAreRejectedBeforeAnyIo) {
  WriteVictim();
  GcJobOptions options;
  options.liveness_batch_size = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(RunJob(options)));
  options = {};
  options.compress = true;
  options.compression_level = 40;
  EXPECT_TRUE(absl::IsInvalidArgument(RunJob(options)));
  EXPECT_TRUE(index_.events.empty());
  EXPECT_NE(result_.DebugString().find("gc victims 7"), std::string::npos);
}

TEST_F(GcJobTest, SeveralVictimsShareOneOutputAndOneFinalEdit) {
  WriteVictim();
  WriteSecondVictim();
  GcJobOptions options;
  options.liveness_batch_size = 16;
  ASSERT_TRUE(RunJobOnBoth(options).ok());
  EXPECT_EQ(result_.victim_ids, (std::vector<uint64_t>{kVictim, kVictim2}));
  EXPECT_EQ(result_.records_scanned, kKeys + 1u + 20u);
  EXPECT_EQ(result_.records_dropped, 3u + 1u);
  EXPECT_EQ(result_.live_records, kKeys - 2u + 19u);
  const uint64_t out = result_.output_segment_id;
  ASSERT_NE(out, 0u);
  // One output, its keys in order across both victims.
  std::vector<std::pair<std::string, uint8_t>> records = ScanSegment(out);
  ASSERT_EQ(records.size(), result_.live_records);
  EXPECT_TRUE(std::is_sorted(records.begin(), records.end()));
  EXPECT_EQ(records.front().first, "k000");
  EXPECT_EQ(records.back().first, "m019");
  for (const auto& [key, p] : index_.map) {
    if (key == "k001" || key == "m005") {
      EXPECT_EQ(p.segment_id, kFresh) << key;
    } else {
      EXPECT_EQ(p.segment_id, out) << key;
    }
  }
  // Checks (41 + 20 records in batches of 16, per victim), the output's one
  // edit, one synced rewrite, and one final edit naming both victims.
  std::vector<std::string> expected(3 + 2, "check");
  expected.push_back(absl::StrCat("edit ", SegmentEdit::ChangeDebugString(
                                               {SegmentEditTag::kNewSegment, out,
                                                vlog::SegmentKind::kGcOutput})));
  expected.push_back(absl::StrCat(
      "edit ", SegmentEdit::ChangeDebugString({SegmentEditTag::kSealSegment, out,
                                                vlog::SegmentKind::kFresh,
                                                index_.set.Get(out)->size, result_.live_records})));
  expected.push_back("rewrite");
  expected.push_back(absl::StrCat(
      "edit ", SegmentEdit::ChangeDebugString({SegmentEditTag::kMarkObsolete, kVictim})));
  expected.push_back(absl::StrCat(
      "edit ", SegmentEdit::ChangeDebugString({SegmentEditTag::kMarkObsolete, kVictim2})));
  EXPECT_EQ(index_.events, expected);
  EXPECT_EQ(index_.rewrite_syncs, (std::vector<bool>{true}));
  EXPECT_TRUE(index_.set.Get(kVictim)->obsolete);
  EXPECT_TRUE(index_.set.Get(kVictim2)->obsolete);
  EXPECT_EQ(index_.edits.back().changes().size(), 2u);  // one edit for both
  ExpectNoDanglingPointer("after the job");
}

TEST_F(GcJobTest, ABadRecordInALaterVictimLeavesTheJobWithNothingDone) {
  WriteVictim();
  WriteSecondVictim();
  std::string bytes = base_->ReadFileToString(SegmentPath(kVictim2)).value();
  bytes[bytes.size() / 2] ^= 0x40;
  ASSERT_TRUE(base_->WriteFileFromString(SegmentPath(kVictim2), bytes).ok());
  const auto map_before = index_.map;
  const absl::Status s = RunJobOnBoth();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find(SegmentPath(kVictim2)), std::string::npos) << s;
  EXPECT_EQ(index_.map, map_before);
  EXPECT_TRUE(index_.edits.empty());
  EXPECT_FALSE(index_.set.Get(kVictim)->obsolete);
  EXPECT_FALSE(index_.set.Get(kVictim2)->obsolete);
}

TEST_F(GcJobTest, CrashAtEveryIndexCallOfATwoVictimJobLeavesNoDanglingPointer) {
  CrashAtEveryIndexCall(/*two_victims=*/true);
}

TEST_F(GcJobTest, AJobWithoutVictimsIsRefused) {
  const absl::Status s =
      RunGcJob(GcJobOptions(), fs_.get(), SegmentPath, absl::Span<const uint64_t>(), &index_,
               &result_);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(index_.calls, 0);
}

}  // namespace
}  // namespace cairn::gc
