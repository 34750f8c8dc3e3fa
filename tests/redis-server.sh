#!/usr/bin/env bash
# Starts a throwaway redis-server on a free loopback port in a temporary
# directory, for shell scripts (the demo, the C, CLI and README checks):
#   eval "$(tests/redis-server.sh start [REDIS-SERVER-ARGS...])"
#       # sets POLYLIMIT_TEST_REDIS_URL, POLYLIMIT_TEST_REDIS_PORT,
#       # POLYLIMIT_TEST_REDIS_PID (the server's), POLYLIMIT_TEST_REDIS_DIR and
#       # POLYLIMIT_TEST_REDIS_SERVER (what runs, e.g. valkey-server-8.0.1;
#       # $POLYLIMIT_SERVER chooses it: tests/fixture/redisfix)
#   tests/redis-server.sh stop "$POLYLIMIT_TEST_REDIS_PID" "$POLYLIMIT_TEST_REDIS_DIR"
# A thin wrapper of tests/fixture/redisfix, the launcher every suite shares:
# the launcher reads its commands from a FIFO in DIR, which a background
# `sleep` holds open until `stop` ends it (the launcher then stops the server).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fix=${POLYLIMIT_REDISFIX:-$here/fixture/redisfix}

case "${1:-}" in
  start)
    shift
    dir=$(mktemp -d /tmp/polylimit-redis-XXXXXX)
    mkfifo "$dir/in"
    # Nothing in the background may hold our stdout: "$(... start)" and ctest
    # wait for it to close.
    python3 "$fix" standalone -- "$@" <"$dir/in" >"$dir/out" 2>"$dir/err" &
    echo $! >"$dir/launcher.pid"
    # shellcheck disable=SC2217  # holds the FIFO open; sleep reads nothing
    sleep infinity >"$dir/in" </dev/null 2>/dev/null &
    echo $! >"$dir/holder.pid"
    # Wait (with a deadline) for the launcher's one-line description.
    for _ in $(seq 600); do
      [ -s "$dir/out" ] && break
      kill -0 "$(cat "$dir/launcher.pid")" 2>/dev/null || break
      sleep 0.05
    done
    line=$(head -n1 "$dir/out" 2>/dev/null || true)
    if ! vars=$(python3 -c '
import json, sys
d = json.loads(sys.argv[1])
if "error" in d:
    sys.exit(d["error"])
n = d["nodes"][0]
print("export POLYLIMIT_TEST_REDIS_URL=%s POLYLIMIT_TEST_REDIS_PORT=%d POLYLIMIT_TEST_REDIS_PID=%d POLYLIMIT_TEST_REDIS_DIR=%s"
      " POLYLIMIT_TEST_REDIS_SERVER=%s-server-%s"
      % (d["url"], n["port"], n["pid"], sys.argv[2], d["server"]["name"], d["server"]["version"]))
' "${line:-{\}}" "$dir" 2>&1); then
      echo "redis-server did not start: ${vars:-no description} $(cat "$dir/err" 2>/dev/null)" >&2
      kill "$(cat "$dir/holder.pid")" 2>/dev/null || true
      rm -rf "$dir"
      exit 1
    fi
    echo "$vars"
    ;;
  stop)
    pid=${2:?pid}; dir=${3:?dir}
    if [ -f "$dir/holder.pid" ]; then
      kill "$(cat "$dir/holder.pid")" 2>/dev/null || true  # end of input: the launcher stops the server
      launcher=$(cat "$dir/launcher.pid")
      # Done when it has said so (its last line), or is gone. (Not kill -0 alone:
      # our parent may be gone, and a zombie nobody reaps answers kill -0.)
      for _ in $(seq 300); do
        [ "$(wc -l <"$dir/out")" -ge 2 ] && break
        kill -0 "$launcher" 2>/dev/null || break
        sleep 0.02
      done
    fi
    kill "$pid" 2>/dev/null || true  # gone by now; a last resort otherwise
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start [REDIS-SERVER-ARGS...] | stop PID DIR" >&2
    exit 2
    ;;
esac
