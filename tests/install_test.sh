#!/usr/bin/env bash
# Installs cairn as a user would and builds examples/ (the C one too)
# against the installed package, both with find_package(cairn) and with
# pkg-config, for a static and a shared cairn; runs every example; checks
# that cairn and cairn_bench are installed, that a shared build's programs
# load libcairn.so, and that a program compiled against another abseil fails
# to link (cairn/version.h).
#
# The build dir given is one variant (BUILD_SHARED_LIBS as configured there);
# the other is configured and built beside it (<build dir>-shared or
# -static, kept for the next run) with the same compiler flags and at the
# same depth, so that a compiler cache with a base dir (ccache's
# CCACHE_BASEDIR) hits on the same command lines; no tests or benchmarks.
# Usage: install_test.sh <source dir> <build dir>
set -euo pipefail
src="$(cd "$1" && pwd)"; build="$(cd "$2" && pwd)"
work="$(mktemp -d /tmp/cairn-install-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT

cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
shared="$(cache_value BUILD_SHARED_LIBS)"
case "${shared^^}" in ON|TRUE|1|YES) shared=ON; other=OFF ;; *) shared=OFF; other=ON ;; esac
type="$(cache_value CMAKE_BUILD_TYPE)"

# Installs build dir $1 into $2.
install_to() { cmake --install "$1" --prefix "$2" >/dev/null; }

# Builds and runs the examples against prefix $1 (variant name $2).
check_prefix() {
  local prefix="$1" name="$2" out="$work/$2"
  mkdir -p "$out"
  # find_package(cairn)
  cmake -S "$src/examples" -B "$out/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$out/cmake" >/dev/null
  # pkg-config
  local pc="$prefix/lib/pkgconfig"
  [ -d "$pc" ] || pc="$(dirname "$(find "$prefix" -name cairn.pc | head -n 1)")"
  export PKG_CONFIG_PATH="$pc"
  mkdir -p "$out/pc"
  for ex in hello_cairn blob_store; do
    # shellcheck disable=SC2046
    c++ -std=c++20 -O1 -o "$out/pc/$ex" "$src/examples/$ex.cc" $(pkg-config --cflags --libs cairn)
  done
  # The C API from a C compiler (cairn/c.h must stay C99).
  # shellcheck disable=SC2046
  cc -std=c99 -O1 -o "$out/pc/hello_cairn_c" "$src/examples/hello_cairn.c" \
    $(pkg-config --cflags --libs cairn)
  unset PKG_CONFIG_PATH
  local libdir
  libdir="$(dirname "$(find "$prefix" -name 'libcairn*' | head -n 1)")"
  for how in cmake pc; do
    for ex in hello_cairn blob_store hello_cairn_c; do
      LD_LIBRARY_PATH="$libdir" "$out/$how/$ex" "$out/db-$how-$ex" >/dev/null
      if [ "$name" = shared ]; then
        # (Not piped into grep -q: with pipefail its early exit fails ldd.)
        local deps
        deps="$(LD_LIBRARY_PATH="$libdir" ldd "$out/$how/$ex")"
        [[ "$deps" == *libcairn.so* ]] || { echo "$name/$how/$ex does not load libcairn.so"; exit 1; }
      fi
    done
  done
  [ -x "$prefix/bin/cairn" ] || { echo "$name: bin/cairn not installed"; exit 1; }
  echo "$name: find_package and pkg-config builds of the examples ran"
}

install_to "$build" "$work/prefix-$shared"
if [ -e "$build/bench/cairn_bench" ]; then
  [ -x "$work/prefix-$shared/bin/cairn_bench" ] || { echo "cairn_bench not installed"; exit 1; }
  "$work/prefix-$shared/bin/cairn_bench" --helpshort >/dev/null 2>&1 || true
fi
[ "$other" = ON ] && other_build="$build-shared" || other_build="$build-static"
cmake -S "$src" -B "$other_build" -G Ninja -DBUILD_SHARED_LIBS="$other" \
  -DCAIRN_BUILD_TESTS=OFF -DCAIRN_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE="$type" \
  -DCMAKE_CXX_FLAGS="$(cache_value CMAKE_CXX_FLAGS)" \
  "-DCMAKE_CXX_FLAGS_${type^^}=$(cache_value "CMAKE_CXX_FLAGS_${type^^}")" \
  -DCAIRN_WERROR="$(cache_value CAIRN_WERROR)" \
  -DCAIRN_UNITY_BUILD="$(cache_value CAIRN_UNITY_BUILD)" >/dev/null
cmake --build "$other_build" >/dev/null
install_to "$other_build" "$work/prefix-$other"

for variant in OFF ON; do
  [ "$variant" = ON ] && name=shared || name=static
  check_prefix "$work/prefix-$variant" "$name"
done

# Compiled against another abseil (here: its inline namespace renamed), a
# program must not link to cairn: the ABI tag names the mismatch.
cat >"$work/other_absl.cc" <<'CC'
#include "absl/base/options.h"
#undef ABSL_OPTION_INLINE_NAMESPACE_NAME
#define ABSL_OPTION_INLINE_NAMESPACE_NAME lts_20990101
#include "cairn/db.h"
int main() { return cairn::DB::Open(cairn::Options(), "/nonexistent").ok() ? 0 : 1; }
CC
export PKG_CONFIG_PATH="$(dirname "$(find "$work/prefix-OFF" -name cairn.pc)")"
# shellcheck disable=SC2046
if c++ -std=c++20 -w -o "$work/other_absl" "$work/other_absl.cc" \
    $(pkg-config --cflags --libs cairn) >"$work/link.log" 2>&1; then
  echo "a program built against another abseil linked"; exit 1
fi
grep -q 'cairn_abi_v[0-9]*_[0-9]*_absl_lts_20990101' "$work/link.log" ||
  { echo "the link failed, but not on cairn's ABI tag:"; head -n 20 "$work/link.log"; exit 1; }
echo "another abseil: link refused on cairn's ABI tag"
