#!/usr/bin/env bash
# cibuildwheel's before-all (pyproject.toml [tool.cibuildwheel.linux]): runs
# once in each manylinux container, before any wheel is built.
#
# The build links hiredis statically into _core (CMakeLists.txt prefers
# libhiredis.a), so the image must have libhiredis.a, built with -fPIC, and
# its headers. The manylinux images have no hiredis, and distribution
# packages (EPEL's hiredis-devel) usually ship only the shared library, which
# the build would then link and auditwheel copy next to _core. So this builds
# a pinned upstream release (its Makefile compiles every object with -fPIC)
# into /usr/local:
# libhiredis.a, libhiredis.so (CMakeLists.txt requires it to exist) and
# include/hiredis/. No TLS (USE_SSL=0): polylimit does not use hiredis_ssl.
#
# redis-server, when the image's repositories have it, lets the Redis half of
# the test suite run in the container; without it those tests skip.
set -euo pipefail

HIREDIS_VERSION=1.4.1
HIREDIS_COMMIT=616f2286ba5503f74ae96e720623fa11dbc690af # tag v1.4.1

work=$(mktemp -d)
git clone -q --depth 1 --branch "v$HIREDIS_VERSION" https://github.com/redis/hiredis.git "$work/hiredis"
actual=$(git -C "$work/hiredis" rev-parse HEAD)
if [ "$actual" != "$HIREDIS_COMMIT" ]; then
  echo "cibw-before-all: hiredis v$HIREDIS_VERSION is $actual, expected $HIREDIS_COMMIT" >&2
  exit 1
fi
make -C "$work/hiredis" -j"$(nproc)" USE_SSL=0 static dynamic
make -C "$work/hiredis" USE_SSL=0 PREFIX=/usr/local install
ls -l /usr/local/lib/libhiredis.a
rm -rf "$work"

if command -v dnf >/dev/null; then
  dnf -y -q install redis || echo "cibw-before-all: no redis package; the Redis tests will skip" >&2
fi
