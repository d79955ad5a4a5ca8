// Tests of the cairn backend itself (integrations/etcd/run_integration.sh
// runs them in the built tree: go test -run Cairn ./mvcc/backend).

package backend

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

func cairnTestConfig(t *testing.T) BackendConfig {
	c := DefaultBackendConfig()
	c.Path = filepath.Join(t.TempDir(), "member", "snap", "db")
	// No periodic commit unless a test asks: commits happen where it says.
	c.BatchInterval = time.Hour
	return c
}

func cairnMustOpen(t *testing.T, c BackendConfig) *cairnBackend {
	t.Helper()
	b, err := openCairnBackend(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	tbA = []byte("alpha")
	tbB = []byte("b")
)

func cairnPut(b *cairnBackend, bucket []byte, kvs ...string) {
	tx := b.BatchTx()
	tx.Lock()
	for i := 0; i+1 < len(kvs); i += 2 {
		tx.UnsafePut(bucket, []byte(kvs[i]), []byte(kvs[i+1]))
	}
	tx.Unlock()
}

func cairnBuckets(b *cairnBackend, names ...[]byte) {
	tx := b.BatchTx()
	tx.Lock()
	for _, n := range names {
		tx.UnsafeCreateBucket(n)
	}
	tx.Unlock()
}

// cairnRaw reads cairn alone, without the overlay.
func cairnRaw(t *testing.T, b *cairnBackend, bucket []byte, key string) (string, bool) {
	var v []byte
	found := false
	k := cairnKey(bucket, []byte(key))
	err := b.db.scan(nil, k, append(append([]byte(nil), k...), 0), func(_, cv []byte) bool {
		v, found = cv, true
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(v), found
}

func cairnGet(rt ReadTx, bucket []byte, key string) (string, bool) {
	_, vs := rt.UnsafeRange(bucket, []byte(key), nil, 0)
	if len(vs) == 0 {
		return "", false
	}
	return string(vs[0]), true
}

// One commit writes both buckets and the consistent index together: before
// it, cairn holds none of them; after it, all.
func TestCairnAtomicCommitAcrossBuckets(t *testing.T) {
	b := cairnMustOpen(t, cairnTestConfig(t))
	defer b.Close()
	cairnBuckets(b, tbA, tbB, []byte("meta"))
	b.ForceCommit()
	tx := b.BatchTx()
	tx.Lock()
	tx.UnsafePut(tbA, []byte("k1"), []byte("v1"))
	tx.UnsafePut(tbB, []byte("k2"), []byte("v2"))
	tx.UnsafePut([]byte("meta"), []byte("consistent_index"), []byte{0, 0, 0, 0, 0, 0, 0, 7})
	tx.Unlock()
	for _, k := range []struct{ b, k string }{{"alpha", "k1"}, {"b", "k2"}, {"meta", "consistent_index"}} {
		if _, ok := cairnRaw(t, b, []byte(k.b), k.k); ok {
			t.Fatalf("%s/%s in cairn before the commit", k.b, k.k)
		}
	}
	b.ForceCommit()
	for _, k := range []struct{ b, k string }{{"alpha", "k1"}, {"b", "k2"}, {"meta", "consistent_index"}} {
		if _, ok := cairnRaw(t, b, []byte(k.b), k.k); !ok {
			t.Fatalf("%s/%s not in cairn after the commit", k.b, k.k)
		}
	}
	if len(b.layers) != 0 {
		t.Fatalf("%d layers left after the commit", len(b.layers))
	}
}

// A transaction's writes are its own until Unlock; then every new read sees
// them; a ConcurrentReadTx keeps what it saw through later writes and
// commits.
func TestCairnOverlayVisibility(t *testing.T) {
	b := cairnMustOpen(t, cairnTestConfig(t))
	defer b.Close()
	cairnBuckets(b, tbA)
	cairnPut(b, tbA, "old", "1", "gone", "x")
	b.ForceCommit()

	before := b.ConcurrentReadTx()
	tx := b.BatchTx()
	tx.Lock()
	tx.UnsafePut(tbA, []byte("new"), []byte("2"))
	tx.UnsafePut(tbA, []byte("old"), []byte("1b"))
	tx.UnsafeDelete(tbA, []byte("gone"))
	if v, _ := cairnGet(tx, tbA, "new"); v != "2" {
		t.Fatalf("the writer does not read its own put: %q", v)
	}
	if _, ok := cairnGet(tx, tbA, "gone"); ok {
		t.Fatal("the writer reads what it deleted")
	}
	during := b.ConcurrentReadTx()
	if _, ok := cairnGet(during, tbA, "new"); ok {
		t.Fatal("a reader sees a write before Unlock")
	}
	tx.Unlock()
	after := b.ConcurrentReadTx()
	rt := b.ReadTx()
	rt.RLock()
	for _, r := range []ReadTx{after, rt} {
		if v, _ := cairnGet(r, tbA, "new"); v != "2" {
			t.Fatalf("a reader after Unlock misses the put: %q", v)
		}
		if v, _ := cairnGet(r, tbA, "old"); v != "1b" {
			t.Fatalf("a reader after Unlock reads %q, want the overwrite", v)
		}
		if _, ok := cairnGet(r, tbA, "gone"); ok {
			t.Fatal("a reader after Unlock reads a deleted key (the overlay's delete must hide cairn's value)")
		}
	}
	rt.RUnlock()
	b.ForceCommit()
	cairnPut(b, tbA, "later", "3")
	b.ForceCommit()
	for _, r := range []ReadTx{before, during} {
		if v, _ := cairnGet(r, tbA, "old"); v != "1" {
			t.Fatalf("an earlier reader reads %q, want its own moment's 1", v)
		}
		if _, ok := cairnGet(r, tbA, "gone"); !ok {
			t.Fatal("an earlier reader lost a key deleted after it began")
		}
	}
	if _, ok := cairnGet(after, tbA, "later"); ok {
		t.Fatal("a reader sees a write from after it began")
	}
	if n := b.OpenReadTxN(); n != 3 {
		t.Fatalf("OpenReadTxN %d, want 3", n)
	}
	for _, r := range []ReadTx{before, during, after} {
		r.RUnlock()
	}
	if n := b.OpenReadTxN(); n != 0 {
		t.Fatalf("OpenReadTxN %d after RUnlock, want 0", n)
	}
}

// Random puts, deletes, commits and ranges with limits against a map.
func TestCairnRangeModel(t *testing.T) {
	b := cairnMustOpen(t, cairnTestConfig(t))
	defer b.Close()
	bucket := []byte("key") // etcd's keys bucket, big-endian revisions
	cairnBuckets(b, bucket, tbB)
	model := map[string]string{}
	rnd := rand.New(rand.NewSource(59))
	key := func() []byte { return []byte{0, 0, 0, byte(rnd.Intn(4)), byte(rnd.Intn(50))} }
	check := func(r ReadTx, what string) {
		lo, hi := key(), key()
		if bytes.Compare(lo, hi) > 0 {
			lo, hi = hi, lo
		}
		limit := int64(rnd.Intn(12))
		var want []string
		for k := range model {
			if k >= string(lo) && k < string(hi) {
				want = append(want, k)
			}
		}
		sort.Strings(want)
		if limit > 0 && int64(len(want)) > limit {
			want = want[:limit]
		}
		ks, vs := r.UnsafeRange(bucket, lo, hi, limit)
		if len(ks) != len(want) {
			t.Fatalf("%s: range [%x, %x) limit %d: %d keys, want %d", what, lo, hi, limit, len(ks), len(want))
		}
		for i := range ks {
			if string(ks[i]) != want[i] || string(vs[i]) != model[want[i]] {
				t.Fatalf("%s: entry %d %x=%q, want %x=%q", what, i, ks[i], vs[i], want[i], model[want[i]])
			}
		}
		k := key()
		v, ok := cairnGet(r, bucket, string(k))
		if mv, mok := model[string(k)]; ok != mok || v != mv {
			t.Fatalf("%s: get %x = %q %v, want %q %v", what, k, v, ok, mv, mok)
		}
	}
	for round := 0; round < 300; round++ {
		tx := b.BatchTx()
		tx.Lock()
		for i := rnd.Intn(6); i >= 0; i-- {
			k := key()
			if rnd.Intn(3) == 0 {
				tx.UnsafeDelete(bucket, k)
				delete(model, string(k))
			} else {
				v := fmt.Sprintf("v%d.%d", round, i)
				tx.UnsafePut(bucket, k, []byte(v))
				model[string(k)] = v
			}
			tx.UnsafePut(tbB, k, []byte("other bucket")) // must not leak into ranges
		}
		check(tx, "batchTx")
		tx.Unlock()
		switch rnd.Intn(4) {
		case 0:
			b.ForceCommit()
		case 1:
			rt := b.ConcurrentReadTx()
			check(rt, "ConcurrentReadTx")
			rt.RUnlock()
		default:
			rt := b.ReadTx()
			rt.RLock()
			check(rt, "ReadTx")
			rt.RUnlock()
		}
	}
	// ForEach sees the same as the model.
	n := 0
	rt := b.ConcurrentReadTx()
	defer rt.RUnlock()
	rt.UnsafeForEach(bucket, func(k, v []byte) error {
		if model[string(k)] != string(v) {
			t.Fatalf("ForEach %x=%q, want %q", k, v, model[string(k)])
		}
		n++
		return nil
	})
	if n != len(model) {
		t.Fatalf("ForEach saw %d keys, want %d", n, len(model))
	}
}

// A committed write survives a close and reopen; Close commits what was
// published.
func TestCairnRestartDurability(t *testing.T) {
	c := cairnTestConfig(t)
	b := cairnMustOpen(t, c)
	cairnBuckets(b, tbA)
	cairnPut(b, tbA, "committed", "1")
	b.ForceCommit()
	cairnPut(b, tbA, "published", "2")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = cairnMustOpen(t, c)
	defer b.Close()
	rt := b.ConcurrentReadTx()
	defer rt.RUnlock()
	for k, want := range map[string]string{"committed": "1", "published": "2"} {
		if v, _ := cairnGet(rt, tbA, k); v != want {
			t.Fatalf("after reopen %s=%q, want %q", k, v, want)
		}
	}
	// The bucket exists after reopen: a put into it is no error.
	cairnPut(b, tbA, "again", "3")
}

// Hash agrees with bbolt's backend holding the same contents, whatever the
// commits and transactions that built them.
func TestCairnHashAgreement(t *testing.T) {
	bolt, boltPath := NewDefaultTmpBackend()
	defer os.RemoveAll(filepath.Dir(boltPath))
	defer bolt.Close()
	c1 := cairnMustOpen(t, cairnTestConfig(t))
	defer c1.Close()
	c2 := cairnMustOpen(t, cairnTestConfig(t))
	defer c2.Close()
	for _, be := range []Backend{bolt, c1, c2} {
		tx := be.BatchTx()
		tx.Lock()
		tx.UnsafeCreateBucket([]byte("key"))
		tx.UnsafeCreateBucket([]byte("meta"))
		tx.UnsafeCreateBucket([]byte("empty"))
		tx.Unlock()
	}
	for i := 0; i < 100; i++ {
		k, v := []byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprintf("v%d", i))
		for j, be := range []Backend{bolt, c1, c2} {
			tx := be.BatchTx()
			tx.Lock()
			tx.UnsafePut([]byte("key"), k, v)
			if i%7 == 0 {
				tx.UnsafeDelete([]byte("key"), []byte(fmt.Sprintf("k%03d", i-3)))
			}
			tx.UnsafePut([]byte("meta"), []byte("consistent_index"), k)
			tx.Unlock()
			if j == 2 && i%10 == 0 {
				be.ForceCommit()
			}
		}
	}
	bolt.ForceCommit()
	ign := map[IgnoreKey]struct{}{{Bucket: "meta", Key: "consistent_index"}: {}}
	hb, err := bolt.Hash(ign)
	if err != nil {
		t.Fatal(err)
	}
	for i, be := range []Backend{c1, c2} {
		h, err := be.Hash(ign)
		if err != nil {
			t.Fatal(err)
		}
		if h != hb {
			t.Fatalf("cairn backend %d: hash %08x, bbolt's %08x", i+1, h, hb)
		}
	}
}

// Size is the bytes on disk and grows with the data; Defrag gives back what
// deletes free.
func TestCairnSizeAndDefrag(t *testing.T) {
	b := cairnMustOpen(t, cairnTestConfig(t))
	defer b.Close()
	cairnBuckets(b, tbA)
	b.ForceCommit()
	s0 := b.Size()
	val := string(bytes.Repeat([]byte("v"), 64<<10))
	for i := 0; i < 40; i++ {
		cairnPut(b, tbA, fmt.Sprintf("k%d", i), val)
	}
	b.ForceCommit()
	s1 := b.Size()
	if s1 < s0+40*(64<<10)/2 || b.SizeInUse() > s1 || b.SizeInUse() <= 0 {
		t.Fatalf("sizes: empty %d, after 2.5 MiB of values %d (in use %d)", s0, s1, b.SizeInUse())
	}
	tx := b.BatchTx()
	tx.Lock()
	for i := 0; i < 40; i++ {
		tx.UnsafeDelete(tbA, []byte(fmt.Sprintf("k%d", i)))
	}
	tx.Unlock()
	if err := b.Defrag(); err != nil {
		t.Fatal(err)
	}
	if s2 := b.Size(); s2 > s1/2 {
		t.Fatalf("after deleting everything and Defrag: %d bytes, before %d", s2, s1)
	}
}
