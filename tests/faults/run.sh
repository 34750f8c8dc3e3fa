#!/usr/bin/env bash
# tests/faults/run.sh - the fault-injection suite: the fault matrix (rewrites
# docs/reliability.md) and the bounded soak, against real redis-server,
# Redis Cluster and Sentinel processes on free loopback ports.
#
# Uses the CMake build in $POLYLIMIT_BUILD_DIR (tools/test.sh sets it), else
# build/faults (configured here when missing); builds the two programs.
# Environment: POLYLIMIT_SOAK_SECONDS (default 120), POLYLIMIT_SOAK_THREADS,
# POLYLIMIT_SOAK_SENTINEL (see tests/faults/soak.cpp); POLYLIMIT_JOBS (default 2).
# The matrix's timings change from run to run: the new docs/reliability.md is
# compared with the previous one and the difference printed, never failed on.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${POLYLIMIT_BUILD_DIR:-$root/build/faults}
jobs=${POLYLIMIT_JOBS:-2}

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "faults: redis-server and redis-cli are needed (Debian: redis-server, redis-tools)" >&2
  exit 1
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOLYLIMIT_BUILD_TOOLS=OFF >/dev/null
fi
cmake --build "$build" -j "$jobs" --target fault_matrix fault_soak

doc="$root/docs/reliability.md"
previous=$(mktemp)
trap 'rm -f "$previous"' EXIT
[ -f "$doc" ] && cp "$doc" "$previous"

status=0
start=$SECONDS
"$build/tests/faults/fault_matrix" --out "$doc" || status=1
matrix_s=$((SECONDS - start))
echo "fault matrix: $matrix_s s"

start=$SECONDS
"$build/tests/faults/fault_soak" --append "$doc" || status=1
soak_s=$((SECONDS - start))
echo "soak: $soak_s s"
if [ -s "$previous" ]; then
  echo "--- docs/reliability.md compared with the previous version (timings vary; informational) ---"
  diff -u "$previous" "$doc" || true
fi
echo "faults suite: matrix $matrix_s s, soak $soak_s s, status $status"
exit $status
