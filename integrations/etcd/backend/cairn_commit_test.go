// Commits that run beside etcd's writers (cairnBackend.commit): the write
// and its sync hold no lock a writer or reader needs.

package backend

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A slow commit (its write held for 300 ms) lets a writer publish and a
// reader read meanwhile; what was published during the write stays in the
// overlay until the next commit.
func TestCairnCommitDoesNotBlockWriters(t *testing.T) {
	b := cairnMustOpen(t, cairnTestConfig(t))
	defer b.Close()
	cairnBuckets(b, tbA)
	cairnPut(b, tbA, "first", "1")
	writing := make(chan struct{})
	b.space.writeErr = func() error {
		close(writing)
		time.Sleep(300 * time.Millisecond)
		return nil
	}
	done := make(chan struct{})
	go func() { b.ForceCommit(); close(done) }()
	<-writing
	start := time.Now()
	cairnPut(b, tbA, "second", "2")
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Fatalf("a put waited %v for the commit's write", d)
	}
	rt := b.ReadTx()
	rt.RLock()
	for k, want := range map[string]string{"first": "1", "second": "2"} {
		if v, ok := cairnGet(rt, tbA, k); !ok || v != want {
			t.Fatalf("during the commit %s = %q, %v; want %q", k, v, ok, want)
		}
	}
	rt.RUnlock()
	<-done
	b.space.writeErr = nil
	if _, ok := cairnRaw(t, b, tbA, "first"); !ok {
		t.Fatal("first not in cairn after its commit")
	}
	if _, ok := cairnRaw(t, b, tbA, "second"); ok {
		t.Fatal("second, published during the write, is in cairn already")
	}
	b.rmu.RLock()
	n := len(b.layers)
	b.rmu.RUnlock()
	if n != 1 {
		t.Fatalf("%d layers after the commit, want the 1 published during it", n)
	}
	b.ForceCommit()
	if v, ok := cairnRaw(t, b, tbA, "second"); !ok || v != "2" {
		t.Fatalf("second after the next commit: %q, %v", v, ok)
	}
}

// At twice the batch limit the writer commits itself: the overlay stays
// bounded when the committer falls behind.
func TestCairnBatchLimitCommitsInUnlock(t *testing.T) {
	c := cairnTestConfig(t)
	c.BatchLimit = 10
	b := cairnMustOpen(t, c)
	defer b.Close()
	cairnBuckets(b, tbA)
	tx := b.BatchTx()
	tx.Lock()
	for i := 0; i < 25; i++ {
		tx.UnsafePut(tbA, []byte(fmt.Sprintf("k%02d", i)), []byte("v"))
	}
	tx.Unlock()
	for i := 0; i < 25; i++ {
		if _, ok := cairnRaw(t, b, tbA, fmt.Sprintf("k%02d", i)); !ok {
			t.Fatalf("k%02d not in cairn when Unlock returned at 2.5x the batch limit", i)
		}
	}
}

// Writers, readers and commits (the timer's, the batch limit's and forced
// ones) together, under the race detector in CI: every write a writer has
// published is visible to every later read, and cairn ends with the last
// value of every key.
func TestCairnCommitsBesideWritersAndReaders(t *testing.T) {
	c := cairnTestConfig(t)
	c.BatchInterval = time.Millisecond
	c.BatchLimit = 50
	b := cairnMustOpen(t, c)
	defer b.Close()
	cairnBuckets(b, tbA)
	const writers, keys = 4, 40
	// started: the round each writer is publishing; last: the last round
	// it has published. A reader that finds started unchanged after its
	// read has seen exactly round last.
	var started, last [writers]int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for round := int64(1); ; round++ {
				select {
				case <-stop:
					return
				default:
				}
				atomic.StoreInt64(&started[w], round)
				tx := b.BatchTx()
				tx.Lock()
				for k := 0; k < keys; k++ {
					key := []byte(fmt.Sprintf("w%d-%02d", w, k))
					if (int(round)+k)%7 == 0 {
						tx.UnsafeDelete(tbA, key)
					} else {
						tx.UnsafePut(tbA, key, []byte(fmt.Sprintf("%d", round)))
					}
				}
				tx.Unlock()
				atomic.StoreInt64(&last[w], round)
			}
		}(w)
	}
	errs := make(chan error, 8)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				w := i % writers
				round := atomic.LoadInt64(&last[w])
				if round == 0 {
					continue
				}
				var rt ReadTx
				if r == 0 {
					rt = b.ConcurrentReadTx()
				} else {
					rt = b.ReadTx()
				}
				rt.RLock()
				vals := make([]string, keys)
				found := make([]bool, keys)
				for k := 0; k < keys; k++ {
					vals[k], found[k] = cairnGet(rt, tbA, fmt.Sprintf("w%d-%02d", w, k))
				}
				rt.RUnlock()
				exact := atomic.LoadInt64(&started[w]) == round
				for k := 0; k < keys; k++ {
					var got int64
					fmt.Sscan(vals[k], &got)
					// Never a round older than the one published before the
					// read; exactly that round when no newer one began.
					deleted := (int(round)+k)%7 == 0
					if found[k] && got < round ||
						exact && (found[k] == deleted || found[k] && got != round) {
						errs <- fmt.Errorf("reader %d: w%d-%02d = %q, %v after round %d (exact %v)",
							r, w, k, vals[k], found[k], round, exact)
						return
					}
				}
			}
		}(r)
	}
	for i := 0; i < 5; i++ {
		time.Sleep(100 * time.Millisecond)
		b.ForceCommit()
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	b.ForceCommit()
	for w := 0; w < writers; w++ {
		round := atomic.LoadInt64(&last[w])
		for k := 0; k < keys; k++ {
			v, ok := cairnRaw(t, b, tbA, fmt.Sprintf("w%d-%02d", w, k))
			deleted := (int(round)+k)%7 == 0
			if ok == deleted || ok && v != fmt.Sprintf("%d", round) {
				t.Fatalf("cairn after the last commit: w%d-%02d = %q, %v; round %d", w, k, v, ok, round)
			}
		}
	}
}
