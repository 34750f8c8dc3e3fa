#!/usr/bin/env bash
# A Go program of a user's, outside the repository: a fresh module that
# requires github.com/polylimit/polylimit with a replace onto this checkout,
# built with nothing of polylimit installed or findable (no PKG_CONFIG_PATH,
# no LD_LIBRARY_PATH, no CGO_* flags, and pkg-config replaced by `false`, so
# a build that asked it would fail) and an empty build cache, as a first
# `go build` after `go get` is. Then:
#   - ldd of the program names no libpolylimit;
#   - the program runs against a real redis-server and must admit 3 of 5
#     requests to a 3/minute limit, with a Retry-After on the denied ones;
#   - a second build finds everything in the cache (compiles no C++).
# Prints both build times. Run by tests/go/run.sh; runs alone too.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

tmp=$(mktemp -d /tmp/polylimit-go-consumer-XXXXXX)
redis_pid=
cleanup() {
  if [ -n "$redis_pid" ]; then "$root/tests/redis-server.sh" stop "$redis_pid" "$redis_dir" || true; fi
  chmod -R u+w "$tmp" 2>/dev/null || true  # the module cache is read-only
  rm -rf "$tmp"
}
trap cleanup EXIT

mkdir "$tmp/app"
cat >"$tmp/app/go.mod" <<EOF
module example.com/consumer

go 1.19

require github.com/polylimit/polylimit v0.0.0

replace github.com/polylimit/polylimit => $root
EOF
cat >"$tmp/app/main.go" <<'EOF'
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
	limiter, err := client.Limiter("3/minute", polylimit.WithPrefix("consumer"))
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
EOF

# The user's environment: nothing of polylimit's, an empty build cache.
clean=(env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH -u LIBRARY_PATH -u CPATH -u C_INCLUDE_PATH
  -u CPLUS_INCLUDE_PATH -u CGO_CFLAGS -u CGO_CPPFLAGS -u CGO_CXXFLAGS -u CGO_LDFLAGS
  PKG_CONFIG=false CGO_ENABLED=1 GOTOOLCHAIN=local GOFLAGS=-mod=mod
  GOCACHE="$tmp/gocache" GOMODCACHE="$tmp/gomodcache")
cd "$tmp/app"
start=$(date +%s.%N)
"${clean[@]}" go build -o "$tmp/consumer" .
first=$(echo "$(date +%s.%N) - $start" | bc)
printf 'consumer: first go build (empty build cache: compiles the core once): %.1f s\n' "$first"

deps=$(ldd "$tmp/consumer")
echo "consumer: ldd"
echo "$deps" | sed 's/^/  /'
if grep -q libpolylimit <<<"$deps"; then
  echo "consumer: the program needs libpolylimit at run time" >&2
  exit 1
fi

eval "$("$root/tests/redis-server.sh" start)"
redis_pid=$POLYLIMIT_TEST_REDIS_PID redis_dir=$POLYLIMIT_TEST_REDIS_DIR
out=$(env -u LD_LIBRARY_PATH "$tmp/consumer" "$POLYLIMIT_TEST_REDIS_URL") || { echo "consumer: $out" >&2; exit 1; }
echo "consumer: $out"
want="version=$(sed -n 's/^#define POLYLIMIT_VERSION_STRING "\(.*\)"$/\1/p' "$root/capi/include/polylimit.h") admitted=3 denied_with_retry_after=2"
if [ "$out" != "$want" ]; then
  echo "consumer: expected '$want'" >&2
  exit 1
fi

start=$(date +%s.%N)
"${clean[@]}" go build -x -o "$tmp/consumer" . 2>"$tmp/build-x.log"
second=$(echo "$(date +%s.%N) - $start" | bc)
printf 'consumer: second go build (cached): %.1f s\n' "$second"
if grep -Eq '\.(cpp|cc)\b' "$tmp/build-x.log"; then
  echo "consumer: the second build compiled C++ again; the build cache did not hold the core:" >&2
  grep -E '\.(cpp|cc)\b' "$tmp/build-x.log" | head -n 5 >&2
  exit 1
fi
echo "consumer: ok"
