#include "vlog/segment_set.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/status_macros.h"
#include "vlog/punch_plan.h"

namespace cairn::vlog {

namespace {

uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

}  // namespace

double SegmentInfo::garbage_ratio() const {
  if (!sealed || size == 0) return 0.0;
  return std::min(1.0, static_cast<double>(garbage_bytes) / static_cast<double>(size));
}

uint64_t SegmentInfo::live_bytes() const {
  return size - std::min(size, garbage_bytes);
}

absl::Status SegmentSet::Apply(const SegmentEdit& edit) {
  absl::MutexLock lock(&mu_);
  return ApplyLocked(edit);
}

absl::Status SegmentSet::ApplyLocked(const SegmentEdit& edit) {
  // Changes go to a copy of the segments they touch, committed only when
  // every change passed, so a failed edit leaves the set as it was.
  absl::flat_hash_map<uint64_t, std::optional<SegmentInfo>> touched;
  absl::flat_hash_map<uint64_t, std::vector<PunchRun>> touched_runs;
  auto entry = [&](uint64_t id) -> std::optional<SegmentInfo>& {
    auto [it, inserted] = touched.try_emplace(id);
    if (inserted) {
      auto found = segments_.find(id);
      if (found != segments_.end()) it->second = found->second;
    }
    return it->second;
  };
  for (const SegmentEdit::Change& c : edit.changes()) {
    auto refuse = [&](absl::string_view why) {
      return absl::FailedPreconditionError(absl::StrCat(
          "segment set: ", SegmentEdit::ChangeDebugString(c), ": ", why));
    };
    std::optional<SegmentInfo>& info = entry(c.segment_id);
    switch (c.tag) {
      case SegmentEditTag::kNewSegment:
        if (info.has_value()) return refuse("segment already exists");
        touched_runs[c.segment_id].clear();
        info = SegmentInfo{};
        info->segment_id = c.segment_id;
        info->kind = c.kind;
        break;
      case SegmentEditTag::kSealSegment:
        if (!info.has_value()) return refuse("no such segment");
        if (info->sealed) {
          if (info->size == c.bytes && info->records == c.records) break;
          return refuse(absl::StrCat("already sealed with size ", info->size, " records ",
                                     info->records));
        }
        info->sealed = true;
        info->size = c.bytes;
        info->records = c.records;
        info->synced_size = 0;  // the size bounds a sealed segment
        break;
      case SegmentEditTag::kSyncedTo:
        // A floor logged as GC removed the segment bounds nothing any more;
        // a sealed segment's size already bounds it; a floor only rises.
        if (!info.has_value()) break;
        if (!info->sealed) info->synced_size = std::max(info->synced_size, c.bytes);
        break;
      case SegmentEditTag::kAddGarbage:
        if (!info.has_value()) break;  // removed earlier; see the header
        info->garbage_bytes = SaturatingAdd(info->garbage_bytes, c.bytes);
        info->garbage_records = SaturatingAdd(info->garbage_records, c.records);
        break;
      case SegmentEditTag::kMarkObsolete:
        if (!info.has_value()) return refuse("no such segment");
        info->obsolete = true;
        break;
      case SegmentEditTag::kRemoveSegment:
        if (!info.has_value()) return refuse("no such segment");
        if (!info->obsolete) return refuse("segment is not obsolete");
        info.reset();
        touched_runs[c.segment_id].clear();
        break;
      case SegmentEditTag::kPunchRuns: {
        if (!info.has_value()) return refuse("no such segment");
        if (!info->sealed) return refuse("segment is not sealed");
        if (c.runs.empty()) return refuse("no runs");
        uint64_t prev_end = kSegmentHeaderSize;
        for (const PunchRun& r : c.runs) {
          if (r.begin < prev_end || r.end <= r.begin || r.end > info->size) {
            return refuse(absl::StrCat("run ", r.begin, "-", r.end,
                                       " is out of order or outside the records (", kSegmentHeaderSize,
                                       "-", info->size, ")"));
          }
          prev_end = r.end;
        }
        auto [it, inserted] = touched_runs.try_emplace(c.segment_id);
        if (inserted) {
          if (auto found = runs_.find(c.segment_id); found != runs_.end()) it->second = found->second;
        }
        it->second.insert(it->second.end(), c.runs.begin(), c.runs.end());
        it->second = MergedRuns(std::move(it->second));
        info->punched_bytes = PunchedBlockBytes(it->second);
        break;
      }
      default:
        return refuse("unknown change");
    }
  }
  for (auto& [id, info] : touched) {
    auto it = segments_.find(id);
    if (it != segments_.end()) Count(it->second, /*add=*/false, &totals_);
    if (info.has_value()) {
      Count(*info, /*add=*/true, &totals_);
      segments_[id] = *info;
    } else if (it != segments_.end()) {
      segments_.erase(it);
    }
  }
  for (auto& [id, runs] : touched_runs) {
    if (runs.empty()) {
      runs_.erase(id);
    } else {
      runs_[id] = std::move(runs);
    }
  }
  return absl::OkStatus();
}

void SegmentSet::Count(const SegmentInfo& info, bool add, Totals* t) {
  // Unsigned arithmetic wraps, so subtracting what was added restores it.
  const uint64_t one = add ? 1 : ~uint64_t{0};
  auto apply = [add](uint64_t* field, uint64_t v) { *field = add ? *field + v : *field - v; };
  t->segments += one;
  if (info.sealed) t->sealed_segments += one;
  apply(&t->bytes, info.size);
  if (info.obsolete) {
    t->obsolete_segments += one;
    apply(&t->obsolete_bytes, info.size);
    return;
  }
  apply(&t->garbage_bytes, info.garbage_bytes);
  apply(&t->punched_bytes, info.punched_bytes);
  if (info.sealed) apply(&t->live_bytes, info.live_bytes());
}

absl::Status SegmentSet::DecodeAndApply(uint32_t tag, std::string_view payload,
                                        SegmentEdit* decoded) {
  SegmentEdit edit;
  CAIRN_RETURN_IF_ERROR(edit.DecodeRecord(tag, payload));
  absl::Status s = Apply(edit);
  if (!s.ok()) {
    return absl::DataLossError(
        absl::StrCat("manifest contradicts the value-log segment set: ", s.message()));
  }
  if (decoded != nullptr) *decoded = std::move(edit);
  return absl::OkStatus();
}

std::vector<ExtensionRecord> SegmentSet::Snapshot() const {
  SegmentEdit edit;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, info] : segments_) {
      edit.AddSegment(id, info.kind);
      if (info.sealed) edit.SealSegment(id, info.size, info.records);
      if (!info.sealed && info.synced_size != 0) edit.SyncedTo(id, info.synced_size);
      if (info.garbage_bytes != 0 || info.garbage_records != 0) {
        edit.AddGarbage(id, info.garbage_bytes, info.garbage_records);
      }
      if (auto r = runs_.find(id); r != runs_.end()) edit.PunchRuns(id, r->second);
      if (info.obsolete) edit.MarkObsolete(id);
    }
  }
  return edit.Encode();
}

std::optional<SegmentInfo> SegmentSet::Get(uint64_t segment_id) const {
  absl::MutexLock lock(&mu_);
  auto it = segments_.find(segment_id);
  if (it == segments_.end()) return std::nullopt;
  return it->second;
}

std::vector<PunchRun> SegmentSet::PunchedRuns(uint64_t segment_id) const {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(segment_id);
  if (it == runs_.end()) return {};
  return it->second;
}

bool SegmentSet::Contains(uint64_t segment_id) const {
  absl::MutexLock lock(&mu_);
  return segments_.contains(segment_id);
}

std::vector<SegmentInfo> SegmentSet::Segments() const {
  absl::MutexLock lock(&mu_);
  std::vector<SegmentInfo> out;
  out.reserve(segments_.size());
  for (const auto& [id, info] : segments_) out.push_back(info);
  return out;
}

size_t SegmentSet::size() const {
  absl::MutexLock lock(&mu_);
  return segments_.size();
}

SegmentSet::Totals SegmentSet::GetTotals() const {
  absl::MutexLock lock(&mu_);
  return totals_;
}

std::string SegmentSet::DebugString() const {
  std::string out;
  for (const SegmentInfo& s : Segments()) {
    absl::StrAppendFormat(&out, "segment %d %s %s size %d records %d garbage %d bytes %d records"
                                " (%.1f%%)",
                          s.segment_id, SegmentKindName(s.kind),
                          s.obsolete ? "obsolete" : (s.sealed ? "sealed" : "active"), s.size,
                          s.records, s.garbage_bytes, s.garbage_records,
                          100.0 * s.garbage_ratio());
    if (s.punched_bytes > 0) absl::StrAppendFormat(&out, " punched %d bytes", s.punched_bytes);
    out.push_back('\n');
  }
  const Totals t = GetTotals();
  absl::StrAppendFormat(&out,
                        "total %d segments (%d sealed, %d obsolete), %d bytes, %d live, "
                        "%d garbage, %d obsolete\n",
                        t.segments, t.sealed_segments, t.obsolete_segments, t.bytes,
                        t.live_bytes, t.garbage_bytes, t.obsolete_bytes);
  return out;
}

bool SegmentSet::operator==(const SegmentSet& other) const {
  if (this == &other) return true;
  if (Segments() != other.Segments()) return false;
  for (const SegmentInfo& s : Segments()) {
    if (PunchedRuns(s.segment_id) != other.PunchedRuns(s.segment_id)) return false;
  }
  return true;
}

}  // namespace cairn::vlog
