#!/usr/bin/env bash
# What a user installs: `npm pack` of bindings/node with the addon built by
# tests/node/run.sh as prebuilds/<platform>-<arch>/polylimit.node, installed
# into a fresh project in a temporary directory, then loaded and used against
# a real redis-server with no C/C++ compiler, cmake or make on PATH (only
# node and npm) and no POLYLIMIT_NODE_ADDON: the package must find its
# prebuilt addon.
#   tests/node/pack_test.sh ADDON
set -euo pipefail
root=${POLYLIMIT_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
addon=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A copy of the package (the source tree stays untouched) with the prebuild.
stage="$tmp/stage"
mkdir -p "$stage"
cp -r "$root/bindings/node/lib" "$root/bindings/node/src" "$root/bindings/node/package.json" \
  "$root/bindings/node/README.md" "$root/bindings/node/CMakeLists.txt" "$stage/"
platform=$(node -p 'process.platform + "-" + process.arch')
mkdir -p "$stage/prebuilds/$platform"
cp "$addon" "$stage/prebuilds/$platform/polylimit.node"
node -e '
  const fs = require("fs"), p = process.argv[1] + "/package.json";
  const pkg = JSON.parse(fs.readFileSync(p));
  pkg.files.push("prebuilds/");
  fs.writeFileSync(p, JSON.stringify(pkg, null, 2));
' "$stage"
tarball=$(cd "$stage" && npm pack --silent --pack-destination "$tmp")
listing=$(tar -tzf "$tmp/$tarball")
echo "packed $tarball: $(wc -l <<<"$listing") files"
grep -qx "package/prebuilds/$platform/polylimit.node" <<<"$listing" ||
  { echo "pack_test: the tarball lacks prebuilds/$platform/polylimit.node" >&2; exit 1; }

# A fresh project; npm itself may use anything, the check below only node.
project="$tmp/project"
mkdir -p "$project"
(cd "$project" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund --omit=dev "$tmp/$tarball")

# PATH with node alone: no cc, c++, gcc, g++, cmake, make, python3.
bin="$tmp/bin"
mkdir -p "$bin"
ln -s "$(command -v node)" "$bin/node"
for tool in cc c++ gcc g++ cmake make; do
  ! PATH="$bin" command -v "$tool" >/dev/null || { echo "pack_test: $tool is on the restricted PATH" >&2; exit 1; }
done

eval "$("$root/tests/redis-server.sh" start)"
trap '"$root/tests/redis-server.sh" stop "$POLYLIMIT_TEST_REDIS_PID" "$POLYLIMIT_TEST_REDIS_DIR"; rm -rf "$tmp"' EXIT
(cd "$project" && env -u POLYLIMIT_NODE_ADDON PATH="$bin" node -e '
  const polylimit = require("polylimit");
  const path = require.resolve("polylimit");
  if (!path.includes("node_modules")) throw new Error("loaded from " + path);
  if (typeof require("polylimit/express").rateLimit !== "function") throw new Error("polylimit/express");
  if (typeof require("polylimit/fastify") !== "function") throw new Error("polylimit/fastify");
  const client = new polylimit.Client(process.argv[1]);
  const limiter = client.limiter("2/minute", { prefix: "pack-" + process.pid });
  Promise.all([1, 2, 3].map(() => limiter.check("k"))).then((ds) => {
    client.close();
    const allowed = ds.map((d) => d.allowed).join(",");
    if (allowed !== "true,true,false") throw new Error("decisions " + allowed);
    console.log("installed package, prebuilt addon " + polylimit.version + ": " + allowed);
  });
' "$POLYLIMIT_TEST_REDIS_URL")
