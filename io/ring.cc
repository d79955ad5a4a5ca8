#include "io/ring.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "io/file_system.h"
#include "io/posix_file_system.h"
#include "io/status_macros.h"

namespace cairn::io {
namespace {

// errno that ring setup is forced to fail with (SetRingSetupFailureForTesting).
std::atomic<int> forced_setup_errno{0};

// Submitting may fail transiently (-EAGAIN, -EBUSY: the kernel is short of
// memory or completions are backed up); the runner reaps and retries this
// many times before calling the ring broken.
constexpr int kMaxSubmitRetries = 1000;

// Counts the forks between the first process and this one: the child's fork
// handler bumps it, so a ring that recorded another value was set up by an
// ancestor. Cheaper than getpid() (a system call) on every submission.
std::atomic<uint64_t> fork_generation{0};

void AfterForkInChild();

}  // namespace

uint64_t ForkGeneration() {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, AfterForkInChild);
    return true;
  }();
  (void)registered;
  return fork_generation.load(std::memory_order_relaxed);
}

void SetRingSetupFailureForTesting(int errno_value) {
  forced_setup_errno.store(errno_value, std::memory_order_relaxed);
}

absl::StatusOr<std::unique_ptr<Ring>> Ring::Create(unsigned depth) {
  const int forced = forced_setup_errno.load(std::memory_order_relaxed);
  std::unique_ptr<Ring> ring(new Ring);
  ring->fork_generation_ = ForkGeneration();
  int r = forced != 0 ? -forced : io_uring_queue_init(depth, &ring->ring_, 0);
  if (r < 0) return ErrnoError(-r, "io_uring_queue_init");
  ring->set_up_ = true;
  return ring;
}

bool Ring::OwnedByThisProcess() const { return fork_generation_ == ForkGeneration(); }

absl::Status Ring::CheckOwner() const {
  if (OwnedByThisProcess()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "io_uring: this ring was set up by the parent of a forked process; a database opened "
      "before fork must not be used in the child (open one in the child instead)");
}

Ring::~Ring() {
  if (set_up_) io_uring_queue_exit(&ring_);
}

namespace {

// Rings of exited threads, kept for the next thread instead of being torn
// down. Besides saving a setup per short-lived thread, this keeps a ring's
// memory mapped for the life of the process: liburing maps and unmaps rings
// with raw syscalls that ThreadSanitizer cannot see, so a new ring mapped
// where an old thread's ring was would look like a race. Handing a ring over
// through this mutex orders the two threads' uses of it. There are never
// more rings than the most threads that did I/O at once.
//
// std::mutex rather than absl::Mutex: ThreadSanitizer must see this hand-over,
// and the system's prebuilt abseil is not instrumented, so an absl::Mutex is
// invisible to it.
class RingPool {
 public:
  std::unique_ptr<Ring> Take() {
    std::lock_guard<std::mutex> l(mu_);
    while (!free_.empty()) {
      std::unique_ptr<Ring> ring = std::move(free_.back());
      free_.pop_back();
      // A parent's ring, in a forked child: unmapping it and closing its
      // descriptor here leaves the parent's untouched.
      if (ring->OwnedByThisProcess()) return ring;
    }
    return nullptr;
  }
  void Put(std::unique_ptr<Ring> ring) {
    std::lock_guard<std::mutex> l(mu_);
    free_.push_back(std::move(ring));
  }

  // fork() copies only the forking thread, so the child's copy of mu_ must
  // not be held by a thread it lacks: mu_ is held across fork.
  void LockForFork() ABSL_NO_THREAD_SAFETY_ANALYSIS { mu_.lock(); }
  void UnlockAfterFork() ABSL_NO_THREAD_SAFETY_ANALYSIS { mu_.unlock(); }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<Ring>> free_ ABSL_GUARDED_BY(mu_);
};

RingPool& Pool() {
  static RingPool* const pool = [] {
    auto* p = new RingPool;  // Never destroyed: see above.
    pthread_atfork([] { Pool().LockForFork(); }, [] { Pool().UnlockAfterFork(); },
                   [] { Pool().UnlockAfterFork(); });
    return p;
  }();
  return *pool;
}

void AfterForkInChild() { fork_generation.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

// Returns this thread's ring to the pool when the thread exits.
struct Ring::ThreadSlot {
  std::unique_ptr<Ring> ring;
  ~ThreadSlot() { ReturnOwned(std::move(ring)); }
};

absl::StatusOr<Ring*> Ring::ThisThread() {
  thread_local ThreadSlot slot;
  if (slot.ring != nullptr && (slot.ring->broken_ || !slot.ring->OwnedByThisProcess())) {
    slot.ring.reset();
  }
  if (slot.ring == nullptr) {
    // The test hook fails a thread's setup even when a pooled ring is free.
    const int forced = forced_setup_errno.load(std::memory_order_relaxed);
    if (forced != 0) return ErrnoError(forced, "io_uring_queue_init");
    slot.ring = Pool().Take();
  }
  if (slot.ring == nullptr) {
    auto created = Create(kDepth);
    if (!created.ok()) return created.status();
    slot.ring = *std::move(created);
  }
  return slot.ring.get();
}

absl::StatusOr<std::unique_ptr<Ring>> Ring::TakeOwned() {
  const int forced = forced_setup_errno.load(std::memory_order_relaxed);
  if (forced != 0) return ErrnoError(forced, "io_uring_queue_init");
  std::unique_ptr<Ring> ring = Pool().Take();
  if (ring != nullptr) return ring;
  return Create(kDepth);
}

void Ring::ReturnOwned(std::unique_ptr<Ring> ring) {
  if (ring != nullptr && !ring->broken_ && ring->OwnedByThisProcess()) {
    Pool().Put(std::move(ring));
  }
}

io_uring_sqe* Ring::GetSqe() {
  // An inherited ring's entries are shared with the parent: never write one.
  if (!OwnedByThisProcess()) return nullptr;
  return io_uring_get_sqe(&ring_);
}

absl::Status Ring::Submit() {
  CAIRN_RETURN_IF_ERROR(CheckOwner());
  int retries = 0;
  while (true) {
    const int r = io_uring_submit(&ring_);
    if (r >= 0) return absl::OkStatus();
    if (r == -EINTR) continue;
    if ((r == -EAGAIN || r == -EBUSY) && ++retries <= kMaxSubmitRetries) {
      absl::SleepFor(absl::Microseconds(100));
      continue;
    }
    return ErrnoError(-r, "io_uring_submit");
  }
}

absl::Status Ring::WaitCompletion(uint64_t* data, int* res) {
  CAIRN_RETURN_IF_ERROR(CheckOwner());
  io_uring_cqe* cqe = nullptr;
  while (true) {
    const int r = io_uring_wait_cqe(&ring_, &cqe);
    if (r == 0) break;
    if (r != -EINTR) return ErrnoError(-r, "io_uring_wait_cqe");
  }
  *data = io_uring_cqe_get_data64(cqe);
  *res = cqe->res;
  io_uring_cqe_seen(&ring_, cqe);
  return absl::OkStatus();
}

bool Ring::PeekCompletion(uint64_t* data, int* res) {
  if (!OwnedByThisProcess()) return false;
  io_uring_cqe* cqe = nullptr;
  if (io_uring_peek_cqe(&ring_, &cqe) != 0) return false;
  *data = io_uring_cqe_get_data64(cqe);
  *res = cqe->res;
  io_uring_cqe_seen(&ring_, cqe);
  return true;
}

void Ring::Abandon(size_t in_flight) {
  broken_ = true;
  // A parent's ring: what is in flight on it is the parent's, not ours.
  if (!OwnedByThisProcess()) return;
  io_uring_cqe* cqe;
  while (in_flight > 0) {
    __kernel_timespec ts{.tv_sec = 1, .tv_nsec = 0};
    if (io_uring_wait_cqe_timeout(&ring_, &cqe, &ts) != 0) break;
    io_uring_cqe_seen(&ring_, cqe);
    --in_flight;
  }
}

absl::Status Ring::Probe() {
  // Probes this thread's ring rather than a throwaway one (see RingPool);
  // the test hook must still make it fail.
  const int forced = forced_setup_errno.load(std::memory_order_relaxed);
  if (forced != 0) return ErrnoError(forced, "io_uring_queue_init");
  absl::StatusOr<Ring*> ring = ThisThread();
  if (!ring.ok()) return ring.status();
  io_uring_probe* probe = io_uring_get_probe_ring(&(*ring)->ring_);
  if (probe == nullptr) return absl::UnimplementedError("io_uring: cannot probe opcodes");
  const bool ok = io_uring_opcode_supported(probe, IORING_OP_READ) &&
                  io_uring_opcode_supported(probe, IORING_OP_WRITE) &&
                  io_uring_opcode_supported(probe, IORING_OP_FSYNC);
  io_uring_free_probe(probe);
  if (!ok) return absl::UnimplementedError("io_uring: read, write or fsync unsupported");
  absl::Status nop = (*ring)->RunProbeNop();
  // Whatever failed, the ring is not handed out again (and a no-op still in
  // flight holds no buffer, so dropping the ring with it is safe).
  if (!nop.ok()) (*ring)->broken_ = true;
  return nop;
}

absl::Status Ring::RunProbeNop() {
  // Setup alone proves little: a seccomp profile may allow io_uring_setup and
  // deny io_uring_enter, and then every submission fails with EPERM. One
  // no-op submitted and reaped shows the ring runs. The wait is bounded so
  // that a ring whose completions never come cannot hang the open.
  constexpr uint64_t kNopData = ~uint64_t{0};
  io_uring_sqe* sqe = GetSqe();
  if (sqe == nullptr) return absl::InternalError("io_uring probe: no free submission entry");
  io_uring_prep_nop(sqe);
  io_uring_sqe_set_data64(sqe, kNopData);
  int r;
  do {
    r = io_uring_submit(&ring_);
  } while (r == -EINTR);
  if (r < 0) return ErrnoError(-r, "io_uring probe: io_uring_submit of a no-op");
  if (r != 1) return absl::InternalError("io_uring probe: the no-op was not submitted");
  const absl::Time deadline = absl::Now() + absl::Seconds(1);
  io_uring_cqe* cqe = nullptr;
  while (true) {
    const absl::Duration left = std::max(deadline - absl::Now(), absl::ZeroDuration());
    __kernel_timespec ts{.tv_sec = absl::ToInt64Seconds(left),
                         .tv_nsec = absl::ToInt64Nanoseconds(left % absl::Seconds(1))};
    r = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
    if (r == 0) break;
    if (r == -EINTR && absl::Now() < deadline) continue;
    return ErrnoError(-r, "io_uring probe: waiting for a no-op's completion");
  }
  const uint64_t data = io_uring_cqe_get_data64(cqe);
  const int res = cqe->res;
  io_uring_cqe_seen(&ring_, cqe);
  if (data != kNopData) return absl::InternalError("io_uring probe: unexpected completion");
  if (res < 0) return ErrnoError(-res, "io_uring probe: no-op");
  return absl::OkStatus();
}

absl::Status Ring::RunBatch(size_t n, absl::FunctionRef<void(size_t, io_uring_sqe*)> prep,
                            absl::FunctionRef<bool(size_t, int)> complete) {
  CAIRN_RETURN_IF_ERROR(CheckOwner());
  // Operations still to submit, in order, from pending[next] on; resubmitted
  // ones go to the back.
  absl::InlinedVector<size_t, 16> pending(n);
  for (size_t i = 0; i < n; ++i) pending[i] = i;
  size_t next = 0;
  size_t in_flight = 0;  // Prepared and not yet reaped.
  int submit_retries = 0;
  absl::Status failure;
  while (next < pending.size() || in_flight > 0) {
    while (next < pending.size() && in_flight < kDepth) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      if (sqe == nullptr) break;
      const size_t i = pending[next++];
      prep(i, sqe);
      io_uring_sqe_set_data64(sqe, i);
      ++in_flight;
    }
    // Submits whatever is queued (all of it in one call) and waits for one
    // completion; later completions are picked up by peeking below.
    int r = io_uring_submit_and_wait(&ring_, 1);
    if (r < 0 && r != -EINTR) {
      if ((r == -EAGAIN || r == -EBUSY) && ++submit_retries <= kMaxSubmitRetries) {
        absl::SleepFor(absl::Microseconds(100));
      } else {
        failure = ErrnoError(-r, "io_uring_submit");
        break;
      }
    }
    io_uring_cqe* cqe;
    while (io_uring_peek_cqe(&ring_, &cqe) == 0) {
      const size_t i = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
      const int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      --in_flight;
      if (!complete(i, res)) pending.push_back(i);
    }
  }
  if (failure.ok()) return failure;
  // The ring failed. Wait for what the kernel already has, so that no buffer
  // is touched after we return; queued but unsubmitted entries die with the
  // ring, which is replaced on this thread's next use.
  Abandon(in_flight);
  return failure;
}

}  // namespace cairn::io
