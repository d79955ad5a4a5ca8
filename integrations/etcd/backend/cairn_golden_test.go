// The snapshot stream's worked example in docs/etcd.md, byte for byte: the
// archive of a two-file checkpoint (its first 97 bytes; zeros follow). With CAIRN_DOCS set to docs/etcd.md
// (run_integration.sh sets it), the page's hex dump must be this one too.

package backend

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Checked against an independent Python rendering of the format
// (2026-12-07).
const cairnGoldenHex = "434149524e534e5001000000020000000a003030303030312e6c6f6704000000" +
	"00000000657463645fb0f948070043555252454e5410000000000000004d414e" +
	"49464553542d3030303030310a00bbf5d0434149524e454e44020000001d94fd" +
	"c8"

func TestCairnArchiveGolden(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("MANIFEST-000001\n"), 0600)
	os.WriteFile(filepath.Join(dir, "000001.log"), []byte("etcd"), 0600)
	files, err := cairnListFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	n, err := cairnWriteArchive(&sb, files)
	if err != nil {
		t.Fatal(err)
	}
	got := []byte(sb.String())
	if n != int64(len(got)) || n != cairnArchiveSize(files) {
		t.Fatalf("archive: %d bytes, WriteTo says %d, Size %d", len(got), n, cairnArchiveSize(files))
	}
	// 97 bytes of archive, then zeros to 512.
	if len(got) != 512 || hex.EncodeToString(got[:97]) != cairnGoldenHex ||
		!bytes.Equal(got[97:], make([]byte, 512-97)) {
		t.Fatalf("archive changed; the format is versioned (docs/etcd.md). Got:\n%s", hex.Dump(got))
	}
	// It unpacks to the same files.
	src := filepath.Join(t.TempDir(), "archive")
	os.WriteFile(src, got, 0600)
	dst := filepath.Join(t.TempDir(), "out")
	if err := cairnUnpack(src, dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "CURRENT")); string(b) != "MANIFEST-000001\n" {
		t.Fatalf("unpacked CURRENT %q", b)
	}
	docs := os.Getenv("CAIRN_DOCS")
	if docs == "" {
		return
	}
	page, err := os.ReadFile(docs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), hex.Dump(got[:97])) {
		t.Fatalf("%s does not hold the example's hex dump:\n%s", docs, hex.Dump(got[:97]))
	}
}
