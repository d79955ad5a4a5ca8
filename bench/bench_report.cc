// Text and JSON rendering of BenchResult.
#include "bench/bench_report.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cairn::bench {

double BenchResult::WriteAmp(uint64_t component_bytes) const {
  return delta.user_bytes_written == 0
             ? 0
             : static_cast<double>(component_bytes) / delta.user_bytes_written;
}

double BenchResult::ReadsPerOp() const {
  return ops == 0 ? 0 : static_cast<double>(delta.table_reads + delta.vlog_reads) / ops;
}

double BenchResult::ReadBytesPerOp() const {
  return ops == 0 ? 0 : static_cast<double>(delta.table_bytes_read + delta.vlog_bytes_read) / ops;
}

void PrintTextHeader(std::FILE* out) {
  absl::FPrintF(out, "%-16s %-16s %12s %9s %9s %9s %9s %7s %7s %7s %8s\n", "benchmark", "engine",
                "ops/s", "MiB/s", "p50 us", "p99 us", "p99.9 us", "w-amp", "rd/op", "s-amp",
                "stall s");
}

void PrintText(const BenchResult& r, std::FILE* out) {
  const std::string space =
      r.space_measured ? absl::StrFormat("%.2f", r.space_amplification) : std::string("-");
  absl::FPrintF(out, "%-16s %-16s %12.0f %9.1f %9.1f %9.1f %9.1f %7.2f %7.2f %7s %8.2f\n",
                r.benchmark, r.engine, r.OpsPerSec(), r.MiBPerSec(),
                r.latency.Percentile(50) / 1e3, r.latency.Percentile(99) / 1e3,
                r.latency.Percentile(99.9) / 1e3, r.WriteAmp(r.delta.total_bytes_written),
                r.ReadsPerOp(), space, r.delta.stall_micros / 1e6);
  const EngineStats& d = r.delta;
  std::string detail = absl::StrFormat(
      "    %d ops in %.2f s (%d threads), %d found", r.ops, r.seconds, r.threads, r.found);
  if (r.writer_ops != 0) absl::StrAppendFormat(&detail, ", %d background puts", r.writer_ops);
  if (r.settle_seconds > 0) {
    absl::StrAppendFormat(&detail, "; settle %.2f s: %.0f ops/s, %.1f MiB/s including it",
                          r.settle_seconds, r.SettledOpsPerSec(), r.SettledMiBPerSec());
  }
  if (d.user_bytes_written != 0) {
    absl::StrAppendFormat(&detail,
                          "\n    write amp %.2f %s wal %.2f + vlog %.2f + flush %.2f + "
                          "compaction %.2f + gc %.2f + manifest %.3f%s",
                          r.WriteAmp(d.total_bytes_written), d.vlog_inside_flush ? ":" : "=", r.WriteAmp(d.wal_bytes),
                          r.WriteAmp(d.vlog_bytes), r.WriteAmp(d.flush_bytes),
                          r.WriteAmp(d.compaction_bytes), r.WriteAmp(d.gc_bytes),
                          r.WriteAmp(d.manifest_bytes),
                          d.vlog_inside_flush ? " (vlog counted inside flush and compaction)" : "");
  }
  if (d.table_reads + d.vlog_reads != 0) {
    absl::StrAppendFormat(&detail,
                          "\n    device reads/op %.2f (table %.2f, vlog %.2f), %.1f KiB read/op",
                          r.ReadsPerOp(), r.ops ? static_cast<double>(d.table_reads) / r.ops : 0,
                          r.ops ? static_cast<double>(d.vlog_reads) / r.ops : 0,
                          r.ReadBytesPerOp() / 1024);
    if (r.scanned != 0) {
      absl::StrAppendFormat(&detail, "; %d entries scanned, vlog reads per scanned entry %.3f",
                            r.scanned, static_cast<double>(d.vlog_reads) / r.scanned);
    }
  }
  if (r.os_read_bytes != 0) {
    absl::StrAppendFormat(&detail, "\n    storage read by the process (/proc/self/io): %.1f KiB/op",
                          r.OsReadBytesPerOp() / 1024);
  }
  if (r.os_written_bytes != 0 && d.user_bytes_written != 0) {
    absl::StrAppendFormat(&detail,
                          "\n    storage written by the process (/proc/self/io, less cancelled "
                          "writeback): %.2f per user byte",
                          r.WriteAmp(r.os_written_bytes));
  }
  if (r.space_measured) {
    absl::StrAppendFormat(&detail,
                          "\n    space amp %.2f: %.1f MiB on disk, %.1f MiB live; max during "
                          "the run %.2f (%.1f MiB)",
                          r.space_amplification, r.disk_bytes / 1048576.0,
                          r.live_bytes / 1048576.0, r.max_space_amplification,
                          r.max_disk_bytes / 1048576.0);
  }
  if (d.gc_bytes_relocated != 0) {
    absl::StrAppendFormat(&detail, "\n    gc relocated %.1f MiB (%.3f per user byte)",
                          d.gc_bytes_relocated / 1048576.0,
                          d.user_bytes_written == 0
                              ? 0.0
                              : static_cast<double>(d.gc_bytes_relocated) / d.user_bytes_written);
  }
  if (d.stall_micros != 0) {
    absl::StrAppendFormat(&detail, "\n    writes stalled %.2f s (%.1f%% of the run)",
                          d.stall_micros / 1e6,
                          r.seconds > 0 ? 100.0 * d.stall_micros / 1e6 / r.seconds : 0.0);
    if (d.stall_max_micros != 0) {
      absl::StrAppendFormat(&detail, ", longest wait of one write %.1f ms (since open)",
                            d.stall_max_micros / 1e3);
    }
  }
  absl::FPrintF(out, "%s\n", detail);
}

void PrintJson(const BenchResult& r, std::FILE* out) {
  const EngineStats& d = r.delta;
  std::string json = absl::StrFormat(
      "{\"benchmark\":\"%s\",\"engine\":\"%s\",\"threads\":%d,\"ops\":%d,\"found\":%d,"
      "\"seconds\":%.6f,\"ops_per_sec\":%.1f,\"mb_per_sec\":%.3f,\"bytes\":%d,"
      "\"settle_seconds\":%.6f,\"settled_ops_per_sec\":%.1f,\"settled_mb_per_sec\":%.3f,"
      "\"os_read_bytes\":%d,\"os_read_bytes_per_op\":%.1f,"
      "\"latency_us\":{\"mean\":%.3f,\"p50\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f},",
      r.benchmark, r.engine, r.threads, r.ops, r.found, r.seconds, r.OpsPerSec(), r.MiBPerSec(),
      r.bytes, r.settle_seconds, r.SettledOpsPerSec(), r.SettledMiBPerSec(), r.os_read_bytes,
      r.OsReadBytesPerOp(), r.latency.Mean() / 1e3, r.latency.Percentile(50) / 1e3,
      r.latency.Percentile(99) / 1e3, r.latency.Percentile(99.9) / 1e3, r.latency.max() / 1e3);
  absl::StrAppendFormat(
      &json,
      "\"write_amp\":{\"total\":%.4f,\"wal\":%.4f,\"vlog\":%.4f,\"flush\":%.4f,"
      "\"compaction\":%.4f,\"gc\":%.4f,\"manifest\":%.4f,\"vlog_inside_flush\":%s},\"user_bytes_written\":%d,"
      "\"device_bytes_written\":%d,\"os_written_bytes\":%d,\"os_write_amp\":%.4f,",
      r.WriteAmp(d.total_bytes_written), r.WriteAmp(d.wal_bytes), r.WriteAmp(d.vlog_bytes),
      r.WriteAmp(d.flush_bytes), r.WriteAmp(d.compaction_bytes), r.WriteAmp(d.gc_bytes),
      r.WriteAmp(d.manifest_bytes), d.vlog_inside_flush ? "true" : "false", d.user_bytes_written,
      d.total_bytes_written, r.os_written_bytes, r.WriteAmp(r.os_written_bytes));
  absl::StrAppendFormat(
      &json,
      "\"read_amp\":{\"reads_per_op\":%.4f,\"bytes_per_op\":%.1f,\"table_reads\":%d,"
      "\"table_bytes_read\":%d,\"vlog_reads\":%d,\"vlog_bytes_read\":%d},",
      r.ReadsPerOp(), r.ReadBytesPerOp(), d.table_reads, d.table_bytes_read, d.vlog_reads,
      d.vlog_bytes_read);
  absl::StrAppendFormat(&json,
                        "\"space_amp\":%s,\"max_space_amp\":%.4f,\"disk_bytes\":%d,"
                        "\"max_disk_bytes\":%d,\"live_bytes\":%d,"
                        "\"stall_micros\":%d,\"gc_bytes\":%d,\"writer_ops\":%d}",
                        r.space_measured ? absl::StrFormat("%.4f", r.space_amplification) : "null",
                        r.max_space_amplification, r.disk_bytes, r.max_disk_bytes, r.live_bytes, d.stall_micros, d.gc_bytes_relocated,
                        r.writer_ops);
  absl::FPrintF(out, "%s\n", json);
}

}  // namespace cairn::bench
