#!/usr/bin/env bash
# etcd on bbolt against etcd on cairn, same machine, one run (issue 59, item 4).
#
#   integrations/etcd/bench.sh [options] OUTDIR
#     --quick            ~200 MiB per workload, `check perf` at s only, short settle (a smoke run)
#     --db-mib N         bytes written per value size, in MiB (default 3072: a few GiB)
#     --max-puts N       cap on the puts of one workload (default 400000: 1 KiB values stop there)
#     --sizes "A B C"    value sizes in bytes (default "1024 16384 262144")
#     --overwrite N      total writes / key space (default 4: compaction then frees 3/4)
#     --conc N           concurrent clients of the put load (default 32)
#     --perf "s m l"     etcdctl check perf loads (default "s m l"; "" skips it)
#     --backends "..."   default "bbolt cairn"
#     --data DIR         where the members' data dirs go (default the temp dir under /tmp)
#     --results DIR      where results.md and the profiles are written (default ./etcd-bench-results)
#     --settle S         at most S seconds for the space to come back after compact/defrag (60)
#
# Per backend: `etcdctl check perf` on a fresh member at each load level; then per value size a
# fresh single member (--quota-backend-bytes 16 GiB, --enable-pprof) takes the put workload from
# integrations/etcd/etcdload: incompressible values, keys overwritten --overwrite times, so that
# etcd's history grows and compaction has something to free. Reported: puts/s, p50/p99 latency,
# the backend's size on disk (du of member/snap: bbolt's db file, or the cairn directory beside
# it), etcd's dbSize/dbSizeInUse, then the same after `etcdctl compact --physical` (no defrag, after
# a settle while the engine reclaims), and after `etcdctl defrag`. During the largest values' load
# a 10 s CPU profile is taken from /debug/pprof and `go tool pprof -top` shown.
# Run it on a quiet machine: anything else running makes the numbers noise.

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=integrations/etcd/test_lib.sh
source "$HERE/test_lib.sh"

DB_MIB=3072
MAX_PUTS=400000
SIZES="1024 16384 262144"
OVERWRITE=4
CONC=32
PERF="s m l"
BACKENDS="bbolt cairn"
DATA_ROOT=""
RESULTS=$PWD/etcd-bench-results
SETTLE=60
OUT_ARG=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) DB_MIB=200; MAX_PUTS=50000; PERF="s"; SETTLE=10 ;;
    --db-mib) DB_MIB=$2; shift ;;
    --max-puts) MAX_PUTS=$2; shift ;;
    --sizes) SIZES=$2; shift ;;
    --overwrite) OVERWRITE=$2; shift ;;
    --conc) CONC=$2; shift ;;
    --perf) PERF=$2; shift ;;
    --backends) BACKENDS=$2; shift ;;
    --data) DATA_ROOT=$2; shift ;;
    --results) RESULTS=$2; shift ;;
    --settle) SETTLE=$2; shift ;;
    *) lib_other_arg "$1" ;;
  esac
  shift
done

lib_init "$OUT_ARG" bench
START=$SECONDS
mkdir -p "$RESULTS" || die "cannot make $RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
DATA_ROOT=${DATA_ROOT:-$LIB_WORK}
mkdir -p "$DATA_ROOT" || die "cannot make $DATA_ROOT"
lib_build_etcdload
lib_pick_ports 2
PORT=$PORT_BASE
RUN=0
PUT_ROWS=()
PERF_ROWS=()
declare -A RATE   # RATE[backend/size]: puts/s, for the ratio lines

use_backend() { BACKEND=$1; export CAIRN_ETCD_BACKEND=$1; }

# fresh_member NAME [ARGS...]: a new single member on an empty data dir; sets DIR.
fresh_member() {
  local name=$1; shift
  RUN=$((RUN + 1))
  DIR=$DATA_ROOT/run$RUN
  rm -rf "$DIR"
  lib_start_single "$name" "$DIR" "$PORT" --enable-pprof "$@"
  lib_wait_ready "$name" "$SINGLE_URL" 120 || die "$name did not start (log ${MEMBER_LOG[$name]})"
  lib_check_backend "$DIR"
}

stop_member() {
  lib_kill9 "$1"
  rm -rf "$DIR"
}

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

status_field() {
  etcdctl --endpoints="$SINGLE_URL" --command-timeout=10s endpoint status -w json 2>/dev/null |
    jq -r ".[0].Status.$1 // \"?\""
}

# settle_du: waits until du of the backend stops shrinking (two readings 2 s apart within 1%),
# at most SETTLE seconds: compaction's space comes back in the background.
settle_du() {
  local t0=$SECONDS a b
  a=$(lib_backend_du "$DIR")
  while ((SECONDS - t0 < SETTLE)); do
    sleep 2
    b=$(lib_backend_du "$DIR")
    if ((b * 100 >= a * 99)); then a=$b; break; fi
    a=$b
  done
  echo "$a"
}

# ---- etcdctl check perf
perf_run() {
  local b=$1 l out verdict
  [[ -n $PERF ]] || return 0
  fresh_member "perf-$b"
  for l in $PERF; do
    note "$b: etcdctl check perf --load=$l (60 s)"
    out=$(etcdctl --endpoints="$SINGLE_URL" check perf --load="$l" 2>&1 | tr '\r' '\n')
    verdict=$(grep -E '^(PASS|FAIL)$' <<<"$out" | tail -n 1)
    PERF_ROWS+=("| $b | $l | $(grep -oE 'Throughput (is|too low:) [0-9]+ writes/s' <<<"$out" | grep -oE '[0-9]+') | $(grep -oE 'Slowest request took[^0-9]*[0-9.]+s' <<<"$out" | grep -oE '[0-9.]+s$') | $(grep -oE 'Stddev (is|too high:) [0-9.]+s' <<<"$out" | grep -oE '[0-9.]+s$') | ${verdict:-?} |")
    grep -oE '(PASS|FAIL).*' <<<"$out" | sed 's/^/    /'
  done
  stop_member "perf-$b"
}

# ---- the put workload at one value size
put_run() {
  local b=$1 size=$2 n ks out prof="" du_load du_compact du_defrag size_load size_compact size_defrag inuse rev
  n=$((DB_MIB * 1024 * 1024 / size))
  ((n > MAX_PUTS)) && n=$MAX_PUTS
  ks=$((n / OVERWRITE)); ((ks < 1)) && ks=1
  fresh_member "put-$b-$size" --quota-backend-bytes $((16 << 30))
  note "$b: $n puts of $size-byte values over $ks keys, $CONC clients"
  local profpid=""
  if [[ $size == "${SIZES##* }" ]]; then
    prof=$RESULTS/profile-$b-$size.txt
    # 10 s of CPU during the load, after 1 s of warm-up (a --quick load may end sooner); pprof symbolizes against the binary.
    (sleep 1 && go tool pprof -top -seconds 10 "$ETCD_BIN" "$SINGLE_URL/debug/pprof/profile" >"$prof" 2>&1) &
    profpid=$!
    LIB_PIDS+=("$profpid")
  fi
  out=$("$ETCDLOAD" put -endpoints "$SINGLE_URL" -prefix k/ -n "$n" -keyspace "$ks" -size "$size" \
    -conc "$CONC" -timeout 60s 2>>"$LIB_WORK/logs/etcdload.log") || die "the put load failed: $out"
  note "  $out"
  [[ $(lib_field "$out" failed) -eq 0 ]] || note "  WARNING: $(lib_field "$out" failed) puts failed: $(lib_field "$out" last_error)"
  [[ -n $profpid ]] && wait "$profpid"
  du_load=$(lib_backend_du "$DIR"); size_load=$(status_field dbSize); inuse=$(status_field dbSizeInUse)
  rev=$(status_field header.revision)
  etcdctl --endpoints="$SINGLE_URL" --command-timeout=600s compact "$rev" --physical >/dev/null ||
    die "compact failed"
  du_compact=$(settle_du); size_compact=$(status_field dbSize)
  etcdctl --endpoints="$SINGLE_URL" --command-timeout=600s defrag >/dev/null || die "defrag failed"
  du_defrag=$(settle_du); size_defrag=$(status_field dbSize)
  note "  du KiB: load $du_load, compacted $du_compact, defragmented $du_defrag; dbSize: $size_load (in use $inuse), $size_compact, $size_defrag"
  RATE[$b/$size]=$(lib_field "$out" puts_per_s)
  PUT_ROWS+=("| $b | $((size / 1024)) KiB | $(lib_field "$out" puts) | $(lib_field "$out" puts_per_s) | $(lib_field "$out" p50_ms) | $(lib_field "$out" p99_ms) | $(mib "$du_load") | $(mib $((size_load / 1024))) | $(mib "$du_compact") | $(mib "$du_defrag") |")
  stop_member "put-$b-$size"
}

note "bench: backends [$BACKENDS], sizes [$SIZES], $DB_MIB MiB per size (at most $MAX_PUTS puts), overwrite ${OVERWRITE}x, check perf [$PERF]"
note "  etcd $ETCD_BIN; data under $DATA_ROOT; results to $RESULTS"
for b in $BACKENDS; do
  use_backend "$b"
  perf_run "$b"
  for s in $SIZES; do put_run "$b" "$s"; done
done

{
  echo "# etcd on bbolt and on cairn: $(date -u +%Y-%m-%d), $(nproc) cores, $(uname -r)"
  echo
  echo "\`integrations/etcd/bench.sh --db-mib $DB_MIB --max-puts $MAX_PUTS --sizes \"$SIZES\" --overwrite $OVERWRITE --conc $CONC\`:"
  echo "one member, incompressible values, the key space 1/$OVERWRITE of the puts. Sizes in MiB:"
  echo "du of member/snap after the load, etcd's dbSize, du after \`etcdctl compact --physical\`"
  echo "(no defrag), du after \`etcdctl defrag\`."
  echo
  echo "| backend | value | puts | puts/s | p50 ms | p99 ms | on disk | etcd dbSize | after compact | after defrag |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${PUT_ROWS[@]}"
  for s in $SIZES; do
    if [[ -n ${RATE[cairn/$s]:-} && -n ${RATE[bbolt/$s]:-} && ${RATE[bbolt/$s]} -gt 0 ]]; then
      echo
      echo "$((s / 1024)) KiB values: cairn/bbolt puts/s = $(awk -v a="${RATE[cairn/$s]}" -v b="${RATE[bbolt/$s]}" 'BEGIN { printf "%.2f", a / b }')"
    fi
  done
  if [[ ${#PERF_ROWS[@]} -gt 0 ]]; then
    echo
    echo "\`etcdctl check perf\` (60 s per load; s: 150 writes/s from 50 clients, m: 1000 from 200, l: 8000 from 500):"
    echo
    echo "| backend | load | writes/s | slowest | stddev | verdict |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${PERF_ROWS[@]}"
  fi
  for f in "$RESULTS"/profile-*.txt; do
    [[ -f $f ]] || continue
    echo
    echo "CPU profile, $(basename "$f" .txt) (10 s during the load, \`go tool pprof -top\`):"
    echo
    echo '```'
    grep -A 25 -m1 '^ *flat ' "$f" || head -n 30 "$f"
    echo '```'
  done
} >"$RESULTS/results.md"
cat "$RESULTS/results.md"
note "bench took $((SECONDS - START))s; results in $RESULTS/results.md"
