#!/usr/bin/env bash
# Runs every formatter and linter of the repository in check mode; changes
# nothing, and exits non-zero on any finding.
#
#   clang-format   C++ (.clang-format) and C sources, *.c (tools/lint/c.clang-format)
#   ruff           Python: ruff check, ruff format --check (pyproject.toml [tool.ruff])
#   gofmt, go vet  Go: every module (the root one: bindings/go with promcollector;
#                  bench/go, bench/go/redis_rate_cpu, examples/go-http)
#   biome          JavaScript and TypeScript: bindings/node/lib, tests/node,
#                  bench/node, examples/node-*, tests/http/services/node,
#                  tools/demo (biome.json)
#   ShellCheck     every shell script (.shellcheckrc)
#   rustfmt        cargo fmt --check in every Rust project
#   clippy         cargo clippy -D warnings on bindings/rust, as tests/rust/run.sh
#
# Each tool's version is pinned: Debian 12's clang-format (14) and shellcheck
# (0.9), installed by tools/deps.sh lint; ruff in tools/lint/requirements.txt
# (a virtualenv in build/venv-lint); Biome in tools/lint/package.json and its
# lock file (npm ci into tools/lint/node_modules, ignored by git).
#
#   tools/lint.sh                run every check
#   tools/lint.sh --fix          rewrite the files with the formatters (clang-format -i,
#                                ruff check --fix and ruff format, gofmt -w, biome check
#                                --write, cargo fmt), then run every check
#   POLYLIMIT_LINT_SKIP=clippy,clang-format tools/lint.sh   skip the named checks
#   POLYLIMIT_LINT_ONLY=ruff,biome tools/lint.sh            run only the named checks
# Names: clang-format ruff gofmt go-vet biome shellcheck rustfmt clippy.
# To fix what it finds: the command each failing check prints (CONTRIBUTING.md).
set -euo pipefail
# POLYLIMIT_LINT_ROOT: the tree to check (default: this checkout; the test
# tests/lint/planted.sh points it to a scratch tree). The tools stay this
# checkout's (build/venv-lint, tools/lint/node_modules).
tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$tools/.." && pwd)
root=${POLYLIMIT_LINT_ROOT:-$repo}
root=$(cd "$root" && pwd)
cd "$root"

fix=0
if [ "${1:-}" = --fix ]; then
  fix=1
elif [ $# -gt 0 ]; then
  echo "usage: tools/lint.sh [--fix]" >&2
  exit 2
fi
skip=",${POLYLIMIT_LINT_SKIP:-},"
only=",${POLYLIMIT_LINT_ONLY:-},"
wanted() {  # wanted NAME: whether the check NAME runs
  [[ $skip != *",$1,"* ]] && { [ "$only" = ",," ] || [[ $only == *",$1,"* ]]; }
}

passed=0
failed=0
skipped=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
check() {  # check NAME HINT COMMAND...: runs COMMAND (a non-zero exit is a finding); HINT says how to fix
  local name=$1 hint=$2; shift 2
  if ! wanted "$name"; then
    skipped+=("$name")
    return 0
  fi
  local start=$SECONDS rc=0
  "$@" >"$log" 2>&1 || rc=$?
  if [ $rc -eq 0 ]; then
    echo "PASS  $name ($((SECONDS - start)) s)"
    passed=$((passed + 1))
  else
    echo "FAIL  $name ($((SECONDS - start)) s); to fix: $hint"
    sed 's/^/    /' "$log" | head -n 200 || true
    [ "$(wc -l <"$log")" -le 200 ] || echo "    ... ($(wc -l <"$log") lines in all)"
    failed=$((failed + 1))
  fi
}

# The files of the repository (tracked, or not ignored) with these patterns.
files() {
  if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$root" ls-files --cached --others --exclude-standard -- "$@" |
      while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done
  else
    local args=() p
    for p in "$@"; do args+=(-o -path "./$p"); done
    find . -path ./build -prune -o -type f \( -false "${args[@]}" \) -print | sed 's|^\./||'
  fi
}

# --- the tools --------------------------------------------------------------

need() {  # need COMMAND WHAT: fails the check that needs it
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "$1: not found ($2)"
  return 1
}

# ruff, pinned, in its own virtualenv under build/.
ruff_bin() {
  local venv="$repo/build/venv-lint" want
  want=$(sed -n 's/^ruff==//p' "$tools/lint/requirements.txt")
  if ! [ -x "$venv/bin/ruff" ] || [ "$("$venv/bin/ruff" --version 2>/dev/null)" != "ruff $want" ]; then
    python3 -m venv "$venv" >/dev/null &&
      "$venv/bin/pip" install -q --disable-pip-version-check -r "$tools/lint/requirements.txt" >&2 || return 1
  fi
  echo "$venv/bin/ruff"
}

# Biome, pinned by tools/lint/package-lock.json.
biome_bin() {
  local bin="$tools/lint/node_modules/.bin/biome" want
  want=$(sed -n 's/.*"@biomejs\/biome": "\([^"]*\)".*/\1/p' "$tools/lint/package.json")
  if ! [ -x "$bin" ] || [ "$("$bin" --version 2>/dev/null)" != "Version: $want" ]; then
    (cd "$tools/lint" && npm ci --no-audit --no-fund --loglevel=error) >&2 || return 1
  fi
  echo "$bin"
}

# --- the checks -------------------------------------------------------------

# C and C++: everything but generated or hand-laid files. Left out:
#   bindings/go/internal/bundled/  generated (the Go module's copy of the core's file list)
#   capi/include/polylimit.h       the public header: tables of values and doc comments
#                                  aligned by hand
#   bindings/rust/polylimit-sys/layout/layout.c   a table of offsets, one row per struct
clang_format() {
  need clang-format "Debian: clang-format; tools/deps.sh lint" || return 1
  local cpp c
  mapfile -t cpp < <(files '*.cc' '*.cpp' '*.h' '*.hpp' | grep -v -e '^bindings/go/internal/bundled/' \
    -e '^capi/include/polylimit\.h$')
  mapfile -t c < <(files '*.c' | grep -v -e '^bindings/go/internal/bundled/' \
    -e '^bindings/rust/polylimit-sys/layout/layout\.c$')
  # (Never without files: clang-format would read its standard input.)
  if [ $fix = 1 ]; then
    [ ${#cpp[@]} -eq 0 ] || clang-format -i --style=file "${cpp[@]}"
    [ ${#c[@]} -eq 0 ] || clang-format -i --style="file:$tools/lint/c.clang-format" "${c[@]}"
  fi
  local rc=0
  [ ${#cpp[@]} -eq 0 ] || clang-format --dry-run --Werror --style=file "${cpp[@]}" || rc=1
  [ ${#c[@]} -eq 0 ] || clang-format --dry-run --Werror --style="file:$tools/lint/c.clang-format" "${c[@]}" || rc=1
  return $rc
}
check clang-format "tools/lint.sh --fix" clang_format

ruff_checks() {
  need python3 "Debian: python3, python3-venv" || return 1
  local ruff
  ruff=$(ruff_bin) || { echo "could not install ruff (tools/lint/requirements.txt)"; return 1; }
  if [ $fix = 1 ]; then
    "$ruff" check --no-cache --fix --quiet . || true
    "$ruff" format --no-cache --quiet .
  fi
  local rc=0
  "$ruff" check --no-cache --output-format concise . || rc=1
  "$ruff" format --no-cache --check . || rc=1
  return $rc
}
check ruff "tools/lint.sh --fix; the rest by hand" ruff_checks

# The Go modules: the root one (bindings/go) and every go.mod below it but
# the build tree. Never another toolchain; modules from the module proxy as
# go.sum pins them (tests/go/run.sh does the same).
go_modules() {
  files 'go.mod' '*/go.mod' | xargs -r -n1 dirname
}
go_fmt() {
  need gofmt "Debian: golang-go" || return 1
  local out
  mapfile -t go_files < <(files '*.go')
  [ ${#go_files[@]} -gt 0 ] || return 0
  [ $fix = 0 ] || gofmt -w "${go_files[@]}"
  out=$(gofmt -l "${go_files[@]}")
  [ -z "$out" ] && return 0
  echo "not gofmt-formatted:"
  echo "$out"
  return 1
}
check gofmt "tools/lint.sh --fix" go_fmt
go_vet() {
  need go "Debian: golang-go" || return 1
  local dir rc=0
  for dir in $(go_modules); do
    echo "go vet in ${dir}:"
    (cd "$dir" && GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:-} -mod=mod" go vet ./...) || rc=1
  done
  return $rc
}
check go-vet "the go vet findings above" go_vet

biome_checks() {
  need node "Debian: nodejs" || return 1
  need npm "Debian: npm" || return 1
  local biome
  biome=$(biome_bin) || { echo "could not install Biome (tools/lint/package.json)"; return 1; }
  # The folders biome.json's includes name, not ".": Biome walks whatever it
  # is given, and build/ holds packaging trees with dangling links.
  local dirs=() d
  for d in bindings/node tests/node bench/node tests/http/services/node tools/demo examples/node-*; do
    [ -d "$d" ] && dirs+=("$d")
  done
  [ ${#dirs[@]} -gt 0 ] || return 0
  [ $fix = 0 ] || "$biome" check --write --colors=off "${dirs[@]}" >/dev/null || true
  "$biome" ci --error-on-warnings --colors=off "${dirs[@]}"
}
check biome "tools/lint.sh --fix; the rest by hand" biome_checks

shell_scripts() {
  { files '*.sh'; files '.ci/*' 'tests/fixture/*' 'tools/*' 'tests/http/services/*/run' | while IFS= read -r f; do
      head -n1 "$f" | grep -qE '^#!.*\b(ba)?sh\b' && printf '%s\n' "$f"
    done; } | sort -u
}
shellcheck_checks() {
  need shellcheck "Debian: shellcheck; tools/deps.sh lint" || return 1
  mapfile -t scripts < <(shell_scripts)
  [ ${#scripts[@]} -gt 0 ] || return 0
  shellcheck -f gcc "${scripts[@]}"
}
check shellcheck "the shellcheck findings above" shellcheck_checks

rust_projects=(bindings/rust bench/rust examples/rust-axum tools/demo/rust-worker tests/http/services/rust)
rust_fmt() {
  need cargo "rustup: the stable toolchain with rustfmt and clippy" || return 1
  local dir rc=0 all
  for dir in "${rust_projects[@]}"; do
    [ -f "$dir/Cargo.toml" ] || continue
    # --all: the workspace's crates. The other projects only their own code
    # (--all would format the binding again, a path dependency of theirs).
    all=()
    [ "$dir" != bindings/rust ] || all=(--all)
    [ $fix = 0 ] || (cd "$dir" && cargo fmt "${all[@]}")
    (cd "$dir" && cargo fmt "${all[@]}" --check) || { echo "(in $dir)"; rc=1; }
  done
  return $rc
}
check rustfmt "tools/lint.sh --fix" rust_fmt
# As tests/rust/run.sh: the same features and target directory, so either
# reuses the other's build. With POLYLIMIT_PREFIX (tools/test.sh) it links
# the installed library; alone it builds the bundled C++ core once.
rust_clippy() {
  need cargo "rustup: the stable toolchain with clippy" || return 1
  local features=polylimit/tokio,polylimit/tower
  if [ -n "${POLYLIMIT_PREFIX:-}" ]; then
    local libdir
    libdir=$(dirname "$(ls -d "$POLYLIMIT_PREFIX"/lib*/pkgconfig | head -n1)")
    export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    features="$features,polylimit/system"
  fi
  (cd bindings/rust && CARGO_TARGET_DIR="$repo/build/rust-target" \
    cargo clippy -q -j "${POLYLIMIT_JOBS:-2}" --all-targets --features "$features" -- -D warnings)
}
check clippy "the clippy findings above" rust_clippy

[ ${#skipped[@]} -eq 0 ] || echo "skipped: ${skipped[*]}"
echo "lint: $passed passed, $failed failed"
[ $failed -eq 0 ]
