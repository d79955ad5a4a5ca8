// Where the cairn backend keeps its data, and how a received snapshot is
// installed (docs/etcd.md, "Files and the snapshot install").
//
// etcd knows its backend as one file path P (member/snap/db): it renames a
// received snapshot onto P and opens P. So P is a marker, a small file
// holding "cairn v1 dir=NAME\n", and the data is the cairn directory NAME
// beside it, named P's base + ".cairn-" + a unique id. When P holds an
// archive instead (cairn_archive.go), opening it installs it:
//
//  1. unpack into NAME.partial, checking every checksum, syncing each file
//     and directory;
//  2. rename NAME.partial to NAME, sync the parent;
//  3. write the marker naming NAME to P.tmp, sync, rename onto P, sync the
//     parent: the commit point;
//  4. remove the directories no marker names and no open backend uses.
//
// A kill before step 3 leaves P an archive, and the next open installs it
// again under a new NAME; after it, P names a complete directory. The old
// directory is never renamed: a backend still open on it (etcd closes the
// old backend after opening the new one) keeps writing where it was, and
// its Close removes it.

package backend

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

const cairnMarkerPrefix = "cairn v1 dir="

// The directories open in this process (backends and snapshots), which the
// clean-up of step 4 leaves alone.
var (
	cairnOpenMu   sync.Mutex
	cairnOpenDirs = map[string]int{}
)

func cairnRegister(dir string) {
	cairnOpenMu.Lock()
	cairnOpenDirs[dir]++
	cairnOpenMu.Unlock()
}

func cairnIsOpen(dir string) bool {
	cairnOpenMu.Lock()
	defer cairnOpenMu.Unlock()
	return cairnOpenDirs[dir] > 0
}

// cairnUnregister: a backend closed; its directory goes if the marker no
// longer names it (a snapshot was installed over it while it was open).
func cairnUnregister(path, dir string, lg *zap.Logger) {
	cairnOpenMu.Lock()
	defer cairnOpenMu.Unlock()
	if cairnOpenDirs[dir]--; cairnOpenDirs[dir] > 0 {
		return
	}
	delete(cairnOpenDirs, dir)
	name, kind, err := cairnReadMarker(path)
	if err == nil && kind == "marker" && name != filepath.Base(dir) {
		if lg != nil {
			lg.Info("removing replaced cairn directory", zap.String("dir", dir))
		}
		os.RemoveAll(dir)
	}
}

func cairnNewID() string {
	var r [4]byte
	rand.Read(r[:])
	return fmt.Sprintf("%x-%s", time.Now().UnixNano(), hex.EncodeToString(r[:]))
}

// cairnReadMarker says what P is: "missing" (absent or empty, as bbolt
// takes an empty file for a new one), "marker" (with the directory's name),
// "archive", or an error for anything else (a bbolt file, say).
func cairnReadMarker(p string) (name, kind string, err error) {
	f, err := os.Open(p)
	if os.IsNotExist(err) {
		return "", "missing", nil
	}
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return "", "", fmt.Errorf("%s is a directory; the cairn backend's path is a file (its marker)", p)
	}
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", "", err
	}
	head = head[:n]
	switch {
	case n == 0:
		return "", "missing", nil
	case cairnIsArchive(head):
		return "", "archive", nil
	case bytes.HasPrefix(head, []byte(cairnMarkerPrefix)) && n < 512 && bytes.HasSuffix(head, []byte("\n")):
		name = strings.TrimSuffix(string(head[len(cairnMarkerPrefix):]), "\n")
		if name == "" || strings.ContainsAny(name, "/\\\n") || name == "." || name == ".." {
			return "", "", fmt.Errorf("%s: bad cairn marker %q", p, head)
		}
		return name, "marker", nil
	}
	return "", "", fmt.Errorf("%s is neither a cairn backend marker nor a cairn snapshot archive "+
		"(a bbolt file? the cairn backend does not read bbolt files; start this member with "+
		"CAIRN_ETCD_BACKEND=bbolt)", p)
}

// cairnWriteMarker replaces P atomically with a marker naming name.
func cairnWriteMarker(p, name string) error {
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(cairnMarkerPrefix + name + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := cairnStep("marker-tmp"); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	return cairnSyncDir(filepath.Dir(p))
}

// cairnSiblings lists P's cairn directories (complete and partial).
func cairnSiblings(p string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Dir(p))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), filepath.Base(p)+".cairn-") && e.IsDir() {
			out = append(out, filepath.Join(filepath.Dir(p), e.Name()))
		}
	}
	return out, nil
}

// cairnPrepare makes P name a complete cairn directory and returns it:
// creating a new store, installing an archive, or reading the marker.
func cairnPrepare(p string, lg *zap.Logger) (string, error) {
	// One spelling of each path, for the registry of open directories.
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0700); err != nil {
		return "", err
	}
	name, kind, err := cairnReadMarker(p)
	if err != nil {
		return "", err
	}
	var dir string
	switch kind {
	case "marker":
		dir = filepath.Join(filepath.Dir(p), name)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return "", fmt.Errorf("%s names cairn directory %s, which is missing: refusing to start "+
				"with an empty store", p, dir)
		}
	case "missing":
		if err := cairnCheckNoOrphans(p); err != nil {
			return "", err
		}
		if dir, err = cairnInstall(p, "", lg); err != nil {
			return "", err
		}
	case "archive":
		if dir, err = cairnInstall(p, p, lg); err != nil {
			return "", err
		}
	}
	os.Remove(p + ".tmp")
	cairnCleanup(p, dir)
	return dir, nil
}

// cairnInstall is steps 1 to 3: a new directory from the archive at src, or
// a new empty store (src ""), then the marker.
func cairnInstall(p, src string, lg *zap.Logger) (string, error) {
	final := p + ".cairn-" + cairnNewID()
	partial := final + ".partial"
	start := time.Now()
	if src != "" {
		if err := cairnUnpack(src, partial); err != nil {
			return "", err
		}
	} else {
		db, err := cairnOpen(partial, true)
		if err != nil {
			return "", fmt.Errorf("creating cairn directory %s: %v", partial, err)
		}
		if err := db.close(); err != nil {
			return "", err
		}
		if err := cairnSyncDir(partial); err != nil {
			return "", err
		}
	}
	if err := cairnStep("unpacked"); err != nil {
		return "", err
	}
	if err := os.Rename(partial, final); err != nil {
		return "", err
	}
	if err := cairnSyncDir(filepath.Dir(p)); err != nil {
		return "", err
	}
	if err := cairnStep("renamed"); err != nil {
		return "", err
	}
	if err := cairnWriteMarker(p, filepath.Base(final)); err != nil {
		return "", err
	}
	if err := cairnStep("marker"); err != nil {
		return "", err
	}
	if lg != nil && src != "" {
		lg.Info("installed cairn snapshot", zap.String("path", p), zap.String("dir", final),
			zap.Duration("took", time.Since(start)))
	}
	return final, nil
}

// cairnCheckNoOrphans: with no marker, a complete cairn directory beside P
// that holds data means the marker was lost, not that this is a new member:
// starting empty would serve a shorter history. A directory with no keys is
// a new store whose marker was never written (a kill in step 3).
func cairnCheckNoOrphans(p string) error {
	dirs, err := cairnSiblings(p)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if strings.HasSuffix(d, ".partial") || cairnIsOpen(d) {
			continue
		}
		db, err := cairnOpen(d, false)
		if err != nil {
			return fmt.Errorf("%s is missing and cairn directory %s cannot be opened (%v): "+
				"restore the marker or remove the directory", p, d, err)
		}
		empty := true
		err = db.scan(nil, nil, nil, func(k, v []byte) bool { empty = false; return false })
		db.close()
		if err != nil || !empty {
			return fmt.Errorf("%s is missing but cairn directory %s holds data: restore the marker "+
				"(a file holding %q) or remove the directory", p, d, cairnMarkerPrefix+filepath.Base(d)+"\\n")
		}
	}
	return nil
}

// cairnCleanup is step 4.
func cairnCleanup(p, keep string) {
	dirs, _ := cairnSiblings(p)
	for _, d := range dirs {
		if d != keep && !cairnIsOpen(d) {
			os.RemoveAll(d)
		}
	}
}

// Snapshot checkpoints cairn (hard links where it can) into a directory
// beside the store and streams it as one archive; Close removes it.
func (b *cairnBackend) Snapshot() Snapshot {
	b.ForceCommit()
	dir := b.path + ".cairn-" + cairnNewID() + ".snapshot"
	cairnRegister(dir)
	fail := func(err error) Snapshot {
		os.RemoveAll(dir)
		cairnUnregister(b.path, dir, nil)
		b.fatal("failed to snapshot cairn", err)
		return nil
	}
	b.dbmu.RLock()
	err := b.db.checkpoint(dir)
	b.dbmu.RUnlock()
	if err != nil {
		return fail(err)
	}
	files, err := cairnListFiles(dir)
	if err != nil {
		return fail(err)
	}
	b.readers.Add(1)
	return &cairnSnapshot{b: b, dir: dir, files: files}
}

type cairnSnapshot struct {
	b     *cairnBackend
	dir   string
	files []cairnArchiveFile
	once  sync.Once
}

func (s *cairnSnapshot) Size() int64 { return cairnArchiveSize(s.files) }

func (s *cairnSnapshot) WriteTo(w io.Writer) (int64, error) {
	start := time.Now()
	n, err := cairnWriteArchive(w, s.files)
	snapshotTransferSec.Observe(time.Since(start).Seconds())
	return n, err
}

func (s *cairnSnapshot) Close() error {
	var err error
	s.once.Do(func() {
		err = os.RemoveAll(s.dir)
		cairnOpenMu.Lock()
		delete(cairnOpenDirs, s.dir)
		cairnOpenMu.Unlock()
		s.b.readers.Done()
	})
	return err
}
