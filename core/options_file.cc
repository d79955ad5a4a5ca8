// The OPTIONS file (docs/options_format.md): written as text so that a person
// can read it with cat and a script with grep; checked only where a
// difference would make this build misread the files.
#include "core/options_file.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cairn/compaction_filter.h"
#include "io/status_macros.h"
#include "lsm/filename.h"
#include "lsm/log_format.h"
#include "lsm/table_format.h"
#include "lsm/version_edit.h"
#include "vlog/vlog_format.h"

namespace cairn {
namespace {

constexpr size_t kMaxOptionsFileSize = 1 << 20;

const char* CompressionName(Compression c) { return c == Compression::kZstd ? "zstd" : "none"; }

const char* BackendName(IoBackendOption b) {
  switch (b) {
    case IoBackendOption::kUring: return "uring";
    case IoBackendOption::kPosix: return "posix";
    case IoBackendOption::kAuto: break;
  }
  return "auto";
}

// One [format] key: what this build writes and reads. A database whose file
// records a larger value may hold files (or keys and values) this build would
// misread or refuse half-way through; a smaller one is what an older build
// wrote, which this build still reads.
struct FormatKey {
  const char* name;
  uint64_t value;
  const char* what;
};

std::vector<FormatKey> FormatKeys() {
  return {
      {"wal_format_version", lsm::kLogFormatVersion, "WAL format version"},
      {"table_format_version", lsm::kTableFormatVersion, "SST format version"},
      {"manifest_format_version", lsm::kManifestFormatVersion, "manifest format version"},
      {"segment_format_version", vlog::kSegmentFormatVersion, "value-log segment format version"},
      {"max_key_size", kMaxKeySize, "largest key"},
      {"max_value_size", kMaxValueSize, "largest value"},
  };
}

}  // namespace

std::string FormatOptionsFile(const Options& o) {
  std::string out =
      "# cairn OPTIONS file (docs/options_format.md). [format] is checked at open;\n"
      "# [options] records the options of the open that wrote this file.\n";
  absl::StrAppend(&out, "[version]\noptions_file_version=", kOptionsFileVersion, "\n[format]\n");
  for (const FormatKey& k : FormatKeys()) absl::StrAppend(&out, k.name, "=", k.value, "\n");
  auto add = [&out](const char* name, auto value) {
    absl::StrAppend(&out, name, "=", value, "\n");
  };
  auto add_bool = [&add](const char* name, bool v) { add(name, v ? "true" : "false"); };
  auto add_double = [&add](const char* name, double v) { add(name, absl::StrFormat("%.17g", v)); };
  out += "[options]\n";
  add_bool("create_if_missing", o.create_if_missing);
  add_bool("error_if_exists", o.error_if_exists);
  add("memtable_size", o.memtable_size);
  add("max_memtable_value_bytes", o.max_memtable_value_bytes);
  add("block_size", o.block_size);
  add("cache_size", o.cache_size);
  add("block_cache_size", o.block_cache_size);
  add_bool("cache_new_table_blocks", o.cache_new_table_blocks);
  add("bloom_bits_per_key", o.bloom_bits_per_key);
  add("compression", CompressionName(o.compression));
  add("io_backend", BackendName(o.io_backend));
  add_bool("direct_reads", o.direct_reads);
  add_bool("direct_writes", o.direct_writes);
  add("value_log_bytes_per_sync", o.value_log_bytes_per_sync);
  add("wal_bytes_per_sync", o.wal_bytes_per_sync);
  add("wal_prefill_bytes", o.wal_prefill_bytes);
  add("wal_ttl_seconds", o.wal_ttl_seconds);
  add("wal_size_limit_bytes", o.wal_size_limit_bytes);
  if (o.value_separation_threshold == kInlineValues) {
    add("value_separation_threshold", "inline");
  } else {
    add("value_separation_threshold", o.value_separation_threshold);
  }
  add("separate_at_flush_below", o.separate_at_flush_below);
  add_bool("separate_at_flush_during_gc", o.separate_at_flush_during_gc);
  add("value_log_segment_size", o.value_log_segment_size);
  add("value_cache_size", o.value_cache_size);
  add("value_compression", CompressionName(o.value_compression));
  add("level0_compaction_trigger", o.level0_compaction_trigger);
  add("level0_slowdown_trigger", o.level0_slowdown_trigger);
  add("level0_stop_trigger", o.level0_stop_trigger);
  add("target_file_size", o.target_file_size);
  add("level_size_multiplier", o.level_size_multiplier);
  add("soft_pending_compaction_bytes_limit", o.soft_pending_compaction_bytes_limit);
  add("hard_pending_compaction_bytes_limit", o.hard_pending_compaction_bytes_limit);
  add_double("gc_min_garbage_ratio", o.gc_min_garbage_ratio);
  add_double("gc_space_amp_trigger", o.gc_space_amp_trigger);
  add("gc_bytes_per_sec", o.gc_bytes_per_sec);
  add_bool("gc_punch_holes", o.gc_punch_holes);
  add("max_background_gc", o.max_background_gc);
  add("gc_nice_adjustment", o.gc_nice_adjustment);
  add("max_background_compactions", o.max_background_compactions);
  add("max_subcompactions", o.max_subcompactions);
  add("compaction_readahead_size", o.compaction_readahead_size);
  add("max_info_log_size", o.max_info_log_size);
  add("stats_dump_period_sec", o.stats_dump_period_sec);
  // Expiry and filters (issue 60): the clock and the filter are code, so
  // only whether one is set, and the filter's name.
  add("default_ttl_seconds", o.default_ttl_seconds);
  add("clock", o.clock != nullptr ? "custom" : "system");
  add("compaction_filter", o.compaction_filter != nullptr ? o.compaction_filter->Name() : "none");
  return out;
}

absl::Status CheckOptionsFile(std::string_view text_in, std::string_view path_in) {
  // Abseil 20220623's string_view is its own type.
  const absl::string_view text(text_in.data(), text_in.size());
  const absl::string_view path(path_in.data(), path_in.size());
  const std::vector<FormatKey> format_keys = FormatKeys();
  std::string section;
  bool saw_version = false;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = std::string(line.substr(1, line.size() - 2));
      continue;
    }
    const size_t eq = line.find('=');
    uint64_t value = 0;
    const bool numeric =
        eq != absl::string_view::npos && absl::SimpleAtoi(line.substr(eq + 1), &value);
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::DataLossError(
          absl::StrFormat("%s: line %d is not a comment, a [section] or key=value: \"%s\"", path,
                          line_number, absl::CHexEscape(line)));
    }
    const absl::string_view key = line.substr(0, eq);
    if (section == "version" && key == "options_file_version") {
      if (!numeric) {
        return absl::DataLossError(absl::StrFormat(
            "%s: line %d: options_file_version is not a number", path, line_number));
      }
      if (value > kOptionsFileVersion) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "%s: options_file_version %d is newer than this build's %d: written by a newer cairn",
            path, value, kOptionsFileVersion));
      }
      saw_version = true;
      continue;
    }
    if (section != "format") continue;  // [options] and unknown sections: tuning, a record only
    auto known = std::find_if(format_keys.begin(), format_keys.end(),
                              [&](const FormatKey& k) { return key == k.name; });
    if (known == format_keys.end()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s: line %d: format key \"%s\" is unknown to this build: the database was written by "
          "a newer cairn whose files this build may misread",
          path, line_number, absl::CHexEscape(key)));
    }
    if (!numeric) {
      return absl::DataLossError(
          absl::StrFormat("%s: line %d: %s is not a number", path, line_number, known->name));
    }
    if (value > known->value) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s: the database was written with %s %d (%s), above this build's %d: open it with "
          "the cairn that wrote it",
          path, known->what, value, known->name, known->value));
    }
  }
  if (!saw_version) {
    return absl::DataLossError(absl::StrCat(path, ": no options_file_version in [version]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<uint64_t>> LatestOptionsFile(io::FileSystem* fs,
                                                          const std::string& dbname) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, fs->ListDir(dbname));
  std::optional<uint64_t> latest;
  for (const std::string& name : names) {
    uint64_t number;
    lsm::FileType type;
    if (!lsm::ParseFileName(name, &number, &type) || type != lsm::FileType::kOptions) continue;
    if (!latest.has_value() || number > *latest) latest = number;
  }
  return latest;
}

absl::StatusOr<std::string> ReadOptionsFile(io::FileSystem* fs, const std::string& dbname,
                                            uint64_t number) {
  const std::string path = lsm::OptionsFileName(dbname, number);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file,
                         fs->NewRandomAccessFile(path, {.category = io::IoCategory::kOther}));
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (size > kMaxOptionsFileSize) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", size, " bytes, more than an OPTIONS file ever holds"));
  }
  std::string scratch(static_cast<size_t>(size), '\0');
  std::string_view content;
  CAIRN_RETURN_IF_ERROR(file->Read(0, scratch.size(), scratch.data(), &content));
  return std::string(content);
}

absl::Status WriteOptionsFile(io::FileSystem* fs, const std::string& dbname, uint64_t number,
                              const Options& options) {
  const std::string tmp = lsm::TempFileName(dbname, number);
  absl::Status s = [&]() -> absl::Status {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file,
                           fs->NewWritableFile(tmp, {.category = io::IoCategory::kOther}));
    CAIRN_RETURN_IF_ERROR(file->Append(FormatOptionsFile(options)));
    CAIRN_RETURN_IF_ERROR(file->Sync());
    CAIRN_RETURN_IF_ERROR(file->Close());
    CAIRN_RETURN_IF_ERROR(fs->RenameFile(tmp, lsm::OptionsFileName(dbname, number)));
    return fs->SyncDir(dbname);
  }();
  if (!s.ok()) {
    fs->RemoveFile(tmp).IgnoreError();
    return s;
  }
  // Keep this file and the one before it; older ones only take room.
  absl::StatusOr<std::vector<std::string>> names = fs->ListDir(dbname);
  if (!names.ok()) return absl::OkStatus();
  std::vector<uint64_t> numbers;
  for (const std::string& name : *names) {
    uint64_t n;
    lsm::FileType type;
    if (lsm::ParseFileName(name, &n, &type) && type == lsm::FileType::kOptions) {
      numbers.push_back(n);
    }
  }
  std::sort(numbers.begin(), numbers.end(), std::greater<>());
  for (size_t i = 2; i < numbers.size(); ++i) {
    fs->RemoveFile(lsm::OptionsFileName(dbname, numbers[i])).IgnoreError();
  }
  return absl::OkStatus();
}

}  // namespace cairn
