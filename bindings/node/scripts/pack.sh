#!/usr/bin/env bash
# The npm package as a user installs it: a copy of what package.json's
# "files" names, the manifest and the README, with ADDON as the prebuild for
# this platform (prebuilds/<platform>-<arch>[-musl]/polylimit.node), packed
# by `npm pack` (its prepack step, scripts/vendor.js, puts the core's sources
# into native/). The source tree stays untouched. Prints the tarball's path.
# node-addon-api's headers come from bindings/node/node_modules (npm install).
#   bindings/node/scripts/pack.sh ADDON OUT_DIR
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: bindings/node/scripts/pack.sh ADDON OUT_DIR" >&2; exit 2; }
addon=$1 out=$2
pkg_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=${POLYLIMIT_SOURCE_DIR:-$(cd "$pkg_dir/../.." && pwd)}
[ -f "$addon" ] || { echo "pack.sh: no addon at $addon" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/scripts"
node -e '
  const fs = require("fs"), path = require("path");
  const [src, dst] = process.argv.slice(1);
  const pkg = JSON.parse(fs.readFileSync(path.join(src, "package.json")));
  for (const f of [...pkg.files, "package.json", "README.md", "scripts/vendor.js"]) {
    const from = path.join(src, f);
    if (fs.existsSync(from) && !/^(native|prebuilds)\/?$/.test(f)) fs.cpSync(from, path.join(dst, f), { recursive: true });
  }
' "$pkg_dir" "$stage"
# The licence and the notices at the package's root too, where users and
# registries look (npm packs LICENSE whatever "files" says).
cp "$root/LICENSE" "$root/THIRD_PARTY_NOTICES" "$stage/"
platform=$(node -p 'require(process.argv[1]).prebuildName()' "$stage/lib/platform.js")
mkdir -p "$stage/prebuilds/$platform"
cp "$addon" "$stage/prebuilds/$platform/polylimit.node"
mkdir -p "$out"
tarball=$(cd "$stage" && POLYLIMIT_SOURCE_DIR="$root" npm pack --silent --pack-destination "$out" | tail -n1)
echo "$(cd "$out" && pwd)/$tarball"
