// ingest_load: loads N bytes of fixed-size values (4 GiB of 64 KiB values by
// default) into an empty database one of two ways and reports the time and
// the write amplification (bytes this process had written to the device,
// /proc/self/io write_bytes less cancelled_write_bytes, or the block
// device's sectors written with --block_device, over the user's key and
// value bytes), settle included (issue 61, docs/bench.md "Ingestion"):
//
//   --mode=ingest  build --sets file sets with the engine's external file
//                  writer, then ingest them in one call (moved in), then
//                  settle;
//   --mode=put     Put every pair (no sync), then flush and settle.
//
//   --engine=cairn   cairn::ExternalFileWriter + DB::IngestExternalFiles;
//   --engine=blobdb  RocksDB with integrated BlobDB (enable_blob_files,
//                    min_blob_size = cairn's separation threshold):
//                    rocksdb::SstFileWriter + IngestExternalFile(move_files).
//                    SstFileWriter writes values inline, so the ingested
//                    values stay in the SSTs (blob files are only made by
//                    flushes and compactions): that is the peer a BlobDB
//                    user has for bulk loading.
//
// Settle: the engine's background work done (cairn: Flush and
// WaitForBackgroundWork; RocksDB: a waiting Flush, then no compaction
// pending or running), then sync(2), so that both modes pay for their
// writeback inside the time. Keys are 16 bytes, in ascending order in both
// modes (--shuffle_puts for random Put order); values are incompressible.
// One result line per run, in the style of cairn_bench's.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "cairn/ingest.h"

#ifdef CAIRN_HAVE_ROCKSDB
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_writer.h"
#endif

ABSL_FLAG(std::string, engine, "cairn", "cairn or blobdb");
ABSL_FLAG(std::string, mode, "ingest", "ingest or put");
ABSL_FLAG(std::string, dir, "/tmp/ingest_load", "working directory (emptied first)");
ABSL_FLAG(uint64_t, total_bytes, uint64_t{4} << 30, "value bytes to load");
ABSL_FLAG(uint32_t, value_size, 64 << 10, "bytes per value");
ABSL_FLAG(int, sets, 4, "ingest: file sets (SST files for blobdb), each a key range");
ABSL_FLAG(bool, shuffle_puts, false, "put: random key order instead of ascending");
ABSL_FLAG(std::string, block_device, "",
          "count device bytes from /sys/block/<this>/stat (sectors written; the whole device, "
          "so run it quiet) rather than from /proc/self/io");

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// write_bytes less cancelled_write_bytes of /proc/self/io.
uint64_t DeviceBytesWritten() {
  std::ifstream in("/proc/self/io");
  std::string name;
  uint64_t value = 0, written = 0, cancelled = 0;
  while (in >> name >> value) {
    if (name == "write_bytes:") written = value;
    if (name == "cancelled_write_bytes:") cancelled = value;
  }
  return written - std::min(written, cancelled);
}

// Sectors written (field 7 of /sys/block/<dev>/stat) times 512; the
// process's own figure without --block_device. A file deleted before its
// writeback (a WAL a flush made obsolete) counts in the device's figure,
// never in the process's (it is cancelled there).
uint64_t BytesWritten() {
  const std::string dev = absl::GetFlag(FLAGS_block_device);
  if (dev.empty()) return DeviceBytesWritten();
  std::ifstream in("/sys/block/" + dev + "/stat");
  uint64_t field[8] = {};
  for (uint64_t& f : field) in >> f;
  return field[6] * 512;
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "ingest_load: %s\n", what.c_str());
  std::exit(1);
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) Die(absl::StrFormat("%s: %s", what, s.ToString()));
}

// The data set: count pairs, key i = "key%013d" (16 bytes), value i a slice
// of a random pool at an offset that depends on i (incompressible).
struct DataSet {
  uint64_t count;
  uint32_t value_size;
  std::string pool;
  DataSet(uint64_t total, uint32_t vsize) : count(total / vsize), value_size(vsize) {
    std::mt19937_64 rng(20261207);
    pool.resize(size_t{8} << 20);
    for (size_t i = 0; i + 8 <= pool.size(); i += 8) {
      const uint64_t x = rng();
      std::memcpy(pool.data() + i, &x, 8);
    }
  }
  std::string Key(uint64_t i) const { return absl::StrFormat("key%013d", i); }
  std::string_view Value(uint64_t i) const {
    const size_t span = pool.size() - value_size;
    return std::string_view(pool).substr((i * 7919 * 64) % span, value_size);
  }
  uint64_t UserBytes() const { return count * (16 + uint64_t{value_size}); }
};

// The order the put mode writes in: ascending, or shuffled.
std::vector<uint64_t> PutOrder(const DataSet& data) {
  std::vector<uint64_t> order(data.count);
  std::iota(order.begin(), order.end(), 0);
  if (absl::GetFlag(FLAGS_shuffle_puts)) {
    std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  }
  return order;
}

// The pairs of file set s of sets: [begin, end).
std::pair<uint64_t, uint64_t> SetRange(const DataSet& data, int s, int sets) {
  return {data.count * s / sets, data.count * (s + 1) / sets};
}

struct Timings {
  double build = 0, load = 0, settle = 0;
};

void RunCairn(const DataSet& data, const std::string& dir, bool ingest, Timings* t) {
  cairn::Options options;
  options.create_if_missing = true;
  auto db = cairn::DB::Open(options, dir + "/db");
  Check(db.status(), "open");
  if (ingest) {
    const int sets = absl::GetFlag(FLAGS_sets);
    std::vector<std::string> dirs;
    std::filesystem::create_directories(dir + "/sets");
    auto start = Clock::now();
    for (int s = 0; s < sets; ++s) {
      dirs.push_back(absl::StrFormat("%s/sets/%04d", dir, s));
      auto w = cairn::ExternalFileWriter::Open(options, dirs.back());
      Check(w.status(), "writer open");
      const auto [first, end] = SetRange(data, s, sets);
      for (uint64_t i = first; i < end; ++i) {
        Check((*w)->Put(data.Key(i), data.Value(i)), "writer put");
      }
      Check((*w)->Finish().status(), "writer finish");
    }
    t->build = Since(start);
    start = Clock::now();
    auto r = (*db)->IngestExternalFiles(dirs, {});
    Check(r.status(), "ingest");
    t->load = Since(start);
  } else {
    const std::vector<uint64_t> order = PutOrder(data);
    const auto start = Clock::now();
    for (uint64_t i : order) Check((*db)->Put({}, data.Key(i), data.Value(i)), "put");
    t->load = Since(start);
  }
  const auto start = Clock::now();
  Check((*db)->Flush(), "flush");
  Check((*db)->WaitForBackgroundWork(), "settle");
  Check((*db)->Close(), "close");
  ::sync();
  t->settle = Since(start);
}

#ifdef CAIRN_HAVE_ROCKSDB
void CheckRocks(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) Die(absl::StrFormat("%s: %s", what, s.ToString()));
}

void RunBlobDb(const DataSet& data, const std::string& dir, bool ingest, Timings* t) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.enable_blob_files = true;
  options.min_blob_size = 4096;  // cairn's value_separation_threshold
  options.compression = rocksdb::kNoCompression;
  options.blob_compression_type = rocksdb::kNoCompression;
  options.write_buffer_size = 64 << 20;
  rocksdb::DB* raw = nullptr;
  CheckRocks(rocksdb::DB::Open(options, dir + "/db", &raw), "open");
  std::unique_ptr<rocksdb::DB> db(raw);
  if (ingest) {
    const int sets = absl::GetFlag(FLAGS_sets);
    std::vector<std::string> files;
    std::filesystem::create_directories(dir + "/sets");
    auto start = Clock::now();
    for (int s = 0; s < sets; ++s) {
      files.push_back(absl::StrFormat("%s/sets/%04d.sst", dir, s));
      rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), options);
      CheckRocks(writer.Open(files.back()), "writer open");
      const auto [first, end] = SetRange(data, s, sets);
      for (uint64_t i = first; i < end; ++i) {
        const std::string key = data.Key(i);
        const std::string_view v = data.Value(i);
        CheckRocks(writer.Put(key, rocksdb::Slice(v.data(), v.size())), "writer put");
      }
      CheckRocks(writer.Finish(), "writer finish");
    }
    t->build = Since(start);
    start = Clock::now();
    rocksdb::IngestExternalFileOptions io;
    io.move_files = true;
    CheckRocks(db->IngestExternalFile(files, io), "ingest");
    t->load = Since(start);
  } else {
    const std::vector<uint64_t> order = PutOrder(data);
    const auto start = Clock::now();
    for (uint64_t i : order) {
      const std::string key = data.Key(i);
      const std::string_view v = data.Value(i);
      CheckRocks(db->Put({}, key, rocksdb::Slice(v.data(), v.size())), "put");
    }
    t->load = Since(start);
  }
  const auto start = Clock::now();
  rocksdb::FlushOptions fo;
  fo.wait = true;
  CheckRocks(db->Flush(fo), "flush");
  while (true) {
    uint64_t pending = 0, running = 0;
    db->GetIntProperty("rocksdb.compaction-pending", &pending);
    db->GetIntProperty("rocksdb.num-running-compactions", &running);
    if (pending == 0 && running == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CheckRocks(db->Close(), "close");
  db.reset();
  ::sync();
  t->settle = Since(start);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string engine = absl::GetFlag(FLAGS_engine);
  const std::string mode = absl::GetFlag(FLAGS_mode);
  const std::string dir = absl::GetFlag(FLAGS_dir);
  if (mode != "ingest" && mode != "put") Die("--mode must be ingest or put");
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  const DataSet data(absl::GetFlag(FLAGS_total_bytes), absl::GetFlag(FLAGS_value_size));
  if (data.count == 0) Die("--total_bytes is less than one value");
  ::sync();
  const uint64_t before = BytesWritten();
  Timings t;
  if (engine == "cairn") {
    RunCairn(data, dir, mode == "ingest", &t);
  } else if (engine == "blobdb") {
#ifdef CAIRN_HAVE_ROCKSDB
    RunBlobDb(data, dir, mode == "ingest", &t);
#else
    Die("built without RocksDB: --engine=blobdb is unavailable");
#endif
  } else {
    Die("--engine must be cairn or blobdb");
  }
  const uint64_t device = BytesWritten() - before;
  const double total = t.build + t.load + t.settle;
  std::printf(
      "ingest_load engine=%s mode=%s pairs=%llu value_size=%u user_bytes=%llu build_s=%.2f "
      "load_s=%.2f settle_s=%.2f total_s=%.2f MB/s=%.1f device_bytes=%llu write_amp=%.3f\n",
      engine.c_str(), mode.c_str(), static_cast<unsigned long long>(data.count), data.value_size,
      static_cast<unsigned long long>(data.UserBytes()), t.build, t.load, t.settle, total,
      static_cast<double>(data.UserBytes()) / 1e6 / total, static_cast<unsigned long long>(device),
      static_cast<double>(device) / static_cast<double>(data.UserBytes()));
  std::filesystem::remove_all(dir, ec);
  return 0;
}
