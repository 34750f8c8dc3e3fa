#!/usr/bin/env bash
# Builds the Debian packages (cpack -G DEB: libpolylimit1, libpolylimit-dev),
# checks their contents and control fields, installs them with apt-get,
# builds capi/examples/basic.c against the INSTALLED system packages (plain
# pkg-config, no PKG_CONFIG_PATH; and CMake find_package with no prefix path),
# runs it against a real redis-server, and removes the packages again.
# Needs root (apt-get install); .ci/run runs it after tools/test.sh.
#   tests/c/deb_package.sh [BUILD_DIR]     (default: build/deb in the checkout)
# POLYLIMIT_JOBS sets the build parallelism (default: nproc).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$src/build/deb}
jobs=${POLYLIMIT_JOBS:-$(nproc 2>/dev/null || echo 2)}
runtime_pkg=libpolylimit1 dev_pkg=libpolylimit-dev

if [ "$(id -u)" -ne 0 ]; then
  echo "deb_package.sh installs packages with apt-get: run it as root" >&2
  exit 1
fi
for tool in cpack dpkg-deb dpkg-shlibdeps file apt-get pkg-config redis-server; do
  command -v "$tool" >/dev/null || { echo "deb_package.sh needs $tool (tools/deps.sh core installs it)" >&2; exit 1; }
done
for pkg in "$runtime_pkg" "$dev_pkg"; do
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    echo "$pkg is already installed on this machine; remove it first (this test installs and removes it)" >&2
    exit 1
  fi
done
# Only the system installation may be found below.
unset PKG_CONFIG_PATH LD_LIBRARY_PATH CMAKE_PREFIX_PATH
export DEBIAN_FRONTEND=noninteractive

# 1. Build the packages. /usr as prefix gives the multiarch libdir.
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DPOLYLIMIT_BUILD_TESTS=OFF -DPOLYLIMIT_BUILD_TOOLS=OFF >/dev/null
cmake --build "$build" -j "$jobs" >/dev/null
rm -rf "$build/packages"
(cd "$build" && cpack -G DEB >/dev/null)
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
runtime_deb=$(ls "$build"/packages/${runtime_pkg}_*.deb)
dev_deb=$(ls "$build"/packages/${dev_pkg}_*.deb)
echo "built: $(basename "$runtime_deb") $(basename "$dev_deb")"

# 2. Inspect them: contents (dpkg -c) and control fields (dpkg -I).
fail() { echo "deb_package.sh: $*" >&2; exit 1; }
# Every check below greps a command's output kept in a variable, never
# `COMMAND | grep -q`: grep -q exits at its first match, COMMAND can then die
# of SIGPIPE, and under pipefail the check fails although the line was there.
paths() { dpkg -c "$1" | awk '{print $6}'; }
has() {  # has DEB REGEX: the package contains a path matching REGEX
  local list; list=$(paths "$1")
  grep -Eq "$2" <<<"$list" || fail "$(basename "$1") lacks $2"
}
lacks() {
  local list; list=$(paths "$1")
  if grep -Eq "$2" <<<"$list"; then fail "$(basename "$1") should not contain $2"; fi
}
field() { dpkg-deb -f "$1" "$2"; }
echo "--- dpkg -c $(basename "$runtime_deb")"; dpkg -c "$runtime_deb" | awk '{print $6, $7, $8}'
echo "--- dpkg -c $(basename "$dev_deb")"; dpkg -c "$dev_deb" | awk '{print $6, $7, $8}'
multiarch='^\./usr/lib/[a-z0-9_]+-linux-[a-z0-9_]+/'
has "$runtime_deb" "${multiarch}libpolylimit\.so\.1$"
has "$runtime_deb" "${multiarch}libpolylimit\.so\.${version//./\\.}$"
has "$runtime_deb" '^\./usr/share/doc/libpolylimit1/copyright$'
has "$runtime_deb" '^\./usr/share/doc/libpolylimit1/LICENSE$'
has "$runtime_deb" '^\./usr/share/doc/libpolylimit1/THIRD_PARTY_NOTICES$'
lacks "$runtime_deb" '(\.a|\.h|\.pc|libpolylimit\.so)$'
has "$dev_deb" '^\./usr/include/polylimit\.h$'
has "$dev_deb" "${multiarch}libpolylimit\.so$"
has "$dev_deb" "${multiarch}libpolylimit\.a$"
has "$dev_deb" "${multiarch}pkgconfig/polylimit\.pc$"
has "$dev_deb" "${multiarch}pkgconfig/polylimit-static\.pc$"
has "$dev_deb" "${multiarch}cmake/polylimit/polylimitConfig\.cmake$"
has "$dev_deb" '^\./usr/share/doc/libpolylimit-dev/copyright$'
has "$dev_deb" '^\./usr/share/doc/polylimit/(LICENSE|THIRD_PARTY_NOTICES|api-stability\.md)$'
lacks "$dev_deb" 'libpolylimit\.so\.1'
grep -q 'MIT License' <(dpkg-deb --fsys-tarfile "$runtime_deb" | tar -xO ./usr/share/doc/libpolylimit1/copyright) ||
  fail "libpolylimit1's copyright does not carry the MIT license"
echo "--- dpkg -I $(basename "$runtime_deb")"; dpkg -I "$runtime_deb" | sed -n '/^ Architecture:/,$p'
echo "--- dpkg -I $(basename "$dev_deb")"; dpkg -I "$dev_deb" | sed -n '/^ Architecture:/,$p'
[ "$(field "$runtime_deb" Version)" = "$version" ] || fail "libpolylimit1 version is not $version"
runtime_depends=$(field "$runtime_deb" Depends) dev_depends=$(field "$dev_deb" Depends)
grep -q 'libstdc++6' <<<"$runtime_depends" || fail "libpolylimit1 Depends lacks libstdc++6 (dpkg-shlibdeps)"
grep -q 'libc6' <<<"$runtime_depends" || fail "libpolylimit1 Depends lacks libc6 (dpkg-shlibdeps)"
if grep -q hiredis <<<"$runtime_depends"; then fail "libpolylimit1 must not depend on hiredis (linked in)"; fi
grep -qF "libpolylimit1 (= $version)" <<<"$dev_depends" || fail "libpolylimit-dev does not depend on libpolylimit1 (= $version)"
grep -q 'libhiredis-dev' <<<"$dev_depends" || fail "libpolylimit-dev does not depend on libhiredis-dev"
grep -q 'libssl3' <<<"$runtime_depends" || fail "libpolylimit1 Depends lacks libssl3 (dpkg-shlibdeps; TLS)"
grep -q 'libssl-dev' <<<"$dev_depends" || fail "libpolylimit-dev does not depend on libssl-dev (libpolylimit.a needs OpenSSL)"
control=$(dpkg-deb --ctrl-tarfile "$runtime_deb" | tar -t)
grep -q shlibs <<<"$control" || fail "libpolylimit1 has no shlibs file"

# 3. Install, build the example against the system installation, run it, remove.
work=$(mktemp -d /tmp/polylimit-deb-XXXXXX)
installed=0
cleanup() {
  local rc=$?
  if [ "$installed" = 1 ]; then
    apt-get remove -y --purge "$dev_pkg" "$runtime_pkg" >/dev/null || rc=1
  fi
  [ -n "${POLYLIMIT_TEST_REDIS_PID:-}" ] && "$src/tests/redis-server.sh" stop "$POLYLIMIT_TEST_REDIS_PID" "$POLYLIMIT_TEST_REDIS_DIR"
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
cp "$runtime_deb" "$dev_deb" "$work/"
chmod 755 "$work"; chmod 644 "$work"/*.deb   # readable by apt's _apt user
installed=1
(cd "$work" && apt-get install -y ./"$(basename "$runtime_deb")" ./"$(basename "$dev_deb")" >/dev/null)
eval "$("$src/tests/redis-server.sh" start)"

cp "$src/capi/examples/basic.c" "$work/"
flags=$(pkg-config --cflags --libs polylimit)
echo "system pkg-config --cflags --libs polylimit: $flags"
echo "system pkg-config --static --libs polylimit: $(pkg-config --static --libs polylimit)"
(cd "$work" && cc basic.c $flags -o basic)
deps=$(ldd "$work/basic")
grep -E 'libpolylimit\.so\.1 => (/usr)?/lib/' <<<"$deps" || fail "basic does not load the installed libpolylimit.so.1"
"$work/basic" "$POLYLIMIT_TEST_REDIS_URL"
# Static, from the system package: polylimit-static.pc names the archive.
(cd "$work" && cc basic.c $(pkg-config --cflags --libs polylimit-static) -o basic-static)
deps=$(ldd "$work/basic-static")
if grep -q libpolylimit <<<"$deps"; then fail "basic-static loads libpolylimit.so"; fi
"$work/basic-static" "$POLYLIMIT_TEST_REDIS_URL" >/dev/null

# CMake finds the installed package with no prefix path; shared and static.
source "$src/tests/c/cmake_consumer.sh"
cmake_consumer "$work/cmake-shared" polylimit::polylimit
cmake_consumer "$work/cmake-static" polylimit::polylimit_static
deps=$(ldd "$work/cmake-shared/build/basic")
grep -Eq 'libpolylimit\.so\.1 => (/usr)?/lib/' <<<"$deps" || fail "the shared consumer does not load libpolylimit.so.1: $deps"
deps=$(ldd "$work/cmake-static/build/basic")
if grep -q libpolylimit <<<"$deps"; then fail "the static consumer loads libpolylimit.so"; fi
"$work/cmake-shared/build/basic" "$POLYLIMIT_TEST_REDIS_URL" >/dev/null
"$work/cmake-static/build/basic" "$POLYLIMIT_TEST_REDIS_URL" >/dev/null

# Remove the packages now (the trap would too) and check the machine is clean.
apt-get remove -y --purge "$dev_pkg" "$runtime_pkg" >/dev/null
installed=0
for pkg in "$runtime_pkg" "$dev_pkg"; do
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'installed'; then fail "$pkg still installed"; fi
done
if ls /usr/lib/*/libpolylimit* /usr/include/polylimit.h 2>/dev/null; then fail "files left behind after removal"; fi
echo "Debian packages: built, inspected, installed, example built (pkg-config and CMake) and run, removed"
