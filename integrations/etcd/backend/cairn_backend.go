// etcd 3.4's mvcc backend on cairn (integrations/etcd, docs/etcd.md): picked
// by CAIRN_ETCD_BACKEND=cairn in backend.New and NewDefaultBackend (the one
// line build.sh adds to each); bbolt stays the default.

package backend

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/ioutil"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// cairnSelected reads CAIRN_ETCD_BACKEND (not ETCD_*: etcd reads those as
// flags): "cairn" picks cairn, "" or "bbolt" keeps bbolt, anything else
// stops the member rather than guessing.
func cairnSelected() bool {
	switch v := os.Getenv("CAIRN_ETCD_BACKEND"); v {
	case "cairn":
		return true
	case "", "bbolt":
		return false
	default:
		plog.Fatalf("CAIRN_ETCD_BACKEND=%q: want cairn or bbolt", v)
		return false
	}
}

// NewTmpBackendSelected and NewDefaultTmpBackendSelected are etcd's test
// constructors (NewTmpBackend, NewDefaultTmpBackend) as Backend, honouring
// CAIRN_ETCD_BACKEND: build.sh points the tests of etcd's mvcc and lease
// packages at them, so those run on either backend. Like bbolt's, they
// leave their temporary directory behind (run_integration.sh gives the
// tests a TMPDIR of their own).
func NewTmpBackendSelected(batchInterval time.Duration, batchLimit int) (Backend, string) {
	if !cairnSelected() {
		return NewTmpBackend(batchInterval, batchLimit)
	}
	dir, err := ioutil.TempDir(os.TempDir(), "etcd_backend_test")
	if err != nil {
		panic(err)
	}
	c := DefaultBackendConfig()
	c.BatchInterval, c.BatchLimit = batchInterval, batchLimit
	c.Path = filepath.Join(dir, "database")
	return newCairnBackend(c), c.Path
}

func NewDefaultTmpBackendSelected() (Backend, string) {
	return NewTmpBackendSelected(defaultBatchInterval, defaultBatchLimit)
}

func cairnDefaultConfig(path string) BackendConfig {
	c := DefaultBackendConfig()
	c.Path = path
	return c
}

type cairnBackend struct {
	// size, sizeInUse, openReadTxN: atomics, first for 64-bit alignment.
	size, sizeInUse, openReadTxN int64

	lg    *zap.Logger
	path  string // etcd's backend path: the marker file (cairn_store.go)
	dir   string // the cairn directory the marker names
	space cairnSpace
	// db changes only when a failed commit reopens cairn (cairn_space.go),
	// with batchTx's lock, rmu and dbmu held for writing: a view reads it
	// under one of the first two; Defrag, Snapshot and refreshSizes, which
	// hold neither, hold dbmu for reading. readOnly: db was opened
	// read-only after a reopen for writing failed.
	dbmu          sync.RWMutex
	db            *cairnDB
	readOnly      bool
	sync          bool
	batchInterval time.Duration
	batchLimit    int

	batchTx *cairnBatchTx
	buckets map[string]bool // under batchTx's lock

	// rmu orders publishing a layer and dropping committed ones against
	// readers that take a view (ReadTx holds it, ConcurrentReadTx takes it
	// to begin); layers is the overlay, oldest first.
	rmu    sync.RWMutex
	layers []cairnLayer
	// inflight: how many of the oldest layers the commit in progress is
	// writing (under rmu); publish leaves them unmerged.
	inflight int

	// cmu: one commit at a time (commit). wb: its write batch, reused so
	// that its memory stays mapped from one commit to the next. kick:
	// Unlock's request for a commit when the batch limit is reached.
	cmu  sync.Mutex
	wb   *cairnBatch
	kick chan struct{}

	readers sync.WaitGroup // open ConcurrentReadTx and snapshots
	stopc   chan struct{}
	donec   chan struct{}
}

func (b *cairnBackend) fatal(msg string, err error) {
	if b.lg != nil {
		b.lg.Fatal(msg, zap.String("path", b.path), zap.String("cairn-dir", b.dir), zap.Error(err))
	} else {
		plog.Fatalf("%s (path %s, cairn dir %s): %v", msg, b.path, b.dir, err)
	}
}

// newCairnBackend opens or creates the backend at bcfg.Path; like bbolt's
// New it has no error to return, so a store it cannot open stops the
// member with cairn's message, which names the damaged file.
func newCairnBackend(bcfg BackendConfig) Backend {
	b, err := openCairnBackend(bcfg)
	if err != nil {
		if bcfg.Logger != nil {
			bcfg.Logger.Fatal("failed to open cairn backend", zap.String("path", bcfg.Path), zap.Error(err))
		} else {
			plog.Fatalf("cannot open cairn backend at %s: %v", bcfg.Path, err)
		}
	}
	return b
}

func openCairnBackend(bcfg BackendConfig) (*cairnBackend, error) {
	dir, err := cairnPrepare(bcfg.Path, bcfg.Logger)
	if err != nil {
		return nil, err
	}
	db, err := cairnOpen(dir, false)
	if err != nil {
		return nil, fmt.Errorf("cairn directory %s: %v", dir, err)
	}
	space, err := cairnNewSpace()
	if err != nil {
		db.close()
		return nil, err
	}
	path, _ := filepath.Abs(bcfg.Path) // cairnPrepare has checked it
	b := &cairnBackend{
		lg: bcfg.Logger, path: path, dir: dir, space: space, db: db, sync: !bcfg.UnsafeNoFsync,
		batchInterval: bcfg.BatchInterval, batchLimit: bcfg.BatchLimit,
		buckets: make(map[string]bool),
		stopc:   make(chan struct{}), donec: make(chan struct{}),
		wb: newCairnBatch(), kick: make(chan struct{}, 1),
	}
	if b.batchInterval <= 0 {
		b.batchInterval = defaultBatchInterval
	}
	if b.batchLimit <= 0 {
		b.batchLimit = defaultBatchLimit
	}
	b.batchTx = &cairnBatchTx{b: b, pend: make(map[string]cairnEnt)}
	for _, n := range (&cairnView{b: b, db: db}).bucketNames() {
		b.buckets[string(n)] = true
	}
	cairnRegister(dir)
	b.refreshSizes()
	b.checkSpace(true)
	go b.run()
	return b, nil
}

func (b *cairnBackend) BatchTx() BatchTx { return b.batchTx }
func (b *cairnBackend) ReadTx() ReadTx   { return &cairnReadTx{b} }

// ConcurrentReadTx takes the overlay's layers and a cairn snapshot
// together: a commit cannot drop layers between the two.
func (b *cairnBackend) ConcurrentReadTx() ReadTx {
	return &cairnConcurrentReadTx{v: *b.takeView()}
}

func (b *cairnBackend) takeView() *cairnView {
	b.rmu.RLock()
	defer b.rmu.RUnlock()
	s := b.db.snapshot()
	if s == nil {
		b.fatal("failed to take a cairn snapshot", errors.New("database closed"))
	}
	b.readers.Add(1)
	atomic.AddInt64(&b.openReadTxN, 1)
	return &cairnView{b: b, db: b.db, layers: b.layers, snap: s}
}

func (b *cairnBackend) releaseView(v *cairnView) {
	v.db.releaseSnapshot(v.snap)
	atomic.AddInt64(&b.openReadTxN, -1)
	b.readers.Done()
}

// ForceCommit returns once cairn holds every published write: after a
// commit failed for lack of space it retries until space is back
// (cairn_space.go), logging every 10 s, or until the backend closes.
func (b *cairnBackend) ForceCommit() {
	start, logged := time.Now(), time.Now()
	for !b.commit() {
		if time.Since(logged) >= 10*time.Second {
			logged = time.Now()
			b.warn("cairn backend: a forced commit is waiting for disk space",
				zap.Duration("waited", time.Since(start)))
		}
		select {
		case <-time.After(b.space.every):
		case <-b.stopc:
			return
		}
	}
}

// commit writes every layer published so far as one synced cairn write
// batch (the consistent index, a key of the meta bucket, goes with the
// rest), then drops them: readers that took them keep them, later ones
// find the entries in cairn. It reports whether cairn holds them: a write
// that fails for lack of space keeps them (cairn_space.go); any other
// failure stops the member, as bbolt's failed commit does: the writes are
// acknowledged to etcd already.
//
// Unlike bbolt's, the write and its sync run without batchTx's lock, so
// that etcd's apply loop goes on publishing layers meanwhile (2026-12-08:
// a 256 KiB put load waited on every commit's write and fsync). Layers
// are immutable and stay published until cairn holds them, so every read
// sees each write in a layer or in cairn, never in neither; the layers
// being written (the first b.inflight) are not merged by publish, and are
// dropped with batchTx's lock and rmu held, as before. cmu makes commits
// one at a time and keeps the reopen after a failed commit
// (cairn_space.go) apart from any write. Lock order: cmu, batchTx, rmu.
func (b *cairnBackend) commit() bool {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	t := b.batchTx
	t.Lock()
	t.publish()
	if atomic.LoadInt32(&b.space.failed) == 1 && !b.recoverLocked() {
		t.Mutex.Unlock()
		return false
	}
	n := len(b.layers)
	if n == 0 {
		t.Mutex.Unlock()
		return true
	}
	all := cairnMerge(b.layers, "", "")
	b.rmu.Lock()
	b.inflight = n
	b.rmu.Unlock()
	ops := t.ops
	t.ops = 0
	t.Mutex.Unlock()

	var size int64
	for _, e := range all {
		size += int64(len(e.k) + len(e.v))
	}
	// One allocation for the batch, not a copy per doubling; each entry
	// takes a type byte and two length varints besides.
	b.wb.reserve(int(size) + 11*len(all))
	for _, e := range all {
		if e.del {
			b.wb.del([]byte(e.k))
		} else {
			b.wb.put([]byte(e.k), e.v)
		}
	}
	start := time.Now()
	var err error
	if b.space.writeErr != nil {
		err = b.space.writeErr()
	}
	if err == nil {
		err = b.db.write(b.wb, b.sync)
	}
	b.wb.reset()

	t.Lock()
	defer t.Mutex.Unlock()
	b.rmu.Lock()
	b.inflight = 0
	if err == nil {
		b.layers = append([]cairnLayer(nil), b.layers[n:]...)
	}
	b.rmu.Unlock()
	if err != nil {
		t.ops += ops
		if !cairnNoSpace(err) {
			b.fatal("failed to commit to cairn", err)
		}
		b.commitFailed(err, size)
		return false
	}
	commitSec.Observe(time.Since(start).Seconds())
	if atomic.SwapInt32(&b.space.failed, 0) == 1 {
		b.info("cairn backend: the pending commit is written; writes go on",
			zap.Int64("bytes", size), zap.Int("failed-commits", b.space.failures))
	}
	b.space.failures = 0
	b.space.noteBatch(size)
	b.refreshSizes()
	b.checkSpace(true)
	return true
}

// run commits every batchInterval, and when Unlock asks (the batch limit).
func (b *cairnBackend) run() {
	defer close(b.donec)
	t := time.NewTimer(b.batchInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-b.kick:
			if !t.Stop() {
				<-t.C
			}
		case <-b.stopc:
			b.batchTx.CommitAndStop()
			return
		}
		b.commit()
		t.Reset(b.batchInterval)
	}
}

// refreshSizes: Size is the bytes cairn's database files take on the
// device (tables, value log, WAL, manifest; as du counts them), SizeInUse
// that less the value log's known garbage; etcd's quota reads Size. The
// info logs and options files are left out: they are not the database, and
// each open adds one, so a member restarted often would drift towards its
// quota with no data (2026-12-07: TestV3StorageQuotaApply's 64 KiB quota).
func (b *cairnBackend) refreshSizes() {
	b.dbmu.RLock()
	disk, inUse, err := b.db.sizes()
	b.dbmu.RUnlock()
	if err != nil {
		return // a closed database: the last values stand
	}
	side := cairnSideBytes(b.dir)
	atomic.StoreInt64(&b.size, cairnClamp(disk-side))
	atomic.StoreInt64(&b.sizeInUse, cairnClamp(inUse-side))
}

func cairnClamp(n int64) int64 {
	if n < 0 {
		return 0
	}
	return n
}

// cairnSideBytes: the blocks of dir's info logs and options files.
func cairnSideBytes(dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		name := e.Name()
		if name != "LOG" && !strings.HasPrefix(name, "LOG.old") && !strings.HasPrefix(name, "OPTIONS-") {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join(dir, name), &st) == nil {
			n += st.Blocks * 512
		}
	}
	return n
}

// Size: while the backend is short of space (cairn_space.go), more than any
// quota, so that etcd refuses writes and raises NOSPACE.
func (b *cairnBackend) Size() int64 {
	b.checkSpace(false)
	n := atomic.LoadInt64(&b.size)
	if b.space.short() && n < cairnFullSize {
		return cairnFullSize
	}
	return n
}

func (b *cairnBackend) SizeInUse() int64   { return atomic.LoadInt64(&b.sizeInUse) }
func (b *cairnBackend) OpenReadTxN() int64 { return atomic.LoadInt64(&b.openReadTxN) }

// Hash is bbolt's: CRC-32C over each bucket's name, then its keys and
// values in order, buckets in name order; members with the same contents
// agree whichever backend they run.
func (b *cairnBackend) Hash(ignores map[IgnoreKey]struct{}) (uint32, error) {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	v := b.takeView()
	defer b.releaseView(v)
	for _, name := range v.bucketNames() {
		h.Write(name)
		err := v.forEach(name, func(k, val []byte) error {
			if _, ok := ignores[IgnoreKey{Bucket: string(name), Key: string(k)}]; !ok {
				h.Write(k)
				h.Write(val)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return h.Sum32(), nil
}

// Defrag: cairn gives space back by compaction and value-log GC, not by
// rewriting the file as bbolt does. Both run in the background too; this
// forces them over everything now.
func (b *cairnBackend) Defrag() error {
	b.ForceCommit()
	start := time.Now()
	isDefragActive.Set(1)
	defer isDefragActive.Set(0)
	size1 := atomic.LoadInt64(&b.size)
	b.dbmu.RLock()
	err := b.db.compactAll()
	if err == nil {
		err = b.db.runGC()
	}
	b.dbmu.RUnlock()
	if err != nil {
		return err
	}
	b.refreshSizes()
	b.checkSpace(true)
	defragSec.Observe(time.Since(start).Seconds())
	if b.lg != nil {
		b.lg.Info("defragmented cairn backend", zap.String("path", b.path),
			zap.Int64("size-before", size1), zap.Int64("size-after", atomic.LoadInt64(&b.size)),
			zap.Duration("took", time.Since(start)))
	}
	return nil
}

// Close commits what is published, waits for open read transactions and
// snapshots (as bbolt's Close waits for its read txns), and closes cairn.
func (b *cairnBackend) Close() error {
	close(b.stopc)
	<-b.donec
	b.readers.Wait()
	b.wb.destroy()
	err := b.db.close()
	cairnUnregister(b.path, b.dir, b.lg)
	return err
}
