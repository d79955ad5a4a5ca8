#include "lsm/version_set.h"

#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/coding.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "lsm/filename.h"
#include "lsm/log_writer.h"

namespace cairn::lsm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;
using Extensions = std::vector<std::pair<uint32_t, std::string>>;

constexpr char kDb[] = "/db";

std::string IKey(std::string_view user_key, SequenceNumber seq) {
  std::string k;
  AppendInternalKey(&k, user_key, seq, ValueType::kValue);
  return k;
}

// A file holding user keys [lo, hi] written at sequences [seq, seq + 9].
FileMetaData File(uint64_t number, std::string_view lo, std::string_view hi,
                  SequenceNumber seq = 10) {
  FileMetaData f;
  f.number = number;
  f.file_size = 1000 + number;
  f.smallest = IKey(lo, seq + 9);
  f.largest = IKey(hi, seq);
  f.smallest_seq = seq;
  f.largest_seq = seq + 9;
  f.num_entries = 3 * number;
  return f;
}

// (level, number) of every file of v, level by level in version order.
std::vector<std::pair<int, uint64_t>> Layout(const Version& v) {
  std::vector<std::pair<int, uint64_t>> out;
  for (int level = 0; level < kNumLevels; ++level) {
    for (const auto& f : v.files(level)) out.emplace_back(level, f->number);
  }
  return out;
}

class VersionSetTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs_->CreateDir(kDb).ok()); }

  // Recovers a fresh VersionSet from what is on disk; *ext gets the
  // extension records.
  absl::StatusOr<std::unique_ptr<VersionSet>> Reopen(Extensions* ext = nullptr,
                                                     VersionSetOptions options = {}) {
    auto vs = std::make_unique<VersionSet>(fs_.get(), kDb, options);
    absl::Status s = vs->Recover([&](uint32_t tag, std::string_view payload) {
      if (ext != nullptr) ext->emplace_back(tag, std::string(payload));
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    return vs;
  }

  std::unique_ptr<VersionSet> CreateNew(VersionSetOptions options = {}) {
    auto vs = std::make_unique<VersionSet>(fs_.get(), kDb, options);
    absl::Status s = vs->CreateNew();
    EXPECT_TRUE(s.ok()) << s;
    return vs;
  }

  std::string Read(const std::string& path) {
    auto content = fs_->ReadFileToString(path);
    EXPECT_TRUE(content.ok()) << content.status();
    return content.ok() ? *content : "";
  }

  std::shared_ptr<io::MemoryFileSystem> fs_ = std::make_shared<io::MemoryFileSystem>();
};

TEST_F(VersionSetTest, CreateNewWritesFirstManifestAndCurrent) {
  auto vs = CreateNew();
  EXPECT_EQ(vs->ManifestFileNumber(), 1u);
  EXPECT_EQ(vs->NextFileNumber(), 2u);
  EXPECT_EQ(Read("/db/CURRENT"), "MANIFEST-000001\n");
  EXPECT_TRUE(fs_->FileExists("/db/MANIFEST-000001"));
  EXPECT_TRUE(Layout(*vs->current()).empty());

  auto again = Reopen();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(Layout(*(*again)->current()).empty());
  EXPECT_EQ((*again)->LastSequence(), 0u);
  EXPECT_GE((*again)->NextFileNumber(), 2u);
}

TEST_F(VersionSetTest, CreateNewRefusesAnExistingDatabase) {
  CreateNew();
  VersionSet second(fs_.get(), kDb);
  EXPECT_EQ(second.CreateNew().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Read("/db/CURRENT"), "MANIFEST-000001\n");
}

TEST_F(VersionSetTest, LogAndApplyBeforeOpenIsRefused) {
  VersionSet vs(fs_.get(), kDb);
  VersionEdit edit;
  EXPECT_EQ(vs.LogAndApply(&edit).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(VersionSetTest, RecoverRestoresFilesNumbersSequenceAndExtensions) {
  auto vs = CreateNew();
  const uint64_t log = vs->NewFileNumber();
  std::vector<uint64_t> n;
  for (int i = 0; i < 6; ++i) n.push_back(vs->NewFileNumber());

  VersionEdit e1;
  e1.SetLogNumber(log);
  e1.AddFile(0, File(n[0], "a", "z"));
  e1.AddFile(0, File(n[1], "c", "f"));
  e1.AddFile(1, File(n[2], "a", "f"));
  e1.AddFile(1, File(n[3], "g", "m"));
  e1.AddExtension(1, "segment 3 added");
  vs->SetLastSequence(500);
  ASSERT_TRUE(vs->LogAndApply(&e1).ok());

  VersionEdit e2;
  e2.RemoveFile(0, n[0]);
  e2.RemoveFile(1, n[3]);
  e2.AddFile(2, File(n[4], "g", "k"));
  e2.AddFile(2, File(n[5], "l", "q"));
  e2.SetCompactPointer(1, IKey("f", 3));
  e2.AddExtension(2, "garbage 3:100");
  e2.AddExtension(1, "segment 9 added");
  vs->SetLastSequence(900);
  ASSERT_TRUE(vs->LogAndApply(&e2).ok());

  const auto expected_layout = Layout(*vs->current());
  EXPECT_THAT(expected_layout, ElementsAre(Pair(0, n[1]), Pair(1, n[2]), Pair(2, n[4]),
                                           Pair(2, n[5])));

  Extensions ext;
  auto recovered = Reopen(&ext);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  VersionSet& r = **recovered;
  EXPECT_EQ(Layout(*r.current()), expected_layout);
  EXPECT_EQ(r.LastSequence(), 900u);
  EXPECT_EQ(r.LogNumber(), log);
  EXPECT_EQ(r.ManifestFileNumber(), vs->ManifestFileNumber());
  EXPECT_GE(r.NextFileNumber(), vs->NextFileNumber());
  EXPECT_EQ(r.CompactPointer(1), IKey("f", 3));
  EXPECT_EQ(r.CompactPointer(2), "");
  EXPECT_THAT(ext, ElementsAre(Pair(1, "segment 3 added"), Pair(2, "garbage 3:100"),
                               Pair(1, "segment 9 added")));
  const FileMetaData& f = *r.current()->files(2)[1];
  const FileMetaData want = File(n[5], "l", "q");
  EXPECT_EQ(f.file_size, want.file_size);
  EXPECT_EQ(f.smallest, want.smallest);
  EXPECT_EQ(f.largest, want.largest);
  EXPECT_EQ(f.smallest_seq, want.smallest_seq);
  EXPECT_EQ(f.largest_seq, want.largest_seq);
  EXPECT_EQ(f.num_entries, want.num_entries);
}

TEST_F(VersionSetTest, RecoverAfterCreateNewOnTheSameSetWorks) {
  VersionSet vs(fs_.get(), kDb);
  ASSERT_TRUE(vs.CreateNew().ok());
  ASSERT_TRUE(vs.Recover([](uint32_t, std::string_view) { return absl::OkStatus(); }).ok());
  VersionEdit edit;
  edit.AddFile(0, File(vs.NewFileNumber(), "a", "b"));
  ASSERT_TRUE(vs.LogAndApply(&edit).ok());
  EXPECT_EQ(vs.current()->NumFiles(0), 1u);
}

TEST_F(VersionSetTest, FirstLogAndApplyAfterRecoverStartsAFreshManifest) {
  {
    auto vs = CreateNew();
    vs->SetExtensionSnapshotter([] { return Extensions{{5, "never used"}}; });
    VersionEdit edit;
    edit.AddFile(1, File(vs->NewFileNumber(), "a", "c"));
    edit.AddExtension(5, "first");
    ASSERT_TRUE(vs->LogAndApply(&edit).ok());
    EXPECT_EQ(vs->ManifestFileNumber(), 1u);  // CreateNew's manifest is reused.
  }
  auto vs = Reopen();
  ASSERT_TRUE(vs.ok()) << vs.status();
  // The owner of extension tag 5 summarizes its state for the new manifest.
  (*vs)->SetExtensionSnapshotter([] { return Extensions{{5, "summary"}}; });
  VersionEdit edit;
  edit.AddFile(1, File((*vs)->NewFileNumber(), "d", "f"));
  edit.AddExtension(5, "second");
  ASSERT_TRUE((*vs)->LogAndApply(&edit).ok());
  const uint64_t manifest = (*vs)->ManifestFileNumber();
  EXPECT_GT(manifest, 1u);
  EXPECT_EQ(Read("/db/CURRENT"), absl::StrFormat("MANIFEST-%06u\n", manifest));
  EXPECT_FALSE(fs_->FileExists("/db/MANIFEST-000001"));

  Extensions ext;
  auto again = Reopen(&ext);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->current()->NumFiles(1), 2u);
  EXPECT_THAT(ext, ElementsAre(Pair(5, "summary"), Pair(5, "second")));
}

TEST_F(VersionSetTest, ManifestRollsOverPastItsSizeLimit) {
  VersionSetOptions options;
  options.max_manifest_size = 1024;
  auto vs = CreateNew(options);
  int snapshots = 0;
  vs->SetExtensionSnapshotter([&] {
    ++snapshots;
    return Extensions{{9, absl::StrCat("snapshot ", snapshots)}};
  });
  std::vector<uint64_t> manifests = {vs->ManifestFileNumber()};
  for (int i = 0; i < 60; ++i) {
    VersionEdit edit;
    edit.AddFile(1, File(vs->NewFileNumber(), absl::StrFormat("k%03d-%s", i, std::string(40, 'x')),
                         absl::StrFormat("k%03d-%s", i, std::string(41, 'x'))));
    edit.AddExtension(9, absl::StrCat("edit ", i));
    ASSERT_TRUE(vs->LogAndApply(&edit).ok()) << i;
    if (vs->ManifestFileNumber() != manifests.back()) manifests.push_back(vs->ManifestFileNumber());
  }
  EXPECT_GE(manifests.size(), 3u);
  EXPECT_EQ(snapshots, static_cast<int>(manifests.size()) - 1);
  auto names = fs_->ListDir(kDb);
  ASSERT_TRUE(names.ok());
  int manifest_files = 0;
  for (const auto& name : *names) manifest_files += absl::StartsWith(name, "MANIFEST-");
  EXPECT_EQ(manifest_files, 1);

  Extensions ext;
  auto recovered = Reopen(&ext);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ((*recovered)->current()->NumFiles(1), 60u);
  // The newest manifest: its snapshot's record, then every edit since.
  ASSERT_FALSE(ext.empty());
  EXPECT_EQ(ext.front(), std::make_pair(9u, absl::StrCat("snapshot ", snapshots)));
  EXPECT_EQ(ext.back(), std::make_pair(9u, std::string("edit 59")));
}

TEST_F(VersionSetTest, InvalidEditsAreRefusedAndNothingIsWritten) {
  auto vs = CreateNew();
  VersionEdit add;
  const uint64_t a = vs->NewFileNumber(), b = vs->NewFileNumber();
  add.AddFile(1, File(a, "a", "f"));
  ASSERT_TRUE(vs->LogAndApply(&add).ok());
  const std::string before = Read(ManifestFileName(kDb, vs->ManifestFileNumber()));

  VersionEdit missing;
  missing.RemoveFile(1, 9999);
  EXPECT_EQ(vs->LogAndApply(&missing).code(), absl::StatusCode::kInvalidArgument);
  VersionEdit overlap;
  overlap.AddFile(1, File(b, "e", "k"));
  absl::Status s = vs->LogAndApply(&overlap);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("overlap"));
  VersionEdit twice;
  twice.AddFile(2, File(a, "x", "y"));
  EXPECT_EQ(vs->LogAndApply(&twice).code(), absl::StatusCode::kInvalidArgument);
  VersionEdit old_log;
  old_log.SetLogNumber(vs->NextFileNumber() + 5);
  EXPECT_EQ(vs->LogAndApply(&old_log).code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(Read(ManifestFileName(kDb, vs->ManifestFileNumber())), before);
  EXPECT_THAT(Layout(*vs->current()), ElementsAre(Pair(1, a)));
  VersionEdit fine;
  fine.AddFile(1, File(b, "g", "k"));
  EXPECT_TRUE(vs->LogAndApply(&fine).ok());
}

TEST_F(VersionSetTest, AddLiveFilesSeesEveryVersionStillHeld) {
  auto vs = CreateNew();
  const uint64_t a = vs->NewFileNumber(), b = vs->NewFileNumber();
  VersionEdit add;
  add.AddFile(0, File(a, "a", "c"));
  ASSERT_TRUE(vs->LogAndApply(&add).ok());
  std::shared_ptr<const Version> held = vs->current();

  VersionEdit replace;
  replace.RemoveFile(0, a);
  replace.AddFile(1, File(b, "a", "c"));
  ASSERT_TRUE(vs->LogAndApply(&replace).ok());

  absl::flat_hash_set<uint64_t> live;
  vs->AddLiveFiles(&live);
  EXPECT_THAT(live, UnorderedElementsAre(a, b));
  held.reset();
  live.clear();
  vs->AddLiveFiles(&live);
  EXPECT_THAT(live, UnorderedElementsAre(b));
}

TEST_F(VersionSetTest, FileNumbersAreNeverReusedAfterRecover) {
  uint64_t largest = 0;
  {
    auto vs = CreateNew();
    VersionEdit edit;
    vs->MarkFileNumberUsed(40);
    largest = vs->NewFileNumber();
    edit.AddFile(0, File(largest, "a", "b"));
    ASSERT_TRUE(vs->LogAndApply(&edit).ok());
  }
  auto vs = Reopen();
  ASSERT_TRUE(vs.ok()) << vs.status();
  EXPECT_GT((*vs)->NewFileNumber(), largest);
  EXPECT_GT((*vs)->NewFileNumber(), (*vs)->ManifestFileNumber());
}

TEST_F(VersionSetTest, ConcurrentLogAndApplyCallsAreSerialized) {
  auto vs = CreateNew();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        VersionEdit edit;
        edit.AddFile(0, File(vs->NewFileNumber(), "a", "z"));
        edit.AddExtension(static_cast<uint32_t>(t), absl::StrCat(i));
        EXPECT_TRUE(vs->LogAndApply(&edit).ok());
        EXPECT_GE(vs->current()->NumFiles(0), 1u);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(vs->current()->NumFiles(0), 100u);

  Extensions ext;
  auto recovered = Reopen(&ext);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(Layout(*(*recovered)->current()), Layout(*vs->current()));
  ASSERT_EQ(ext.size(), 100u);
  std::vector<int> next(4, 0);  // Each thread's records come back in its order.
  for (const auto& [tag, payload] : ext) EXPECT_EQ(payload, absl::StrCat(next[tag]++));
}

TEST_F(VersionSetTest, ExtensionCallbackErrorStopsRecovery) {
  auto vs = CreateNew();
  VersionEdit edit;
  edit.AddExtension(77, "from the future");
  ASSERT_TRUE(vs->LogAndApply(&edit).ok());
  VersionSet fresh(fs_.get(), kDb);
  absl::Status s = fresh.Recover([](uint32_t tag, std::string_view) {
    return absl::FailedPreconditionError(absl::StrCat("unknown extension ", tag));
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("unknown extension 77"));
}

TEST_F(VersionSetTest, MissingCurrentIsNotFound) {
  auto vs = Reopen();
  EXPECT_EQ(vs.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(vs.status().message(), HasSubstr("/db/CURRENT"));
}

TEST_F(VersionSetTest, CorruptCurrentIsDataLossNamingCurrent) {
  CreateNew();
  ASSERT_TRUE(fs_->WriteFileFromString("/db/CURRENT", "MANIFEST-0000\x01\n").ok());
  auto vs = Reopen();
  EXPECT_EQ(vs.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(vs.status().message(), HasSubstr("/db/CURRENT"));
}

TEST_F(VersionSetTest, MissingManifestIsDataLossNamingIt) {
  CreateNew();
  ASSERT_TRUE(fs_->WriteFileFromString("/db/CURRENT", "MANIFEST-000009\n").ok());
  auto vs = Reopen();
  EXPECT_EQ(vs.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(vs.status().message(), HasSubstr("/db/MANIFEST-000009"));
  EXPECT_THAT(vs.status().message(), HasSubstr("does not exist"));
}

// Applies three edits, each adding one L1 file, and returns the manifest
// size before each edit was appended.
std::vector<uint64_t> ApplyThreeEdits(VersionSet* vs, io::FileSystem* fs) {
  std::vector<uint64_t> sizes;
  const char* ranges[][2] = {{"a", "c"}, {"d", "f"}, {"g", "i"}};
  for (const auto& range : ranges) {
    sizes.push_back(fs->GetFileSize(ManifestFileName(kDb, vs->ManifestFileNumber())).value());
    VersionEdit edit;
    edit.AddFile(1, File(vs->NewFileNumber(), range[0], range[1]));
    edit.AddExtension(3, range[0]);
    EXPECT_TRUE(vs->LogAndApply(&edit).ok());
  }
  return sizes;
}

TEST_F(VersionSetTest, TornManifestTailIsIgnored) {
  auto vs = CreateNew();
  const std::vector<uint64_t> sizes = ApplyThreeEdits(vs.get(), fs_.get());
  const std::string path = ManifestFileName(kDb, vs->ManifestFileNumber());
  const uint64_t full = fs_->GetFileSize(path).value();
  vs.reset();
  // Cut the last record at every length short of complete.
  for (uint64_t cut = sizes[2] + 1; cut < full; cut += 3) {
    std::string bytes = Read(path);
    ASSERT_TRUE(fs_->TruncateFile(path, cut).ok());
    Extensions ext;
    auto recovered = Reopen(&ext);
    ASSERT_TRUE(recovered.ok()) << "cut at " << cut << ": " << recovered.status();
    EXPECT_EQ((*recovered)->current()->NumFiles(1), 2u) << "cut at " << cut;
    EXPECT_THAT(ext, ElementsAre(Pair(3, "a"), Pair(3, "d")));
    ASSERT_TRUE(fs_->WriteFileFromString(path, bytes).ok());
  }
  // After a torn tail, the next edit goes to a fresh manifest.
  ASSERT_TRUE(fs_->TruncateFile(path, full - 1).ok());
  auto recovered = Reopen();
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  VersionEdit edit;
  edit.AddFile(1, File((*recovered)->NewFileNumber(), "x", "z"));
  ASSERT_TRUE((*recovered)->LogAndApply(&edit).ok());
  EXPECT_NE(ManifestFileName(kDb, (*recovered)->ManifestFileNumber()), path);
  auto again = Reopen();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->current()->NumFiles(1), 3u);
}

TEST_F(VersionSetTest, CorruptRecordBeforeTheTailIsDataLossNamingTheManifest) {
  auto vs = CreateNew();
  const std::vector<uint64_t> sizes = ApplyThreeEdits(vs.get(), fs_.get());
  const std::string path = ManifestFileName(kDb, vs->ManifestFileNumber());
  vs.reset();
  std::string bytes = Read(path);
  bytes[sizes[1] - 3] ^= 0x20;  // Inside the first edit; two records follow.
  ASSERT_TRUE(fs_->WriteFileFromString(path, bytes).ok());
  auto recovered = Reopen();
  EXPECT_EQ(recovered.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(recovered.status().message(), HasSubstr(path));
}

// Writes MANIFEST-000007 holding records and points CURRENT at it.
void WriteManifest(io::FileSystem* fs, const std::vector<std::string>& records) {
  auto file = fs->NewWritableFile(ManifestFileName(kDb, 7), {});
  ASSERT_TRUE(file.ok());
  auto writer = LogWriter::Create(std::move(*file), 7);
  ASSERT_TRUE(writer.ok());
  for (const auto& r : records) ASSERT_TRUE((*writer)->AddRecord(r).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  ASSERT_TRUE(SetCurrentFile(fs, kDb, 7).ok());
}

std::string SnapshotBytes(std::string_view comparator = kComparatorName) {
  VersionEdit e;
  e.SetComparatorName(comparator);
  e.SetLogNumber(0);
  e.SetNextFileNumber(8);
  e.SetLastSequence(0);
  std::string s;
  e.EncodeTo(&s);
  return s;
}

TEST_F(VersionSetTest, NewerManifestFormatIsRefused) {
  std::string future;
  io::PutVarint32(&future, static_cast<uint32_t>(EditTag::kFormatVersion));
  io::PutVarint32(&future, kManifestFormatVersion + 1);
  io::PutVarint32(&future, 42);  // A tag this build does not know.
  WriteManifest(fs_.get(), {future});
  auto vs = Reopen();
  EXPECT_EQ(vs.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(vs.status().message(), HasSubstr("MANIFEST-000007"));
  EXPECT_THAT(vs.status().message(), HasSubstr("format version 2"));
}

TEST_F(VersionSetTest, ManifestMustStartWithASnapshot) {
  std::string partial;
  VersionEdit().EncodeTo(&partial);
  WriteManifest(fs_.get(), {partial});
  auto vs = Reopen();
  EXPECT_EQ(vs.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(vs.status().message(), HasSubstr("not a snapshot"));
}

TEST_F(VersionSetTest, EmptyManifestIsDataLoss) {
  WriteManifest(fs_.get(), {});
  auto vs = Reopen();
  EXPECT_EQ(vs.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(vs.status().message(), HasSubstr("no complete record"));
}

TEST_F(VersionSetTest, OtherComparatorIsRefused) {
  WriteManifest(fs_.get(), {SnapshotBytes("reverse")});
  auto vs = Reopen();
  EXPECT_EQ(vs.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(vs.status().message(), HasSubstr("reverse"));
}

TEST_F(VersionSetTest, EditsThatDoNotFitAreDataLoss) {
  VersionEdit bad;
  bad.RemoveFile(2, 5);
  std::string bad_bytes;
  bad.EncodeTo(&bad_bytes);
  WriteManifest(fs_.get(), {SnapshotBytes(), bad_bytes});
  auto vs = Reopen();
  EXPECT_EQ(vs.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(vs.status().message(), HasSubstr("MANIFEST-000007: record 1"));
  EXPECT_THAT(vs.status().message(), HasSubstr("#5"));

  VersionEdit overlap;
  overlap.AddFile(3, File(4, "a", "m"));
  overlap.AddFile(3, File(5, "k", "z"));
  std::string overlap_bytes;
  overlap.EncodeTo(&overlap_bytes);
  WriteManifest(fs_.get(), {SnapshotBytes(), overlap_bytes});
  vs = Reopen();
  EXPECT_EQ(vs.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(vs.status().message(), HasSubstr("overlap"));
}

TEST_F(VersionSetTest, ManifestWriteErrorIsStickyUntilRecover) {
  auto fault = std::make_shared<io::FaultFileSystem>(fs_);
  VersionSet vs(fault.get(), kDb);
  ASSERT_TRUE(vs.CreateNew().ok());
  VersionEdit first;
  first.AddFile(0, File(vs.NewFileNumber(), "a", "b"));
  ASSERT_TRUE(vs.LogAndApply(&first).ok());

  fault->FailAfter(0, io::InjectedIoError("test"), io::FaultKind::kSync, /*persistent=*/false);
  VersionEdit second;
  second.AddFile(0, File(vs.NewFileNumber(), "c", "d"));
  absl::Status s = vs.LogAndApply(&second);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(vs.current()->NumFiles(0), 1u);  // Not installed.

  VersionEdit third;
  third.AddFile(0, File(vs.NewFileNumber(), "e", "f"));
  EXPECT_EQ(vs.LogAndApply(&third).code(), s.code());  // The fault is gone; the error stays.
  EXPECT_EQ(vs.current()->NumFiles(0), 1u);

  // Reloading the durable state clears it (the failed sync's record did
  // reach the memory file system, so the second edit is there).
  ASSERT_TRUE(vs.Recover([](uint32_t, std::string_view) { return absl::OkStatus(); }).ok());
  EXPECT_EQ(vs.current()->NumFiles(0), 2u);
  EXPECT_TRUE(vs.LogAndApply(&third).ok());
}

// The layouts after each prefix of a fixed edit sequence, for the crash sweep.
constexpr int kSweepEdits = 12;

VersionEdit SweepEdit(int i) {
  VersionEdit edit;
  // File numbers are fixed so every run builds the same trees: 100 + i.
  edit.AddFile(i % 2, File(100 + i, absl::StrCat("k", i), absl::StrCat("k", i, "z")));
  if (i >= 4) edit.RemoveFile((i - 4) % 2, 100 + i - 4);
  edit.AddExtension(1, absl::StrCat(i));
  return edit;
}

TEST_F(VersionSetTest, CrashAtEveryManifestOperationKeepsAcknowledgedEdits) {
  // Expected layout after applying the first j edits.
  std::vector<std::vector<std::pair<int, uint64_t>>> expected;
  {
    VersionBuilder b(nullptr);
    expected.push_back({});
    for (int i = 0; i < kSweepEdits; ++i) {
      ASSERT_TRUE(b.Apply(SweepEdit(i)).ok());
      expected.push_back(Layout(**b.Build()));
    }
  }
  VersionSetOptions options;
  options.max_manifest_size = 100;  // Roll over every few edits.

  int crashes = 0;
  for (auto [kind, mode] : {std::pair(io::FaultKind::kAny, io::CrashMode::kDropUnsynced),
                            std::pair(io::FaultKind::kAny, io::CrashMode::kTearLastWrite),
                            std::pair(io::FaultKind::kShortWrite, io::CrashMode::kKeepRandomPrefix),
                            std::pair(io::FaultKind::kShortWrite, io::CrashMode::kTearLastWrite)}) {
    for (uint64_t k = 0;; ++k) {
      auto base = std::make_shared<io::MemoryFileSystem>();
      ASSERT_TRUE(base->CreateDir(kDb).ok());
      io::FaultFileSystemOptions fault_options;
      fault_options.drop_unsynced_dir_entries = true;
      auto fault = std::make_shared<io::FaultFileSystem>(base, fault_options);
      fault->FailAfter(k, io::InjectedIoError("sweep"), kind, /*persistent=*/true);

      int acknowledged = -1;  // -1: CreateNew did not succeed.
      uint64_t last_manifest = 0;
      {
        VersionSet vs(fault.get(), kDb, options);
        vs.MarkFileNumberUsed(200);
        vs.SetExtensionSnapshotter([] { return Extensions{}; });
        if (vs.CreateNew().ok()) {
          acknowledged = 0;
          for (int i = 0; i < kSweepEdits; ++i) {
            VersionEdit edit = SweepEdit(i);
            if (!vs.LogAndApply(&edit).ok()) break;
            acknowledged = i + 1;
          }
        }
        last_manifest = vs.ManifestFileNumber();
      }
      const bool fired = fault->faults_injected() > 0;
      fault->ClearFaults();
      ASSERT_TRUE(fault->SimulateCrash(mode, k).ok());

      VersionSet recovered(fault.get(), kDb, options);
      Extensions ext;
      absl::Status s = recovered.Recover([&](uint32_t tag, std::string_view payload) {
        ext.emplace_back(tag, std::string(payload));
        return absl::OkStatus();
      });
      if (acknowledged < 0) {
        // The database was never created: no CURRENT, or an empty tree.
        EXPECT_TRUE(s.ok() || absl::IsNotFound(s)) << "k=" << k << ": " << s;
      } else {
        ASSERT_TRUE(s.ok()) << "k=" << k << " acknowledged=" << acknowledged << ": " << s;
        const auto layout = Layout(*recovered.current());
        // Every acknowledged edit survives; at most the failed one more.
        const bool exact = layout == expected[acknowledged];
        const bool one_more = acknowledged < kSweepEdits && layout == expected[acknowledged + 1];
        EXPECT_TRUE(exact || one_more) << "k=" << k << " acknowledged=" << acknowledged << "\n"
                                       << recovered.current()->DebugString();
        // Extension records since the last snapshot: the last edits, in order.
        const int applied = exact ? acknowledged : acknowledged + 1;
        for (size_t i = 0; i < ext.size(); ++i) {
          EXPECT_EQ(ext[i].second, absl::StrCat(applied - static_cast<int>(ext.size() - i)))
              << "k=" << k;
        }
        // The recovered tree can take more edits.
        VersionEdit more;
        more.AddFile(5, File(recovered.NewFileNumber(), "zz", "zzz"));
        EXPECT_TRUE(recovered.LogAndApply(&more).ok()) << "k=" << k;
      }
      ++crashes;
      if (!fired) {
        // The whole workload ran without reaching op k; it rolled the
        // manifest over at least twice (201 was CreateNew's).
        EXPECT_GE(last_manifest, 203u);
        break;
      }
    }
  }
  EXPECT_GT(crashes, 150);
  std::cout << crashes << " crash images recovered\n";
}

}  // namespace
}  // namespace cairn::lsm
