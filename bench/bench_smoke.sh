#!/usr/bin/env bash
# Smoke test of cairn_bench (ctest: cairn_bench_smoke). Runs every benchmark
# at a tiny size in inline mode, as text and as JSON (each JSON line must
# parse and carry the documented fields), then the same in separated mode
# once cairn opens in it (until then the open must fail with Unimplemented),
# then a short run of each RocksDB engine the build has.
#   bench_smoke.sh <cairn_bench> <scratch dir>
set -euo pipefail
bench="$1"
dir="$2"
all=fillseq,fillrandom,overwrite,readrandom,readmissing,readseq,getrange,seekrandom,multireadrandom,readwhilewriting,deleterandom,ycsb_load,ycsb_a,ycsb_b,ycsb_c,ycsb_d,ycsb_e,ycsb_f
common=(--num=2000 --reads=1000 --value_size=1024 --seek_nexts=5-20 --db="$dir/db")
rm -rf "$dir"
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT

check_json() {  # $1: file of JSON lines, $2: expected line count
  local lines
  lines=$(wc -l <"$1")
  [ "$lines" -eq "$2" ] || { echo "want $2 JSON lines, got $lines" >&2; cat "$1" >&2; return 1; }
  if command -v python3 >/dev/null; then
    python3 - "$1" <<'PY'
import json, sys
need = ["benchmark", "engine", "ops", "ops_per_sec", "mb_per_sec", "latency_us", "write_amp",
        "read_amp", "space_amp", "stall_micros", "gc_bytes", "settle_seconds",
        "settled_ops_per_sec", "os_read_bytes", "os_read_bytes_per_op"]
for line in open(sys.argv[1]):
    r = json.loads(line)
    missing = [k for k in need if k not in r]
    assert not missing, f"{r.get('benchmark')}: missing {missing}"
    assert r["ops"] > 0, f"{r['benchmark']}: no operations"
    for k in ("p50", "p99", "p999"):
        assert r["latency_us"][k] >= 0
PY
  else
    for f in '"benchmark"' '"ops_per_sec"' '"write_amp"' '"read_amp"' '"space_amp"'; do
      [ "$(grep -c "$f" "$1")" -eq "$2" ] || { echo "field $f missing" >&2; return 1; }
    done
  fi
}

run_mode() {  # $1: value mode
  echo "== $1: text"
  "$bench" "${common[@]}" --value_mode="$1" --benchmarks="$all" >"$dir/text.out"
  grep -q '^ycsb_f ' "$dir/text.out" || { cat "$dir/text.out"; echo "no ycsb_f row" >&2; return 1; }
  echo "== $1: json"
  "$bench" "${common[@]}" --value_mode="$1" --benchmarks="$all" --json >"$dir/json.out"
  check_json "$dir/json.out" 18
}

run_mode inline

if "$bench" --num=10 --benchmarks=fillseq --value_mode=separated --db="$dir/probe" \
    >/dev/null 2>"$dir/probe.err"; then
  run_mode separated
  # A space sample names the parts of the directory cairn knows, once
  # there are segments (values of 32 KiB go to the value log as written).
  echo "== separated: space samples"
  "$bench" --num=200 --value_size=32768 --value_mode=separated --db="$dir/db" \
    --benchmarks=fillseq >/dev/null
  "$bench" --num=200 --value_size=32768 --value_mode=separated --db="$dir/db" \
    --use_existing_db --benchmarks=overwrite --space_sample_secs=1 >/dev/null 2>"$dir/space.err"
  grep -Eq '^space overwrite t=[0-9.]+s .* segments=[0-9.]+MiB \(garbage [0-9.]+MiB, foreseen [0-9.]+MiB\) sst=[0-9.]+MiB other=[0-9.]+MiB gc_amp=[0-9.]+$' \
    "$dir/space.err" || { cat "$dir/space.err" >&2; echo "no space sample naming the parts" >&2; exit 1; }
elif grep -q Unimplemented "$dir/probe.err"; then
  echo "== separated: not in this build yet (Unimplemented); skipped"
else
  cat "$dir/probe.err" >&2
  exit 1
fi

for engine in rocksdb blobdb; do
  if "$bench" --engine=$engine --num=10 --benchmarks=fillseq --db="$dir/probe" \
      >/dev/null 2>"$dir/probe.err"; then
    echo "== $engine"
    "$bench" "${common[@]}" --engine=$engine --json \
      --benchmarks=fillrandom,readrandom,seekrandom,multireadrandom,ycsb_a >"$dir/json.out"
    check_json "$dir/json.out" 5
  elif grep -q "built without RocksDB" "$dir/probe.err"; then
    echo "== $engine: not built; skipped"
  else
    cat "$dir/probe.err" >&2
    exit 1
  fi
done
echo "cairn_bench smoke: OK"
