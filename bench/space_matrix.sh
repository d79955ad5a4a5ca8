#!/usr/bin/env bash
# The space matrix (docs/bench.md; its runs: docs/results/): cairn (separated
# values) and RocksDB BlobDB side by side on the same workload, one engine
# after the other, with incompressible 4 KiB values, 1 GiB live, O_DIRECT
# reads and a 256 MiB cache each.
#   1. fillseq of NUM keys, one full random overwrite pass (NUM puts), then
#      each engine's settle step (cairn: WaitForBackgroundWork, which waits
#      for GC; RocksDB: compactions): space amplification at the end.
#   2. the same fill, then SECS seconds of uniform random overwrites, space
#      sampled every 10 s: max and final space amplification, stall share,
#      longest wait of one write (cairn), throughput, write amplification.
#   3. cairn only: SKEW_SECS seconds of Zipfian (0.99) overwrites against
#      uniform ones: GC bytes relocated per user byte.
#   4. the same fill, then deletebatches (40 of every 100 adjacent keys
#      deleted) and each engine's settle: space amplification at the end
#      (docs/gc.md, "Punched runs").
# Usage: bench/space_matrix.sh [BUILD_DIR] (env: NUM, SECS, SKEW_SECS, DB)
set -euo pipefail
build="${1:-build/release}"
bench="$build/bench/cairn_bench"
num="${NUM:-262144}"
secs="${SECS:-300}"
skew_secs="${SKEW_SECS:-60}"
db="${DB:-/tmp/cairn_space_matrix}"
common=(--compression=none --compression_ratio=1.0 --value_size=4096 --num="$num"
        --direct_reads --cache_mb=256 --memtable_mb=64 --db="$db")
drop_cache() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }
run() { echo "### $*"; "$bench" "${common[@]}" "$@"; }

for engine in cairn blobdb; do
  mode=(); [ "$engine" = cairn ] && mode=(--value_mode=separated)
  echo "=== 1. fill + one overwrite pass + settle: $engine"
  drop_cache
  run --engine="$engine" "${mode[@]}" --benchmarks=fillseq,overwrite --stats
  echo "=== 2. sustained uniform overwrites, ${secs} s: $engine"
  drop_cache
  run --engine="$engine" "${mode[@]}" --benchmarks=fillseq
  drop_cache
  run --engine="$engine" "${mode[@]}" --use_existing_db --benchmarks=overwrite \
      --duration="$secs" --space_sample_secs=10 --stats
done
echo "=== 3. GC cost, uniform against Zipfian 0.99 overwrites (${skew_secs} s each): cairn"
for b in overwrite overwritezipf; do
  drop_cache
  run --engine=cairn --value_mode=separated --benchmarks=fillseq
  run --engine=cairn --value_mode=separated --use_existing_db --benchmarks="$b" \
      --duration="$skew_secs" --stats
done
for engine in cairn blobdb; do
  mode=(); [ "$engine" = cairn ] && mode=(--value_mode=separated)
  echo "=== 4. fill, then delete runs of adjacent keys, settle: $engine"
  drop_cache
  run --engine="$engine" "${mode[@]}" --benchmarks=fillseq,deletebatches --stats
done
rm -rf "$db"
