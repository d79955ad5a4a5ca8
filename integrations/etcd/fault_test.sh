#!/usr/bin/env bash
# Faults under etcd (issue 59, item 3): a damaged backend, and a full disk.
#
#   integrations/etcd/fault_test.sh [--only damage|diskfull] OUTDIR
#   CAIRN_ETCD_BACKEND=cairn integrations/etcd/fault_test.sh OUTDIR
#
# (a) Damage: one member is loaded, killed -9, and its backend damaged in a copy per case (bbolt:
#     db truncated, emptied; cairn: CURRENT, MANIFEST, WAL, a table, a value log, the marker file,
#     the whole directory). The member must refuse to start, exit non-zero and name the error in
#     its log: serving a shorter history than it acknowledged is the one thing it may not do. An
#     undamaged copy must start with every acknowledged put (the control).
# (b) Disk full, on a tmpfs for member/snap (the raft WAL stays on disk, --wal-dir, so the pressure
#     falls on the backend):
#     b1: quota 16 MiB on a 48 MiB disk: etcd must raise NOSPACE and refuse puts with "database
#         space exceeded", serve reads, and after del + compact + defrag + alarm disarm take puts
#         again, with every acknowledged put not deleted intact.
#     b2: quota 1 GiB on a 48 MiB disk: the disk fills before the quota. The member must refuse
#         writes or stop; it must not lose an acknowledged put: after the disk is grown it
#         (restarted if it stopped) serves all of them. Whether it stayed up is recorded; cairn
#         must stay up, bbolt's crash on ENOSPC is etcd 3.4's known behaviour and is reported
#         (FAULT_STRICT_ENOSPC=1 fails it too).
# Needs root for the tmpfs mount; without it (b) is skipped, loudly. About 1 minute.

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=integrations/etcd/test_lib.sh
source "$HERE/test_lib.sh"

ONLY=""
OUT_ARG=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --only) ONLY=$2; shift ;;
    *) lib_other_arg "$1" ;;
  esac
  shift
done
case $ONLY in "" | damage | diskfull) ;; *) die "--only damage or --only diskfull" ;; esac

lib_init "$OUT_ARG" fault
START=$SECONDS
note "fault test: backend=$BACKEND etcd=$ETCD_BIN work=$LIB_WORK"
lib_build_etcdload
lib_pick_ports 2
PORT=$PORT_BASE
SKIPPED=0

# put NAME PREFIX N SIZE [ARGS...]: puts through etcdload, acked keys to $LIB_WORK/acked.NAME.
put() {
  local name=$1 prefix=$2 n=$3 size=$4; shift 4
  PUT_OUT=$("$ETCDLOAD" put -endpoints "$SINGLE_URL" -prefix "$prefix" -n "$n" -conc 8 -size "$size" \
    -acked "$LIB_WORK/acked.$name" "$@" 2>>"$LIB_WORK/logs/etcdload.log")
  note "  put $prefix: $PUT_OUT"
}

# verify NAME PREFIX SIZE [ARGS...]: every acked key of $LIB_WORK/acked.NAME under PREFIX has its
# value (SIZE and ARGS as the put had them: the value is a function of the key and the sizes).
verify() {
  local name=$1 prefix=$2 size=$3; shift 3
  VERIFY_OUT=$("$ETCDLOAD" verify -endpoints "$SINGLE_URL" -prefix "$prefix" -size "$size" \
    -acked "$LIB_WORK/acked.$name" "$@" 2>>"$LIB_WORK/logs/etcdload.log")
}

# error_line NAME: the first line in member NAME's current log that says why it stopped: zap's
# fatal or panic entries, or Go's own panic and fault messages (a bbolt SIGBUS is one).
error_line() {
  local line
  line=$(grep -m1 -E '"level":"(fatal|panic|dpanic)"|^panic:|^fatal error:|unexpected fault address' "${MEMBER_LOG[$1]}")
  # A zap entry: its message and error, without the path-laden rest.
  jq -r '"\(.msg): \(.error // "")"' <<<"$line" 2>/dev/null || echo "$line" | cut -c1-400
}

# garble FILE: 4 KiB of random bytes over the middle of FILE (or all of a smaller file).
garble() {
  local size off n
  size=$(stat -c %s "$1")
  off=$((size / 2)); n=$((size - off)); ((n > 4096)) && n=4096
  ((size < 64)) && { off=0; n=$size; }
  dd if=/dev/urandom of="$1" bs=1 seek="$off" count="$n" conv=notrunc status=none
}

# ---------------------------------------------------------------- (a) damaged backend
damage_tests() {
  local golden=$LIB_WORK/golden
  note "(a) damage: loading one member"
  lib_start_single golden "$golden" "$PORT" --snapshot-count 1000
  lib_wait_ready golden "$SINGLE_URL" 60 || die "the member to damage did not start"
  lib_check_backend "$golden"
  # 1-16 KiB values: some stay in cairn's tables, the larger go to its value log.
  put d d/ 3000 1024 -maxsize 16384
  [[ $(lib_field "$PUT_OUT" puts) -gt 0 ]] || die "no put was acknowledged"
  # defrag makes cairn write its tables (and is harmless on bbolt); the puts after it leave a WAL
  # with records in it for the kill -9 to find.
  etcdctl --endpoints="$SINGLE_URL" --command-timeout=60s defrag >/dev/null || die "defrag failed"
  put d d/w/ 300 1024 -maxsize 16384
  lib_kill9 golden
  note "  member/snap: $(ls "$golden/member/snap" | grep -v '\.snap$' | tr '\n' ' ')"

  local cases=() cdir
  if [[ $BACKEND == bbolt ]]; then
    cases=("db truncated to half|truncate -s \$((\$(stat -c %s db) / 2)) db"
      "db truncated to 0 bytes|truncate -s 0 db"
      "db removed|rm db")
  else
    cdir=$(lib_cairn_dir "$golden")
    cdir=${cdir#"$golden/member/snap/"}
    [[ -n $cdir && $cdir != /* ]] || die "no cairn directory under $golden/member/snap"
    note "  cairn directory: member/snap/$cdir: $(ls "$golden/member/snap/$cdir" | tr '\n' ' ')"
    cases=("CURRENT garbled|garble $cdir/CURRENT"
      "MANIFEST garbled in the middle|garble \$(ls $cdir/MANIFEST-* | tail -n 1)"
      "MANIFEST truncated to half|f=\$(ls $cdir/MANIFEST-* | tail -n 1); truncate -s \$((\$(stat -c %s \$f) / 2)) \$f")
    local f
    f=$(find "$golden/member/snap/$cdir" -name '*.log' -size +0 | sort | tail -n 1)
    [[ -n $f ]] && cases+=("WAL $(basename "$f") garbled in the middle|garble $cdir/$(basename "$f")")
    f=$(find "$golden/member/snap/$cdir" -name '*.sst' | sort | tail -n 1)
    [[ -n $f ]] && cases+=("table $(basename "$f") garbled in the middle|garble $cdir/$(basename "$f")")
    f=$(find "$golden/member/snap/$cdir" -name '*.vlog' -size +8k | sort | head -n 1)
    [[ -n $f ]] && cases+=("value log $(basename "$f") garbled in the middle|garble $cdir/$(basename "$f")")
    cases+=("marker file db emptied|truncate -s 0 db"
      "cairn directory removed|rm -rf $cdir")
  fi

  # The control: an undamaged copy starts and serves every acknowledged put.
  rm -rf "$LIB_WORK/case" && cp -a "$golden" "$LIB_WORK/case"
  lib_start_single case0 "$LIB_WORK/case" "$PORT"
  if lib_wait_ready case0 "$SINGLE_URL" 60 && verify d d/ 1024 -maxsize 16384; then
    pass "(a) control: the undamaged member starts and serves every acknowledged put ($VERIFY_OUT)"
  else
    fail "(a) control: the undamaged member does not start or lost puts (${VERIFY_OUT:-})"
  fi
  lib_kill9 case0

  local i=0 c title cmd line
  for c in "${cases[@]}"; do
    i=$((i + 1))
    title=${c%%|*}; cmd=${c#*|}
    rm -rf "$LIB_WORK/case" && cp -a "$golden" "$LIB_WORK/case"
    (cd "$LIB_WORK/case/member/snap" && eval "$cmd") || { fail "(a) $title: could not damage ($cmd)"; continue; }
    lib_start_single "case$i" "$LIB_WORK/case" "$PORT"
    if lib_wait_exit "case$i" 30; then
      line=$(error_line "case$i")
      if [[ $EXIT_RC -ne 0 && -n $line ]]; then
        pass "(a) $title: refused to start, exit $EXIT_RC: $line"
      else
        fail "(a) $title: exited $EXIT_RC without an error in its log"
      fi
    else
      # It started: say what it serves, then fail: a damaged backend must not be served.
      verify d d/ 1024 -maxsize 16384
      fail "(a) $title: started on a damaged backend; it serves: ${VERIFY_OUT:-nothing}"
      lib_kill9 "case$i"
    fi
  done
  rm -rf "$LIB_WORK/case" "$golden"
}

# ---------------------------------------------------------------- (b) disk full
# alarms: etcdctl alarm list, one line.
alarms() { etcdctl --endpoints="$SINGLE_URL" --command-timeout=5s alarm list 2>&1 | tr '\n' ' '; }

# member_size: etcd's own view of the backend (dbSize and dbSizeInUse of endpoint status) and du.
member_size() {
  local js
  js=$(etcdctl --endpoints="$SINGLE_URL" --command-timeout=5s endpoint status -w json 2>/dev/null) || js='[{}]'
  echo "dbSize=$(jq -r '.[0].Status.dbSize' <<<"$js") dbSizeInUse=$(jq -r '.[0].Status.dbSizeInUse' <<<"$js") du=$(lib_backend_du "$1")KiB"
}

diskfull_tests() {
  command -v mount >/dev/null || { note "SKIP (b): no mount command"; SKIPPED=1; return; }
  local mnt=$LIB_WORK/tmpfs
  mkdir -p "$mnt"
  if ! mount -t tmpfs -o size=48m tmpfs "$mnt" 2>"$LIB_WORK/mount.err"; then
    note "SKIP (b) disk full: cannot mount a tmpfs (needs root): $(cat "$LIB_WORK/mount.err")"
    SKIPPED=1
    return
  fi
  LIB_MOUNTS+=("$mnt")

  # b1: the quota is below the disk: etcd's own NOSPACE path.
  local d=$mnt/b1
  note "(b1) quota 16 MiB, disk 48 MiB"
  lib_start_single b1 "$d" "$PORT" --wal-dir "$LIB_WORK/b1-wal" --quota-backend-bytes $((16 << 20))
  lib_wait_ready b1 "$SINGLE_URL" 60 || die "b1: member did not start"
  lib_check_backend "$d"
  put b1 keep/ 200 4096
  put b1 fillA/ 1500 4096
  put b1 fillB/ 100000 4096 -stop-errors 20 -timeout 10s
  local err
  err=$(lib_field "$PUT_OUT" last_error)
  note "  after the fill: $(member_size "$d"); alarms: $(alarms)"
  if lib_alive b1 && [[ $err == *"database space exceeded"* ]] && alarms | grep -q NOSPACE; then
    pass "(b1) NOSPACE raised, puts refused ($err), member up"
  else
    fail "(b1) expected the NOSPACE alarm and \"database space exceeded\"; alive=$(lib_alive b1 && echo yes || echo no), last error $err, alarms: $(alarms)"
  fi
  if verify b1 keep/ 4096 && verify b1 fillB/ 4096; then
    pass "(b1) under the alarm, reads serve every acknowledged put"
  else
    fail "(b1) under the alarm, acknowledged puts missing (${VERIFY_OUT:-})"
  fi
  # The operator's way out: delete, compact, defrag, disarm.
  local rev
  etcdctl --endpoints="$SINGLE_URL" del --prefix fillA/ >/dev/null || note "  del failed"
  rev=$(etcdctl --endpoints="$SINGLE_URL" endpoint status -w json | jq -r '.[0].Status.header.revision')
  etcdctl --endpoints="$SINGLE_URL" compact "$rev" --physical >/dev/null || note "  compact failed"
  etcdctl --endpoints="$SINGLE_URL" --command-timeout=60s defrag >/dev/null || note "  defrag failed"
  etcdctl --endpoints="$SINGLE_URL" alarm disarm >/dev/null || note "  alarm disarm failed"
  note "  after del + compact + defrag + disarm: $(member_size "$d"); alarms: $(alarms)"
  put b1 after/ 50 4096
  if [[ $(lib_field "$PUT_OUT" puts) -eq 50 ]] && verify b1 keep/ 4096 && verify b1 fillB/ 4096 && verify b1 after/ 4096; then
    pass "(b1) after recovery puts succeed and every acknowledged, undeleted put is intact"
  else
    fail "(b1) after recovery: puts $(lib_field "$PUT_OUT" puts)/50, verify ${VERIFY_OUT:-}"
  fi
  lib_kill9 b1
  rm -rf "$d" "$LIB_WORK/b1-wal"

  # b2: the disk is below the quota: the backend meets ENOSPC itself.
  d=$mnt/b2
  note "(b2) quota 1 GiB, disk 48 MiB"
  lib_start_single b2 "$d" "$PORT" --wal-dir "$LIB_WORK/b2-wal" --quota-backend-bytes $((1 << 30))
  lib_wait_ready b2 "$SINGLE_URL" 60 || die "b2: member did not start"
  put b2 keep/ 200 4096
  # Short timeouts: once a member is gone, each failed put costs its whole timeout.
  put b2 fill/ 20000 16384 -stop-errors 16 -timeout 2s
  err=$(lib_field "$PUT_OUT" last_error)
  note "  disk: $(df -k "$mnt" | awk 'NR == 2 {print $3 "KiB used of " $2 "KiB"}')"
  local stayed=yes
  if lib_alive b2; then
    note "  member up; last put error: $err; alarms: $(alarms)"
    pass "(b2) disk full: the member stayed up and refused writes ($err)"
  else
    stayed=no
    wait "${MEMBER_PID[b2]}" 2>/dev/null
    line=$(error_line b2)
    if [[ $BACKEND == cairn || ${FAULT_STRICT_ENOSPC:-0} == 1 ]]; then
      fail "(b2) disk full: the member crashed: $line"
    else
      note "KNOWN ($BACKEND): disk full crashed the member: $line"
    fi
  fi
  # Remove the pressure: grow the disk; restart if it stopped; every acknowledged put is there.
  mount -o remount,size=256m "$mnt" || die "could not grow the tmpfs"
  if [[ $stayed == no ]]; then
    lib_restart b2
    lib_wait_ready b2 "$SINGLE_URL" 60 || fail "(b2) the member does not restart after the disk was grown"
  fi
  etcdctl --endpoints="$SINGLE_URL" alarm disarm >/dev/null 2>&1
  put b2 after/ 50 4096
  if lib_alive b2 && verify b2 keep/ 4096 && verify b2 fill/ 16384 && [[ $(lib_field "$PUT_OUT" puts) -eq 50 ]]; then
    pass "(b2) after the disk was grown (member stayed up: $stayed) every acknowledged put is intact ($VERIFY_OUT) and puts succeed"
  else
    fail "(b2) after the disk was grown: acknowledged puts lost or puts refused (${VERIFY_OUT:-}; puts $(lib_field "$PUT_OUT" puts)/50)"
  fi
  lib_kill9 b2
}

[[ -z $ONLY || $ONLY == damage ]] && damage_tests
[[ -z $ONLY || $ONLY == diskfull ]] && diskfull_tests
note "fault test ($BACKEND) took $((SECONDS - START))s"
[[ $SKIPPED -eq 1 ]] && note "some fault tests were SKIPPED (see above)"
lib_summary
