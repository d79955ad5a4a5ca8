#!/usr/bin/env bash
# scripts/test's etcd stage (docs/etcd.md, "Tests"):
#   integrations/etcd/ci.sh [--long] [OUTDIR]     (OUTDIR: default build/etcd)
# Builds etcd with the cairn backend into OUTDIR (build.sh; libcairn_c.so from build/ci or
# CAIRN_LIB_DIR), then runs:
#   1. run_integration.sh: the backend's and etcd's unit tests, the integration subset on bbolt
#      then on cairn (--long: the longer subset);
#   2. cluster_test.sh on cairn (--long: its long form, on cairn and on bbolt);
#   3. fault_test.sh on cairn (--long: on bbolt too).
# Each script's output goes to OUTDIR/logs/ci-*.log; run_integration.sh's is printed whole (its
# table of tests), the others' result lines (PASS, FAIL, KNOWN, SKIP), and after each its
# "N passed, N failed" line, its time, and on failure the end of its log. Each script runs under
# a time limit of its own; the scripts' traps stop what they started. Exits non-zero if the build
# or any script failed. 3m18s on 2 cores with nothing else running, from an empty OUTDIR with
# Go's build cache warm (2026-12-07; docs/etcd.md, "Tests").
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
long=0
out="$root/build/etcd"
for arg in "$@"; do
  case "$arg" in
    --long) long=1 ;;
    -*) echo "usage: $0 [--long] [OUTDIR]" >&2; exit 2 ;;
    *) out="$arg" ;;
  esac
done
long_arg=()
[ $long = 1 ] && long_arg=(--long)
start=$SECONDS
status=0
summary=()

elapsed() { echo "$(($1 / 60))m$(($1 % 60))s"; }

# run NAME LIMIT_S BACKEND SHOW CMD...: runs CMD under a time limit with CAIRN_ETCD_BACKEND set
# to BACKEND ("-": left as it is), output to OUTDIR/logs/ci-NAME.log; SHOW "all" prints the output
# as it comes, "results" only the result lines. Records the "N passed, N failed" line.
run() {
  local name=$1 limit=$2 be=$3 show=$4 t0=$SECONDS rc line log
  shift 4
  log="$out/logs/ci-$name.log"
  echo "== $name (limit $(elapsed "$limit"))"
  local envs=()
  [ "$be" != - ] && envs=("CAIRN_ETCD_BACKEND=$be")
  if [ "$show" = all ]; then
    env "${envs[@]}" timeout -k 30 "$limit" "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
  else
    env "${envs[@]}" timeout -k 30 "$limit" "$@" >"$log" 2>&1
    rc=$?
    grep -E '(PASS|FAIL|KNOWN|SKIP)(PED)?[: ]' "$log" | cut -c1-300
  fi
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  [ "$rc" = 124 ] && line="${line:+$line; }stopped at the time limit of $(elapsed "$limit")"
  [ -n "$line" ] || line="no result line (exit $rc)"
  if [ "$rc" != 0 ]; then
    status=1
    if [ "$show" != all ]; then
      echo "---- last lines of $log"
      tail -n 40 "$log" | cut -c1-300
    fi
  fi
  echo "$name: $line ($(elapsed $((SECONDS - t0))), exit $rc)"
  summary+=("$(printf '%-24s %s (%s)%s' "$name" "$line" "$(elapsed $((SECONDS - t0)))" \
    "$([ "$rc" != 0 ] && echo " FAILED")")")
}

echo "== build etcd with the cairn backend into $out"
t0=$SECONDS
if ! "$here/build.sh" "$out"; then
  echo "cairn-etcd: the build failed" >&2
  exit 1
fi
echo "build: $(elapsed $((SECONDS - t0)))"
mkdir -p "$out/logs"

if [ $long = 1 ]; then
  run integration 2400 - all "$here/run_integration.sh" "$out" --long
else
  run integration 900 - all "$here/run_integration.sh" "$out"
fi
backends=(cairn)
[ $long = 1 ] && backends+=(bbolt)
for be in "${backends[@]}"; do
  # cluster_test.sh stops itself at 300 s (--long 1200 s); these limits are the last resort.
  run "cluster-$be" $((long ? 1500 : 420)) "$be" results "$here/cluster_test.sh" "${long_arg[@]}" "$out"
  run "fault-$be" 300 "$be" results "$here/fault_test.sh" "$out"
done

echo
echo "etcd stage:"
printf '  %s\n' "${summary[@]}"
echo "etcd stage took $(elapsed $((SECONDS - start)))"
# A script that renamed a file over /dev/null once replaced it (2026-12-07): check it is still one.
[ -c /dev/null ] || { echo "cairn-etcd: /dev/null is no longer a character device" >&2; status=1; }
exit $status
