#include "vlog/segment_edit.h"

#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "io/aligned_buffer.h"
#include "io/coding.h"

namespace cairn::vlog {

void SegmentEdit::AddSegment(uint64_t segment_id, SegmentKind kind) {
  garbage_index_.erase(segment_id);
  changes_.push_back({SegmentEditTag::kNewSegment, segment_id, kind, 0, 0});
}

void SegmentEdit::SealSegment(uint64_t segment_id, uint64_t size, uint64_t records) {
  changes_.push_back({SegmentEditTag::kSealSegment, segment_id, SegmentKind::kFresh, size,
                      records});
}

void SegmentEdit::AddGarbage(uint64_t segment_id, uint64_t bytes, uint64_t records) {
  // Garbage deltas commute with sealing and marking obsolete, so merging a
  // delta into an earlier one of the same segment changes nothing a replay
  // sees; adding or removing the segment ends the merge window.
  auto it = garbage_index_.find(segment_id);
  if (it != garbage_index_.end()) {
    Change& c = changes_[it->second];
    c.bytes += bytes;
    c.records += records;
    return;
  }
  garbage_index_[segment_id] = changes_.size();
  changes_.push_back({SegmentEditTag::kAddGarbage, segment_id, SegmentKind::kFresh, bytes,
                      records});
}

void SegmentEdit::MarkObsolete(uint64_t segment_id) {
  changes_.push_back({SegmentEditTag::kMarkObsolete, segment_id, SegmentKind::kFresh, 0, 0});
}

void SegmentEdit::RemoveSegment(uint64_t segment_id) {
  garbage_index_.erase(segment_id);
  changes_.push_back({SegmentEditTag::kRemoveSegment, segment_id, SegmentKind::kFresh, 0, 0});
}

void SegmentEdit::PunchRuns(uint64_t segment_id, std::vector<PunchRun> runs) {
  Change c{SegmentEditTag::kPunchRuns, segment_id, SegmentKind::kFresh, 0, 0};
  c.runs = std::move(runs);
  changes_.push_back(std::move(c));
}

void SegmentEdit::SyncedTo(uint64_t segment_id, uint64_t size) {
  changes_.push_back({SegmentEditTag::kSyncedTo, segment_id, SegmentKind::kFresh, size, 0});
}

uint64_t PunchedBlockBytes(absl::Span<const PunchRun> runs) {
  uint64_t bytes = 0;
  for (const PunchRun& r : runs) {
    const uint64_t first = io::AlignUp(r.begin, kPunchBlockSize);
    const uint64_t last = io::AlignDown(r.end, kPunchBlockSize);
    if (last > first) bytes += last - first;
  }
  return bytes;
}

void SegmentEdit::Clear() {
  changes_.clear();
  garbage_index_.clear();
}

void SegmentEdit::EncodeTo(std::vector<ExtensionRecord>* records) const {
  for (const Change& c : changes_) {
    std::string payload;
    io::PutVarint64(&payload, c.segment_id);
    switch (c.tag) {
      case SegmentEditTag::kNewSegment:
        io::PutVarint32(&payload, static_cast<uint32_t>(c.kind));
        break;
      case SegmentEditTag::kSealSegment:
      case SegmentEditTag::kAddGarbage:
        io::PutVarint64(&payload, c.bytes);
        io::PutVarint64(&payload, c.records);
        break;
      case SegmentEditTag::kSyncedTo:
        io::PutVarint64(&payload, c.bytes);
        break;
      case SegmentEditTag::kMarkObsolete:
      case SegmentEditTag::kRemoveSegment:
        break;
      case SegmentEditTag::kPunchRuns: {
        io::PutVarint64(&payload, c.runs.size());
        uint64_t prev_end = 0;
        for (const PunchRun& r : c.runs) {
          io::PutVarint64(&payload, r.begin - prev_end);
          io::PutVarint64(&payload, r.end - r.begin);
          prev_end = r.end;
        }
        break;
      }
    }
    records->emplace_back(static_cast<uint32_t>(c.tag), std::move(payload));
  }
}

std::vector<ExtensionRecord> SegmentEdit::Encode() const {
  std::vector<ExtensionRecord> records;
  EncodeTo(&records);
  return records;
}

absl::Status SegmentEdit::DecodeRecord(uint32_t tag, std::string_view payload) {
  const std::string_view original = payload;
  auto malformed = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("segment set record (extension tag ", tag, ", ",
                                            original.size(), " bytes): ", what));
  };
  Change c;
  if (!io::GetVarint64(&payload, &c.segment_id)) return malformed("bad segment id");
  switch (tag) {
    case static_cast<uint32_t>(SegmentEditTag::kNewSegment): {
      uint32_t kind = 0;
      if (!io::GetVarint32(&payload, &kind)) return malformed("bad segment kind");
      if (!IsValidSegmentKind(kind)) return malformed(absl::StrCat("unknown segment kind ", kind));
      c.kind = static_cast<SegmentKind>(kind);
      break;
    }
    case static_cast<uint32_t>(SegmentEditTag::kSealSegment):
    case static_cast<uint32_t>(SegmentEditTag::kAddGarbage):
      if (!io::GetVarint64(&payload, &c.bytes) || !io::GetVarint64(&payload, &c.records)) {
        return malformed("bad byte or record count");
      }
      break;
    case static_cast<uint32_t>(SegmentEditTag::kSyncedTo):
      if (!io::GetVarint64(&payload, &c.bytes)) return malformed("bad synced size");
      break;
    case static_cast<uint32_t>(SegmentEditTag::kMarkObsolete):
    case static_cast<uint32_t>(SegmentEditTag::kRemoveSegment):
      break;
    case static_cast<uint32_t>(SegmentEditTag::kPunchRuns): {
      uint64_t count = 0;
      if (!io::GetVarint64(&payload, &count) || count == 0) return malformed("bad run count");
      // Each run takes at least two bytes, so a count past that is a lie.
      if (count > payload.size() / 2) return malformed("run count past the payload");
      c.runs.reserve(count);
      uint64_t prev_end = 0;
      for (uint64_t i = 0; i < count; ++i) {
        uint64_t gap = 0, length = 0;
        if (!io::GetVarint64(&payload, &gap) || !io::GetVarint64(&payload, &length)) {
          return malformed("bad run");
        }
        if (length == 0) return malformed(absl::StrCat("empty run ", i));
        constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
        if (gap > kMax - prev_end || length > kMax - prev_end - gap) {
          return malformed(absl::StrCat("run ", i, " past 2^64"));
        }
        const PunchRun r{prev_end + gap, prev_end + gap + length};
        c.runs.push_back(r);
        prev_end = r.end;
      }
      break;
    }
    default:
      return malformed("unknown tag");
  }
  if (!payload.empty()) {
    return malformed(absl::StrCat(payload.size(), " trailing bytes"));
  }
  c.tag = static_cast<SegmentEditTag>(tag);
  // Decoded changes are appended as they are, never merged: a replay must see
  // exactly the recorded sequence.
  if (c.tag == SegmentEditTag::kNewSegment || c.tag == SegmentEditTag::kRemoveSegment) {
    garbage_index_.erase(c.segment_id);
  }
  changes_.push_back(std::move(c));
  return absl::OkStatus();
}

std::string SegmentEdit::ChangeDebugString(const Change& c) {
  switch (c.tag) {
    case SegmentEditTag::kNewSegment:
      return absl::StrCat("new segment ", c.segment_id, " kind ", SegmentKindName(c.kind));
    case SegmentEditTag::kSealSegment:
      return absl::StrCat("seal segment ", c.segment_id, " size ", c.bytes, " records ",
                          c.records);
    case SegmentEditTag::kAddGarbage:
      return absl::StrCat("garbage segment ", c.segment_id, " +", c.bytes, " bytes +",
                          c.records, " records");
    case SegmentEditTag::kSyncedTo:
      return absl::StrCat("synced segment ", c.segment_id, " to ", c.bytes);
    case SegmentEditTag::kMarkObsolete:
      return absl::StrCat("obsolete segment ", c.segment_id);
    case SegmentEditTag::kRemoveSegment:
      return absl::StrCat("remove segment ", c.segment_id);
    case SegmentEditTag::kPunchRuns: {
      uint64_t bytes = 0;
      for (const PunchRun& r : c.runs) bytes += r.end - r.begin;
      std::string out = absl::StrCat("punch segment ", c.segment_id, " ", c.runs.size(),
                                     " runs of ", bytes, " bytes (", PunchedBlockBytes(c.runs),
                                     " in whole blocks)");
      // The first few runs, so a dump shows where they lie.
      for (size_t i = 0; i < c.runs.size() && i < 4; ++i) {
        absl::StrAppend(&out, i == 0 ? ": " : ", ", c.runs[i].begin, "-", c.runs[i].end);
      }
      if (c.runs.size() > 4) out.append(", ...");
      return out;
    }
  }
  return absl::StrCat("unknown change ", static_cast<uint32_t>(c.tag));
}

std::string SegmentEdit::DebugString() const {
  std::string out;
  for (const Change& c : changes_) absl::StrAppend(&out, ChangeDebugString(c), "\n");
  return out;
}

}  // namespace cairn::vlog
