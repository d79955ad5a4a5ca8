// Helpers shared by the ingestion suites of core/ (ingest_test.cc,
// ingest_fault_test.cc): a file set built from a deterministic model, and a
// fixture whose database in "/db" is checked against models (every key
// reads back through Get and the iterator), for being untouched by a
// refused ingestion, and for orphan files. Tests only.
#ifndef CAIRN_CORE_TESTING_INGEST_HELPERS_H_
#define CAIRN_CORE_TESTING_INGEST_HELPERS_H_

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "cairn/ingest.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"
#include "lsm/filename.h"

namespace cairn::testing_ingest {

// key -> value, or nullopt for a key the set deletes.
using Model = std::map<std::string, std::optional<std::string>>;

// The value of key i: every third one at or above the threshold of
// IngestFixture's options (separated), the others inline.
inline std::string ValueFor(const std::string& prefix, int i) {
  const size_t len = i % 3 == 0 ? 6000 + 370 * (i % 5) : 20 + i % 7;
  return std::string(len, static_cast<char>('a' + (i + prefix.size()) % 26));
}

// Writes a file set at dir with keys prefix0000.. of [first, first + n),
// every deletes_every-th one (when non-zero) a delete.
inline Model BuildSet(io::FileSystem& fs, const Options& options, const std::string& dir,
                      const std::string& prefix, int first, int n, int deletes_every) {
  Model m;
  if (!fs.FileExists("/in")) {
    EXPECT_OK(fs.CreateDir("/in"));
  }
  auto w = ExternalFileWriter::Open(options, dir);
  EXPECT_OK(w.status());
  if (!w.ok()) return m;
  for (int i = first; i < first + n; ++i) {
    const std::string key = absl::StrFormat("%s%04d", prefix, i);
    if (deletes_every != 0 && i % deletes_every == 0) {
      EXPECT_OK((*w)->Delete(key));
      m[key] = std::nullopt;
    } else {
      const std::string value = ValueFor(prefix, i);
      EXPECT_OK((*w)->Put(key, value));
      m[key] = value;
    }
  }
  EXPECT_OK((*w)->Finish().status());
  return m;
}

// Every table and segment file in /db is one the database (open on fs
// there) knows.
inline void ExpectNoOrphanFiles(DB* db, io::FileSystem& fs) {
  ASSERT_OK(db->WaitForBackgroundWork());
  auto* impl = static_cast<DBImpl*>(db);
  const auto tables = impl->LiveTablesForTesting();
  absl::flat_hash_set<uint64_t> segments;
  for (const auto& info : impl->ValueLogSegmentsForTesting()) segments.insert(info.segment_id);
  auto names = fs.ListDir("/db");
  ASSERT_OK(names.status());
  for (const std::string& name : *names) {
    uint64_t number;
    lsm::FileType type;
    if (!lsm::ParseFileName(name, &number, &type)) continue;
    if (type == lsm::FileType::kTable) {
      EXPECT_TRUE(tables.contains(number)) << name;
    } else if (type == lsm::FileType::kValueLog) {
      EXPECT_TRUE(segments.contains(number)) << name;
    }
  }
}

class IngestFixture : public ::testing::Test {
 protected:
  IngestFixture() {
    options_.file_system = fs_;
    options_.value_separation_threshold = 512;
    options_.separate_at_flush_below = 0;
    options_.value_log_segment_size = 64 << 10;
    options_.memtable_size = 64 << 10;
  }
  void Open() {
    auto db = OpenWithFileSystem(options_, "/db", fs_);
    ASSERT_OK(db.status());
    db_ = *std::move(db);
    before_ = Contents();
  }
  void Reopen() {
    db_.reset();
    auto db = OpenWithFileSystem(options_, "/db", fs_);
    ASSERT_OK(db.status());
    db_ = *std::move(db);
  }
  void Destroy() {
    db_.reset();
    ASSERT_OK(DestroyDBWithFileSystem("/db", fs_.get()));
    for (const std::string& name : fs_->ListDir("/in").value_or(std::vector<std::string>{})) {
      const std::string dir = "/in/" + name;
      for (const std::string& f : fs_->ListDir(dir).value_or(std::vector<std::string>{})) {
        EXPECT_OK(fs_->RemoveFile(dir + "/" + f));
      }
      EXPECT_OK(fs_->RemoveDir(dir));
    }
  }
  // Every key of the database, through an iterator.
  std::map<std::string, std::string> Contents() {
    std::map<std::string, std::string> out;
    std::unique_ptr<Iterator> it = db_->NewIterator({});
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      out[std::string(it->key())] = std::string(it->value());
    }
    EXPECT_OK(it->status());
    return out;
  }
  void ExpectHolds(const Model& m) {
    const std::map<std::string, std::string> all = Contents();
    for (const auto& [k, v] : m) {
      std::string got;
      const absl::Status s = db_->Get({}, k, &got);
      if (v.has_value()) {
        ASSERT_OK(s) << k;
        EXPECT_EQ(got, *v) << k;
        EXPECT_EQ(all.count(k), 1u) << k;
        if (all.count(k) == 1) {
          EXPECT_EQ(all.at(k), *v) << k;
        }
      } else {
        EXPECT_TRUE(absl::IsNotFound(s)) << k << ": " << s;
        EXPECT_EQ(all.count(k), 0u) << k;
      }
    }
  }
  // The contents as Open found them, plus what the test wrote since
  // ("x" = "1" where it wrote it).
  void ExpectUntouched() {
    std::map<std::string, std::string> want = before_;
    std::string v;
    if (db_->Get({}, "x", &v).ok()) want["x"] = v;
    EXPECT_EQ(Contents(), want);
  }
  void ExpectNoOrphans() { ExpectNoOrphanFiles(db_.get(), *fs_); }

  std::shared_ptr<io::MemoryFileSystem> fs_ = std::make_shared<io::MemoryFileSystem>();
  Options options_;
  std::unique_ptr<DB> db_;
  std::map<std::string, std::string> before_;
};

}  // namespace cairn::testing_ingest

#endif  // CAIRN_CORE_TESTING_INGEST_HELPERS_H_
