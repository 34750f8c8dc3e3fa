#!/usr/bin/env bash
# Installs the build into a temporary prefix, builds capi/examples/basic.c
# against it with pkg-config (and a CMake consumer with find_package), and runs
# both against a real redis-server.
set -euo pipefail
build=$1 src=$2
prefix=$(mktemp -d /tmp/polylimit-prefix-XXXXXX)
work=$(mktemp -d /tmp/polylimit-consumer-XXXXXX)
eval "$("$src/tests/redis-server.sh" start)"
trap '"$src/tests/redis-server.sh" stop "$POLYLIMIT_TEST_REDIS_PID" "$POLYLIMIT_TEST_REDIS_DIR"; rm -rf "$prefix" "$work"' EXIT

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/pkgconfig | head -n1 | xargs dirname)
export PKG_CONFIG_PATH="$libdir/pkgconfig"
flags=$(pkg-config --cflags --libs polylimit)
echo "pkg-config --cflags --libs polylimit: $flags"
# shellcheck disable=SC2086  # pkg-config's flags: words on purpose
cc -std=c99 -Wall -Wextra -Werror "$src/capi/examples/basic.c" $flags -o "$work/basic"
LD_LIBRARY_PATH="$libdir" "$work/basic" "$POLYLIMIT_TEST_REDIS_URL"

# Only polylimit_* are exported from the installed library, and it carries its SONAME.
# (Outputs are kept in variables: `COMMAND | grep -q` fails under pipefail
# when grep's early exit kills COMMAND with SIGPIPE.)
dynamic=$(readelf -d "$libdir/libpolylimit.so")
grep -q 'SONAME.*libpolylimit.so.1' <<<"$dynamic"
symbols=$(nm -D --defined-only "$libdir/libpolylimit.so" | awk '{print $NF}')
if grep -v '^POLYLIMIT_' <<<"$symbols" | grep -qv '^polylimit_'; then
  echo "non-polylimit_ symbols exported" >&2; exit 1
fi
# No hiredis anywhere: the core reads replies into its own type and links
# nothing of hiredis (neither NEEDED nor loaded through a dependency), and
# the installed pkg-config and CMake files do not ask for it.
if grep -q 'NEEDED.*hiredis' <<<"$dynamic"; then
  echo "libpolylimit.so depends on libhiredis.so" >&2; exit 1
fi
loaded=$(ldd "$libdir/libpolylimit.so")
echo "ldd libpolylimit.so: $(awk '{print $1}' <<<"$loaded" | tr '\n' ' ')"
if grep -qi hiredis <<<"$loaded"; then
  echo "libpolylimit.so loads hiredis:" >&2; echo "$loaded" >&2; exit 1
fi
if grep -rli hiredis "$libdir/pkgconfig" "$libdir/cmake" "$prefix/include"; then
  echo "the installed files above name hiredis" >&2; exit 1
fi

# A CMake consumer: find_package(polylimit) and polylimit::polylimit.
source "$src/tests/c/cmake_consumer.sh"
cmake_consumer "$work/cmake" polylimit::polylimit "$prefix"
"$work/cmake/build/basic" "$POLYLIMIT_TEST_REDIS_URL" >/dev/null
echo "installed example: pkg-config and find_package consumers both passed"
