// The abseil synchronization shim of the TSan build (preset tsan; linked into
// every executable of that build, nowhere else). Why and how:
// docs/durability.md, "Data races: the TSan build".
//
// Debian's abseil (libabsl-dev 20220623) is not built with -fsanitize=thread,
// so absl::Mutex takes and releases its lock in code TSan never sees: every
// access a Mutex guards would look unordered to it, and it would report a
// race on all of them. The shim defines the out-of-line absl::Mutex, CondVar
// and Notification member functions our code calls, which binds our calls to
// these definitions instead of the shared library's (an executable's symbols
// come first). Each one forwards to the real function, found once with
// dlsym(RTLD_NEXT, its mangled name), and tells TSan what it did through
// TSan's mutex annotations (sanitizer/tsan_interface.h):
//   - after a lock returns: __tsan_mutex_pre_lock + __tsan_mutex_post_lock
//     (an acquire; reader locks with __tsan_mutex_read_lock, so two readers
//     are not ordered by the lock, as with a real rwlock);
//   - before an unlock: __tsan_mutex_pre_unlock + __tsan_mutex_post_unlock
//     (a release);
//   - CondVar::Wait and Mutex::Await: an unlock before the call, a lock
//     after it (the wait lets the lock go and takes it back);
//   - a Condition passed to Await or LockWhen is wrapped, so that whichever
//     thread abseil evaluates it on (the waiter, or another thread unlocking)
//     does so inside an annotated lock of the mutex;
//   - Notification: a release on its address before Notify, an acquire after
//     a wait that saw the notification.
// Every annotation is made outside the real call, never around it: between
// them TSan's annotations ignore synchronization, and the wrapped conditions
// must be seen. The window this leaves (held, but not yet annotated as held)
// only ever makes TSan see less ordering than there is: it can report a race
// that is not there, never hide one that is.
//
// Not covered: Notification::HasBeenNotified (inline in the header; a poll
// that reads true is not an acquire to TSan), and absl's BlockingCounter,
// Barrier and call_once, which cairn does not use. The ctest test
// tsan_shim_covers_every_sync_import (check_imports.sh) fails when a suite's
// binary still imports an abseil synchronization function, which would be
// one the shim does not define.
//
// Thread safety: every function may be called from any thread, as abseil's.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/config.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace cairn::tsan_shim {
namespace {

#define CAIRN_TSAN_STR2(x) #x
#define CAIRN_TSAN_STR(x) CAIRN_TSAN_STR2(x)

// The mangled-name prefix of namespace absl, with abseil's inline namespace
// (absl::debian3 on Debian 12) when it has one. The suffixes below use S0_
// for that namespace, so they assume it exists.
#if !ABSL_OPTION_USE_INLINE_NAMESPACE
#error "the shim's mangled names assume abseil's inline namespace"
#endif
const std::string& AbslPrefix() {
  static const std::string* prefix = [] {
    const std::string ns = CAIRN_TSAN_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
    return new std::string("4absl" + std::to_string(ns.size()) + ns);
  }();
  return *prefix;
}

// The real function for one mangled name, looked up once (a racing first
// lookup finds the same address twice). A missing symbol means the shim no
// longer matches the installed abseil: stop loudly rather than hang or lie.
template <typename Fn>
Fn Real(std::atomic<Fn>& slot, const char* kind, const char* suffix) {
  Fn fn = slot.load(std::memory_order_acquire);
  if (fn != nullptr) return fn;
  const std::string name = std::string(kind) + AbslPrefix() + suffix;
  fn = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name.c_str()));
  if (fn == nullptr) {
    std::fprintf(stderr, "absl_sync_shim: %s not found (%s)\n", name.c_str(), ::dlerror());
    std::abort();
  }
  slot.store(fn, std::memory_order_release);
  return fn;
}

#define CAIRN_REAL(type, kind, suffix)                        \
  ([]() -> type {                                             \
    static std::atomic<type> slot{nullptr};                   \
    return ::cairn::tsan_shim::Real<type>(slot, kind, suffix); \
  }())

// Depth of real abseil calls on this thread. abseil calls its own exported
// functions through the PLT too (CondVar::WaitWithTimeout calls
// WaitWithDeadline; Notification locks its Mutex), so those calls land here
// as well: only the outermost call of a thread annotates.
thread_local int in_real = 0;

bool Nested() { return in_real > 0; }

template <typename Fn, typename... Args>
auto CallReal(Fn fn, Args... args) {
  struct Depth {
    Depth() { ++in_real; }
    ~Depth() { --in_real; }
  } depth;
  return fn(args...);
}

constexpr unsigned kExclusive = 0;
constexpr unsigned kShared = __tsan_mutex_read_lock;

void AnnotateLock(const void* mu, unsigned mode) {
  void* m = const_cast<void*>(mu);
  __tsan_mutex_pre_lock(m, mode);
  __tsan_mutex_post_lock(m, mode, 0);
}

void AnnotateUnlock(const void* mu, unsigned mode) {
  void* m = const_cast<void*>(mu);
  __tsan_mutex_pre_unlock(m, mode);
  __tsan_mutex_post_unlock(m, mode);
}

// The mutexes this thread holds and how, so that CondVar::Wait and Await
// (which work in either mode) annotate the mode the caller holds. Plain
// data: it must outlive every thread_local destructor that takes a lock.
struct HeldLock {
  const void* mu;
  unsigned mode;
};
constexpr int kMaxHeld = 64;
thread_local HeldLock held[kMaxHeld];
thread_local int held_count = 0;
thread_local int held_overflow = 0;

void PushHeld(const void* mu, unsigned mode) {
  if (held_count == kMaxHeld) {
    ++held_overflow;  // deeper than any lock nesting in cairn; modes unknown
    return;
  }
  held[held_count++] = {mu, mode};
}

void PopHeld(const void* mu) {
  for (int i = held_count - 1; i >= 0; --i) {
    if (held[i].mu == mu) {
      held[i] = held[--held_count];
      return;
    }
  }
  if (held_overflow > 0) --held_overflow;
}

unsigned HeldMode(const void* mu) {
  for (int i = held_count - 1; i >= 0; --i) {
    if (held[i].mu == mu) return held[i].mode;
  }
  return kExclusive;  // taken through a path the shim did not see
}

void Locked(const void* mu, unsigned mode) {
  AnnotateLock(mu, mode);
  PushHeld(mu, mode);
}

void Unlocking(const void* mu, unsigned mode) {
  PopHeld(mu);
  AnnotateUnlock(mu, mode);
}

// A Condition that evaluates the caller's inside an annotated lock of mu.
struct WrappedCondition {
  const absl::Condition* cond;
  const void* mu;
  unsigned mode;

  // Runs inside a real call (on the waiter or on an unlocking thread); the
  // condition is user code again, so calls it makes are outermost calls.
  static bool Eval(void* arg) {
    __tsan_acquire(arg);  // see AsCondition
    const auto* w = static_cast<const WrappedCondition*>(arg);
    const int depth = in_real;
    in_real = 0;
    AnnotateLock(w->mu, w->mode);
    const bool result = w->cond->Eval();
    AnnotateUnlock(w->mu, w->mode);
    in_real = depth;
    return result;
  }
  // abseil hands the condition to the thread that evaluates it through its
  // own (unseen) queues: this release, and the acquire in Eval, order the
  // waiter's set-up (this struct, the caller's Condition and what it reads)
  // before the evaluation.
  absl::Condition AsCondition() {
    __tsan_release(this);
    return absl::Condition(&WrappedCondition::Eval, this);
  }
};

// Real-function types: a member function takes `this` first.
using MutexFn = void (*)(absl::Mutex*);
using MutexTryFn = bool (*)(absl::Mutex*);
using MutexCondFn = void (*)(absl::Mutex*, const absl::Condition&);
using MutexCondTimeoutFn = bool (*)(absl::Mutex*, const absl::Condition&, absl::Duration);
using MutexCondDeadlineFn = bool (*)(absl::Mutex*, const absl::Condition&, absl::Time);
using CondVarFn = void (*)(absl::CondVar*);
using CondVarWaitFn = void (*)(absl::CondVar*, absl::Mutex*);
using CondVarTimeoutFn = bool (*)(absl::CondVar*, absl::Mutex*, absl::Duration);
using CondVarDeadlineFn = bool (*)(absl::CondVar*, absl::Mutex*, absl::Time);
using NotifyFn = void (*)(absl::Notification*);
using NotificationWaitFn = void (*)(const absl::Notification*);
using NotificationTimeoutFn = bool (*)(const absl::Notification*, absl::Duration);
using NotificationDeadlineFn = bool (*)(const absl::Notification*, absl::Time);

constexpr const char* kN = "_ZN";    // a member function
constexpr const char* kNK = "_ZNK";  // a const member function

// Await-style calls: the caller holds mu (mode from the table); the real call
// lets it go while it waits and returns holding it again.
template <typename Real, typename... Args>
auto AwaitAnnotated(Real real, absl::Mutex* mu, const absl::Condition& cond, Args... args) {
  if (Nested()) return real(mu, cond, args...);
  const unsigned mode = HeldMode(mu);
  WrappedCondition w{&cond, mu, mode};
  Unlocking(mu, mode);
  const auto result = CallReal(real, mu, w.AsCondition(), args...);
  Locked(mu, mode);
  return result;
}

// LockWhen-style calls: return holding mu in mode.
template <typename Real, typename... Args>
auto LockWhenAnnotated(Real real, absl::Mutex* mu, const absl::Condition& cond, unsigned mode,
                       Args... args) {
  if (Nested()) return real(mu, cond, args...);
  WrappedCondition w{&cond, mu, mode};
  const auto result = CallReal(real, mu, w.AsCondition(), args...);
  Locked(mu, mode);
  return result;
}

// CondVar waits: like Await, on the mutex passed.
template <typename Real, typename... Args>
auto WaitAnnotated(Real real, absl::CondVar* cv, absl::Mutex* mu, Args... args) {
  if (Nested()) return real(cv, mu, args...);
  const unsigned mode = HeldMode(mu);
  Unlocking(mu, mode);
  const auto result = CallReal(real, cv, mu, args...);
  Locked(mu, mode);
  return result;
}

template <typename Real>
void LockAnnotated(Real real, absl::Mutex* mu, unsigned mode) {
  if (Nested()) return real(mu);
  CallReal(real, mu);
  Locked(mu, mode);
}

template <typename Real>
bool TryLockAnnotated(Real real, absl::Mutex* mu, unsigned mode) {
  if (Nested()) return real(mu);
  const bool locked = CallReal(real, mu);
  if (locked) Locked(mu, mode);
  return locked;
}

template <typename Real>
void UnlockAnnotated(Real real, absl::Mutex* mu, unsigned mode) {
  if (Nested()) return real(mu);
  Unlocking(mu, mode);
  CallReal(real, mu);
}

// Notification waits: an acquire once the notification is seen.
template <typename Real, typename... Args>
bool NotificationWaitAnnotated(Real real, const absl::Notification* n, Args... args) {
  if (Nested()) return real(n, args...);
  const bool notified = CallReal(real, n, args...);
  if (notified) __tsan_acquire(const_cast<absl::Notification*>(n));
  return notified;
}

}  // namespace
}  // namespace cairn::tsan_shim

namespace absl {
ABSL_NAMESPACE_BEGIN

namespace shim = ::cairn::tsan_shim;

Mutex::~Mutex() {
  CAIRN_REAL(shim::MutexFn, shim::kN, "5MutexD1Ev")(this);
  if (!shim::Nested()) __tsan_mutex_destroy(this, 0);  // reports one destroyed while held
}

void Mutex::Lock() {
  shim::LockAnnotated(CAIRN_REAL(shim::MutexFn, shim::kN, "5Mutex4LockEv"), this,
                      shim::kExclusive);
}

void Mutex::ReaderLock() {
  shim::LockAnnotated(CAIRN_REAL(shim::MutexFn, shim::kN, "5Mutex10ReaderLockEv"), this,
                      shim::kShared);
}

bool Mutex::TryLock() {
  return shim::TryLockAnnotated(CAIRN_REAL(shim::MutexTryFn, shim::kN, "5Mutex7TryLockEv"),
                                this, shim::kExclusive);
}

bool Mutex::ReaderTryLock() {
  return shim::TryLockAnnotated(
      CAIRN_REAL(shim::MutexTryFn, shim::kN, "5Mutex13ReaderTryLockEv"), this, shim::kShared);
}

void Mutex::Unlock() {
  shim::UnlockAnnotated(CAIRN_REAL(shim::MutexFn, shim::kN, "5Mutex6UnlockEv"), this,
                        shim::kExclusive);
}

void Mutex::ReaderUnlock() {
  shim::UnlockAnnotated(CAIRN_REAL(shim::MutexFn, shim::kN, "5Mutex12ReaderUnlockEv"), this,
                        shim::kShared);
}

void Mutex::LockWhen(const Condition& cond) {
  auto real = CAIRN_REAL(shim::MutexCondFn, shim::kN, "5Mutex8LockWhenERKNS0_9ConditionE");
  shim::LockWhenAnnotated(
      [real](Mutex* mu, const Condition& c) {
        real(mu, c);
        return true;
      },
      this, cond, shim::kExclusive);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  auto real =
      CAIRN_REAL(shim::MutexCondFn, shim::kN, "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  shim::LockWhenAnnotated(
      [real](Mutex* mu, const Condition& c) {
        real(mu, c);
        return true;
      },
      this, cond, shim::kShared);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  return shim::LockWhenAnnotated(
      CAIRN_REAL(shim::MutexCondTimeoutFn, shim::kN,
                 "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE"),
      this, cond, shim::kExclusive, timeout);
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  return shim::LockWhenAnnotated(
      CAIRN_REAL(shim::MutexCondTimeoutFn, shim::kN,
                 "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE"),
      this, cond, shim::kShared, timeout);
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  return shim::LockWhenAnnotated(
      CAIRN_REAL(shim::MutexCondDeadlineFn, shim::kN,
                 "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE"),
      this, cond, shim::kExclusive, deadline);
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  return shim::LockWhenAnnotated(
      CAIRN_REAL(shim::MutexCondDeadlineFn, shim::kN,
                 "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE"),
      this, cond, shim::kShared, deadline);
}

void Mutex::Await(const Condition& cond) {
  auto real = CAIRN_REAL(shim::MutexCondFn, shim::kN, "5Mutex5AwaitERKNS0_9ConditionE");
  shim::AwaitAnnotated(
      [real](Mutex* mu, const Condition& c) {
        real(mu, c);
        return true;
      },
      this, cond);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  return shim::AwaitAnnotated(
      CAIRN_REAL(shim::MutexCondTimeoutFn, shim::kN,
                 "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE"),
      this, cond, timeout);
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  return shim::AwaitAnnotated(
      CAIRN_REAL(shim::MutexCondDeadlineFn, shim::kN,
                 "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE"),
      this, cond, deadline);
}

CondVar::~CondVar() { CAIRN_REAL(shim::CondVarFn, shim::kN, "7CondVarD1Ev")(this); }

void CondVar::Wait(Mutex* mu) {
  auto real = CAIRN_REAL(shim::CondVarWaitFn, shim::kN, "7CondVar4WaitEPNS0_5MutexE");
  shim::WaitAnnotated(
      [real](CondVar* cv, Mutex* m) {
        real(cv, m);
        return true;
      },
      this, mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  return shim::WaitAnnotated(CAIRN_REAL(shim::CondVarTimeoutFn, shim::kN,
                                        "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE"),
                             this, mu, timeout);
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  return shim::WaitAnnotated(CAIRN_REAL(shim::CondVarDeadlineFn, shim::kN,
                                        "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE"),
                             this, mu, deadline);
}

// Signalling orders nothing by itself: the woken waiter is ordered after the
// signaller by the mutex it takes back.
void CondVar::Signal() { CAIRN_REAL(shim::CondVarFn, shim::kN, "7CondVar6SignalEv")(this); }
void CondVar::SignalAll() { CAIRN_REAL(shim::CondVarFn, shim::kN, "7CondVar9SignalAllEv")(this); }

Notification::~Notification() {
  CAIRN_REAL(shim::NotifyFn, shim::kN, "12NotificationD1Ev")(this);
}

void Notification::Notify() {
  auto real = CAIRN_REAL(shim::NotifyFn, shim::kN, "12Notification6NotifyEv");
  if (shim::Nested()) return real(this);
  __tsan_release(this);
  shim::CallReal(real, this);
}

void Notification::WaitForNotification() const {
  auto real = CAIRN_REAL(shim::NotificationWaitFn, shim::kNK,
                         "12Notification19WaitForNotificationEv");
  shim::NotificationWaitAnnotated(
      [real](const Notification* n) {
        real(n);
        return true;
      },
      this);
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  return shim::NotificationWaitAnnotated(
      CAIRN_REAL(shim::NotificationTimeoutFn, shim::kNK,
                 "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE"),
      this, timeout);
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  return shim::NotificationWaitAnnotated(
      CAIRN_REAL(shim::NotificationDeadlineFn, shim::kNK,
                 "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE"),
      this, deadline);
}

ABSL_NAMESPACE_END
}  // namespace absl
