#!/usr/bin/env bash
# cibuildwheel's before-all (pyproject.toml [tool.cibuildwheel.linux]): runs
# once in each manylinux container, before any wheel is built. It installs
# what CMake needs beside the compiler:
#
# - OpenSSL's headers and libraries (rediss://): openssl-devel in the
#   manylinux images (dnf/yum), openssl-dev in musllinux (apk), libssl-dev on
#   Debian/Ubuntu. auditwheel repair then copies libssl and libcrypto into the
#   wheel (polylimit.libs/): the wheel works on any manylinux system, and an
#   OpenSSL security fix reaches wheel users only with a new polylimit wheel
#   (bindings/python/README.md, "The wheel and OpenSSL").
# - hiredis as a static, position-independent archive: the build links it
#   into _core (CMakeLists.txt prefers libhiredis.a). Debian's libhiredis-dev
#   has one; the manylinux images have no hiredis, and EPEL's hiredis-devel
#   ships only the shared library (which auditwheel would copy next to _core),
#   so there a pinned upstream release is built (its Makefile compiles every
#   object with -fPIC) into /usr/local: libhiredis.a, libhiredis.so
#   (CMakeLists.txt requires it to exist) and include/hiredis/. No TLS
#   (USE_SSL=0): polylimit does not use hiredis_ssl.
# - redis-server, when the repositories have it, so that the Redis half of
#   the test suite runs in the container; without it those tests skip.
#
# tests/python/run.sh runs this same script on the (Debian) test machine
# before it builds and repairs the wheel, so the steps are exercised outside
# a container too.
set -euo pipefail

HIREDIS_VERSION=1.4.1
HIREDIS_COMMIT=616f2286ba5503f74ae96e720623fa11dbc690af # tag v1.4.1

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  pkgs=(libssl-dev libhiredis-dev)
  missing=()
  for p in "${pkgs[@]}" redis-server; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    as_root apt-get update -q >/dev/null
    as_root apt-get install -y -q "${missing[@]}" >/dev/null
  fi
elif command -v dnf >/dev/null || command -v yum >/dev/null; then
  pm=$(command -v dnf || command -v yum)
  "$pm" -y -q install openssl-devel
  "$pm" -y -q install redis || echo "cibw-before-all: no redis package; the Redis tests will skip" >&2
elif command -v apk >/dev/null; then
  apk add --no-cache openssl-dev
  apk add --no-cache redis || echo "cibw-before-all: no redis package; the Redis tests will skip" >&2
else
  echo "cibw-before-all: no apt-get, dnf, yum or apk: install OpenSSL's headers yourself" >&2
  exit 1
fi

# A static hiredis the build can link: the system's, else a pinned release.
have_static_hiredis() {
  local d
  for d in /usr/local/lib /usr/local/lib64 /usr/lib /usr/lib64 /usr/lib/*-linux-gnu; do
    [ -f "$d/libhiredis.a" ] && return 0
  done
  return 1
}
if have_static_hiredis && { [ -f /usr/include/hiredis/hiredis.h ] || [ -f /usr/local/include/hiredis/hiredis.h ]; }; then
  echo "cibw-before-all: using the system's static hiredis"
else
  work=$(mktemp -d)
  git clone -q --depth 1 --branch "v$HIREDIS_VERSION" https://github.com/redis/hiredis.git "$work/hiredis"
  actual=$(git -C "$work/hiredis" rev-parse HEAD)
  if [ "$actual" != "$HIREDIS_COMMIT" ]; then
    echo "cibw-before-all: hiredis v$HIREDIS_VERSION is $actual, expected $HIREDIS_COMMIT" >&2
    exit 1
  fi
  make -C "$work/hiredis" -j"$(nproc)" USE_SSL=0 static dynamic
  as_root make -C "$work/hiredis" USE_SSL=0 PREFIX=/usr/local install
  ls -l /usr/local/lib/libhiredis.a
  rm -rf "$work"
fi

# CMake's FindOpenSSL needs the headers; fail here, not in the middle of a build.
if ! { [ -f /usr/include/openssl/ssl.h ] || [ -f /usr/local/include/openssl/ssl.h ]; }; then
  echo "cibw-before-all: OpenSSL's headers (openssl/ssl.h) are still missing" >&2
  exit 1
fi
echo "cibw-before-all: OpenSSL headers and a static hiredis are in place"
