#!/usr/bin/env bash
# The Node suite: installs node-addon-api and typescript (npm install in
# bindings/node), builds the addon with CMake in build/node against the
# installed Node's headers (no header download), checks that
# lib/vocabulary.js and .d.ts are current, type-checks
# tests/node/typed_example.ts (tsc --strict), runs `node --test` against
# real redis-server processes (tests/fixture/redisfix), then installs the
# packed tarball with its prebuilt addon where no compiler is on PATH
# (tests/node/pack_test.sh). Works alone from the
# repository root or from tools/test.sh (which sets POLYLIMIT_SOURCE_DIR).
set -euo pipefail
root=${POLYLIMIT_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build="$root/build/node"
command -v node >/dev/null || { echo "run.sh: node not found (Node.js 18 or later)" >&2; exit 1; }

node_dir="$root/bindings/node"
if [ ! -f "$node_dir/node_modules/node-addon-api/napi.h" ] || [ ! -x "$node_dir/node_modules/.bin/tsc" ]; then
  (cd "$node_dir" && npm install --no-audit --no-fund)
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOLYLIMIT_BUILD_NODE=ON \
  -DPOLYLIMIT_BUILD_TESTS=OFF -DPOLYLIMIT_BUILD_TOOLS=OFF -DPOLYLIMIT_BUILD_SHARED=OFF \
  ${POLYLIMIT_NODE_INCLUDE_DIR:+-DPOLYLIMIT_NODE_INCLUDE_DIR="$POLYLIMIT_NODE_INCLUDE_DIR"} >/dev/null
cmake --build "$build" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" --target polylimit_node
python3 "$root/capi/vocabulary/generate.py" node --check

# The declarations as a user's code sees them (typescript, a dev dependency).
(cd "$node_dir" && node_modules/.bin/tsc --strict --noEmit --target es2022 --module commonjs \
  --lib es2022,esnext.disposable "$root/tests/node/typed_example.ts")
echo "tsc --strict tests/node/typed_example.ts: ok"

export POLYLIMIT_NODE_ADDON="$build/bindings/node/Release/polylimit.node"
node --test "$root"/tests/node/*.test.js
# The packed tarball, installed and used with no compiler on PATH.
"$root/tests/node/pack_test.sh" "$POLYLIMIT_NODE_ADDON"
