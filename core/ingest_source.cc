#include "core/ingest_source.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "io/checksum.h"
#include "io/status_macros.h"
#include "lsm/dbformat.h"
#include "lsm/internal_iterator.h"
#include "vlog/segment_scanner.h"
#include "vlog/value_pointer.h"
#include "vlog/vlog_format.h"

namespace cairn {
namespace {

// A record of the set as the scan found it; referenced by the table once.
struct FoundRecord {
  uint32_t size = 0;
  uint64_t key_hash = 0;
  bool referenced = false;
};

}  // namespace

absl::StatusOr<vlog::SegmentHeader> ReadSegmentHeader(io::FileSystem* fs, const std::string& path) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file,
                         fs->NewRandomAccessFile(path, {.category = io::IoCategory::kValueLog}));
  std::string scratch(vlog::kSegmentHeaderSize, '\0');
  std::string_view got;
  CAIRN_RETURN_IF_ERROR(file->Read(0, scratch.size(), scratch.data(), &got));
  return vlog::DecodeSegmentHeader(got, path);
}

absl::StatusOr<IngestSource> IngestSource::Open(io::FileSystem* fs, const std::string& dir) {
  const std::string path = FileSetDescriptorPath(dir);
  absl::StatusOr<std::string> data = io::ReadFileToString(fs, path);
  if (absl::IsNotFound(data.status())) {
    return absl::NotFoundError(
        absl::StrCat(dir, " is not a finished file set: it has no FILESET descriptor"));
  }
  CAIRN_RETURN_IF_ERROR(data.status());
  CAIRN_ASSIGN_OR_RETURN(ExternalFileSet set, ExternalFileSet::Decode(*data, path));
  return IngestSource{dir, std::move(set)};
}

absl::StatusOr<std::unique_ptr<lsm::Table>> IngestSource::OpenTable(
    io::FileSystem* fs, const lsm::TableOptions& table_options) const {
  const std::string path = FileSetTablePath(dir);
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, fs->GetFileSize(path));
  if (size != set.table_size) {
    return absl::DataLossError(absl::StrCat(path, ": ", size, " bytes, but ",
                                            FileSetDescriptorPath(dir), " says ", set.table_size));
  }
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file,
                         fs->NewRandomAccessFile(path, {.category = io::IoCategory::kTable}));
  return lsm::Table::Open(table_options, std::move(file), size, /*file_number=*/0,
                          /*cache=*/nullptr, /*counters=*/nullptr);
}

absl::Status IngestSource::Verify(io::FileSystem* fs,
                                  const lsm::TableOptions& table_options) const {
  // segment id -> offset -> record
  absl::flat_hash_map<uint64_t, absl::flat_hash_map<uint64_t, FoundRecord>> records;
  for (const ExternalFileSet::Segment& seg : set.segments) {
    const std::string path = FileSetSegmentPath(dir, seg.id);
    CAIRN_ASSIGN_OR_RETURN(uint64_t size, fs->GetFileSize(path));
    if (size != seg.size) {
      return absl::DataLossError(absl::StrCat(path, ": ", size, " bytes, but ",
                                              FileSetDescriptorPath(dir), " says ", seg.size));
    }
    // The header's id is not checked against the local id: a move that
    // linked the segment into a database rebinds the shared file's header
    // to its number there before the ingestion is durable, and a set whose
    // ingestion then failed (or crashed) must still ingest.
    CAIRN_ASSIGN_OR_RETURN(vlog::SegmentHeader header, ReadSegmentHeader(fs, path));
    vlog::SegmentScannerOptions so;
    so.uncompress_values = false;
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<vlog::SegmentScanner> scanner,
                           vlog::SegmentScanner::Open(fs, path, header.segment_id, so));
    auto& found = records[seg.id];
    vlog::ScannedRecord r;
    while (scanner->Next(&r)) found[r.offset] = {r.size, io::Checksum64(r.key), false};
    CAIRN_RETURN_IF_ERROR(scanner->status());
    if (scanner->torn_tail() || scanner->valid_end_offset() != seg.size ||
        scanner->records_read() != seg.records) {
      return absl::DataLossError(
          absl::StrCat(path, ": ", scanner->records_read(), " whole records ending at offset ",
                       scanner->valid_end_offset(), ", but ", FileSetDescriptorPath(dir), " says ",
                       seg.records, " records in ", seg.size, " bytes"));
    }
  }

  const std::string table_path = FileSetTablePath(dir);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<lsm::Table> table, OpenTable(fs, table_options));
  CAIRN_RETURN_IF_ERROR(table->VerifyAll());
  const auto bad = [&](std::string_view key, const std::string& what) {
    return absl::DataLossError(absl::StrCat(table_path, ": key '", EscapedKey(key), "': ", what));
  };
  lsm::TableReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<lsm::InternalIterator> it = table->NewIterator(ro);
  uint64_t entries = 0, deletions = 0;
  std::string first, last;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    lsm::ParsedInternalKey ikey;
    if (!lsm::ParseInternalKey(it->key(), &ikey)) return bad(it->key(), "not an internal key");
    const std::string_view key = ikey.user_key;
    if (entries > 0 && key <= std::string_view(last)) return bad(key, "keys do not increase");
    if (ikey.sequence != 0) return bad(key, "sequence is not 0");
    if (entries == 0) first = std::string(key);
    last = std::string(key);
    ++entries;
    switch (ikey.type) {
      case lsm::ValueType::kValue: break;
      case lsm::ValueType::kDeletion: ++deletions; break;
      case lsm::ValueType::kValuePointer: {
        absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(it->value());
        if (!ptr.ok()) return bad(key, "malformed value pointer");
        auto seg = records.find(ptr->segment_id);
        if (seg == records.end()) {
          return bad(key, absl::StrCat("points into segment ", ptr->segment_id,
                                       ", which the set does not have"));
        }
        auto rec = seg->second.find(ptr->offset);
        if (rec == seg->second.end() || rec->second.size != ptr->size ||
            rec->second.key_hash != io::Checksum64(key) || rec->second.referenced) {
          return bad(key, absl::StrCat("its pointer (", ptr->DebugString(),
                                       ") names no record of this key, or one named twice"));
        }
        rec->second.referenced = true;
        break;
      }
      default:
        return absl::FailedPreconditionError(
            absl::StrCat(table_path, ": key '", EscapedKey(key), "' has entry type ",
                         static_cast<int>(ikey.type), ", which this build cannot ingest"));
    }
  }
  CAIRN_RETURN_IF_ERROR(it->status());
  if (entries != set.entries || deletions != set.deletions || first != set.smallest_key ||
      last != set.largest_key) {
    return absl::DataLossError(absl::StrCat(
        table_path, ": ", entries, " entries (", deletions, " deletions) from '", EscapedKey(first),
        "' to '", EscapedKey(last), "' disagree with ", FileSetDescriptorPath(dir)));
  }
  for (const auto& [id, found] : records) {
    for (const auto& [offset, rec] : found) {
      if (!rec.referenced) {
        return absl::DataLossError(absl::StrCat(FileSetSegmentPath(dir, id),
                                                ": the record at offset ", offset,
                                                " is named by no key of ", table_path));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace cairn
