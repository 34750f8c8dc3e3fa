#!/usr/bin/env bash
# Runs every test suite: C/C++ (ctest), the same under AddressSanitizer +
# UndefinedBehaviorSanitizer, then each language suite tests/<lang>/run.sh.
# Every suite starts its own redis-server processes on free loopback ports.
#
# Environment handed to the language suites:
#   POLYLIMIT_SOURCE_DIR  the checkout
#   POLYLIMIT_BUILD_DIR   a CMake build of the library (Release)
#   POLYLIMIT_PREFIX      that build installed (include/, lib/, lib/pkgconfig/)
#   PKG_CONFIG_PATH, LD_LIBRARY_PATH, CMAKE_PREFIX_PATH point into POLYLIMIT_PREFIX
# Set POLYLIMIT_SKIP_SANITIZERS=1 to skip the sanitizer pass (it is on in CI).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

"$root/tools/deps.sh"

results=()
failed=0
run_suite() {  # run_suite NAME COMMAND...
  local name=$1; shift
  echo
  echo "=== $name ==="
  local start=$SECONDS
  if "$@"; then
    results+=("PASS  $name ($((SECONDS - start)) s)")
  else
    results+=("FAIL  $name ($((SECONDS - start)) s)")
    failed=$((failed + 1))
  fi
}

source "$root/tools/env.sh"
run_suite "build (Release)" polylimit_build_release
if [ $failed -ne 0 ]; then
  printf '%s\n' "${results[@]}"
  exit 1
fi

run_suite "C ABI (abidiff against capi/abi)" "$root/tools/abi-check.sh" "$POLYLIMIT_BUILD_DIR/capi/libpolylimit.so.1"
run_suite "C/C++ (ctest)" ctest --test-dir "$POLYLIMIT_BUILD_DIR" --output-on-failure

if [ "${POLYLIMIT_SKIP_SANITIZERS:-0}" != 1 ]; then
  asan() {
    local dir="$root/build/asan"
    cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPOLYLIMIT_SANITIZE=address,undefined \
      -DPOLYLIMIT_BUILD_TOOLS=OFF >/dev/null &&
      cmake --build "$dir" -j "$POLYLIMIT_JOBS" &&
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir "$dir" --output-on-failure -E installed_c_example
  }
  run_suite "C/C++ under ASan+UBSan (ctest)" asan
fi

for lang in python go java readme cross; do
  if [ -x "$root/tests/$lang/run.sh" ]; then
    run_suite "$lang" "$root/tests/$lang/run.sh"
  fi
done

echo
echo "=== summary ==="
printf '%s\n' "${results[@]}"
passed=$(( ${#results[@]} - failed ))
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ]
