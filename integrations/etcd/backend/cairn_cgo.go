// cgo over cairn's C API (core/include/cairn/c.h) for the cairn backend of
// etcd 3.4 (integrations/etcd, docs/etcd.md). Only what the backend needs;
// every error is cairn's message ("DataLoss: ...", naming the file).
// build.sh sets CGO_CFLAGS to cairn's include directory and CGO_LDFLAGS to
// libcairn_c.so's directory, with an rpath to it.

package backend

/*
#cgo LDFLAGS: -lcairn_c
#include <stdlib.h>
#include <cairn/c.h>
*/
import "C"

import (
	"errors"
	"unsafe"
)

// cairnDB is an open cairn database.
type cairnDB struct{ p *C.cairn_t }

// cairnError is cairn's message with its status code, which says whether
// a failed commit may be retried (cairnNoSpace).
type cairnError struct {
	code int
	msg  string
}

func (e *cairnError) Error() string { return e.msg }

// The code of disk full (ENOSPC, EDQUOT) and of a shortage of file
// descriptors: both pass once space or descriptors are back.
const cairnCodeResourceExhausted = int(C.CAIRN_RESOURCE_EXHAUSTED)

// cairnNoSpace: err is cairn's ResourceExhausted, the only failed write
// the backend survives (cairn_space.go).
func cairnNoSpace(err error) bool {
	var ce *cairnError
	return errors.As(err, &ce) && ce.code == cairnCodeResourceExhausted
}

// cairnErr turns an errptr into a Go error and frees it.
func cairnErr(e *C.char) error {
	if e == nil {
		return nil
	}
	err := &cairnError{code: int(C.cairn_error_code(e)), msg: C.GoString(e)}
	C.cairn_free(unsafe.Pointer(e))
	return err
}

// cptr is the C view of a Go byte slice for the duration of a call; cairn
// copies keys and values before returning.
func cptr(b []byte) *C.char {
	if len(b) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(&b[0]))
}

// cairnOpen opens an existing database (create false) or makes a new one
// (create true, error if it exists): a missing or damaged directory is an
// error, never an empty store.
func cairnOpen(path string, create bool) (*cairnDB, error) {
	return cairnOpenMode(path, create, false)
}

// cairnOpenReadOnly opens an existing database for reads alone: it writes
// nothing to the directory, so it opens on a full disk (cairn_space.go).
func cairnOpenReadOnly(path string) (*cairnDB, error) {
	return cairnOpenMode(path, false, true)
}

func cairnOpenMode(path string, create, readOnly bool) (*cairnDB, error) {
	o := C.cairn_options_create()
	defer C.cairn_options_destroy(o)
	// No zeros written ahead of the WAL (256 KiB by default): they count as
	// bytes on disk, which etcd's space quota reads (Size), and etcd syncs a
	// commit only every batch interval, where the saving is small.
	C.cairn_options_set_wal_prefill_bytes(o, 0)
	if create {
		C.cairn_options_set_create_if_missing(o, 1)
		C.cairn_options_set_error_if_exists(o, 1)
	}
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var e *C.char
	var p *C.cairn_t
	if readOnly {
		p = C.cairn_open_for_read_only(o, cp, &e)
	} else {
		p = C.cairn_open(o, cp, &e)
	}
	if err := cairnErr(e); err != nil {
		return nil, err
	}
	return &cairnDB{p}, nil
}

func (d *cairnDB) close() error {
	var e *C.char
	C.cairn_close(d.p, &e)
	err := cairnErr(e)
	C.cairn_release(d.p)
	d.p = nil
	return err
}

// cairnBatch is one atomic write. bytes: what it holds, so that reset
// knows when to let a large one's memory go.
type cairnBatch struct {
	p     *C.cairn_writebatch_t
	bytes int
}

// A batch that held more than this is freed at reset rather than kept.
// Commits of 256 KiB values reach tens of MiB while one is written
// (2026-12-08: a 64 MiB limit freed and faulted in a batch per commit).
const cairnBatchKeep = 256 << 20

func newCairnBatch() *cairnBatch { return &cairnBatch{p: C.cairn_writebatch_create()} }
func (b *cairnBatch) destroy()   { C.cairn_writebatch_destroy(b.p) }
func (b *cairnBatch) put(k, v []byte) {
	C.cairn_writebatch_put(b.p, cptr(k), C.size_t(len(k)), cptr(v), C.size_t(len(v)))
	b.bytes += len(k) + len(v)
}

// reserve makes room for n more bytes of keys and values.
func (b *cairnBatch) reserve(n int) { C.cairn_writebatch_reserve(b.p, C.size_t(n)) }

func (b *cairnBatch) del(k []byte) {
	C.cairn_writebatch_delete(b.p, cptr(k), C.size_t(len(k)))
	b.bytes += len(k)
}

// reset empties the batch for the next commit. A cleared batch keeps its
// memory, so the next one's values are copied into pages already mapped
// (a new batch per commit of 256 KiB values spent more time faulting
// pages in than copying, 2026-12-07's profile); one that grew past
// cairnBatchKeep is freed instead.
func (b *cairnBatch) reset() {
	if b.bytes > cairnBatchKeep {
		C.cairn_writebatch_destroy(b.p)
		b.p = C.cairn_writebatch_create()
	} else {
		C.cairn_writebatch_clear(b.p)
	}
	b.bytes = 0
}

// write applies the batch, synced to disk when sync (as a bbolt commit).
func (d *cairnDB) write(b *cairnBatch, sync bool) error {
	wo := C.cairn_writeoptions_create()
	defer C.cairn_writeoptions_destroy(wo)
	if sync {
		C.cairn_writeoptions_set_sync(wo, 1)
	}
	var e *C.char
	C.cairn_write(d.p, wo, b.p, &e)
	return cairnErr(e)
}

type cairnSnap struct{ p *C.cairn_snapshot_t }

func (d *cairnDB) snapshot() *cairnSnap {
	s := C.cairn_create_snapshot(d.p)
	if s == nil {
		return nil
	}
	return &cairnSnap{s}
}
func (d *cairnDB) releaseSnapshot(s *cairnSnap) { C.cairn_release_snapshot(d.p, s.p) }

// scan calls fn for each entry of [lo, hi) (hi nil: no bound) in order, read
// at snap (nil: the latest state), many entries per C call
// (cairn_iter_next_batch); it stops when fn returns false. k and v are only
// valid during the call.
func (d *cairnDB) scan(snap *cairnSnap, lo, hi []byte, fn func(k, v []byte) bool) error {
	ro := C.cairn_readoptions_create()
	defer C.cairn_readoptions_destroy(ro)
	if snap != nil {
		C.cairn_readoptions_set_snapshot(ro, snap.p)
	}
	if hi != nil {
		C.cairn_readoptions_set_iterate_upper_bound(ro, cptr(hi), C.size_t(len(hi)))
	}
	var e *C.char
	it := C.cairn_create_iterator(d.p, ro, &e)
	if err := cairnErr(e); err != nil {
		return err
	}
	defer C.cairn_iter_destroy(it)
	C.cairn_iter_seek(it, cptr(lo), C.size_t(len(lo)))
	// A small first buffer: point reads and short ranges are the common
	// case; it grows for long scans and for large values.
	size, max := 4096, 16
	for {
		buf := C.malloc(C.size_t(size))
		var used C.size_t
		n := C.cairn_iter_next_batch(it, (*C.char)(buf), C.size_t(size), C.size_t(max), &used, &e)
		if err := cairnErr(e); err != nil {
			C.free(buf)
			return err
		}
		if n == 0 {
			C.free(buf)
			if int(used) > size { // the next entry alone needs more
				size = int(used)
				continue
			}
			return nil
		}
		raw := C.GoBytes(buf, C.int(used))
		C.free(buf)
		for off, i := 0, 0; i < int(n); i++ {
			kl := int(nativeU32(raw[off:]))
			vl := int(nativeU32(raw[off+4:]))
			off += 8
			k := raw[off : off+kl : off+kl]
			v := raw[off+kl : off+kl+vl : off+kl+vl]
			off += kl + vl
			if !fn(k, v) {
				return nil
			}
		}
		if size < 1<<20 {
			size *= 4
		}
		if max < 4096 {
			max *= 4
		}
	}
}

// nativeU32 reads a host-order uint32 (x86-64 and arm64: little-endian).
func nativeU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func (d *cairnDB) compactAll() error {
	var e *C.char
	C.cairn_compact_range(d.p, nil, 0, nil, 0, &e)
	return cairnErr(e)
}

func (d *cairnDB) runGC() error {
	var e *C.char
	C.cairn_run_gc(d.p, nil, &e)
	return cairnErr(e)
}

func (d *cairnDB) checkpoint(dir string) error {
	cp := C.CString(dir)
	defer C.free(unsafe.Pointer(cp))
	var e *C.char
	C.cairn_checkpoint(d.p, cp, nil, &e)
	return cairnErr(e)
}

// sizes: the bytes the directory takes on the device (as du counts them)
// and those less the value-log garbage still on it (cairn::Stats): the
// in-use figure is an estimate, as bbolt's is.
func (d *cairnDB) sizes() (disk, inUse int64, err error) {
	var s C.cairn_stats_t
	var e *C.char
	C.cairn_get_stats(d.p, &s, C.size_t(unsafe.Sizeof(s)), &e)
	if err := cairnErr(e); err != nil {
		return 0, 0, err
	}
	disk = int64(s.disk_bytes)
	garbage := int64(s.vlog_garbage_bytes) - int64(s.vlog_punched_bytes) + int64(s.vlog_foreseen_garbage_bytes)
	inUse = disk - garbage
	if inUse < 0 || garbage < 0 {
		inUse = disk
	}
	return disk, inUse, nil
}
