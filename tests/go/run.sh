#!/usr/bin/env bash
# Go binding suite. First the default build, in which cgo compiles the C++
# core from the module's sources (package internal/bundled) and nothing
# installed is used: a user's module outside the repository
# (tests/go/consumer.sh: fresh modules that get the module zip of
# tools/release.sh from a module proxy in a temporary directory; empty build
# cache, nothing findable, hiredis hidden, no network; ldd; a run against
# redis-server; one of them through promcollector with no replace; under
# tools/test.sh its release suite runs it instead, POLYLIMIT_RELEASE_CHECKS=1); go vet; go test -race, including the check
# that internal/bundled's generated files are current; the tests again under
# the cgo pointer checkers (cgocheck=1, and GOEXPERIMENT=cgocheck2 where the
# toolchain has it; linked to the installed library when there is one), the
# binding's packages included (httplimit, the net/http middleware: its tests
# run examples/go-http as two processes; promcollector, whose client_golang
# comes from the Go module proxy); go vet of examples/go-http, and the
# build of tests/http/services/go (the Go service of the cross-language HTTP
# suite).
# Then an installed libpolylimit: -tags polylimit_system (the shared library
# by pkg-config: the demo worker needs libpolylimit.so at run time) and
# -tags polylimit_static (libpolylimit.a: a test binary and the demo worker
# without libpolylimit at run time, run with an empty LD_LIBRARY_PATH against
# real redis-servers). Last, a CGO_ENABLED=0 build, which must fail at
# compile time saying that cgo is required.
#
# tools/test.sh runs it with POLYLIMIT_PREFIX (an installed build) and
# PKG_CONFIG_PATH / LD_LIBRARY_PATH pointing there. Run alone, it builds and
# installs the library into build/go-lib and build/go-prefix itself, for the
# build-tag part.
# The tests start their own redis-server processes on free loopback ports.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

command -v go >/dev/null || { echo "go: not found (tools/deps.sh go installs it)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server: not found" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3: not found (tests/fixture/redisfix, the Redis launcher, needs it)" >&2; exit 1; }
# The check of internal/bundled's generated files runs the generators.
command -v cmake >/dev/null || { echo "cmake: not found (internal/bundled/gen runs it)" >&2; exit 1; }


# Never fetch another toolchain. The binding has no module dependencies;
# promcollector's (client_golang) are fetched with -mod=mod, as go.sum pins them.
export GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:-} -mod=mod"
export CGO_ENABLED=1
cd "$root/bindings/go"
echo "go: $(go version)"

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

echo "--- a user's module: the core compiled by cgo, nothing installed (tests/go/consumer.sh)"
if [ "${POLYLIMIT_RELEASE_CHECKS:-0}" = 1 ]; then
  # tools/test.sh's release suite runs it on the release's module zip.
  echo "consumer: left to the release suite (tools/check-release.sh runs tests/go/consumer.sh)"
elif "$root/tests/go/consumer.sh"; then
  passed=$((passed + 1))
else
  echo "consumer: FAILED" >&2
  failed=$((failed + 1))
fi

echo "--- the binding, default build (the core compiled from the module's sources)"
# pkg-config answers nothing here: the default build must not ask it.
export PKG_CONFIG=false
go vet ./...
gotest "race" -race
# The pointer checks are about the Go side of every cgo call, whichever way
# the core is linked: with an installed library (tools/test.sh provides one)
# they link it instead of compiling the core twice more (cgocheck2 is a
# toolchain experiment: nothing of the cache would be reused).
check_tags=()
if [ -n "${POLYLIMIT_PREFIX:-}" ] && PKG_CONFIG=pkg-config pkg-config --exists polylimit 2>/dev/null; then
  check_tags=(-tags polylimit_system)
fi
PKG_CONFIG=pkg-config GODEBUG=cgocheck=1 gotest "cgocheck=1${check_tags:+ (${check_tags[*]})}" "${check_tags[@]}"
if GOEXPERIMENT=cgocheck2 go env GOEXPERIMENT >/dev/null 2>&1; then
  PKG_CONFIG=pkg-config GOEXPERIMENT=cgocheck2 gotest "cgocheck2${check_tags:+ (${check_tags[*]})}" "${check_tags[@]}"
else
  echo "cgocheck2: not supported by this toolchain, skipped"
fi

# A module of its own beside the binding: the example server (built and run
# as two processes by the httplimit tests, as a user builds it).
echo "--- examples/go-http (a module of its own)"
cd "$root/examples/go-http"
go vet ./...
# The service of the cross-language HTTP suite (tests/http/services/go/run
# execs this build, and rebuilds it when its sources are newer).
echo "--- tests/http/services/go (the cross-language suite's service)"
cd "$root/tests/http/services/go"
go vet ./...
go build -o "$root/build/http-services/go/service" .
cd "$root/bindings/go"
unset PKG_CONFIG

echo "--- an installed libpolylimit (-tags polylimit_system, -tags polylimit_static)"
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
echo "libpolylimit $(pkg-config --modversion polylimit)"
tmp=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$tmp"' EXIT
go vet -tags polylimit_system ./...
# The installed polylimit-static.pc (packaging/pkgconfig/polylimit-static.pc.in).
# A prefix installed before that file was added has none: write one here from
# the template, for this prefix, so the test still runs.
if ! pkg-config --exists polylimit-static; then
  template="$root/packaging/pkgconfig/polylimit-static.pc.in"
  [ -f "$template" ] || { echo "no polylimit-static.pc installed and no $template" >&2; exit 1; }
  pc_libdir=$(pkg-config --variable=libdir polylimit)
  mkdir -p "$tmp/pkgconfig"
  sed -e "s|^prefix=.*|prefix=$(pkg-config --variable=prefix polylimit)|" \
    -e "s|^libdir=.*|libdir=$pc_libdir|" \
    -e "s|^includedir=.*|includedir=$(pkg-config --variable=includedir polylimit)|" \
    -e "s|@PROJECT_DESCRIPTION@|polylimit|" -e "s|@PROJECT_VERSION@|$(pkg-config --modversion polylimit)|" \
    -e "s|@POLYLIMIT_PC_STATIC_LIBS@|-lssl -lcrypto -lstdc++ -lm -lpthread|" "$template" >"$tmp/pkgconfig/polylimit-static.pc"
  export PKG_CONFIG_PATH="$tmp/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  echo "polylimit-static.pc is not installed in this prefix; using one made from $template"
fi
echo "pkg-config --libs polylimit-static: $(pkg-config --libs polylimit-static)"
go vet -tags polylimit_static ./...
go test -c -tags polylimit_static -o "$tmp/polylimit-static.test" .
go build -tags polylimit_static -o "$tmp/polylimit-demo-worker" ./cmd/polylimit-demo-worker
go build -tags polylimit_system -o "$tmp/polylimit-demo-worker-system" ./cmd/polylimit-demo-worker
deps=$(ldd "$tmp/polylimit-demo-worker-system")
echo "ldd of the demo worker (-tags polylimit_system):"
echo "$deps" | sed 's/^/  /'
if ! grep -q 'libpolylimit\.so\.1 => /' <<<"$deps"; then
  echo "the demo worker (-tags polylimit_system) does not load the installed libpolylimit.so.1" >&2
  exit 1
fi
for bin in "$tmp/polylimit-static.test" "$tmp/polylimit-demo-worker"; do
  deps=$(ldd "$bin")
  echo "ldd of $(basename "$bin") (-tags polylimit_static):"
  echo "$deps" | sed 's/^/  /'
  if grep -q libpolylimit <<<"$deps"; then
    echo "$(basename "$bin") still needs libpolylimit at run time" >&2
    exit 1
  fi
done
# An empty LD_LIBRARY_PATH: nothing of the prefix is on the loader's path.
rc=0
(cd "$root/bindings/go" && LD_LIBRARY_PATH='' "$tmp/polylimit-static.test" -test.count=1 -test.v) >"$log" 2>&1 || rc=$?
p=$(grep -c -- '^\s*--- PASS' "$log" || true)
f=$(grep -c -- '^\s*--- FAIL' "$log" || true)
echo "static test binary (LD_LIBRARY_PATH empty): $p passed, $f failed"
if [ "$rc" -ne 0 ] || [ "$p" -eq 0 ]; then
  cat "$log"
  [ "$f" -eq 0 ] && f=1
fi
passed=$((passed + p))
failed=$((failed + f))
eval "$("$root/tests/redis-server.sh" start)"
out=$(LD_LIBRARY_PATH='' "$tmp/polylimit-demo-worker" "$POLYLIMIT_TEST_REDIS_URL" go-static 5 60000 8 go-static) || out="exit status $?"
sys_out=$("$tmp/polylimit-demo-worker-system" "$POLYLIMIT_TEST_REDIS_URL" go-system 5 60000 8 go-system) || sys_out="exit status $?"
"$root/tests/redis-server.sh" stop "$POLYLIMIT_TEST_REDIS_PID" "$POLYLIMIT_TEST_REDIS_DIR"
echo "static demo worker (LD_LIBRARY_PATH empty): $out"
if [ "$out" != "go-static admitted=5 attempts=8" ]; then
  echo "static demo worker: expected 'go-static admitted=5 attempts=8'" >&2
  failed=$((failed + 1))
fi
echo "demo worker on the installed shared library: $sys_out"
if [ "$sys_out" != "go-system admitted=5 attempts=8" ]; then
  echo "demo worker (-tags polylimit_system): expected 'go-system admitted=5 attempts=8'" >&2
  failed=$((failed + 1))
fi

echo "--- CGO_ENABLED=0 must not compile (cgo_required.go)"
rc=0
CGO_ENABLED=0 go build ./... >"$log" 2>&1 || rc=$?
cat "$log"
if [ "$rc" -eq 0 ] || ! grep -q 'undefined: polylimit_requires_cgo_CGO_ENABLED_1' "$log"; then
  echo "CGO_ENABLED=0: expected a compile error naming polylimit_requires_cgo_CGO_ENABLED_1" >&2
  failed=$((failed + 1))
else
  echo "CGO_ENABLED=0: compile error, as intended"
fi

echo "go: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
