// etcdload is the load client of integrations/etcd/cluster_test.sh, fault_test.sh and bench.sh:
// puts (and reads) through etcd's own clientv3, a record of every put etcd acknowledged, and a
// check that each acknowledged put is still there with its value.
//
// It is built in GOPATH mode against the packaged etcd 3.4 tree (GO111MODULE=off), so it needs no
// network; integrations/etcd/test_lib.sh builds it.
//
//	etcdload put    -endpoints A,B,C -prefix r1/ -n 6000 -acked FILE   one put per key, acked keys to FILE
//	etcdload put    -keyspace 1000 -n 4000 -size 16384                  overwrites (bench: 4x the key space)
//	etcdload verify -endpoints A -prefix r1/ -acked FILE               every acked key holds its value
//
// A value is a function of its key (and, with -keyspace, of the write's sequence number), so the
// verifier needs no copy of what was written: in one-put-per-key mode it recomputes the value from
// the key. Values are pseudo-random bytes, incompressible like the bench's workload requires.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"io/ioutil"
	"math/rand"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.uber.org/zap"
	"google.golang.org/grpc/grpclog"
)

type options struct {
	endpoints    string
	prefix       string
	n            int
	conc         int
	size         int
	maxSize      int
	keyspace     int
	acked        string
	readRatio    float64
	timeout      time.Duration
	stopErrors   int
	serializable bool
	progress     string
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: etcdload put|verify [flags]")
		os.Exit(2)
	}
	cmd := os.Args[1]
	var o options
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	fs.StringVar(&o.endpoints, "endpoints", "127.0.0.1:2379", "comma-separated client endpoints")
	fs.StringVar(&o.prefix, "prefix", "load/", "key prefix")
	fs.IntVar(&o.n, "n", 1000, "number of puts")
	fs.IntVar(&o.conc, "conc", 16, "concurrent clients (goroutines sharing one connection)")
	fs.IntVar(&o.size, "size", 2048, "value size in bytes (the minimum when -maxsize is larger)")
	fs.IntVar(&o.maxSize, "maxsize", 0, "largest value size; each key's size is fixed by its hash")
	fs.IntVar(&o.keyspace, "keyspace", 0, "overwrite keys 0..keyspace-1 (0: every put a new key)")
	fs.StringVar(&o.acked, "acked", "", "append each acknowledged key to this file (put); read it (verify)")
	fs.Float64Var(&o.readRatio, "reads", 0, "after each put, read back an acked key with this probability")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "deadline of one request")
	fs.IntVar(&o.stopErrors, "stop-errors", 0, "stop after this many consecutive failed puts (0: never)")
	fs.BoolVar(&o.serializable, "serializable", false, "verify: read the member's local state (no quorum)")
	fs.StringVar(&o.progress, "progress", "", "put: rewrite this file with the acked count every 100 ms")
	fs.Parse(os.Args[2:])
	if o.maxSize < o.size {
		o.maxSize = o.size
	}
	if o.progress != "" {
		// The progress file is replaced by a rename: never over a device or anything not ours.
		if st, err := os.Lstat(o.progress); err == nil && !st.Mode().IsRegular() {
			fmt.Fprintf(os.Stderr, "etcdload: -progress %s exists and is not a regular file\n", o.progress)
			os.Exit(2)
		}
	}
	// grpc's own logger prints every reconnect to a killed member; the scripts read our summary.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(ioutil.Discard, ioutil.Discard, os.Stderr))

	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(o.endpoints, ","),
		DialTimeout: 5 * time.Second,
		LogConfig:   &zap.Config{Level: zap.NewAtomicLevelAt(zap.ErrorLevel), Encoding: "console", OutputPaths: []string{"stderr"}, ErrorOutputPaths: []string{"stderr"}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdload: connect:", err)
		os.Exit(1)
	}
	defer cli.Close()

	switch cmd {
	case "put":
		os.Exit(put(cli, &o))
	case "verify":
		os.Exit(verify(cli, &o))
	default:
		fmt.Fprintln(os.Stderr, "etcdload: unknown command", cmd)
		os.Exit(2)
	}
}

func keyHash(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

// value returns the bytes stored under key by its seq-th write (seq 0 in one-put-per-key mode).
func value(o *options, key string, seq uint64) []byte {
	h := keyHash(key)
	size := o.size
	if o.maxSize > o.size {
		size = o.size + int(h%uint64(o.maxSize-o.size+1))
	}
	r := rand.New(rand.NewSource(int64(h ^ (seq * 0x9e3779b97f4a7c15))))
	b := make([]byte, size)
	r.Read(b)
	return b
}

func put(cli *clientv3.Client, o *options) int {
	var ackedOut *bufio.Writer
	var ackedMu sync.Mutex
	if o.acked != "" {
		f, err := os.OpenFile(o.acked, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "etcdload:", err)
			return 1
		}
		defer f.Close()
		ackedOut = bufio.NewWriter(f)
		defer func() { ackedMu.Lock(); ackedOut.Flush(); ackedMu.Unlock() }()
	}

	var next, ok, failed, consecutive, reads, readErrs, badReads int64
	var stop int32
	var lastErr atomic.Value
	lat := make([][]time.Duration, o.conc)
	// Keys this process saw acknowledged, for the reads to pick from (one-put-per-key mode).
	var ackedKeys []string

	done := make(chan struct{})
	go func() { // flush acked keys and the progress count while the load runs
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				ackedMu.Lock()
				if ackedOut != nil {
					ackedOut.Flush()
				}
				ackedMu.Unlock()
				if o.progress != "" {
					ioutil.WriteFile(o.progress+".tmp", []byte(fmt.Sprintf("%d\n", atomic.LoadInt64(&ok))), 0644)
					os.Rename(o.progress+".tmp", o.progress)
				}
			}
		}
	}()

	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < o.conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(int64(w) + time.Now().UnixNano()))
			for atomic.LoadInt32(&stop) == 0 {
				i := atomic.AddInt64(&next, 1) - 1
				if i >= int64(o.n) {
					return
				}
				key := fmt.Sprintf("%s%08d", o.prefix, i)
				seq := uint64(0)
				if o.keyspace > 0 {
					key = fmt.Sprintf("%s%08d", o.prefix, i%int64(o.keyspace))
					seq = uint64(i)
				}
				val := value(o, key, seq)
				ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
				t0 := time.Now()
				_, err := cli.Put(ctx, key, string(val))
				d := time.Since(t0)
				cancel()
				if err != nil {
					atomic.AddInt64(&failed, 1)
					lastErr.Store(err.Error())
					if c := atomic.AddInt64(&consecutive, 1); o.stopErrors > 0 && c >= int64(o.stopErrors) {
						atomic.StoreInt32(&stop, 1)
					}
					continue
				}
				atomic.StoreInt64(&consecutive, 0)
				atomic.AddInt64(&ok, 1)
				lat[w] = append(lat[w], d)
				ackedMu.Lock()
				if ackedOut != nil {
					ackedOut.WriteString(key + "\n")
				}
				if o.keyspace == 0 {
					ackedKeys = append(ackedKeys, key)
				}
				var rkey string
				if o.readRatio > 0 && o.keyspace == 0 && rnd.Float64() < o.readRatio {
					rkey = ackedKeys[rnd.Intn(len(ackedKeys))]
				}
				ackedMu.Unlock()
				if rkey != "" { // a linearizable read of an acknowledged put must see it
					atomic.AddInt64(&reads, 1)
					ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
					resp, err := cli.Get(ctx, rkey)
					cancel()
					if err != nil {
						atomic.AddInt64(&readErrs, 1)
					} else if len(resp.Kvs) != 1 || !bytes.Equal(resp.Kvs[0].Value, value(o, rkey, 0)) {
						atomic.AddInt64(&badReads, 1)
						fmt.Fprintf(os.Stderr, "etcdload: read of acked key %s: %d kvs or wrong value\n", rkey, len(resp.Kvs))
					}
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(done)

	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := int(float64(len(all))*p+0.5) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(all) {
			i = len(all) - 1
		}
		return float64(all[i].Microseconds()) / 1000
	}
	le, _ := lastErr.Load().(string)
	// One line of key=value pairs: the scripts pick fields out of it.
	fmt.Printf("puts=%d failed=%d seconds=%.2f puts_per_s=%.0f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f reads=%d read_errors=%d bad_reads=%d last_error=%q\n",
		ok, failed, elapsed.Seconds(), float64(ok)/elapsed.Seconds(), pct(0.50), pct(0.99), pct(1.0),
		reads, readErrs, badReads, le)
	if badReads > 0 {
		return 3
	}
	return 0
}

// verify reads the whole prefix in pages and checks that every key of the acked file is there
// with the value its put wrote. Keys put without an acknowledgement may or may not be there.
func verify(cli *clientv3.Client, o *options) int {
	f, err := os.Open(o.acked)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdload:", err)
		return 1
	}
	want := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k := sc.Text(); strings.HasPrefix(k, o.prefix) {
			want[k] = true
		}
	}
	f.Close()

	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(o.prefix)), clientv3.WithLimit(500)}
	if o.serializable {
		opts = append(opts, clientv3.WithSerializable())
	}
	found, wrong, total := 0, 0, 0
	from := o.prefix
	var rev int64
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ropts := opts
		if rev != 0 { // every page at the first page's revision: one consistent view
			ropts = append(ropts, clientv3.WithRev(rev))
		}
		resp, err := cli.Get(ctx, from, ropts...)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "etcdload: verify range:", err)
			return 1
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			total++
			k := string(kv.Key)
			if !want[k] {
				continue
			}
			if bytes.Equal(kv.Value, value(o, k, 0)) {
				found++
			} else {
				wrong++
				fmt.Fprintf(os.Stderr, "etcdload: key %s has a wrong value (%d bytes)\n", k, len(kv.Value))
			}
			delete(want, k)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	missing := len(want)
	shown := 0
	for k := range want {
		if shown++; shown > 5 {
			break
		}
		fmt.Fprintf(os.Stderr, "etcdload: acked key %s is missing\n", k)
	}
	fmt.Printf("acked_found=%d missing=%d wrong=%d keys_in_prefix=%d revision=%d\n", found, missing, wrong, total, rev)
	if missing > 0 || wrong > 0 {
		return 1
	}
	return 0
}
