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
# - redis-server, when the repositories have it, so that the Redis half of
#   the test suite runs in the container; without it those tests skip.
# Nothing else: the core parses Redis replies itself (no hiredis).
#
# tests/python/run.sh runs this same script on the (Debian) test machine
# before it builds and repairs the wheel, so the steps are exercised outside
# a container too.
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  pkgs=(libssl-dev)
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

# CMake's FindOpenSSL needs the headers; fail here, not in the middle of a build.
if ! { [ -f /usr/include/openssl/ssl.h ] || [ -f /usr/local/include/openssl/ssl.h ]; }; then
  echo "cibw-before-all: OpenSSL's headers (openssl/ssl.h) are still missing" >&2
  exit 1
fi
echo "cibw-before-all: OpenSSL's headers are in place"
