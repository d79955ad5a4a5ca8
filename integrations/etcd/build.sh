#!/usr/bin/env bash
# Builds etcd 3.4 (Debian's golang-etcd-server-dev source) with cairn's
# backend beside bbolt: OUTDIR/bin/etcd and OUTDIR/bin/integration.test.
#   integrations/etcd/build.sh OUTDIR
# CAIRN_LIB_DIR: the directory holding libcairn_c.so (default build/ci).
# CAIRN_ETCD_BACKEND=cairn picks cairn at run time; unset or bbolt keeps
# bbolt (docs/etcd.md). Offline: GOPATH mode (GO111MODULE=off) over
# /usr/share/gocode/src.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
out="$(mkdir -p "$1" && cd "$1" && pwd)"
libdir="${CAIRN_LIB_DIR:-$root/build/ci}"

source "$root/scripts/lib/setup.sh"
CAIRN_PACKAGES=("${CAIRN_ETCD_PACKAGES[@]}")
cairn_install_packages

src=/usr/share/gocode/src
[ -d "$src/go.etcd.io/etcd/mvcc/backend" ] || {
  echo "cairn-etcd: $src/go.etcd.io/etcd missing (package golang-etcd-server-dev)" >&2; exit 1; }
[ -f "$libdir/libcairn_c.so" ] || {
  echo "cairn-etcd: $libdir/libcairn_c.so missing: build it first" >&2
  echo "  (source scripts/lib/setup.sh && cairn_setup ci cairn_c), or set CAIRN_LIB_DIR" >&2
  exit 1; }

# The GOPATH: every dependency a symlink to the packaged source, read-only;
# etcd itself a copy, since the backend's files go into it.
gp="$out/gopath"
rm -rf "$gp"
mkdir -p "$gp/src/go.etcd.io"
for d in "$src"/*; do
  [ "$(basename "$d")" = go.etcd.io ] || ln -s "$d" "$gp/src/$(basename "$d")"
done
for d in "$src"/go.etcd.io/*; do
  [ "$(basename "$d")" = etcd ] || ln -s "$d" "$gp/src/go.etcd.io/$(basename "$d")"
done
cp -r "$src/go.etcd.io/etcd" "$gp/src/go.etcd.io/etcd"
chmod -R u+w "$gp/src/go.etcd.io/etcd"
etcd="$gp/src/go.etcd.io/etcd"
cp "$here"/backend/*.go "$etcd/mvcc/backend/"

# The selection: backend.New and NewDefaultBackend ask cairnSelected()
# first, one line each. The package's own test constructors return bbolt's
# concrete type and stay bbolt.
be="$etcd/mvcc/backend/backend.go"
python3 - "$be" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
for fn in ("func New(bcfg BackendConfig) Backend {\n",
           "func NewDefaultBackend(path string) Backend {\n"):
    assert s.count(fn) == 1, "backend.go: %r not found; is this etcd 3.4?" % fn
    arg = "bcfg" if "bcfg" in fn else "cairnDefaultConfig(path)"
    s = s.replace(fn, fn + "\tif cairnSelected() {\n\t\treturn newCairnBackend(%s)\n\t}\n" % arg)
open(p, "w").write(s)
PY

# etcd's unit tests of the packages above the backend (mvcc, lease, auth,
# etcdserver) make their stores with NewTmpBackend and NewDefaultTmpBackend,
# which return bbolt's own type; their test files call the Backend-typed
# twins instead (cairn_backend.go), which honour CAIRN_ETCD_BACKEND.
# Test files only: the binaries are unchanged.
(cd "$etcd" && sed -i 's/backend\.NewDefaultTmpBackend()/backend.NewDefaultTmpBackendSelected()/g;
    s/backend\.NewTmpBackend(/backend.NewTmpBackendSelected(/g' \
  mvcc/*_test.go lease/*_test.go lease/leasehttp/*_test.go auth/*_test.go etcdserver/*_test.go)

export GOPATH="$gp" GO111MODULE=off GOFLAGS=
# Go's own build cache (~/.cache/go-build): a rebuild takes seconds.
export GOCACHE="${GOCACHE:-$(go env GOCACHE)}"
export CGO_ENABLED=1
export CGO_CFLAGS="-I$root/core/include"
export CGO_LDFLAGS="-L$libdir -Wl,-rpath,$libdir"
mkdir -p "$out/bin"
cd "$etcd"
echo "cairn-etcd: building etcd" >&2
nice -n 10 go build -o "$out/bin/etcd" .
echo "cairn-etcd: building integration.test" >&2
nice -n 10 go test -c -o "$out/bin/integration.test" ./integration
# An env file for the test scripts: the same GOPATH and flags.
cat > "$out/env.sh" <<ENV
export GOPATH="$gp" GO111MODULE=off GOFLAGS= GOCACHE="$GOCACHE" CGO_ENABLED=1
export CGO_CFLAGS="$CGO_CFLAGS" CGO_LDFLAGS="$CGO_LDFLAGS"
ETCD_SRC="$etcd"
ENV
echo "cairn-etcd: built $out/bin/etcd and $out/bin/integration.test" >&2
