#include "lsm/compaction.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cairn::lsm {
namespace {

constexpr uint64_t kMaxDefaultBaseBytes = uint64_t{256} << 20;

int Multiplier(const CompactionOptions& o) { return std::max(2, o.multiplier); }

uint64_t TotalBytes(const FileList& files) {
  uint64_t total = 0;
  for (const auto& f : files) total += f->file_size;
  return total;
}

bool AnyBeingCompacted(const FileList& files) {
  return std::any_of(files.begin(), files.end(),
                     [](const auto& f) { return f->being_compacted; });
}

uint64_t IdleBytes(const FileList& files) {
  uint64_t total = 0;
  for (const auto& f : files) {
    if (!f->being_compacted) total += f->file_size;
  }
  return total;
}

// The user-key range [*lo, *hi] covered by the files of a and b.
// REQUIRES: at least one file.
void UserKeyRange(const FileList& a, const FileList& b, std::string_view* lo,
                  std::string_view* hi) {
  bool first = true;
  for (const FileList* list : {&a, &b}) {
    for (const auto& f : *list) {
      if (first || f->smallest_user_key() < *lo) *lo = f->smallest_user_key();
      if (first || f->largest_user_key() > *hi) *hi = f->largest_user_key();
      first = false;
    }
  }
}

// The files of level whose user-key range meets [*lo, *hi] (a null bound is
// unbounded), in level order. Levels from L1 are searched by bisection.
FileList Overlapping(const Version& v, int level, const std::string_view* lo,
                     const std::string_view* hi) {
  const FileList& files = v.files(level);
  FileList result;
  auto before_lo = [&](const FileMetaData& f) { return lo != nullptr && f.largest_user_key() < *lo; };
  auto after_hi = [&](const FileMetaData& f) { return hi != nullptr && f.smallest_user_key() > *hi; };
  if (level == 0) {
    for (const auto& f : files) {
      if (!before_lo(*f) && !after_hi(*f)) result.push_back(f);
    }
    return result;
  }
  // Largest user keys do not decrease along a level.
  auto it = std::partition_point(files.begin(), files.end(),
                                 [&](const auto& f) { return before_lo(*f); });
  for (; it != files.end() && !after_hi(**it); ++it) result.push_back(*it);
  return result;
}

// Grows files (of level) until no file of level outside it shares a user
// key with it: on L0 the transitive overlap closure; from L1 the neighbours
// that hold the boundary user keys.
FileList ExpandToCleanCut(const Version& v, int level, FileList files) {
  while (!files.empty()) {
    std::string_view lo, hi;
    UserKeyRange(files, {}, &lo, &hi);
    FileList grown = Overlapping(v, level, &lo, &hi);
    if (grown.size() == files.size()) break;
    files = std::move(grown);
  }
  return files;
}

// The compaction of inputs (files of level) into output_level, or null when
// a file it would need is being compacted. output_level == level compacts
// the last level in place.
std::unique_ptr<Compaction> Build(const Version& v, const CompactionOptions& o, int level,
                                  int output_level, FileList inputs, bool manual,
                                  double score) {
  if (AnyBeingCompacted(inputs)) return nullptr;
  std::string_view lo, hi;
  UserKeyRange(inputs, {}, &lo, &hi);
  FileList outputs;
  if (output_level != level) {
    outputs = ExpandToCleanCut(v, output_level, Overlapping(v, output_level, &lo, &hi));
    if (AnyBeingCompacted(outputs)) return nullptr;
  }
  FileList grandparents;
  if (output_level + 1 < kNumLevels) {
    UserKeyRange(inputs, outputs, &lo, &hi);
    grandparents = Overlapping(v, output_level + 1, &lo, &hi);
  }
  return std::make_unique<Compaction>(o, level, output_level, std::move(inputs),
                                      std::move(outputs), std::move(grandparents), manual,
                                      score);
}

std::unique_ptr<Compaction> PickLevel0(const Version& v, const CompactionOptions& o,
                                       int base_level, double score) {
  const FileList& files = v.files(0);
  // One L0 compaction at a time: a second one could move newer data below
  // older data that the first still holds in L0.
  if (files.empty() || AnyBeingCompacted(files)) return nullptr;
  // files are newest first; start from the oldest so data leaves L0 in
  // order, and take every file that overlaps it transitively.
  FileList inputs = ExpandToCleanCut(v, 0, {files.back()});
  return Build(v, o, 0, base_level, std::move(inputs), /*manual=*/false, score);
}

// From L1: the idle file whose next-level overlap is smallest relative to
// its own size (RocksDB's kMinOverlappingRatio), so compaction rewrites the
// fewest bytes per byte it pushes down.
std::unique_ptr<Compaction> PickLevel(const Version& v, const CompactionOptions& o, int level,
                                      double score) {
  std::unique_ptr<Compaction> best;
  double best_ratio = std::numeric_limits<double>::infinity();
  for (const auto& f : v.files(level)) {
    if (f->being_compacted) continue;
    std::unique_ptr<Compaction> c =
        Build(v, o, level, level + 1, ExpandToCleanCut(v, level, {f}), /*manual=*/false, score);
    if (c == nullptr) continue;
    const double ratio = static_cast<double>(c->InputBytes(1)) /
                         static_cast<double>(std::max<uint64_t>(1, c->InputBytes(0)));
    if (ratio < best_ratio) {
      best_ratio = ratio;
      best = std::move(c);
    }
  }
  return best;
}

}  // namespace

uint64_t BaseLevelBytes(const CompactionOptions& o) {
  if (o.max_bytes_for_level_base > 0) return o.max_bytes_for_level_base;
  return std::max<uint64_t>(1, std::min(o.target_file_size * 10, kMaxDefaultBaseBytes));
}

LevelShape ComputeLevelShape(const Version& v, const CompactionOptions& o) {
  LevelShape shape;
  const uint64_t multiplier = Multiplier(o);
  const uint64_t base_max = BaseLevelBytes(o);
  const uint64_t base_min = base_max / multiplier;

  uint64_t max_level_bytes = 0;
  int first_non_empty = -1;
  for (int level = 1; level < kNumLevels; ++level) {
    const uint64_t bytes = v.LevelBytes(level);
    if (bytes > 0 && first_non_empty < 0) first_non_empty = level;
    max_level_bytes = std::max(max_level_bytes, bytes);
  }

  uint64_t base_bytes = base_max;
  if (max_level_bytes == 0) {
    // An empty tree: L0 compacts straight into the last level.
    shape.base_level = kNumLevels - 1;
  } else {
    // What the first non-empty level would hold if the largest level were
    // the last level's target.
    uint64_t cur = max_level_bytes;
    for (int level = kNumLevels - 2; level >= first_non_empty; --level) cur /= multiplier;
    shape.base_level = first_non_empty;
    if (cur <= base_min) {
      base_bytes = base_min + 1;
    } else {
      // Open a new level above while the first one would be too big.
      while (shape.base_level > 1 && cur > base_max) {
        --shape.base_level;
        cur /= multiplier;
      }
      base_bytes = std::min(cur, base_max);
    }
  }
  uint64_t target = base_bytes;
  for (int level = shape.base_level; level < kNumLevels; ++level) {
    if (level > shape.base_level) {
      target = target > std::numeric_limits<uint64_t>::max() / multiplier
                   ? std::numeric_limits<uint64_t>::max()
                   : target * multiplier;
    }
    // No level below the base size: a thin L1+ would outscore L0 and let it
    // fill up and stall writes.
    shape.target_bytes[level] = std::max(target, base_max);
  }

  int idle_l0 = 0;
  for (const auto& f : v.files(0)) idle_l0 += f->being_compacted ? 0 : 1;
  shape.score[0] = static_cast<double>(idle_l0) / std::max(1, o.level0_trigger);
  for (int level = 1; level < kNumLevels - 1; ++level) {
    if (shape.target_bytes[level] == 0) continue;
    shape.score[level] = static_cast<double>(IdleBytes(v.files(level))) /
                         static_cast<double>(shape.target_bytes[level]);
  }
  return shape;
}

int BaseLevel(const Version& v, const CompactionOptions& o) {
  return ComputeLevelShape(v, o).base_level;
}

uint64_t EstimatePendingCompactionBytes(const Version& v, const CompactionOptions& o) {
  const LevelShape shape = ComputeLevelShape(v, o);
  uint64_t pending = 0;
  uint64_t carry = 0;  // bytes flowing into the next level
  const uint64_t l0_bytes = v.LevelBytes(0);
  if (v.NumFiles(0) >= static_cast<uint64_t>(std::max(1, o.level0_trigger)) ||
      l0_bytes >= shape.target_bytes[shape.base_level]) {
    pending += l0_bytes;
    carry = l0_bytes;
  }
  for (int level = shape.base_level; level < kNumLevels - 1; ++level) {
    const uint64_t bytes = v.LevelBytes(level) + carry;
    carry = 0;
    if (bytes <= shape.target_bytes[level]) continue;
    const uint64_t excess = bytes - shape.target_bytes[level];
    // Each byte pushed down rewrites its share of the next level too.
    const double fan_out =
        static_cast<double>(v.LevelBytes(level + 1)) / static_cast<double>(bytes);
    pending += static_cast<uint64_t>(static_cast<double>(excess) * (fan_out + 1.0));
    carry = excess;
  }
  return pending;
}

Compaction::Compaction(const CompactionOptions& options, int level, int output_level,
                       FileList level_inputs, FileList output_inputs, FileList grandparents,
                       bool manual, double score)
    : options_(options),
      level_(level),
      output_level_(output_level),
      inputs_{std::move(level_inputs), std::move(output_inputs)},
      grandparents_(std::move(grandparents)),
      manual_(manual),
      score_(score) {
  std::string_view lo, hi;
  if (!inputs_[0].empty() || !inputs_[1].empty()) UserKeyRange(inputs_[0], inputs_[1], &lo, &hi);
  smallest_user_key_ = std::string(lo);
  largest_user_key_ = std::string(hi);
}

bool Compaction::IsTrivialMove() const {
  if (level_ == output_level_) return false;
  if (manual_ && output_level_ == kNumLevels - 1) return false;
  return inputs_[0].size() == 1 && inputs_[1].empty() &&
         TotalBytes(grandparents_) <= MaxGrandparentOverlapBytes();
}

uint64_t Compaction::InputBytes(int which) const { return TotalBytes(inputs_[which]); }

uint64_t Compaction::MaxGrandparentOverlapBytes() const {
  return options_.target_file_size *
         static_cast<uint64_t>(std::max(1, options_.max_grandparent_overlap_factor));
}

void Compaction::AddInputDeletions(VersionEdit* edit) const {
  for (int which = 0; which < 2; ++which) {
    const int level = which == 0 ? level_ : output_level_;
    for (const auto& f : inputs_[which]) edit->RemoveFile(level, f->number);
  }
}

void Compaction::SetInputsBeingCompacted(bool value) const {
  for (const FileList& list : inputs_) {
    for (const auto& f : list) f->being_compacted = value;
  }
}

std::string Compaction::DebugString() const {
  std::string r = absl::StrFormat("L%d -> L%d%s:", level_, output_level_,
                                  manual_ ? " (manual)" : "");
  for (int which = 0; which < 2; ++which) {
    if (which == 1 && !inputs_[1].empty()) r += " +";
    for (const auto& f : inputs_[which]) absl::StrAppend(&r, " #", f->number);
  }
  absl::StrAppendFormat(&r, " (%u files, %u bytes, %u grandparent files)%s", NumInputFiles(),
                        InputBytes(), grandparents_.size(),
                        IsTrivialMove() ? " trivial move" : "");
  return r;
}

std::unique_ptr<Compaction> PickCompaction(const Version& v, const CompactionOptions& o) {
  const LevelShape shape = ComputeLevelShape(v, o);
  std::array<int, kNumLevels - 1> order;
  for (int i = 0; i < kNumLevels - 1; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return shape.score[a] > shape.score[b]; });
  for (int level : order) {
    const double score = shape.score[level];
    if (score < 1) break;
    std::unique_ptr<Compaction> c = level == 0 ? PickLevel0(v, o, shape.base_level, score)
                                               : PickLevel(v, o, level, score);
    if (c != nullptr) return c;
  }
  return nullptr;
}

std::unique_ptr<Compaction> PickRangeCompaction(const Version& v, const CompactionOptions& o,
                                                int level, const std::string* begin,
                                                const std::string* end, bool* blocked) {
  if (blocked != nullptr) *blocked = false;
  if (level < 0 || level >= kNumLevels) return nullptr;
  std::string_view lo, hi;
  if (begin != nullptr) lo = *begin;
  if (end != nullptr) hi = *end;
  FileList files = Overlapping(v, level, begin != nullptr ? &lo : nullptr,
                               end != nullptr ? &hi : nullptr);
  if (files.empty()) return nullptr;
  int output_level = std::min(level + 1, kNumLevels - 1);
  if (level == 0) {
    output_level = BaseLevel(v, o);
    if (AnyBeingCompacted(v.files(0))) {
      if (blocked != nullptr) *blocked = true;
      return nullptr;
    }
  }
  std::unique_ptr<Compaction> c =
      Build(v, o, level, output_level, ExpandToCleanCut(v, level, std::move(files)),
            /*manual=*/true, /*score=*/0);
  if (c == nullptr && blocked != nullptr) *blocked = true;
  return c;
}

}  // namespace cairn::lsm
