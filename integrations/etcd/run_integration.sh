#!/usr/bin/env bash
# The proof of the cairn backend by etcd's own tests (issue 59; docs/etcd.md):
#   integrations/etcd/run_integration.sh OUTDIR [--long]
# OUTDIR is what build.sh built. In order:
#   1. the backend's own Go tests (go test -run Cairn ./mvcc/backend);
#   2. etcd's unit tests of mvcc, lease, auth and etcdserver on cairn;
#   3. the built etcd on cairn: its marker file, etcdctl snapshot save;
#   4. a named subset of etcd's integration tests, first on bbolt, then on
#      cairn, in this one job. A test that passes on bbolt and fails on cairn
#      runs once more on cairn: failing again, it fails the run; passing, it
#      is counted as passed and named FLAKY. One that fails on bbolt is not
#      counted (etcd's own flakiness here), whatever cairn did.
# A test that hangs is stopped after 120 s. --long adds the slower tests
# (LONG_TESTS). Last line: "N passed, N failed" (steps 1-3 count one each,
# step 4 one per test and backend; "failed" is what fails the run), then
# how many were not counted and how many were flaky.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [--long]" >&2; exit 2; }
out="$(cd "$1" && pwd)" || exit 2
long=0
[ "${2:-}" = "--long" ] && long=1
[ -x "$out/bin/integration.test" ] && [ -f "$out/env.sh" ] || {
  echo "cairn-etcd: $out has no build: run integrations/etcd/build.sh $1 first" >&2; exit 2; }
source "$out/env.sh"

# Together they call every backend method: puts, ranges with limits, txns,
# deletes, compaction (UnsafeDelete through mvcc's compaction), hash and
# hash-KV (Hash, UnsafeForEach), watch (ConcurrentReadTx of old revisions),
# lease (the lease bucket, UnsafeForEach at recovery), restart (a reopen),
# snapshots sent to a slow member and installed (Snapshot, WriteTo, Size,
# the install), member changes after a full rotation, the space quota and
# its alarm (Size), defragment (Defrag), a corrupted store's alarm (the test
# writes through backend.New/NewDefaultBackend, which pick cairn too), and
# network partitions of five and four members.
TESTS=(
  # puts, ranges with limits, txns, deletes
  TestV3PutOverwrite TestV3PutRestart TestV3RangeRequest TestV3DeleteRange
  TestV3TxnRevision TestV3TxnRangeCompare TestV3TxnDuplicateKeys
  TestV3TooLargeRequest TestV3LargeRequests
  # compaction, hashes, defrag, the corruption alarm
  TestV3CompactCurrentRev TestV3HashKV TestV3Hash TestV3HashRestart
  TestV3CorruptAlarm TestV3CorruptAlarmWithLeaseCorrupted
  TestV3MaintenanceDefragmentInflightRange TestMetricDbSizeBoot
  # watch, a slow member restored from a snapshot
  TestV3WatchFromCurrentRevision TestV3WatchCancelUnsynced
  TestV3WatchMultipleEventsTxnUnsynced TestV3WatchWithPrevKV
  TestV3WatchRestoreSnapshotUnsync
  # leases
  TestV3LeaseRevoke TestV3LeaseGrantByID TestV3LeaseExists TestV3LeaseLeases
  TestV3LeaseRecoverAndRevoke TestV3LeaseRevokeAndRecover
  TestV3LeaseRecoverKeyWithDetachedLease TestV3LeaseNegativeID
  # restarts, snapshots, membership
  TestRestartMember TestSnapshotAndRestartMember TestIssue2746 TestIssue2904
  TestIssue3699 TestAddMemberAfterClusterFullRotation TestForceNewCluster
  TestRestartRemoved
  # the space quota and its alarm
  TestV3StorageQuotaApply TestV3StorageQuotaAPI TestV3AlarmDeactivate
  TestMetricQuotaBackendBytes
  # partitions
  TestNetworkPartition5MembersLeaderInMajority
  TestNetworkPartition5MembersLeaderInMinority
  # election, STM, auth across a restart
  TestV3ElectionCampaign TestSTMConflict TestV3AuthRestartMember
)
# --long: slower ones (TestV3LeaseCheckpoint alone takes a minute).
LONG_TESTS=(
  TestV3LeaseCheckpoint TestIssue2746WithThree TestDecreaseClusterSizeOf5
  TestNetworkPartition4Members TestV3WatchMultipleEventsPutUnsynced
  TestV3LeaseFailover TestV3LeaseKeepAlive TestV3LeaseExpire
  TestElectionFailover TestMutexMultiNode
)
# Left out, with the reason (2026-12-07):
#   No test of package integration opens a bbolt file itself: the two that
#   write a member's store directly (TestV3CorruptAlarm*) call backend.New
#   and NewDefaultBackend, which pick cairn too, so they are in.
#   TestMetricDbSizeDefrag, TestMetricDbSizeDefragDebugging: they assert
#   bbolt's page accounting, that the in-use size drops as soon as an etcd
#   compaction commits (bbolt frees the pages in that commit). cairn's
#   deletes are tombstones until its background compaction and value-log GC
#   run, so its in-use estimate drops later (docs/etcd.md, "Size").
#   The v2 tests (TestV2*): the v2 store is not kept in the backend.
#   clientv3/snapshot's tests (another package) save and restore a snapshot
#   with etcdctl's snapshot library, which reads the stream as a bbolt file.
[ $long = 1 ] && TESTS+=("${LONG_TESTS[@]}")

# What this script starts (the smoke member, the test binaries): stopped on
# every exit.
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# check RC: counts a pass (RC 0) or a failure of one of steps 1-3.
passed=0 failed=0
check() {
  if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fail=1; fi
}

fail=0
echo "== cairn backend unit tests (go test -run Cairn ./mvcc/backend)"
start=$SECONDS
if (cd "$ETCD_SRC" && CAIRN_DOCS="$root/docs/etcd.md" go test -count=1 -run Cairn ./mvcc/backend); then
  echo "cairn backend unit tests: passed ($((SECONDS - start)) s)"; check 0
else
  echo "cairn backend unit tests: FAILED"; check 1
fi

# etcd's own unit tests above the backend, on cairn (build.sh points their
# test stores at the selecting constructors). Not mvcc/backend's own tests:
# they reach into bbolt (its *bolt.DB, bolt.Open, its defrag).
echo "== etcd unit tests on cairn (mvcc, lease, auth, etcdserver)"
start=$SECONDS
rm -rf "$out/tmp" && mkdir -p "$out/tmp"
if (cd "$ETCD_SRC" && TMPDIR="$out/tmp" CAIRN_ETCD_BACKEND=cairn go test -count=1 \
    ./mvcc ./lease ./lease/leasehttp ./auth ./etcdserver); then
  echo "etcd unit tests on cairn: passed ($((SECONDS - start)) s)"; check 0
else
  echo "etcd unit tests on cairn: FAILED"; check 1
fi
rm -rf "$out/tmp"

# The built etcd honours the selection: a member started with
# CAIRN_ETCD_BACKEND=cairn keeps a marker at member/snap/db, and etcdctl's
# snapshot save gets the cairn stream.
echo "== etcd binary on cairn: marker and snapshot stream"
smoke="$out/tmp-smoke"
rm -rf "$smoke" && mkdir -p "$smoke"
port=$((20000 + $$ % 20000))
CAIRN_ETCD_BACKEND=cairn "$out/bin/etcd" --data-dir "$smoke/data" --name smoke \
  --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
  --listen-peer-urls "http://127.0.0.1:$((port + 1))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
  --initial-cluster "smoke=http://127.0.0.1:$((port + 1))" >"$smoke/etcd.log" 2>&1 &
etcd_pid=$!
pids+=("$etcd_pid")
ctl() { ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$port" --command-timeout=5s "$@"; }
ok=0
for _ in $(seq 50); do ctl put smoke-key smoke-value >/dev/null 2>&1 && { ok=1; break; }; sleep 0.2; done
if [ $ok = 1 ] && [ "$(ctl get --print-value-only smoke-key)" = smoke-value ] &&
   head -c 13 "$smoke/data/member/snap/db" | grep -q '^cairn v1 dir=' &&
   ctl snapshot save "$smoke/snap" >/dev/null 2>&1 && head -c 8 "$smoke/snap" | grep -q '^CAIRNSNP'; then
  echo "etcd binary on cairn: passed"; check 0
else
  echo "etcd binary on cairn: FAILED (log $smoke/etcd.log)"; check 1
fi
kill "$etcd_pid" 2>/dev/null; wait "$etcd_pid" 2>/dev/null
[ $fail = 0 ] && rm -rf "$smoke"

result() { # TEST LOG -> PASS, FAIL or NONE (did not finish)
  local r
  r=$(grep -E "^--- (PASS|FAIL|SKIP): $1 " "$2" | tail -1 | awk '{print $2}' | tr -d :)
  echo "${r:-NONE}"
}
limit=120 # seconds a test may run; the longest, TestV3LeaseCheckpoint, takes 61
# run_one BACKEND TEST LOG: one test in a process of its own.
run_one() {
  (cd "$ETCD_SRC/integration" && CAIRN_ETCD_BACKEND="$1" timeout -s QUIT $limit \
      "$out/bin/integration.test" -test.v -test.run "^$2\$") >>"$3" 2>&1
}
# run_subset BACKEND LOG: the subset in one process, as etcd runs its tests
# (some read metrics that earlier tests of the process created: in a
# process of its own TestV3WatchRestoreSnapshotUnsync finds no snapshot
# gauge yet unless the send has begun). A test that hangs (TestIssue2904
# waits without a deadline for a member to apply its own removal, and under
# a load of 30 on 2 cores once waited for good, 2026-12-07) is stopped after
# $limit s with no test finishing, counted as failed, and the tests after
# it run in a new process.
run_subset() {
  local be="$1" log="$2" t0=$SECONDS todo=("${TESTS[@]}") next t pid n m last hung re
  echo "== etcd integration subset (${#TESTS[@]} tests) on $be"
  : >"$log"
  while [ ${#todo[@]} -gt 0 ]; do
    re="^($(IFS='|'; echo "${todo[*]}"))\$"
    (cd "$ETCD_SRC/integration" && CAIRN_ETCD_BACKEND="$be" exec "$out/bin/integration.test" \
        -test.v -test.run "$re") >>"$log" 2>&1 &
    pid=$! n=-1 last=$SECONDS
    pids+=("$pid")
    while kill -0 $pid 2>/dev/null; do
      sleep 2
      m=$(grep -c '^--- ' "$log")
      if [ "$m" != "$n" ]; then
        n=$m last=$SECONDS
      elif [ $((SECONDS - last)) -ge $limit ]; then
        echo "(no test finished in $limit s: stopping the process)" >>"$log"
        kill -QUIT $pid 2>/dev/null; sleep 3; kill -KILL $pid 2>/dev/null
      fi
    done
    wait $pid 2>/dev/null
    hung=$(grep -E '^=== RUN   [^/]+$' "$log" | tail -1 | awk '{print $3}')
    next=()
    for t in "${todo[@]}"; do
      [ "$(result "$t" "$log")" != NONE ] && continue
      if [ "$t" = "$hung" ]; then echo "--- FAIL: $t (stopped)" >>"$log"; continue; fi
      next+=("$t")
    done
    [ ${#next[@]} -eq ${#todo[@]} ] && break # no progress: the binary does not run
    todo=("${next[@]}")
  done
  echo "$be: $((SECONDS - t0)) s (log $log)"
}
mkdir -p "$out/logs"
run_subset bbolt "$out/logs/integration-bbolt.log"
run_subset cairn "$out/logs/integration-cairn.log"

# A test that passes on bbolt and fails on cairn runs once more on cairn
# (log integration-cairn-retry.log): passing then, it is counted as passed
# and marked FLAKY in the table and in the closing lines.
uncounted=0 retried=()
rm -f "$out/logs/integration-cairn-retry.log"
printf '%-48s %-6s %-6s\n' test bbolt cairn
for t in "${TESTS[@]}"; do
  b=$(result "$t" "$out/logs/integration-bbolt.log")
  c=$(result "$t" "$out/logs/integration-cairn.log")
  note=""
  if [ "$b" = PASS ] && [ "$c" != PASS ]; then
    run_one cairn "$t" "$out/logs/integration-cairn-retry.log"
    if [ "$(result "$t" "$out/logs/integration-cairn-retry.log")" = PASS ]; then
      note="<- FLAKY on cairn: $c at first, PASS when run again (counted as passed)" c=FLAKY
      retried+=("$t")
    fi
  fi
  if [ "$b" != PASS ]; then
    # etcd's own failure on this machine: neither run is counted.
    uncounted=$((uncounted + 2))
    note="(fails on bbolt: flaky or broken here; not counted, cairn's result $c is not blamed)"
  else
    passed=$((passed + 1))
    case $c in
      PASS | FLAKY) passed=$((passed + 1)) ;;
      *) failed=$((failed + 1)) fail=1 note="<- FAILS ON CAIRN ONLY (twice)" ;;
    esac
  fi
  printf '%-48s %-6s %-6s %s\n' "$t" "$b" "$c" "$note"
done
if [ $fail != 0 ]; then
  echo "cairn-etcd: FAILED (a test that passes on bbolt fails on cairn, or a step above failed);"
  echo "  see $out/logs/integration-cairn.log"
fi
[ $uncounted != 0 ] &&
  echo "cairn-etcd: $((uncounted / 2)) test(s) failed on bbolt: not counted on either backend"
[ ${#retried[@]} != 0 ] &&
  echo "cairn-etcd: FLAKY on cairn (failed, then passed when run again): ${retried[*]}"
echo "$passed passed, $failed failed ($uncounted not counted, ${#retried[@]} flaky on cairn)"
exit $fail
