# Shared helpers of integrations/etcd/cluster_test.sh, fault_test.sh and bench.sh (sourced, not run).
#
# Every script here runs real etcd processes on 127.0.0.1 only, under one temp dir in /tmp, and
# its EXIT trap kills the processes it started (by pid), unmounts what it mounted and removes the
# temp dir, on every exit path: a test that leaves etcd members behind breaks the next one.
#
# Backend: CAIRN_ETCD_BACKEND=cairn selects the cairn backend of an etcd built by
# integrations/etcd/build.sh; unset or bbolt keeps bbolt. The variable is inherited by every etcd
# started here. An etcd without the cairn backend ignores it, so cairn runs check that a cairn
# directory really appeared (lib_check_backend) rather than silently testing bbolt.

set -o pipefail

LIB_PASSED=0
LIB_FAILED=0
LIB_PIDS=()      # every etcd (or helper) pid started here: the trap kills these and no others
LIB_MOUNTS=()    # tmpfs mounts to unmount in the trap
LIB_WORK=""
declare -A MEMBER_PID MEMBER_LOG MEMBER_STARTS MEMBER_ARGS

note() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() {
  printf '[%s] FATAL: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2
  exit 1
}

pass() { LIB_PASSED=$((LIB_PASSED + 1)); note "PASS: $*"; }
fail() { LIB_FAILED=$((LIB_FAILED + 1)); note "FAIL: $*"; }

# lib_other_arg ARG: the arguments every script takes the same way: -h/--help prints the script's
# opening comment, another option is an error, a word is OUTDIR (sets OUT_ARG).
lib_other_arg() {
  case $1 in
    -h | --help) sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see $0 --help)" ;;
    *) OUT_ARG=$1 ;;
  esac
}

# lib_init OUTDIR NAME: checks the tools, makes the temp dir and installs the trap.
lib_init() {
  local outdir=$1 name=$2
  [[ -n $outdir ]] || die "usage: $0 OUTDIR (the build directory of integrations/etcd/build.sh, holding bin/etcd)"
  ETCD_BIN=$(cd "$outdir" 2>/dev/null && pwd)/bin/etcd
  [[ -x $ETCD_BIN ]] || die "no etcd binary at $outdir/bin/etcd (build it with integrations/etcd/build.sh $outdir)"
  OUTDIR=$(cd "$outdir" && pwd)
  BACKEND=${CAIRN_ETCD_BACKEND:-bbolt}
  case $BACKEND in bbolt | cairn) ;; *) die "CAIRN_ETCD_BACKEND=$BACKEND: expected bbolt or cairn" ;; esac
  export CAIRN_ETCD_BACKEND=$BACKEND
  command -v etcdctl >/dev/null || die "etcdctl not found (Debian package etcd-client)"
  command -v jq >/dev/null || die "jq not found (Debian package jq)"
  command -v go >/dev/null || die "go not found (Debian package golang-go)"
  export ETCDCTL_API=3
  LIB_WORK=$(mktemp -d "/tmp/cairn-etcd-$name.XXXXXX") || die "mktemp failed"
  mkdir -p "$LIB_WORK/logs" "$LIB_WORK/bin"
  trap lib_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

lib_cleanup() {
  local rc=$?
  trap - EXIT
  local pid m
  for pid in "${LIB_PIDS[@]}"; do
    kill -9 "$pid" 2>/dev/null
  done
  for pid in "${LIB_PIDS[@]}"; do
    wait "$pid" 2>/dev/null
  done
  for m in "${LIB_MOUNTS[@]}"; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "warning: could not unmount $m" >&2
  done
  if [[ -n $LIB_WORK && -d $LIB_WORK ]]; then
    if [[ $rc -ne 0 || $LIB_FAILED -ne 0 ]]; then
      # The logs are the only record of why: show their ends before they go.
      for f in "$LIB_WORK"/logs/*.log; do
        [[ -f $f ]] || continue
        echo "----- last lines of $(basename "$f")" >&2
        tail -n 8 "$f" | cut -c1-400 >&2
      done
    fi
    if [[ ${KEEP_WORK:-0} == 1 ]]; then
      echo "KEEP_WORK=1: left $LIB_WORK" >&2
    else
      rm -rf "$LIB_WORK"
    fi
  fi
  exit "$rc"
}

# lib_build_etcdload: builds integrations/etcd/etcdload with etcd's clientv3 from the same GOPATH
# as the etcd build (OUTDIR/gopath when build.sh made one, else Debian's packaged tree).
lib_build_etcdload() {
  local here deps gp
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  deps=/usr/share/gocode
  [[ -d $OUTDIR/gopath/src/go.etcd.io/etcd/clientv3 ]] && deps=$OUTDIR/gopath
  gp=$LIB_WORK/gopath
  mkdir -p "$gp/src"
  cp -r "$here/etcdload" "$gp/src/etcdload"
  (cd "$gp/src/etcdload" && GOPATH="$gp:$deps" GO111MODULE=off GOFLAGS= nice -n 10 \
    go build -o "$LIB_WORK/bin/etcdload" .) || die "building etcdload against $deps failed"
  ETCDLOAD=$LIB_WORK/bin/etcdload
}

# lib_pick_ports COUNT: sets PORT_BASE to the first of COUNT consecutive free ports on 127.0.0.1.
# Random within 20000-59999 so that scripts run side by side (CI, other worktrees) rarely meet.
lib_pick_ports() {
  local count=$1 try base p busy
  local listening
  for try in $(seq 1 50); do
    base=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    listening=$(ss -Htln 2>/dev/null | awk '{print $4}')
    busy=0
    for ((p = base; p < base + count; p++)); do
      if grep -qE "[:.]$p\$" <<<"$listening"; then busy=1; break; fi
    done
    if [[ $busy == 0 ]]; then PORT_BASE=$base; return 0; fi
  done
  die "no $count free consecutive ports found"
}

# lib_start NAME ARGS...: starts etcd as member NAME (each start a new log NAME.N.log) and records
# the pid. The arguments are kept, so lib_restart NAME starts it again the same way.
lib_start() {
  local name=$1; shift
  MEMBER_ARGS[$name]="$*"
  local n=$((${MEMBER_STARTS[$name]:-0} + 1))
  MEMBER_STARTS[$name]=$n
  MEMBER_LOG[$name]=$LIB_WORK/logs/$name.$n.log
  "$ETCD_BIN" "$@" --logger zap --log-outputs stderr >"${MEMBER_LOG[$name]}" 2>&1 &
  MEMBER_PID[$name]=$!
  LIB_PIDS+=("$!")
}

lib_restart() {
  local name=$1
  # shellcheck disable=SC2086  # the arguments were joined by lib_start; none holds a space
  lib_start "$name" ${MEMBER_ARGS[$name]}
}

# lib_start_single NAME DATADIR CLIENT_PORT [ARGS...]: a one-member cluster NAME on 127.0.0.1 with
# its peer port CLIENT_PORT+1; ARGS go to etcd. Sets SINGLE_URL to its client URL.
lib_start_single() {
  local name=$1 dir=$2 port=$3; shift 3
  SINGLE_URL=http://127.0.0.1:$port
  local peer=http://127.0.0.1:$((port + 1))
  lib_start "$name" --name "$name" --data-dir "$dir" \
    --listen-client-urls "$SINGLE_URL" --advertise-client-urls "$SINGLE_URL" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
    --initial-cluster "$name=$peer" --initial-cluster-state new "$@"
}

lib_alive() { kill -0 "${MEMBER_PID[$1]}" 2>/dev/null; }

# lib_kill9 NAME: kill -9 the member and reap it.
lib_kill9() {
  local pid=${MEMBER_PID[$1]}
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

# lib_wait_ready NAME URL SECONDS: waits until the member answers a health check; fails early if
# the process exits.
lib_wait_ready() {
  local name=$1 url=$2 secs=$3 t0=$SECONDS
  while ((SECONDS - t0 < secs)); do
    lib_alive "$name" || { note "member $name exited while starting (log ${MEMBER_LOG[$name]})"; return 1; }
    if etcdctl --endpoints="$url" --command-timeout=2s endpoint health >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  note "member $name not healthy after ${secs}s"
  return 1
}

# lib_wait_exit NAME SECONDS: waits for the member to exit; sets EXIT_RC (empty if still running).
lib_wait_exit() {
  local name=$1 secs=$2 t0=$SECONDS pid=${MEMBER_PID[$1]}
  EXIT_RC=""
  while ((SECONDS - t0 < secs)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" 2>/dev/null
      EXIT_RC=$?
      return 0
    fi
    sleep 0.2
  done
  return 1
}

# lib_check_backend DATADIR: with CAIRN_ETCD_BACKEND=cairn, a cairn directory must exist beside
# member/snap/db; an etcd built without the cairn backend would run bbolt instead.
lib_check_backend() {
  local dir=$1/member/snap
  if [[ $BACKEND == cairn ]]; then
    [[ -n $(lib_cairn_dir "$1") ]] ||
      die "CAIRN_ETCD_BACKEND=cairn but $dir holds no cairn directory ($(ls "$dir" | tr '\n' ' ')): is $ETCD_BIN built with the cairn backend?"
  fi
}

# lib_cairn_dir DATADIR: prints the cairn backend's directory of a member (a directory beside
# member/snap/db holding a cairn CURRENT file), or nothing.
lib_cairn_dir() {
  local f
  f=$(find "$1/member/snap" -mindepth 2 -maxdepth 3 -name CURRENT -type f 2>/dev/null | head -n 1)
  [[ -n $f ]] && dirname "$f"
}

# lib_backend_du DATADIR: bytes on disk of the member's backend (member/snap: bbolt's db file, or
# the cairn directory beside it, plus raft's small .snap files), in KiB.
lib_backend_du() { du -sk "$1/member/snap" 2>/dev/null | awk '{print $1}'; }

# lib_field LINE NAME: the value of NAME=... in etcdload's key=value summary line.
# Quoted values (last_error="...") may hold spaces.
lib_field() {
  grep -oE "(^| )$2=(\"[^\"]*\"|[^ ]*)" <<<"$1" | head -n 1 | sed -E "s/^ ?$2=//; s/^\"(.*)\"\$/\1/"
}

lib_summary() {
  echo "$LIB_PASSED passed, $LIB_FAILED failed"
  [[ $LIB_FAILED -eq 0 ]]
}
