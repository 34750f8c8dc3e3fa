#!/usr/bin/env bash
# The Node suite: installs node-addon-api (npm install in bindings/node),
# builds the addon with CMake in build/node against the installed Node's
# headers (no header download), checks that lib/vocabulary.js is current,
# and runs `node --test` against real redis-server processes
# (tests/fixture/redisfix). Works alone from the repository root or from
# tools/test.sh (which sets POLYLIMIT_SOURCE_DIR).
set -euo pipefail
root=${POLYLIMIT_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build="$root/build/node"
command -v node >/dev/null || { echo "run.sh: node not found (Node.js 18 or later)" >&2; exit 1; }

(cd "$root/bindings/node" && [ -f node_modules/node-addon-api/napi.h ] || npm install --no-audit --no-fund)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOLYLIMIT_BUILD_NODE=ON \
  -DPOLYLIMIT_BUILD_TESTS=OFF -DPOLYLIMIT_BUILD_TOOLS=OFF -DPOLYLIMIT_BUILD_SHARED=OFF \
  ${POLYLIMIT_NODE_INCLUDE_DIR:+-DPOLYLIMIT_NODE_INCLUDE_DIR="$POLYLIMIT_NODE_INCLUDE_DIR"} >/dev/null
cmake --build "$build" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" --target polylimit_node
python3 "$root/capi/vocabulary/generate.py" node --check

export POLYLIMIT_NODE_ADDON="$build/bindings/node/Release/polylimit.node"
exec node --test "$root"/tests/node/*.test.js
