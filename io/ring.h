// Ring is one io_uring instance (liburing) with a batch runner on top: it puts
// many operations in flight with one submission, reaps their completions and
// resubmits the ones the caller says are unfinished (short transfers, -EAGAIN,
// -EINTR). The io_uring backend (uring_file_system.h) does all its I/O here.
//
// Each thread gets its own ring (ThisThread), so submissions need no lock. A
// ring is set up on a thread's first use; when the thread exits it goes to a
// process-wide pool for the next new thread, and stays mapped until the
// process exits. Every operation a
// call submits has completed before that call returns, so a ring never holds
// a completion that belongs to a finished call, and no buffer is referenced
// by the kernel after its owner returns.
//
// Rings are per process. A forked child shares its parent's rings (the same
// kernel queues, mapped into both), and two processes submitting to and
// reaping from one ring steal each other's completions and spin. Each ring
// records the process (fork generation) that set it up: in a child,
// ThisThread and TakeOwned never hand out an inherited ring (the pool and
// the thread's slot drop them and set up new ones), and an inherited ring
// that a child still holds (a ReadQueue made before fork) fails every
// submit and wait with FailedPrecondition instead of touching the queues.
//
// Thread safety: a Ring belongs to one thread.
#ifndef CAIRN_IO_RING_H_
#define CAIRN_IO_RING_H_

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cairn::io {

// Counts the forks between the first process and this one (a fork handler
// in the child bumps it): what a process-owned object records when it is
// set up tells whether it was inherited across fork(). An atomic load.
uint64_t ForkGeneration();

class Ring {
 public:
  // Submission queue entries; also the most operations RunBatch keeps in
  // flight (the completion queue is twice as deep, so it cannot overflow).
  static constexpr unsigned kDepth = 256;
  // The largest transfer one operation asks for; longer ones are continued
  // like short transfers.
  static constexpr size_t kMaxTransfer = size_t{1} << 30;

  // This thread's ring, taken from the pool or set up on first use (and
  // again after a failure of the ring itself). Fails like io_uring_queue_init: EPERM under a
  // seccomp profile that forbids io_uring, ENOSYS on old kernels, ENOMEM under memlock limits.
  static absl::StatusOr<Ring*> ThisThread();

  // Checks that this thread's ring can be set up, supports read, write and
  // fsync, and runs: one no-op is submitted and reaped (waiting a second at
  // most), which catches a seccomp profile that allows io_uring_setup but
  // denies io_uring_enter. OK means the io_uring backend can run here; on
  // failure the ring is dropped.
  static absl::Status Probe();

  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Runs operations 0..n-1. prep(i, sqe) prepares operation i; it is called
  // again when operation i is resubmitted. complete(i, res) receives the
  // completion's res (bytes, or -errno) and returns true when operation i is
  // finished, false to resubmit it. The first submission carries up to
  // kDepth operations; completions free room for the rest.
  //
  // Returns an error only when the ring itself fails (io_uring_enter); the
  // operations not yet completed then have unknown outcome, and this thread
  // gets a fresh ring on its next ThisThread().
  absl::Status RunBatch(size_t n, absl::FunctionRef<void(size_t, io_uring_sqe*)> prep,
                        absl::FunctionRef<bool(size_t, int)> complete);

  // Asynchronous use, by an owner that keeps operations in flight between
  // calls (io::ReadQueue) instead of a thread. TakeOwned hands out a pooled
  // or a new ring; ReturnOwned gives it back and may be called only when
  // every operation submitted on it has completed (a broken ring is dropped).
  static absl::StatusOr<std::unique_ptr<Ring>> TakeOwned();
  static void ReturnOwned(std::unique_ptr<Ring> ring);
  // A submission entry to prepare, or null when the submission queue is full.
  // Always null on a ring inherited across fork.
  io_uring_sqe* GetSqe();
  // Submits every prepared entry, retrying transient failures. An error
  // leaves the entries' fate unknown: call Abandon.
  absl::Status Submit();
  // The next completion (its user data and res), waiting for one, or only
  // if one is ready (false when none is).
  absl::Status WaitCompletion(uint64_t* data, int* res);
  bool PeekCompletion(uint64_t* data, int* res);
  // After a failure: waits (a second at most per operation) for the in_flight
  // operations the kernel may still hold, so their buffers can be freed, and
  // marks the ring broken.
  void Abandon(size_t in_flight);

  // Whether this process set the ring up (false for a ring inherited across
  // fork), and as a status: FailedPrecondition for an inherited ring.
  bool OwnedByThisProcess() const;
  absl::Status CheckOwner() const;

 private:
  struct ThreadSlot;

  Ring() = default;
  static absl::StatusOr<std::unique_ptr<Ring>> Create(unsigned depth);
  // Submits one no-op and waits (bounded) for its completion; for Probe.
  absl::Status RunProbeNop();

  io_uring ring_{};
  uint64_t fork_generation_ = 0;  // ForkGeneration() when set up
  bool set_up_ = false;  // io_uring_queue_init succeeded.
  bool broken_ = false;  // The ring failed; replace it.
};

}  // namespace cairn::io

#endif  // CAIRN_IO_RING_H_
