// `cairn dump-sst [--verify] [--max_entries=N] <NNNNNN.sst>`: the table's
// properties, then every entry with its internal key parsed (user key,
// sequence, type) and its value length or decoded value pointer. --verify
// also reads every block from the device and checks it (Table::VerifyAll).
// Exit 1 when the table does not open, iterating fails or --verify fails.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lsm/dbformat.h"
#include "lsm/filename.h"
#include "lsm/table.h"
#include "tools/commands.h"
#include "vlog/value_pointer.h"

namespace cairn::tools {
namespace {

constexpr std::string_view kCommand = "dump-sst";

std::string EntryLine(std::string_view ikey, std::string_view value) {
  lsm::ParsedInternalKey p;
  if (!lsm::ParseInternalKey(ikey, &p)) {
    return absl::StrFormat("BAD INTERNAL KEY '%s' value_len %d", Escape(ikey), value.size());
  }
  if (lsm::HasExpiry(p.type)) {
    // The line of the plain entry, then its expiry (microseconds since the
    // Unix epoch).
    lsm::StoredValue sv;
    if (!lsm::SplitStoredValue(p.type, value, &sv)) {
      return absl::StrFormat("'%s' @ %d BAD EXPIRING ENTRY value_len %d", Escape(p.user_key),
                             p.sequence, value.size());
    }
    std::string plain;
    lsm::AppendInternalKey(&plain, p.user_key, p.sequence, sv.type);
    return absl::StrCat(EntryLine(plain, sv.payload), " expires_at_us ", sv.expiry_micros);
  }
  switch (p.type) {
    case lsm::ValueType::kDeletion:
      return absl::StrFormat("'%s' @ %d DEL", Escape(p.user_key), p.sequence);
    case lsm::ValueType::kValue:
      return absl::StrFormat("'%s' @ %d PUT value_len %d '%s'", Escape(p.user_key), p.sequence,
                             value.size(), Preview(value));
    case lsm::ValueType::kRangeDeletion:
      break;  // never in a data block: ParseInternalKey refuses the type
    case lsm::ValueType::kValuePointer: {
      absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(value);
      return absl::StrFormat("'%s' @ %d PTR -> %s", Escape(p.user_key), p.sequence,
                             ptr.ok() ? ptr->DebugString()
                                      : absl::StrCat("BAD POINTER (", ptr.status().message(), ")"));
    }
    default:
      break;
  }
  return "";
}

void PrintProperties(const lsm::Table& table) {
  const lsm::TableProperties& p = table.properties();
  absl::PrintF("properties:\n");
  absl::PrintF("  entries: %d\n", p.num_entries);
  absl::PrintF("  deletions: %d\n", p.num_deletions);
  absl::PrintF("  value pointers: %d\n", p.num_value_pointers);
  if (p.has_value_pointer_bytes) {
    absl::PrintF("  value-log bytes named: %d\n", p.value_pointer_bytes);
  } else {
    absl::PrintF("  value-log bytes named: not recorded (a table written before 2026-12-07)\n");
  }
  absl::PrintF("  raw key bytes: %d\n", p.raw_key_bytes);
  absl::PrintF("  raw value bytes: %d\n", p.raw_value_bytes);
  absl::PrintF("  sequences: %d..%d\n", p.smallest_sequence, p.largest_sequence);
  absl::PrintF("  data blocks: %d\n", p.num_data_blocks);
  absl::PrintF("  bloom filter: %s\n", table.has_filter() ? "yes" : "no");
  absl::PrintF("  range tombstones: %d\n", p.num_range_deletions);
  // Format 2's range-deletion block, as written (Open decoded and checked it).
  for (const lsm::RangeTombstone& t : table.range_tombstone_list()) {
    absl::PrintF("  DELRANGE ['%s', '%s') @ %d\n", Escape(t.begin), Escape(t.end), t.seq);
  }
}

}  // namespace

int RunDumpSst(const Args& args) {
  if (args.size() != 1) return UsageError(kCommand, "expects exactly one SST file");
  const std::string& path = args[0];
  absl::StatusOr<std::shared_ptr<io::FileSystem>> fs = OpenFileSystem();
  if (!fs.ok()) return Fail(kCommand, fs.status());
  absl::StatusOr<uint64_t> size = (*fs)->GetFileSize(path);
  if (!size.ok()) return Fail(kCommand, size.status());
  absl::StatusOr<std::unique_ptr<io::RandomAccessFile>> file =
      (*fs)->NewRandomAccessFile(path, {.category = io::IoCategory::kTable});
  if (!file.ok()) return Fail(kCommand, file.status());
  // The number only keys a block cache, and there is none here.
  uint64_t number = 0;
  lsm::FileType type;
  lsm::ParseFileName(BaseName(path), &number, &type);
  absl::StatusOr<std::unique_ptr<lsm::Table>> table =
      lsm::Table::Open(lsm::TableOptions(), *std::move(file), *size, number, /*cache=*/nullptr,
                       /*counters=*/nullptr);
  if (!table.ok()) return Fail(kCommand, table.status());

  absl::PrintF("SST %s (%d bytes)\n", path, *size);
  PrintProperties(**table);

  const uint64_t max_entries = MaxEntries();
  uint64_t entries = 0;
  absl::PrintF("entries:\n");
  std::unique_ptr<lsm::InternalIterator> it =
      (*table)->NewIterator({.verify_checksums = true, .fill_cache = false});
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (entries++ < max_entries) absl::PrintF("  %s\n", EntryLine(it->key(), it->value()));
  }
  if (entries > max_entries) {
    absl::PrintF("... %d more entries not shown\n", entries - max_entries);
  }
  absl::PrintF("%d entries\n", entries);
  int rc = kExitOk;
  if (!it->status().ok()) {
    absl::PrintF("ERROR while iterating: %s\n", it->status().ToString());
    rc = kExitProblems;
  }
  if (absl::GetFlag(FLAGS_verify)) {
    const absl::Status s = (*table)->VerifyAll();
    absl::PrintF("verify: %s\n", s.ok() ? "OK" : s.ToString());
    if (!s.ok()) rc = kExitProblems;
  }
  return rc;
}

}  // namespace cairn::tools
