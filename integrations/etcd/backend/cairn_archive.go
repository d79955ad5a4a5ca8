// The cairn backend's snapshot stream: a cairn checkpoint as one archive
// (docs/etcd.md, "The snapshot stream", with a worked example that
// cairn_golden_test.go checks byte for byte). Version 1, little-endian:
//
//	header   "CAIRNSNP" | u32 version (1) | u32 file count
//	per file u16 name length | name | u64 size | bytes | u32 CRC-32C of bytes
//	trailer  "CAIRNEND" | u32 file count | u32 CRC-32C of every byte before
//	         the trailer
//	padding  zeros up to a multiple of 512 bytes
//
// The padding is for etcdctl snapshot save, which refuses a download whose
// length is not a multiple of 512 plus 32: it expects whole bbolt pages,
// then the server's 32-byte SHA-256 (2026-12-07).
// Names are the checkpoint's relative paths ('/' between parts), sorted.

package backend

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

const (
	cairnArchiveMagic   = "CAIRNSNP"
	cairnArchiveEnd     = "CAIRNEND"
	cairnArchiveVersion = 1
	cairnMaxNameLen     = 4096
)

var cairnCRC = crc32.MakeTable(crc32.Castagnoli)

type cairnArchiveFile struct {
	name string // relative, '/'-separated
	size int64
	path string // where its bytes are read from
}

const cairnArchiveAlign = 512

// cairnArchiveSize is the exact length of the stream for these files.
func cairnArchiveSize(files []cairnArchiveFile) int64 {
	n := int64(16 + 16)
	for _, f := range files {
		n += 2 + int64(len(f.name)) + 8 + f.size + 4
	}
	return n + cairnPad(n)
}

// cairnPad: the zeros that follow a trailer ending at offset n.
func cairnPad(n int64) int64 { return (cairnArchiveAlign - n%cairnArchiveAlign) % cairnArchiveAlign }

// cairnListFiles lists a checkpoint directory's files, sorted by name.
func cairnListFiles(dir string) ([]cairnArchiveFile, error) {
	var files []cairnArchiveFile
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("checkpoint %s: %s is not a regular file", dir, p)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, cairnArchiveFile{name: filepath.ToSlash(rel), size: info.Size(), path: p})
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return files, err
}

// cairnWriteArchive writes the stream; each file must still have the size
// listed (a checkpoint's files do not change).
func cairnWriteArchive(w io.Writer, files []cairnArchiveFile) (int64, error) {
	total := crc32.New(cairnCRC)
	cw := &cairnCountWriter{w: io.MultiWriter(w, total)}
	var hdr [16]byte
	copy(hdr[:], cairnArchiveMagic)
	binary.LittleEndian.PutUint32(hdr[8:], cairnArchiveVersion)
	binary.LittleEndian.PutUint32(hdr[12:], uint32(len(files)))
	if _, err := cw.Write(hdr[:]); err != nil {
		return cw.n, err
	}
	for _, f := range files {
		if err := cairnWriteFile(cw, f); err != nil {
			return cw.n, err
		}
	}
	var tr [16]byte
	copy(tr[:], cairnArchiveEnd)
	binary.LittleEndian.PutUint32(tr[8:], uint32(len(files)))
	binary.LittleEndian.PutUint32(tr[12:], total.Sum32())
	if _, err := cw.Write(tr[:]); err != nil {
		return cw.n, err
	}
	n, err := w.Write(make([]byte, cairnPad(cw.n)))
	return cw.n + int64(n), err
}

func cairnWriteFile(w io.Writer, f cairnArchiveFile) error {
	head := make([]byte, 2+len(f.name)+8)
	binary.LittleEndian.PutUint16(head, uint16(len(f.name)))
	copy(head[2:], f.name)
	binary.LittleEndian.PutUint64(head[2+len(f.name):], uint64(f.size))
	if _, err := w.Write(head); err != nil {
		return err
	}
	in, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer in.Close()
	crc := crc32.New(cairnCRC)
	n, err := io.Copy(io.MultiWriter(w, crc), io.LimitReader(in, f.size))
	if err != nil {
		return err
	}
	if n != f.size {
		return fmt.Errorf("snapshot file %s: %d bytes, want %d", f.path, n, f.size)
	}
	var c [4]byte
	binary.LittleEndian.PutUint32(c[:], crc.Sum32())
	_, err = w.Write(c[:])
	return err
}

type cairnCountWriter struct {
	w io.Writer
	n int64
}

func (c *cairnCountWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// cairnIsArchive tells a snapshot stream by its first bytes.
func cairnIsArchive(head []byte) bool { return bytes.HasPrefix(head, []byte(cairnArchiveMagic)) }

// cairnValidName refuses names that would leave the directory.
func cairnValidName(n string) bool {
	if n == "" || len(n) > cairnMaxNameLen || strings.HasPrefix(n, "/") || strings.Contains(n, "\\") {
		return false
	}
	for _, part := range strings.Split(n, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

var errCairnCrash = errors.New("simulated crash (test)")

// cairnCrashAt, for tests: the install step at which to stop as a killed
// member would, leaving what is on disk as it is.
var cairnCrashAt string

func cairnStep(name string) error {
	if cairnCrashAt == name {
		return errCairnCrash
	}
	return nil
}

// cairnUnpack reads the archive at src into the new directory dir, checking
// every checksum, and syncs every file and directory it wrote. A short or
// damaged archive is an error naming what is wrong.
func cairnUnpack(src, dir string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	total := crc32.New(cairnCRC)
	r := io.TeeReader(bufio.NewReaderSize(f, 1<<20), total)
	bad := func(format string, a ...interface{}) error {
		return fmt.Errorf("cairn snapshot archive %s: %s", src, fmt.Sprintf(format, a...))
	}
	var hdr [16]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return bad("short header: %v", err)
	}
	if string(hdr[:8]) != cairnArchiveMagic {
		return bad("bad magic %q", hdr[:8])
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != cairnArchiveVersion {
		return bad("version %d, this build reads %d", v, cairnArchiveVersion)
	}
	count := binary.LittleEndian.Uint32(hdr[12:])
	if err := os.Mkdir(dir, 0700); err != nil {
		return err
	}
	dirs := map[string]bool{dir: true}
	seen := map[string]bool{}
	end := int64(16 + 16) // where the trailer ends: header, files, trailer
	for i := uint32(0); i < count; i++ {
		name, size, err := cairnUnpackFile(r, dir, dirs, bad, i)
		if err != nil {
			return err
		}
		end += 2 + int64(len(name)) + 8 + size + 4
		if seen[name] {
			return bad("file %q twice", name)
		}
		seen[name] = true
	}
	sum := total.Sum32() // of every byte before the trailer
	var tr [16]byte
	if _, err := io.ReadFull(r, tr[:]); err != nil {
		return bad("no end marker: %v", err)
	}
	if string(tr[:8]) != cairnArchiveEnd || binary.LittleEndian.Uint32(tr[8:]) != count {
		return bad("bad end marker")
	}
	if got := binary.LittleEndian.Uint32(tr[12:]); got != sum {
		return bad("stream checksum %08x, want %08x", sum, got)
	}
	rest, err := io.ReadAll(io.LimitReader(r, cairnArchiveAlign))
	if err != nil {
		return err
	}
	if int64(len(rest)) != cairnPad(end) || !bytes.Equal(rest, make([]byte, len(rest))) {
		return bad("%d bytes after the end marker, want %d zeros", len(rest), cairnPad(end))
	}
	for d := range dirs {
		if err := cairnSyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func cairnUnpackFile(r io.Reader, dir string, dirs map[string]bool,
	bad func(string, ...interface{}) error, i uint32) (name string, size int64, err error) {
	var nl [2]byte
	if _, err := io.ReadFull(r, nl[:]); err != nil {
		return "", 0, bad("file %d: short name length: %v", i, err)
	}
	nb := make([]byte, binary.LittleEndian.Uint16(nl[:]))
	if _, err := io.ReadFull(r, nb); err != nil {
		return "", 0, bad("file %d: short name: %v", i, err)
	}
	name = string(nb)
	if !cairnValidName(name) {
		return "", 0, bad("file %d: bad name %q", i, name)
	}
	var sz [8]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return "", 0, bad("file %q: short size: %v", name, err)
	}
	size = int64(binary.LittleEndian.Uint64(sz[:]))
	if size < 0 {
		return "", 0, bad("file %q: bad size", name)
	}
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0700); err != nil {
		return "", 0, err
	}
	for d := filepath.Dir(p); len(d) >= len(dir); d = filepath.Dir(d) {
		dirs[d] = true
	}
	out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0600)
	if err != nil {
		return "", 0, err
	}
	defer out.Close()
	crc := crc32.New(cairnCRC)
	if i == 0 {
		// A kill half way through the first file (TestCairnInstallCrashAtEachStep).
		if _, err := io.CopyN(io.MultiWriter(out, crc), r, size/2); err != nil {
			return "", 0, bad("file %q: short: %v", name, err)
		}
		if err := cairnStep("unpack-mid"); err != nil {
			return "", 0, err
		}
	}
	rest := size - size/2
	if i != 0 {
		rest = size
	}
	if n, err := io.CopyN(io.MultiWriter(out, crc), r, rest); err != nil {
		return "", 0, bad("file %q: short by %d bytes: %v", name, rest-n, err)
	}
	var c [4]byte
	if _, err := io.ReadFull(r, c[:]); err != nil {
		return "", 0, bad("file %q: no checksum: %v", name, err)
	}
	if got, want := crc.Sum32(), binary.LittleEndian.Uint32(c[:]); got != want {
		return "", 0, bad("file %q: checksum %08x, want %08x", name, got, want)
	}
	if err := out.Sync(); err != nil {
		return "", 0, err
	}
	return name, size, out.Close()
}

func cairnSyncDir(d string) error {
	f, err := os.Open(d)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
