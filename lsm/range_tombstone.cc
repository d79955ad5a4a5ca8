#include "lsm/range_tombstone.h"

#include <algorithm>
#include <map>

namespace cairn::lsm {

FragmentedRangeTombstones::FragmentedRangeTombstones(
    const std::vector<RangeTombstone>& tombstones) {
  std::vector<const RangeTombstone*> sorted;
  std::vector<std::string_view> points;
  for (const RangeTombstone& t : tombstones) {
    if (t.begin >= t.end) continue;
    sorted.push_back(&t);
    points.push_back(t.begin);
    points.push_back(t.end);
  }
  num_tombstones_ = sorted.size();
  if (sorted.empty()) return;
  std::sort(sorted.begin(), sorted.end(),
            [](const RangeTombstone* a, const RangeTombstone* b) { return a->begin < b->begin; });
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  // A sweep over the cut points: active holds the tombstones spanning the
  // current piece, by end, so those ending at a point leave first.
  std::multimap<std::string_view, SequenceNumber> active;
  size_t next = 0;
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    const std::string_view lo = points[i];
    while (!active.empty() && active.begin()->first <= lo) active.erase(active.begin());
    while (next < sorted.size() && sorted[next]->begin <= lo) {
      active.emplace(sorted[next]->end, sorted[next]->seq);
      ++next;
    }
    if (active.empty()) continue;
    Fragment f;
    f.begin.assign(lo);
    f.end.assign(points[i + 1]);
    for (const auto& [end, seq] : active) f.seqs.push_back(seq);
    std::sort(f.seqs.begin(), f.seqs.end(), std::greater<>());
    f.seqs.erase(std::unique(f.seqs.begin(), f.seqs.end()), f.seqs.end());
    // Adjacent pieces with the same sequences are one piece.
    if (!fragments_.empty() && fragments_.back().end == f.begin &&
        fragments_.back().seqs == f.seqs) {
      fragments_.back().end = std::move(f.end);
    } else {
      fragments_.push_back(std::move(f));
    }
  }
}

int FragmentedRangeTombstones::FindFragment(std::string_view user_key, int hint) const {
  const int n = static_cast<int>(fragments_.size());
  auto holds = [&](int i) {
    return fragments_[i].begin <= user_key && user_key < fragments_[i].end;
  };
  if (hint >= 0 && hint < n) {
    if (holds(hint)) return hint;
    if (hint + 1 < n && holds(hint + 1)) return hint + 1;
    if (hint > 0 && holds(hint - 1)) return hint - 1;
  }
  // The last fragment whose begin <= user_key.
  auto it = std::upper_bound(
      fragments_.begin(), fragments_.end(), user_key,
      [](std::string_view k, const Fragment& f) { return k < std::string_view(f.begin); });
  if (it == fragments_.begin()) return -1;
  const int i = static_cast<int>(it - fragments_.begin()) - 1;
  return user_key < fragments_[i].end ? i : -1;
}

SequenceNumber FragmentedRangeTombstones::NewestAtOrBelow(int i, SequenceNumber snapshot) const {
  const std::vector<SequenceNumber>& seqs = fragments_[i].seqs;
  // Newest first: the first one at or below the snapshot.
  auto it = std::lower_bound(seqs.begin(), seqs.end(), snapshot, std::greater<>());
  return it == seqs.end() ? 0 : *it;
}

SequenceNumber FragmentedRangeTombstones::MaxCoveringSeq(std::string_view user_key,
                                                         SequenceNumber snapshot) const {
  if (fragments_.empty()) return 0;
  const int i = FindFragment(user_key);
  return i < 0 ? 0 : NewestAtOrBelow(i, snapshot);
}

std::vector<RangeTombstone> FragmentedRangeTombstones::ToTombstones(std::string_view lower,
                                                                    std::string_view upper) const {
  std::vector<RangeTombstone> out;
  for (const Fragment& f : fragments_) {
    std::string_view b = f.begin, e = f.end;
    if (!lower.empty() && b < lower) b = lower;
    if (!upper.empty() && e > upper) e = upper;
    if (b >= e) continue;
    for (SequenceNumber seq : f.seqs) out.push_back({std::string(b), std::string(e), seq});
  }
  return out;
}

}  // namespace cairn::lsm
