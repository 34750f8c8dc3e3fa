#!/usr/bin/env bash
# examples/rust-axum over real HTTP: two copies of the server against one
# redis-server share the per-IP limit exactly (ten 200s with RateLimit-*
# headers counting down, then 429 with Retry-After, whichever copy answers);
# /login has a count of its own, in which only failed logins count;
# /healthz and /metrics are exempt; a 429 has the contract's plain-text body.
#   tests/rust/example_http.sh [CARGO_FEATURES]   (tests/rust/run.sh passes
#   "system" when it links an installed library through PKG_CONFIG_PATH)
# CARGO_TARGET_DIR: the Rust suite's, so the crates its tests built are reused.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/build/rust-target}
features=${1:-}
cd "$root/examples/rust-axum"
# The versions the binding's own builds resolved (the lock file is not committed).
[ -f Cargo.lock ] || [ ! -f "$root/bindings/rust/Cargo.lock" ] || cp "$root/bindings/rust/Cargo.lock" Cargo.lock
cargo build -q -j "${POLYLIMIT_JOBS:-2}" ${features:+--features "$features"}
bin="$CARGO_TARGET_DIR/debug/rust-axum"

tmp=$(mktemp -d)
pids=()
redis_pid=
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  if [ -n "$redis_pid" ]; then "$root/tests/redis-server.sh" stop "$redis_pid" "$redis_dir" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
eval "$("$root/tests/redis-server.sh" start)"
redis_pid=$POLYLIMIT_TEST_REDIS_PID redis_dir=$POLYLIMIT_TEST_REDIS_DIR

fail() { echo "example_http: $*" >&2; exit 1; }

urls=()
for n in 1 2; do
  POLYLIMIT_URL=$POLYLIMIT_TEST_REDIS_URL ADDR=127.0.0.1:0 NAME="web-$n" PREFIX="rust-axum-test-$$" \
    "$bin" >"$tmp/out$n" 2>"$tmp/err$n" &
  pids+=($!)
  for _ in $(seq 100); do grep -q '^listening on ' "$tmp/out$n" && break; sleep 0.1; done
  url=$(sed -n 's/^listening on //p' "$tmp/out$n")
  [ -n "$url" ] || fail "server $n did not start: $(cat "$tmp/err$n")"
  urls+=("$url")
done

# get N METHOD PATH [CURL ARGS]: status code; the response head in $tmp/head
# (lowercased), the body in $tmp/body.
get() {
  local code
  code=$(curl -s -X "$2" -D "$tmp/head" -o "$tmp/body" -w '%{http_code}' "${@:4}" "${urls[$1]}$3")
  tr '[:upper:]' '[:lower:]' <"$tmp/head" | tr -d '\r' >"$tmp/head.lc"
  mv "$tmp/head.lc" "$tmp/head"
  echo "$code"
}
header() { sed -n "s/^$1: //p" "$tmp/head"; }

# The default limit, 10/minute per client IP, shared by both copies.
for i in $(seq 0 9); do
  code=$(get $((i % 2)) GET /)
  [ "$code" = 200 ] || fail "request $((i + 1)): $code, expected 200"
  [ "$(header ratelimit-remaining)" = $((9 - i)) ] || fail "request $((i + 1)): $(cat "$tmp/head")"
  [ "$(header ratelimit-limit)" = 10 ] || fail "request $((i + 1)): $(cat "$tmp/head")"
  [ -z "$(header retry-after)" ] || fail "an admitted request has Retry-After: $(cat "$tmp/head")"
done
for n in 0 1; do
  code=$(get $n GET /)
  [ "$code" = 429 ] || fail "request past the limit on server $((n + 1)): $code, expected 429"
  retry=$(header retry-after)
  [ -n "$retry" ] && [ "$retry" -ge 1 ] && [ "$retry" -le 60 ] || fail "429 without a sane Retry-After: $(cat "$tmp/head")"
  [ "$(header ratelimit-remaining)" = 0 ] || fail "429: $(cat "$tmp/head")"
  [ "$(cat "$tmp/body")" = "Too Many Requests" ] || fail "429 body: $(cat "$tmp/body")"
  [ "$(header content-type)" = "text/plain; charset=utf-8" ] || fail "429: $(cat "$tmp/head")"
done

# /login: 3/minute of its own, although / is spent; good logins are
# refunded (count_when failures), failed ones count.
for i in 1 2 3 4 5; do
  code=$(get $((i % 2)) POST /login -H 'X-Password: letmein')
  [ "$code" = 200 ] || fail "good login $i: $code, expected 200"
done
for i in 1 2 3; do
  code=$(get $((i % 2)) POST /login)
  [ "$code" = 401 ] || fail "failed login $i: $code, expected 401"
done
[ "$(get 0 POST /login -H 'X-Password: letmein')" = 429 ] || fail "login after 3 failures: expected 429"

# Exempt routes: no limit, no headers.
for i in $(seq 5); do
  [ "$(get 1 GET /healthz)" = 200 ] || fail "/healthz: not 200"
done
[ -z "$(header ratelimit-limit)" ] || fail "/healthz carries rate-limit headers"
metrics=$(curl -sf "${urls[0]}/metrics") || fail "/metrics failed"
grep -q 'client="web-1"' <<<"$metrics" || fail "/metrics: no client=\"web-1\" label: $metrics"
grep -q 'polylimit_http_requests_total{rule="login",outcome="denied"} 1' <<<"$metrics" ||
  fail "/metrics: no per-rule counter of the login denial: $metrics"

echo "example_http: 10 of 12 admitted across two servers, then 429; /login: 3 failures, then 429; exempt routes ok"
