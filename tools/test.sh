#!/usr/bin/env bash
# Runs every test suite: C/C++ (ctest), the same under AddressSanitizer +
# UndefinedBehaviorSanitizer and under ThreadSanitizer, the libFuzzer targets
# (tools/fuzz.sh), then each language suite tests/<lang>/run.sh, the release
# (tools/release.sh --check: every artifact built and installed), then the
# formatters and linters (tools/lint.sh).
# Every suite starts its own redis-server processes on free loopback ports.
#
# Environment handed to the language suites:
#   POLYLIMIT_SOURCE_DIR  the checkout
#   POLYLIMIT_BUILD_DIR   a CMake build of the library (Release)
#   POLYLIMIT_PREFIX      that build installed (include/, lib/, lib/pkgconfig/)
#   PKG_CONFIG_PATH, LD_LIBRARY_PATH, CMAKE_PREFIX_PATH point into POLYLIMIT_PREFIX
# Set POLYLIMIT_SKIP_SANITIZERS=1 to skip the sanitizer passes (ASan+UBSan,
# TSan), POLYLIMIT_SKIP_FUZZ=1 to skip the fuzz suite and
# POLYLIMIT_SKIP_SERVERS=1 to skip the compatibility pass (all are on in CI).
# The failover tests run in the Release pass only (see below);
# POLYLIMIT_FAILOVERS_EVERYWHERE=1 runs them in the sanitizer passes too.
# POLYLIMIT_PRUNE_BUILDS=1 (set by .ci/run) deletes the large build trees that
# no later suite uses once their suite is over (the sanitizer and fuzz
# builds, the Rust ASan and fresh-project targets: about 2.5 GiB); the logs
# stay (build/test-logs/, ctest's Testing/, build/fuzz/logs/), and so do the
# fuzz reproducers (build/fuzz/artifacts/).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

"$root/tools/deps.sh"

results=()
failed=0
failed_logs=()
# Each suite's output is also kept in build/test-logs/ so that the summary,
# the last thing printed, can repeat why a suite failed.
logs="$root/build/test-logs"
rm -rf "$logs"
mkdir -p "$logs"
# A full disk fails suites in ways that look like bugs (ENOSPC, ninja's
# "manifest still dirty"): the summary says how much was free after a suite
# whenever little was.
free_mib() { df -Pm "$root" | awk 'NR == 2 { print $4 }'; }
low_disk_mib=2048
echo "disk: $(free_mib) MiB free at the start"
run_suite() {  # run_suite NAME COMMAND...
  local name=$1; shift
  echo
  echo "=== $name ==="
  local start=$SECONDS
  local log
  log="$logs/$(echo "$name" | tr -c 'A-Za-z0-9\n' '_').log"
  # Not a pipe: the suite runs in this shell (the build suite exports paths).
  local status=0
  "$@" > >(tee "$log") 2>&1 || status=$?
  wait $! 2>/dev/null || true  # tee has written everything
  local free disk=""
  free=$(free_mib)
  if [ "$free" -lt $low_disk_mib ]; then disk=", disk: only $free MiB free after it"; fi
  if [ $status -eq 0 ]; then
    results+=("PASS  $name ($((SECONDS - start)) s$disk)")
  else
    results+=("FAIL  $name ($((SECONDS - start)) s$disk)")
    failed=$((failed + 1))
    failed_logs+=("$name|$log")
  fi
}

prune() {  # prune DIR...: with POLYLIMIT_PRUNE_BUILDS=1, empties each build tree but its logs
  [ "${POLYLIMIT_PRUNE_BUILDS:-0}" = 1 ] || return 0
  local dir
  for dir; do
    [ -d "$dir" ] && find "$dir" -mindepth 1 -maxdepth 1 ! -name Testing ! -name artifacts ! -name logs -exec rm -rf {} +
  done
  return 0
}

# The checkout as it was: running the tests must not change it (reports go
# under build/, which git ignores).
tree_state() {
  git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1 || return 0
  { git -C "$root" status --porcelain --untracked-files=all; git -C "$root" diff; } | sha256sum
}
tree_before=$(tree_state)

source "$root/tools/env.sh"
run_suite "build (Release)" polylimit_build_release
if [ $failed -ne 0 ]; then
  printf '%s\n' "${results[@]}"
  exit 1
fi

run_suite "versions (tools/check-versions.sh)" "$root/tools/check-versions.sh"
run_suite "core layers (tools/check-layers.py)" "$root/tools/check-layers.py"
run_suite "C ABI (abidiff against capi/abi)" "$root/tools/abi-check.sh" "$POLYLIMIT_BUILD_DIR/capi/libpolylimit.so.1"
# Three ctest passes: Release (here), ASan+UBSan and TSan (below). The slow
# failover tests, which spend seconds waiting for Redis to promote a replica
# (a manual Cluster failover then a SIGKILLed master, Sentinel failovers and
# killed masters, a master restarted before its failover, and durable_tests,
# Sentinel failovers under load), run in ONE pass: this one, where their
# timing assertions mean what they say. The sanitizer passes run every other
# test (the core, the Cluster and Sentinel transports: resharding, MOVED,
# the sentinel follower), and these too when POLYLIMIT_FAILOVERS_EVERYWHERE=1.
failover_tests='Cluster.ManualFailover*:Sentinel.*:SentinelFollower.FailoverFollowedWithinMilliseconds:SentinelRestart.*'
# (GTEST_FILTER: patterns after '-' are left out.)
asan_filter="-$failover_tests"
tsan_filter="-Transport.AnExtraReplyNeverReachesAnotherCall:$failover_tests"
if [ "${POLYLIMIT_FAILOVERS_EVERYWHERE:-0}" = 1 ]; then
  asan_filter='*'
  tsan_filter='-Transport.AnExtraReplyNeverReachesAnotherCall'
fi
# Tests run POLYLIMIT_JOBS at a time: each starts its own redis-servers on
# free ports (the launcher takes another port if one was taken meanwhile)
# in its own temporary directory, so they are independent. The longest (COST
# in tests/CMakeLists.txt) start first and overlap the short ones.
run_suite "C/C++ (ctest)" ctest --test-dir "$POLYLIMIT_BUILD_DIR" --output-on-failure -j "$POLYLIMIT_JOBS"
# Fault matrix and soak (POLYLIMIT_SOAK_SECONDS, default 120); the report goes to
# build/reports/reliability.md (tests/faults/run.sh --update-docs refreshes the doc).
run_suite "faults" "$root/tests/faults/run.sh"

if [ "${POLYLIMIT_SKIP_SANITIZERS:-0}" != 1 ]; then
  # Debug builds (-O0). At -O1 the ASan+UBSan ctest pass took 142 s instead
  # of 190 s, but its build 403 s instead of 97 s (372 s of CPU, not 152).
  asan() {
    local dir="$root/build/asan"
    cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPOLYLIMIT_SANITIZE=address,undefined \
      -DPOLYLIMIT_BUILD_TOOLS=OFF >/dev/null &&
      cmake --build "$dir" -j "$POLYLIMIT_JOBS" &&
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        GTEST_FILTER="$asan_filter" \
        ctest --test-dir "$dir" --output-on-failure -j "$POLYLIMIT_JOBS" -E 'installed_c_example|durable_tests'
  }
  run_suite "C/C++ under ASan+UBSan (ctest)" asan
  prune "$root/build/asan"
  # ThreadSanitizer over the core's tests; any report fails the suite. Left
  # out: the installed-library, packaging and shell tests (nothing to race),
  # and the tests that assert timings a 5-15x slower TSan build misses on 2
  # cores (1 s command timeouts under load): server_condition_tests,
  # cluster_tests and one transport case; durable_tests and the failover
  # tests (run in the Release pass).
  tsan() {
    local dir="$root/build/tsan"
    cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPOLYLIMIT_SANITIZE=thread \
      -DPOLYLIMIT_BUILD_TOOLS=OFF >/dev/null &&
      cmake --build "$dir" -j "$POLYLIMIT_JOBS" &&
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        GTEST_FILTER="$tsan_filter" \
        ctest --test-dir "$dir" --output-on-failure -j "$POLYLIMIT_JOBS" \
        -E 'installed|project_names|exported|vocabulary|cli_|googletest|server_condition_tests|cluster_tests|durable_tests'
  }
  run_suite "C/C++ under ThreadSanitizer (ctest)" tsan
  prune "$root/build/tsan"
fi

# libFuzzer targets (tests/fuzz), 30 s each under ASan+UBSan; a crash leaves
# its reproducer in build/fuzz/artifacts/ (docs/testing.md).
if [ "${POLYLIMIT_SKIP_FUZZ:-0}" != 1 ]; then
  run_suite "fuzz (libFuzzer, ASan+UBSan)" "$root/tools/fuzz.sh" "${POLYLIMIT_FUZZ_SECONDS:-30}"
  prune "$root/build/fuzz"
fi

# The release suite (below) installs and uses every packaged artifact from a
# fresh project: the language suites leave those steps (the module zip's
# consumer, the packaged crates, the wheel built from the sdist) to it.
export POLYLIMIT_RELEASE_CHECKS=1
for lang in python go java node rust readme cross; do
  if [ -x "$root/tests/$lang/run.sh" ]; then
    run_suite "$lang" "$root/tests/$lang/run.sh"
    # The demo builds its Rust workers in build/rust-target (release).
    if [ "$lang" = rust ]; then prune "$root/build/rust-target-asan"; fi
    # The cross-language suite runs the jar the Java suite built and tested.
    if [ "$lang" = java ] && [[ ${results[-1]} == PASS* ]] && [ -f "$root/build/java-mvn/polylimit-1.0.0.jar" ]; then
      export POLYLIMIT_JAVA_JAR="$root/build/java-mvn/polylimit-1.0.0.jar"
    fi
  fi
done

# Every artifact of a release into build/dist (tools/release.sh), reusing
# the suites' builds (their wheel, sdist and jars; the addon, crate and
# Debian build trees), then checked (tools/check-release.sh): versions,
# licences, SHA256SUMS, and each artifact installed and used from a fresh
# project against a real redis-server. The Debian packages are installed by
# .ci/run after this script (as root, last: tools/check-release.sh --only deb).
run_suite "release (tools/release.sh --check)" "$root/tools/release.sh" --out "$root/build/dist" --reuse --check --skip deb
prune "$root/build/rust-fresh-target"

# Formatters and linters of every language (tools/lint.sh); after the language
# suites, whose Go build cache and Rust target directory it reuses.
run_suite "lint (tools/lint.sh)" "$root/tools/lint.sh"
run_suite "lint fails on planted faults (tests/lint/planted.sh)" "$root/tests/lint/planted.sh"

# The compatibility pass: Valkey 8.0.1 and Redis 7.2.6, built from the
# release tarballs in ../shared/servers (POLYLIMIT_SERVER_SOURCES) into a
# cache outside the checkout (tools/servers.sh), run the tests that depend
# most on the server, their decisions are compared byte for byte with Debian's
# redis-server's, and the demo runs on Valkey (tests/servers/run.sh). Last of
# the suites, so that the demo reuses the workers the language suites built.
# Without the tarballs: a failure in CI, skipped (and said so) elsewhere.
if [ "${POLYLIMIT_SKIP_SERVERS:-0}" != 1 ]; then
  server_sources=${POLYLIMIT_SERVER_SOURCES:-$root/../shared/servers}
  if [ -f "$server_sources/SHA256SUMS" ] || [ "${CI:-}" = true ]; then
    run_suite "compatibility: other servers (tests/servers/run.sh)" "$root/tests/servers/run.sh"
  else
    echo
    echo "=== compatibility: other servers (tests/servers/run.sh) ==="
    echo "skipped: no server sources at $server_sources (set POLYLIMIT_SERVER_SOURCES)"
    results+=("SKIP  compatibility: other servers (no server sources at $server_sources)")
  fi
fi

clean_checkout() {
  if [ "$(tree_state)" != "$tree_before" ]; then
    echo "the test suites changed the checkout (generated files belong under build/):"
    git -C "$root" status --short
    return 1
  fi
  echo "the checkout is as it was before the tests"
}
run_suite "checkout left clean" clean_checkout

echo
echo "=== summary ==="
printf '%s\n' "${results[@]}"
skipped=$(printf '%s\n' "${results[@]}" | grep -c '^SKIP' || true)
passed=$(( ${#results[@]} - failed - skipped ))
if [ "$skipped" -gt 0 ]; then skip_note=", $skipped skipped"; else skip_note=""; fi
echo "suites: $passed passed, $failed failed$skip_note"
for entry in "${failed_logs[@]}"; do
  echo
  echo "--- why '${entry%%|*}' failed (${entry#*|}, error lines, then its last 25 lines) ---"
  grep -E -i 'error|fail|assert|timeout|sanitizer|crash|leak|expected' "${entry#*|}" | grep -v -E '^\[[0-9]+/[0-9]+\]' | tail -n 25 || true
  echo "..."
  tail -n 25 "${entry#*|}"
done
[ $failed -eq 0 ]
