# Shared set-up for scripts/test and scripts/demo: install what is missing
# from Debian 12's packages, configure and build one preset.
# Source it; it defines cairn_setup <preset> [targets...].

CAIRN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CAIRN_PACKAGES=(build-essential cmake ninja-build pkg-config
  liburing-dev libabsl-dev libzstd-dev libxxhash-dev
  libgtest-dev libgmock-dev libbenchmark-dev librocksdb-dev gnuplot-nox
  clang libclang-rt-14-dev python3)
# The etcd stage alone (integrations/etcd/ci.sh, build.sh and the test
# scripts): etcd 3.4's Go source, Go 1.19 and etcdctl; jq reads etcdctl's
# JSON, ss (iproute2) finds free ports, mount puts the disk-full test on a
# tmpfs; python3 patches etcd's backend.go.
CAIRN_ETCD_PACKAGES=(golang-go golang-etcd-server-dev etcd-client jq iproute2 mount python3)

cairn_install_packages() {
  local missing=()
  for p in "${CAIRN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local cmd="apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "cairn: missing packages. Run as root:" >&2
    echo "  apt-get update && $cmd" >&2
    return 1
  fi
  echo "cairn: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Try without an update first (fast when the lists are fresh).
  $cmd >/tmp/cairn-apt.log 2>&1 || { apt-get update >>/tmp/cairn-apt.log 2>&1 && $cmd >>/tmp/cairn-apt.log 2>&1; } || {
    tail -20 /tmp/cairn-apt.log >&2; echo "cairn: package install failed" >&2; return 1; }
}

# cairn_setup <preset> [build targets...]
cairn_setup() {
  local preset="$1"; shift
  cairn_install_packages || return 1
  cd "$CAIRN_ROOT" || return 1
  cmake --preset "$preset" >/tmp/cairn-configure-"$preset".log 2>&1 || {
    cat /tmp/cairn-configure-"$preset".log >&2; echo "cairn: configure failed" >&2; return 1; }
  local jobs; jobs=$(nproc)
  if [ $# -gt 0 ]; then
    cmake --build --preset "$preset" -j "$jobs" --target "$@" || return 1
  else
    cmake --build --preset "$preset" -j "$jobs" || return 1
  fi
}
