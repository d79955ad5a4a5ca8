// io_probe measures this machine's disk through cairn's io layer, once per
// backend: sequential O_DIRECT write throughput (1 MiB appends, then one
// Sync), and random 4 KiB O_DIRECT reads per second at queue depth 1 (one Read
// at a time) and at queue depth 32 (MultiRead batches of 32). The ratio of the
// two read rates shows whether batched reads really are in flight together:
// on an SSD the ring at depth 32 should beat depth 1 several times over,
// while the POSIX backend reads a batch one request after another.
//
//   io_probe [--dir=/tmp] [--size_mb=1024] [--read_file_mb=1024] [--seconds=3]
//            [--backends=io_uring,posix] [--json] [--quick]
//
// It deletes its files before exiting; exit status 0 unless an I/O failed.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/cleanup/cleanup.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "io/aligned_buffer.h"
#include "io/file_system.h"
#include "io/posix_file_system.h"
#include "io/status_macros.h"

ABSL_FLAG(std::string, dir, "/tmp", "directory for the probe's file (on the disk to measure)");
ABSL_FLAG(int64_t, size_mb, 1024, "MiB written by the sequential write test");
ABSL_FLAG(int64_t, read_file_mb, 1024, "MiB of file the random reads spread over");
ABSL_FLAG(double, seconds, 3.0, "seconds per random read measurement");
ABSL_FLAG(std::string, backends, "io_uring,posix", "comma-separated: io_uring, posix");
ABSL_FLAG(bool, json, false, "print one JSON object instead of a table");
ABSL_FLAG(bool, quick, false, "CI smoke run: 64 MiB files, 0.5 s per measurement");

namespace cairn::bench {
namespace {

using io::AlignedBuffer;
using io::FileOptions;
using io::FileSystem;

constexpr size_t kMiB = 1 << 20;
constexpr size_t kBlock = 4096;
constexpr size_t kDepth = 32;

struct Params {
  std::string dir;
  uint64_t size_mb;
  uint64_t read_file_mb;
  absl::Duration duration;
};

struct ProbeResult {
  std::string backend;  // what NewFileSystem gave (it may fall back)
  bool direct = false;  // whether the file system accepted O_DIRECT
  double write_mbps = 0;
  double qd1_iops = 0;
  double qd32_iops = 0;
  double Ratio() const { return qd1_iops > 0 ? qd32_iops / qd1_iops : 0; }
};

FileOptions DirectOptions() {
  FileOptions options;
  options.direct = true;
  return options;
}

// Appends mb MiB of random bytes (to path, created or extended) and syncs.
// Returns the seconds from the first append to the end of the sync.
absl::StatusOr<double> WriteMiB(FileSystem& fs, const std::string& path, uint64_t mb,
                                bool extend, bool* direct) {
  std::unique_ptr<io::WritableFile> file;
  if (extend) {
    CAIRN_ASSIGN_OR_RETURN(file, fs.ReopenWritableFile(path, DirectOptions()));
  } else {
    CAIRN_ASSIGN_OR_RETURN(file, fs.NewWritableFile(path, DirectOptions()));
  }
  if (auto* fd_file = dynamic_cast<io::FdWritableFile*>(file.get()); fd_file != nullptr) {
    *direct = fd_file->direct();
  }
  AlignedBuffer chunk(kMiB);
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < kMiB; i += sizeof(uint64_t)) {
    const uint64_t r = rng();
    std::memcpy(chunk.data() + i, &r, sizeof(r));
  }
  chunk.set_size(kMiB);
  const absl::Time start = absl::Now();
  for (uint64_t i = 0; i < mb; ++i) CAIRN_RETURN_IF_ERROR(file->Append(chunk.view()));
  CAIRN_RETURN_IF_ERROR(file->Sync());
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  CAIRN_RETURN_IF_ERROR(file->Close());
  return seconds;
}

absl::Status CheckFullRead(size_t got, uint64_t offset, const std::string& path) {
  if (got == kBlock) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrFormat("%s: short read of %d bytes at %d", path, got, offset));
}

// Random aligned 4 KiB reads, one at a time, for d (at least one). Returns reads per second.
absl::StatusOr<double> ReadQd1(const io::RandomAccessFile& file, uint64_t blocks,
                               absl::Duration d) {
  AlignedBuffer buf(kBlock);
  std::mt19937_64 rng(1);
  uint64_t ops = 0;
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + d;
  absl::Time now;
  do {
    const uint64_t offset = (rng() % blocks) * kBlock;
    std::string_view got;
    CAIRN_RETURN_IF_ERROR(file.Read(offset, kBlock, buf.data(), &got));
    CAIRN_RETURN_IF_ERROR(CheckFullRead(got.size(), offset, file.path()));
    ++ops;
    now = absl::Now();
  } while (now < deadline);
  return ops / absl::ToDoubleSeconds(now - start);
}

// Random aligned 4 KiB reads in MultiRead batches of kDepth, for d (at
// least one batch).
absl::StatusOr<double> ReadQd32(const io::RandomAccessFile& file, uint64_t blocks,
                                absl::Duration d) {
  AlignedBuffer bufs(kBlock * kDepth);
  std::vector<io::ReadRequest> requests(kDepth);
  std::mt19937_64 rng(2);
  uint64_t ops = 0;
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + d;
  absl::Time now;
  do {
    for (size_t i = 0; i < kDepth; ++i) {
      requests[i] = io::ReadRequest{(rng() % blocks) * kBlock, kBlock, bufs.data() + i * kBlock};
    }
    CAIRN_RETURN_IF_ERROR(file.MultiRead(absl::MakeSpan(requests)));
    for (const io::ReadRequest& r : requests) {
      CAIRN_RETURN_IF_ERROR(CheckFullRead(r.result, r.offset, file.path()));
    }
    ops += kDepth;
    now = absl::Now();
  } while (now < deadline);
  return ops / absl::ToDoubleSeconds(now - start);
}

absl::StatusOr<ProbeResult> Probe(io::IoBackend backend, const Params& p) {
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<FileSystem> fs, io::NewFileSystem(backend));
  ProbeResult result;
  result.backend = fs->Name();
  const std::string path = io::JoinPath(
      p.dir, absl::StrCat("cairn_io_probe.", getpid(), ".", result.backend, ".dat"));
  absl::Cleanup remove = [&] {
    if (fs->FileExists(path)) fs->RemoveFile(path).IgnoreError();
  };

  CAIRN_ASSIGN_OR_RETURN(double write_s, WriteMiB(*fs, path, p.size_mb, false, &result.direct));
  result.write_mbps = static_cast<double>(p.size_mb) * kMiB / 1e6 / write_s;
  if (p.read_file_mb > p.size_mb) {
    bool ignored;
    CAIRN_RETURN_IF_ERROR(
        WriteMiB(*fs, path, p.read_file_mb - p.size_mb, true, &ignored).status());
  }

  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file,
                         fs->NewRandomAccessFile(path, DirectOptions()));
  const uint64_t blocks = p.read_file_mb * kMiB / kBlock;
  // One batch first, so that setting up anything lazy is not timed.
  CAIRN_RETURN_IF_ERROR(ReadQd32(*file, blocks, absl::ZeroDuration()).status());
  CAIRN_ASSIGN_OR_RETURN(result.qd1_iops, ReadQd1(*file, blocks, p.duration));
  CAIRN_ASSIGN_OR_RETURN(result.qd32_iops, ReadQd32(*file, blocks, p.duration));
  return result;
}

void PrintTable(const Params& p, const std::vector<ProbeResult>& results) {
  absl::PrintF("io_probe: %s, %d MiB sequential write, random 4 KiB reads over %d MiB, %.1f s each\n",
               p.dir, p.size_mb, p.read_file_mb, absl::ToDoubleSeconds(p.duration));
  absl::PrintF("%-10s %-7s %16s %20s %21s %10s\n", "backend", "direct", "seq write MB/s",
               "randread qd1 IOPS", "randread qd32 IOPS", "qd32/qd1");
  for (const ProbeResult& r : results) {
    absl::PrintF("%-10s %-7s %16.1f %20.0f %21.0f %10.2f\n", r.backend, r.direct ? "yes" : "NO",
                 r.write_mbps, r.qd1_iops, r.qd32_iops, r.Ratio());
  }
  for (const ProbeResult& r : results) {
    if (!r.direct) {
      absl::PrintF("note: %s could not open with O_DIRECT in %s: figures include the page cache\n",
                   r.backend, p.dir);
    }
    if (r.backend == "io_uring" && r.Ratio() < 3.0) {
      absl::PrintF("note: io_uring depth 32 is only %.2fx depth 1 (expected >= 3x on an SSD)\n",
                   r.Ratio());
    }
  }
}

void PrintJson(const Params& p, const std::vector<ProbeResult>& results) {
  std::vector<std::string> rows;
  for (const ProbeResult& r : results) {
    rows.push_back(absl::StrFormat(
        "{\"backend\":\"%s\",\"direct\":%s,\"seq_write_mbps\":%.1f,"
        "\"randread_qd1_iops\":%.0f,\"randread_qd32_iops\":%.0f,\"qd32_over_qd1\":%.2f}",
        r.backend, r.direct ? "true" : "false", r.write_mbps, r.qd1_iops, r.qd32_iops,
        r.Ratio()));
  }
  absl::PrintF("{\"dir\":\"%s\",\"size_mb\":%d,\"read_file_mb\":%d,\"seconds\":%.2f,"
               "\"results\":[%s]}\n",
               p.dir, p.size_mb, p.read_file_mb, absl::ToDoubleSeconds(p.duration),
               absl::StrJoin(rows, ","));
}

int Main() {
  Params p{absl::GetFlag(FLAGS_dir), static_cast<uint64_t>(absl::GetFlag(FLAGS_size_mb)),
           static_cast<uint64_t>(absl::GetFlag(FLAGS_read_file_mb)),
           absl::Seconds(absl::GetFlag(FLAGS_seconds))};
  if (absl::GetFlag(FLAGS_quick)) {
    p.size_mb = 64;
    p.read_file_mb = 64;
    p.duration = absl::Milliseconds(500);
  }
  if (absl::GetFlag(FLAGS_size_mb) <= 0 || absl::GetFlag(FLAGS_read_file_mb) <= 0) {
    std::fprintf(stderr, "io_probe: --size_mb and --read_file_mb must be positive\n");
    return 2;
  }
  std::vector<ProbeResult> results;
  const std::vector<std::string> names = absl::StrSplit(absl::GetFlag(FLAGS_backends), ',');
  for (const std::string& name : names) {
    io::IoBackend backend;
    if (name == "io_uring" || name == "uring") {
      backend = io::IoBackend::kUring;
    } else if (name == "posix") {
      backend = io::IoBackend::kPosix;
    } else {
      std::fprintf(stderr, "io_probe: unknown backend '%s'\n", name.c_str());
      return 2;
    }
    absl::StatusOr<ProbeResult> r = Probe(backend, p);
    if (!r.ok()) {
      std::fprintf(stderr, "io_probe: %s: %s\n", name.c_str(),
                   r.status().ToString().c_str());
      return 1;
    }
    if (backend == io::IoBackend::kUring && r->backend != "io_uring") {
      std::fprintf(stderr, "io_probe: io_uring unavailable here; measured %s instead\n",
                   r->backend.c_str());
    }
    results.push_back(*std::move(r));
  }
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(p, results);
  } else {
    PrintTable(p, results);
  }
  return 0;
}

}  // namespace
}  // namespace cairn::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return cairn::bench::Main();
}
