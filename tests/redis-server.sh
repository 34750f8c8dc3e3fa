#!/usr/bin/env bash
# Starts a throwaway redis-server on a free loopback port in a temporary
# directory, for test suites in any language.
#   eval "$(tests/redis-server.sh start)"   # sets POLYLIMIT_TEST_REDIS_URL, POLYLIMIT_TEST_REDIS_PID, POLYLIMIT_TEST_REDIS_DIR
#   tests/redis-server.sh stop "$POLYLIMIT_TEST_REDIS_PID" "$POLYLIMIT_TEST_REDIS_DIR"
set -euo pipefail

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

case "${1:-}" in
  start)
    dir=$(mktemp -d /tmp/polylimit-redis-XXXXXX)
    for attempt in 1 2 3 4 5; do
      port=$(free_port)
      redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
        --protected-mode no --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >/dev/null
      for _ in $(seq 100); do
        if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
          echo "export POLYLIMIT_TEST_REDIS_URL=redis://127.0.0.1:$port POLYLIMIT_TEST_REDIS_PORT=$port POLYLIMIT_TEST_REDIS_PID=$(cat "$dir/redis.pid") POLYLIMIT_TEST_REDIS_DIR=$dir"
          exit 0
        fi
        sleep 0.05
      done
      [ -f "$dir/redis.pid" ] && kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
    done
    echo "redis-server did not start; see $dir/redis.log" >&2
    exit 1
    ;;
  stop)
    pid=${2:?pid}; dir=${3:?dir}
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start | stop PID DIR" >&2
    exit 2
    ;;
esac
