#!/usr/bin/env bash
# Installs the build into a temporary prefix, builds capi/examples/basic.c
# against it with pkg-config (and a CMake consumer with find_package), and runs
# both against a real redis-server.
set -euo pipefail
build=$1 src=$2
prefix=$(mktemp -d /tmp/redlimit-prefix-XXXXXX)
work=$(mktemp -d /tmp/redlimit-consumer-XXXXXX)
eval "$("$src/tests/redis-server.sh" start)"
trap '"$src/tests/redis-server.sh" stop "$RL_TEST_REDIS_PID" "$RL_TEST_REDIS_DIR"; rm -rf "$prefix" "$work"' EXIT

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/pkgconfig | head -n1 | xargs dirname)
export PKG_CONFIG_PATH="$libdir/pkgconfig"
flags=$(pkg-config --cflags --libs redlimit)
echo "pkg-config --cflags --libs redlimit: $flags"
cc -std=c99 -Wall -Wextra -Werror "$src/capi/examples/basic.c" $flags -o "$work/basic"
LD_LIBRARY_PATH="$libdir" "$work/basic" "$RL_TEST_REDIS_URL"

# Only rl_* are exported from the installed library, and it carries its SONAME.
readelf -d "$libdir/libredlimit.so" | grep -q 'SONAME.*libredlimit.so.1'
if nm -D --defined-only "$libdir/libredlimit.so" | awk '{print $NF}' | grep -v '^REDLIMIT_' | grep -qv '^rl_'; then
  echo "non-rl_ symbols exported" >&2; exit 1
fi
# The installed library does not depend on libhiredis.so.
if readelf -d "$libdir/libredlimit.so" | grep -q 'NEEDED.*hiredis'; then
  echo "libredlimit.so depends on libhiredis.so" >&2; exit 1
fi

# A CMake consumer: find_package(redlimit) and redlimit::redlimit.
mkdir -p "$work/cmake"
cp "$src/capi/examples/basic.c" "$work/cmake/"
cat > "$work/cmake/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(redlimit 1.0 REQUIRED)
add_executable(basic basic.c)
target_link_libraries(basic PRIVATE redlimit::redlimit)
CM
cmake -S "$work/cmake" -B "$work/cmake/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake/build" >/dev/null
"$work/cmake/build/basic" "$RL_TEST_REDIS_URL" >/dev/null
echo "installed example: pkg-config and find_package consumers both passed"
