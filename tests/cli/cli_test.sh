#!/usr/bin/env bash
# Runs the built `polylimit` CLI and checks its output and exit status.
#   tests/cli/cli_test.sh PATH/TO/polylimit CASE
# CASE is one of the functions below (case_<name>); ctest runs each as its
# own test (tests/CMakeLists.txt). Cases that need state shared between runs
# start a throwaway redis-server (tests/redis-server.sh) and skip (exit 77)
# when there is none. Environment: PYTHON (default python3), EXPECTED_VERSION.
set -uo pipefail

CLI=${1:?usage: cli_test.sh PATH/TO/polylimit CASE}
CASE=${2:?usage: cli_test.sh PATH/TO/polylimit CASE}
PYTHON=${PYTHON:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
unset POLYLIMIT_URL  # every case sets it explicitly when it wants it
TMP=$(mktemp -d /tmp/polylimit-cli-test-XXXXXX)
REDIS_PID='' REDIS_DIR=''
cleanup() {
  [ -n "$REDIS_PID" ] && bash "$HERE/../redis-server.sh" stop "$REDIS_PID" "$REDIS_DIR"
  rm -rf "$TMP"
}
trap cleanup EXIT

fail() { echo "FAIL [$CASE]: $*" >&2; exit 1; }

# run [ENV=VALUE...] -- ARGS...: runs the CLI; sets $rc, $out, $err.
run() {
  local envs=()
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]+"${envs[@]}"}" "$CLI" "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  out=$(cat "$TMP/out")
  err=$(cat "$TMP/err")
  cat "$TMP/out" "$TMP/err" >>"$TMP/all"
}
expect_rc() { [ "$rc" -eq "$1" ] || fail "exit status $rc, expected $1 (stdout: $out) (stderr: $err)"; }
expect_out() { grep -Eq -- "$1" <<<"$out" || fail "stdout does not match /$1/: $out"; }
expect_err() { grep -Eq -- "$1" <<<"$err" || fail "stderr does not match /$1/: $err"; }
# json PYTHON-EXPR: evaluates EXPR with `lines` (the parsed stdout lines) and
# `out` (the raw stdout); fails unless it is true.
json() {
  printf '%s' "$out" | "$PYTHON" -c '
import json, sys
out = sys.stdin.read()
lines = [json.loads(l) for l in out.splitlines()]
ok = eval(sys.argv[1])
if not ok:
    sys.exit("assertion failed: %s\nstdout: %s" % (sys.argv[1], out))
' "$1" || fail "json check: $1"
}

start_redis() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null || { echo "no redis-server: skipped"; exit 77; }
  eval "$(bash "$HERE/../redis-server.sh" start)" || fail "redis-server did not start"
  REDIS_PID=$POLYLIMIT_TEST_REDIS_PID REDIS_DIR=$POLYLIMIT_TEST_REDIS_DIR
  URL=$POLYLIMIT_TEST_REDIS_URL
}

# ---- cases ------------------------------------------------------------------

case_version() {
  run -- --version
  expect_rc 0
  expect_out '^polylimit [0-9]+\.[0-9]+\.[0-9]+'
  if [ -n "${EXPECTED_VERSION:-}" ]; then
    [ "$out" = "polylimit $EXPECTED_VERSION" ] || fail "version '$out', expected 'polylimit $EXPECTED_VERSION'"
  fi
  run -- -V
  expect_rc 0
  # --version wins without a URL or command.
  run -- --url memory:// --version check
  expect_rc 0
}

case_help() {
  run -- --help
  expect_rc 0
  for word in 'check KEY' 'peek KEY' 'stats KEY' 'bench' '--json' 'POLYLIMIT_URL' 'memory://' '--seconds' \
              'per process' 'Exit status'; do
    grep -Fq -- "$word" <<<"$out" || fail "--help does not mention '$word'"
  done
  [ -z "$err" ] || fail "--help wrote to stderr: $err"
  run -- -h
  expect_rc 0
}

case_check_memory() {
  run -- --url memory:// --spec "5 per 2 seconds" check user-1
  expect_rc 0
  expect_out '^key=user-1 allowed=1 limit=5 remaining=4 '
}

case_json_check() {
  run -- --url memory:// --spec 5/minute --json check user-1
  expect_rc 0
  json 'len(lines) == 1 and lines[0] == {**lines[0], "command": "check", "key": "user-1", "allowed": True,
        "cached": False, "degraded": False, "shadowed": False, "limit": 5, "remaining": 4, "retry_after_ms": 0,
        "granted": 1}'
  json 'isinstance(lines[0]["reset_after_ms"], int) and 0 < lines[0]["reset_after_ms"] <= 60000'
  run -- --url memory:// --json peek user-1
  expect_rc 0
  json 'lines[0]["command"] == "peek" and lines[0]["granted"] == 0 and lines[0]["remaining"] == 10'
  # Keys are bytes: quotes, backslashes, control bytes and UTF-8 survive;
  # invalid UTF-8 is flagged and given exactly in key_hex.
  key=$'q"b\\s\nn\tt\x01 \xc3\xa9'
  run -- --url memory:// --json check -- "$key"
  expect_rc 0
  json 'lines[0]["key"] == "q\"b\\s\nn\tt\x01 \u00e9" and "key_hex" not in lines[0] and len(out.splitlines()) == 1'
  run -- --url memory:// --json check -- $'\xff\xfeab'
  expect_rc 0
  json 'lines[0]["key"] == "\ufffd\ufffdab" and bytes.fromhex(lines[0]["key_hex"]) == b"\xff\xfeab"'
  # Text mode keeps one result on one line.
  run -- --url memory:// check -- $'a b\nc'
  expect_rc 0
  [ "$(wc -l <"$TMP/out")" -eq 1 ] || fail "text output of a key with a newline is not one line: $out"
  expect_out '^key=a\\x20b\\x0ac allowed=1'
}

case_dashdash() {
  run -- --url=memory:// --spec=2/s --json check -- -42
  expect_rc 0
  json 'lines[0]["key"] == "-42" and lines[0]["limit"] == 2 and lines[0]["remaining"] == 1'
  # Options may follow the command; '--' still ends them.
  run -- check --url memory:// --json -- --json
  expect_rc 0
  json 'lines[0]["key"] == "--json"'
  run POSIXLY_CORRECT=1 -- check --url memory:// --json -- --json
  expect_rc 0
  json 'lines[0]["key"] == "--json"'
  # Without '--' the key is an unknown option: usage error naming it.
  run -- --url memory:// check -42
  expect_rc 2
  expect_err "unknown option '-4'"
  expect_err "'--'"
  [ -z "$out" ] || fail "stdout not empty on a usage error: $out"
}

case_spec_forms() {
  # --opt=value and --opt value are the same.
  run -- --url=memory:// --spec=2/s --cost=2 --json check k
  expect_rc 0
  json 'lines[0]["limit"] == 2 and lines[0]["remaining"] == 0 and lines[0]["granted"] == 2'
  run -- --url memory:// --spec 2/s --cost 2 --json check k
  expect_rc 0
  json 'lines[0]["limit"] == 2 and lines[0]["remaining"] == 0'
  run -- --url memory:// --spec "5/fortnight" check k
  expect_rc 2
  expect_err '^polylimit: --spec: .*fortnight'
}

case_env_url() {
  run POLYLIMIT_URL=memory:// -- --json check k
  expect_rc 0
  json 'lines[0]["allowed"] is True'
  # --url wins over the environment.
  run POLYLIMIT_URL=redis://127.0.0.1:1 -- --url memory:// check k
  expect_rc 0
  # A bad URL from the environment is reported as such.
  run POLYLIMIT_URL=bogus://x -- check k
  expect_rc 2
  expect_err '^polylimit: POLYLIMIT_URL: '
}

case_missing_url() {
  for env in "" "POLYLIMIT_URL="; do
    run $env -- check k
    expect_rc 2
    expect_err '--url'
    expect_err 'POLYLIMIT_URL'
    expect_err 'memory://'
    [ -z "$out" ] || fail "missing URL still printed a result (a silent default?): $out"
  done
}

case_usage_errors() {
  # Each bad argument: exit 2, a message that names it, nothing on stdout.
  local cases=(
    "--bogus|--url memory:// --bogus check k"
    "--cost|--url memory:// --cost abc check k"
    "--cost|--url memory:// --cost=0 check k"
    "--threads|--url memory:// --threads 0 bench"
    "--pool-size|--url memory:// --pool-size 0 bench"
    "--pool-size|--url memory:// --pool-size=4097 bench"
    "--timeout-ms|--url memory:// --timeout-ms=-5 check k"
    "--algorithm|--url memory:// --algorithm nope check k"
    "--json|--url memory:// --json=yes check k"
    "--url|check k --url"
    "frobnicate|--url memory:// frobnicate"
    "check takes exactly one KEY|--url memory:// check"
    "check takes exactly one KEY|--url memory:// check a b"
    "stats takes one or more KEYs|--url memory:// stats"
    "bench takes no arguments|--url memory:// bench extra"
    "no command|--url memory://"
  )
  local c want args
  for c in "${cases[@]}"; do
    want=${c%%|*}
    read -r -a args <<<"${c#*|}"
    run -- "${args[@]}"
    expect_rc 2
    grep -Fq -- "$want" <<<"$err" || fail "'${args[*]}': stderr does not name '$want': $err"
    [ -z "$out" ] || fail "'${args[*]}': stdout not empty: $out"
  done
  # A check that the library rejects (cost above the limit) is an error too.
  run -- --url memory:// --spec 1/s --cost 2 check k
  expect_rc 2
  expect_err 'POLYLIMIT_EINVALID'
}

case_seconds() {
  local start end
  start=$(date +%s%N)
  run -- --url memory:// --json bench --threads 1 --seconds 0.5
  end=$(date +%s%N)
  expect_rc 0
  json 'abs(sum(l["elapsed_s"] for l in lines) - 0.5) < 0.25'
  [ $(((end - start) / 1000000)) -lt 5000 ] || fail "bench --seconds 0.5 took $(((end - start) / 1000000)) ms"
  run -- --url memory:// --json bench --threads 1 --seconds=.2
  expect_rc 0
  for bad in 0 -1 nan inf -inf 1e9 86401 0.5s "" abc; do
    run -- --url memory:// bench --seconds "$bad"
    expect_rc 2
    expect_err "--seconds '$bad'"
  done
}

# checks/s: over the elapsed time less the threads' mean time spent draining
rate_is_measured='all(abs(l["checks_per_s"] - l["checks"] / (l["elapsed_s"] - l["drain_s"] / l["threads"])) <= 0.01 * l["checks_per_s"] + 1 for l in lines)'

# bench_json URL: both paths present, measured, and on the expected side.
bench_json() {
  run -- --url "$1" --json bench --threads 2 --seconds 0.4
  expect_rc 0
  json '[l["path"] for l in lines] == ["allow", "deny"] and all(l["command"] == "bench" for l in lines)'
  json 'all(l["checks_per_s"] > 0 and l["checks"] > 0 and l["errors"] == 0 and l["elapsed_s"] > 0.1 for l in lines)'
  json "$rate_is_measured"
  json 'lines[0]["admitted"] == lines[0]["checks"] and lines[1]["denied"] > 0'
  json 'all(0 <= l["p50_us"] <= l["p90_us"] <= l["p99_us"] <= l["p999_us"] <= l["max_us"] for l in lines)'
}

# bench_refills URL: a deny-path key that refills (GCRA, a unit a
# millisecond) is drained again, outside the measured time.
bench_refills() {
  run -- --url "$1" --json --spec 1000/second --algorithm gcra bench --threads 2 --seconds 0.4
  expect_rc 0
  json 'lines[0]["drains"] == 0 and lines[0]["drain_s"] == 0 and lines[1]["drains"] > 0'
  json "$rate_is_measured"
}

case_bench_memory() {
  bench_json memory://
  bench_refills memory://
  run -- --url memory:// --spec 1000/second --algorithm gcra bench --threads 2 --seconds 0.4
  expect_rc 0
  expect_out '^deny +the key refilled [0-9]+ times: drained again in [0-9.]+ s \(all threads\), left out of checks/s'
  run -- --url memory:// bench --threads 2 --seconds 0.2
  expect_rc 0
  expect_out '^allow .* checks/s'
  expect_out '^deny .* checks/s'
  expect_out '^deny +latency us +p50 [0-9.]+ +p90 [0-9.]+ +p99 [0-9.]+'
}

case_secrets() {
  # The library quotes a bad URL: the password must not reach the output.
  run -- --url 'redis://bob:s3cretPW@localhost:notaport' check k
  expect_rc 2
  expect_err 'bob:\*\*\*@localhost'
  run -- --url 'redis://:s3cretPW@localhost:notaport' check k
  expect_rc 2
  expect_err ':\*\*\*@localhost'
  run -- --url 'redis+sentinel://u:s3cretPW@h:1/m?sentinel_user=x&sentinel_password=s3cretSP&x=1' check k
  expect_rc 2
  expect_err 'sentinel_password=\*\*\*'
  run POLYLIMIT_URL='redis://bob:s3cret%40PW@localhost:notaport' -- check k
  expect_rc 2
  # A URL long enough that the library's 256-byte message cuts the password.
  local long
  long="redis://bob:s3cretPW$(printf 'x%.0s' $(seq 300))@localhost:notaport"
  run -- --url "$long" check k
  expect_rc 2
  # Passwords with unencoded separators, and URLs that are not URLs: the
  # library's redaction hides what may be a password.
  local url
  for url in 'redis://bob:s3cretPW/x@localhost:1' 'redis://bob:s3cretPW?x@localhost:1' \
      'redis://bob:s3cretPW@x@localhost:99999' 'bob:s3cretPW@localhost://x' 'redis:/bob:s3cretPW@localhost' \
      'redis+sentinel://h/m?sentinel_password=s3cretSP&s3cretTail&bogus=1' 'unix:///tmp/s3cretPW@x.sock' \
      'rediss+cluster://:s3cretPW@h:1,h:99999'; do
    run -- --url "$url" check k
    expect_rc 2
    expect_err '\*\*\*'
  done
  # A refused port: the URL as the CLI shows it is redacted too.
  run -- --url 'redis://bob:s3cretPW@127.0.0.1:1' --spec 5/minute bench --threads 1 --seconds 0.1
  # No run above printed a password (checked for every case at the end).
}

case_redis() {
  start_redis
  local p=--prefix=clitest
  # Exit status 0 admitted, then 1 denied, across processes (--spec=2/minute).
  run -- --url "$URL" $p --spec=2/minute --json check -- -42
  expect_rc 0
  json 'lines[0]["remaining"] == 1'
  run POLYLIMIT_URL="$URL" -- $p --spec=2/minute --json check -- -42
  expect_rc 0
  json 'lines[0]["remaining"] == 0'
  run -- --url "$URL" $p --spec=2/minute --json check -- -42
  expect_rc 1
  json 'lines[0]["allowed"] is False and lines[0]["retry_after_ms"] > 0 and lines[0]["granted"] == 0'
  run -- --url "$URL" $p --spec=2/minute peek -- -42
  expect_rc 1
  expect_out '^key=-42 allowed=0 limit=2 remaining=0'
  # stats reads the server: another process's checks show.
  run -- --url "$URL" $p --spec 5/minute check user-1
  expect_rc 0
  run -- --url "$URL" $p --spec 5/minute --json stats user-1 user-2
  expect_rc 0
  json 'lines[0] == {**lines[0], "command": "stats", "scope": "server", "key": "user-1", "remaining": 4, "limit": 5}'
  json 'lines[1]["key"] == "user-2" and lines[1]["remaining"] == 5 and lines[2]["scope"] == "process"'
  json 'all(k in lines[2] for k in ("checks", "admitted", "denied", "errors", "round_trips"))'
  # stats consumed nothing.
  run -- --url "$URL" $p --spec 5/minute --json peek user-1
  json 'lines[0]["remaining"] == 4'
  # reset, then admitted again.
  run -- --url "$URL" $p --spec=2/minute --json reset -- -42
  expect_rc 0
  json 'lines[0] == {"command": "reset", "key": "-42", "reset": True}'
  run -- --url "$URL" $p --spec=2/minute check -- -42
  expect_rc 0
  # A wrong password: an error (2), and the password is not printed.
  local port=${URL##*:}
  run -- --url "redis://bob:s3cretPW@127.0.0.1:$port" check k
  expect_rc 2
  expect_err 'POLYLIMIT_EAUTH'
  # Nothing listening: an error (2).
  run -- --url "redis://127.0.0.1:1" --json check k
  expect_rc 2
  [ -z "$out" ] || fail "stdout not empty on an error: $out"
  # bench on a real server: both paths; a refilling key's drains take
  # measurable time there, which checks/s leaves out.
  bench_json "$URL"
  bench_refills "$URL"
  json 'lines[1]["drain_s"] > 0 and lines[1]["checks_per_s"] > lines[1]["checks"] / lines[1]["elapsed_s"]'
  # bench runs the library's default pool (2 connections a node), not one
  # connection per thread, unless --pool-size asks for more.
  run -- --url "$URL" --json bench --threads 16 --seconds 0.4
  expect_rc 0
  json 'all(l["pool_size"] == 2 and 1 <= l["connect_attempts"] <= 2 for l in lines)'
  run -- --url "$URL" --json --pool-size 6 bench --threads 16 --seconds 0.4
  expect_rc 0
  json 'all(l["pool_size"] == 6 and 1 <= l["connect_attempts"] <= 6 for l in lines)'
  true
}

# policy check / explain on the docs' example (docs/examples/policy.toml),
# then a key's state on a real server as explain shows it.
case_policy() {
  local doc="$HERE/../../docs/examples/policy.toml"
  run -- policy check "$doc"
  expect_rc 0
  expect_out "valid, 4 rules"
  expect_out "search: by plan"
  expect_out "health: exempt"
  sed 's/^default_plan = "free".*/default_plan = "gold"/' "$doc" >"$TMP/bad.toml"
  run -- policy check "$TMP/bad.toml"
  expect_rc 2
  expect_err 'policy line 6: default_plan: must name one of the plans \(enterprise, free, pro\)'
  run -- policy explain "$doc" --path /api/orders --tenant initech
  expect_rc 0
  expect_out '^rule: +api$'
  expect_out '^key: +tenant:initech$'
  expect_out '^plan: +enterprise$'
  expect_out '"api-1000-per-60s";q=1000;w=60'
  run -- policy explain "$doc" --path /api/orders --tenant globex
  expect_out '^plan: +free$'
  run -- policy explain "$doc" --path /api/orders --tenant globex --plan pro
  expect_out '^plan: +pro$'
  run -- policy explain "$doc" --path /api/orders
  expect_rc 1
  expect_out 'answer 401'
  run -- policy explain "$doc" --path /x --ip 203.0.113.9
  expect_out 'answer 403'
  run -- policy explain "$doc" --method POST --path /login --ip 10.1.1.1 --header X-Forwarded-For=198.51.100.7
  expect_out '^key: +ip:198.51.100.7$'
  run -- policy explain "$doc" --path /healthz
  expect_out 'proceed, unchecked \(the rule exempts it\)'
  run -- policy explain "$doc" --bogus 1
  expect_rc 2
  start_redis
  # Use up the free plan's 10/minute the way a service would (the document's
  # limiter stores under "shop:api"), then ask.
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    run -- --url "$URL" --prefix shop:api --spec 10/minute check tenant:globex
    expect_rc 0
  done
  run -- policy explain "$doc" --path /api/orders --tenant globex --url "$URL"
  expect_rc 1
  expect_out '^state: +0 of 10 left on '
  expect_out 'the next request would get 429'
  run -- policy explain "$doc" --path /api/orders --tenant acme --url "$URL"
  expect_rc 0
  expect_out '^state: +100 of 100 left'
}

# ---- main -------------------------------------------------------------------

[ -x "$CLI" ] || fail "no executable at $CLI"
declare -F "case_$CASE" >/dev/null || { echo "unknown case '$CASE'" >&2; exit 2; }
"case_$CASE"
# No run of any case may print a password ("s3cret..." in the URLs above).
if grep -q 's3cret' "$TMP/all" 2>/dev/null; then fail "a password was printed: $(grep 's3cret' "$TMP/all")"; fi
echo "ok [$CASE]"
