// `cairn dump-wal <NNNNNN.log>`: every record of a write-ahead log with its
// offset, sequence and entry count, then each entry (type, escaped key, value
// length and preview, or the decoded value pointer), and how the log ends
// (clean, torn tail, or corruption). Exit 1 on corruption.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/write_batch_internal.h"
#include "io/coding.h"
#include "io/status_macros.h"
#include "lsm/filename.h"
#include "lsm/log_format.h"
#include "lsm/log_reader.h"
#include "tools/commands.h"
#include "vlog/value_pointer.h"

namespace cairn::tools {
namespace {

constexpr std::string_view kCommand = "dump-wal";

// The log number a WAL's header must name: from the file name when it is
// NNNNNN.log, else from the header itself (offset 12, fixed64), so a copied
// or renamed log can still be read.
absl::StatusOr<uint64_t> LogNumberOf(io::FileSystem* fs, const std::string& path) {
  uint64_t number = 0;
  lsm::FileType type;
  if (lsm::ParseFileName(BaseName(path), &number, &type) && type == lsm::FileType::kLog) {
    return number;
  }
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file,
                         fs->NewRandomAccessFile(path, {.category = io::IoCategory::kOther}));
  char scratch[20];
  std::string_view header;
  CAIRN_RETURN_IF_ERROR(file->Read(0, sizeof(scratch), scratch, &header));
  if (header.size() < sizeof(scratch)) {
    return absl::DataLossError(
        absl::StrCat(path, ": too short for a WAL header, and its name is not NNNNNN.log"));
  }
  // Without the name to go by, only the magic says the file is a WAL at
  // all: a reader of anything else would take whatever bytes 12..19 hold
  // as the log number and report a log that never synced.
  const uint64_t magic = io::DecodeFixed64(header.data());
  if (magic != lsm::kLogMagic) {
    return absl::DataLossError(absl::StrFormat(
        "%s: not a WAL: bad magic 0x%016x at offset 0, and its name is not NNNNNN.log", path,
        magic));
  }
  return io::DecodeFixed64(header.data() + 12);
}

std::string EntryLine(lsm::SequenceNumber seq, lsm::ValueType type, std::string_view key,
                      std::string_view value) {
  if (lsm::HasExpiry(type)) {
    // The line of the plain entry, then its expiry (microseconds since the
    // Unix epoch).
    lsm::StoredValue sv;
    if (!lsm::SplitStoredValue(type, value, &sv)) {
      return absl::StrFormat("  seq %d BAD EXPIRING ENTRY '%s'", seq, Escape(key));
    }
    return absl::StrCat(EntryLine(seq, sv.type, key, sv.payload), " expires_at_us ",
                        sv.expiry_micros);
  }
  switch (type) {
    case lsm::ValueType::kDeletion:
      return absl::StrFormat("  seq %d DEL '%s'", seq, Escape(key));
    case lsm::ValueType::kValue:
      return absl::StrFormat("  seq %d PUT '%s' value_len %d '%s'", seq, Escape(key), value.size(),
                             Preview(value));
    case lsm::ValueType::kRangeDeletion:
      return absl::StrFormat("  seq %d DELRANGE ['%s', '%s')", seq, Escape(key), Escape(value));
    case lsm::ValueType::kValuePointer: {
      absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(value);
      return absl::StrFormat("  seq %d PTR '%s' -> %s", seq, Escape(key),
                             ptr.ok() ? ptr->DebugString()
                                      : absl::StrCat("BAD POINTER (", ptr.status().message(), ")"));
    }
    default:
      break;
  }
  return absl::StrFormat("  seq %d type %d '%s'", seq, static_cast<int>(type), Escape(key));
}

}  // namespace

int RunDumpWal(const Args& args) {
  if (args.size() != 1) return UsageError(kCommand, "expects exactly one WAL file");
  const std::string& path = args[0];
  absl::StatusOr<std::shared_ptr<io::FileSystem>> fs = OpenFileSystem();
  if (!fs.ok()) return Fail(kCommand, fs.status());
  absl::StatusOr<uint64_t> number = LogNumberOf(fs->get(), path);
  if (!number.ok()) return Fail(kCommand, number.status());
  absl::StatusOr<std::unique_ptr<lsm::LogReader>> reader =
      lsm::LogReader::Open(fs->get(), path, *number);
  if (!reader.ok()) return Fail(kCommand, reader.status());

  absl::PrintF("WAL %s (log number %d)\n", path, *number);
  const uint64_t max_entries = MaxEntries();
  uint64_t records = 0, entries = 0, shown = 0;
  bool bad_batch = false;
  std::string scratch;
  std::string_view record;
  while ((*reader)->ReadRecord(&record, &scratch)) {
    ++records;
    const uint64_t offset = (*reader)->last_record_offset();
    if (record.size() < kBatchHeaderSize) {
      absl::PrintF("record at offset %d: %d bytes, too short for a batch header\n", offset,
                   record.size());
      bad_batch = true;
      continue;
    }
    WriteBatchInternal::SyncKind kind;
    uint64_t synced = 0;
    if ((*reader)->format_version() >= lsm::kSyncRecordLogFormatVersion &&
        WriteBatchInternal::ParseSyncRecord(record, &kind, &synced)) {
      absl::PrintF("record at offset %d: sync record: writes through seq %d synced%s\n", offset,
                   synced,
                   kind == WriteBatchInternal::SyncKind::kOlderWalsWhole
                       ? ", every older WAL synced whole"
                       : " (the switch that began this WAL)");
      continue;
    }
    if ((*reader)->format_version() >= lsm::kIngestionEventLogFormatVersion &&
        WriteBatchInternal::IsIngestionEvent(record)) {
      uint64_t sequence = 0;
      std::vector<std::string> files;
      absl::Status s = WriteBatchInternal::ParseIngestionEvent(record, &sequence, &files);
      if (!s.ok()) {
        absl::PrintF("  BAD INGESTION EVENT at offset %d: %s\n", offset, s.ToString());
        bad_batch = true;
        continue;
      }
      absl::PrintF("record at offset %d: ingestion event at seq %d: %d files\n", offset, sequence,
                   files.size());
      for (const std::string& f : files) absl::PrintF("  %s\n", Escape(f));
      continue;
    }
    absl::PrintF("record at offset %d: seq %d count %d (%d bytes)\n", offset,
                 io::DecodeFixed64(record.data()), io::DecodeFixed32(record.data() + 8),
                 record.size());
    absl::Status s =
        WriteBatchInternal::ForEach(record, [&](lsm::SequenceNumber seq, lsm::ValueType type,
                                                std::string_view key, std::string_view value) {
          ++entries;
          if (shown < max_entries) {
            ++shown;
            absl::PrintF("%s\n", EntryLine(seq, type, key, value));
          }
          return absl::OkStatus();
        });
    if (!s.ok()) {
      absl::PrintF("  BAD BATCH at offset %d: %s\n", offset, s.ToString());
      bad_batch = true;
    }
  }
  if (entries > shown) absl::PrintF("... %d more entries not shown\n", entries - shown);
  absl::PrintF("%d records, %d entries\n", records, entries);

  const absl::Status status = (*reader)->status();
  if (!status.ok()) {
    absl::PrintF("end: CORRUPTION: %s\n", status.ToString());
    return kExitProblems;
  }
  if ((*reader)->hit_torn_tail()) {
    absl::PrintF("end: torn tail at offset %d (good data ends there)\n",
                 (*reader)->valid_end_offset());
  } else {
    absl::PrintF("end: clean at offset %d\n", (*reader)->valid_end_offset());
  }
  return bad_batch ? kExitProblems : kExitOk;
}

}  // namespace cairn::tools
