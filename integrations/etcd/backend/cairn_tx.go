// The cairn backend's transactions: the key layout, the overlay of written
// but not yet committed entries, and etcd's BatchTx, ReadTx and
// ConcurrentReadTx over overlay + cairn (docs/etcd.md, "Design").

package backend

import (
	"bytes"
	"math"
	"sort"
	"sync"

	"go.uber.org/zap"
)

// Key layout. A bucket's key k is stored as len(bucket) | bucket | k, so
// bytewise order keeps each bucket's keys together and in etcd's order (its
// revisions are big-endian). The bucket itself is recorded as 0x00 | bucket
// (empty value): length 0 is no bucket's, so the records sort first, and a
// bucket with no keys still exists, as in bbolt, for Hash.
func cairnKey(bucket, key []byte) []byte {
	k := make([]byte, 0, 1+len(bucket)+len(key))
	k = append(k, byte(len(bucket)))
	k = append(k, bucket...)
	return append(k, key...)
}

func cairnBucketRecord(bucket []byte) []byte {
	return append([]byte{0}, bucket...)
}

// cairnPrefixEnd is the least key above every key starting with p (nil: none).
func cairnPrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// cairnEnt is one overlay entry: a put, or a delete (del) that hides the
// key's older value in cairn.
type cairnEnt struct {
	k   string // the stored key (cairnKey)
	v   []byte
	del bool
}

// A layer is a sorted run of entries with unique keys, never changed once
// published; newer layers win. Readers keep the slice of layers they saw.
type cairnLayer []cairnEnt

func (l cairnLayer) find(k string) int {
	return sort.Search(len(l), func(i int) bool { return l[i].k >= k })
}

// cairnMerge merges layers (oldest first) into one, newest winning, keeping
// only keys in [lo, hi) (hi "" : no bound).
func cairnMerge(layers []cairnLayer, lo, hi string) cairnLayer {
	var out cairnLayer
	for _, l := range layers {
		i := l.find(lo)
		j := len(l)
		if hi != "" {
			j = l.find(hi)
		}
		if i >= j {
			continue
		}
		out = cairnMerge2(out, l[i:j])
	}
	return out
}

func cairnMerge2(old, nw cairnLayer) cairnLayer {
	if len(old) == 0 {
		return nw
	}
	out := make(cairnLayer, 0, len(old)+len(nw))
	i, j := 0, 0
	for i < len(old) && j < len(nw) {
		switch {
		case old[i].k < nw[j].k:
			out = append(out, old[i])
			i++
		case old[i].k > nw[j].k:
			out = append(out, nw[j])
			j++
		default:
			out = append(out, nw[j])
			i++
			j++
		}
	}
	out = append(out, old[i:]...)
	return append(out, nw[j:]...)
}

// cairnView is what a read sees: overlay layers over cairn at snap (nil:
// cairn's latest state, for readers that hold the locks that keep commits
// out). db is the handle the view was taken on: a reopen (cairn_space.go)
// waits for every view with a snapshot to end.
type cairnView struct {
	b      *cairnBackend
	db     *cairnDB
	layers []cairnLayer
	snap   *cairnSnap
}

// get reads one stored key: the newest overlay entry, else cairn.
func (v *cairnView) get(k []byte) ([]byte, bool) {
	ks := string(k)
	for i := len(v.layers) - 1; i >= 0; i-- {
		l := v.layers[i]
		if j := l.find(ks); j < len(l) && l[j].k == ks {
			if l[j].del {
				return nil, false
			}
			return l[j].v, true
		}
	}
	var val []byte
	found := false
	err := v.db.scan(v.snap, k, append(append([]byte(nil), k...), 0), func(ck, cv []byte) bool {
		val, found = cv, true
		return false
	})
	if err != nil {
		v.b.fatal("failed to read from cairn", err)
	}
	return val, found
}

// scan calls fn on the live entries of stored keys [lo, hi) in order, the
// overlay merged over cairn (overlay wins, its deletes hide), until fn
// returns false.
func (v *cairnView) scan(lo, hi []byte, fn func(k, v []byte) bool) {
	ov := cairnMerge(v.layers, string(lo), string(hi))
	i := 0
	stopped := false
	// emit the overlay's entries below limit k (all when k is nil).
	emitBelow := func(k []byte) bool {
		for ; i < len(ov) && (k == nil || ov[i].k < string(k)); i++ {
			if !ov[i].del && !fn([]byte(ov[i].k), ov[i].v) {
				stopped = true
				return false
			}
		}
		return true
	}
	err := v.db.scan(v.snap, lo, hi, func(ck, cv []byte) bool {
		if !emitBelow(ck) {
			return false
		}
		if i < len(ov) && ov[i].k == string(ck) {
			e := ov[i]
			i++
			if e.del {
				return true
			}
			if !fn(ck, e.v) {
				stopped = true
				return false
			}
			return true
		}
		if !fn(ck, cv) {
			stopped = true
			return false
		}
		return true
	})
	if err != nil {
		v.b.fatal("failed to read from cairn", err)
	}
	if !stopped {
		emitBelow(nil)
	}
}

// unsafeRange is etcd's UnsafeRange: endKey nil reads key alone; else
// [key, endKey) with at most limit entries (limit <= 0: no limit).
func (v *cairnView) unsafeRange(bucket, key, endKey []byte, limit int64) (keys, vals [][]byte) {
	if len(endKey) == 0 {
		if val, ok := v.get(cairnKey(bucket, key)); ok {
			return [][]byte{key}, [][]byte{val}
		}
		return nil, nil
	}
	if limit <= 0 {
		limit = math.MaxInt64
	}
	strip := 1 + len(bucket)
	v.scan(cairnKey(bucket, key), cairnKey(bucket, endKey), func(k, val []byte) bool {
		keys = append(keys, k[strip:])
		vals = append(vals, val)
		return int64(len(keys)) < limit
	})
	return keys, vals
}

func (v *cairnView) forEach(bucket []byte, visitor func(k, v []byte) error) error {
	lo := cairnKey(bucket, nil)
	var err error
	v.scan(lo, cairnPrefixEnd(lo), func(k, val []byte) bool {
		err = visitor(k[len(lo):], val)
		return err == nil
	})
	return err
}

// cairnBatchTx is etcd's BatchTx: one writer at a time (its mutex). A
// transaction's writes go to pend; at Unlock they become one published
// layer, visible to every reader; Commit writes all layers to cairn as one
// synced write batch.
type cairnBatchTx struct {
	sync.Mutex
	b    *cairnBackend
	pend map[string]cairnEnt
	ops  int // puts and deletes since the last commit (bbolt's pending)
}

func (t *cairnBatchTx) Lock() { t.Mutex.Lock() }

// Unlock publishes the transaction's writes. At the batch limit it asks
// for a commit, which runs without this lock (cairnBackend.commit); at
// twice the limit a commit is behind, and the writer makes one itself and
// waits for it, which bounds the overlay as bbolt's commit in Unlock does.
func (t *cairnBatchTx) Unlock() {
	t.publish()
	ops := t.ops
	t.Mutex.Unlock()
	switch {
	case ops >= 2*t.b.batchLimit:
		t.b.commit()
	case ops >= t.b.batchLimit:
		select {
		case t.b.kick <- struct{}{}:
		default:
		}
	}
}

func (t *cairnBatchTx) RLock()   { panic("cairn backend: unexpected RLock on a BatchTx") }
func (t *cairnBatchTx) RUnlock() { panic("cairn backend: unexpected RUnlock on a BatchTx") }

// publish turns the transaction's writes into a layer readers see.
func (t *cairnBatchTx) publish() {
	if len(t.pend) == 0 {
		return
	}
	l := t.pendLayer()
	t.pend = make(map[string]cairnEnt)
	b := t.b
	b.rmu.Lock()
	b.layers = append(b.layers, l)
	// Bound a point read's work: merge the layers every few transactions
	// (a merge is linear in the overlay, which a commit empties), all but
	// those a commit is writing.
	if len(b.layers)-b.inflight > 8 {
		merged := cairnMerge(b.layers[b.inflight:], "", "")
		b.layers = append(b.layers[:b.inflight:b.inflight], merged)
	}
	b.rmu.Unlock()
}

func (t *cairnBatchTx) pendLayer() cairnLayer {
	l := make(cairnLayer, 0, len(t.pend))
	for _, e := range t.pend {
		l = append(l, e)
	}
	sort.Slice(l, func(i, j int) bool { return l[i].k < l[j].k })
	return l
}

// view: the writer's own view, its unpublished writes included. Only the
// writer changes layers or cairn, so cairn's latest state is consistent.
func (t *cairnBatchTx) view() *cairnView {
	ls := t.b.layers
	if len(t.pend) > 0 {
		ls = append(ls[:len(ls):len(ls)], t.pendLayer())
	}
	return &cairnView{b: t.b, db: t.b.db, layers: ls}
}

// cairnCopyBelow: write copies values shorter than this and keeps larger
// ones as given. bbolt keeps a Put's value slice until its commit, so etcd
// never reuses one it has passed in (its values are freshly marshalled);
// only the 8-byte buffer of the consistent index is reused, and copied
// here. Not copying a 256 KiB value saves a copy on etcd's apply loop,
// which every put waits for (2026-12-08).
const cairnCopyBelow = 1024

func (t *cairnBatchTx) write(k []byte, v []byte, del bool) {
	if v != nil && len(v) < cairnCopyBelow {
		v = append([]byte(nil), v...)
	}
	t.pend[string(k)] = cairnEnt{k: string(k), v: v, del: del}
	t.ops++
}

func (t *cairnBatchTx) checkBucket(bucket []byte) {
	if !t.b.buckets[string(bucket)] {
		t.b.fatal("failed to find a bucket "+string(bucket), nil)
	}
}

func (t *cairnBatchTx) UnsafeCreateBucket(name []byte) {
	if len(name) == 0 || len(name) > 255 {
		t.b.fatal("bucket name must be 1 to 255 bytes: "+string(name), nil)
	}
	if !t.b.buckets[string(name)] {
		t.write(cairnBucketRecord(name), []byte{}, false)
		t.b.buckets[string(name)] = true
	}
}

func (t *cairnBatchTx) UnsafePut(bucket, key, value []byte) {
	t.checkBucket(bucket)
	t.write(cairnKey(bucket, key), value, false)
}

// UnsafeSeqPut: bbolt's hint for appends; cairn needs none.
func (t *cairnBatchTx) UnsafeSeqPut(bucket, key, value []byte) { t.UnsafePut(bucket, key, value) }

func (t *cairnBatchTx) UnsafeDelete(bucket, key []byte) {
	t.checkBucket(bucket)
	t.write(cairnKey(bucket, key), nil, true)
}

func (t *cairnBatchTx) UnsafeRange(bucket, key, endKey []byte, limit int64) ([][]byte, [][]byte) {
	return t.view().unsafeRange(bucket, key, endKey, limit)
}

func (t *cairnBatchTx) UnsafeForEach(bucket []byte, visitor func(k, v []byte) error) error {
	return t.view().forEach(bucket, visitor)
}

// Commit does not wait when the commit fails for lack of space: the next
// one retries (cairn_space.go); ForceCommit waits.
func (t *cairnBatchTx) Commit() { t.commit() }

func (t *cairnBatchTx) commit() bool { return t.b.commit() }

// CommitAndStop: at Close. A commit that still fails for lack of space is
// left to etcd's raft log, which a restart applies again past the
// consistent index cairn holds; waiting would keep the member from
// stopping.
func (t *cairnBatchTx) CommitAndStop() {
	if !t.b.commit() {
		t.b.warn("cairn backend: closing with writes not committed for lack of space; "+
			"etcd's raft log holds them and a restart applies them again",
			zap.Int64("pending-bytes", t.b.overlayBytes()))
	}
}

// cairnReadTx is etcd's shared ReadTx: RLock keeps publishing and the end
// of a commit out (as bbolt's readTx lock does), so the overlay and cairn's
// latest state read together are consistent.
type cairnReadTx struct{ b *cairnBackend }

func (rt *cairnReadTx) Lock()    { rt.b.rmu.Lock() }
func (rt *cairnReadTx) Unlock()  { rt.b.rmu.Unlock() }
func (rt *cairnReadTx) RLock()   { rt.b.rmu.RLock() }
func (rt *cairnReadTx) RUnlock() { rt.b.rmu.RUnlock() }

func (rt *cairnReadTx) view() *cairnView {
	return &cairnView{b: rt.b, db: rt.b.db, layers: rt.b.layers}
}

func (rt *cairnReadTx) UnsafeRange(bucket, key, endKey []byte, limit int64) ([][]byte, [][]byte) {
	return rt.view().unsafeRange(bucket, key, endKey, limit)
}

func (rt *cairnReadTx) UnsafeForEach(bucket []byte, visitor func(k, v []byte) error) error {
	return rt.view().forEach(bucket, visitor)
}

// cairnConcurrentReadTx holds the layers published when it began and a
// cairn snapshot taken at the same moment: it blocks no writer and no
// commit; RUnlock releases the snapshot.
type cairnConcurrentReadTx struct {
	v    cairnView
	once sync.Once
}

func (rt *cairnConcurrentReadTx) Lock()   {}
func (rt *cairnConcurrentReadTx) Unlock() {}
func (rt *cairnConcurrentReadTx) RLock()  {}
func (rt *cairnConcurrentReadTx) RUnlock() {
	rt.once.Do(func() { rt.v.b.releaseView(&rt.v) })
}

func (rt *cairnConcurrentReadTx) UnsafeRange(bucket, key, endKey []byte, limit int64) ([][]byte, [][]byte) {
	return rt.v.unsafeRange(bucket, key, endKey, limit)
}

func (rt *cairnConcurrentReadTx) UnsafeForEach(bucket []byte, visitor func(k, v []byte) error) error {
	return rt.v.forEach(bucket, visitor)
}

// bucketNames lists the buckets a view holds, in bytewise order (bbolt's).
func (v *cairnView) bucketNames() [][]byte {
	var names [][]byte
	v.scan([]byte{0}, []byte{1}, func(k, _ []byte) bool {
		names = append(names, k[1:])
		return true
	})
	sort.Slice(names, func(i, j int) bool { return bytes.Compare(names[i], names[j]) < 0 })
	return names
}
