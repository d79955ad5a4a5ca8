// Tests of the FileSystem contract, run against every backend (io_uring,
// POSIX, memory), buffered and with O_DIRECT. Backend selection and the
// memory file system's own behaviour: io/file_system_selection_test.cc.
#include "io/file_system.h"

#include <algorithm>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/memory_file_system.h"
#include "io/posix_file_system.h"
#include "io/ring.h"
#include "io/uring_file_system.h"

namespace cairn::io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

bool SupportsDirectIo(const std::string& dir) {
  const std::string probe = dir + "/direct_probe";
  int fd = ::open(probe.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644);
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

// Param: backend name, direct.
class FileSystemTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  void SetUp() override {
    const std::string& backend = std::get<0>(GetParam());
    options_.direct = std::get<1>(GetParam());
    if (backend == "memory") {
      memory_ = std::make_shared<MemoryFileSystem>();
      fs_ = memory_;
      dir_ = "/test";
      ASSERT_TRUE(fs_->CreateDir(dir_).ok());
      return;
    }
    if (backend == "io_uring") {
      absl::Status probe = Ring::Probe();
      if (!probe.ok()) GTEST_SKIP() << "io_uring unavailable here: " << probe;
      fs_ = std::make_shared<UringFileSystem>();
    } else {
      fs_ = std::make_shared<PosixFileSystem>();
    }
    char tmpl[] = "/tmp/cairn_fs_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
  }

  void TearDown() override {
    if (memory_ == nullptr && !dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  bool real() const { return memory_ == nullptr; }
  std::string Path(std::string_view name) const { return JoinPath(dir_, name); }

  // Writes contents to name through a WritableFile and closes it.
  void WriteFile(const std::string& name, const std::string& contents) {
    auto file = fs_->NewWritableFile(Path(name), options_);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->Append(contents).ok());
    ASSERT_TRUE((*file)->Close().ok());
  }

  // Writes contents to name and opens it for reading.
  std::unique_ptr<RandomAccessFile> WriteAndOpen(const std::string& name,
                                                 const std::string& contents) {
    WriteFile(name, contents);
    auto file = fs_->NewRandomAccessFile(Path(name), options_);
    EXPECT_TRUE(file.ok()) << file.status();
    return file.ok() ? *std::move(file) : nullptr;
  }

  std::string Contents(const std::string& name) {
    absl::StatusOr<std::string> s = ReadFileToString(fs_.get(), Path(name));
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : std::string();
  }

  // The bytes a file of n appended bytes holds on disk while open: with
  // O_DIRECT, its tail block's zero padding too.
  static uint64_t OnDisk(const WritableFile& file, uint64_t n) {
    return file.direct() ? AlignUp(n, kDirectIoAlignment) : n;
  }
  // The first n bytes of name, checking that only zero padding follows.
  std::string ContentsOf(const std::string& name, uint64_t n) {
    std::string all = Contents(name);
    EXPECT_GE(all.size(), n);
    if (all.size() < n) return all;
    EXPECT_EQ(all.substr(n), std::string(all.size() - n, '\0')) << name;
    return all.substr(0, n);
  }

  std::shared_ptr<FileSystem> fs_;
  std::shared_ptr<MemoryFileSystem> memory_;
  std::string dir_;
  FileOptions options_;
};

TEST_P(FileSystemTest, AppendFlushSizeAndReopenAppend) {
  auto file = fs_->NewWritableFile(Path("f"), options_);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append("hello").ok());
  EXPECT_EQ((*file)->Size(), 5u);
  ASSERT_TRUE((*file)->Flush().ok());
  EXPECT_EQ(*fs_->GetFileSize(Path("f")), OnDisk(**file, 5));
  ASSERT_TRUE((*file)->Append(" world").ok());
  EXPECT_EQ((*file)->Size(), 11u);
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(*fs_->GetFileSize(Path("f")), 11u);
  EXPECT_FALSE((*file)->Append("x").ok());

  auto reopened = fs_->ReopenWritableFile(Path("f"), options_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->Size(), 11u);
  ASSERT_TRUE((*reopened)->Append("!").ok());
  ASSERT_TRUE((*reopened)->Close().ok());
  EXPECT_EQ(Contents("f"), "hello world!");

  // NewWritableFile truncates.
  WriteFile("f", "new");
  EXPECT_EQ(Contents("f"), "new");
}

TEST_P(FileSystemTest, FlushLeavesAtMostAPaddedTailBlockPastTheAppendedBytes) {
  std::mt19937_64 rng(7);
  std::string expected;
  auto file = fs_->NewWritableFile(Path("f"), options_);
  ASSERT_TRUE(file.ok()) << file.status();
  if (real() && options_.direct && SupportsDirectIo(dir_)) {
    // The direct variants must really run O_DIRECT where the disk allows it.
    auto* fd_file = dynamic_cast<FdWritableFile*>(file->get());
    ASSERT_NE(fd_file, nullptr);
    EXPECT_TRUE(fd_file->direct());
  }
  for (int i = 0; i < 40; ++i) {
    std::string piece = RandomBytes(rng, rng() % 9000 + 1);
    expected += piece;
    ASSERT_TRUE((*file)->Append(piece).ok());
    ASSERT_TRUE((*file)->Flush().ok());
    // O_DIRECT writes whole blocks: the tail block's padding stays on disk,
    // as zeros, until Close.
    const uint64_t on_disk = (*file)->direct() ? AlignUp(expected.size(), kDirectIoAlignment)
                                               : expected.size();
    ASSERT_EQ(*fs_->GetFileSize(Path("f")), on_disk) << "after append " << i;
    if (i % 10 == 9) {
      const std::string contents = Contents("f");
      ASSERT_EQ(contents.substr(0, expected.size()), expected) << "after append " << i;
      ASSERT_EQ(contents.substr(expected.size()), std::string(on_disk - expected.size(), '\0'));
    }
  }
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(*fs_->GetFileSize(Path("f")), expected.size());
  // Reopening at an unaligned end rewrites the partial tail block correctly.
  for (int round = 0; round < 3; ++round) {
    auto reopened = fs_->ReopenWritableFile(Path("f"), options_);
    ASSERT_TRUE(reopened.ok()) << reopened.status();
    std::string piece = RandomBytes(rng, 1000 + round);
    expected += piece;
    ASSERT_TRUE((*reopened)->Append(piece).ok());
    ASSERT_TRUE((*reopened)->Sync().ok());
    ASSERT_TRUE((*reopened)->Close().ok());
    EXPECT_EQ(Contents("f"), expected);
  }
}

TEST_P(FileSystemTest, AppendsLargerThanTheBufferRoundTrip) {
  std::mt19937_64 rng(11);
  const std::string big = RandomBytes(rng, 3 * FdWritableFile::kBufferSize + 12345);
  auto file = fs_->NewWritableFile(Path("big"), options_);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append(std::string_view(big).substr(0, 100)).ok());
  ASSERT_TRUE((*file)->Append(std::string_view(big).substr(100)).ok());
  EXPECT_EQ((*file)->Size(), big.size());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Contents("big"), big);
}

TEST_P(FileSystemTest, AppendPartsWritesTheSameBytesAsAppends) {
  std::mt19937_64 rng(12);
  const std::string a = RandomBytes(rng, 100), b = RandomBytes(rng, 70000),
                    c = RandomBytes(rng, 5), d = RandomBytes(rng, 200000);
  auto file = fs_->NewWritableFile(Path("parts"), options_);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append(a).ok());  // buffered bytes before the parts
  // Small parts (through the buffer), then large ones (past it where the
  // backend can; buffered, in pieces of at most 256 KiB, cut inside a part),
  // then an Append after them.
  const std::string_view small[] = {c, c};
  ASSERT_TRUE((*file)->AppendParts(small).ok());
  const std::string_view large[] = {b, c, d, d, d};
  ASSERT_TRUE((*file)->AppendParts(large).ok());
  ASSERT_TRUE((*file)->Append(a).ok());
  const std::string expected = a + c + c + b + c + d + d + d + a;
  EXPECT_EQ((*file)->Size(), expected.size());
  ASSERT_TRUE((*file)->Flush().ok());
  EXPECT_EQ(ContentsOf("parts", expected.size()), expected);
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Contents("parts"), expected);
}

TEST_P(FileSystemTest, ReadsAtOffsetsAndShortAtEndOfFile) {
  std::mt19937_64 rng(3);
  const std::string data = RandomBytes(rng, 10000);
  WriteFile("f", data);
  auto file = fs_->NewRandomAccessFile(Path("f"), options_);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*(*file)->Size(), data.size());
  std::string scratch(20000, '\0');
  std::string_view got;
  for (uint64_t offset : {0ul, 1ul, 4095ul, 4096ul, 5000ul, 9999ul}) {
    ASSERT_TRUE((*file)->Read(offset, 100, scratch.data() + 1, &got).ok());
    EXPECT_EQ(got, std::string_view(data).substr(offset, 100)) << "offset " << offset;
  }
  ASSERT_TRUE((*file)->Read(9000, 5000, scratch.data(), &got).ok());
  EXPECT_EQ(got, std::string_view(data).substr(9000));
  ASSERT_TRUE((*file)->Read(10000, 10, scratch.data(), &got).ok());
  EXPECT_TRUE(got.empty());
  ASSERT_TRUE((*file)->Read(1 << 20, 10, scratch.data(), &got).ok());
  EXPECT_TRUE(got.empty());
  ASSERT_TRUE((*file)->Read(0, 0, scratch.data(), &got).ok());
  EXPECT_TRUE(got.empty());
}

// A set of read requests with their buffers and the bytes each should get.
struct Reads {
  std::vector<ReadRequest> reqs;
  std::vector<std::string> bufs;
  std::vector<FileReadRequest> batch;
  std::vector<const std::string*> data;  // the file contents each reads

  explicit Reads(size_t n) : reqs(n), bufs(n), batch(n), data(n) {}
  void Set(size_t i, const RandomAccessFile* file, const std::string* contents, uint64_t offset,
           size_t len) {
    reqs[i].offset = offset;
    reqs[i].len = len;
    bufs[i].assign(len, '\0');
    reqs[i].buf = bufs[i].data();
    batch[i] = {file, &reqs[i]};
    data[i] = contents;
  }
  // Asserts that request i succeeded with exactly the file's bytes.
  void Check(size_t i) const {
    ASSERT_TRUE(reqs[i].status.ok()) << reqs[i].status;
    const std::string& d = *data[i];
    const std::string want = reqs[i].offset < d.size() ? d.substr(reqs[i].offset, reqs[i].len) : "";
    ASSERT_EQ(reqs[i].result, want.size()) << i;
    ASSERT_EQ(std::string_view(bufs[i]).substr(0, reqs[i].result), want) << i;
  }
};

TEST_P(FileSystemTest, MultiReadFilesAcrossFilesMatchesContents) {
  std::mt19937_64 rng(11);
  const std::string a = RandomBytes(rng, 50000), b = RandomBytes(rng, 70000);
  auto fa = WriteAndOpen("a", a), fb = WriteAndOpen("b", b);
  ASSERT_TRUE(fa != nullptr && fb != nullptr);
  Reads reads(200);
  for (size_t i = 0; i < reads.reqs.size(); ++i) {
    const std::string& data = i % 2 ? b : a;
    reads.Set(i, i % 2 ? fb.get() : fa.get(), &data, rng() % data.size(), 1 + rng() % 6000);
  }
  ASSERT_TRUE(fs_->MultiReadFiles(reads.batch).ok());
  for (size_t i = 0; i < reads.reqs.size(); ++i) reads.Check(i);
}

TEST_P(FileSystemTest, ReadQueueKeepsReadsInFlightAndCompletesEach) {
  std::mt19937_64 rng(17);
  const std::string a = RandomBytes(rng, 60000), b = RandomBytes(rng, 90000);
  auto fa = WriteAndOpen("a", a), fb = WriteAndOpen("b", b);
  ASSERT_TRUE(fa != nullptr && fb != nullptr);
  // More than a ring's depth, in three submissions, some past end of file.
  constexpr size_t kRequests = 600;
  Reads reads(kRequests);
  for (size_t i = 0; i < kRequests; ++i) {
    const std::string& data = i % 2 ? b : a;
    reads.Set(i, i % 2 ? fb.get() : fa.get(), &data, rng() % (data.size() + 100),
              1 + rng() % 9000);
  }
  std::unique_ptr<ReadQueue> queue = fs_->NewReadQueue();
  for (size_t start = 0; start < kRequests; start += kRequests / 3) {
    queue->Submit(absl::MakeSpan(reads.batch).subspan(start, kRequests / 3));
  }
  EXPECT_LE(queue->in_flight(), kRequests);
  // Waits in a shuffled order, polling others in between.
  std::vector<size_t> order(kRequests);
  for (size_t i = 0; i < kRequests; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<bool> complete(kRequests, false);
  for (size_t i : order) {
    if (complete[i]) continue;
    const size_t other = order[rng() % kRequests];
    if (!complete[other] && queue->Poll(&reads.reqs[other])) complete[other] = true;
    if (!complete[i]) queue->Wait(&reads.reqs[i]);
    complete[i] = true;
  }
  EXPECT_EQ(queue->in_flight(), 0u);
  for (size_t i = 0; i < kRequests; ++i) reads.Check(i);
}

TEST_P(FileSystemTest, ReadQueueDestroyedWithReadsInFlightWaitsForThem) {
  std::mt19937_64 rng(19);
  const std::string a = RandomBytes(rng, 80000);
  auto fa = WriteAndOpen("a", a);
  ASSERT_NE(fa, nullptr);
  for (size_t round = 0; round < 20; ++round) {
    Reads reads(40);
    for (size_t i = 0; i < reads.reqs.size(); ++i) {
      reads.Set(i, fa.get(), &a, rng() % a.size(), 4096);
    }
    std::unique_ptr<ReadQueue> queue = fs_->NewReadQueue();
    queue->Submit(reads.batch);
    const size_t waited = round % reads.reqs.size();
    queue->Wait(&reads.reqs[waited]);
    reads.Check(waited);
    // The rest are still in flight: the queue (and its pooled ring) must be
    // done with the buffers before they go; ASan would see a late write.
    queue.reset();
  }
}

TEST_P(FileSystemTest, ReadQueueForgottenRequestsNeverBlockTheRest) {
  std::mt19937_64 rng(23);
  const std::string a = RandomBytes(rng, 40000);
  auto fa = WriteAndOpen("a", a);
  ASSERT_NE(fa, nullptr);
  Reads reads(8);
  for (size_t i = 0; i < reads.reqs.size(); ++i) reads.Set(i, fa.get(), &a, i * 4096, 4096);
  std::unique_ptr<ReadQueue> queue = fs_->NewReadQueue();
  queue->Submit(reads.batch);
  for (size_t i = 0; i < reads.reqs.size(); i += 2) queue->Forget(&reads.reqs[i]);
  for (size_t i = 1; i < reads.reqs.size(); i += 2) {
    queue->Wait(&reads.reqs[i]);
    reads.Check(i);
  }
  // A forgotten read either never ran or completes; either way Poll ends it.
  for (size_t i = 0; i < reads.reqs.size(); i += 2) {
    while (!queue->Poll(&reads.reqs[i])) {
    }
  }
  EXPECT_EQ(queue->in_flight(), 0u);
}

TEST_P(FileSystemTest, MultiReadMatchesContents) {
  std::mt19937_64 rng(5);
  const std::string data = RandomBytes(rng, 100000);
  WriteFile("f", data);
  auto file = fs_->NewRandomAccessFile(Path("f"), options_);
  ASSERT_TRUE(file.ok()) << file.status();
  for (int requests : {1, 100, 1000}) {
    std::vector<ReadRequest> reqs(requests);
    std::vector<std::string> bufs(requests);
    for (int i = 0; i < requests; ++i) {
      ReadRequest& r = reqs[i];
      switch (i % 4) {
        case 0:  // Unaligned anywhere.
          r.offset = rng() % data.size();
          r.len = rng() % 9000;
          break;
        case 1:  // Aligned.
          r.offset = (rng() % 24) * kDirectIoAlignment;
          r.len = kDirectIoAlignment * (1 + rng() % 2);
          break;
        case 2:  // Straddles end of file.
          r.offset = data.size() - rng() % 5000;
          r.len = 6000;
          break;
        default:  // Past end of file.
          r.offset = data.size() + rng() % 10000;
          r.len = 10;
      }
      bufs[i].assign(r.len + 1, '\0');
      r.buf = bufs[i].data() + 1;  // Deliberately unaligned.
    }
    ASSERT_TRUE((*file)->MultiRead(absl::MakeSpan(reqs)).ok());
    for (int i = 0; i < requests; ++i) {
      const ReadRequest& r = reqs[i];
      ASSERT_TRUE(r.status.ok()) << r.status;
      const std::string_view want = r.offset >= data.size()
                                        ? std::string_view()
                                        : std::string_view(data).substr(r.offset, r.len);
      ASSERT_EQ(std::string_view(r.buf, r.result), want)
          << "request " << i << " offset " << r.offset << " len " << r.len;
    }
  }
}

TEST_P(FileSystemTest, ConcurrentReadersSeeTheSameBytes) {
  std::mt19937_64 rng(9);
  const std::string data = RandomBytes(rng, 50000);
  WriteFile("f", data);
  auto file = fs_->NewRandomAccessFile(Path("f"), options_);
  ASSERT_TRUE(file.ok());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 local(t);
      for (int i = 0; i < 50; ++i) {
        std::vector<ReadRequest> reqs(8);
        std::vector<std::string> bufs(8, std::string(3000, '\0'));
        for (int j = 0; j < 8; ++j) {
          reqs[j].offset = local() % data.size();
          reqs[j].len = 3000;
          reqs[j].buf = bufs[j].data();
        }
        if (!(*file)->MultiRead(absl::MakeSpan(reqs)).ok()) ++mismatches;
        for (const ReadRequest& r : reqs) {
          if (std::string_view(r.buf, r.result) != std::string_view(data).substr(r.offset, 3000)) {
            ++mismatches;
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_P(FileSystemTest, RenameRemoveListTruncateExistsAndSize) {
  WriteFile("a", "aaaa");
  WriteFile("b", "bbbbbbbb");
  ASSERT_TRUE(fs_->CreateDir(Path("sub")).ok());
  ASSERT_TRUE(fs_->CreateDir(Path("sub")).ok());  // Existing: fine.
  WriteFile("sub/c", "c");
  EXPECT_THAT(*fs_->ListDir(dir_), ElementsAre("a", "b", "sub"));
  EXPECT_THAT(*fs_->ListDir(Path("sub")), ElementsAre("c"));

  ASSERT_TRUE(fs_->RenameFile(Path("a"), Path("b")).ok());  // Replaces b.
  EXPECT_FALSE(fs_->FileExists(Path("a")));
  EXPECT_EQ(Contents("b"), "aaaa");
  EXPECT_THAT(*fs_->ListDir(dir_), ElementsAre("b", "sub"));

  ASSERT_TRUE(fs_->TruncateFile(Path("b"), 2).ok());
  EXPECT_EQ(*fs_->GetFileSize(Path("b")), 2u);
  EXPECT_EQ(Contents("b"), "aa");

  ASSERT_TRUE(fs_->RemoveFile(Path("b")).ok());
  EXPECT_FALSE(fs_->FileExists(Path("b")));
  EXPECT_TRUE(fs_->FileExists(Path("sub")));
  EXPECT_FALSE(fs_->RemoveDir(Path("sub")).ok());  // Not empty.
  ASSERT_TRUE(fs_->RemoveFile(Path("sub/c")).ok());
  ASSERT_TRUE(fs_->SyncDir(dir_).ok());
  ASSERT_TRUE(fs_->RemoveDir(Path("sub")).ok());
  EXPECT_TRUE(fs_->ListDir(dir_)->empty());
}

TEST_P(FileSystemTest, LinkSharesContentsAndRefusesAnExistingTarget) {
  WriteFile("a", "linked");
  ASSERT_TRUE(fs_->LinkFile(Path("a"), Path("b")).ok());
  EXPECT_EQ(Contents("b"), "linked");
  EXPECT_EQ(fs_->LinkFile(Path("a"), Path("b")).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(fs_->LinkFile(Path("missing"), Path("c")).code(), absl::StatusCode::kNotFound);
  // The second name outlives the first, as an inode's does.
  ASSERT_TRUE(fs_->RemoveFile(Path("a")).ok());
  EXPECT_EQ(Contents("b"), "linked");
}

TEST_P(FileSystemTest, DirectoryRenamesWithItsFiles) {
  ASSERT_TRUE(fs_->CreateDir(Path("d")).ok());
  ASSERT_TRUE(fs_->CreateDir(Path("d/inner")).ok());
  WriteFile("d/x", "x");
  WriteFile("d/inner/y", "yy");
  ASSERT_TRUE(fs_->RenameFile(Path("d"), Path("e")).ok());
  EXPECT_FALSE(fs_->FileExists(Path("d")));
  EXPECT_THAT(*fs_->ListDir(Path("e")), ElementsAre("inner", "x"));
  EXPECT_EQ(Contents("e/inner/y"), "yy");
}

TEST_P(FileSystemTest, OpenFileSurvivesRenameAndRemoval) {
  WriteFile("a", "contents");
  auto reader = fs_->NewRandomAccessFile(Path("a"), options_);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(fs_->RenameFile(Path("a"), Path("b")).ok());
  ASSERT_TRUE(fs_->RemoveFile(Path("b")).ok());
  char buf[16];
  std::string_view got;
  ASSERT_TRUE((*reader)->Read(0, sizeof(buf), buf, &got).ok());
  EXPECT_EQ(got, "contents");
}

TEST_P(FileSystemTest, MissingFilesAndDirectoriesAreNotFound) {
  EXPECT_TRUE(absl::IsNotFound(fs_->NewRandomAccessFile(Path("nope"), options_).status()));
  EXPECT_TRUE(absl::IsNotFound(fs_->ReopenWritableFile(Path("nope"), options_).status()));
  EXPECT_TRUE(absl::IsNotFound(fs_->GetFileSize(Path("nope")).status()));
  EXPECT_TRUE(absl::IsNotFound(fs_->RemoveFile(Path("nope"))));
  EXPECT_TRUE(absl::IsNotFound(fs_->RenameFile(Path("nope"), Path("x"))));
  EXPECT_TRUE(absl::IsNotFound(fs_->TruncateFile(Path("nope"), 0)));
  EXPECT_TRUE(absl::IsNotFound(fs_->NewWritableFile(Path("no/dir/f"), options_).status()));
  EXPECT_FALSE(fs_->FileExists(Path("nope")));
  absl::Status s = fs_->NewRandomAccessFile(Path("nope"), options_).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr(Path("nope")));

  ASSERT_TRUE(fs_->CreateDir(Path("d")).ok());
  ASSERT_TRUE(fs_->RemoveDir(Path("d")).ok());
  EXPECT_TRUE(absl::IsNotFound(fs_->ListDir(Path("d")).status()));
  EXPECT_TRUE(absl::IsNotFound(fs_->RemoveDir(Path("d"))));
  EXPECT_TRUE(absl::IsNotFound(fs_->SyncDir(Path("d"))));
}

TEST_P(FileSystemTest, SyncFilesSyncsEveryFile) {
  options_.category = IoCategory::kValueLog;
  auto a = fs_->NewWritableFile(Path("a"), options_);
  options_.category = IoCategory::kWal;
  auto b = fs_->NewWritableFile(Path("b"), options_);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Append("value bytes").ok());
  ASSERT_TRUE((*b)->Append("wal").ok());
  WritableFile* files[] = {a->get(), b->get()};
  ASSERT_TRUE(fs_->SyncFiles(files).ok());
  EXPECT_EQ(*fs_->GetFileSize(Path("a")), OnDisk(**a, 11));
  EXPECT_EQ(*fs_->GetFileSize(Path("b")), OnDisk(**b, 3));
  EXPECT_EQ(fs_->stats().Get(IoCategory::kValueLog).sync_ops, 1u);
  EXPECT_EQ(fs_->stats().Get(IoCategory::kWal).sync_ops, 1u);
  ASSERT_TRUE(fs_->SyncFiles({}).ok());
  ASSERT_TRUE((*a)->Close().ok());
  ASSERT_TRUE((*b)->Close().ok());
}

TEST_P(FileSystemTest, DirectReadsAreWidenedToTheFileReadAlignmentOnly) {
  std::mt19937_64 rng(7);
  const std::string data = RandomBytes(rng, 20000);
  options_.category = IoCategory::kTable;
  std::unique_ptr<RandomAccessFile> file = WriteAndOpen("f", data);
  ASSERT_NE(file, nullptr);
  const size_t align = file->read_alignment();
  // A power of two that divides the write alignment, so that every O_DIRECT
  // write's bounds are also read bounds.
  ASSERT_GT(align, 0u);
  EXPECT_EQ(align & (align - 1), 0u);
  EXPECT_EQ(kDirectIoAlignment % align, 0u);
  const bool direct = real() && options_.direct && SupportsDirectIo(dir_);
  if (!options_.direct) {
    EXPECT_EQ(align, 1u);  // buffered: any range
  }
  if (direct) {
    // The file system's own offset alignment where the kernel reports it
    // (STATX_DIOALIGN): on this project's disks the 512-byte logical block.
#ifdef STATX_DIOALIGN
    struct statx stx;
    if (::statx(AT_FDCWD, Path("f").c_str(), 0, STATX_DIOALIGN, &stx) == 0 &&
        (stx.stx_mask & STATX_DIOALIGN) != 0 && stx.stx_dio_offset_align > 0 &&
        stx.stx_dio_offset_align <= kDirectIoAlignment &&
        stx.stx_dio_mem_align <= kDirectIoAlignment) {
      EXPECT_EQ(align, stx.stx_dio_offset_align);
    } else {
      EXPECT_EQ(align, kDirectIoAlignment);
    }
#else
    EXPECT_EQ(align, kDirectIoAlignment);
#endif
  }
  // Reads at unaligned offsets, lengths and buffers, alone and batched,
  // return exactly the bytes asked for, and a direct file is charged only
  // the span widened to its alignment (up to the end of the file, where a
  // direct read stops).
  const std::vector<std::pair<uint64_t, size_t>> reads = {
      {1000, 4200}, {4095, 2}, {12345, 7000}, {19990, 100}, {0, 1}};
  for (const auto& [offset, n] : reads) {
    const size_t want = std::min<size_t>(n, data.size() - offset);
    const IoCategoryCounters before = fs_->stats().Get(IoCategory::kTable);
    std::string buf(n + 1, '\0');
    std::string_view got;
    ASSERT_TRUE(file->Read(offset, n, buf.data() + 1, &got).ok());
    EXPECT_EQ(got, std::string_view(data).substr(offset, want)) << offset;
    if (direct) {
      const uint64_t span = std::min<uint64_t>(AlignUp(offset + n, align), data.size()) -
                            AlignDown(offset, align);
      EXPECT_EQ(fs_->stats().Get(IoCategory::kTable).bytes_read - before.bytes_read, span)
          << offset;
    }
    ReadRequest req{.offset = offset, .len = n, .buf = buf.data() + 1};
    ASSERT_TRUE(file->MultiRead(absl::MakeSpan(&req, 1)).ok());
    EXPECT_EQ(std::string_view(req.buf, req.result), std::string_view(data).substr(offset, want));
  }
}

TEST_P(FileSystemTest, CountersAreChargedToTheFileCategory) {
  const std::string data(10000, 'x');
  options_.category = IoCategory::kWal;
  WriteFile("wal", data);
  auto file = fs_->ReopenWritableFile(Path("wal"), options_);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Close().ok());
  const IoCategoryCounters wal = fs_->stats().Get(IoCategory::kWal);
  if (options_.direct && real()) {
    EXPECT_GE(wal.bytes_written, data.size());  // Padded blocks count.
  } else {
    EXPECT_EQ(wal.bytes_written, data.size());
  }
  EXPECT_GE(wal.write_ops, 1u);
  EXPECT_EQ(wal.sync_ops, 1u);

  options_.category = IoCategory::kTable;
  auto reader = fs_->NewRandomAccessFile(Path("wal"), options_);
  ASSERT_TRUE(reader.ok());
  std::string buf(data.size(), '\0');
  std::string_view got;
  ASSERT_TRUE((*reader)->Read(0, data.size(), buf.data(), &got).ok());
  ReadRequest req{.offset = 100, .len = 200, .buf = buf.data()};
  ASSERT_TRUE((*reader)->MultiRead(absl::MakeSpan(&req, 1)).ok());
  const IoCategoryCounters table = fs_->stats().Get(IoCategory::kTable);
  EXPECT_GE(table.bytes_read, data.size() + 200);
  EXPECT_EQ(table.read_ops, 2u);
  EXPECT_EQ(table.bytes_written, 0u);
  const IoCategoryCounters vlog = fs_->stats().Get(IoCategory::kValueLog);
  EXPECT_EQ(vlog.bytes_written + vlog.bytes_read + vlog.sync_ops, 0u);
}

// FileOptions::prefill_bytes: buffered files on a real file system are
// zero-filled ahead of their appends in aligned chunks, uncounted as
// writes; Close cuts the zeros, a crash leaves them. O_DIRECT and memory
// files ignore it.
TEST_P(FileSystemTest, PrefillWritesZerosAheadThatCloseCuts) {
  constexpr uint64_t kChunk = 64 << 10;
  const bool prefills = real() && !options_.direct;
  options_.category = IoCategory::kWal;
  options_.prefill_bytes = kChunk;
  std::mt19937_64 rng(11);
  std::string expected;
  auto file = fs_->NewWritableFile(Path("f"), options_);
  ASSERT_TRUE(file.ok()) << file.status();
  for (size_t n : {size_t{24}, size_t{4100}, size_t{70000}, size_t{1}, size_t{200000}}) {
    const std::string data = RandomBytes(rng, n);
    expected += data;
    ASSERT_TRUE((*file)->Append(data).ok());
    ASSERT_TRUE((*file)->Flush().ok());
    const uint64_t on_disk = *fs_->GetFileSize(Path("f"));
    if (prefills) {
      EXPECT_EQ(on_disk, AlignUp(expected.size(), kChunk)) << expected.size();
      EXPECT_EQ(ContentsOf("f", expected.size()), expected);
    } else {
      EXPECT_EQ(on_disk, OnDisk(**file, expected.size()));
    }
  }
  EXPECT_EQ((*file)->Size(), expected.size());
  const IoCategoryCounters wal = fs_->stats().Get(IoCategory::kWal);
  if (prefills) {
    EXPECT_EQ(wal.bytes_written, expected.size());
    EXPECT_EQ(wal.bytes_prefilled, AlignUp(expected.size(), kChunk));
  } else {
    EXPECT_EQ(wal.bytes_prefilled, 0u);
  }
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(*fs_->GetFileSize(Path("f")), expected.size());
  EXPECT_EQ(Contents("f"), expected);

  if (!prefills) return;
  // A crash: the appended bytes, then the zeros written ahead of them.
  auto crashed = fs_->NewWritableFile(Path("g"), options_);
  ASSERT_TRUE(crashed.ok()) << crashed.status();
  ASSERT_TRUE((*crashed)->Append(expected.substr(0, 5000)).ok());
  ASSERT_TRUE((*crashed)->Flush().ok());
  auto* fd_file = dynamic_cast<FdWritableFile*>(crashed->get());
  ASSERT_NE(fd_file, nullptr);
  fd_file->AbandonForTesting();
  EXPECT_EQ(*fs_->GetFileSize(Path("g")), kChunk);
  EXPECT_EQ(ContentsOf("g", 5000), expected.substr(0, 5000));
}

TEST_P(FileSystemTest, PrefillOnAFullDiskLeavesTheAppendItsOwnError) {
  if (!real()) GTEST_SKIP() << "needs /dev/full";
  if (!fs_->FileExists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  options_.prefill_bytes = 64 << 10;
  auto file = fs_->ReopenWritableFile("/dev/full", options_);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append("doomed").ok());
  absl::Status s = (*file)->Flush();
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;  // The append's ENOSPC.
  EXPECT_THAT(std::string(s.message()), HasSubstr("/dev/full"));
  EXPECT_EQ((*file)->Close(), s);
}

TEST_P(FileSystemTest, SecondLockInProcessFailsUntilReleased) {
  auto lock = fs_->LockFile(Path("LOCK"));
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_TRUE(fs_->FileExists(Path("LOCK")));
  absl::Status second = fs_->LockFile(Path("LOCK")).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(second)) << second;
  EXPECT_THAT(std::string(second.message()), HasSubstr("LOCK"));
  // Another spelling of the same path is the same lock.
  EXPECT_FALSE(fs_->LockFile(dir_ + "/./LOCK").ok());
  lock->reset();
  auto again = fs_->LockFile(Path("LOCK"));
  EXPECT_TRUE(again.ok()) << again.status();
}

// A child process that takes a lock (acquire) and holds it until Release,
// when it exits and so lets it go.
class ChildHolding {
 public:
  explicit ChildHolding(
      const std::function<absl::StatusOr<std::unique_ptr<FileLock>>()>& acquire) {
    if (::pipe(to_parent_) != 0 || ::pipe(to_child_) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      // Held until the child exits (without destructors).
      const absl::StatusOr<std::unique_ptr<FileLock>> lock = acquire();
      char c = lock.ok() ? 'y' : 'n';
      if (::write(to_parent_[1], &c, 1) != 1) ::_exit(2);
      if (::read(to_child_[0], &c, 1) != 1) ::_exit(3);
      ::_exit(0);
    }
    char c = 0;
    acquired_ = pid_ > 0 && ::read(to_parent_[0], &c, 1) == 1 && c == 'y';
  }
  ~ChildHolding() {
    if (pid_ > 0) Release();
    for (int fd : {to_parent_[0], to_parent_[1], to_child_[0], to_child_[1]}) {
      if (fd >= 0) ::close(fd);
    }
  }
  bool acquired() const { return acquired_; }
  void Release() {
    if (pid_ <= 0) return;
    EXPECT_EQ(::write(to_child_[1], "x", 1), 1);
    int status = 0;
    EXPECT_EQ(::waitpid(pid_, &status, 0), pid_);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    pid_ = -1;
  }

 private:
  int to_parent_[2] = {-1, -1};
  int to_child_[2] = {-1, -1};
  pid_t pid_ = -1;
  bool acquired_ = false;
};

// Read-only readers share the lock file beside its exclusive holder, and
// the writer sees them (core/gc_coordinator_punch.cc holds punching back meanwhile).
TEST_P(FileSystemTest, ReadersShareTheLockFileAndTheWriterSeesThem) {
  const std::string path = Path("LOCK");
  EXPECT_TRUE(absl::IsNotFound(fs_->LockFileShared(path).status()));
  EXPECT_FALSE(*fs_->LockFileHasReaders(path));
  auto writer = fs_->LockFile(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_FALSE(*fs_->LockFileHasReaders(path));
  auto first = fs_->LockFileShared(path);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = fs_->LockFileShared(path);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(*fs_->LockFileHasReaders(path));
  EXPECT_TRUE(absl::IsFailedPrecondition(fs_->LockFile(path).status())) << "still one writer";
  first->reset();
  EXPECT_TRUE(*fs_->LockFileHasReaders(path));
  second->reset();
  EXPECT_FALSE(*fs_->LockFileHasReaders(path));
  if (!real()) return;
  // A reader in another process.
  ChildHolding child([&] { return fs_->LockFileShared(path); });
  ASSERT_TRUE(child.acquired());
  EXPECT_TRUE(*fs_->LockFileHasReaders(path));
  child.Release();
  EXPECT_FALSE(*fs_->LockFileHasReaders(path));
}

TEST_P(FileSystemTest, LockExcludesOtherProcesses) {
  if (!real()) GTEST_SKIP() << "no processes in memory";
  const std::string path = Path("LOCK");
  {
    auto lock = fs_->LockFile(path);
    ASSERT_TRUE(lock.ok()) << lock.status();
    // The child tries the kernel lock directly: its copy of the in-process
    // table would refuse it anyway.
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int fd = ::open(path.c_str(), O_RDWR);
      struct flock fl = {};
      fl.l_type = F_WRLCK;
      fl.l_whence = SEEK_SET;
      const bool ofd_refused = ::fcntl(fd, F_OFD_SETLK, &fl) < 0 && errno == EAGAIN;
      const bool posix_refused =
          ::fcntl(fd, F_SETLK, &fl) < 0 && (errno == EAGAIN || errno == EACCES);
      ::_exit(fd >= 0 && ofd_refused && posix_refused ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  // Now the child holds it through LockFile; the parent must be refused.
  ChildHolding child([&] { return fs_->LockFile(path); });
  ASSERT_TRUE(child.acquired());
  absl::Status refused = fs_->LockFile(path).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  child.Release();
  EXPECT_TRUE(fs_->LockFile(path).ok());
}

TEST_P(FileSystemTest, WriteErrorPoisonsTheFile) {
  if (!real()) GTEST_SKIP() << "needs /dev/full";
  if (!fs_->FileExists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  auto file = fs_->ReopenWritableFile("/dev/full", options_);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append("doomed").ok());  // Still in the buffer.
  absl::Status s = (*file)->Flush();
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;  // ENOSPC.
  EXPECT_THAT(std::string(s.message()), HasSubstr("/dev/full"));
  EXPECT_EQ((*file)->Append("more"), s);
  EXPECT_EQ((*file)->Sync(), s);
  EXPECT_EQ((*file)->Close(), s);
}

TEST_P(FileSystemTest, FailedAppendPartsPoisonsTheFile) {
  if (!real()) GTEST_SKIP() << "needs /dev/full";
  if (!fs_->FileExists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  auto file = fs_->ReopenWritableFile("/dev/full", options_);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append("buffered").ok());
  const std::string big(FdWritableFile::kGatherBytes, 'x');
  const std::string_view parts[] = {big, "tail"};
  absl::Status s = (*file)->AppendParts(parts);
  if (s.ok()) s = (*file)->Flush();  // O_DIRECT: the parts went to the buffer
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_EQ((*file)->Append("more"), s);
  EXPECT_EQ((*file)->AppendParts(parts), s);
  EXPECT_EQ((*file)->Close(), s);
}

TEST_P(FileSystemTest, SyncFilesReportsAFailedFileAndSyncsTheOthers) {
  if (!real()) GTEST_SKIP() << "needs /dev/full";
  if (!fs_->FileExists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  auto full = fs_->ReopenWritableFile("/dev/full", options_);
  options_.category = IoCategory::kWal;
  auto good = fs_->NewWritableFile(Path("good"), options_);
  ASSERT_TRUE(full.ok() && good.ok());
  ASSERT_TRUE((*full)->Append("x").ok());
  ASSERT_TRUE((*good)->Append("y").ok());
  WritableFile* files[] = {full->get(), good->get()};
  absl::Status s = fs_->SyncFiles(files);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_EQ(fs_->stats().Get(IoCategory::kWal).sync_ops, 1u);
  EXPECT_EQ(*fs_->GetFileSize(Path("good")), OnDisk(**good, 1));
  EXPECT_EQ((*full)->Sync(), s);  // Poisoned.
  EXPECT_TRUE((*good)->Close().ok());
}

TEST_P(FileSystemTest, ReadingADirectoryFailsCleanly) {
  auto file = fs_->NewRandomAccessFile(dir_, options_);
  if (!file.ok()) return;  // Refused at open: fine.
  char buf[16];
  std::string_view got;
  EXPECT_FALSE((*file)->Read(0, sizeof(buf), buf, &got).ok());
  ReadRequest reqs[2] = {{.offset = 0, .len = 16, .buf = buf},
                         {.offset = 4096, .len = 16, .buf = buf}};
  absl::Status s = (*file)->MultiRead(absl::MakeSpan(reqs));
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(reqs[0].status.ok());
  EXPECT_FALSE(reqs[1].status.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr(dir_));
}

TEST_P(FileSystemTest, HelpersRoundTripWholeFiles) {
  ASSERT_TRUE(WriteStringToFile(fs_.get(), Path("CURRENT"), "MANIFEST-000001\n", true).ok());
  EXPECT_EQ(*ReadFileToString(fs_.get(), Path("CURRENT")), "MANIFEST-000001\n");
  ASSERT_TRUE(WriteStringToFile(fs_.get(), Path("CURRENT"), "", false).ok());
  EXPECT_EQ(*ReadFileToString(fs_.get(), Path("CURRENT")), "");
  EXPECT_TRUE(absl::IsNotFound(ReadFileToString(fs_.get(), Path("nope")).status()));
}

INSTANTIATE_TEST_SUITE_P(Backends, FileSystemTest,
                         ::testing::Combine(::testing::Values("io_uring", "posix", "memory"),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param) == "io_uring"
                                                  ? "uring"
                                                  : std::get<0>(info.param);
                           return name + (std::get<1>(info.param) ? "_direct" : "_buffered");
                         });

}  // namespace
}  // namespace cairn::io
