#include "gc/victim_picker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cairn::gc {

absl::Status VictimPicker::Validate(const VictimPickerOptions& options) {
  // Written so that NaN fails too.
  if (!(options.min_garbage_ratio >= 0.0 && options.min_garbage_ratio <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "min_garbage_ratio ", options.min_garbage_ratio, " is outside [0, 1]"));
  }
  return absl::OkStatus();
}

double VictimPicker::Score(double garbage_ratio, double age) {
  const double u = 1.0 - std::clamp(garbage_ratio, 0.0, 1.0);
  return (1.0 - u) * (1.0 + std::max(age, 0.0)) / (1.0 + u);
}

std::vector<VictimCandidate> VictimPicker::Rank(const PickRequest& request) const {
  uint64_t newest_id = 0;
  for (const vlog::SegmentInfo& s : request.segments) newest_id = std::max(newest_id, s.segment_id);

  std::vector<VictimCandidate> out;
  for (const vlog::SegmentInfo& s : request.segments) {
    // Unsealed segments (the one taking fresh writes, a GC output being
    // written) have no final size and may still gain live records.
    if (!s.sealed || s.obsolete || request.exclude.contains(s.segment_id)) continue;
    const double ratio = s.garbage_ratio();
    if (s.garbage_bytes == 0 || ratio < options_.min_garbage_ratio) continue;
    VictimCandidate c;
    c.segment_id = s.segment_id;
    c.size = s.size;
    c.live_bytes = s.live_bytes();
    c.garbage_ratio = ratio;
    c.age = request.age ? request.age(s) : static_cast<double>(newest_id - s.segment_id);
    c.score = Score(ratio, c.age);
    out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const VictimCandidate& a, const VictimCandidate& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.garbage_ratio != b.garbage_ratio) return a.garbage_ratio > b.garbage_ratio;
    return a.segment_id < b.segment_id;
  });
  return out;
}

std::optional<VictimCandidate> VictimPicker::PickOne(const PickRequest& request) const {
  std::vector<VictimCandidate> ranked = Rank(request);
  if (ranked.empty()) return std::nullopt;
  return ranked.front();
}

std::vector<VictimCandidate> VictimPicker::Pick(const PickRequest& request) const {
  std::vector<VictimCandidate> ranked = Rank(request);
  if (ranked.empty()) return ranked;
  std::vector<VictimCandidate> out = {ranked.front()};
  uint64_t total = ranked.front().size;
  for (size_t i = 1; i < ranked.size(); ++i) {
    // Greedy in score order: a smaller, worse segment may still fit after
    // a larger one did not; skipping keeps the budget a hard bound.
    if (total + ranked[i].size > request.byte_budget) continue;
    total += ranked[i].size;
    out.push_back(ranked[i]);
  }
  return out;
}

std::vector<VictimCandidate> VictimPicker::PickSmall(const PickRequest& request,
                                                    uint64_t target_size) {
  uint64_t newest_id = 0, sealed = 0, live = 0;
  for (const vlog::SegmentInfo& s : request.segments) {
    newest_id = std::max(newest_id, s.segment_id);
    if (!s.sealed || s.obsolete) continue;
    ++sealed;
    live += s.live_bytes();
  }
  // The candidates under small_below, ordered by less, taken while they fit
  // in budget; none unless at least min_count qualify and two fit.
  const auto pick = [&](uint64_t small_below, size_t min_count, uint64_t budget,
                        auto less) -> std::vector<VictimCandidate> {
    std::vector<VictimCandidate> small;
    for (const vlog::SegmentInfo& s : request.segments) {
      // The active segment is unsealed; a GC output being written is
      // claimed (excluded) or unsealed.
      if (!s.sealed || s.obsolete || request.exclude.contains(s.segment_id)) continue;
      if (s.size >= small_below) continue;
      VictimCandidate c;
      c.segment_id = s.segment_id;
      c.size = s.size;
      c.live_bytes = s.live_bytes();
      c.garbage_ratio = s.garbage_ratio();
      c.age = request.age ? request.age(s) : static_cast<double>(newest_id - s.segment_id);
      c.score = Score(c.garbage_ratio, c.age);
      small.push_back(c);
    }
    if (small.size() < min_count) return {};
    std::sort(small.begin(), small.end(), less);
    std::vector<VictimCandidate> out;
    uint64_t total = 0;
    for (const VictimCandidate& c : small) {
      // In order, no skipping: the ones left out come after.
      if (total + c.size > budget) break;
      total += c.size;
      out.push_back(c);
    }
    if (out.size() < 2) return {};  // one segment merged alone frees nothing
    return out;
  };
  // Oldest first: the merged output takes a new, higher id, so a later
  // merge reaches the segments it did not take before their output.
  const auto oldest = [](const VictimCandidate& a, const VictimCandidate& b) {
    return a.segment_id < b.segment_id;
  };
  std::vector<VictimCandidate> out =
      pick(target_size / kSmallSegmentFraction, kMinSmallSegmentsToMerge, target_size, oldest);
  const uint64_t live_targets = target_size == 0 ? 0 : (live + target_size - 1) / target_size;
  if (!out.empty() || sealed <= kCrowdedBase + kCrowdedPerTarget * live_targets) return out;
  // Crowded: the smallest first, a short job (kCrowdedBudgetFraction), so
  // that a session that closes soon after still sees it through.
  return pick(target_size / kCrowdedFraction, 2, target_size / kCrowdedBudgetFraction,
              [](const VictimCandidate& a, const VictimCandidate& b) {
                return a.size != b.size ? a.size < b.size : a.segment_id < b.segment_id;
              });
}

}  // namespace cairn::gc
