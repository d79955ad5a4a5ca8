// Compaction describes one leveled compaction: the input files of a level,
// the overlapping files of the level it writes to, and the grandparent files
// (one level further down) that bound its output files. The picker functions
// below choose compactions from a Version; lsm/compaction_job.h runs them.
//
// Shape of the tree (RocksDB's dynamic level bytes): L0 holds overlapping
// flushed files; L1..L6 each hold one sorted run. The last level's size sets
// the targets: each level above it aims at 1/multiplier of the one below,
// and the first level whose target would fall below the base size is the
// "base level" into which L0 compacts; the levels above it stay empty.
//
// Thread safety: a Compaction is immutable after it is picked, except for
// the inputs' FileMetaData::being_compacted flags. The pick functions read
// those flags and SetInputsBeingCompacted writes them: call both under the
// lock that guards being_compacted (the compaction scheduler's).
#ifndef CAIRN_LSM_COMPACTION_H_
#define CAIRN_LSM_COMPACTION_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lsm/version.h"
#include "lsm/version_edit.h"

namespace cairn::lsm {

struct CompactionOptions {
  // L0 file count at which L0 compacts into the base level.
  int level0_trigger = 4;
  // Size ratio between adjacent levels. Values below 2 are taken as 2.
  int multiplier = 10;
  // Compaction output files are cut once they reach this size.
  uint64_t target_file_size = uint64_t{64} << 20;
  // Target size of the base level; 0 means 10 * target_file_size, capped at
  // 256 MiB (RocksDB's max_bytes_for_level_base for 64 MiB files).
  uint64_t max_bytes_for_level_base = 0;
  // An output file is also cut when it overlaps more than this many times
  // target_file_size of the grandparent level, and a file moves down without
  // a rewrite only when it overlaps at most that much there.
  int max_grandparent_overlap_factor = 10;
};

// The effective base-level size of o (see max_bytes_for_level_base).
uint64_t BaseLevelBytes(const CompactionOptions& o);

// The targets and scores the picker works from.
struct LevelShape {
  // The level L0 compacts into: the first level with a non-zero target.
  int base_level = kNumLevels - 1;
  // Target bytes per level; 0 for L0 and for the (empty) levels above the
  // base level.
  std::array<uint64_t, kNumLevels> target_bytes{};
  // L0: files not being compacted / level0_trigger. L1..L5: bytes of the
  // files not being compacted / target. The last level has nothing below
  // it and always scores 0. A level scoring >= 1 needs compaction.
  std::array<double, kNumLevels> score{};
};

LevelShape ComputeLevelShape(const Version& v, const CompactionOptions& o);
int BaseLevel(const Version& v, const CompactionOptions& o);

// Bytes that compaction must still rewrite to bring every level within its
// target (RocksDB's estimate): L0's bytes once it reaches its trigger, plus
// for each level from the base level down, its excess over target times
// (1 + the size ratio of the next level to it), the excess flowing down.
// For write stalls.
uint64_t EstimatePendingCompactionBytes(const Version& v, const CompactionOptions& o);

class Compaction {
 public:
  // REQUIRES: level_inputs non-empty; output_inputs and grandparents come
  // from output_level and output_level + 1 of the same Version; files of
  // levels from L1 sorted by key. level == output_level only for the last
  // level (a manual compaction of the bottom level in place).
  Compaction(const CompactionOptions& options, int level, int output_level,
             FileList level_inputs, FileList output_inputs, FileList grandparents,
             bool manual, double score);

  Compaction(const Compaction&) = delete;
  Compaction& operator=(const Compaction&) = delete;

  int level() const { return level_; }
  int output_level() const { return output_level_; }
  // which 0: the files of level(); which 1: the files of output_level()
  // that overlap them (empty when level() == output_level()).
  const FileList& inputs(int which) const { return inputs_[which]; }
  // Files of output_level() + 1 that overlap the inputs' key range.
  const FileList& grandparents() const { return grandparents_; }
  bool is_manual() const { return manual_; }
  // The score of level() when picked (0 for manual compactions).
  double score() const { return score_; }

  // The single input file can move to output_level() as it is: nothing in
  // output_level() overlaps it and it overlaps at most
  // MaxGrandparentOverlapBytes() of the grandparents. A manual compaction
  // into the last level always rewrites, so that it drops what it can.
  bool IsTrivialMove() const;

  uint64_t InputBytes() const { return InputBytes(0) + InputBytes(1); }
  uint64_t InputBytes(int which) const;
  size_t NumInputFiles() const { return inputs_[0].size() + inputs_[1].size(); }

  // The smallest and largest user keys of all inputs.
  std::string_view smallest_user_key() const { return smallest_user_key_; }
  std::string_view largest_user_key() const { return largest_user_key_; }

  uint64_t MaxOutputFileSize() const { return options_.target_file_size; }
  uint64_t MaxGrandparentOverlapBytes() const;

  // Adds to edit the removal of every input file from its level.
  void AddInputDeletions(VersionEdit* edit) const;
  // Sets being_compacted on every input file (call under the scheduler's lock).
  void SetInputsBeingCompacted(bool value) const;

  // "L1 -> L2: #12 #13 + #20 (3 files, 1.2 MiB)" and the like, for logs.
  std::string DebugString() const;

 private:
  const CompactionOptions options_;
  const int level_;
  const int output_level_;
  const std::array<FileList, 2> inputs_;
  const FileList grandparents_;
  const bool manual_;
  const double score_;
  std::string smallest_user_key_;
  std::string largest_user_key_;
};

// Picks the most needed compaction of v, or null when no level scores >= 1
// or every candidate is blocked by files already being compacted. Levels are
// tried by descending score. L0 compacts all of its files that overlap the
// oldest idle L0 file transitively, and only while no other L0 compaction
// runs. From L1 the file whose overlap with the next level is smallest
// relative to its own size wins; files being compacted, and files whose
// overlap below includes one, are passed over.
std::unique_ptr<Compaction> PickCompaction(const Version& v, const CompactionOptions& o);

// For CompactRange: the files of level whose user keys meet [*begin, *end]
// (null: unbounded), expanded so no user key is split, compacted into the
// next level (L0: into the base level; the last level: into itself). Null
// when level holds no such file; then *blocked (if given) says whether that
// was because files it needs are being compacted (wait and retry) rather
// than because there is nothing to do. Callers loop over the levels.
std::unique_ptr<Compaction> PickRangeCompaction(const Version& v, const CompactionOptions& o,
                                                int level, const std::string* begin,
                                                const std::string* end,
                                                bool* blocked = nullptr);

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_COMPACTION_H_
