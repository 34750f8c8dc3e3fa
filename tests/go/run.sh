#!/usr/bin/env bash
# Go binding suite: go vet, go test -race, then the tests again under the
# cgo pointer checkers (cgocheck=1, and GOEXPERIMENT=cgocheck2 where the
# toolchain has it), and a CGO_ENABLED=0 build of the stub.
#
# tools/test.sh runs it with POLYLIMIT_PREFIX (an installed build) and
# PKG_CONFIG_PATH / LD_LIBRARY_PATH pointing there. Run alone, it builds and
# installs the library into build/go-lib and build/go-prefix itself.
# The tests start their own redis-server processes on free loopback ports.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

command -v go >/dev/null || { echo "go: not found (tools/deps.sh go installs it)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server: not found" >&2; exit 1; }

if [ -z "${POLYLIMIT_PREFIX:-}" ]; then
  prefix="$root/build/go-prefix"
  cmake -S "$root" -B "$root/build/go-lib" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPOLYLIMIT_BUILD_TESTS=OFF -DPOLYLIMIT_BUILD_TOOLS=OFF >/dev/null
  cmake --build "$root/build/go-lib" -j 2 >/dev/null
  rm -rf "$prefix"
  cmake --install "$root/build/go-lib" --prefix "$prefix" >/dev/null
  libdir=$(dirname "$(ls -d "$prefix"/lib*/pkgconfig | head -n1)")
  export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
pkg-config --exists polylimit || { echo "pkg-config cannot find polylimit (PKG_CONFIG_PATH?)" >&2; exit 1; }

# Never fetch another toolchain; the binding has no module dependencies.
export GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:-} -mod=mod"
export CGO_ENABLED=1
cd "$root/bindings/go"
echo "go: $(go version), libpolylimit $(pkg-config --modversion polylimit)"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
passed=0
failed=0
# gotest LABEL ARGS...: one go test run; counts its tests from -v output.
gotest() {
  local label=$1; shift
  local rc=0
  go test -count=1 -v "$@" ./... >"$log" 2>&1 || rc=$?
  local p f
  p=$(grep -c -- '^\s*--- PASS' "$log" || true)
  f=$(grep -c -- '^\s*--- FAIL' "$log" || true)
  echo "$label: $p passed, $f failed"
  if [ "$rc" -ne 0 ] || [ "$p" -eq 0 ]; then
    cat "$log"
    if [ "$p" -eq 0 ]; then echo "$label: no test ran" >&2; fi
    [ "$f" -eq 0 ] && f=1  # a build failure or panic counts as one failure
  fi
  passed=$((passed + p))
  failed=$((failed + f))
}

go vet ./...
gotest "race" -race
GODEBUG=cgocheck=1 gotest "cgocheck=1"
if GOEXPERIMENT=cgocheck2 go env GOEXPERIMENT >/dev/null 2>&1; then
  GOEXPERIMENT=cgocheck2 gotest "cgocheck2"
else
  echo "cgocheck2: not supported by this toolchain, skipped"
fi
CGO_ENABLED=0 go vet ./...
CGO_ENABLED=0 gotest "CGO_ENABLED=0 stub"

echo "go: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
