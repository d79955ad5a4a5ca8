// Stats and properties: the engine's own measurements, from the io layer's
// byte counters and the read path's counters; and their dump to the info log
// every Options::stats_dump_period_sec.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/db_impl.h"
#include "core/options_file.h"
#include "io/status_macros.h"
#include "lsm/dbformat.h"
#include "vlog/value_pointer.h"
#include "vlog/vlog_format.h"

namespace cairn {
namespace {

// Bytes of every file in dir (a file that goes between the listing and its
// size counts nothing).
uint64_t DirectoryBytes(io::FileSystem* fs, const std::string& dir) {
  absl::StatusOr<std::vector<std::string>> names = fs->ListDir(dir);
  if (!names.ok()) return 0;
  uint64_t total = 0;
  for (const std::string& name : *names) {
    // What each file takes on the device, as du counts it: a punched run's
    // blocks take nothing (file systems that cannot tell give the size).
    absl::StatusOr<io::FileSystem::FileSpace> space = fs->GetFileSpace(absl::StrCat(dir, "/", name));
    if (space.ok()) total += space->allocated_bytes;
  }
  return total;
}

}  // namespace

using io::IoCategory;

Stats DBImpl::GetStats() {
  Stats st;
  st.io_backend = fs_->Name();
  st.user_bytes_written = counters_.bytes_written.load();
  st.puts = counters_.puts.load();
  st.deletes = counters_.deletes.load();
  st.range_deletes = counters_.range_deletes.load();
  {
    SuperVersionRef sv = sv_cache_.Acquire();
    for (int level = 0; level < lsm::kNumLevels; ++level) {
      for (const auto& f : sv->version->files(level)) {
        st.range_tombstones_in_tables += f->num_range_deletions;
      }
    }
  }
  st.gets = counters_.gets.load();
  st.gets_found = counters_.gets_found.load();
  st.expired_dropped = counters_.expired_dropped.load();
  st.filter_removed = counters_.filter_removed.load();
  st.filter_changed = counters_.filter_changed.load();
  st.filter_value_reads = counters_.filter_values_read.load();
  st.filter_value_bytes_read = counters_.filter_value_bytes_read.load();

  const auto io = fs_->stats().GetAll();
  auto cat = [&io](IoCategory c) { return io[static_cast<int>(c)]; };
  st.wal_bytes_written = cat(IoCategory::kWal).bytes_written;
  st.wal_bytes_prefilled = cat(IoCategory::kWal).bytes_prefilled;
  st.vlog_bytes_written = cat(IoCategory::kValueLog).bytes_written;
  st.flush_bytes_written = cat(IoCategory::kFlush).bytes_written;
  st.compaction_bytes_written = cat(IoCategory::kCompaction).bytes_written;
  st.gc_bytes_written = cat(IoCategory::kGc).bytes_written;
  st.manifest_bytes_written = cat(IoCategory::kManifest).bytes_written;
  const uint64_t disk_written = st.wal_bytes_written + st.vlog_bytes_written +
                                st.flush_bytes_written + st.compaction_bytes_written +
                                st.gc_bytes_written + st.manifest_bytes_written;
  st.write_amplification =
      st.user_bytes_written == 0 ? 0 : static_cast<double>(disk_written) / st.user_bytes_written;

  st.table_reads = cat(IoCategory::kTable).read_ops;
  st.table_bytes_read = cat(IoCategory::kTable).bytes_read;
  st.vlog_reads = cat(IoCategory::kValueLog).read_ops;
  st.vlog_bytes_read = cat(IoCategory::kValueLog).bytes_read;
  st.read_amplification =
      st.gets == 0 ? 0 : static_cast<double>(st.table_reads + st.vlog_reads) / st.gets;
  st.bloom_probes = read_counters_.bloom_probes.load();
  st.bloom_rejections = read_counters_.bloom_rejections.load();
  st.bloom_false_positives = read_counters_.bloom_false_positives.load();
  st.block_cache_hits = read_counters_.block_cache_hits.load();
  st.block_cache_misses = read_counters_.block_cache_misses.load();

  std::shared_ptr<const lsm::Version> v = versions_->current();
  std::array<LevelCompactionStats, lsm::kNumLevels> level_stats;
  {
    absl::MutexLock l(&mu_);
    level_stats = level_stats_;
    st.pending_compaction_bytes = pending_compaction_bytes_;
  }
  for (int level = 0; level < lsm::kNumLevels; ++level) {
    LevelStats ls;
    ls.level = level;
    ls.files = v->NumFiles(level);
    ls.bytes = v->LevelBytes(level);
    st.sst_bytes += ls.bytes;
    const LevelCompactionStats& cs = level_stats[level];
    if (level == 0) {
      // L0 is written by flushes: its input is what the user wrote.
      ls.compaction_bytes_written = st.flush_bytes_written;
      ls.write_amplification =
          st.user_bytes_written == 0
              ? 0
              : static_cast<double>(st.flush_bytes_written) / st.user_bytes_written;
    } else {
      ls.compaction_bytes_read = cs.bytes_read_upper + cs.bytes_read_lower;
      ls.compaction_bytes_written = cs.bytes_written;
      ls.compactions = cs.compactions;
      ls.trivial_moves = cs.trivial_moves;
      // RocksDB's W-Amp: bytes written into the level per byte that came
      // down from the level above.
      ls.write_amplification =
          cs.bytes_read_upper == 0 ? 0
                                   : static_cast<double>(cs.bytes_written) / cs.bytes_read_upper;
    }
    st.levels.push_back(ls);
  }
  st.stall_slowdowns = counters_.stall_slowdowns.load();
  st.stall_stops = counters_.stall_stops.load();
  st.stall_micros = counters_.stall_micros.load();
  st.stall_max_micros = counters_.stall_max_micros.load();
  st.stall_max_delay_micros = counters_.stall_max_delay_micros.load();
  {
    absl::MutexLock l(&mu_);
    st.delayed_write_rate = write_delayed_ ? gc_.ControllerLocked().delayed_write_rate() : 0;
    st.gc_victim_bytes_waiting = gc_.PendingVictimTotalsLocked().bytes;
  }
  const vlog::ValueLog::Totals vt = vlog_->GetTotals();
  st.vlog_bytes = vt.bytes;
  st.vlog_segments = vt.segments;
  st.vlog_garbage_bytes = vt.garbage_bytes;
  st.vlog_punched_bytes = vt.punched_bytes;
  st.vlog_foreseen_garbage_bytes = gc_.foreseen().total_bytes();
  st.gc_punched_runs = gc_.counters().punch_runs.load();
  st.gc_punched_bytes = gc_.counters().punch_bytes.load();
  st.gc_punch_calls = gc_.counters().punch_calls.load();
  st.gc_punch_skipped_linked = gc_.counters().punch_skipped_linked.load();
  st.gc_punch_held_for_readers = gc_.counters().punch_held_for_readers.load();
  st.value_cache_hits = vt.cache_hits;
  st.value_cache_misses = vt.cache_misses;
  st.value_cache_bytes = vt.cache_bytes;
  st.value_cache_capacity = vt.cache_capacity;
  st.block_cache_bytes = block_cache_->usage();
  st.block_cache_capacity = block_cache_->capacity();
  st.cache_shared = options_.block_cache_size == 0 && options_.value_cache_size == 0;
  st.gc_runs = gc_.counters().runs.load();
  st.gc_segments_freed = gc_.counters().segments_freed.load();
  st.gc_active_seals = gc_.counters().active_seals.load();
  st.gc_bytes_read = gc_.counters().bytes_read.load();
  st.gc_bytes_relocated = gc_.counters().bytes_relocated.load();
  st.gc_records_dropped = gc_.counters().records_dropped.load();
  st.gc_records_known_dead = gc_.counters().records_known_dead.load();
  st.gc_micros = gc_.counters().micros.load();
  st.gc_scan_micros = gc_.counters().scan_micros.load();
  st.gc_liveness_micros = gc_.counters().liveness_micros.load();
  st.gc_write_micros = gc_.counters().write_micros.load();
  st.gc_rewrite_micros = gc_.counters().rewrite_micros.load();
  st.gc_throttled_micros = gc_.counters().throttled_micros.load();
  st.gc_rewrite_rechecks = gc_.counters().rewrite_rechecks.load();
  st.gc_victims_waited = gc_.counters().victims_waited.load();
  st.gc_victim_syncs = gc_.counters().victim_syncs.load();
  st.gc_victim_switches = gc_.counters().victim_switches.load();
  st.gc_relocated_per_user_byte =
      st.user_bytes_written == 0
          ? 0
          : static_cast<double>(st.gc_bytes_relocated) / static_cast<double>(st.user_bytes_written);
  st.gc_recounted_bytes = gc_.counters().leaked_bytes_recounted.load();
  st.vlog_space_amplification = ValueLogSpaceAmplification();
  st.gc_space_amplification = GetValueLogSpace(/*with_estimate=*/true).amplification();
  // Live user bytes are known only from a full scan (cairn.live-bytes);
  // until one has run, space amplification is reported as 0 (unknown).
  st.live_user_bytes_estimate = counters_.live_bytes.load();
  st.disk_bytes = DirectoryBytes(fs_.get(), dbname_);
  st.space_amplification =
      st.live_user_bytes_estimate == 0
          ? 0
          : static_cast<double>(st.disk_bytes) / st.live_user_bytes_estimate;
  return st;
}

namespace {

std::string FormatStats(const Stats& st) {
  std::string out;
  absl::StrAppendFormat(&out, "** cairn stats **\nio backend: %s\n", st.io_backend);
  absl::StrAppendFormat(&out, "user: %d puts, %d deletes, %d gets (%d found), %.1f MiB written\n",
                        st.puts, st.deletes, st.gets, st.gets_found,
                        st.user_bytes_written / 1048576.0);
  absl::StrAppendFormat(&out, "range deletes: %d written, %d range tombstones in tables\n",
                        st.range_deletes, st.range_tombstones_in_tables);
  absl::StrAppendFormat(&out,
                        "expiry and filters: %d expired dropped, %d filtered out, %d changed, "
                        "%d filter value reads (%.1f MiB)\n",
                        st.expired_dropped, st.filter_removed, st.filter_changed,
                        st.filter_value_reads, st.filter_value_bytes_read / 1048576.0);
  absl::StrAppendFormat(&out,
                        "write amplification %.2f: wal %.1f MiB, vlog %.1f MiB, flush %.1f MiB, "
                        "compaction %.1f MiB, gc %.1f MiB, manifest %.2f MiB\n",
                        st.write_amplification, st.wal_bytes_written / 1048576.0,
                        st.vlog_bytes_written / 1048576.0, st.flush_bytes_written / 1048576.0,
                        st.compaction_bytes_written / 1048576.0, st.gc_bytes_written / 1048576.0,
                        st.manifest_bytes_written / 1048576.0);
  absl::StrAppendFormat(&out, "wal zero-filled ahead of its appends: %.1f MiB (not counted above)\n",
                        st.wal_bytes_prefilled / 1048576.0);
  absl::StrAppendFormat(&out,
                        "read amplification %.2f device reads/get: %d table reads (%.1f MiB), "
                        "%d vlog reads (%.1f MiB)\n",
                        st.read_amplification, st.table_reads, st.table_bytes_read / 1048576.0,
                        st.vlog_reads, st.vlog_bytes_read / 1048576.0);
  absl::StrAppendFormat(&out, "bloom: %d probes, %d rejections, %d false positives\n",
                        st.bloom_probes, st.bloom_rejections, st.bloom_false_positives);
  absl::StrAppendFormat(&out, "cache: %s\n",
                        st.cache_shared ? "one budget for blocks and values"
                                        : "blocks and values apart");
  absl::StrAppendFormat(&out, "block cache: %d hits, %d misses, %.1f MiB of %.1f MiB\n",
                        st.block_cache_hits, st.block_cache_misses,
                        st.block_cache_bytes / 1048576.0, st.block_cache_capacity / 1048576.0);
  absl::StrAppendFormat(&out, "value cache: %d hits, %d misses, %.1f MiB of %.1f MiB\n",
                        st.value_cache_hits, st.value_cache_misses,
                        st.value_cache_bytes / 1048576.0, st.value_cache_capacity / 1048576.0);
  absl::StrAppendFormat(&out,
                        "space amplification %.2f: %.1f MiB on disk: sst %.1f MiB, vlog %.1f MiB "
                        "in %d segments (%.1f MiB garbage, of which %.1f MiB punched out, and "
                        "%.1f MiB foreseen), wal and other files %.1f MiB\n",
                        st.space_amplification, st.disk_bytes / 1048576.0,
                        st.sst_bytes / 1048576.0, st.vlog_bytes / 1048576.0, st.vlog_segments,
                        st.vlog_garbage_bytes / 1048576.0, st.vlog_punched_bytes / 1048576.0,
                        st.vlog_foreseen_garbage_bytes / 1048576.0,
                        (st.disk_bytes - std::min(st.disk_bytes, st.sst_bytes + st.vlog_bytes -
                                                                     std::min(st.vlog_bytes, st.vlog_punched_bytes))) /
                            1048576.0);
  absl::StrAppendFormat(&out,
                        "gc: %d victims, %d segments freed, %.1f MiB read, %.1f MiB relocated, "
                        "%d records dropped (%d known dead without a lookup), %.2f s, %.3f "
                        "relocated per user byte, %.1f MiB recounted at open; value-log space "
                        "amplification %.2f (%.2f as GC steers by it)\n",
                        st.gc_runs, st.gc_segments_freed, st.gc_bytes_read / 1048576.0,
                        st.gc_bytes_relocated / 1048576.0, st.gc_records_dropped,
                        st.gc_records_known_dead,
                        st.gc_micros / 1e6, st.gc_relocated_per_user_byte,
                        st.gc_recounted_bytes / 1048576.0, st.vlog_space_amplification,
                        st.gc_space_amplification);
  absl::StrAppendFormat(&out,
                        "gc time: scan %.2f s, liveness %.2f s, write %.2f s, rewrite %.2f s, "
                        "throttled %.2f s; %d keys checked again before their rewrite\n",
                        st.gc_scan_micros / 1e6, st.gc_liveness_micros / 1e6,
                        st.gc_write_micros / 1e6, st.gc_rewrite_micros / 1e6,
                        st.gc_throttled_micros / 1e6, st.gc_rewrite_rechecks);
  absl::StrAppendFormat(&out,
                        "gc punched runs: %d runs, %.1f MiB of whole blocks punched in %d holes; "
                        "%d segments left unpunched for a second name, %d rounds held for "
                        "read-only readers\n",
                        st.gc_punched_runs, st.gc_punched_bytes / 1048576.0, st.gc_punch_calls,
                        st.gc_punch_skipped_linked, st.gc_punch_held_for_readers);
  absl::StrAppendFormat(&out,
                        "gc victims: %d waited for their rewrites' durability, %d WAL syncs "
                        "and %d memtable switches forced for them, %.1f MiB waiting; %d active "
                        "segments sealed early to collect them\n",
                        st.gc_victims_waited, st.gc_victim_syncs, st.gc_victim_switches,
                        st.gc_victim_bytes_waiting / 1048576.0, st.gc_active_seals);
  absl::StrAppendFormat(&out,
                        "stalls: %d slowdowns, %d stops, %.3f s (longest wait %.3f s); delayed "
                        "write rate %.1f MiB/s; pending compaction %.1f MiB\n",
                        st.stall_slowdowns, st.stall_stops, st.stall_micros / 1e6,
                        st.stall_max_micros / 1e6, st.delayed_write_rate / 1048576.0,
                        st.pending_compaction_bytes / 1048576.0);
  absl::StrAppendFormat(&out, "%-5s %6s %10s %10s %10s %8s %6s %6s\n", "level", "files",
                        "size MiB", "read MiB", "write MiB", "comps", "moves", "w-amp");
  for (const LevelStats& ls : st.levels) {
    absl::StrAppendFormat(&out, "L%-4d %6d %10.1f %10.1f %10.1f %8d %6d %6.2f\n", ls.level,
                          ls.files, ls.bytes / 1048576.0, ls.compaction_bytes_read / 1048576.0,
                          ls.compaction_bytes_written / 1048576.0, ls.compactions,
                          ls.trivial_moves, ls.write_amplification);
  }
  return out;
}

}  // namespace

absl::StatusOr<uint64_t> DBImpl::LiveBytesFromPointers() {
  const ReadView view = GetReadView(ReadOptions());
  std::unique_ptr<lsm::InternalIterator> it = NewInternalIterator(view);
  uint64_t bytes = 0;
  std::string last_key;
  bool have_last = false;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    lsm::ParsedInternalKey ikey;
    if (!lsm::ParseInternalKey(it->key(), &ikey)) {
      return absl::DataLossError("cairn.live-bytes: an entry with a malformed internal key");
    }
    // The newest version at or below the view's sequence decides a key.
    if (ikey.sequence > view.sequence) continue;
    if (have_last && ikey.user_key == last_key) continue;
    last_key.assign(ikey.user_key);
    have_last = true;
    // An expired entry is a deletion here as for reads.
    lsm::StoredValue sv;
    if (!lsm::SplitStoredValue(ikey.type, it->value(), &sv)) {
      return absl::DataLossError("cairn.live-bytes: an expiring entry without its expiry");
    }
    if (lsm::IsExpired(sv.expiry_micros, view.now_micros)) continue;
    switch (sv.type) {
      case lsm::ValueType::kValue: bytes += ikey.user_key.size() + sv.payload.size(); break;
      case lsm::ValueType::kValuePointer: {
        // The record holds the key and the value as stored (compressed,
        // when it is): its size less the header, read from the pointer.
        absl::StatusOr<vlog::ValuePointer> ptr = vlog::DecodeValuePointer(sv.payload);
        if (!ptr.ok()) return ptr.status();
        bytes += ptr->size - vlog::kRecordHeaderSize;
        break;
      }
      default: break;  // a deletion or range deletion
    }
  }
  CAIRN_RETURN_IF_ERROR(it->status());
  return bytes;
}

bool DBImpl::GetProperty(std::string_view name, std::string* value) {
  value->clear();
  if (!CheckNotClosed().ok()) return false;
  if (name == "cairn.options") {
    absl::StatusOr<std::optional<uint64_t>> number = LatestOptionsFile(fs_.get(), dbname_);
    if (!number.ok() || !number->has_value()) return false;
    absl::StatusOr<std::string> text = ReadOptionsFile(fs_.get(), dbname_, **number);
    if (!text.ok()) return false;
    *value = *std::move(text);
    return true;
  }
  if (name == "cairn.stats") {
    *value = FormatStats(GetStats());
    return true;
  }
  if (name == "cairn.live-bytes") {
    // Scans the LSM tree only: the sizes of separated values come from
    // their pointers, so no value is read.
    absl::StatusOr<uint64_t> bytes = LiveBytesFromPointers();
    if (!bytes.ok()) return false;
    counters_.live_bytes.store(*bytes);
    *value = absl::StrCat(*bytes);
    return true;
  }
  if (name == "cairn.io-backend") {
    *value = fs_->Name();
    return true;
  }
  constexpr std::string_view kFilesAtLevel = "cairn.num-files-at-level";
  if (name.substr(0, kFilesAtLevel.size()) == kFilesAtLevel) {
    int level;
    if (!absl::SimpleAtoi(std::string(name.substr(kFilesAtLevel.size())), &level) || level < 0 ||
        level >= lsm::kNumLevels) {
      return false;
    }
    *value = absl::StrCat(versions_->current()->NumFiles(level));
    return true;
  }
  return false;
}

void DBImpl::StatsDumpThread() {
  const absl::Duration period = absl::Seconds(options_.stats_dump_period_sec);
  absl::Time next = absl::Now() + period;
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      // The close signals background_cv_; so does every flush, compaction
      // and GC round, after which the wait goes on to the same deadline.
      while (!shutting_down_ && absl::Now() < next) background_cv_.WaitWithDeadline(&mu_, next);
      if (shutting_down_) return;
    }
    // A dump that comes late (a machine that slept) is not followed by the
    // ones it missed.
    next = std::max(next + period, absl::Now());
    info_log_->Log("stats (every %d s):\n%s", options_.stats_dump_period_sec,
                   FormatStats(GetStats()));
  }
}

}  // namespace cairn
