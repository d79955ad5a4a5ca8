// FlushSegments writes the values a flush moves out of its memtable
// (Options::separate_at_flush_below) to new value-log segments, in the
// order the flush hands them over (key order), starting a new segment once
// one reaches the value log's segment size. The segments are complete,
// synced and closed by Finish, and only then named in the manifest, by the
// edit that adds the table pointing into them (AddTo): until then a crash
// leaves orphans that the next open removes.
//
// Records are encoded in one pass into a staging buffer (each with a
// one-shot checksum over its bytes just copied) and handed to the segment
// 256 KiB at a time, which the file writes from where it lies
// (SegmentWriter::AppendEncoded): one copy of each value in user space,
// checksummed while the copy is still in the cache, where appending each
// record through the file's buffer took a streamed checksum over the
// memtable's copy and a second copy (about half the flush thread's CPU;
// docs/decisions/20261202_separate_at_flush.md, "The flush's own cost").
//
// Thread safety: one thread (the flush's) at a time.
#ifndef CAIRN_CORE_FLUSH_SEGMENTS_H_
#define CAIRN_CORE_FLUSH_SEGMENTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/file_system.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_writer.h"
#include "vlog/value_pointer.h"

namespace cairn {

class FlushSegments {
 public:
  using Create = std::function<absl::StatusOr<std::unique_ptr<vlog::SegmentWriter>>()>;
  // create makes each new segment (ValueLog::CreateFlushSegment); a segment
  // is closed once it holds segment_size bytes.
  FlushSegments(io::FileSystem* fs, Create create, uint64_t segment_size)
      : fs_(fs), create_(std::move(create)), segment_size_(segment_size) {}
  FlushSegments(const FlushSegments&) = delete;
  FlushSegments& operator=(const FlushSegments&) = delete;

  // Appends one value's record and returns where it is. The record may
  // reach the file only at a later Place or at Finish; neither view need
  // outlive the call. Errors: InvalidArgument for a key or value past the
  // record limits; the file's and zstd's.
  absl::StatusOr<vlog::ValuePointer> Place(std::string_view user_key, std::string_view value);
  // Syncs and closes the last segment: every record is durable.
  absl::Status Finish();
  // After a failure before the manifest named them: removes every file
  // written (best effort; the next open removes what is left).
  void Abandon();
  // AddSegment and SealSegment of each segment, after Finish.
  void AddTo(vlog::SegmentEdit* edit) const;

 private:
  // Staged bytes at which they go to the segment: the most the file hands
  // the kernel in one call (io::FdWritableFile::kMaxBufferedWrite).
  static constexpr size_t kStageBytes = size_t{256} << 10;

  // Hands the staged records to the current segment.
  absl::Status WriteStaged();
  absl::Status Close();

  struct Closed {
    uint64_t id, size, records;
    std::string path;
  };
  io::FileSystem* const fs_;
  const Create create_;
  const uint64_t segment_size_;
  std::unique_ptr<vlog::SegmentWriter> current_;
  std::vector<Closed> closed_;
  // Records encoded for current_ and not yet appended, and their sizes.
  std::string staged_;
  std::vector<uint32_t> staged_sizes_;
  std::string chunk_table_, chunk_body_;  // EncodeValueRecord's scratch
};

}  // namespace cairn

#endif  // CAIRN_CORE_FLUSH_SEGMENTS_H_
