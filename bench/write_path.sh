#!/usr/bin/env bash
# Issue 16's figures of the write path (docs/bench.md, "The write path"):
# cairn (separated, and inline where the row says), RocksDB and BlobDB on
# the same loads, one engine after the other, the page cache dropped before
# each load, incompressible values unless a row says otherwise. Each load is
# `cairn_bench --benchmarks=fillrandom`; compare the settled figures (the
# detail line's "including it"), which count the flushes, compactions and GC
# the load leaves behind.
#   0. io_probe: the disk's sequential O_DIRECT write bandwidth, this run.
#   1. 64 KiB, 1 thread, 1 GiB.
#   2. 4 KiB, 400 MiB, 1, 2 and 4 writer threads.
#   3. 1 KiB, 1 thread, 256 MiB.
#   4. cairn inline against RocksDB: 1 KiB and 4 KiB, 256 MiB.
#   5. sync writes, 4 KiB, 1, 4 and 16 threads, 5 s each (BlobDB too).
#   6. the demo's compressible values (zstd, ratio 0.5): separated against
#      inline at 4 KiB and 64 KiB, 512 MiB.
# Usage: bench/write_path.sh [BUILD_DIR] (env: DB, PARTS="0 1 2 3 4 5 6")
set -euo pipefail
build="${1:-build/release}"
bench="$build/bench/cairn_bench"
probe="$build/bench/io_probe"
db="${DB:-/tmp/cairn_write_path}"
parts="${PARTS:-0 1 2 3 4 5 6}"
incompressible=(--compression=none --compression_ratio=1.0)
drop_cache() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }
run() {
  echo "### $*"
  rm -rf "$db"
  drop_cache
  "$bench" --db="$db" --benchmarks=fillrandom "$@" | grep -E "^fillrandom|settle|amp" || true
}
mode() {  # engine flags: cairn (separated), inline, rocksdb, blobdb
  case "$1" in
    cairn) echo "--engine=cairn --value_mode=separated" ;;
    inline) echo "--engine=cairn --value_mode=inline" ;;
    *) echo "--engine=$1" ;;
  esac
}
has() { [[ " $parts " == *" $1 "* ]]; }

if has 0; then
  echo "=== 0. probe"
  mkdir -p "$db.probe"
  "$probe" --backends=io_uring --seconds=2 --dir="$db.probe" || true
  rm -rf "$db.probe"
fi
if has 1; then
  echo "=== 1. 64 KiB, 1 thread, 1 GiB"
  for e in cairn rocksdb blobdb; do
    run $(mode $e) "${incompressible[@]}" --value_size=65536 --num=16384
  done
fi
if has 2; then
  echo "=== 2. 4 KiB, 400 MiB, 1 / 2 / 4 threads"
  for t in 1 2 4; do
    for e in cairn rocksdb blobdb; do
      run $(mode $e) "${incompressible[@]}" --value_size=4096 --num=102400 --threads=$t
    done
  done
fi
if has 3; then
  echo "=== 3. 1 KiB, 1 thread, 256 MiB (cairn separated from 1 KiB, as issue 16 measured)"
  for e in cairn rocksdb blobdb; do
    extra=()
    [ "$e" = cairn ] && extra=(--value_separation_threshold=1024)
    run $(mode $e) "${incompressible[@]}" "${extra[@]}" --value_size=1024 --num=262144
  done
fi
if has 4; then
  echo "=== 4. inline against RocksDB, 256 MiB"
  for s in 1024 4096; do
    for e in inline rocksdb; do
      run $(mode $e) "${incompressible[@]}" --value_size=$s --num=$((268435456 / s))
    done
  done
fi
if has 5; then
  echo "=== 5. sync writes, 4 KiB, 5 s"
  for t in 1 4 16; do
    for e in cairn rocksdb blobdb; do
      run $(mode $e) "${incompressible[@]}" --value_size=4096 --num=1000000 --threads=$t \
          --sync --duration=5
    done
  done
fi
if has 6; then
  echo "=== 6. compressible values (zstd, ratio 0.5), 512 MiB"
  for s in 4096 65536; do
    for e in cairn inline; do
      run $(mode $e) --compression=zstd --compression_ratio=0.5 --value_size=$s \
          --num=$((536870912 / s))
    done
  done
fi
rm -rf "$db"
