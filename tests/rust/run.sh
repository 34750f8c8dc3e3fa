#!/usr/bin/env bash
# Rust binding suite (bindings/rust): the vocabulary file is current, cargo
# fmt --check, cargo clippy -D warnings, cargo test (the FFI layout test, the
# blocking API and check_async against real redis-servers started by
# tests/fixture/redisfix: standalone, Redis Cluster, Sentinel and TLS, plain
# and behind Sentinel; the HTTP contract's golden vectors,
# tests/http/vectors.json, through Policy; the tower layer in an axum server
# over HTTP),
# examples/rust-axum over HTTP (tests/rust/example_http.sh), fmt and clippy
# of it, of the demo's worker and of the cross-language HTTP service
# (tests/http/services/rust), cargo doc without warnings, the tests again under
# AddressSanitizer when a nightly toolchain is installed; then the packaged
# crates (tools/release.sh --only rust: cargo package, with the C++ sources
# vendored into polylimit-sys) built offline with their default features,
# which compile the bundled core with CMake, by a fresh project in a
# temporary folder that checks a real server (tools/check-release.sh; under
# tools/test.sh its release suite does it, POLYLIMIT_RELEASE_CHECKS=1).
#
# tools/test.sh runs it with POLYLIMIT_PREFIX (an installed build): the tests
# then link that library (feature `system`, pkg-config) to save a second C++
# build; the fresh project always builds the bundled sources. Run alone, the
# tests build the bundled sources too. The lock file is not committed (it
# would name the registry); cargo writes it into bindings/rust (ignored by
# git) on the first build and the later steps use the same one. Build output
# goes to build/rust-target.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root/bindings/rust"

command -v cargo >/dev/null || { echo "cargo: not found" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server: not found" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3: not found (tests/fixture/redisfix, the Redis launcher, needs it)" >&2; exit 1; }
# tests/deployments.rs: redisfix forms clusters with redis-cli; the TLS tests
# make their certificates with openssl.
command -v redis-cli >/dev/null || { echo "redis-cli: not found" >&2; exit 1; }
command -v openssl >/dev/null || { echo "openssl: not found" >&2; exit 1; }

export CARGO_TARGET_DIR="$root/build/rust-target"
jobs=${POLYLIMIT_JOBS:-2}
features=polylimit/tokio,polylimit/tower
if [ -n "${POLYLIMIT_PREFIX:-}" ]; then
  libdir=$(dirname "$(ls -d "$POLYLIMIT_PREFIX"/lib*/pkgconfig | head -n1)")
  export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  features="$features,polylimit/system"
  echo "rust: $(cargo --version); linking libpolylimit $(pkg-config --modversion polylimit) from POLYLIMIT_PREFIX"
else
  echo "rust: $(cargo --version); building the bundled C++ core (no POLYLIMIT_PREFIX)"
fi

log=$(mktemp)
cleanup() {
  rm -f "$log"
  rm -rf "$root/bindings/rust/polylimit-sys/native"
}
trap cleanup EXIT
passed=0
failed=0

step() {  # step LABEL COMMAND...: runs a check, prints its output on failure
  local label=$1; shift
  local start=$SECONDS
  if "$@" >"$log" 2>&1; then
    echo "$label: ok ($((SECONDS - start)) s)"
  else
    cat "$log"
    echo "$label: FAILED" >&2
    failed=$((failed + 1))
  fi
}

step "vocabulary_gen.rs is current" python3 "$root/capi/vocabulary/generate.py" rust --check
step "cargo fmt --check" cargo fmt --all --check
step "cargo clippy -D warnings" cargo clippy -j "$jobs" --all-targets --features "$features" -- -D warnings

start=$SECONDS
rc=0
cargo test -j "$jobs" --features "$features" >"$log" 2>&1 || rc=$?
p=$(grep -o '[0-9]* passed' "$log" | awk '{s += $1} END {print s + 0}')
f=$(grep -o '[0-9]* failed' "$log" | awk '{s += $1} END {print s + 0}')
echo "cargo test: $p passed, $f failed ($((SECONDS - start)) s)"
if [ "$rc" -ne 0 ] || [ "$p" -eq 0 ]; then
  cat "$log"
  [ "$f" -eq 0 ] && f=1  # a build failure counts as one failure
fi
passed=$((passed + p))
failed=$((failed + f))

# Programs of their own on the crate (own workspaces, this target directory):
# the demo worker, examples/rust-axum, which then serves real HTTP, and the
# service of the cross-language HTTP suite (tests/http/services/rust, built
# here so that its `run` finds it built).
own_features=
[ -n "${POLYLIMIT_PREFIX:-}" ] && own_features=system
own_checks() (  # own_checks DIR: fmt and clippy of a program on the crate (a subshell: cd)
  cd "$1"
  # The versions the binding's builds resolved (the lock file is not committed).
  [ -f Cargo.lock ] || cp "$root/bindings/rust/Cargo.lock" Cargo.lock
  cargo fmt --check && cargo clippy -j "$jobs" --all-targets ${own_features:+--features "$own_features"} -- -D warnings
)
for own in tools/demo/rust-worker examples/rust-axum tests/http/services/rust; do
  step "$own: cargo fmt --check, clippy -D warnings" own_checks "$root/$own"
done
step "examples/rust-axum over HTTP (two servers, one redis-server)" "$root/tests/rust/example_http.sh" $own_features

RUSTDOCFLAGS="-D warnings" step "cargo doc" cargo doc -j "$jobs" --no-deps --features "$features"

# AddressSanitizer (with LeakSanitizer) over the same tests, where a nightly
# toolchain is installed (-Zsanitizer is nightly-only). It instruments the
# Rust side, the FFI calls and every malloc/free, the library's included; the
# C++ code itself is instrumented by the C/C++ suites' ASan pass. Miri cannot
# run these tests: they call foreign code.
if [ "${POLYLIMIT_SKIP_SANITIZERS:-0}" != 1 ] && cargo +nightly --version >/dev/null 2>&1; then
  start=$SECONDS
  rc=0
  RUSTFLAGS="-Zsanitizer=address" RUSTDOCFLAGS="-Zsanitizer=address" CARGO_TARGET_DIR="$root/build/rust-target-asan" \
    cargo +nightly test -j "$jobs" --target "$(rustc -vV | sed -n 's/^host: //p')" --features "$features" --tests \
    >"$log" 2>&1 || rc=$?
  p=$(grep -o '[0-9]* passed' "$log" | awk '{s += $1} END {print s + 0}')
  f=$(grep -o '[0-9]* failed' "$log" | awk '{s += $1} END {print s + 0}')
  echo "cargo +nightly test (AddressSanitizer): $p passed, $f failed ($((SECONDS - start)) s)"
  if [ "$rc" -ne 0 ] || [ "$p" -eq 0 ]; then
    cat "$log"
    [ "$f" -eq 0 ] && f=1
  fi
  passed=$((passed + p))
  failed=$((failed + f))
else
  echo "AddressSanitizer pass: skipped (no nightly toolchain, or POLYLIMIT_SKIP_SANITIZERS=1)"
fi

# The packaged crates, as a user gets them: sources vendored, packed, then
# built with default features by a new project (tools/release.sh --only rust
# --check; tools/check-release.sh).
echo "--- packaged crates in a fresh project"
step "vendor the C++ sources" polylimit-sys/vendor.sh
step "vendored sources match" polylimit-sys/vendor.sh --check
if [ "${POLYLIMIT_RELEASE_CHECKS:-0}" = 1 ]; then
  echo "the packaged crates: left to the release suite (tools/check-release.sh)"
else
  step "cargo package, a fresh project on the crates (tools/release.sh --only rust --check)" \
    "$root/tools/release.sh" --only rust --out "$root/build/dist-rust" --check
fi

echo "rust: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
