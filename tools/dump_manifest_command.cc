// `cairn dump-manifest <db-dir or MANIFEST-NNNNNN>`: every VersionEdit of a
// manifest (the one CURRENT names, for a directory) with its record offset,
// the value log's extension records decoded, and the state they add up to:
// the LSM tree's files per level, the counters, and the segment set.
// Exit 1 when a record does not decode or the edits do not fit together.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/status_macros.h"
#include "lsm/filename.h"
#include "lsm/log_reader.h"
#include "lsm/version.h"
#include "lsm/version_edit.h"
#include "tools/commands.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_set.h"

namespace cairn::tools {
namespace {

constexpr std::string_view kCommand = "dump-manifest";

struct ManifestPath {
  std::string path;
  uint64_t number = 0;
};

// A directory resolves through its CURRENT file; a file must be named
// MANIFEST-NNNNNN (its number is part of every fragment's checksum).
absl::StatusOr<ManifestPath> ResolveManifest(io::FileSystem* fs, const std::string& arg) {
  uint64_t number = 0;
  lsm::FileType type;
  if (lsm::ParseFileName(BaseName(arg), &number, &type) && type == lsm::FileType::kManifest) {
    return ManifestPath{arg, number};
  }
  if (fs->FileExists(lsm::CurrentFileName(arg))) {
    CAIRN_ASSIGN_OR_RETURN(number, lsm::ReadCurrentFile(fs, arg));
    return ManifestPath{lsm::ManifestFileName(arg, number), number};
  }
  return absl::InvalidArgumentError(
      absl::StrCat(arg, ": neither a database directory (no CURRENT) nor a MANIFEST-NNNNNN file"));
}

// Prints the edit's extension records, applying the value log's to *segments.
// Returns false when one does not decode or apply.
bool DumpExtensions(const lsm::VersionEdit& edit, vlog::SegmentSet* segments) {
  bool ok = true;
  for (const auto& [tag, payload] : edit.extensions()) {
    if (!vlog::IsSegmentEditTag(tag)) {
      absl::PrintF("  extension tag %d (%d bytes): UNKNOWN (not the value log's)\n", tag,
                   payload.size());
      continue;
    }
    vlog::SegmentEdit decoded;
    absl::Status s = decoded.DecodeRecord(tag, payload);
    if (s.ok()) {
      absl::PrintF("  vlog: %s\n", vlog::SegmentEdit::ChangeDebugString(decoded.changes()[0]));
      s = segments->DecodeAndApply(tag, payload);
    }
    if (!s.ok()) {
      absl::PrintF("  vlog extension tag %d: ERROR %s\n", tag, s.ToString());
      ok = false;
    }
  }
  return ok;
}

}  // namespace

int RunDumpManifest(const Args& args) {
  if (args.size() != 1) {
    return UsageError(kCommand, "expects one database directory or MANIFEST file");
  }
  absl::StatusOr<std::shared_ptr<io::FileSystem>> fs = OpenFileSystem();
  if (!fs.ok()) return Fail(kCommand, fs.status());
  absl::StatusOr<ManifestPath> manifest = ResolveManifest(fs->get(), args[0]);
  if (!manifest.ok()) return Fail(kCommand, manifest.status());
  absl::StatusOr<std::unique_ptr<lsm::LogReader>> reader =
      lsm::LogReader::Open(fs->get(), manifest->path, manifest->number, io::IoCategory::kManifest);
  if (!reader.ok()) return Fail(kCommand, reader.status());

  absl::PrintF("manifest %s\n", manifest->path);
  bool ok = true;
  lsm::VersionBuilder builder(nullptr);
  vlog::SegmentSet segments;
  std::optional<uint64_t> log_number, next_file;
  std::optional<lsm::SequenceNumber> last_sequence;
  uint64_t index = 0;
  std::string scratch;
  std::string_view record;
  while ((*reader)->ReadRecord(&record, &scratch)) {
    const uint64_t offset = (*reader)->last_record_offset();
    absl::PrintF("--- record %d at offset %d (%d bytes)\n", index++, offset, record.size());
    lsm::VersionEdit edit;
    absl::Status s = edit.DecodeFrom(record);
    if (!s.ok()) {
      absl::PrintF("ERROR: %s\n", s.ToString());
      ok = false;
      continue;
    }
    absl::PrintF("%s", edit.DebugString());
    if (!DumpExtensions(edit, &segments)) ok = false;
    s = builder.Apply(edit);
    if (!s.ok()) {
      absl::PrintF("ERROR applying the edit: %s\n", s.ToString());
      ok = false;
    }
    if (edit.log_number()) log_number = edit.log_number();
    if (edit.next_file_number()) next_file = edit.next_file_number();
    if (edit.last_sequence()) last_sequence = edit.last_sequence();
  }

  const absl::Status status = (*reader)->status();
  if (!status.ok()) {
    absl::PrintF("end: CORRUPTION: %s\n", status.ToString());
    ok = false;
  } else if ((*reader)->hit_torn_tail()) {
    absl::PrintF("end: torn tail at offset %d (a record that never synced; ignored)\n",
                 (*reader)->valid_end_offset());
  } else {
    absl::PrintF("end: clean at offset %d\n", (*reader)->valid_end_offset());
  }

  absl::PrintF("=== final state after %d records\n", index);
  auto show = [](const std::optional<uint64_t>& v) {
    return v ? absl::StrCat(*v) : std::string("(unset)");
  };
  absl::PrintF("log number %s, next file number %s, last sequence %s\n", show(log_number),
               show(next_file), show(last_sequence));
  absl::StatusOr<std::shared_ptr<const lsm::Version>> version = builder.Build();
  if (version.ok()) {
    absl::PrintF("%s", (*version)->DebugString());
  } else {
    absl::PrintF("ERROR building the version: %s\n", version.status().ToString());
    ok = false;
  }
  absl::PrintF("value log:\n%s", segments.DebugString());
  return ok ? kExitOk : kExitProblems;
}

}  // namespace cairn::tools
