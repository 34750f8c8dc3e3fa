#!/usr/bin/env bash
# What a user installs: `npm pack` of bindings/node (its prepack step,
# scripts/vendor.js, puts the core's sources into native/), with the addon
# built by tests/node/run.sh as prebuilds/<platform>-<arch>[-musl]/polylimit.node,
# installed into fresh projects in a temporary directory with no network
# (unshare -n where this machine allows it, and npm --offline with an empty
# cache always: the package has no dependency to fetch):
#  a. the tarball with the prebuild, installed and used with only node, npm
#     and sh on PATH (no compiler, cmake or make): the install step picks the
#     prebuild, and a check against a real redis-server is admitted, then
#     denied;
#  b. the same tarball without prebuilds/: the install step builds the addon
#     from native/ with CMake and the compiler (hiredis hidden where
#     tests/without-hiredis.sh can), and the package works as in a;
#  c. without prebuilds/ and with cmake, then the C++ compiler, then
#     OpenSSL's headers (a mount namespace, root only) out of view: the
#     install fails with the one line that names what is missing.
#   tests/node/pack_test.sh ADDON
set -euo pipefail
root=${POLYLIMIT_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
addon=$1
tmp=$(mktemp -d)
redis_pid=
cleanup() {
  [ -z "$redis_pid" ] || "$root/tests/redis-server.sh" stop "$redis_pid" "$redis_dir"
  rm -rf "$tmp"
}
trap cleanup EXIT
die() { echo "pack_test: $*" >&2; exit 1; }
pkg_dir="$root/bindings/node"
declare -a timings=()
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# --- the tarballs --------------------------------------------------------------
tarball=$("$pkg_dir/scripts/pack.sh" "$addon" "$tmp")
platform=$(node -p 'require(process.argv[1]).prebuildName()' "$pkg_dir/lib/platform.js")
listing=$(tar -tzf "$tarball")
for f in "prebuilds/$platform/polylimit.node" scripts/install.js lib/platform.js CMakeLists.txt src/addon.cc \
  native/capi/include/polylimit.h native/capi/src/polylimit_capi.cc native/core/src/limiter/limiter.cpp \
  native/generated/polylimit/vocabulary.h native/generated/scripts_generated.cpp native/node-addon-api/napi.h \
  native/LICENSE native/THIRD_PARTY_NOTICES; do
  grep -qx "package/$f" <<<"$listing" || die "the tarball lacks $f"
done
! grep -E '^package/(node_modules|build|native/core/scripts/.*\.pyc)/' <<<"$listing" ||
  die "the tarball carries the files above, which it should not"
echo "packed $(basename "$tarball"): $(wc -l <<<"$listing") files, $(stat -c %s "$tarball") bytes"

# The same package without its prebuilds, as on a platform none fits.
mkdir -p "$tmp/repack"
tar -xzf "$tarball" -C "$tmp/repack"
rm -rf "$tmp/repack/package/prebuilds"
source_tarball="$tmp/polylimit-source.tgz"
tar -czf "$source_tarball" -C "$tmp/repack" package
! tar -tzf "$source_tarball" | grep -q '^package/prebuilds/' || die "prebuilds/ is still in $source_tarball"
echo "without prebuilds/: $(stat -c %s "$source_tarball") bytes"

# --- the ways in --------------------------------------------------------------
# No network: a private network namespace where this machine allows one.
offline=()
if unshare -n true 2>/dev/null; then
  offline=("$(command -v unshare)" -n)
else
  echo "(unshare -n is not allowed here: npm --offline with an empty cache is the only guard against the network)"
fi
# A PATH of only the named tools (symlinks).
restricted_path() {
  local dir="$tmp/bin-$1" tool
  shift
  mkdir -p "$dir"
  for tool in "$@"; do
    ln -sf "$(command -v "$tool")" "$dir/$tool"
  done
  echo "$dir"
}
node_only=$(restricted_path node node)
basics=$(restricted_path basics node npm sh)
for tool in cc c++ gcc g++ clang++ cmake make ninja; do
  ! PATH="$basics" command -v "$tool" >/dev/null || die "$tool is on the restricted PATH"
done

# install NAME TARBALL PATH [WRAPPER...]: npm install into a fresh project;
# its output in $tmp/NAME.log, its status in $install_status.
install() {
  local name=$1 tgz=$2 path=$3 start
  shift 3
  local project="$tmp/$name"
  mkdir -p "$project"
  printf '{ "name": "pack-test-%s", "version": "1.0.0", "private": true }\n' "$name" >"$project/package.json"
  start=$(now)
  install_status=0
  (cd "$project" && env -u POLYLIMIT_NODE_ADDON -u CXX -u CC PATH="$path" CMAKE_BUILD_PARALLEL_LEVEL=2 \
    "${offline[@]}" "$@" npm install --offline --cache "$tmp/npm-cache-$name" --no-audit --no-fund \
    --no-update-notifier --omit=dev --foreground-scripts "$tgz") >"$tmp/$name.log" 2>&1 || install_status=$?
  timings+=("$name: $(took "$start") s")
}

# use PROJECT ADDON: the installed package against the real redis-server, with
# only node on PATH, loading ADDON (relative to the package).
use() {
  (cd "$1" && env -u POLYLIMIT_NODE_ADDON PATH="$node_only" node -e '
    const [url, want] = process.argv.slice(1);
    const polylimit = require("polylimit");
    const dir = require("path").dirname(require.resolve("polylimit/package.json"));
    if (!dir.includes("node_modules")) throw new Error("loaded from " + dir);
    const loaded = Object.keys(require.cache).filter((f) => f.endsWith(".node"));
    if (loaded.join() !== require("path").join(dir, want)) throw new Error("the addon loaded: " + loaded.join());
    if (typeof require("polylimit/express").rateLimit !== "function") throw new Error("polylimit/express");
    if (typeof require("polylimit/fastify") !== "function") throw new Error("polylimit/fastify");
    const client = new polylimit.Client(url);
    const limiter = client.limiter("2/minute", { prefix: "pack-" + process.pid });
    (async () => {
      const ds = [];
      for (let i = 0; i < 3; i++) ds.push((await limiter.check("k")).allowed);
      await client.close();
      if (ds.join() !== "true,true,false") throw new Error("decisions " + ds.join());
      console.log("  " + want + " " + polylimit.version + ": " + ds.join());
    })().catch((e) => { console.error(e); process.exit(1); });
  ' "$POLYLIMIT_TEST_REDIS_URL" "$2")
}

show_log() {
  sed 's/^/  | /' "$tmp/$1.log" >&2
}

eval "$("$root/tests/redis-server.sh" start)"
redis_pid=$POLYLIMIT_TEST_REDIS_PID
redis_dir=$POLYLIMIT_TEST_REDIS_DIR

# --- a. the prebuild: no compiler, no network ----------------------------------
install prebuild "$tarball" "$basics"
[ "$install_status" -eq 0 ] || { show_log prebuild; die "a: npm install of the tarball failed"; }
grep -qx "polylimit: using the prebuilt addon for $platform" "$tmp/prebuild.log" ||
  { show_log prebuild; die "a: the install step did not use the prebuild"; }
[ ! -e "$tmp/prebuild/node_modules/polylimit/build" ] || die "a: the install step built something"
echo "a. prebuild, PATH of node, npm and sh, offline: installed in ${timings[-1]#*: }"
use "$tmp/prebuild" "prebuilds/$platform/polylimit.node"

# --- b. from source: compiler and CMake, no network, no hiredis ----------------
hide=()
if "$root/tests/without-hiredis.sh" --check 2>/dev/null; then hide=("$root/tests/without-hiredis.sh"); fi
install source "$source_tarball" "$PATH" "${hide[@]}"
[ "$install_status" -eq 0 ] || { show_log source; die "b: the source build failed"; }
grep -qx "polylimit: built build/Release/polylimit.node" "$tmp/source.log" ||
  { show_log source; die "b: the install step did not build the addon"; }
echo "b. no prebuild, compiler and CMake, offline${hide[*]:+, hiredis hidden}: built and installed in ${timings[-1]#*: }"
use "$tmp/source" "build/Release/polylimit.node"

# --- c. from source, a tool missing: one line naming it -------------------------
# expect NAME LINE: the install failed, and LINE is the only line of the
# install step's on stderr (npm's own lines aside).
expect() {
  [ "$install_status" -ne 0 ] || { show_log "$1"; die "c: the install without $1 succeeded"; }
  grep -qxF "$2" "$tmp/$1.log" || { show_log "$1"; die "c: the install without $1 did not say: $2"; }
  local ours
  ours=$(grep -c '^polylimit: cannot' "$tmp/$1.log" || true)
  [ "$ours" -eq 1 ] || { show_log "$1"; die "c: the install without $1 printed $ours error lines, not one"; }
  echo "c. without $1: failed in ${timings[-1]#*: } with: $2"
}
missing="polylimit: cannot build the native addon from source:"
compilers=()
for tool in c++ g++ cc gcc; do command -v "$tool" >/dev/null && compilers+=("$tool"); done
install cmake "$source_tarball" "$(restricted_path no-cmake node npm sh make "${compilers[@]}")"
expect cmake "$missing cmake (CMake 3.18 or later; Debian/Ubuntu: cmake, Alpine: cmake) not found"
install compiler "$source_tarball" "$(restricted_path no-compiler node npm sh cmake make)"
expect compiler "$missing a C++17 compiler (c++, g++ or clang++; Debian/Ubuntu: g++, Alpine: g++ or build-base) not found"
if [ "$(id -u)" -eq 0 ] && unshare --mount --propagation private true 2>/dev/null && [ -d /usr/include/openssl ]; then
  # OpenSSL's header directory covered by an empty tmpfs, in a private mount namespace.
  install openssl "$source_tarball" "$PATH" "$(command -v unshare)" --mount --propagation private \
    sh -c 'mount -t tmpfs -o size=1m none /usr/include/openssl && exec "$@"' sh
  expect openssl "$missing OpenSSL headers (Debian/Ubuntu: libssl-dev, Alpine: openssl-dev, Fedora/RHEL: openssl-devel) not found"
else
  echo "c. without OpenSSL's headers: not run (needs root and unshare --mount to hide them)"
fi
echo "pack_test: timings: ${timings[*]}"
