// Disk full on the cairn backend (docs/etcd.md, "Disk full"): raise etcd's
// NOSPACE alarm rather than stop the member.
//
// etcd 3.4's BatchTx.Commit has no error to return, and cairn refuses every
// write after a failed one until it is reopened. Two defences:
//
//  1. The free-space guard. The file system's free space under the cairn
//     directory (statfs, at most every cairnSpaceCheckEvery while there is
//     room, at each Size while there is not) is compared
//     with a reserve: CAIRN_ETCD_SPACE_RESERVE (default 64 MiB; 0 turns
//     the guard off), raised to four times the largest recent commit. Below
//     it, Size reports cairnFullSize, over any quota: etcd's quota check
//     (etcdserver/quota.go, Size()+cost < quota) then refuses puts, txns
//     and lease grants with "database space exceeded" and raises NOSPACE,
//     before the disk is full. What etcd has already accepted, and the
//     deletes, compactions and defrags an operator runs to get out, still
//     commit, into the reserve.
//  2. A failed commit. If cairn still answers a commit with
//     ResourceExhausted (disk full or quota, or out of file descriptors),
//     the member does not stop: the overlay stays as it is (reads see it;
//     etcd's raft WAL holds every acknowledged entry too), Size reports the
//     store full, and every later commit first checks whether space is back
//     (the guard's reserve, and room for the overlay twice): then it closes
//     and reopens cairn and writes the whole overlay as one batch. The
//     consistent index is a key of that batch, so cairn never holds an
//     index ahead of its data. Any other error still stops the member.
//
// ForceCommit waits until the commit is made: etcd calls it before it saves
// a raft snapshot and lets its WAL go (etcdserver/server.go, snapshot),
// and a snapshot index past what cairn holds would leave the member unable
// to restart. etcd holds its store's lock there, so reads wait too: the
// price of a commit failing despite the guard. The periodic commits and the
// batch limit's do not wait.

package backend

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

const (
	cairnReserveEnv     = "CAIRN_ETCD_SPACE_RESERVE"
	cairnDefaultReserve = int64(64 << 20)
	// What Size reports while the store is short of space: 1 PiB, more than
	// any quota etcd takes (it warns above 8 GiB), and far from overflowing
	// Size()+cost.
	cairnFullSize        = int64(1) << 50
	cairnSpaceCheckEvery = 100 * time.Millisecond
)

// cairnSpace is the backend's view of its file system. The atomics are
// read by Size on every write request; the rest is under batchTx's lock.
type cairnSpace struct {
	lastCheck int64 // unix ns of the last statfs (atomic)
	free      int64 // bytes free to the process at the last statfs (atomic)
	maxBatch  int64 // bytes of the largest recent commit, decaying (atomic)
	low       int32 // 1: free < the reserve at the last statfs (atomic)
	failed    int32 // 1: a commit failed for lack of space; cairn needs a reopen (atomic)

	reserve  int64         // CAIRN_ETCD_SPACE_RESERVE; 0: no guard
	every    time.Duration // statfs at most this often
	statfs   func(dir string) (int64, error)
	lastTry  time.Time // the last attempt to recover from a failed commit
	failures int       // commits failed since the last success
	reopens  int       // reopens after failed commits (for tests)
	// writeErr, when set (tests), replaces cairn's answer to a commit.
	writeErr func() error
}

// cairnParseBytes reads a byte count: digits with an optional K, M or G
// (KiB, MiB, GiB).
func cairnParseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for suf, m := range map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30} {
		if strings.HasSuffix(t, suf) || strings.HasSuffix(t, suf+"IB") {
			t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), suf)
			mult = m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a byte count (digits, with K, M or G)", s)
	}
	return n * mult, nil
}

func cairnStatfs(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// cairnNewSpace reads the reserve from the environment; a value it cannot
// read stops the open rather than guessing.
func cairnNewSpace() (cairnSpace, error) {
	s := cairnSpace{reserve: cairnDefaultReserve, every: cairnSpaceCheckEvery, statfs: cairnStatfs}
	if v, ok := os.LookupEnv(cairnReserveEnv); ok && v != "" {
		n, err := cairnParseBytes(v)
		if err != nil {
			return s, fmt.Errorf("%s: %v", cairnReserveEnv, err)
		}
		s.reserve = n
	}
	return s, nil
}

// effectiveReserve: the configured reserve, or four recent commits if
// larger; 0 with the guard off.
func (s *cairnSpace) effectiveReserve() int64 {
	if s.reserve == 0 {
		return 0
	}
	if r := 4 * atomic.LoadInt64(&s.maxBatch); r > s.reserve {
		return r
	}
	return s.reserve
}

// noteBatch records a commit's size; the maximum decays by 1/64 a commit,
// so one large commit (an overlay written after a failure) does not raise
// the reserve for good.
func (s *cairnSpace) noteBatch(n int64) {
	m := atomic.LoadInt64(&s.maxBatch)
	m -= m / 64
	if n > m {
		m = n
	}
	atomic.StoreInt64(&s.maxBatch, m)
}

// short: Size must report the store full.
func (s *cairnSpace) short() bool {
	return atomic.LoadInt32(&s.low) == 1 || atomic.LoadInt32(&s.failed) == 1
}

// checkSpace runs statfs and updates low, logging each change. While there
// is room, one caller looks at most every s.every (unless force); while
// there is not, every caller looks for itself, so that no write after
// space comes back is refused on a stale answer, which raises NOSPACE
// again (2026-12-07: fault_test.sh b2's first puts after a disarm).
func (b *cairnBackend) checkSpace(force bool) {
	s := &b.space
	now := time.Now().UnixNano()
	if !force && atomic.LoadInt32(&s.low) == 0 {
		last := atomic.LoadInt64(&s.lastCheck)
		if now-last < int64(s.every) || !atomic.CompareAndSwapInt64(&s.lastCheck, last, now) {
			return // looked recently, or another caller is looking
		}
	} else {
		atomic.StoreInt64(&s.lastCheck, now)
	}
	free, err := s.statfs(b.dir)
	if err != nil {
		return // the last answer stands
	}
	atomic.StoreInt64(&s.free, free)
	r := s.effectiveReserve()
	low := int32(0)
	if r > 0 && free < r {
		low = 1
	}
	if was := atomic.SwapInt32(&s.low, low); was != low {
		if low == 1 {
			b.warn("cairn backend: free disk space below the reserve; reporting the backend "+
				"full, so that etcd raises NOSPACE and refuses writes",
				zap.Int64("free-bytes", free), zap.Int64("reserve-bytes", r))
		} else {
			b.info("cairn backend: free disk space back above the reserve",
				zap.Int64("free-bytes", free), zap.Int64("reserve-bytes", r))
		}
	}
}

// commitFailed: the write of the overlay failed for lack of space. Keep the
// overlay, report the store full, and retry at later commits.
func (b *cairnBackend) commitFailed(err error, bytes int64) {
	s := &b.space
	s.failures++
	if atomic.SwapInt32(&s.failed, 1) == 0 || s.failures%100 == 0 {
		b.warn("cairn backend: commit failed for lack of space; the writes stay in memory "+
			"(and in etcd's raft log), the backend reports itself full, and the commit is "+
			"retried once space is back",
			zap.Error(err), zap.Int64("pending-bytes", bytes), zap.Int("failures", s.failures))
	}
	s.lastTry = time.Now()
}

// overlayBytes: the keys and values of the published layers.
func (b *cairnBackend) overlayBytes() int64 {
	b.rmu.RLock()
	defer b.rmu.RUnlock()
	var n int64
	for _, l := range b.layers {
		for _, e := range l {
			n += int64(len(e.k) + len(e.v))
		}
	}
	return n
}

// recoverLocked: after a failed commit, whether cairn can take the overlay
// now: space is back (the guard's reserve, and twice the overlay, at least
// 1 MiB) and cairn has been reopened. At most one try per s.every. Called
// with batchTx's lock held.
func (b *cairnBackend) recoverLocked() bool {
	s := &b.space
	if time.Since(s.lastTry) < s.every {
		return false
	}
	s.lastTry = time.Now()
	b.checkSpace(true)
	need := s.effectiveReserve()
	if n := 2 * b.overlayBytes(); n > need {
		need = n
	}
	if need < 1<<20 {
		need = 1 << 20
	}
	if free := atomic.LoadInt64(&s.free); free < need {
		return false
	}
	if err := b.reopenLocked(); err != nil {
		if errors.Is(err, errCairnBusy) {
			// Readers were kept waiting for up to cairnReopenWait: give
			// them a second before the next try.
			s.lastTry = time.Now().Add(time.Second)
		}
		b.warn("cairn backend: cannot reopen cairn after a failed commit; retrying", zap.Error(err))
		return false
	}
	s.reopens++
	b.info("cairn backend: reopened cairn after a failed commit; writing the pending commit",
		zap.Int64("pending-bytes", b.overlayBytes()), zap.Int("failed-commits", s.failures))
	return true
}

var errCairnBusy = errors.New("cairn is in use")

// How long a reopen keeps new readers waiting for the open ones to end.
const cairnReopenWait = 250 * time.Millisecond

// reopenLocked closes and reopens cairn (it refuses writes after a failed
// one until then). Nothing else may use the handle meanwhile: rmu keeps new
// readers out, open views must end (within cairnReopenWait, or it is tried
// later), and dbmu, held by Defrag and Snapshot's checkpoint, must be free.
// If cairn does not open for writing, it is opened read-only so that reads
// go on, and the next commit tries again; if it does not open at all, the
// member stops.
func (b *cairnBackend) reopenLocked() error {
	b.rmu.Lock()
	defer b.rmu.Unlock()
	for deadline := time.Now().Add(cairnReopenWait); atomic.LoadInt64(&b.openReadTxN) > 0; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d read transactions open", errCairnBusy, atomic.LoadInt64(&b.openReadTxN))
		}
		time.Sleep(time.Millisecond)
	}
	if !b.dbmu.TryLock() {
		return fmt.Errorf("%w: a defragmentation or snapshot is running", errCairnBusy)
	}
	defer b.dbmu.Unlock()
	if err := b.db.close(); err != nil {
		b.info("cairn backend: closed cairn, which reported", zap.Error(err))
	}
	db, err := cairnOpen(b.dir, false)
	if err == nil {
		b.db, b.readOnly = db, false
		return nil
	}
	ro, rerr := cairnOpenReadOnly(b.dir)
	if rerr != nil {
		b.fatal("cannot reopen cairn after a failed commit", fmt.Errorf("%v; read-only: %v", err, rerr))
	}
	b.db, b.readOnly = ro, true
	return fmt.Errorf("opened read-only, reads go on: %v", err)
}

// zap fields as text, for capnslog when the backend has no zap logger.
func cairnFieldText(fields []zap.Field) string {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	var sb strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&sb, " %s=%v", f.Key, enc.Fields[f.Key])
	}
	return sb.String()
}

func (b *cairnBackend) warn(msg string, fields ...zap.Field) {
	if b.lg != nil {
		b.lg.Warn(msg, append([]zap.Field{zap.String("path", b.path)}, fields...)...)
	} else {
		plog.Warningf("%s (path %s)%s", msg, b.path, cairnFieldText(fields))
	}
}

func (b *cairnBackend) info(msg string, fields ...zap.Field) {
	if b.lg != nil {
		b.lg.Info(msg, append([]zap.Field{zap.String("path", b.path)}, fields...)...)
	} else {
		plog.Infof("%s (path %s)%s", msg, b.path, cairnFieldText(fields))
	}
}
