// `cairn dump-vlog [--max_entries=N] <NNNNNN.vlog>`: a value-log segment's
// header, then each record (offset, size, escaped key, value length, flags),
// and how the segment ends: clean, torn tail (bytes a crash left unfinished)
// or corruption (a bad record with good ones after it). Exit 1 on corruption
// or a bad header.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/aligned_buffer.h"
#include "io/status_macros.h"
#include "lsm/filename.h"
#include "lsm/version_set.h"
#include "tools/commands.h"
#include "vlog/segment_scanner.h"
#include "vlog/segment_set.h"
#include "vlog/vlog_format.h"

namespace cairn::tools {
namespace {

constexpr std::string_view kCommand = "dump-vlog";

// The segment id the header must name: from the file name when it is
// NNNNNN.vlog, else from the header itself.
absl::StatusOr<uint64_t> SegmentIdOf(io::FileSystem* fs, const std::string& path) {
  uint64_t number = 0;
  lsm::FileType type;
  if (lsm::ParseFileName(BaseName(path), &number, &type) && type == lsm::FileType::kValueLog) {
    return number;
  }
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file,
                         fs->NewRandomAccessFile(path, {.category = io::IoCategory::kOther}));
  char scratch[vlog::kSegmentHeaderSize];
  std::string_view head;
  CAIRN_RETURN_IF_ERROR(file->Read(0, sizeof(scratch), scratch, &head));
  CAIRN_ASSIGN_OR_RETURN(vlog::SegmentHeader header, vlog::DecodeSegmentHeader(head, path));
  return header.segment_id;
}

std::string FlagsString(uint8_t flags) {
  std::string s = absl::StrFormat("0x%02x", flags);
  if (flags & vlog::kRecordFlagZstd) s.append(" zstd");
  if (flags & vlog::kRecordFlagChunked) s.append(" chunked");
  return s;
}

// The punched runs the manifest of the segment's directory lists for it
// (docs/gc.md, "Punched runs"), so that the dump steps over them as GC
// does; none when the segment is not in a database whose manifest reads
// (its runs then stop the dump at their zeros, reported as corruption).
std::vector<vlog::PunchRun> ListedRuns(io::FileSystem* fs, const std::string& path,
                                       uint64_t segment_id) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty() || !fs->FileExists(lsm::CurrentFileName(dir))) return {};
  lsm::VersionSet versions(fs, dir);
  vlog::SegmentSet segments;
  const absl::Status s = versions.Recover([&segments](uint32_t tag, std::string_view payload) {
    if (vlog::IsSegmentEditTag(tag)) segments.DecodeAndApply(tag, payload).IgnoreError();
    return absl::OkStatus();
  });
  if (!s.ok()) return {};
  return segments.PunchedRuns(segment_id);
}

// Where a bad record's bytes give way to a whole zeroed 4 KiB block: the
// first block boundary at or after offset, when that block reads as zeros
// (a run GC punched out leaves whole blocks of zeros between record
// boundaries); nullopt otherwise.
std::optional<uint64_t> ZeroBlockAfter(io::FileSystem* fs, const std::string& path,
                                       uint64_t offset, uint64_t file_size) {
  constexpr uint64_t kBlock = vlog::kPunchBlockSize;
  const uint64_t start = io::AlignUp(offset, kBlock);
  if (start + kBlock > file_size) return std::nullopt;
  absl::StatusOr<std::unique_ptr<io::RandomAccessFile>> file =
      fs->NewRandomAccessFile(path, {.category = io::IoCategory::kOther});
  if (!file.ok()) return std::nullopt;
  std::string scratch(kBlock, '\1');
  std::string_view got;
  if (!(*file)->Read(start, kBlock, scratch.data(), &got).ok() || got.size() != kBlock) {
    return std::nullopt;
  }
  if (got.find_first_not_of('\0') != std::string_view::npos) return std::nullopt;
  return start;
}

}  // namespace

int RunDumpVlog(const Args& args) {
  if (args.size() != 1) return UsageError(kCommand, "expects exactly one value-log segment");
  const std::string& path = args[0];
  absl::StatusOr<std::shared_ptr<io::FileSystem>> fs = OpenFileSystem();
  if (!fs.ok()) return Fail(kCommand, fs.status());
  absl::StatusOr<uint64_t> id = SegmentIdOf(fs->get(), path);
  if (!id.ok()) return Fail(kCommand, id.status());
  vlog::SegmentScannerOptions options;
  options.category = io::IoCategory::kValueLog;
  options.allow_torn_tail = true;  // reported below, not hidden
  options.skip_runs = ListedRuns(fs->get(), path, *id);
  absl::StatusOr<std::unique_ptr<vlog::SegmentScanner>> scanner =
      vlog::SegmentScanner::Open(fs->get(), path, *id, options);
  if (!scanner.ok()) return Fail(kCommand, scanner.status());

  const vlog::SegmentHeader& h = (*scanner)->header();
  absl::PrintF("segment %s (%d bytes)\n", path, (*scanner)->file_size());
  if (h.version == 0) {
    absl::PrintF("header: torn (the file is shorter than a header)\n");
  } else {
    absl::PrintF("header: version %d kind %s segment id %d\n", h.version,
                 vlog::SegmentKindName(h.kind), h.segment_id);
  }

  if (!options.skip_runs.empty()) {
    uint64_t bytes = 0;
    for (const vlog::PunchRun& run : options.skip_runs) bytes += run.end - run.begin;
    absl::PrintF("punched runs (from the manifest, stepped over): %d, %d bytes\n",
                 options.skip_runs.size(), bytes);
  }
  const uint64_t max_entries = MaxEntries();
  uint64_t value_bytes = 0;
  uint64_t good_end = vlog::kSegmentHeaderSize;  // past the last good record
  vlog::ScannedRecord r;
  while ((*scanner)->Next(&r)) {
    value_bytes += r.value.size();
    good_end = r.offset + r.size;
    if ((*scanner)->records_read() <= max_entries) {
      absl::PrintF("offset %d size %d key '%s' value_len %d stored_len %d flags %s\n", r.offset,
                   r.size, Escape(r.key), r.value.size(), r.stored_value.size(),
                   FlagsString(r.flags));
    }
  }
  const uint64_t records = (*scanner)->records_read();
  if (records > max_entries) absl::PrintF("... %d more records not shown\n", records - max_entries);
  absl::PrintF("%d records, %d value bytes\n", records, value_bytes);

  const absl::Status& status = (*scanner)->status();
  if (!status.ok()) {
    absl::PrintF("end: CORRUPTION: %s\n", status.ToString());
    // Copied out of its database, a segment keeps its punched runs' zeros
    // but not the manifest that lists them: say what the zeros may be.
    if (options.skip_runs.empty()) {
      if (std::optional<uint64_t> zeros = ZeroBlockAfter(
              fs->get(), path, good_end, (*scanner)->file_size())) {
        absl::PrintF(
            "hint: whole blocks of zeros from offset %d: a run of dead records GC punched "
            "out (docs/gc.md, \"Punched runs\")? Only the manifest of the segment's database "
            "lists those; no manifest was found next to this file. Dump the segment in its "
            "database's directory to step over them.\n",
            *zeros);
      }
    }
    return kExitProblems;
  }
  if ((*scanner)->torn_tail()) {
    absl::PrintF("end: torn tail at offset %d (%d bytes after it)\n",
                 (*scanner)->valid_end_offset(),
                 (*scanner)->file_size() - (*scanner)->valid_end_offset());
  } else {
    absl::PrintF("end: clean at offset %d\n", (*scanner)->valid_end_offset());
  }
  return kExitOk;
}

}  // namespace cairn::tools
