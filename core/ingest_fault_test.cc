// An ingestion under injected I/O errors and crashes: for each k, the k-th
// file-system operation after the ingestion starts fails, and every one
// after it (a dying disk), then the machine crashes (unsynced bytes and
// directory entries dropped) and the database reopens. Whatever the
// ingestion returned, the reopened database must hold all of the file set
// or none of it, with its earlier contents intact and no orphan file; an
// ingestion that returned OK must be all there. Run with the segments
// linked and, where links are refused, copied. k runs until a run injects
// no fault (the ingestion's last operation has passed).
#include <map>
#include <memory>
#include <string>

#include "core/db_impl.h"
#include "core/testing/ingest_helpers.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"

namespace cairn {
namespace {

using testing_ingest::BuildSet;
using testing_ingest::ExpectNoOrphanFiles;
using testing_ingest::Model;

Options DbOptions() {
  Options o;
  o.value_separation_threshold = 512;
  o.separate_at_flush_below = 0;
  o.value_log_segment_size = 64 << 10;
  o.memtable_size = 64 << 10;
  o.gc_space_amp_trigger = 0;
  return o;
}

// The database's contents, through an iterator.
std::map<std::string, std::string> Contents(DB& db) {
  std::map<std::string, std::string> out;
  std::unique_ptr<Iterator> it = db.NewIterator({});
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    out[std::string(it->key())] = std::string(it->value());
  }
  EXPECT_OK(it->status());
  return out;
}

// Runs case k; returns whether a fault was injected.
bool RunCase(uint64_t k, bool links) {
  auto base = std::make_shared<io::MemoryFileSystem>();
  base->SetLinksSupported(links);
  std::map<std::string, std::string> before;
  {
    auto db = OpenWithFileSystem(DbOptions(), "/db", base);
    EXPECT_OK(db.status());
    if (!db.ok()) return false;
    for (int i = 0; i < 30; ++i) {
      EXPECT_OK((*db)->Put({}, "k" + std::to_string(1000 + i * 2), std::string(700, 'o')));
    }
    EXPECT_OK((*db)->Flush());
    EXPECT_OK((*db)->Put({}, "m", "in the memtable"));
    before = Contents(**db);
  }
  Options set_options = DbOptions();
  set_options.file_system = base;
  const Model set = BuildSet(*base, set_options, "/in/a", "k", 0, 30, 5);

  io::FaultFileSystemOptions fopts;
  fopts.drop_unsynced_dir_entries = true;
  auto fs = std::make_shared<io::FaultFileSystem>(base, fopts);
  auto db = OpenWithFileSystem(DbOptions(), "/db", fs);
  EXPECT_OK(db.status());
  if (!db.ok()) return false;
  fs->FailAfter(k, io::InjectedIoError("ingest"), io::FaultKind::kAny, /*persistent=*/true);
  const absl::Status ingested = (*db)->IngestExternalFiles({"/in/a"}, {}).status();
  const bool injected = fs->faults_injected() > 0;
  fs->SetFilesystemActive(false);
  db->reset();
  EXPECT_OK(fs->SimulateCrash(io::CrashMode::kDropUnsynced, k));
  fs->ClearFaults();

  auto reopened = OpenWithFileSystem(DbOptions(), "/db", fs);
  EXPECT_OK(reopened.status()) << "k=" << k;
  if (!reopened.ok()) return injected;
  const std::map<std::string, std::string> after = Contents(**reopened);
  // All: the earlier contents with the set applied over them; none: as before.
  std::map<std::string, std::string> all = before;
  for (const auto& [key, v] : set) {
    if (v.has_value()) {
      all[key] = *v;
    } else {
      all.erase(key);
    }
  }
  EXPECT_TRUE(after == all || (after == before && !ingested.ok()))
      << "k=" << k << " links=" << links << ": ingestion returned " << ingested << "; "
      << after.size() << " keys after the crash, " << all.size() << " with the set, "
      << before.size() << " without";
  ExpectNoOrphanFiles(reopened->get(), *fs);
  return injected;
}

TEST(IngestFaultTest, EveryFailedOperationThenACrashLeavesAllOrNone) {
  for (bool links : {true, false}) {
    uint64_t k = 0;
    while (RunCase(k, links) && !::testing::Test::HasFailure()) ++k;
    EXPECT_GT(k, 10u) << "the sweep ran no case";
  }
}

}  // namespace
}  // namespace cairn
