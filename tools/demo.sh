#!/usr/bin/env bash
# The demo: builds polylimit, starts a private redis-server, and runs worker
# processes written in several languages against ONE shared key with one limit.
# Each worker prints how many of its attempts were admitted; the total must
# equal the limit, whatever the mix of languages.
#   tools/demo.sh [--server NAME] [LIMIT] [ATTEMPTS_PER_WORKER]
# --server: the server to run on instead of the redis-server on PATH: a build
# of tools/servers.sh (valkey, redis, valkey-8.0.1, redis-7.2.6; built into
# its cache first when missing) or "system" (tests/fixture/redisfix,
# POLYLIMIT_SERVER).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
server=${POLYLIMIT_SERVER:-system}
if [ "${1:-}" = --server ]; then
  server=${2:?--server needs a name: valkey, redis, valkey-8.0.1, redis-7.2.6 or system}
  shift 2
elif [[ ${1:-} == --server=* ]]; then
  server=${1#--server=}
  shift
fi
limit=${1:-1000}
attempts=${2:-400}
window_ms=60000

"$root/tools/deps.sh" core
if [ "$server" != system ]; then
  "$root/tools/deps.sh" servers
  "$root/tools/servers.sh" build "$server" >/dev/null
fi
export POLYLIMIT_SERVER=$server
source "$root/tools/env.sh"
echo "building polylimit ..."
polylimit_build_release >/dev/null

# Workers, by language: a command line prefix each (URL KEY LIMIT WINDOW_MS ATTEMPTS NAME follow).
workers=()
names=()
add_worker() { names+=("$1"); workers+=("$2"); }
for i in 1 2 3; do add_worker "c-$i" "$POLYLIMIT_BUILD_DIR/tools/polylimit_demo_worker"; done

# Python, Go, Java, Node and Rust workers join when their toolchains are present
# (as root, tools/deps.sh installs all but Rust's cargo); otherwise the demo
# says what it skipped.
skipped=()
if [ -f "$root/tools/demo/worker.py" ] && "$root/tools/deps.sh" python >/dev/null 2>&1; then
  venv="$root/build/venv-demo"
  echo "building the Python wheel ..."
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  # Rebuilt every time (incrementally, in its own build dir) so the demo never
  # runs a stale copy of the package.
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install -q "scikit-build-core>=0.10" "pybind11>=2.12"
  CMAKE_BUILD_PARALLEL_LEVEL=$POLYLIMIT_JOBS PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install -q --force-reinstall \
    --no-deps --no-build-isolation --config-settings=build-dir="$root/build/demo-python-skbuild" "$root"
  for i in 1 2; do add_worker "python-$i" "$venv/bin/python $root/tools/demo/worker.py"; done
else
  skipped+=(python)
fi
if [ -d "$root/bindings/go/cmd/polylimit-demo-worker" ] && "$root/tools/deps.sh" go >/dev/null 2>&1; then
  echo "building the Go worker ..."
  # The library built above, as every other worker uses (-tags polylimit_system;
  # a default build would compile the core again, into the program).
  (cd "$root/bindings/go" && go build -tags polylimit_system -o "$root/build/polylimit-demo-worker-go" ./cmd/polylimit-demo-worker)
  for i in 1 2; do add_worker "go-$i" "$root/build/polylimit-demo-worker-go"; done
else
  skipped+=(go)
fi
if [ -x "$root/bindings/swig/demo-worker.sh" ] && "$root/tools/deps.sh" java >/dev/null 2>&1; then
  echo "building the Java worker ..."
  java_cmd=$("$root/bindings/swig/demo-worker.sh")  # builds, prints the command line
  for i in 1 2; do add_worker "java-$i" "$java_cmd"; done
else
  skipped+=(java)
fi

if [ -f "$root/tools/demo/worker.js" ] && "$root/tools/deps.sh" node >/dev/null 2>&1; then
  echo "building the Node addon ..."
  (cd "$root/bindings/node" && { [ -f node_modules/node-addon-api/napi.h ] || npm install -s --no-audit --no-fund; })
  cmake -S "$root" -B "$root/build/node" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOLYLIMIT_BUILD_NODE=ON \
    -DPOLYLIMIT_BUILD_TESTS=OFF -DPOLYLIMIT_BUILD_TOOLS=OFF -DPOLYLIMIT_BUILD_SHARED=OFF >/dev/null
  cmake --build "$root/build/node" -j "$POLYLIMIT_JOBS" --target polylimit_node >/dev/null
  export POLYLIMIT_NODE_ADDON="$root/build/node/bindings/node/Release/polylimit.node"
  for i in 1 2; do add_worker "node-$i" "node $root/tools/demo/worker.js"; done
else
  skipped+=(node)
fi

if [ -f "$root/tools/demo/rust-worker/Cargo.toml" ] && command -v cargo >/dev/null 2>&1; then
  echo "building the Rust worker ..."
  # The library built above (feature `system`, through PKG_CONFIG_PATH), as
  # the Go worker does; a default build would compile the core again. The
  # target directory is the Rust suite's, so shared crates build once.
  # The versions the Rust suite resolved, when it has run (no lock file is committed).
  [ -f "$root/tools/demo/rust-worker/Cargo.lock" ] || [ ! -f "$root/bindings/rust/Cargo.lock" ] ||
    cp "$root/bindings/rust/Cargo.lock" "$root/tools/demo/rust-worker/Cargo.lock"
  CARGO_TARGET_DIR="$root/build/rust-target" cargo build -q --release -j "$POLYLIMIT_JOBS" --features system \
    --manifest-path "$root/tools/demo/rust-worker/Cargo.toml"
  for i in 1 2; do add_worker "rust-$i" "$root/build/rust-target/release/polylimit-demo-worker"; done
else
  skipped+=(rust)
fi

if [ ${#skipped[@]} -gt 0 ] && [ "${POLYLIMIT_DEMO_REQUIRE_ALL:-0}" = 1 ]; then
  echo "every language is required, but these workers could not be built: ${skipped[*]}" >&2
  exit 1
fi

eval "$("$root/tests/redis-server.sh" start)"
trap '"$root/tests/redis-server.sh" stop "$POLYLIMIT_TEST_REDIS_PID" "$POLYLIMIT_TEST_REDIS_DIR"' EXIT
key="shared-client-$$"
echo
echo "$POLYLIMIT_TEST_REDIS_SERVER on $POLYLIMIT_TEST_REDIS_URL; key \"$key\"; limit $limit per ${window_ms} ms;" \
  "${#workers[@]} workers x $attempts attempts"
[ ${#skipped[@]} -gt 0 ] && echo "(skipped workers, toolchain or binding missing: ${skipped[*]})"

out=$(mktemp)
pids=()
# Every worker connects first, then waits for this moment: all languages start
# hammering together (a JVM or a Python interpreter starts slower than C).
export POLYLIMIT_DEMO_START_AT_MS=$(( $(date +%s%3N) + ${POLYLIMIT_DEMO_START_DELAY_MS:-3000} ))
for idx in "${!workers[@]}"; do
  # shellcheck disable=SC2086  # the worker command is a word list on purpose
  ${workers[$idx]} "$POLYLIMIT_TEST_REDIS_URL" "$key" "$limit" "$window_ms" "$attempts" "${names[$idx]}" >>"$out" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
sort "$out"
lines=$(grep -c ' admitted=' "$out" || true)
if [ "$lines" -ne "${#workers[@]}" ]; then
  echo "only $lines of ${#workers[@]} workers reported" >&2
  status=1
fi
for lang in c python go java node rust; do
  share=$(sed -n "s/^$lang-[0-9]* admitted=\([0-9]*\) .*/\1/p" "$out" | awk '{s+=$1} END {print s+0}')
  echo "  $lang share: $share"
done
total=$(sed -n 's/.* admitted=\([0-9]*\) .*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
rm -f "$out"
echo "total admitted: $total (limit $limit)"
if [ $status -ne 0 ] || [ "$total" -ne "$limit" ]; then
  echo "demo FAILED: a worker failed or the total differs from the limit" >&2
  exit 1
fi
echo "demo OK: every language shared one limit exactly"
