// Tests of the disk-full handling (cairn_space.go): the free-space guard,
// a commit that fails for lack of space (injected, and on a real full
// tmpfs when the tests run as root), and a failure that is not about space.

package backend

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var tbMeta = []byte("meta")

// cairnFakeFree makes b's statfs answer *free, and checks on every call.
func cairnFakeFree(b *cairnBackend, free *int64) {
	b.space.statfs = func(string) (int64, error) { return atomic.LoadInt64(free), nil }
	b.space.every = 0
	b.checkSpace(true)
}

// cairnPutCI writes key=val and the consistent index, as etcd's applying
// transactions do.
func cairnPutCI(b *cairnBackend, key, val string, ci byte) {
	tx := b.BatchTx()
	tx.Lock()
	tx.UnsafePut(tbA, []byte(key), []byte(val))
	tx.UnsafePut(tbMeta, []byte("consistent_index"), []byte{0, 0, 0, 0, 0, 0, 0, ci})
	tx.Unlock()
}

func cairnRawCI(t *testing.T, b *cairnBackend) byte {
	v, ok := cairnRaw(t, b, tbMeta, "consistent_index")
	if !ok || len(v) != 8 {
		t.Fatalf("no consistent index in cairn (%q)", v)
	}
	return v[7]
}

func TestCairnParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "64M": 64 << 20, "64MiB": 64 << 20,
		"2g": 2 << 30, " 512K ": 512 << 10} {
		if got, err := cairnParseBytes(in); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1T", "M", "1.5M", "99999999999G"} {
		if _, err := cairnParseBytes(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	c := cairnTestConfig(t)
	t.Setenv(cairnReserveEnv, "lots")
	if _, err := openCairnBackend(c); err == nil || !strings.Contains(err.Error(), cairnReserveEnv) {
		t.Fatalf("a bad %s opened: %v", cairnReserveEnv, err)
	}
	t.Setenv(cairnReserveEnv, "8M")
	b := cairnMustOpen(t, c)
	defer b.Close()
	if b.space.reserve != 8<<20 {
		t.Fatalf("reserve %d, want 8 MiB", b.space.reserve)
	}
}

// Below the reserve Size reports the store full (etcd then refuses writes)
// while commits go on; above it Size is the real size again. The reserve
// follows the largest recent commit.
func TestCairnSpaceGuard(t *testing.T) {
	b := cairnMustOpen(t, cairnTestConfig(t))
	defer b.Close()
	b.space.reserve = 8 << 20
	free := int64(1 << 30)
	cairnFakeFree(b, &free)
	cairnBuckets(b, tbA, tbMeta)
	b.ForceCommit()
	if s := b.Size(); s >= cairnFullSize || s <= 0 {
		t.Fatalf("Size %d with space free", s)
	}
	atomic.StoreInt64(&free, 7<<20)
	if s := b.Size(); s != cairnFullSize {
		t.Fatalf("Size %d below the reserve, want %d", s, cairnFullSize)
	}
	cairnPutCI(b, "k", "v", 1)
	b.ForceCommit() // accepted writes still commit, into the reserve
	if v, ok := cairnRaw(t, b, tbA, "k"); !ok || v != "v" || atomic.LoadInt32(&b.space.failed) != 0 {
		t.Fatalf("commit below the reserve: %q %v", v, ok)
	}
	// Space back: the next Size sees it, however recent the last look.
	b.space.every = time.Hour
	atomic.StoreInt64(&free, 9<<20)
	if s := b.Size(); s >= cairnFullSize {
		t.Fatalf("Size %d above the reserve", s)
	}
	b.space.every = 0
	// A 3 MiB commit raises the reserve to 12 MiB.
	cairnPutCI(b, "big", string(bytes.Repeat([]byte("x"), 3<<20)), 2)
	b.ForceCommit()
	if r := b.space.effectiveReserve(); r < 12<<20 {
		t.Fatalf("reserve %d after a 3 MiB commit, want 12 MiB", r)
	}
	if s := b.Size(); s != cairnFullSize {
		t.Fatalf("Size %d with 9 MiB free and a 12 MiB reserve", s)
	}
	b.space.reserve = 0 // the guard off
	b.checkSpace(true)
	if s := b.Size(); s >= cairnFullSize {
		t.Fatalf("Size %d with the guard off", s)
	}
}

// A commit that fails for lack of space keeps the overlay (reads see it),
// reports the store full, leaves cairn's consistent index with its data,
// and is written once space is back, after a reopen that waits for open
// read transactions; ForceCommit waits for it, Commit does not.
func TestCairnCommitFailsForSpace(t *testing.T) {
	c := cairnTestConfig(t)
	b := cairnMustOpen(t, c)
	b.space.reserve = 8 << 20
	free := int64(1 << 30)
	cairnFakeFree(b, &free)
	cairnBuckets(b, tbA, tbMeta)
	cairnPutCI(b, "k0", "v0", 1)
	b.ForceCommit()

	// The guard off: Size must say full because the commit failed.
	b.space.reserve = 0
	atomic.StoreInt64(&free, 0)
	var injected int32 = 1
	b.space.writeErr = func() error {
		if atomic.LoadInt32(&injected) == 1 {
			return &cairnError{code: cairnCodeResourceExhausted, msg: "ResourceExhausted: injected: no space left on device"}
		}
		return nil
	}
	cairnPutCI(b, "k1", "v1", 2)
	b.BatchTx().Commit() // fails, and returns
	if atomic.LoadInt32(&b.space.failed) != 1 || b.Size() != cairnFullSize {
		t.Fatalf("after a failed commit: failed %d, Size %d", b.space.failed, b.Size())
	}
	if _, ok := cairnRaw(t, b, tbA, "k1"); ok || cairnRawCI(t, b) != 1 {
		t.Fatalf("cairn holds part of a failed commit (consistent index %d)", cairnRawCI(t, b))
	}
	cairnPutCI(b, "k2", "v2", 3) // writes go on into the overlay
	held := b.ConcurrentReadTx()
	rt := b.ReadTx()
	rt.RLock()
	for _, r := range []ReadTx{held, rt} {
		for k, want := range map[string]string{"k0": "v0", "k1": "v1", "k2": "v2"} {
			if v, _ := cairnGet(r, tbA, k); v != want {
				t.Fatalf("while failed, %s=%q, want %q", k, v, want)
			}
		}
	}
	rt.RUnlock()

	done := make(chan struct{})
	go func() { b.ForceCommit(); close(done) }()
	time.Sleep(300 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("ForceCommit returned with no space")
	default:
	}
	// Space is back, but a read transaction holds the old handle: no reopen.
	atomic.StoreInt32(&injected, 0)
	atomic.StoreInt64(&free, 1<<30)
	time.Sleep(1500 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("ForceCommit returned while a read transaction held cairn open")
	default:
	}
	if v, _ := cairnGet(held, tbA, "k1"); v != "v1" {
		t.Fatalf("the held read transaction reads k1=%q", v)
	}
	held.RUnlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ForceCommit did not return after space came back")
	}
	if b.space.reopens != 1 || atomic.LoadInt32(&b.space.failed) != 0 || b.Size() >= cairnFullSize {
		t.Fatalf("after recovery: reopens %d, failed %d, Size %d", b.space.reopens, b.space.failed, b.Size())
	}
	for k, want := range map[string]string{"k0": "v0", "k1": "v1", "k2": "v2"} {
		if v, _ := cairnRaw(t, b, tbA, k); v != want {
			t.Fatalf("after recovery cairn holds %s=%q, want %q", k, v, want)
		}
	}
	if ci := cairnRawCI(t, b); ci != 3 {
		t.Fatalf("consistent index %d after recovery, want 3", ci)
	}
	cairnPutCI(b, "k3", "v3", 4)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = cairnMustOpen(t, c)
	defer b.Close()
	rt2 := b.ConcurrentReadTx()
	defer rt2.RUnlock()
	for k, want := range map[string]string{"k0": "v0", "k1": "v1", "k2": "v2", "k3": "v3"} {
		if v, _ := cairnGet(rt2, tbA, k); v != want {
			t.Fatalf("after reopen %s=%q, want %q", k, v, want)
		}
	}
}

// Any failure but lack of space stops the process with cairn's message, as
// before.
func TestCairnCommitOtherErrorStops(t *testing.T) {
	if os.Getenv("CAIRN_TEST_FATAL_COMMIT") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCairnCommitOtherErrorStops$")
		// The child exits from inside the test, so its t.TempDir cleanups never
		// run: its temporary directories go under one of ours.
		cmd.Env = append(os.Environ(), "CAIRN_TEST_FATAL_COMMIT=1", "TMPDIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "DataLoss: injected") {
			t.Fatalf("a DataLoss commit: %v\n%s", err, out)
		}
		return
	}
	b := cairnMustOpen(t, cairnTestConfig(t))
	cairnBuckets(b, tbA, tbMeta)
	b.space.writeErr = func() error { return &cairnError{code: 15, msg: "DataLoss: injected"} }
	cairnPutCI(b, "k", "v", 1)
	b.ForceCommit()
	t.Fatal("a commit failing with DataLoss returned")
}

// cairnTmpfs mounts a tmpfs of size MiB for the test, or skips it.
func cairnTmpfs(t *testing.T, mib int) string {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root to mount a small tmpfs (a real full disk); " +
			"TestCairnCommitFailsForSpace covers the same path with an injected error")
	}
	dir := filepath.Join(t.TempDir(), "fs")
	os.MkdirAll(dir, 0700)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%dm", mib)); err != nil {
		t.Skipf("SKIP: cannot mount a tmpfs at %s: %v", dir, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

func cairnGrowTmpfs(t *testing.T, dir string, mib int) {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, fmt.Sprintf("size=%dm", mib)); err != nil {
		t.Fatalf("growing the tmpfs: %v", err)
	}
}

// On a real full disk: with the guard off, a commit fails with cairn's
// ResourceExhausted and the backend keeps going; once the file system
// grows it reopens cairn and writes everything. With the guard on, Size
// reports the store full before any commit fails.
func TestCairnDiskFullTmpfs(t *testing.T) {
	dir := cairnTmpfs(t, 16)
	c := cairnTestConfig(t)
	c.Path = filepath.Join(dir, "off", "db")
	t.Setenv(cairnReserveEnv, "0")
	b := cairnMustOpen(t, c)
	cairnBuckets(b, tbA, tbMeta)
	b.ForceCommit()
	val := bytes.Repeat([]byte("v"), 256<<10)
	n := 0
	for ; n < 200 && atomic.LoadInt32(&b.space.failed) == 0; n++ {
		val[0] = byte(n)
		cairnPutCI(b, fmt.Sprintf("k%03d", n), string(val), byte(n+1))
		b.BatchTx().Commit()
	}
	if atomic.LoadInt32(&b.space.failed) == 0 {
		t.Fatalf("%d commits of 256 KiB on a 16 MiB tmpfs and none failed", n)
	}
	if b.Size() != cairnFullSize || cairnRawCI(t, b) >= byte(n) {
		t.Fatalf("after the failed commit: Size %d, cairn's consistent index %d of %d", b.Size(), cairnRawCI(t, b), n)
	}
	check := func(what string, get func(k string) (string, bool)) {
		for i := 0; i < n; i++ {
			val[0] = byte(i)
			if v, _ := get(fmt.Sprintf("k%03d", i)); v != string(val) {
				t.Fatalf("%s: k%03d lost (%d bytes)", what, i, len(v))
			}
		}
	}
	rt := b.ConcurrentReadTx()
	check("reads while the disk is full", func(k string) (string, bool) { return cairnGet(rt, tbA, k) })
	rt.RUnlock()
	cairnGrowTmpfs(t, dir, 64)
	b.ForceCommit()
	if b.space.reopens < 1 || cairnRawCI(t, b) != byte(n) {
		t.Fatalf("after the disk grew: reopens %d, consistent index %d, want %d", b.space.reopens, cairnRawCI(t, b), n)
	}
	check("cairn after the disk grew", func(k string) (string, bool) { return cairnRaw(t, b, tbA, k) })
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = cairnMustOpen(t, c)
	rt = b.ConcurrentReadTx()
	check("after a reopen", func(k string) (string, bool) { return cairnGet(rt, tbA, k) })
	rt.RUnlock()
	b.Close()
	os.RemoveAll(filepath.Dir(c.Path))

	// The guard on (8 MiB), on 24 MiB: Size says full before a commit fails.
	cairnGrowTmpfs(t, dir, 24)
	c.Path = filepath.Join(dir, "on", "db")
	t.Setenv(cairnReserveEnv, "8M")
	b = cairnMustOpen(t, c)
	defer b.Close()
	cairnBuckets(b, tbA, tbMeta)
	for n = 0; n < 200 && b.Size() < cairnFullSize; n++ {
		cairnPutCI(b, fmt.Sprintf("k%03d", n), string(val), byte(n+1))
		b.ForceCommit()
	}
	if b.Size() != cairnFullSize || atomic.LoadInt32(&b.space.failed) != 0 || b.space.failures != 0 {
		t.Fatalf("guard: after %d commits Size %d, failed %d", n, b.Size(), b.space.failed)
	}
	t.Logf("guard: full after %d commits of 256 KiB, %d bytes free", n, atomic.LoadInt64(&b.space.free))
}
