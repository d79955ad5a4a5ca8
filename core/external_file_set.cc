#include "core/external_file_set.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/checksum.h"
#include "io/coding.h"
#include "io/file_system.h"

namespace cairn {

std::string ExternalFileSet::Encode() const {
  std::string out;
  io::PutFixed64(&out, kMagic);
  io::PutFixed32(&out, kVersion);
  io::PutLengthPrefixed(&out, smallest_key);
  io::PutLengthPrefixed(&out, largest_key);
  io::PutVarint64(&out, entries);
  io::PutVarint64(&out, deletions);
  io::PutVarint64(&out, table_size);
  io::PutVarint32(&out, static_cast<uint32_t>(segments.size()));
  for (const Segment& s : segments) {
    io::PutVarint64(&out, s.id);
    io::PutVarint64(&out, s.size);
    io::PutVarint64(&out, s.records);
  }
  io::PutFixed32(&out, io::Checksum32(out));
  return out;
}

absl::StatusOr<ExternalFileSet> ExternalFileSet::Decode(std::string_view data,
                                                        const std::string& path) {
  const auto bad = [&](std::string_view what) {
    return absl::DataLossError(
        absl::StrCat(path, ": not a valid file set descriptor: ", std::string(what)));
  };
  std::string_view in = data;
  uint64_t magic;
  uint32_t version;
  if (!io::GetFixed64(&in, &magic) || magic != kMagic) return bad("bad magic");
  if (!io::GetFixed32(&in, &version)) return bad("truncated version");
  if (version == 0) return bad("version 0");
  if (version > kVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": file set version ", version, " is newer than this build reads (", kVersion, ")"));
  }
  if (data.size() < 16) return bad("truncated");
  const std::string_view body = data.substr(0, data.size() - 4);
  if (io::DecodeFixed32(data.data() + data.size() - 4) != io::Checksum32(body)) {
    return bad("checksum mismatch");
  }
  in = body.substr(12);
  ExternalFileSet set;
  std::string_view smallest, largest;
  uint32_t count;
  if (!io::GetLengthPrefixed(&in, &smallest) || !io::GetLengthPrefixed(&in, &largest) ||
      !io::GetVarint64(&in, &set.entries) || !io::GetVarint64(&in, &set.deletions) ||
      !io::GetVarint64(&in, &set.table_size) || !io::GetVarint32(&in, &count)) {
    return bad("truncated field");
  }
  set.smallest_key = std::string(smallest);
  set.largest_key = std::string(largest);
  for (uint32_t i = 0; i < count; ++i) {
    Segment s;
    if (!io::GetVarint64(&in, &s.id) || !io::GetVarint64(&in, &s.size) ||
        !io::GetVarint64(&in, &s.records)) {
      return bad("truncated segment");
    }
    if (s.id == 0 || (!set.segments.empty() && s.id <= set.segments.back().id)) {
      return bad("segment ids not ascending from 1");
    }
    set.segments.push_back(s);
  }
  if (!in.empty()) return bad("trailing bytes");
  if (set.entries == 0 || set.deletions > set.entries) return bad("entry counts");
  if (set.smallest_key > set.largest_key) return bad("smallest key above largest");
  return set;
}

std::string EscapedKey(std::string_view key) {
  return absl::CHexEscape(absl::string_view(key.data(), key.size()));
}

std::string FileSetDescriptorPath(std::string_view dir) { return io::JoinPath(dir, "FILESET"); }

std::string FileSetTablePath(std::string_view dir) { return io::JoinPath(dir, "table.sst"); }

std::string FileSetSegmentPath(std::string_view dir, uint64_t id) {
  return io::JoinPath(dir, absl::StrFormat("%06d.vlog", id));
}

}  // namespace cairn
