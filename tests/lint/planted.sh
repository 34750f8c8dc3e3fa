#!/usr/bin/env bash
# tools/lint.sh fails on a mis-formatted file of each language. For every
# case: a scratch tree with the repository's lint settings and one small
# file; tools/lint.sh must pass on the file as written, then fail on the same
# file with one formatting or lint fault planted, naming the file.
#   C++ (clang-format), C (clang-format, tools/lint/c.clang-format),
#   Python (ruff format; ruff check), Go (gofmt), JavaScript (Biome format;
#   Biome lint), shell (ShellCheck), Rust (rustfmt).
# Closes with "N passed, N failed".
set -euo pipefail
root=${POLYLIMIT_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# case NAME CHECK PATH CLEAN PLANTED: PATH (relative) holds CLEAN, then PLANTED.
case_() {
  local name=$1 check=$2 path=$3 clean=$4 planted=$5
  local tree="$tmp/$passed-$failed-${check}"
  rm -rf "$tree"
  mkdir -p "$tree/tools/lint" "$(dirname "$tree/$path")"
  cp "$root/.clang-format" "$root/.shellcheckrc" "$root/pyproject.toml" "$root/biome.json" "$tree/"
  cp "$root/tools/lint/c.clang-format" "$tree/tools/lint/"
  if [ "$check" = rustfmt ]; then
    cp "$root/bindings/rust/rustfmt.toml" "$tree/bindings/rust/"
    printf '[package]\nname = "planted"\nversion = "0.1.0"\nedition = "2021"\n' >"$tree/bindings/rust/Cargo.toml"
  fi
  local out rc
  printf '%s\n' "$clean" >"$tree/$path"
  rc=0
  out=$(POLYLIMIT_LINT_ROOT="$tree" POLYLIMIT_LINT_ONLY="$check" "$root/tools/lint.sh" 2>&1) || rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL  $name: tools/lint.sh fails on the clean file:"
    printf '%s\n' "$out" | sed 's/^/    /'
    failed=$((failed + 1))
    return 0
  fi
  printf '%s\n' "$planted" >"$tree/$path"
  rc=0
  out=$(POLYLIMIT_LINT_ROOT="$tree" POLYLIMIT_LINT_ONLY="$check" "$root/tools/lint.sh" 2>&1) || rc=$?
  if [ $rc -ne 0 ] && grep -q "FAIL  $check" <<<"$out" && grep -qF "$(basename "$path")" <<<"$out"; then
    echo "PASS  $name: $check fails on the planted fault"
    passed=$((passed + 1))
  else
    echo "FAIL  $name: tools/lint.sh (exit $rc) did not report $path:"
    printf '%s\n' "$out" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}

cpp_body=$'int clamp(int x) {\n  if (x < 0) return 0;\n  return x;\n}'
case_ "C++, a 4-space indent" clang-format core/x.cpp \
  "$cpp_body" "${cpp_body//  /    }"
case_ "C, a 2-space indent" clang-format tests/c/x.c \
  "${cpp_body//  /    }" "$cpp_body"
case_ "Python, a call spread over lines" ruff tests/python/x.py \
  $'def twice(x):\n    return 2 * x' \
  $'def twice(x):\n    return 2 * \\\n        x'
case_ "Python, an unused import" ruff tests/python/x.py \
  $'def twice(x):\n    return 2 * x' \
  $'import os\n\n\ndef twice(x):\n    return 2 * x'
case_ "Go, spaces for a tab" gofmt bindings/go/x.go \
  $'package x\n\nfunc twice(x int) int {\n\treturn 2 * x\n}' \
  $'package x\n\nfunc twice(x int) int {\n    return 2 * x\n}'
case_ "JavaScript, double quotes" biome tests/node/x.test.js \
  "console.log('twice', 2 * 21);" \
  'console.log("twice", 2 * 21);'
case_ "JavaScript, a lint finding (==)" biome tests/node/x.test.js \
  'console.log(process.argv.length === 2);' \
  'console.log(process.argv.length == 2);'
case_ "shell, an unquoted variable" shellcheck tools/x.sh \
  $'#!/usr/bin/env bash\nrm -rf "$1/build"' \
  $'#!/usr/bin/env bash\nrm -rf $1/build'
if command -v cargo >/dev/null; then
  case_ "Rust, a 2-space indent" rustfmt bindings/rust/src/lib.rs \
    $'pub fn twice(x: i64) -> i64 {\n    2 * x\n}' \
    $'pub fn twice(x: i64) -> i64 {\n  2 * x\n}'
else
  echo "skip  Rust: cargo not found"
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
