#!/usr/bin/env bash
# Go programs of a user's, outside the repository, built with nothing of
# polylimit installed or findable (no PKG_CONFIG_PATH, no LD_LIBRARY_PATH, no
# CGO_* flags, and pkg-config replaced by `false`, so a build that asked it
# would fail), no hiredis (tests/without-hiredis.sh hides its headers and
# libraries, as root; elsewhere only the check of the sources below runs)
# and an empty build cache, as a first `go build` is: a fresh module runs
# `go get github.com/polylimit/polylimit/bindings/go@vX.Y.Z` from a module
# proxy in a temporary directory (GOPROXY=file://...) serving the release's
# module zip, .mod and .info (tools/release.sh: the checkout's tracked files
# laid out by golang.org/x/mod/zip, nested modules left out): what is built
# is what the module zip carries, from the read-only module cache. (A
# `replace` onto the checkout is what the README's Go quick start does;
# tests/readme builds and runs it.) As root, the builds also run with no
# network (unshare -n): everything comes from the proxy folder and the
# module cache.
#   tests/go/consumer.sh [DIR]   DIR: a release folder holding polylimit@vX.Y.Z.zip,
#                                .mod and .info (tools/check-release.sh passes
#                                its own); without, tools/release.sh --only go
#                                makes them in a temporary folder
# Before anything is built, no C or C++ file in the zip may include a
# hiredis header. Then:
#   - that proxy serves polylimit alone: `go get` and the build must need
#     nothing else (module graph pruning keeps promcollector's client_golang
#     out), and the module's go.mod and go.sum name no prometheus module;
#   - the first build compiles the core (go build -x shows it);
#   - ldd of the program names no libpolylimit and no libhiredis;
#   - the program runs against a real redis-server and must admit 3 of 5
#     requests to a 3/minute limit, with a Retry-After on the denied ones;
#   - a second build finds everything in the cache (compiles no C++).
# A second fresh module imports bindings/go/promcollector, a package of the
# same module: `go get .../promcollector@vX.Y.Z` with no replace, client_golang
# from the local module cache (filled by `go mod download` in the checkout,
# through the usual GOPROXY); it registers the collector in a registry and
# must read polylimit_checks_total = 5 after 5 checks.
# Prints the build times. Run by tests/go/run.sh; runs alone too.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
version=$(sed -n 's/^#define POLYLIMIT_VERSION_STRING "\(.*\)"$/\1/p' "$root/capi/include/polylimit.h")
[ -n "$version" ] || { echo "no POLYLIMIT_VERSION_STRING in capi/include/polylimit.h" >&2; exit 1; }

tmp=$(mktemp -d /tmp/polylimit-go-consumer-XXXXXX)
redis_pid=
cleanup() {
  if [ -n "$redis_pid" ]; then "$root/tests/redis-server.sh" stop "$redis_pid" "$redis_dir" || true; fi
  chmod -R u+w "$tmp" 2>/dev/null || true # the module cache is read-only
  rm -rf "$tmp"
}
trap cleanup EXIT
eval "$("$root/tests/redis-server.sh" start)"
redis_pid=$POLYLIMIT_TEST_REDIS_PID redis_dir=$POLYLIMIT_TEST_REDIS_DIR

# The release's module files: the caller's, or made here by the release tool.
release_dir=${1:-}
if [ -z "$release_dir" ]; then
  release_dir="$tmp/release"
  "$root/tools/release.sh" --only go --out "$release_dir" >"$tmp/release.log" 2>&1 ||
    { cat "$tmp/release.log" >&2; echo "consumer: tools/release.sh --only go failed" >&2; exit 1; }
fi
for ext in zip mod info; do
  [ -f "$release_dir/polylimit@v$version.$ext" ] || { echo "consumer: no polylimit@v$version.$ext in $release_dir" >&2; exit 1; }
done
# The module proxy: list, .info, .mod and .zip of one version.
proxy_dir="$tmp/proxy/github.com/polylimit/polylimit/@v"
mkdir -p "$proxy_dir"
echo "v$version" >"$proxy_dir/list"
for ext in zip mod info; do cp "$release_dir/polylimit@v$version.$ext" "$proxy_dir/v$version.$ext"; done
python3 - "$proxy_dir/v$version.zip" "github.com/polylimit/polylimit@v$version/" <<'EOF'
import re, sys, zipfile
path, prefix = sys.argv[1:3]
# No C or C++ source or header that a build can compile includes hiredis.
include = re.compile(rb"^\s*#\s*include\s*[<\x22]hiredis[/.]", re.M)
offenders, sources = [], 0
with zipfile.ZipFile(path) as z:
    names = z.namelist()
    for name in names:
        if not name.startswith(prefix):
            sys.exit("consumer: %s is outside %s in the module zip" % (name, prefix))
        f = name[len(prefix):]
        if f.startswith(("core/", "capi/", "bindings/go/")) and f.endswith((".c", ".cc", ".cpp", ".h", ".hpp")):
            sources += 1
            if include.search(z.read(name)):
                offenders.append(f)
if offenders:
    sys.exit("consumer: the module zip has sources that include hiredis: " + " ".join(offenders))
if prefix + "bindings/go/internal/bundled/bundled.go" not in names:
    sys.exit("consumer: the module zip lacks the bundled core (bindings/go/internal/bundled)")
print("consumer: the module zip: %d C/C++ files, none includes hiredis" % sources)
EOF

cat >"$tmp/main.go" <<'GO'
package main

import (
	"context"
	"fmt"
	"os"

	polylimit "github.com/polylimit/polylimit/bindings/go"
)

func main() {
	client, err := polylimit.Open(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer client.Close()
	limiter, err := client.Limiter("3/minute", polylimit.WithPrefix("consumer-"+os.Args[2]))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer limiter.Close()
	admitted, retryAfter := 0, 0
	for i := 0; i < 5; i++ {
		res, err := limiter.Allow(context.Background(), "user:1")
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		if res.Allowed {
			admitted++
		} else if res.RetryAfter > 0 {
			retryAfter++
		}
	}
	fmt.Printf("version=%s admitted=%d denied_with_retry_after=%d\n", polylimit.Version(), admitted, retryAfter)
}
GO

cat >"$tmp/prom.go" <<'GO'
package main

import (
	"context"
	"fmt"
	"os"

	polylimit "github.com/polylimit/polylimit/bindings/go"
	"github.com/polylimit/polylimit/bindings/go/promcollector"
	"github.com/prometheus/client_golang/prometheus"
)

func main() {
	client, err := polylimit.Open(os.Args[1], polylimit.WithName("consumer"))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer client.Close()
	limiter, err := client.Limiter("3/minute", polylimit.WithPrefix("consumer-"+os.Args[2]))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer limiter.Close()
	for i := 0; i < 5; i++ {
		if _, err := limiter.Allow(context.Background(), "user:1"); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
	}
	col, err := promcollector.New(client)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	registry := prometheus.NewRegistry()
	if err := registry.Register(col); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	families, err := registry.Gather()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	checks := -1.0
	for _, mf := range families {
		if mf.GetName() == "polylimit_checks_total" && len(mf.GetMetric()) == 1 {
			checks = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	fmt.Printf("version=%s polylimit_checks_total=%g\n", polylimit.Version(), checks)
}
GO

# The user's environment: nothing of polylimit's; the proxy above and no
# checksum database (the zip is made here, not published).
clean=(env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH -u LIBRARY_PATH -u CPATH -u C_INCLUDE_PATH
  -u CPLUS_INCLUDE_PATH -u CGO_CFLAGS -u CGO_CPPFLAGS -u CGO_CXXFLAGS -u CGO_LDFLAGS
  PKG_CONFIG=false CGO_ENABLED=1 GOTOOLCHAIN=local GOFLAGS=-mod=mod GOSUMDB=off
  GOPROXY="file://$tmp/proxy" GOMODCACHE="$tmp/gomodcache" GOCACHE="$tmp/gocache")
# No network for the builds, where this machine can cut it (root).
nonet=()
if [ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null; then
  nonet=(unshare -n)
  echo "consumer: the builds run with no network (unshare -n)"
fi
# No hiredis in view for the builds, where this machine can hide it.
hide=()
if "$root/tests/without-hiredis.sh" --check; then
  hide=("$root/tests/without-hiredis.sh")
  echo "consumer: the builds run with hiredis's headers and libraries hidden (tests/without-hiredis.sh)"
elif [ "${CI:-}" = true ]; then
  echo "consumer: CI must build with hiredis hidden (run as root, with unshare)" >&2
  exit 1
else
  echo "consumer: hiredis stays in view (only the check of the zip's sources guards against it)" >&2
fi

# timed CMD...: runs CMD (its stderr to the caller's), sets took to its wall
# and CPU time: the CPU time says more than the wall time on a busy machine.
timed() {
  local TIMEFORMAT='%R %U %S'
  local rc=0
  { time "$@" 2>&3; } 3>&2 2>"$tmp/time" || rc=$?
  if [ "$rc" -ne 0 ]; then echo "timed: exit status $rc: $*" >&2; return "$rc"; fi
  took=$(awk '{ printf "%.1f s wall, %.1f s CPU", $1, $2 + $3 }' "$tmp/time")
}

# consumer NAME WHAT MAIN WANT [cached]: builds $tmp/NAME (its go.mod
# written by the caller) from MAIN with the build cache $tmp/gocache, which
# must compile the core (unless `cached`: an earlier consumer left it
# there), then checks the program, runs it (it must print WANT) and builds it
# again.
consumer() {
  local name=$1 what=$2 main=$3 want=$4 cached=${5:-}
  local app="$tmp/$name"
  local out deps
  cp "$main" "$app/main.go"
  cd "$app"
  timed "${hide[@]}" "${nonet[@]}" "${clean[@]}" go build -x -o "$app/consumer" . 2>"$app/build-x.log" ||
    { grep -E -A8 '^# github\.com/|error:' "$app/build-x.log" | head -n 60 >&2 || true; return 1; }
  echo "consumer ($name): first go build ($what): $took"
  if [ -z "$cached" ] && ! grep -Eq 'core_limiter\.cpp' "$app/build-x.log"; then
    echo "consumer ($name): the first build did not compile the core" >&2
    return 1
  fi

  deps=$(ldd "$app/consumer")
  echo "consumer ($name): ldd"
  echo "$deps" | sed 's/^/  /'
  if grep -Eq 'libpolylimit|libhiredis' <<<"$deps"; then
    echo "consumer ($name): the program needs libpolylimit or libhiredis at run time" >&2
    return 1
  fi

  out=$(env -u LD_LIBRARY_PATH "$app/consumer" "$POLYLIMIT_TEST_REDIS_URL" "$name") || {
    echo "consumer ($name): $out" >&2
    return 1
  }
  echo "consumer ($name): $out"
  if [ "$out" != "$want" ]; then
    echo "consumer ($name): expected '$want'" >&2
    return 1
  fi

  timed "${nonet[@]}" "${clean[@]}" go build -x -o "$app/consumer" . 2>"$app/build-x.log"
  echo "consumer ($name): second go build (cached): $took"
  if grep -Eq '\.(cpp|cc)\b' "$app/build-x.log"; then
    echo "consumer ($name): the second build compiled C++ again; the build cache did not hold the core:" >&2
    grep -E '\.(cpp|cc)\b' "$app/build-x.log" | head -n 5 >&2
    return 1
  fi
}

# 1. The binding alone: the proxy serves nothing but polylimit.
mkdir "$tmp/proxy-app"
printf 'module example.com/consumer\n\ngo 1.23\n' >"$tmp/proxy-app/go.mod"
(cd "$tmp/proxy-app" && "${nonet[@]}" "${clean[@]}" go get "github.com/polylimit/polylimit/bindings/go@v$version")
if ! grep -q "github.com/polylimit/polylimit v$version" "$tmp/proxy-app/go.mod"; then
  echo "consumer (proxy): go get did not require the root module:" >&2
  cat "$tmp/proxy-app/go.mod" >&2
  exit 1
fi
consumer proxy-app "empty build cache: the standard library and the core from the module zip" "$tmp/main.go" \
  "version=$version admitted=3 denied_with_retry_after=2"
if grep -i prometheus "$tmp/proxy-app/go.mod" "$tmp/proxy-app/go.sum"; then
  echo "consumer (proxy): a module that does not import promcollector names prometheus (above)" >&2
  exit 1
fi

# 2. promcollector, a package of the same module: no replace; client_golang
# and its requirements from the module cache, as the checkout's go.sum pins them.
(cd "$root" && env GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download)
modcache=$(go env GOMODCACHE)
mkdir "$tmp/prom-app"
printf 'module example.com/promconsumer\n\ngo 1.23\n' >"$tmp/prom-app/go.mod"
(cd "$tmp/prom-app" && "${nonet[@]}" "${clean[@]}" GOPROXY="file://$tmp/proxy,file://$modcache/cache/download" \
  go get "github.com/polylimit/polylimit/bindings/go/promcollector@v$version")
if grep -q replace "$tmp/prom-app/go.mod" ||
  ! grep -q "github.com/polylimit/polylimit v$version" "$tmp/prom-app/go.mod" ||
  ! grep -q "github.com/prometheus/client_golang" "$tmp/prom-app/go.mod"; then
  echo "consumer (promcollector): go get did not require the root module and client_golang:" >&2
  cat "$tmp/prom-app/go.mod" >&2
  exit 1
fi
clean+=(GOPROXY="file://$tmp/proxy,file://$modcache/cache/download")
consumer prom-app "client_golang and promcollector; the core from the first build's cache" "$tmp/prom.go" \
  "version=$version polylimit_checks_total=5" cached
echo "consumer: ok"
