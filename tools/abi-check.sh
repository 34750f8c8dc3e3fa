#!/usr/bin/env bash
# Compares the ABI of a built libpolylimit.so.1 with the baseline committed in
# capi/abi/libpolylimit.so.1.abi (libabigail's abidw/abidiff, Debian package
# abigail-tools). Any change fails: an incompatible one must bump the SONAME,
# a compatible one (a new function) is accepted by regenerating the baseline
# in the same commit:
#   tools/abi-check.sh LIBRARY            check
#   tools/abi-check.sh LIBRARY --update   write the baseline
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lib=$1
baseline="$root/capi/abi/libpolylimit.so.1.abi"
command -v abidw >/dev/null || { echo "abidw not found: install abigail-tools (tools/deps.sh does)" >&2; exit 1; }
current=$(mktemp --suffix=.abi)
trap 'rm -f "$current"' EXIT
# File names only, no directories: the baseline must not record where the
# tree was built.
abidw --no-corpus-path --short-locs --no-comp-dir-path --headers-dir "$root/capi/include" --out-file "$current" "$lib"
if [ "${2:-}" = --update ]; then
  cp "$current" "$baseline"
  echo "ABI baseline written: $baseline"
  exit 0
fi
set +e
abidiff --no-added-syms --headers-dir1 "$root/capi/include" --headers-dir2 "$root/capi/include" \
  "$baseline" "$current"
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "ABI check FAILED (abidiff exit $rc): libpolylimit.so.1 differs from capi/abi/libpolylimit.so.1.abi." >&2
  echo "An incompatible change needs a new SONAME; a deliberate compatible change regenerates the" >&2
  echo "baseline in the same commit: tools/abi-check.sh <lib> --update" >&2
  exit 1
fi
echo "ABI check passed: libpolylimit.so.1 matches capi/abi/libpolylimit.so.1.abi"
