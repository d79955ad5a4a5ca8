#include "vlog/punch_plan.h"

#include <algorithm>

#include "io/aligned_buffer.h"

namespace cairn::vlog {

namespace {

// Appends r to *runs (ascending), merging it into the last run when they
// overlap or touch.
void AppendMerged(const PunchRun& r, std::vector<PunchRun>* runs) {
  if (!runs->empty() && r.begin <= runs->back().end) {
    runs->back().end = std::max(runs->back().end, r.end);
  } else {
    runs->push_back(r);
  }
}

}  // namespace

std::vector<PunchRun> MergedRuns(std::vector<PunchRun> runs) {
  std::sort(runs.begin(), runs.end(),
            [](const PunchRun& a, const PunchRun& b) { return a.begin < b.begin; });
  std::vector<PunchRun> out;
  out.reserve(runs.size());
  for (const PunchRun& r : runs) AppendMerged(r, &out);
  return out;
}

std::vector<PunchRun> SubtractRuns(absl::Span<const PunchRun> runs,
                                   absl::Span<const PunchRun> punched) {
  std::vector<PunchRun> out;
  size_t p = 0;
  for (const PunchRun& r : runs) {
    uint64_t at = r.begin;
    while (p < punched.size() && punched[p].end <= at) ++p;
    for (size_t q = p; q < punched.size() && punched[q].begin < r.end; ++q) {
      if (punched[q].begin > at) out.push_back({at, punched[q].begin});
      at = std::max(at, punched[q].end);
    }
    if (at < r.end) out.push_back({at, r.end});
  }
  return out;
}

std::vector<PunchRun> PlanPunchRuns(absl::Span<const PunchRun> dead,
                                    absl::Span<const PunchRun> punched, uint64_t min_gain) {
  // Their union with the punched runs, region by region: a region gains
  // what its whole blocks free beyond those the punched runs inside it
  // freed already.
  std::vector<PunchRun> all;
  all.reserve(dead.size() + punched.size());
  std::merge(dead.begin(), dead.end(), punched.begin(), punched.end(), std::back_inserter(all),
             [](const PunchRun& a, const PunchRun& b) { return a.begin < b.begin; });
  std::vector<PunchRun> regions;
  for (const PunchRun& r : all) AppendMerged(r, &regions);
  std::vector<PunchRun> out;
  size_t p = 0;
  for (const PunchRun& region : regions) {
    const size_t first = p;
    uint64_t before = 0;
    for (; p < punched.size() && punched[p].begin < region.end; ++p) {
      before += PunchedBlockBytes({punched[p]});
    }
    if (PunchedBlockBytes({region}) < before + std::max<uint64_t>(min_gain, 1)) continue;
    for (const PunchRun& piece : SubtractRuns({region}, punched.subspan(first, p - first))) {
      out.push_back(piece);
    }
  }
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> PunchRanges(absl::Span<const PunchRun> merged,
                                                       absl::Span<const PunchRun> added) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  size_t m = 0;
  for (const PunchRun& a : added) {
    while (m < merged.size() && merged[m].end < a.end) ++m;
    if (m == merged.size() || merged[m].begin > a.begin) continue;  // not covered: punch nothing
    const PunchRun& region = merged[m];
    // The whole blocks of the region that overlap the added run.
    const uint64_t begin = std::max(io::AlignUp(region.begin, kPunchBlockSize),
                                    io::AlignDown(a.begin, kPunchBlockSize));
    const uint64_t end = std::min(io::AlignDown(region.end, kPunchBlockSize),
                                  io::AlignUp(a.end, kPunchBlockSize));
    if (end <= begin) continue;
    if (!out.empty() && begin <= out.back().first + out.back().second) {
      const uint64_t last = std::max(out.back().first + out.back().second, end);
      out.back().second = last - out.back().first;
    } else {
      out.emplace_back(begin, end - begin);
    }
  }
  return out;
}

}  // namespace cairn::vlog
