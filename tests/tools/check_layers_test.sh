#!/usr/bin/env bash
# tools/check-layers.py passes on the tree and fails on each kind of offence,
# planted in a copy of core/src and core/include (the tree stays untouched):
# an include of a higher layer, a public header of a higher layer, a bare
# header name, and a file outside the layer folders.
#   tests/tools/check_layers_test.sh [PYTHON]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=${1:-python3}
check="$root/tools/check-layers.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

"$python" "$check" || { echo "FAIL  the tree breaks its own layers"; exit 1; }
echo "ok    the tree"

# expect_offence WHAT PATTERN: the check of the copy fails and names PATTERN.
expect_offence() {
  local out rc=0
  out=$("$python" "$check" --src "$tmp/src" --include "$tmp/include" 2>&1) || rc=$?
  if [ "$rc" -eq 1 ] && grep -q -- "$2" <<<"$out"; then
    echo "ok    $1"
  else
    echo "FAIL  $1: exit $rc, expected 1 and '$2' in:"; echo "$out"; failed=$((failed + 1))
  fi
}
fresh() { rm -rf "$tmp/src" "$tmp/include"; cp -R "$root/core/src" "$tmp/src"; cp -R "$root/core/include" "$tmp/include"; }

fresh
printf '#include "limiter/lease.h"\n' >>"$tmp/src/net/mux.cpp"
line=$(wc -l <"$tmp/src/net/mux.cpp")
expect_offence "net includes limiter" "src/net/mux.cpp:$line: net includes limiter (\"limiter/lease.h\")"

fresh
sed -i 's|#include "polylimit/connection_options.h"|#include "polylimit/client.h"|' "$tmp/src/net/connection.h"
expect_offence "net includes a public header of the limiter" 'src/net/connection.h:[0-9]*: net includes limiter ("polylimit/client.h")'

fresh
printf '#include "mux.h"\n' >>"$tmp/src/net/pool.cpp"
expect_offence "a header named without its layer" 'src/net/pool.cpp:[0-9]*: "mux.h" is neither'

fresh
: >"$tmp/src/stray.cpp"
expect_offence "a file outside the layer folders" 'src/stray.cpp: outside every layer folder'

fresh
: >"$tmp/include/polylimit/new.h"
expect_offence "a public header with no layer" 'polylimit/new.h: a public header with no layer'

[ "$failed" -eq 0 ]
