// `cairn stats [--json] <db-dir>`: opens the database read-only
// (DB::OpenForReadOnly: no LOCK, nothing written, no background work, so it
// works on a database another process has open), runs the cairn.live-bytes
// scan (the LSM tree only: separated values are counted by their pointers'
// sizes, none is read) so space amplification is measured, and prints
// GetProperty("cairn.stats"), cairn.live-bytes and the newest OPTIONS file,
// or with --json GetStats() as one JSON object with "options" holding the
// OPTIONS file's text.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "cairn/options.h"
#include "cairn/stats.h"
#include "tools/commands.h"

namespace cairn::tools {
namespace {

constexpr std::string_view kCommand = "stats";

// A JSON string literal (the values here are ASCII names; anything else is
// escaped as \u00NN).
std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    }
  }
  out.push_back('"');
  return out;
}

// Appends `"name": value` for each pair, comma-separated.
class JsonObject {
 public:
  JsonObject& Add(std::string_view name, uint64_t v) { return Raw(name, absl::StrCat(v)); }
  JsonObject& Add(std::string_view name, int v) { return Raw(name, absl::StrCat(v)); }
  JsonObject& Add(std::string_view name, double v) { return Raw(name, absl::StrFormat("%.6g", v)); }
  JsonObject& Add(std::string_view name, std::string_view v) { return Raw(name, JsonString(v)); }
  JsonObject& Raw(std::string_view name, std::string_view json) {
    absl::StrAppend(&body_, body_.empty() ? "" : ", ", JsonString(name), ": ", std::string(json));
    return *this;
  }
  std::string Done() const { return absl::StrCat("{", body_, "}"); }

 private:
  std::string body_;
};

std::string StatsToJson(const Stats& s) {
  std::string levels;
  for (const LevelStats& l : s.levels) {
    absl::StrAppend(&levels, levels.empty() ? "" : ", ",
                    JsonObject()
                        .Add("level", l.level)
                        .Add("files", l.files)
                        .Add("bytes", l.bytes)
                        .Add("compaction_bytes_read", l.compaction_bytes_read)
                        .Add("compaction_bytes_written", l.compaction_bytes_written)
                        .Add("compactions", l.compactions)
                        .Add("trivial_moves", l.trivial_moves)
                        .Add("write_amplification", l.write_amplification)
                        .Done());
  }
  return JsonObject()
      .Add("io_backend", s.io_backend)
      .Add("user_bytes_written", s.user_bytes_written)
      .Add("puts", s.puts)
      .Add("deletes", s.deletes)
      .Add("gets", s.gets)
      .Add("gets_found", s.gets_found)
      .Add("expired_dropped", s.expired_dropped)
      .Add("filter_removed", s.filter_removed)
      .Add("filter_changed", s.filter_changed)
      .Add("filter_value_reads", s.filter_value_reads)
      .Add("filter_value_bytes_read", s.filter_value_bytes_read)
      .Add("wal_bytes_written", s.wal_bytes_written)
      .Add("wal_bytes_prefilled", s.wal_bytes_prefilled)
      .Add("vlog_bytes_written", s.vlog_bytes_written)
      .Add("flush_bytes_written", s.flush_bytes_written)
      .Add("compaction_bytes_written", s.compaction_bytes_written)
      .Add("gc_bytes_written", s.gc_bytes_written)
      .Add("manifest_bytes_written", s.manifest_bytes_written)
      .Add("write_amplification", s.write_amplification)
      .Add("table_reads", s.table_reads)
      .Add("table_bytes_read", s.table_bytes_read)
      .Add("vlog_reads", s.vlog_reads)
      .Add("vlog_bytes_read", s.vlog_bytes_read)
      .Add("read_amplification", s.read_amplification)
      .Add("bloom_probes", s.bloom_probes)
      .Add("bloom_rejections", s.bloom_rejections)
      .Add("bloom_false_positives", s.bloom_false_positives)
      .Add("block_cache_hits", s.block_cache_hits)
      .Add("block_cache_misses", s.block_cache_misses)
      .Add("value_cache_hits", s.value_cache_hits)
      .Add("value_cache_misses", s.value_cache_misses)
      .Add("block_cache_bytes", s.block_cache_bytes)
      .Add("block_cache_capacity", s.block_cache_capacity)
      .Add("value_cache_bytes", s.value_cache_bytes)
      .Add("value_cache_capacity", s.value_cache_capacity)
      .Add("cache_shared", s.cache_shared ? 1 : 0)
      .Add("disk_bytes", s.disk_bytes)
      .Add("sst_bytes", s.sst_bytes)
      .Add("vlog_bytes", s.vlog_bytes)
      .Add("vlog_segments", s.vlog_segments)
      .Add("vlog_garbage_bytes", s.vlog_garbage_bytes)
      .Add("vlog_foreseen_garbage_bytes", s.vlog_foreseen_garbage_bytes)
      .Add("live_user_bytes_estimate", s.live_user_bytes_estimate)
      .Add("space_amplification", s.space_amplification)
      .Add("stall_slowdowns", s.stall_slowdowns)
      .Add("stall_stops", s.stall_stops)
      .Add("stall_micros", s.stall_micros)
      .Add("pending_compaction_bytes", s.pending_compaction_bytes)
      .Raw("levels", absl::StrCat("[", levels, "]"))
      .Done();
}

}  // namespace

int RunStats(const Args& args) {
  if (args.size() != 1) return UsageError(kCommand, "expects exactly one database directory");
  absl::StatusOr<std::unique_ptr<DB>> db = DB::OpenForReadOnly(Options(), args[0]);
  if (!db.ok()) return Fail(kCommand, db.status());

  std::string live_bytes;
  if (!(*db)->GetProperty("cairn.live-bytes", &live_bytes)) {
    return Fail(kCommand, absl::InternalError("the DB does not know cairn.live-bytes"));
  }
  // A database created before OPTIONS files existed has none.
  std::string options_text;
  const bool has_options = (*db)->GetProperty("cairn.options", &options_text);
  if (absl::GetFlag(FLAGS_json)) {
    std::string json = StatsToJson((*db)->GetStats());
    json.pop_back();  // the closing brace
    absl::PrintF("%s, \"options\": %s}\n", json,
                 has_options ? JsonString(options_text) : std::string("null"));
    return kExitOk;
  }
  std::string stats;
  if (!(*db)->GetProperty("cairn.stats", &stats)) {
    return Fail(kCommand, absl::InternalError("the DB does not know cairn.stats"));
  }
  absl::PrintF("%s", stats);
  if (!stats.empty() && stats.back() != '\n') absl::PrintF("\n");
  absl::PrintF("cairn.live-bytes: %s\n", live_bytes);
  if (has_options) {
    absl::PrintF("** options (newest OPTIONS file) **\n%s", options_text);
  } else {
    absl::PrintF("** options **\nno OPTIONS file (written at the next read-write open)\n");
  }
  return kExitOk;
}

}  // namespace cairn::tools
