#!/usr/bin/env bash
# tests/faults/run.sh - the fault-injection suite: the fault matrix and the
# bounded soak, against real redis-server, Redis Cluster and Sentinel
# processes on free loopback ports. The report is written to
# build/reports/reliability.md; the tracked docs/reliability.md is rewritten
# only with --update-docs (a test run leaves a clean checkout clean).
#
# Uses the CMake build in $POLYLIMIT_BUILD_DIR (tools/test.sh sets it), else
# build/faults (configured here when missing); builds the two programs.
# Environment: POLYLIMIT_SOAK_SECONDS (default 120), POLYLIMIT_SOAK_THREADS,
# POLYLIMIT_SOAK_SENTINEL (see tests/faults/soak.cpp); POLYLIMIT_JOBS (default 2).
# The matrix's timings change from run to run: the new report is compared
# with docs/reliability.md and the difference printed, never failed on.
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

update_docs=0
[ "${1:-}" = --update-docs ] && update_docs=1
tracked="$root/docs/reliability.md"
mkdir -p "$root/build/reports"
doc="$root/build/reports/reliability.md"
rm -f "$doc"

status=0
start=$SECONDS
"$build/tests/faults/fault_matrix" --out "$doc" || status=1
matrix_s=$((SECONDS - start))
echo "fault matrix: $matrix_s s"

start=$SECONDS
"$build/tests/faults/fault_soak" --append "$doc" || status=1
soak_s=$((SECONDS - start))
echo "soak: $soak_s s"
if [ -s "$tracked" ]; then
  echo "--- $doc compared with docs/reliability.md (timings vary; informational) ---"
  diff -u "$tracked" "$doc" || true
fi
if [ $update_docs -eq 1 ] && [ $status -eq 0 ]; then
  cp "$doc" "$tracked"
  echo "docs/reliability.md updated"
fi
echo "faults suite: matrix $matrix_s s, soak $soak_s s, status $status"
exit $status
