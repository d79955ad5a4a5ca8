#!/usr/bin/env bash
# check_imports.sh BINARY...: fails when a binary of the TSan build still
# imports an abseil synchronization function (Mutex, CondVar, Notification,
# Barrier, BlockingCounter) from the shared library: a call TSan cannot see,
# which tests/tsan/absl_sync_shim.cc would have to define. The assertions and
# debugging hooks order nothing and are allowed.
set -uo pipefail
allowed='Assert(Reader)?Held|AssertNotHeld|EnableDebugLog|EnableInvariantDebugging|ForgetDeadlockInfo'
status=0
for bin in "$@"; do
  missing=$(nm -D --undefined-only "$bin" |
    awk '{print $NF}' |
    grep -E '^_ZNK?4absl[0-9]+[A-Za-z0-9_]*(5Mutex|7CondVar|12Notification|7Barrier|15BlockingCounter)[0-9CD]' |
    grep -Ev "$allowed" || true)
  if [ -n "$missing" ]; then
    echo "$(basename "$bin"): absl synchronization calls the TSan shim does not cover:"
    echo "$missing" | c++filt | sed 's/^/  /'
    status=1
  else
    echo "$(basename "$bin"): every absl synchronization call goes through the shim"
  fi
done
exit $status
