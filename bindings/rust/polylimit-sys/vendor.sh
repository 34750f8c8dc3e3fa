#!/usr/bin/env bash
# Copies the C++ sources that build.rs builds into native/, so that the
# packaged crate (cargo package) carries them, as the Python sdist does:
# the top-level CMakeLists.txt, core/, capi/ (with capi/vocabulary/, which
# the build runs) and packaging/ (pkg-config templates, CMake config), plus
# the license files. native/ is ignored by git; in the repository build.rs
# uses the sources three directories up when native/ is absent.
#
#   vendor.sh          (re)fill native/
#   vendor.sh --check  fail when native/ differs from the repository
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
items=(CMakeLists.txt LICENSE THIRD_PARTY_NOTICES core capi packaging)

if [ "${1:-}" = --check ]; then
  for item in "${items[@]}"; do
    diff -r -x __pycache__ "$root/$item" "$here/native/$item" >/dev/null ||
      { echo "native/$item differs from the repository: run $0" >&2; exit 1; }
  done
  echo "native/ matches the repository"
  exit 0
fi

rm -rf "$here/native"
mkdir -p "$here/native"
for item in "${items[@]}"; do
  cp -R "$root/$item" "$here/native/$item"
done
find "$here/native" -name __pycache__ -type d -prune -exec rm -rf {} +
echo "native/: ${items[*]}"
