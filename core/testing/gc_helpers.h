// Helpers shared by the GC suites of core/ (gc_test.cc, gc_background_test.cc):
// the options they start from, deterministic values, the segment files of
// a database in "/db", and checks that every key of a model reads back.
// Tests only.
#ifndef CAIRN_CORE_TESTING_GC_HELPERS_H_
#define CAIRN_CORE_TESTING_GC_HELPERS_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/file_system.h"
#include "io/memory_file_system.h"
#include "lsm/filename.h"

namespace cairn::gc_testing {

inline Options GcOptions() {
  Options o;
  o.memtable_size = 128 << 10;
  o.target_file_size = 128 << 10;
  o.value_separation_threshold = 256;
  o.separate_at_flush_below = 0;  // values reach segments as they are written
  o.value_log_segment_size = 128 << 10;
  o.gc_space_amp_trigger = 0;  // tests call RunGC themselves
  return o;
}

inline std::string Value(uint64_t seed, size_t size) {
  std::string v(size, '\0');
  std::mt19937_64 rng(seed);
  for (auto& c : v) c = static_cast<char>('a' + rng() % 26);
  return v;
}

// The names of dir's files of one type, sorted (empty when dir cannot be
// listed).
inline std::vector<std::string> FileNamesOfType(io::FileSystem* fs, const std::string& dir,
                                                lsm::FileType type) {
  std::vector<std::string> out;
  const absl::StatusOr<std::vector<std::string>> names = fs->ListDir(dir);
  if (!names.ok()) return out;
  for (const auto& name : *names) {
    uint64_t num;
    lsm::FileType t;
    if (lsm::ParseFileName(name, &num, &t) && t == type) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::vector<std::string> SegmentNames(io::FileSystem* fs) {
  return FileNamesOfType(fs, "/db", lsm::FileType::kValueLog);
}

inline uint64_t SegmentFiles(io::FileSystem* fs) { return SegmentNames(fs).size(); }

// What the segment files take on the device: their sizes less the blocks
// punched out of them (docs/gc.md, "Punched runs").
inline uint64_t SegmentBytes(io::FileSystem* fs) {
  uint64_t bytes = 0;
  for (const auto& name : SegmentNames(fs)) {
    // Background GC may delete a segment between the listing and the stat.
    const absl::StatusOr<io::FileSystem::FileSpace> space = fs->GetFileSpace("/db/" + name);
    if (space.ok()) bytes += space->allocated_bytes;
  }
  return bytes;
}

// Every key of model reads back its value from db.
inline void ExpectModel(DB* db, const std::map<std::string, std::string>& model) {
  for (const auto& [k, v] : model) {
    std::string got;
    ASSERT_TRUE(db->Get({}, k, &got).ok()) << k;
    ASSERT_EQ(got, v) << k;
  }
}

// Reopens the database in fs and expects it to find nothing to recount (every
// byte of every segment referenced or counted) and every key of model.
inline void ReopenAndExpectModel(const Options& o,
                                 const std::shared_ptr<io::MemoryFileSystem>& fs,
                                 const std::map<std::string, std::string>& model) {
  auto opened = OpenWithFileSystem(o, "/db", fs);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ((*opened)->GetStats().gc_recounted_bytes, 0u);
  ExpectModel(opened->get(), model);
}

// Options under which each Flush of a few 1000-byte values writes a small
// segment of its own (values wait for the flush; segments under a
// sixteenth of 4 MiB are small: docs/gc.md, "Merging small segments").
inline Options SmallSegmentOptions() {
  Options o = GcOptions();
  o.separate_at_flush_below = 16 << 10;
  o.value_log_segment_size = 4 << 20;
  return o;
}

// Session s's ten values (keys s*10 .. s*10+9) into db and model, then a
// Flush: one small segment under SmallSegmentOptions.
inline void PutTenAndFlush(DB* db, int s, std::map<std::string, std::string>* model) {
  for (int j = 0; j < 10; ++j) {
    const std::string k = absl::StrFormat("key%05d", s * 10 + j);
    (*model)[k] = Value(s * 10 + j, 1000);
    ASSERT_TRUE(db->Put({}, k, (*model)[k]).ok());
  }
  ASSERT_TRUE(db->Flush().ok());
}

// Sessions [first, last), each opened on fs, PutTenAndFlush, closed.
inline void SmallSegmentSessions(const Options& o, const std::shared_ptr<io::MemoryFileSystem>& fs,
                                 int first, int last, std::map<std::string, std::string>* model) {
  for (int s = first; s < last; ++s) {
    auto opened = OpenWithFileSystem(o, "/db", fs);
    ASSERT_TRUE(opened.ok()) << opened.status();
    PutTenAndFlush(opened->get(), s, model);
  }
}

}  // namespace cairn::gc_testing

#endif  // CAIRN_CORE_TESTING_GC_HELPERS_H_
