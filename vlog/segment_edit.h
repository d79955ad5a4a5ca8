// SegmentEdit is one change to the SegmentSet (the value log's persistent
// list of segments and their garbage), in the form the LSM manifest stores:
// each change is one opaque extension record (uint32 tag, payload bytes),
// which the manifest hands back in order on recovery. Tags and payloads are
// in docs/vlog_format.md ("Segment set in the manifest").
//
// Thread safety: none; an edit belongs to one thread at a time.
#ifndef CAIRN_VLOG_SEGMENT_EDIT_H_
#define CAIRN_VLOG_SEGMENT_EDIT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "vlog/vlog_format.h"

namespace cairn::vlog {

// Extension-record tags of the value log. On disk: never renumber, never
// reuse; retired tags stay listed here, commented out. The range 100..149
// belongs to the value log.
enum class SegmentEditTag : uint32_t {
  kNewSegment = 100,     // varint64 id, varint32 kind
  kSealSegment = 101,    // varint64 id, varint64 size, varint64 records
  kAddGarbage = 102,     // varint64 id, varint64 bytes, varint64 records
  kMarkObsolete = 103,   // varint64 id
  kRemoveSegment = 104,  // varint64 id
  kPunchRuns = 105,      // varint64 id, varint64 count, count x (varint64 gap, varint64 length)
  kSyncedTo = 106,       // varint64 id, varint64 size
};

// A run of whole records of a sealed segment, [begin, end), all of them
// garbage, whose whole file-system blocks were punched out of the file
// (docs/gc.md, "Punched runs"). Scanners step over a run without reading
// it; the blocks inside it read as zeros.
struct PunchRun {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool operator==(const PunchRun&) const = default;
};

// The block size punched runs free whole blocks of: the bytes a run frees
// are its whole kPunchBlockSize blocks.
inline constexpr uint64_t kPunchBlockSize = 4096;
// The bytes runs free: their whole aligned blocks. REQUIRES: runs sorted
// and disjoint.
uint64_t PunchedBlockBytes(absl::Span<const PunchRun> runs);
inline constexpr uint32_t kFirstSegmentEditTag = 100;
inline constexpr uint32_t kLastSegmentEditTag = 149;
// Whether tag is in the value log's range (known or not).
inline bool IsSegmentEditTag(uint32_t tag) {
  return tag >= kFirstSegmentEditTag && tag <= kLastSegmentEditTag;
}

// One extension record as the manifest keeps it.
using ExtensionRecord = std::pair<uint32_t, std::string>;

class SegmentEdit {
 public:
  struct Change {
    SegmentEditTag tag = SegmentEditTag::kNewSegment;
    uint64_t segment_id = 0;
    SegmentKind kind = SegmentKind::kFresh;  // kNewSegment
    uint64_t bytes = 0;    // kSealSegment, kSyncedTo: size; kAddGarbage: garbage bytes
    uint64_t records = 0;  // kSealSegment: records; kAddGarbage: garbage records
    std::vector<PunchRun> runs;  // kPunchRuns: ascending, disjoint, non-empty
    bool operator==(const Change&) const = default;
  };

  // A new, empty segment (being written) joins the set.
  void AddSegment(uint64_t segment_id, SegmentKind kind);
  // The segment is complete: size bytes on disk, header included, holding
  // records records. No record is appended to it afterwards.
  void SealSegment(uint64_t segment_id, uint64_t size, uint64_t records);
  // bytes (sum of the dropped records' sizes) and records became garbage in
  // the segment. Deltas of one segment merge into its earlier garbage change
  // in this edit (unless it was added or removed in between).
  void AddGarbage(uint64_t segment_id, uint64_t bytes, uint64_t records);
  // Every live record of the segment now lives elsewhere (after GC); it is
  // deleted once nothing can read it.
  void MarkObsolete(uint64_t segment_id);
  // The segment's file is deleted; it leaves the set.
  void RemoveSegment(uint64_t segment_id);
  // runs (ascending, disjoint, each of whole garbage records) of the sealed
  // segment are punched, or about to be: scanners step over them.
  void PunchRuns(uint64_t segment_id, std::vector<PunchRun> runs);
  // The first size bytes of the segment (being written) are synced, and
  // tables may point anywhere in them: recovery never cuts the file below
  // size, and refuses to open when a record there is damaged.
  void SyncedTo(uint64_t segment_id, uint64_t size);

  const std::vector<Change>& changes() const { return changes_; }
  bool empty() const { return changes_.empty(); }
  void Clear();

  // Appends one extension record per change, in order.
  void EncodeTo(std::vector<ExtensionRecord>* records) const;
  std::vector<ExtensionRecord> Encode() const;

  // Appends the change encoded in one extension record.
  // Errors: DataLoss naming the tag for an unknown tag, a truncated or
  // malformed payload, trailing bytes, or an unknown segment kind.
  absl::Status DecodeRecord(uint32_t tag, std::string_view payload);

  // One change per line.
  std::string DebugString() const;
  static std::string ChangeDebugString(const Change& change);

  bool operator==(const SegmentEdit& other) const { return changes_ == other.changes_; }

 private:
  std::vector<Change> changes_;
  // segment id -> index in changes_ of a garbage change that later deltas of
  // that segment may merge into (none after a change that adds or removes it).
  absl::flat_hash_map<uint64_t, size_t> garbage_index_;
};

}  // namespace cairn::vlog

#endif  // CAIRN_VLOG_SEGMENT_EDIT_H_
