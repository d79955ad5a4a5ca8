// Micro benchmarks of the read path of each io backend: 32 random 4 KiB
// O_DIRECT reads of a 64 MiB file, issued as one MultiRead (all in flight at
// once on the ring) versus 32 Read calls one after another. Items per second
// are reads per second; on the POSIX backend the two should match, on the
// ring the batch should win by the device's parallelism.
//
// BM_DirectAppend asks whether registering the O_DIRECT write buffers with
// the ring pays (docs/decisions/20261202_registered_write_buffers.md): the
// value log's write-behind pattern, appends of one buffer while the other is
// on the device, made with plain and with fixed (registered) buffers. Its
// cpu_ns_per_MiB counter is the whole process's CPU, io-wq workers included.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <liburing.h>
#include <sys/resource.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "io/aligned_buffer.h"
#include "io/file_system.h"

namespace cairn::bench {
namespace {

constexpr uint64_t kFileSize = 64ull << 20;
constexpr size_t kBlock = 4096;
constexpr size_t kBatch = 32;

// A 64 MiB file of random bytes in the temporary directory, written once per
// backend and removed at exit.
class ProbeFile {
 public:
  static ProbeFile* Get(io::IoBackend backend, benchmark::State& state) {
    // Destroyed at exit, which removes the files.
    static std::unique_ptr<ProbeFile> files[3];
    std::unique_ptr<ProbeFile>& f = files[static_cast<int>(backend)];
    if (f == nullptr) {
      f.reset(new ProbeFile);
      if (absl::Status s = f->Create(backend); !s.ok()) {
        state.SkipWithError(s.ToString().c_str());
        f.reset();
      }
    }
    return f.get();
  }

  ~ProbeFile() {
    file_.reset();
    if (fs_ != nullptr) fs_->RemoveFile(path_).IgnoreError();
  }

  const io::RandomAccessFile& file() const { return *file_; }
  const std::string& backend_name() const { return backend_name_; }

 private:
  absl::Status Create(io::IoBackend backend) {
    auto fs = io::NewFileSystem(backend);
    if (!fs.ok()) return fs.status();
    fs_ = *fs;
    backend_name_ = fs_->Name();
    const char* tmp = std::getenv("TMPDIR");
    path_ = io::JoinPath(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                         absl::StrCat("cairn_ring_bench.", getpid(), ".", backend_name_));
    io::FileOptions options;
    options.direct = true;
    auto w = fs_->NewWritableFile(path_, options);
    if (!w.ok()) return w.status();
    io::AlignedBuffer chunk(1 << 20);
    std::mt19937_64 rng(7);
    for (size_t i = 0; i < chunk.capacity(); i += sizeof(uint64_t)) {
      const uint64_t r = rng();
      std::memcpy(chunk.data() + i, &r, sizeof(r));
    }
    chunk.set_size(chunk.capacity());
    for (uint64_t done = 0; done < kFileSize; done += chunk.size()) {
      if (absl::Status s = (*w)->Append(chunk.view()); !s.ok()) return s;
    }
    if (absl::Status s = (*w)->Close(); !s.ok()) return s;
    auto r = fs_->NewRandomAccessFile(path_, options);
    if (!r.ok()) return r.status();
    file_ = *std::move(r);
    return absl::OkStatus();
  }

  std::shared_ptr<io::FileSystem> fs_;
  std::unique_ptr<io::RandomAccessFile> file_;
  std::string path_;
  std::string backend_name_;
};

void BM_MultiRead32(benchmark::State& state, io::IoBackend backend) {
  ProbeFile* f = ProbeFile::Get(backend, state);
  if (f == nullptr) return;
  state.SetLabel(f->backend_name());
  io::AlignedBuffer bufs(kBatch * kBlock);
  std::vector<io::ReadRequest> requests(kBatch);
  std::mt19937_64 rng(1);
  for (auto _ : state) {
    for (size_t i = 0; i < kBatch; ++i) {
      requests[i] = io::ReadRequest{(rng() % (kFileSize / kBlock)) * kBlock, kBlock,
                                    bufs.data() + i * kBlock};
    }
    if (absl::Status s = f->file().MultiRead(absl::MakeSpan(requests)); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void BM_Read32OneAtATime(benchmark::State& state, io::IoBackend backend) {
  ProbeFile* f = ProbeFile::Get(backend, state);
  if (f == nullptr) return;
  state.SetLabel(f->backend_name());
  io::AlignedBuffer buf(kBlock);
  std::mt19937_64 rng(1);
  for (auto _ : state) {
    for (size_t i = 0; i < kBatch; ++i) {
      std::string_view got;
      const uint64_t offset = (rng() % (kFileSize / kBlock)) * kBlock;
      if (absl::Status s = f->file().Read(offset, kBlock, buf.data(), &got); !s.ok()) {
        state.SkipWithError(s.ToString().c_str());
        return;
      }
      benchmark::DoNotOptimize(got.data());
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

// User plus system CPU of the whole process, in nanoseconds.
uint64_t ProcessCpuNanos() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto ns = [](const timeval& t) {
    return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_usec) * 1000u;
  };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

// Appends of state.range(1) bytes to a fresh O_DIRECT file, two in flight
// (one buffer filling while the other is written), with registered buffers
// when state.range(0) is 1. With state.range(2) 1 the file is cut back to
// empty every 64 MiB (untimed), so every write extends it, as value-log
// appends do; with 0 it is written whole once (untimed) and then
// overwritten in place, which ext4 can do without the ring's io-wq worker.
void BM_DirectAppend(benchmark::State& state) {
  const bool fixed = state.range(0) != 0;
  const size_t size = static_cast<size_t>(state.range(1));
  const bool extend = state.range(2) != 0;
  constexpr uint64_t kWrap = 64ull << 20;
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = io::JoinPath(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                                        absl::StrCat("cairn_ring_bench_append.", getpid()));
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) {
    state.SkipWithError("open O_DIRECT failed");
    return;
  }
  io_uring ring;
  if (io_uring_queue_init(8, &ring, 0) != 0) {
    ::close(fd);
    ::unlink(path.c_str());
    state.SkipWithError("io_uring_queue_init failed");
    return;
  }
  io::AlignedBuffer bufs[2] = {io::AlignedBuffer(size), io::AlignedBuffer(size)};
  std::mt19937_64 rng(3);
  iovec iov[2];
  for (int b = 0; b < 2; ++b) {
    for (size_t i = 0; i + sizeof(uint64_t) <= size; i += sizeof(uint64_t)) {
      const uint64_t r = rng();
      std::memcpy(bufs[b].data() + i, &r, sizeof(r));
    }
    iov[b] = {bufs[b].data(), size};
  }
  if (fixed && io_uring_register_buffers(&ring, iov, 2) != 0) {
    state.SkipWithError("io_uring_register_buffers failed (RLIMIT_MEMLOCK?)");
    io_uring_queue_exit(&ring);
    ::close(fd);
    ::unlink(path.c_str());
    return;
  }
  int in_flight = 0;
  bool failed = false;
  auto reap = [&] {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(&ring, &cqe) != 0 || cqe->res != static_cast<int>(size)) failed = true;
    if (cqe != nullptr) io_uring_cqe_seen(&ring, cqe);
    --in_flight;
  };
  if (!extend) {
    for (uint64_t at = 0; at < kWrap; at += size) {
      if (::pwrite(fd, bufs[0].data(), size, static_cast<off_t>(at)) != static_cast<ssize_t>(size)) {
        failed = true;
      }
    }
  }
  uint64_t offset = 0;
  uint64_t writes = 0;
  const uint64_t cpu_before = ProcessCpuNanos();
  uint64_t cpu_paused = 0;
  for (auto _ : state) {
    if (offset == kWrap) {
      state.PauseTiming();
      const uint64_t pause_from = ProcessCpuNanos();
      while (in_flight > 0) reap();
      if (extend && ::ftruncate(fd, 0) != 0) failed = true;
      offset = 0;
      cpu_paused += ProcessCpuNanos() - pause_from;
      state.ResumeTiming();
    }
    if (in_flight == 2) reap();
    const int b = static_cast<int>(writes % 2);
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    if (fixed) {
      io_uring_prep_write_fixed(sqe, fd, bufs[b].data(), static_cast<unsigned>(size), offset, b);
    } else {
      io_uring_prep_write(sqe, fd, bufs[b].data(), static_cast<unsigned>(size), offset);
    }
    io_uring_submit(&ring);
    ++in_flight;
    ++writes;
    offset += size;
    if (failed) break;
  }
  while (in_flight > 0) reap();
  const uint64_t cpu = ProcessCpuNanos() - cpu_before - cpu_paused;
  if (failed) state.SkipWithError("a write failed or came back short");
  io_uring_queue_exit(&ring);
  ::close(fd);
  ::unlink(path.c_str());
  state.SetBytesProcessed(static_cast<int64_t>(writes * size));
  state.SetLabel(absl::StrCat(fixed ? "registered" : "plain", extend ? ", appends" : ", overwrites"));
  state.counters["cpu_ns_per_MiB"] =
      static_cast<double>(cpu) / (static_cast<double>(writes * size) / (1 << 20));
}

BENCHMARK(BM_DirectAppend)
    ->ArgsProduct({{0, 1}, {64 << 10, 256 << 10, 1 << 20}, {1, 0}})
    ->UseRealTime();

BENCHMARK_CAPTURE(BM_MultiRead32, io_uring, io::IoBackend::kUring)->UseRealTime();
BENCHMARK_CAPTURE(BM_Read32OneAtATime, io_uring, io::IoBackend::kUring)->UseRealTime();
BENCHMARK_CAPTURE(BM_MultiRead32, posix, io::IoBackend::kPosix)->UseRealTime();
BENCHMARK_CAPTURE(BM_Read32OneAtATime, posix, io::IoBackend::kPosix)->UseRealTime();

}  // namespace
}  // namespace cairn::bench
