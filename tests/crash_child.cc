// crash_child: the process that tests/crash_test.cc kills with SIGKILL. It
// opens (or creates) the database, then runs a random write workload until it
// is killed or has issued max_ops writes, logging each write in the op log
// (tests/crash_op_log.h) before it is issued and again once acknowledged.
//
//   crash_child <db_dir> <op_log> <seed> <value_separation_threshold> <max_ops>
//
// Besides the writes it forces a flush (0.4% of writes), a full compaction
// (0.1%) and a garbage collection (RunGC, 0.2%); background GC runs too.
// About one operation in a hundred is an ingestion instead of a write: a
// file set written with ExternalFileWriter under <db_dir>.ingest/ (before
// its intent is logged) and moved in with IngestExternalFiles.
//
// Exit status: 0 after max_ops writes; 2 for bad arguments or a failed open;
// 3 for a write or an ingestion that failed; 4 for a failed Flush, CompactRange or RunGC. The
// reason goes to stderr. The I/O backend comes from CAIRN_IO, set by the parent.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "cairn/ingest.h"
#include "tests/crash_op_log.h"

namespace cairn::crash {
namespace {

[[noreturn]] void Die(int code, const std::string& what) {
  std::fprintf(stderr, "crash_child: %s\n", what.c_str());
  std::fflush(stderr);
  std::_Exit(code);
}

// One write(2) per record: a kill lands before or after it, and the kernel
// keeps whatever a returned write handed it.
void AppendRecord(int fd, const std::string& rec) {
  size_t done = 0;
  while (done < rec.size()) {
    const ssize_t n = ::write(fd, rec.data() + done, rec.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Die(2, absl::StrFormat("op log write: %s", std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
}

// Writes op's updates as a file set at dir (anything there from an earlier
// child's run removed first).
void WriteSet(const Options& options, const std::string& dir, const LoggedOp& op) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), ec);
  auto w = ExternalFileWriter::Open(options, dir);
  if (!w.ok()) Die(3, absl::StrFormat("writer %s: %s", dir, w.status().ToString()));
  for (const Update& u : op.updates) {
    const absl::Status s =
        u.is_put ? (*w)->Put(u.key, MakeValue(u.value_seed, u.value_len)) : (*w)->Delete(u.key);
    if (!s.ok()) Die(3, absl::StrFormat("writer %s: %s", dir, s.ToString()));
  }
  if (auto info = (*w)->Finish(); !info.ok()) {
    Die(3, absl::StrFormat("writer %s: %s", dir, info.status().ToString()));
  }
}

int Main(int argc, char** argv) {
  uint64_t seed = 0, threshold = 0, max_ops = 0;
  if (argc != 6 || !absl::SimpleAtoi(argv[3], &seed) || !absl::SimpleAtoi(argv[4], &threshold) ||
      !absl::SimpleAtoi(argv[5], &max_ops)) {
    Die(2, "usage: crash_child <db_dir> <op_log> <seed> <threshold> <max_ops>");
  }
  const Options options = CrashTestOptions(static_cast<size_t>(threshold));
  auto db = DB::Open(options, argv[1]);
  if (!db.ok()) Die(2, absl::StrFormat("open %s: %s", argv[1], db.status().ToString()));

  const int fd = ::open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) Die(2, absl::StrFormat("open %s: %s", argv[2], std::strerror(errno)));

  std::mt19937_64 rng(seed);
  // Its own stream, so that the writes of a seed are what they were before
  // ingestions joined the mix (2026-12-07).
  std::mt19937_64 ingest_rng(seed ^ 0x696e67657374ull);
  for (uint64_t i = 0; i < max_ops; ++i) {
    if (ingest_rng() % 100 == 0) {
      const LoggedOp op = RandomIngestOp(ingest_rng, i);
      const std::string dir = absl::StrFormat("%s.ingest/%d", argv[1], i);
      WriteSet(options, dir, op);
      AppendRecord(fd, EncodeIntent(op));
      const absl::Status s = (*db)->IngestExternalFiles({dir}, {}).status();
      if (!s.ok()) Die(3, absl::StrFormat("ingest %d: %s", i, s.ToString()));
      AppendRecord(fd, EncodeAck(i));
      continue;
    }
    const LoggedOp op = RandomOp(rng, i);
    WriteBatch batch = MakeBatch(op);
    AppendRecord(fd, EncodeIntent(op));
    WriteOptions wo;
    wo.sync = op.sync;
    const absl::Status s = (*db)->Write(wo, batch);
    if (!s.ok()) Die(3, absl::StrFormat("write %d: %s", i, s.ToString()));
    AppendRecord(fd, EncodeAck(i));

    const uint64_t r = rng() % 1000;
    if (r < 4) {
      const absl::Status f = (*db)->Flush();
      if (!f.ok()) Die(4, absl::StrFormat("flush: %s", f.ToString()));
    } else if (r < 5) {
      const absl::Status c = (*db)->CompactRange(nullptr, nullptr);
      if (!c.ok()) Die(4, absl::StrFormat("compact: %s", c.ToString()));
    } else if (r < 7) {
      const absl::StatusOr<GcResult> g = (*db)->RunGC();
      if (!g.ok()) Die(4, absl::StrFormat("gc: %s", g.status().ToString()));
    }
  }
  db->reset();
  ::close(fd);
  return 0;
}

}  // namespace
}  // namespace cairn::crash

int main(int argc, char** argv) { return cairn::crash::Main(argc, argv); }
