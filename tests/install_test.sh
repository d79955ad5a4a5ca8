#!/usr/bin/env bash
# Installs cairn from the build tree into a temporary prefix, builds
# examples/ against the installed package with find_package(cairn), and runs
# the program. Usage: install_test.sh <source dir> <build dir>
set -euo pipefail
src="$1"; build="$2"
work="$(mktemp -d /tmp/cairn-install-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/examples" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/hello_cairn" "$work/db"
