#!/usr/bin/env bash
# Runs every fuzz target of tests/fuzz for a fixed time over a scratch copy of
# its seed corpus (the checked-in corpus is never modified) and prints the
# executions of each. Exit status: 0 when every target ran clean, 1 when any
# found a crash (its reproducer is kept under the scratch directory, printed),
# 2 for bad usage or a missing target.
#
#   tests/fuzz/run_fuzz.sh <build-dir> <seconds-per-target>
# e.g. cmake --preset fuzz && cmake --build build/fuzz && tests/fuzz/run_fuzz.sh build/fuzz 60
set -uo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 <build-dir> <seconds-per-target>" >&2
  exit 2
fi
build=$(cd "$1" && pwd) || { echo "run_fuzz: no build directory $1" >&2; exit 2; }
seconds=$2
here=$(cd "$(dirname "$0")" && pwd)
targets="wal_reader_fuzz sst_block_fuzz sst_footer_index_fuzz bloom_filter_fuzz sst_table_fuzz
         vlog_record_fuzz manifest_fuzz api_ops_fuzz"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/cairn_fuzz.XXXXXX")
failed=0
for t in $targets; do
  bin="$build/tests/fuzz/$t"
  if [ ! -x "$bin" ]; then
    echo "run_fuzz: $bin is missing (configure with the fuzz preset and build it)" >&2
    exit 2
  fi
  mkdir -p "$scratch/$t/corpus" "$scratch/$t/artifacts"
  if [ -d "$here/corpus/$t" ]; then cp -r "$here/corpus/$t/." "$scratch/$t/corpus/"; fi
  (cd "$scratch/$t" &&
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$bin" -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 \
      -timeout=25 -artifact_prefix="$scratch/$t/artifacts/" corpus >"$scratch/$t/log" 2>&1)
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$scratch/$t/log" | grep -o '[0-9]*$')
  if [ $rc -eq 0 ]; then
    printf 'run_fuzz: %-22s %10s executions in %ss: clean\n' "$t" "${execs:-?}" "$seconds"
  else
    failed=1
    printf 'run_fuzz: %-22s FAILED (exit %d) after %s executions; log and reproducer: %s\n' \
      "$t" "$rc" "${execs:-?}" "$scratch/$t" >&2
    tail -n 40 "$scratch/$t/log" >&2
  fi
done
if [ $failed -eq 0 ]; then rm -rf "$scratch"; fi
exit $failed
