#!/usr/bin/env bash
# Takes the Debian packages of a release folder (tools/release.sh builds
# them with cpack -G DEB, hiredis out of view: libpolylimit1,
# libpolylimit-dev, polylimit-tools), checks their contents and
# control fields, runs lintian (no error or warning may remain), installs
# them with apt-get, builds capi/examples/basic.c against the INSTALLED
# system packages (plain pkg-config, no PKG_CONFIG_PATH; and CMake
# find_package with no prefix path), runs it and the installed polylimit
# command against a real redis-server, purges the packages again and checks
# that nothing they installed is left.
# Needs root (apt-get install); tools/check-release.sh runs it on the release
# folder (.ci/run: tools/check-release.sh build/dist --only deb, after
# tools/test.sh).
#   tests/c/deb_package.sh [DIR]   DIR: the folder holding the three .deb files;
#                                  without, tools/release.sh --only deb builds
#                                  them into build/deb-release
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
debs=${1:-}
runtime_pkg=libpolylimit1 dev_pkg=libpolylimit-dev tools_pkg=polylimit-tools

if [ "$(id -u)" -ne 0 ]; then
  echo "deb_package.sh installs packages with apt-get: run it as root" >&2
  exit 1
fi
for tool in dpkg-deb apt-get pkg-config redis-server lintian; do
  command -v "$tool" >/dev/null || { echo "deb_package.sh needs $tool (tools/deps.sh core installs it)" >&2; exit 1; }
done
for pkg in "$runtime_pkg" "$dev_pkg" "$tools_pkg"; do
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    echo "$pkg is already installed on this machine; remove it first (this test installs and removes it)" >&2
    exit 1
  fi
done
# Only the system installation may be found below.
unset PKG_CONFIG_PATH LD_LIBRARY_PATH CMAKE_PREFIX_PATH
export DEBIAN_FRONTEND=noninteractive

# 1. The packages: the release folder's, or built by the release tool (/usr
# as prefix, for the multiarch libdir; hiredis out of view: no package needs it).
if [ -z "$debs" ]; then
  debs="$src/build/deb-release"
  "$src/tools/release.sh" --only deb --out "$debs"
fi
version=$(sed -n 's/^#define POLYLIMIT_VERSION_STRING "\(.*\)"$/\1/p' "$src/capi/include/polylimit.h")
one_deb() {
  local found=("$debs/$1"_*.deb)
  [ ${#found[@]} -eq 1 ] && [ -f "${found[0]}" ] || { echo "deb_package.sh: expected one $1_*.deb in $debs" >&2; exit 1; }
  echo "${found[0]}"
}
runtime_deb=$(one_deb "$runtime_pkg")
dev_deb=$(one_deb "$dev_pkg")
tools_deb=$(one_deb "$tools_pkg")
echo "packages: $(basename "$runtime_deb") $(basename "$dev_deb") $(basename "$tools_deb")"

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
echo "--- dpkg -c $(basename "$tools_deb")"; dpkg -c "$tools_deb" | awk '{print $6, $7, $8}'
multiarch='^\./usr/lib/[a-z0-9_]+-linux-[a-z0-9_]+/'
has "$runtime_deb" "${multiarch}libpolylimit\.so\.1$"
has "$runtime_deb" "${multiarch}libpolylimit\.so\.${version//./\\.}$"
has "$runtime_deb" '^\./usr/share/doc/libpolylimit1/copyright$'
has "$runtime_deb" '^\./usr/share/doc/libpolylimit1/changelog\.gz$'
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
has "$dev_deb" '^\./usr/share/doc/polylimit/integrations/README\.md$'
has "$dev_deb" '^\./usr/share/doc/libpolylimit-dev/changelog\.gz$'
has "$tools_deb" '^\./usr/bin/polylimit$'
has "$tools_deb" '^\./usr/share/man/man1/polylimit\.1\.gz$'
has "$tools_deb" '^\./usr/share/doc/polylimit-tools/(copyright|changelog\.gz)$'
lacks "$tools_deb" '(\.so|\.so\.[0-9.]+|\.a|\.h)$'
lacks "$dev_deb" 'libpolylimit\.so\.1'
copyright=$(dpkg-deb --fsys-tarfile "$runtime_deb" | tar -xO ./usr/share/doc/libpolylimit1/copyright)
grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' <<<"$copyright" ||
  fail "libpolylimit1's copyright is not in the machine-readable format"
for license in MIT Apache-2.0; do
  grep -q "^License: $license" <<<"$copyright" || fail "libpolylimit1's copyright names no $license"
done
if grep -qi hiredis <<<"$copyright"; then fail "libpolylimit1's copyright names hiredis, which no package contains"; fi
grep -q '/usr/share/common-licenses/Apache-2.0' <<<"$copyright" || fail "the copyright does not refer to common-licenses for Apache-2.0"
echo "--- dpkg -I $(basename "$runtime_deb")"; dpkg -I "$runtime_deb" | sed -n '/^ Architecture:/,$p'
echo "--- dpkg -I $(basename "$dev_deb")"; dpkg -I "$dev_deb" | sed -n '/^ Architecture:/,$p'
[ "$(field "$runtime_deb" Version)" = "$version" ] || fail "libpolylimit1 version is not $version"
runtime_depends=$(field "$runtime_deb" Depends) dev_depends=$(field "$dev_deb" Depends)
grep -q 'libstdc++6' <<<"$runtime_depends" || fail "libpolylimit1 Depends lacks libstdc++6 (dpkg-shlibdeps)"
grep -q 'libc6' <<<"$runtime_depends" || fail "libpolylimit1 Depends lacks libc6 (dpkg-shlibdeps)"
if grep -q hiredis <<<"$runtime_depends"; then fail "libpolylimit1 must not depend on hiredis"; fi
grep -qF "libpolylimit1 (= $version)" <<<"$dev_depends" || fail "libpolylimit-dev does not depend on libpolylimit1 (= $version)"
if grep -q hiredis <<<"$dev_depends"; then fail "libpolylimit-dev must not depend on hiredis (the library needs none)"; fi
grep -q 'libssl3' <<<"$runtime_depends" || fail "libpolylimit1 Depends lacks libssl3 (dpkg-shlibdeps; TLS)"
grep -q 'libssl-dev' <<<"$dev_depends" || fail "libpolylimit-dev does not depend on libssl-dev (libpolylimit.a needs OpenSSL)"
control=$(dpkg-deb --ctrl-tarfile "$runtime_deb" | tar -t)
grep -q shlibs <<<"$control" || fail "libpolylimit1 has no shlibs file"
grep -q triggers <<<"$control" || fail "libpolylimit1 has no triggers file (ldconfig)"
grep -q '<.*@.*>' <<<"$(field "$runtime_deb" Maintainer)" || fail "Maintainer is not 'Name <address>'"
grep -qF "$runtime_pkg (= $version)" <<<"$(field "$tools_deb" Depends)" || fail "polylimit-tools does not depend on $runtime_pkg (= $version)"

# The scratch folder of the steps below (the trap removes it, and purges
# the packages once they are installed).
work=$(mktemp -d /tmp/polylimit-deb-XXXXXX)
installed=0
cleanup() {
  local rc=$?
  if [ "$installed" = 1 ]; then
    apt-get remove -y --purge "$tools_pkg" "$dev_pkg" "$runtime_pkg" >/dev/null || rc=1
  fi
  # shellcheck disable=SC2153  # set with the PID by tests/redis-server.sh start
  [ -n "${POLYLIMIT_TEST_REDIS_PID:-}" ] && "$src/tests/redis-server.sh" stop "$POLYLIMIT_TEST_REDIS_PID" "$POLYLIMIT_TEST_REDIS_DIR"
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT

# lintian: Debian's package checker; any error or warning fails. Its
# temporary files go in the scratch folder: it leaves cache files (mldbm-*).
echo "--- lintian"
mkdir "$work/lintian"
lintian_out=$(TMPDIR=$work/lintian lintian --fail-on error,warning --tag-display-limit 0 "$runtime_deb" "$dev_deb" "$tools_deb" 2>&1) ||
  { echo "$lintian_out"; fail "lintian reports errors or warnings"; }
[ -z "$lintian_out" ] || echo "$lintian_out"
echo "lintian: no error, no warning on the three packages"

# 3. Install, build the example against the system installation, run it, remove.
cp "$runtime_deb" "$dev_deb" "$work/"
chmod 755 "$work"; chmod 644 "$work"/*.deb   # readable by apt's _apt user
installed=1
cp "$tools_deb" "$work/"
chmod 644 "$work"/*.deb
# Every path the packages hold, and which of them the machine had before.
owned=$({ paths "$runtime_deb"; paths "$dev_deb"; paths "$tools_deb"; } | sed 's|^\./|/|; s|/$||' | LC_ALL=C sort -u)
before=$(while IFS= read -r p; do if [ -e "$p" ] || [ -L "$p" ]; then echo "$p"; fi; done <<<"$owned")
(cd "$work" && apt-get install -y ./"$(basename "$runtime_deb")" ./"$(basename "$dev_deb")" ./"$(basename "$tools_deb")" >/dev/null)
eval "$("$src/tests/redis-server.sh" start)"

cp "$src/capi/examples/basic.c" "$work/"
flags=$(pkg-config --cflags --libs polylimit)
echo "system pkg-config --cflags --libs polylimit: $flags"
echo "system pkg-config --static --libs polylimit: $(pkg-config --static --libs polylimit)"
# shellcheck disable=SC2086  # pkg-config's flags: words on purpose
(cd "$work" && cc basic.c $flags -o basic)
deps=$(ldd "$work/basic")
grep -E 'libpolylimit\.so\.1 => (/usr)?/lib/' <<<"$deps" || fail "basic does not load the installed libpolylimit.so.1"
"$work/basic" "$POLYLIMIT_TEST_REDIS_URL"
# Static, from the system package: polylimit-static.pc names the archive.
# shellcheck disable=SC2046  # pkg-config's flags: words on purpose
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

# The installed command (polylimit-tools), from PATH, with its man page.
cli_out=$(/usr/bin/polylimit --url "$POLYLIMIT_TEST_REDIS_URL" --spec 1/minute --json check deb-test)
grep -q '"allowed":true' <<<"$cli_out" || fail "polylimit check did not admit: $cli_out"
rc=0; /usr/bin/polylimit --url "$POLYLIMIT_TEST_REDIS_URL" --spec 1/minute check deb-test >/dev/null || rc=$?
[ "$rc" -eq 1 ] || fail "the second polylimit check should be denied (exit 1), got $rc"
man_text=$(zcat /usr/share/man/man1/polylimit.1.gz)
# (roff writes each '-' of an option as '\-')
grep -Eq 'pool(\\)?-size' <<<"$man_text" || fail "the man page does not carry the --help text"

# Purge the packages now (the trap would too) and check the machine is clean:
# no package state, and no file or directory of theirs that was not there
# before they were installed.
apt-get remove -y --purge "$tools_pkg" "$dev_pkg" "$runtime_pkg" >/dev/null
installed=0
for pkg in "$runtime_pkg" "$dev_pkg" "$tools_pkg"; do
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'installed\|config-files'; then fail "$pkg still known to dpkg"; fi
done
left=$(while IFS= read -r p; do if [ -n "$p" ] && { [ -e "$p" ] || [ -L "$p" ]; }; then echo "$p"; fi; done <<<"$owned" |
  LC_ALL=C comm -23 - <(echo "$before"))
[ -z "$left" ] || fail "left behind after the purge: $(tr '\n' ' ' <<<"$left")"
echo "Debian packages: built, inspected, lintian clean, installed, example built (pkg-config and CMake) and run, CLI run, purged without a trace"
