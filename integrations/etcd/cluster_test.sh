#!/usr/bin/env bash
# A three-member etcd cluster on 127.0.0.1 under load, with kill -9 at several points, including
# while a lagging member installs a snapshot (issue 59, item 3).
#
#   integrations/etcd/cluster_test.sh [--long] OUTDIR
#   CAIRN_ETCD_BACKEND=cairn integrations/etcd/cluster_test.sh OUTDIR
#
# OUTDIR is integrations/etcd/build.sh's output (OUTDIR/bin/etcd); etcdctl is Debian's (etcd-client).
# Each round kills one member, writes more while it is down than the leader keeps in its raft log
# (etcd 3.4 keeps 5000 entries behind its last snapshot, and --snapshot-count=100 snapshots every
# 100 entries), restarts it, and so makes the leader send it a database snapshot. It then checks:
#   - the leader's log says it sent a snapshot and the member's says it received and applied one;
#   - `etcdctl endpoint hashkv --cluster` agrees on all three members at one revision;
#   - every put that etcd acknowledged, in every round so far, is readable with its value on every
#     member (the reads during the load check the same thing on the fly, linearizably).
# Kill points: before the load, mid-load (the leader), right after restart, and while the member
# receives, and while it applies, the snapshot. --long repeats them with more data.
# Prints "N passed, N failed"; exits non-zero on any failure. About a minute on 2 cores (--long: ~4).

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=integrations/etcd/test_lib.sh
source "$HERE/test_lib.sh"

LONG=0
OUT_ARG=""
for a in "$@"; do
  case $a in
    --long) LONG=1 ;;
    *) lib_other_arg "$a" ;;
  esac
done

lib_init "$OUT_ARG" cluster
START=$SECONDS
# Bounded: the whole run must end; a hang anywhere is a failure, not a stuck CI job.
TIME_LIMIT=${CLUSTER_TIME_LIMIT:-$((LONG ? 1200 : 300))}
# Puts while a member is down: more than 5000 + 100 raft entries, so its log is compacted away.
DOWN_PUTS=${CLUSTER_DOWN_PUTS:-$((LONG ? 8000 : 6000))}
CONC=${CLUSTER_CONC:-24}
ROUNDS_REPEAT=$((LONG ? 3 : 1))

note "cluster test: backend=$BACKEND etcd=$ETCD_BIN work=$LIB_WORK"
lib_build_etcdload
lib_pick_ports 6

NAMES=(m1 m2 m3)
declare -A CURL PURL DATA
CLUSTER=""
for i in 0 1 2; do
  n=${NAMES[$i]}
  CURL[$n]=http://127.0.0.1:$((PORT_BASE + 2 * i))
  PURL[$n]=http://127.0.0.1:$((PORT_BASE + 2 * i + 1))
  DATA[$n]=$LIB_WORK/$n
  CLUSTER+="${CLUSTER:+,}$n=${PURL[$n]}"
done
ENDPOINTS="${CURL[m1]},${CURL[m2]},${CURL[m3]}"
ACKED=$LIB_WORK/acked

check_time() {
  ((SECONDS - START < TIME_LIMIT)) || die "time limit of ${TIME_LIMIT}s reached"
}

start_member() {
  local n=$1
  lib_start "$n" --name "$n" --data-dir "${DATA[$n]}" \
    --listen-client-urls "${CURL[$n]}" --advertise-client-urls "${CURL[$n]}" \
    --listen-peer-urls "${PURL[$n]}" --initial-advertise-peer-urls "${PURL[$n]}" \
    --initial-cluster "$CLUSTER" --initial-cluster-state new --initial-cluster-token cairn-cluster-test \
    --snapshot-count 100
}

# status: "name hex-id is-leader" for each running member (etcdctl's simple output; its JSON
# carries uint64 ids that jq would round).
status() {
  local n line
  for n in "${NAMES[@]}"; do
    lib_alive "$n" || continue
    line=$(etcdctl --endpoints="${CURL[$n]}" --command-timeout=3s endpoint status 2>/dev/null) || continue
    awk -F', ' -v n="$n" '{print n, $2, $5}' <<<"$line"
  done
}

# leader: prints the name of the current leader (empty when there is none).
leader() { status | awk '$3 == "true" {print $1; exit}'; }

# follower: prints a member that is not the leader.
follower() {
  local l n
  for _ in $(seq 1 50); do
    l=$(leader)
    if [[ -n $l ]]; then
      for n in "${NAMES[@]}"; do [[ $n != "$l" ]] && { echo "$n"; return; }; done
    fi
    sleep 0.2
  done
  die "no leader after 10s"
}

# pending NAME: snapshots member NAME's current process sent whose hold is not over yet. etcd 3.4
# keeps its raft log uncompacted for 30 s after each snapshot it sends (releaseDelayAfterSnapshot
# in etcdserver/server.go), so a member that falls behind a leader in that while catches up from
# the log and needs no snapshot. Each round therefore starts with a leader without such a hold.
pending() {
  local a b
  a=$(grep -c '"msg":"sending merged snapshot"' "${MEMBER_LOG[$1]}")
  b=$(grep -c '"msg":"sent merged snapshot"' "${MEMBER_LOG[$1]}")
  echo $((a - b))
}

# fresh_leader: makes the leader a member with no pending snapshot (etcdctl move-leader), waiting
# up to 45 s for one when all have one.
fresh_leader() {
  local l c n id t0=$SECONDS
  while ((SECONDS - t0 < 45)); do
    l=$(leader)
    if [[ -n $l ]]; then
      [[ $(pending "$l") -eq 0 ]] && return 0
      c=""
      for n in "${NAMES[@]}"; do
        if [[ $n != "$l" ]] && lib_alive "$n" && [[ $(pending "$n") -eq 0 ]]; then c=$n; break; fi
      done
      if [[ -n $c ]]; then
        id=$(status | awk -v c="$c" '$1 == c {print $2}')
        etcdctl --endpoints="${CURL[$l]}" --command-timeout=5s move-leader "$id" >/dev/null 2>&1 &&
          note "  moved leadership from $l to $c (a snapshot $l sent is still held)"
      fi
    fi
    sleep 0.5
  done
  note "  no leader without a pending snapshot after 45s: this round may catch up from the log"
}

# all_fresh: waits (up to 45 s) until no member holds a sent snapshot, for the round that kills
# the leader and so cannot choose the next one.
all_fresh() {
  local n busy t0=$SECONDS
  while ((SECONDS - t0 < 45)); do
    busy=0
    for n in "${NAMES[@]}"; do [[ $(pending "$n") -eq 0 ]] || busy=1; done
    [[ $busy -eq 0 ]] && return 0
    sleep 0.5
  done
  note "  a member still holds a sent snapshot after 45s"
}

# load PREFIX N [PROGRESS]: N puts of 1-4 KiB values, every tenth followed by a read of an
# acknowledged key; the acknowledged keys go to $ACKED, and with PROGRESS (a file in the temp dir)
# the running count of them. Fails (non-zero) when a read of an acknowledged put came back wrong
# or empty; the caller counts the failure, since a background load runs in a subshell.
load() {
  local prefix=$1 n=$2 out rc
  local progress=()
  [[ -n ${3:-} ]] && progress=(-progress "$3")
  out=$("$ETCDLOAD" put -endpoints "$ENDPOINTS" -prefix "$prefix" -n "$n" -conc "$CONC" \
    -size 1024 -maxsize 4096 -reads 0.1 -timeout 5s -acked "$ACKED" "${progress[@]}" \
    2>>"$LIB_WORK/logs/etcdload.log")
  rc=$?
  note "  load $prefix: $out"
  return "$rc"
}

# load_checked PREFIX N: load, counting a wrong read as a failure of the current round.
load_checked() {
  load "$@" || fail "$round: load $1: a read of an acknowledged put came back wrong or empty, or the client failed"
}

# wait_progress FILE COUNT SECONDS: waits until a background load acknowledged COUNT puts.
wait_progress() {
  local f=$1 count=$2 secs=$3 t0=$SECONDS v
  while ((SECONDS - t0 < secs)); do
    v=$(cat "$f" 2>/dev/null || echo 0)
    ((${v:-0} >= count)) && return 0
    sleep 0.05
  done
  return 1
}

# hashkv_agree SECONDS: etcdctl endpoint hashkv --cluster, until all three members report the
# same revision and hash. Revisions differ while a member catches up; a differing hash at one
# revision is a divergence and fails at once.
hashkv_agree() {
  local secs=$1 t0=$SECONDS js lines revs hashes
  while ((SECONDS - t0 < secs)); do
    js=$(etcdctl --endpoints="$ENDPOINTS" --command-timeout=5s endpoint hashkv --cluster -w json 2>/dev/null)
    if [[ -n $js ]]; then
      lines=$(jq -r '.[] | "\(.Endpoint) \(.HashKV.header.revision) \(.HashKV.hash)"' <<<"$js" 2>/dev/null)
      if [[ $(wc -l <<<"$lines") -eq 3 ]]; then
        revs=$(awk '{print $2}' <<<"$lines" | sort -u | wc -l)
        hashes=$(awk '{print $3}' <<<"$lines" | sort -u | wc -l)
        if [[ $revs -eq 1 && $hashes -eq 1 ]]; then
          HASHKV_LINE=$(awk '{print $2 ":" $3}' <<<"$lines" | head -n 1)
          return 0
        fi
        if [[ $revs -eq 1 && $hashes -ne 1 ]]; then
          note "  hashkv differs at one revision: $(tr '\n' ';' <<<"$lines")"
          return 1
        fi
      fi
    fi
    sleep 0.5
  done
  note "  hashkv did not agree in ${secs}s: $(tr '\n' ';' <<<"${lines:-}")"
  return 1
}

# count_msg NAME MSG: how many times MSG appears in all of member NAME's logs.
count_msg() {
  cat "$LIB_WORK"/logs/"$1".*.log 2>/dev/null | grep -c "\"msg\":\"$2\""
}

# snapshot_sent_total: "sent database snapshot" lines over all members' logs.
snapshot_sent_total() {
  local n t=0
  for n in "${NAMES[@]}"; do t=$((t + $(count_msg "$n" "sent database snapshot"))); done
  echo "$t"
}

# install_stage NAME: the last snapshot-install step member NAME logged in its current log.
install_stage() {
  grep -oE '"msg":"(receiving database snapshot|saved database snapshot to disk|received and saved database snapshot|applying snapshot|restoring mvcc store|restored mvcc store|applied snapshot)"' \
    "${MEMBER_LOG[$1]}" | tail -n 1 | sed 's/"msg"://; s/"//g'
}

# kill_on_log NAME MSG SECONDS: kill -9 member NAME as soon as its log shows MSG.
kill_on_log() {
  local n=$1 msg=$2 secs=$3 tailpid
  if grep -q -m1 "\"msg\":\"$msg\"" < <(exec timeout "$secs" tail -n +1 -F "${MEMBER_LOG[$n]}" 2>/dev/null); then
    tailpid=$!
    lib_kill9 "$n"
    kill "$tailpid" 2>/dev/null
    return 0
  fi
  lib_kill9 "$n"
  return 1
}

# settle NAME ROUND: after member NAME's restart, checks that a snapshot went from the leader to it,
# that hashkv agrees, and that every acked put is on every member. SENT_BEFORE, RECV_BEFORE and
# APPLIED_BEFORE are the snapshot counters taken when it went down (mark_down).
settle() {
  local n=$1 round=$2
  check_time
  if ! lib_wait_ready "$n" "${CURL[$n]}" 60; then
    fail "$round: $n did not come back after restart"
    return
  fi
  local sent recv applied
  sent=$(snapshot_sent_total)
  recv=$(count_msg "$n" "received and saved database snapshot")
  applied=$(count_msg "$n" "applied snapshot")
  # The member may report healthy before the snapshot arrives: give it a bounded while.
  for _ in $(seq 1 100); do
    ((recv > RECV_BEFORE && applied > APPLIED_BEFORE)) && break
    sleep 0.2
    sent=$(snapshot_sent_total)
    recv=$(count_msg "$n" "received and saved database snapshot")
    applied=$(count_msg "$n" "applied snapshot")
  done
  if ((sent > SENT_BEFORE && recv > RECV_BEFORE && applied > APPLIED_BEFORE)); then
    pass "$round: $n caught up by snapshot (sent $((sent - SENT_BEFORE)), received $((recv - RECV_BEFORE)), applied $((applied - APPLIED_BEFORE)))"
  else
    fail "$round: $n did not catch up by snapshot (sent $((sent - SENT_BEFORE)), received $((recv - RECV_BEFORE)), applied $((applied - APPLIED_BEFORE)))"
  fi
  if hashkv_agree 60; then
    pass "$round: hashkv agrees on all three members (revision:hash $HASHKV_LINE)"
  else
    fail "$round: hashkv does not agree"
  fi
  verify_all "$round"
}

# verify_all ROUND: every acknowledged put of every round so far, on every member (serializable
# reads, so each member answers from its own backend; the end checks once through the quorum).
verify_all() {
  local round=$1 n out bad=0
  sort -u "$ACKED" -o "$ACKED"
  for n in "${NAMES[@]}"; do
    out=$("$ETCDLOAD" verify -endpoints "${CURL[$n]}" -prefix r -acked "$ACKED" -size 1024 -maxsize 4096 -serializable 2>>"$LIB_WORK/logs/etcdload.log") || bad=1
    note "  verify $n: $out"
  done
  if [[ $bad -eq 0 ]]; then
    pass "$round: all $(wc -l <"$ACKED") acknowledged puts readable with their values on all three members"
  else
    fail "$round: acknowledged puts missing or wrong (see etcdload.log)"
  fi
}

mark_down() { # counters before member $1 goes down
  SENT_BEFORE=$(snapshot_sent_total)
  RECV_BEFORE=$(count_msg "$1" "received and saved database snapshot")
  APPLIED_BEFORE=$(count_msg "$1" "applied snapshot")
}

# ---- the cluster
for n in "${NAMES[@]}"; do start_member "$n"; done
for n in "${NAMES[@]}"; do
  lib_wait_ready "$n" "${CURL[$n]}" 60 || die "cluster did not start (member $n)"
done
for n in "${NAMES[@]}"; do lib_check_backend "${DATA[$n]}"; done
note "cluster up on ports $PORT_BASE-$((PORT_BASE + 5)), leader $(leader)"
: >"$ACKED"
round=start
load_checked r0/ 500
hashkv_agree 30 && pass "start: hashkv agrees ($HASHKV_LINE)" || fail "start: hashkv does not agree"

# snapdir NAME: member/snap's entries other than raft's .snap files (the backend and temp files).
snapdir() { ls "${DATA[$1]}/member/snap" | grep -v '\.snap$' | tr '\n' ' '; }

# follower_down_and_back TITLE: the start of rounds 2-5: a follower of a leader without a held
# snapshot is killed, misses DOWN_PUTS puts, and is restarted. Sets R, round and v.
follower_down_and_back() {
  R=$((R + 1)); round="round $R ($1)"
  fresh_leader; v=$(follower); note "$round: kill -9 $v"
  mark_down "$v"; lib_kill9 "$v"
  load_checked "r$R/" "$DOWN_PUTS"
  lib_restart "$v"
}

R=0
for rep in $(seq 1 "$ROUNDS_REPEAT"); do
  # 1. Mid-load: the leader, while puts are in flight; the client fails over. The new leader is
  # elected, not chosen, so no member may hold a sent snapshot (see pending).
  R=$((R + 1)); round="round $R (kill leader mid-load)"
  all_fresh
  v=$(leader); [[ -n $v ]] || v=$(follower)
  prog=$LIB_WORK/progress.$R
  load "r$R/" $((DOWN_PUTS + 2000)) "$prog" &
  loadpid=$!
  LIB_PIDS+=("$loadpid")
  if wait_progress "$prog" 1500 60; then
    note "$round: kill -9 $v (leader) at $(cat "$prog") acked puts"
  else
    note "$round: load made no progress; kill -9 $v anyway"
  fi
  mark_down "$v"; lib_kill9 "$v"
  wait "$loadpid" || fail "$round: load r$R/: a read of an acknowledged put came back wrong or empty, or the client failed"
  note "$round: new leader $(leader)"
  lib_restart "$v"
  settle "$v" "$round"

  # 2. Before the load: a follower is down for the whole of it, and comes back while puts go on.
  follower_down_and_back "kill before load"
  load_checked "r$R.tail/" 500
  settle "$v" "$round"

  # 3. Right after restart: killed again within half a second, before or while the snapshot
  # arrives, then restarted.
  follower_down_and_back "kill right after restart"
  sleep 0.$((RANDOM % 5 + 1))
  lib_kill9 "$v"
  note "$round: killed $v again; last install step it logged: $(install_stage "$v")"
  lib_restart "$v"
  settle "$v" "$round"

  # 4, 5. During a snapshot install: killed as soon as its log shows the step, then restarted.
  # The snapshot holds every round so far (tens of MiB), so the transfer takes a while.
  steps=("receiving database snapshot" "applying snapshot")
  # --long adds the steps between: the received file renamed into place, and the mvcc restore.
  ((LONG)) && steps+=("received and saved database snapshot" "restoring mvcc store")
  for step in "${steps[@]}"; do
    follower_down_and_back "kill at \"$step\""
    if kill_on_log "$v" "$step" 60; then
      stage=$(install_stage "$v")
      note "$round: killed $v; last install step in its log: ${stage:-none}; member/snap holds: $(snapdir "$v")"
      pass "$round: $v killed during the snapshot install (after \"$stage\")"
    else
      fail "$round: $v never logged \"$step\" within 60s"
    fi
    # It must restart from whatever the kill left, and catch up (by a new snapshot if needed).
    lib_restart "$v"
    if lib_wait_ready "$v" "${CURL[$v]}" 60; then
      if hashkv_agree 60; then
        pass "$round: hashkv agrees after restart ($HASHKV_LINE)"
      else
        fail "$round: hashkv does not agree after restart"
      fi
      verify_all "$round"
    else
      fail "$round: $v did not restart after being killed during the snapshot install"
    fi
  done
  check_time
done

# Every member's view, and the quorum's, at the end.
out=$("$ETCDLOAD" verify -endpoints "$ENDPOINTS" -prefix r -acked "$ACKED" -size 1024 -maxsize 4096 2>>"$LIB_WORK/logs/etcdload.log") &&
  pass "end: $(wc -l <"$ACKED") acknowledged puts readable linearizably ($out)" ||
  fail "end: linearizable verify failed ($out)"
# An operator's backup must keep working: `etcdctl snapshot save` checks that the stream ends in a
# sha256 on a 512-byte boundary (clientv3/snapshot's hasChecksum), which a bbolt file always does.
if etcdctl --endpoints="${CURL[m1]}" --command-timeout=120s snapshot save "$LIB_WORK/backup.db" >"$LIB_WORK/logs/snapshot-save.log" 2>&1; then
  pass "end: etcdctl snapshot save from m1 ($(stat -c %s "$LIB_WORK/backup.db") bytes)"
else
  fail "end: etcdctl snapshot save from m1 failed: $(grep -m1 -i error "$LIB_WORK/logs/snapshot-save.log")"
fi
rm -f "$LIB_WORK/backup.db"
for n in "${NAMES[@]}"; do
  lib_alive "$n" || fail "end: member $n is not running"
  grep -h '"level":"\(panic\|fatal\)"' "$LIB_WORK"/logs/"$n".*.log | head -n 3 | cut -c1-300 | sed 's/^/  panic or fatal in log: /'
done
note "backend sizes: $(for n in "${NAMES[@]}"; do printf '%s=%sKiB ' "$n" "$(lib_backend_du "${DATA[$n]}")"; done)"
# What the kills left in member/snap: a receive cut short leaves snap.SaveDBFrom's tmpNNN (etcd
# removes tmp* at its next start), an install cut short the backend's own leftovers.
for n in "${NAMES[@]}"; do note "member/snap of $n (without .snap files): $(snapdir "$n")"; done
note "cluster test took $((SECONDS - START))s"
lib_summary
