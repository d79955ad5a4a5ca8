#include "lsm/version_edit.h"

#include <cassert>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/coding.h"

namespace cairn::lsm {
namespace {

void PutTag(std::string* dst, EditTag tag) { io::PutVarint32(dst, static_cast<uint32_t>(tag)); }

bool GetLevel(std::string_view* input, int* level) {
  uint32_t v = 0;
  if (!io::GetVarint32(input, &v) || v >= static_cast<uint32_t>(kNumLevels)) return false;
  *level = static_cast<int>(v);
  return true;
}

bool GetInternalKey(std::string_view* input, std::string* key) {
  std::string_view k;
  ParsedInternalKey parsed;
  if (!io::GetLengthPrefixed(input, &k) || !ParseInternalKey(k, &parsed)) return false;
  *key = std::string(k);
  return true;
}

bool GetFileMetaData(std::string_view* input, int* level, FileMetaData* f) {
  return GetLevel(input, level) && io::GetVarint64(input, &f->number) &&
         io::GetVarint64(input, &f->file_size) && GetInternalKey(input, &f->smallest) &&
         GetInternalKey(input, &f->largest) && io::GetVarint64(input, &f->smallest_seq) &&
         io::GetVarint64(input, &f->largest_seq) && io::GetVarint64(input, &f->num_entries) &&
         CompareInternalKeys(f->smallest, f->largest) <= 0 && f->smallest_seq <= f->largest_seq;
}

std::string Escape(std::string_view s) {
  return absl::CHexEscape(absl::string_view(s.data(), s.size()));
}

std::string KeyDebugString(std::string_view ikey) {
  ParsedInternalKey p;
  if (!ParseInternalKey(ikey, &p)) return absl::StrCat("<bad:", Escape(ikey), ">");
  return absl::StrFormat("'%s' @ %u : %d", Escape(p.user_key), p.sequence,
                         static_cast<int>(p.type));
}

}  // namespace

void VersionEdit::Clear() { *this = VersionEdit(); }

void VersionEdit::SetCompactPointer(int level, std::string_view internal_key) {
  assert(level >= 0 && level < kNumLevels);
  compact_pointers_.emplace_back(level, std::string(internal_key));
}

void VersionEdit::AddFile(int level, const FileMetaData& file) {
  assert(level >= 0 && level < kNumLevels);
  FileMetaData f = file;
  f.being_compacted = false;
  new_files_.emplace_back(level, std::move(f));
}

void VersionEdit::RemoveFile(int level, uint64_t number) {
  deleted_files_.insert({level, number});
}

void VersionEdit::AddExtension(uint32_t tag, std::string_view payload) {
  extensions_.emplace_back(tag, std::string(payload));
}

void VersionEdit::EncodeTo(std::string* dst) const {
  PutTag(dst, EditTag::kFormatVersion);
  io::PutVarint32(dst, kManifestFormatVersion);
  if (comparator_) {
    PutTag(dst, EditTag::kComparator);
    io::PutLengthPrefixed(dst, *comparator_);
  }
  if (log_number_) {
    PutTag(dst, EditTag::kLogNumber);
    io::PutVarint64(dst, *log_number_);
  }
  if (next_file_number_) {
    PutTag(dst, EditTag::kNextFileNumber);
    io::PutVarint64(dst, *next_file_number_);
  }
  if (last_sequence_) {
    PutTag(dst, EditTag::kLastSequence);
    io::PutVarint64(dst, *last_sequence_);
  }
  for (const auto& [level, key] : compact_pointers_) {
    PutTag(dst, EditTag::kCompactPointer);
    io::PutVarint32(dst, static_cast<uint32_t>(level));
    io::PutLengthPrefixed(dst, key);
  }
  for (const auto& [level, number] : deleted_files_) {
    PutTag(dst, EditTag::kDeletedFile);
    io::PutVarint32(dst, static_cast<uint32_t>(level));
    io::PutVarint64(dst, number);
  }
  for (const auto& [level, f] : new_files_) {
    PutTag(dst, EditTag::kNewFile);
    io::PutVarint32(dst, static_cast<uint32_t>(level));
    io::PutVarint64(dst, f.number);
    io::PutVarint64(dst, f.file_size);
    io::PutLengthPrefixed(dst, f.smallest);
    io::PutLengthPrefixed(dst, f.largest);
    io::PutVarint64(dst, f.smallest_seq);
    io::PutVarint64(dst, f.largest_seq);
    io::PutVarint64(dst, f.num_entries);
    if (f.num_range_deletions != 0) {
      PutTag(dst, EditTag::kFileRangeDeletions);
      io::PutVarint32(dst, static_cast<uint32_t>(level));
      io::PutVarint64(dst, f.number);
      io::PutVarint64(dst, f.num_range_deletions);
    }
  }
  for (const auto& [tag, payload] : extensions_) {
    PutTag(dst, EditTag::kExtension);
    io::PutVarint32(dst, tag);
    io::PutLengthPrefixed(dst, payload);
  }
}

absl::Status VersionEdit::DecodeFrom(std::string_view src) {
  Clear();
  std::string_view input = src;
  auto malformed = [&](std::string_view field, size_t offset) {
    Clear();
    return absl::DataLossError(absl::StrFormat(
        "version edit: malformed %s at byte %u of a %u-byte record", field, offset, src.size()));
  };

  uint32_t tag = 0;
  uint32_t version = 0;
  if (!io::GetVarint32(&input, &tag) || tag != static_cast<uint32_t>(EditTag::kFormatVersion) ||
      !io::GetVarint32(&input, &version) || version == 0) {
    return malformed("format version (it must be the first field)", 0);
  }
  if (version > kManifestFormatVersion) {
    Clear();
    return absl::FailedPreconditionError(absl::StrFormat(
        "version edit: written in manifest format version %u; this build reads up to %u",
        version, kManifestFormatVersion));
  }

  while (!input.empty()) {
    const size_t offset = src.size() - input.size();
    if (!io::GetVarint32(&input, &tag)) return malformed("field tag", offset);
    switch (static_cast<EditTag>(tag)) {
      case EditTag::kComparator: {
        std::string_view name;
        if (!io::GetLengthPrefixed(&input, &name)) return malformed("comparator name", offset);
        comparator_ = std::string(name);
        break;
      }
      case EditTag::kLogNumber: {
        uint64_t v = 0;
        if (!io::GetVarint64(&input, &v)) return malformed("log number", offset);
        log_number_ = v;
        break;
      }
      case EditTag::kNextFileNumber: {
        uint64_t v = 0;
        if (!io::GetVarint64(&input, &v)) return malformed("next file number", offset);
        next_file_number_ = v;
        break;
      }
      case EditTag::kLastSequence: {
        uint64_t v = 0;
        if (!io::GetVarint64(&input, &v) || v > kMaxSequenceNumber) {
          return malformed("last sequence", offset);
        }
        last_sequence_ = v;
        break;
      }
      case EditTag::kCompactPointer: {
        int level = 0;
        std::string key;
        if (!GetLevel(&input, &level) || !GetInternalKey(&input, &key)) {
          return malformed("compaction pointer", offset);
        }
        compact_pointers_.emplace_back(level, std::move(key));
        break;
      }
      case EditTag::kDeletedFile: {
        int level = 0;
        uint64_t number = 0;
        if (!GetLevel(&input, &level) || !io::GetVarint64(&input, &number)) {
          return malformed("deleted file", offset);
        }
        deleted_files_.insert({level, number});
        break;
      }
      case EditTag::kNewFile: {
        int level = 0;
        FileMetaData f;
        if (!GetFileMetaData(&input, &level, &f)) return malformed("new file", offset);
        new_files_.emplace_back(level, std::move(f));
        break;
      }
      case EditTag::kFileRangeDeletions: {
        int level = 0;
        uint64_t number = 0, count = 0;
        if (!GetLevel(&input, &level) || !io::GetVarint64(&input, &number) ||
            !io::GetVarint64(&input, &count) || new_files_.empty() ||
            new_files_.back().first != level || new_files_.back().second.number != number) {
          return malformed("file range deletions (not after its new file)", offset);
        }
        new_files_.back().second.num_range_deletions = count;
        break;
      }
      case EditTag::kExtension: {
        uint32_t ext_tag = 0;
        std::string_view payload;
        if (!io::GetVarint32(&input, &ext_tag) || !io::GetLengthPrefixed(&input, &payload)) {
          return malformed("extension record", offset);
        }
        extensions_.emplace_back(ext_tag, std::string(payload));
        break;
      }
      case EditTag::kFormatVersion:
        return malformed("repeated format version", offset);
      default:
        return malformed(absl::StrCat("field: unknown tag ", tag), offset);
    }
  }
  return absl::OkStatus();
}

std::string VersionEdit::DebugString() const {
  std::string r = "VersionEdit {\n";
  if (comparator_) absl::StrAppend(&r, "  comparator: ", *comparator_, "\n");
  if (log_number_) absl::StrAppend(&r, "  log number: ", *log_number_, "\n");
  if (next_file_number_) absl::StrAppend(&r, "  next file number: ", *next_file_number_, "\n");
  if (last_sequence_) absl::StrAppend(&r, "  last sequence: ", *last_sequence_, "\n");
  for (const auto& [level, key] : compact_pointers_) {
    absl::StrAppend(&r, "  compact pointer: L", level, " ", KeyDebugString(key), "\n");
  }
  for (const auto& [level, number] : deleted_files_) {
    absl::StrAppend(&r, "  delete file: L", level, " #", number, "\n");
  }
  for (const auto& [level, f] : new_files_) {
    absl::StrAppendFormat(&r, "  add file: L%d #%u %u bytes [%s .. %s] seq %u..%u, %u entries\n",
                          level, f.number, f.file_size, KeyDebugString(f.smallest),
                          KeyDebugString(f.largest), f.smallest_seq, f.largest_seq,
                          f.num_entries);
  }
  for (const auto& [tag, payload] : extensions_) {
    absl::StrAppend(&r, "  extension: tag ", tag, ", ", payload.size(), " bytes\n");
  }
  r.append("}\n");
  return r;
}

}  // namespace cairn::lsm
