#!/usr/bin/env bash
# Links capi/examples/basic.c against the INSTALLED static library,
# libpolylimit.a, from a C-only consumer, and runs it against a real
# redis-server:
#   1. pkg-config --static, with only libpolylimit.a installed (as a build with
#      -DPOLYLIMIT_BUILD_SHARED=OFF installs it): the system libraries stay shared;
#   2. pkg-config --static with cc -static: a fully static program, the
#      strictest proof that Libs.private names everything the archive needs;
#   3. pkg-config polylimit-static, next to the shared library (it names the
#      archive by its path);
#   4. CMake, project(consumer C) with polylimit::polylimit_static.
# None of the programs may depend on libpolylimit.so.
#   tests/c/installed_static_example.sh BUILD_DIR SOURCE_DIR
# shellcheck disable=SC2086  # $flags: pkg-config's flags, split into words on purpose
set -euo pipefail
build=$1 src=$2
prefix=$(mktemp -d /tmp/polylimit-prefix-XXXXXX)
work=$(mktemp -d /tmp/polylimit-consumer-XXXXXX)
eval "$("$src/tests/redis-server.sh" start)"
trap '"$src/tests/redis-server.sh" stop "$POLYLIMIT_TEST_REDIS_PID" "$POLYLIMIT_TEST_REDIS_DIR"; rm -rf "$prefix" "$work"' EXIT

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(ls -d "$prefix"/lib*/pkgconfig "$prefix"/lib/*/pkgconfig 2>/dev/null | head -n1)")
[ -f "$libdir/libpolylimit.a" ] || { echo "no libpolylimit.a installed in $libdir" >&2; exit 1; }
cp "$src/capi/examples/basic.c" "$work/"

no_libpolylimit() {  # no_libpolylimit PROGRAM: fails if the program loads libpolylimit.so
  local deps
  deps=$(ldd "$1" 2>&1 || true)
  echo "ldd $(basename "$1"): $(echo "$deps" | awk '{print $1}' | tr '\n' ' ')"
  if echo "$deps" | grep -q libpolylimit; then
    echo "$1 depends on libpolylimit.so" >&2; exit 1
  fi
}

# 1. pkg-config --static against a static-only copy of the installation.
static_prefix="$work/static-prefix"
cp -a "$prefix" "$static_prefix"
static_libdir=$static_prefix/${libdir#"$prefix"/}
rm -f "$static_libdir"/libpolylimit.so*
flags=$(PKG_CONFIG_PATH="$static_libdir/pkgconfig" pkg-config --static --cflags --libs polylimit)
echo "pkg-config --static --cflags --libs polylimit: $flags"
cc -std=c99 -Wall -Wextra -Werror "$work/basic.c" $flags -o "$work/basic-pc"
no_libpolylimit "$work/basic-pc"
"$work/basic-pc" "$POLYLIMIT_TEST_REDIS_URL" >/dev/null

# The archive needs nothing of hiredis: no flag names it, and no symbol of
# hiredis's (redis*, sds*) is left for another library to define.
if grep -qi hiredis <<<"$flags"; then echo "pkg-config --static names hiredis: $flags" >&2; exit 1; fi
undefined=$(nm -u "$static_libdir/libpolylimit.a" | awk '$1 == "U" { print $2 }')
if grep -E '^(redis[A-Z]|sds|freeReplyObject)' <<<"$undefined"; then
  echo "libpolylimit.a needs the hiredis symbols above" >&2; exit 1
fi

# 2. The same flags, fully static (glibc warns that getaddrinfo needs its
# shared NSS modules at run time: expected, and harmless for 127.0.0.1).
cc -std=c99 -Wall -Wextra -Werror -static "$work/basic.c" $flags -o "$work/basic-full-static" 2>"$work/static-link.log" ||
  { cat "$work/static-link.log" >&2; exit 1; }
file "$work/basic-full-static" | grep -q 'statically linked'
"$work/basic-full-static" "$POLYLIMIT_TEST_REDIS_URL" >/dev/null
echo "fully static link: ok"

# 3. polylimit-static.pc: libpolylimit.a by path, with libpolylimit.so installed too.
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs polylimit-static)
echo "pkg-config --cflags --libs polylimit-static: $flags"
cc -std=c99 -Wall -Wextra -Werror "$work/basic.c" $flags -o "$work/basic-pc-static"
no_libpolylimit "$work/basic-pc-static"
"$work/basic-pc-static" "$POLYLIMIT_TEST_REDIS_URL" >/dev/null

# 4. CMake, C only: the C++ runtime and OpenSSL come from the imported target.
source "$src/tests/c/cmake_consumer.sh"
cmake_consumer "$work/cmake" polylimit::polylimit_static "$prefix"
no_libpolylimit "$work/cmake/build/basic"
"$work/cmake/build/basic" "$POLYLIMIT_TEST_REDIS_URL" >/dev/null
echo "installed static example: pkg-config --static (shared and fully static system libraries), polylimit-static.pc and polylimit::polylimit_static (C-only CMake project) passed"
