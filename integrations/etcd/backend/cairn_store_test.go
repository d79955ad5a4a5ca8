// Tests of the cairn backend's files: the snapshot stream, its install and a
// kill at each step of it, and a damaged directory.

package backend

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cairnFill writes n keys in two buckets and commits.
func cairnFill(b *cairnBackend, n int, tag string) {
	cairnBuckets(b, tbA, tbB)
	tx := b.BatchTx()
	tx.Lock()
	for i := 0; i < n; i++ {
		tx.UnsafePut(tbA, []byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("%s-%d", tag, i)))
	}
	tx.UnsafePut(tbB, []byte("big"), bytes.Repeat([]byte(tag), 100000))
	tx.Unlock()
	b.ForceCommit()
}

func cairnHash(t *testing.T, b Backend) uint32 {
	h, err := b.Hash(nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// cairnArchiveOf streams b's snapshot, checking Size is the stream's length.
func cairnArchiveOf(t *testing.T, b *cairnBackend) []byte {
	s := b.Snapshot()
	defer s.Close()
	var buf bytes.Buffer
	n, err := s.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) || n != s.Size() {
		t.Fatalf("snapshot: WriteTo says %d, wrote %d, Size %d", n, buf.Len(), s.Size())
	}
	return buf.Bytes()
}

func TestCairnSnapshotRoundTrip(t *testing.T) {
	b := cairnMustOpen(t, cairnTestConfig(t))
	defer b.Close()
	cairnFill(b, 500, "a")
	cairnPut(b, tbA, "published", "not yet committed") // Snapshot commits it
	arch := cairnArchiveOf(t, b)
	// As etcd does: the received file renamed onto a new member's path.
	c := cairnTestConfig(t)
	os.MkdirAll(filepath.Dir(c.Path), 0700)
	if err := os.WriteFile(c.Path, arch, 0600); err != nil {
		t.Fatal(err)
	}
	r := cairnMustOpen(t, c)
	defer r.Close()
	if h1, h2 := cairnHash(t, b), cairnHash(t, r); h1 != h2 {
		t.Fatalf("restored hash %08x, source %08x", h2, h1)
	}
	rt := r.ConcurrentReadTx()
	defer rt.RUnlock()
	if v, _ := cairnGet(rt, tbA, "published"); v != "not yet committed" {
		t.Fatalf("restored store lacks the write published before Snapshot: %q", v)
	}
	if name, kind, _ := cairnReadMarker(c.Path); kind != "marker" || !strings.HasPrefix(name, "db.cairn-") {
		t.Fatalf("after the install the path is %s %q, want a marker", kind, name)
	}
	// A damaged archive is refused with the reason, and nothing is opened.
	for _, cut := range []int{len(arch) / 2, len(arch) - 1} {
		c2 := cairnTestConfig(t)
		os.MkdirAll(filepath.Dir(c2.Path), 0700)
		os.WriteFile(c2.Path, arch[:cut], 0600)
		if _, err := openCairnBackend(c2); err == nil || !strings.Contains(err.Error(), "cairn snapshot archive") {
			t.Fatalf("archive cut at %d of %d: got %v, want an archive error", cut, len(arch), err)
		}
	}
	// etcdctl snapshot save's file: the stream and a SHA-256 after it.
	c4 := cairnTestConfig(t)
	os.MkdirAll(filepath.Dir(c4.Path), 0700)
	os.WriteFile(c4.Path, append(append([]byte(nil), arch...), make([]byte, 32)...), 0600)
	if _, err := openCairnBackend(c4); err == nil || !strings.Contains(err.Error(), "after the end marker") {
		t.Fatalf("archive with 32 bytes after it: got %v", err)
	}
	if len(arch)%512 != 0 {
		t.Fatalf("archive of %d bytes, not a multiple of 512", len(arch))
	}
	flip := append([]byte(nil), arch...)
	flip[len(flip)/3] ^= 1
	c3 := cairnTestConfig(t)
	os.MkdirAll(filepath.Dir(c3.Path), 0700)
	os.WriteFile(c3.Path, flip, 0600)
	if _, err := openCairnBackend(c3); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a flipped bit: got %v, want a checksum error", err)
	}
}

// A member killed at each step of an install restarts, with the snapshot's
// contents, and no directory but the one the marker names is left.
func TestCairnInstallCrashAtEachStep(t *testing.T) {
	src := cairnMustOpen(t, cairnTestConfig(t))
	cairnFill(src, 300, "new")
	arch := cairnArchiveOf(t, src)
	want := cairnHash(t, src)
	src.Close()
	defer func() { cairnCrashAt = "" }()
	for _, step := range []string{"unpack-mid", "unpacked", "renamed", "marker-tmp", "marker"} {
		for _, existing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/existing=%v", step, existing), func(t *testing.T) {
				c := cairnTestConfig(t)
				var old uint32
				if existing { // a lagging member with data of its own
					m := cairnMustOpen(t, c)
					cairnFill(m, 50, "old")
					old = cairnHash(t, m)
					m.Close()
				}
				os.MkdirAll(filepath.Dir(c.Path), 0700)
				os.WriteFile(c.Path+".recv", arch, 0600)
				os.Rename(c.Path+".recv", c.Path) // etcd's openSnapshotBackend
				cairnCrashAt = step
				if _, err := openCairnBackend(c); err != errCairnCrash {
					t.Fatalf("crash at %s: open returned %v", step, err)
				}
				cairnCrashAt = ""
				b := cairnMustOpen(t, c)
				if h := cairnHash(t, b); h != want || (existing && h == old) {
					t.Fatalf("after a crash at %s: hash %08x, want the snapshot's %08x", step, h, want)
				}
				b.Close()
				dirs, _ := cairnSiblings(c.Path)
				if len(dirs) != 1 || filepath.Base(dirs[0]) != filepath.Base(b.dir) {
					t.Fatalf("after a crash at %s: directories %v, want only %s", step, dirs, b.dir)
				}
				if _, err := os.Stat(c.Path + ".tmp"); !os.IsNotExist(err) {
					t.Fatalf("after a crash at %s: %s.tmp left", step, c.Path)
				}
			})
		}
	}
}

// etcd opens the new backend before it closes the old one (applySnapshot):
// the old one keeps its directory until Close, which then removes it.
func TestCairnInstallWhileOldOpen(t *testing.T) {
	src := cairnMustOpen(t, cairnTestConfig(t))
	cairnFill(src, 10, "new")
	arch := cairnArchiveOf(t, src)
	src.Close()
	c := cairnTestConfig(t)
	old := cairnMustOpen(t, c)
	cairnFill(old, 10, "old")
	os.WriteFile(c.Path+".recv", arch, 0600)
	os.Rename(c.Path+".recv", c.Path)
	nw := cairnMustOpen(t, c)
	defer nw.Close()
	if _, err := os.Stat(old.dir); err != nil {
		t.Fatalf("the old backend's directory went while it was open: %v", err)
	}
	cairnPut(old, tbA, "late", "write") // still works, in its own directory
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old.dir); !os.IsNotExist(err) {
		t.Fatalf("the old directory %s is left after its backend closed", old.dir)
	}
	rt := nw.ConcurrentReadTx()
	defer rt.RUnlock()
	if _, ok := cairnGet(rt, tbA, "late"); ok {
		t.Fatal("the old backend's write reached the new store")
	}
}

// A damaged or missing store is an error naming it, never an empty store;
// newCairnBackend (what etcd calls) stops the process with it.
func TestCairnDamagedDirRefuses(t *testing.T) {
	c := cairnTestConfig(t)
	b := cairnMustOpen(t, c)
	cairnFill(b, 100, "x")
	dir := b.dir
	b.Close()
	manifests, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	if len(manifests) != 1 {
		t.Fatalf("manifests %v", manifests)
	}
	data, _ := os.ReadFile(manifests[0])
	for i := 8; i < len(data); i++ {
		data[i] ^= 0x5a
	}
	os.WriteFile(manifests[0], data, 0600)
	_, err := openCairnBackend(c)
	if err == nil || !strings.Contains(err.Error(), filepath.Base(manifests[0])) {
		t.Fatalf("damaged manifest: got %v, want an error naming %s", err, filepath.Base(manifests[0]))
	}
	if os.Getenv("CAIRN_TEST_FATAL_PATH") == "" {
		// The process etcd runs: it must exit with cairn's message.
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCairnDamagedDirRefuses$")
		// The child exits from inside the test, so its t.TempDir cleanups never
		// run: its temporary directories go under one of ours.
		cmd.Env = append(os.Environ(), "CAIRN_TEST_FATAL_PATH="+c.Path, "TMPDIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), filepath.Base(manifests[0])) {
			t.Fatalf("New on a damaged store: %v\n%s", err, out)
		}
	} else {
		fc := DefaultBackendConfig()
		fc.Path = os.Getenv("CAIRN_TEST_FATAL_PATH")
		newCairnBackend(fc)
		t.Fatal("newCairnBackend returned on a damaged store")
	}

	// The marker's directory missing.
	os.RemoveAll(dir)
	if _, err := openCairnBackend(c); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing directory: got %v", err)
	}
	// The marker missing beside a directory with data.
	c2 := cairnTestConfig(t)
	b2 := cairnMustOpen(t, c2)
	cairnFill(b2, 5, "y")
	b2.Close()
	os.Remove(c2.Path)
	if _, err := openCairnBackend(c2); err == nil || !strings.Contains(err.Error(), "holds data") {
		t.Fatalf("lost marker: got %v", err)
	}
	// A bbolt file where the marker should be.
	bolt, boltPath := NewDefaultTmpBackend()
	bolt.Close()
	c3 := cairnTestConfig(t)
	c3.Path = boltPath
	if _, err := openCairnBackend(c3); err == nil || !strings.Contains(err.Error(), "bbolt") {
		t.Fatalf("bbolt file: got %v", err)
	}
	os.RemoveAll(filepath.Dir(boltPath))
}
