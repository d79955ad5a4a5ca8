// VictimPicker chooses which value-log segments the garbage collector
// relocates next, from the exact per-segment garbage counts that compactions
// record in the manifest (vlog::SegmentSet); it never scans segments.
//
// Rule (cost-benefit, as in the log-structured file system):
//   u     = live fraction = 1 - garbage_ratio
//   age   = how old the segment is: newest_id - segment_id by default
//           (ids grow monotonically), or a caller-provided age
//   score = (1 - u) * (1 + age) / (1 + u)
// The benefit is the space freed (1 - u) weighted by age (cold data is
// unlikely to turn into garbage soon, so moving it now is worth more); the
// cost is reading the segment (1) and writing its live part (u). The "+ 1"
// keeps a segment of age 0 comparable instead of scoring it 0.
//
// Candidates are sealed, not obsolete, not excluded, and have
// garbage_ratio() >= min_garbage_ratio. The segment receiving fresh writes
// is never sealed, so it is never a candidate. Ties go to the higher garbage
// ratio, then the older (lower) id. Why the default floor is 0.5:
// docs/gc.md.
//
// PickSmall is a second rule, apart from garbage: it merges small sealed
// segments (a flush of a few values, a short session's) into one, so that
// their files do not pile up where no garbage would ever make them victims
// (docs/gc.md, "Merging small segments").
//
// Thread safety: a value type; const methods may run concurrently.
#ifndef CAIRN_GC_VICTIM_PICKER_H_
#define CAIRN_GC_VICTIM_PICKER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "vlog/segment_set.h"

namespace cairn::gc {

// A segment under target_size / kSmallSegmentFraction is small (PickSmall).
inline constexpr uint64_t kSmallSegmentFraction = 16;
// PickSmall merges only once there are this many small segments: the files
// a few sessions leave cost little, while each merge rewrites what it
// takes, and under steady writes (flush segments of the target size) there
// are never this many.
inline constexpr size_t kMinSmallSegmentsToMerge = 8;
// Merge outputs stop being small at a sixteenth of the target, so short
// runs of mid-sized values would leave one such file per sixteenth of the
// target (80 of them after 10,000 runs of 8 KiB). When the sealed segments
// outnumber kCrowdedBase plus kCrowdedPerTarget per target size of their
// live bytes, segments under target_size / kCrowdedFraction count as small
// too, so the count stays proportional to the live data. Sustained
// overwrites keep far fewer segments than that (their segments are near
// the target size), and a merge comes only when no garbage victim is due.
inline constexpr size_t kCrowdedBase = 24;
inline constexpr size_t kCrowdedPerTarget = 2;
inline constexpr uint64_t kCrowdedFraction = 2;
// A crowded merge takes at most target_size / kCrowdedBudgetFraction, the
// smallest segments first: a long job that a close cuts short leaves its
// copies as garbage, and short sessions would cut every one.
inline constexpr uint64_t kCrowdedBudgetFraction = 4;

struct VictimPickerOptions {
  // Segments with a smaller garbage share are never picked. In [0, 1].
  double min_garbage_ratio = 0.5;
};

// One segment the picker considered worth collecting.
struct VictimCandidate {
  uint64_t segment_id = 0;
  uint64_t size = 0;        // bytes the job reads
  uint64_t live_bytes = 0;  // bytes the job writes (at most)
  double garbage_ratio = 0;
  double age = 0;
  double score = 0;
};

struct PickRequest {
  // Typically SegmentSet::Segments(); the newest id among them (sealed or
  // not) is the reference for the default age.
  absl::Span<const vlog::SegmentInfo> segments;
  // Ids never to pick (segments a running job already holds, say).
  absl::flat_hash_set<uint64_t> exclude;
  // Age of a segment; when null, newest_id - segment_id.
  std::function<double(const vlog::SegmentInfo&)> age;
  // Pick: stop before the victims' total size would exceed this many bytes,
  // but always return the best one. 0 means just the best one.
  uint64_t byte_budget = 0;
};

class VictimPicker {
 public:
  explicit VictimPicker(VictimPickerOptions options = {}) : options_(options) {}

  // InvalidArgument unless min_garbage_ratio is in [0, 1].
  static absl::Status Validate(const VictimPickerOptions& options);

  // Every candidate, best score first.
  std::vector<VictimCandidate> Rank(const PickRequest& request) const;

  // The best candidate; nullopt when there is none.
  std::optional<VictimCandidate> PickOne(const PickRequest& request) const;

  // The best candidates in score order within request.byte_budget (see
  // PickRequest); empty when there is none.
  std::vector<VictimCandidate> Pick(const PickRequest& request) const;

  // Small segments to merge into one GC output: none while request holds
  // fewer than kMinSmallSegmentsToMerge candidates under target_size /
  // kSmallSegmentFraction (sealed, not obsolete, not excluded, whatever
  // their garbage), else the oldest (lowest id) first while their total
  // stays within target_size, which at least kSmallSegmentFraction of them
  // always fit. When there is no such merge and the segments are crowded
  // (kCrowdedBase), those under target_size / kCrowdedFraction are taken,
  // the smallest first, within target_size / kCrowdedBudgetFraction (at
  // least two). Ignores min_garbage_ratio and request.byte_budget.
  static std::vector<VictimCandidate> PickSmall(const PickRequest& request, uint64_t target_size);

  // The score of the rule above for a garbage ratio and an age.
  static double Score(double garbage_ratio, double age);

  const VictimPickerOptions& options() const { return options_; }

 private:
  VictimPickerOptions options_;
};

}  // namespace cairn::gc

#endif  // CAIRN_GC_VICTIM_PICKER_H_
