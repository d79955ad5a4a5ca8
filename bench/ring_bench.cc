// Micro benchmarks of the read path of each io backend: 32 random 4 KiB
// O_DIRECT reads of a 64 MiB file, issued as one MultiRead (all in flight at
// once on the ring) versus 32 Read calls one after another. Items per second
// are reads per second; on the POSIX backend the two should match, on the
// ring the batch should win by the device's parallelism.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

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

BENCHMARK_CAPTURE(BM_MultiRead32, io_uring, io::IoBackend::kUring)->UseRealTime();
BENCHMARK_CAPTURE(BM_Read32OneAtATime, io_uring, io::IoBackend::kUring)->UseRealTime();
BENCHMARK_CAPTURE(BM_MultiRead32, posix, io::IoBackend::kPosix)->UseRealTime();
BENCHMARK_CAPTURE(BM_Read32OneAtATime, posix, io::IoBackend::kPosix)->UseRealTime();

}  // namespace
}  // namespace cairn::bench
