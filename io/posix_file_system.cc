#include "io/posix_file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "io/status_macros.h"

namespace cairn::io {

absl::Status ErrnoError(int errno_value, const std::string& what) {
  if (errno_value == ENOSPC || errno_value == EDQUOT) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": ", std::strerror(errno_value)));
  }
  return absl::ErrnoToStatus(errno_value, what);
}

namespace {

// Reads up to n bytes at offset, stopping early only at end of file. A direct
// read (direct_alignment > 0, the file's read granularity) that comes back
// short by an unaligned amount has reached end of file: reading on from
// there would be an unaligned O_DIRECT request.
absl::StatusOr<size_t> PreadFull(int fd, uint64_t offset, size_t n, char* buf,
                                 size_t direct_alignment, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, buf + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return ErrnoError(errno, absl::StrCat("read ", path, " at ", offset + done));
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
    if (direct_alignment > 0 && !IsAligned(done, direct_alignment)) break;
  }
  return done;
}

// The offset and memory alignment O_DIRECT reads of fd need, as the kernel
// reports them (STATX_DIOALIGN, Linux 6.1); kDirectIoAlignment for both
// where it does not, or reports one that kDirectIoAlignment is not a
// multiple of.
struct DirectIoAlignment {
  size_t offset = kDirectIoAlignment;
  size_t memory = kDirectIoAlignment;
};

DirectIoAlignment QueryDirectIoAlignment(int fd) {
  DirectIoAlignment a;
#ifdef STATX_DIOALIGN
  struct statx stx;
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) != 0) return a;
  if ((stx.stx_mask & STATX_DIOALIGN) == 0) return a;
  const auto fits = [](uint32_t v) {
    return v > 0 && (v & (v - 1)) == 0 && v <= kDirectIoAlignment;
  };
  if (!fits(stx.stx_dio_offset_align) || !fits(stx.stx_dio_mem_align)) return a;
  a.offset = stx.stx_dio_offset_align;
  a.memory = stx.stx_dio_mem_align;
#else
  (void)fd;
#endif
  return a;
}

int RetryOnEintr(int (*fn)(int), int fd) {
  int r;
  do {
    r = fn(fd);
  } while (r < 0 && errno == EINTR);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------
// FdWritableFile

FdWritableFile::FdWritableFile(int fd, std::string path, IoCategory category, bool direct,
                               std::shared_ptr<IoStats> stats, uint64_t writeback_bytes,
                               uint64_t prefill_bytes)
    : fd_(fd),
      path_(std::move(path)),
      category_(category),
      direct_(direct),
      stats_(std::move(stats)),
      buf_(kBufferSize),
      writeback_bytes_(direct ? 0 : writeback_bytes),
      prefill_bytes_(direct ? 0 : prefill_bytes) {}

FdWritableFile::~FdWritableFile() {
  if (!closed_) Close().IgnoreError();
}

absl::Status FdWritableFile::InitAtEnd(uint64_t end_offset) {
  size_.store(end_offset, std::memory_order_relaxed);
  disk_size_ = end_offset;
  prefilled_end_ = end_offset;
  writeback_from_ = AlignDown(end_offset, kDirectIoAlignment);
  tail_written_ = false;
  buf_.Clear();
  if (!direct_) {
    buf_offset_ = end_offset;
    return absl::OkStatus();
  }
  // The partial tail block comes back into the buffer so that the next Flush
  // rewrites it whole, with the new bytes after it.
  buf_offset_ = AlignDown(end_offset, kDirectIoAlignment);
  const size_t tail = end_offset - buf_offset_;
  if (tail == 0) return absl::OkStatus();
  CAIRN_ASSIGN_OR_RETURN(
      size_t got, PreadFull(fd_, buf_offset_, kDirectIoAlignment, buf_.data(),
                                direct_ ? kDirectIoAlignment : 0, path_));
  stats_->AddRead(category_, got);
  if (got < tail) {
    return absl::DataLossError(absl::StrCat("reopen ", path_, ": tail block at ", buf_offset_,
                                            " has ", got, " bytes, expected ", tail));
  }
  buf_.set_size(tail);
  return absl::OkStatus();
}

absl::Status FdWritableFile::Poison(absl::Status status) {
  if (error_.ok()) error_ = status;
  return status;
}

absl::Status FdWritableFile::Append(std::string_view data) {
  if (!error_.ok()) return error_;
  if (closed_) return absl::FailedPreconditionError(absl::StrCat("append to closed ", path_));
  // A large append into an empty buffered file skips the copy.
  if (!direct_ && buf_.empty() && data.size() >= buf_.capacity()) {
    CAIRN_RETURN_IF_ERROR(WriteAndCharge(buf_offset_, data));
    buf_offset_ += data.size();
    size_.fetch_add(data.size(), std::memory_order_relaxed);
    return absl::OkStatus();
  }
  while (!data.empty()) {
    const size_t took = buf_.Append(data);
    data.remove_prefix(took);
    size_.fetch_add(took, std::memory_order_relaxed);
    if (took > 0) tail_written_ = false;
    if (buf_.room() > 0) continue;
    if (!direct_) {
      CAIRN_RETURN_IF_ERROR(WriteBuffer());
      continue;
    }
    // A full buffer is whole blocks: it goes to the device while the
    // appends go on into the spare one.
    CAIRN_RETURN_IF_ERROR(FinishWriteBehind());
    if (spare_.capacity() == 0) spare_ = AlignedBuffer(kBufferSize);
    const size_t n = buf_.size();
    absl::Status s = StartWrite(buf_offset_, buf_.view());
    if (!s.ok()) return Poison(s);
    behind_ = n;
    std::swap(buf_, spare_);
    buf_.Clear();
    buf_offset_ += n;
    disk_size_ = std::max(disk_size_, buf_offset_);
  }
  return absl::OkStatus();
}

absl::Status FdWritableFile::FinishWriteBehind() {
  if (behind_ == 0) return absl::OkStatus();
  const size_t n = behind_;
  behind_ = 0;
  absl::Status s = FinishWrites();
  if (!s.ok()) return Poison(s);
  stats_->AddWrite(category_, n);
  return absl::OkStatus();
}

absl::Status FdWritableFile::AppendParts(absl::Span<const std::string_view> parts) {
  size_t total = 0;
  for (std::string_view part : parts) total += part.size();
  // O_DIRECT writes aligned blocks, which only the buffer can make.
  if (direct_ || total < kGatherBytes) return WritableFile::AppendParts(parts);
  if (!error_.ok()) return error_;
  if (closed_) return absl::FailedPreconditionError(absl::StrCat("append to closed ", path_));
  std::vector<iovec> iov;
  iov.reserve(parts.size() + 1);
  if (!buf_.empty()) iov.push_back({buf_.data(), buf_.size()});
  for (std::string_view part : parts) {
    if (!part.empty()) iov.push_back({const_cast<char*>(part.data()), part.size()});
  }
  const size_t n = buf_.size() + total;
  absl::Status s = WriteVectorAt(buf_offset_, absl::MakeSpan(iov), n);
  if (!s.ok()) return Poison(s);
  stats_->AddWrite(category_, n);
  buf_offset_ += n;
  StartWriteback(buf_offset_);
  buf_.Clear();
  size_.fetch_add(total, std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status FdWritableFile::WriteVectorAt(uint64_t offset, absl::Span<iovec> iov, size_t n) {
  // A buffered write goes to the kernel in pieces of at most
  // kMaxBufferedWrite bytes (the header says why); the last iovec of a
  // piece is cut short for the call and restored after it.
  const size_t max_piece = direct_ ? n : kMaxBufferedWrite;
  PrefillThrough(offset + n);
  size_t done = 0, first = 0;
  while (done < n) {
    size_t count = 0, piece = 0;
    while (first + count < iov.size() && count < IOV_MAX && piece < max_piece) {
      piece += iov[first + count++].iov_len;
    }
    const size_t held_back = piece > max_piece ? piece - max_piece : 0;
    iov[first + count - 1].iov_len -= held_back;
    ssize_t r = ::pwritev(fd_, iov.data() + first, static_cast<int>(count),
                          static_cast<off_t>(offset + done));
    iov[first + count - 1].iov_len += held_back;
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return ErrnoError(errno, absl::StrCat("write ", path_, " at ", offset + done));
    }
    if (r == 0) {
      return absl::DataLossError(
          absl::StrCat("write ", path_, " at ", offset + done, ": no progress"));
    }
    done += static_cast<size_t>(r);
    // A short write: go on from where it stopped.
    size_t left = static_cast<size_t>(r);
    while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return absl::OkStatus();
}

absl::Status FdWritableFile::WriteAndCharge(uint64_t offset, std::string_view data) {
  absl::Status s = WriteAt(offset, data);
  if (!s.ok()) return Poison(s);
  // Charged as the device sees it: padding and rewritten tail blocks count.
  stats_->AddWrite(category_, data.size());
  StartWriteback(offset + data.size());
  return absl::OkStatus();
}

void FdWritableFile::PrefillThrough(uint64_t end) {
  if (prefill_bytes_ == 0 || end <= prefilled_end_) return;
  // Pieces of kMaxBufferedWrite, as every buffered write (the header says
  // why); aligned chunks, so that the appends meet whole folios.
  static constexpr char kZeros[kMaxBufferedWrite] = {};
  const uint64_t to = (end + prefill_bytes_ - 1) / prefill_bytes_ * prefill_bytes_;
  uint64_t at = prefilled_end_;
  while (at < to) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(to - at, sizeof(kZeros)));
    const ssize_t r = ::pwrite(fd_, kZeros, n, static_cast<off_t>(at));
    if (r <= 0) {
      if (r < 0 && errno == EINTR) continue;
      // Full disk or an I/O error: the zeros are only a head start for the
      // appends, which go on without them and report their own errors.
      prefill_bytes_ = 0;
      break;
    }
    at += static_cast<uint64_t>(r);
  }
  stats_->AddPrefill(category_, at - prefilled_end_);
  prefilled_end_ = at;
}

void FdWritableFile::StartWriteback(uint64_t end) {
  if (writeback_bytes_ == 0) return;
  uint64_t to = AlignDown(end, kDirectIoAlignment);
  if (to < writeback_from_ + kWritebackLag + writeback_bytes_) return;
  to -= kWritebackLag;
  // Only a hint to the kernel: a failure here changes nothing that was
  // promised, and the next write or sync reports a real I/O error.
  ::sync_file_range(fd_, static_cast<off64_t>(writeback_from_),
                    static_cast<off64_t>(to - writeback_from_), SYNC_FILE_RANGE_WRITE);
  writeback_from_ = to;
}

absl::Status FdWritableFile::WriteBuffer() {
  if (!error_.ok()) return error_;
  CAIRN_RETURN_IF_ERROR(FinishWriteBehind());
  const size_t n = buf_.size();
  if (n == 0) return absl::OkStatus();
  if (!direct_) {
    CAIRN_RETURN_IF_ERROR(WriteAndCharge(buf_offset_, buf_.view()));
    buf_offset_ += n;
    buf_.Clear();
    return absl::OkStatus();
  }
  const std::string_view blocks = DirectBlocks();
  if (blocks.empty()) return absl::OkStatus();
  CAIRN_RETURN_IF_ERROR(WriteAndCharge(buf_offset_, blocks));
  BlocksWritten(blocks.size());
  return absl::OkStatus();
}

std::string_view FdWritableFile::DirectBlocks() {
  // Only a partial tail block, already on disk as it is now (a Sync after
  // a Flush): nothing to write.
  if (buf_.empty() || tail_written_) return {};
  const size_t padded = AlignUp(buf_.size(), kDirectIoAlignment);
  buf_.ZeroFill(padded);
  return std::string_view(buf_.data(), padded);
}

void FdWritableFile::BlocksWritten(size_t padded) {
  // The zero padding stays on disk until Close cuts it: truncating after
  // every write would cost a journal update each time.
  disk_size_ = std::max(disk_size_, buf_offset_ + padded);
  const size_t whole = AlignDown(buf_.size(), kDirectIoAlignment);
  buf_offset_ += whole;
  buf_.DropPrefix(whole);
  tail_written_ = true;
}

absl::Status FdWritableFile::Flush() {
  if (!error_.ok()) return error_;
  if (closed_) return absl::FailedPreconditionError(absl::StrCat("flush of closed ", path_));
  return WriteBuffer();
}

absl::Status FdWritableFile::PrepareSync() { return Flush(); }

absl::Status FdWritableFile::FinishSync(absl::Status sync_status) {
  stats_->AddSync(category_);
  if (!sync_status.ok()) return Poison(sync_status);
  return absl::OkStatus();
}

absl::Status FdWritableFile::Sync() {
  CAIRN_RETURN_IF_ERROR(PrepareSync());
  return FinishSync(DataSync());
}

absl::Status FdWritableFile::StartWriteAndSync(uint64_t offset, std::string_view data) {
  if (!data.empty()) CAIRN_RETURN_IF_ERROR(WriteAt(offset, data));
  return DataSync();
}

absl::Status FdWritableFile::StartSync() {
  if (!direct_) return Sync();
  if (!error_.ok()) return error_;
  if (closed_) return absl::FailedPreconditionError(absl::StrCat("sync of closed ", path_));
  CAIRN_RETURN_IF_ERROR(FinishWriteBehind());
  const std::string_view data = DirectBlocks();
  absl::Status s = StartWriteAndSync(buf_offset_, data);
  if (!s.ok()) {
    stats_->AddSync(category_);
    return Poison(s);
  }
  sync_write_len_ = data.size();
  sync_pending_ = true;
  return absl::OkStatus();
}

absl::Status FdWritableFile::WaitSync() {
  // StartSync synced at once (buffered files), or there is nothing to wait for.
  if (!sync_pending_) return absl::OkStatus();
  sync_pending_ = false;
  absl::Status s = FinishWriteAndSync();
  stats_->AddSync(category_);
  if (!s.ok()) return Poison(s);
  if (sync_write_len_ > 0) {
    stats_->AddWrite(category_, sync_write_len_);
    BlocksWritten(sync_write_len_);
  }
  return absl::OkStatus();
}

absl::Status FdWritableFile::Close() {
  if (closed_) return error_;
  // A StartSync nobody waited for: its write must be off the buffer first.
  if (sync_pending_) WaitSync().IgnoreError();
  // The write-behind buffer must be off the device before it is freed,
  // whatever else failed.
  absl::Status s = FinishWriteBehind();
  if (s.ok()) s = WriteBuffer();
  closed_ = true;
  const uint64_t logical = size_.load(std::memory_order_relaxed);
  const bool padded = disk_size_ > logical;         // O_DIRECT's tail padding
  const bool prefilled = prefilled_end_ > logical;  // zeros written ahead
  if (s.ok() && (padded || prefilled)) {
    // The zeros past the last append go, so that a closed file is exactly
    // its bytes. O_DIRECT's padding goes durably, so that this holds after
    // a crash too; zeros written ahead need no sync, since the formats that
    // prefill read them as the end.
    int r;
    do {
      r = ::ftruncate(fd_, static_cast<off_t>(logical));
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
      s = Poison(ErrnoError(errno, absl::StrCat("ftruncate ", path_, " to ", logical)));
    } else if (padded) {
      s = DataSync();
      if (!s.ok()) s = Poison(s);
    }
  }
  if (::close(fd_) < 0 && s.ok()) {
    // close may report a deferred writeback error; it counts like a failed write.
    s = Poison(ErrnoError(errno, absl::StrCat("close ", path_)));
  }
  fd_ = -1;
  return s;
}

void FdWritableFile::AbandonForTesting() {
  if (closed_) return;
  if (sync_pending_) WaitSync().IgnoreError();
  FinishWriteBehind().IgnoreError();
  closed_ = true;
  ::close(fd_);
  fd_ = -1;
}

absl::Status FdWritableFile::WriteAt(uint64_t offset, std::string_view data) {
  iovec one = {const_cast<char*>(data.data()), data.size()};
  return WriteVectorAt(offset, absl::MakeSpan(&one, 1), data.size());
}

absl::Status FdWritableFile::DataSync() {
  if (RetryOnEintr(::fdatasync, fd_) < 0) {
    return ErrnoError(errno, absl::StrCat("fdatasync ", path_));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// FdRandomAccessFile

FdRandomAccessFile::FdRandomAccessFile(int fd, std::string path, IoCategory category, bool direct,
                                       std::shared_ptr<IoStats> stats)
    : fd_(fd),
      path_(std::move(path)),
      category_(category),
      direct_(direct),
      stats_(std::move(stats)) {
  if (direct_) {
    const DirectIoAlignment a = QueryDirectIoAlignment(fd_);
    read_alignment_ = a.offset;
    memory_alignment_ = a.memory;
  }
}

FdRandomAccessFile::~FdRandomAccessFile() { ::close(fd_); }

bool FdRandomAccessFile::ReadsInPlace(uint64_t offset, size_t n, const char* buf) const {
  return !direct_ || (IsAligned(offset, read_alignment_) && IsAligned(n, read_alignment_) &&
                      IsAligned(buf, memory_alignment_));
}

absl::StatusOr<size_t> FdRandomAccessFile::ReadAt(uint64_t offset, size_t n, char* buf) const {
  CAIRN_ASSIGN_OR_RETURN(size_t got,
                         PreadFull(fd_, offset, n, buf, direct_ ? read_alignment_ : 0, path_));
  stats_->AddRead(category_, got);
  return got;
}

absl::Status FdRandomAccessFile::Read(uint64_t offset, size_t n, char* scratch,
                                      std::string_view* result) const {
  *result = std::string_view(scratch, 0);
  if (n == 0) return absl::OkStatus();
  if (ReadsInPlace(offset, n, scratch)) {
    CAIRN_ASSIGN_OR_RETURN(size_t got, ReadAt(offset, n, scratch));
    *result = std::string_view(scratch, got);
    return absl::OkStatus();
  }
  const uint64_t start = AlignDown(offset, read_alignment_);
  const uint64_t end = AlignUp(offset + n, read_alignment_);
  AlignedBuffer bounce(end - start);
  CAIRN_ASSIGN_OR_RETURN(size_t got, ReadAt(start, end - start, bounce.data()));
  const size_t skip = offset - start;
  const size_t avail = got > skip ? std::min(n, got - skip) : 0;
  if (avail > 0) std::memcpy(scratch, bounce.data() + skip, avail);
  *result = std::string_view(scratch, avail);
  return absl::OkStatus();
}

absl::Status FdRandomAccessFile::MultiRead(absl::Span<ReadRequest> requests) const {
  absl::Status first;
  for (ReadRequest& req : requests) {
    std::string_view got;
    req.status = Read(req.offset, req.len, req.buf, &got);
    req.result = req.status.ok() ? got.size() : 0;
    if (first.ok()) first = req.status;
  }
  return first;
}

absl::StatusOr<uint64_t> FdRandomAccessFile::Size() const {
  struct stat st;
  if (::fstat(fd_, &st) < 0) return ErrnoError(errno, absl::StrCat("fstat ", path_));
  return static_cast<uint64_t>(st.st_size);
}

// ---------------------------------------------------------------------------
// PosixFileSystem

PosixFileSystem::PosixFileSystem() : stats_(std::make_shared<IoStats>()) {}
PosixFileSystem::~PosixFileSystem() = default;

namespace {
std::atomic<bool> refuse_direct_for_testing{false};
}  // namespace

void SetDirectIoRefusedForTesting(bool refused) { refuse_direct_for_testing.store(refused); }

absl::StatusOr<int> PosixFileSystem::OpenFd(const std::string& path, int flags, bool* direct) {
  flags |= O_CLOEXEC;
  int fd;
  if (*direct) {
    do {
      if (refuse_direct_for_testing.load()) {
        fd = -1;
        errno = EINVAL;  // as from a file system without O_DIRECT
        break;
      }
      fd = ::open(path.c_str(), flags | O_DIRECT, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd >= 0) return fd;
    if (errno != EINVAL) return ErrnoError(errno, absl::StrCat("open ", path));
    *direct = false;  // This file system cannot do O_DIRECT (tmpfs): go buffered.
  }
  do {
    fd = ::open(path.c_str(), flags, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("open ", path));
  return fd;
}

std::unique_ptr<FdWritableFile> PosixFileSystem::MakeWritableFile(int fd, const std::string& path,
                                                                  const FileOptions& options,
                                                                  bool direct) {
  return std::make_unique<FdWritableFile>(fd, path, options.category, direct, stats_,
                                          options.writeback_bytes, options.prefill_bytes);
}

std::unique_ptr<FdRandomAccessFile> PosixFileSystem::MakeRandomAccessFile(int fd,
                                                                          const std::string& path,
                                                                          IoCategory category,
                                                                          bool direct) {
  return std::make_unique<FdRandomAccessFile>(fd, path, category, direct, stats_);
}

absl::StatusOr<std::unique_ptr<WritableFile>> PosixFileSystem::NewWritableFile(
    const std::string& path, const FileOptions& options) {
  bool direct = options.direct;
  CAIRN_ASSIGN_OR_RETURN(int fd, OpenFd(path, O_RDWR | O_CREAT | O_TRUNC, &direct));
  return MakeWritableFile(fd, path, options, direct);
}

absl::StatusOr<std::unique_ptr<WritableFile>> PosixFileSystem::ReopenWritableFile(
    const std::string& path, const FileOptions& options) {
  bool direct = options.direct;
  CAIRN_ASSIGN_OR_RETURN(int fd, OpenFd(path, O_RDWR, &direct));
  struct stat st;
  if (::fstat(fd, &st) < 0) {
    absl::Status s = ErrnoError(errno, absl::StrCat("fstat ", path));
    ::close(fd);
    return s;
  }
  std::unique_ptr<FdWritableFile> file = MakeWritableFile(fd, path, options, direct);
  CAIRN_RETURN_IF_ERROR(file->InitAtEnd(static_cast<uint64_t>(st.st_size)));
  return file;
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> PosixFileSystem::NewRandomAccessFile(
    const std::string& path, const FileOptions& options) {
  bool direct = options.direct;
  CAIRN_ASSIGN_OR_RETURN(int fd, OpenFd(path, O_RDONLY, &direct));
  return MakeRandomAccessFile(fd, path, options.category, direct);
}

absl::Status PosixFileSystem::RenameFile(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) < 0) {
    return ErrnoError(errno, absl::StrCat("rename ", from, " to ", to));
  }
  return absl::OkStatus();
}

absl::Status PosixFileSystem::LinkFile(const std::string& from, const std::string& to) {
  if (::link(from.c_str(), to.c_str()) < 0) {
    const int e = errno;
    if (e == EXDEV || e == EPERM || e == EOPNOTSUPP) {
      return absl::UnimplementedError(
          absl::StrCat("link ", from, " to ", to, ": ", std::strerror(e), " (copy instead)"));
    }
    return ErrnoError(e, absl::StrCat("link ", from, " to ", to));
  }
  return absl::OkStatus();
}

absl::Status PosixFileSystem::RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) < 0) return ErrnoError(errno, absl::StrCat("unlink ", path));
  return absl::OkStatus();
}

absl::Status PosixFileSystem::OverwriteSynced(const std::string& path, uint64_t offset,
                                              std::string_view data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("open ", path));
  absl::Status s;
  struct stat st;
  if (::fstat(fd, &st) < 0) {
    s = ErrnoError(errno, absl::StrCat("fstat ", path));
  } else if (offset + data.size() > static_cast<uint64_t>(st.st_size)) {
    s = absl::OutOfRangeError(absl::StrCat("overwrite ", path, " at ", offset, ": ", data.size(),
                                           " bytes past its end (", st.st_size, " bytes)"));
  }
  size_t done = 0;
  while (s.ok() && done < data.size()) {
    const ssize_t n =
        ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      s = ErrnoError(errno, absl::StrCat("write ", path, " at ", offset + done));
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (s.ok() && ::fdatasync(fd) < 0) s = ErrnoError(errno, absl::StrCat("fdatasync ", path));
  ::close(fd);
  return s;
}

absl::Status PosixFileSystem::TruncateFile(const std::string& path, uint64_t size) {
  int r;
  do {
    r = ::truncate(path.c_str(), static_cast<off_t>(size));
  } while (r < 0 && errno == EINTR);
  if (r < 0) return ErrnoError(errno, absl::StrCat("truncate ", path, " to ", size));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> PosixFileSystem::GetFileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) < 0) return ErrnoError(errno, absl::StrCat("stat ", path));
  return static_cast<uint64_t>(st.st_size);
}

absl::StatusOr<FileSystem::FileSpace> PosixFileSystem::GetFileSpace(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) < 0) return ErrnoError(errno, absl::StrCat("stat ", path));
  // st_blocks counts 512-byte units whatever the file system's block size.
  return FileSpace{.allocated_bytes = static_cast<uint64_t>(st.st_blocks) * 512,
                   .links = static_cast<uint64_t>(st.st_nlink)};
}

absl::Status PosixFileSystem::PunchHoles(const std::string& path,
                                         absl::Span<const std::pair<uint64_t, uint64_t>> ranges) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("open ", path, " to punch holes"));
  absl::Status status;
  for (const auto& [offset, length] : ranges) {
    if (length == 0) continue;
    if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                    static_cast<off_t>(length)) < 0) {
      const int e = errno;
      const std::string what = absl::StrCat("punch a hole in ", path, " at ", offset, " of ",
                                            length, " bytes");
      status = (e == EOPNOTSUPP || e == ENOSYS)
                   ? absl::UnimplementedError(absl::StrCat(what, ": not supported here"))
                   : ErrnoError(e, what);
      break;
    }
  }
  ::close(fd);
  return status;
}

bool PosixFileSystem::FileExists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

absl::StatusOr<std::vector<std::string>> PosixFileSystem::ListDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError(errno, absl::StrCat("opendir ", dir));
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) return ErrnoError(err, absl::StrCat("readdir ", dir));
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status PosixFileSystem::CreateDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0) return absl::OkStatus();
  const int err = errno;
  struct stat st;
  if (err == EEXIST && ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::OkStatus();
  }
  return ErrnoError(err, absl::StrCat("mkdir ", dir));
}

absl::Status PosixFileSystem::RemoveDir(const std::string& dir) {
  if (::rmdir(dir.c_str()) < 0) return ErrnoError(errno, absl::StrCat("rmdir ", dir));
  return absl::OkStatus();
}

absl::Status PosixFileSystem::SyncDir(const std::string& dir) {
  int fd;
  do {
    fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("open dir ", dir));
  absl::Status s;
  if (RetryOnEintr(::fsync, fd) < 0) s = ErrnoError(errno, absl::StrCat("fsync dir ", dir));
  ::close(fd);
  stats_->AddSync(IoCategory::kOther);
  return s;
}

}  // namespace cairn::io
