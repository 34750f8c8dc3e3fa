#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang under ASan+UBSan into
# build/fuzz and runs each for a bounded time on a scratch copy of its seed
# corpus (tests/fuzz/corpus/<target>/). Any crash, leak, timeout or failed
# invariant fails the run and leaves the reproducer in
# build/fuzz/artifacts/<target>/ (crash-*, leak-*, timeout-*, oom-*); the log
# names the file and the command that replays it. docs/testing.md has more.
#   tools/fuzz.sh [SECONDS] [TARGET...]   (default 30 s each, every target;
#                                          0: only build them)
# Targets run side by side, POLYLIMIT_JOBS at a time (default: the CPU count).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-30}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_url fuzz_rate_spec fuzz_reply fuzz_capi fuzz_http)
jobs=${POLYLIMIT_JOBS:-$(nproc 2>/dev/null || echo 2)}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "usage: tools/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2; }
build="$root/build/fuzz"

for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool not found (Debian: clang, libclang-rt-14-dev; tools/deps.sh core)" >&2; exit 1; }
done

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPOLYLIMIT_FUZZ=ON \
  -DPOLYLIMIT_BUILD_TESTS=OFF -DPOLYLIMIT_BUILD_TOOLS=OFF -DPOLYLIMIT_BUILD_SHARED=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
[ "$seconds" = 0 ] && exit 0

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {  # run_one TARGET: fuzzes it; output in build/fuzz/logs/TARGET.log, exit status in TARGET.rc
  local t=$1
  local corpus="$build/run/$t" artifacts="$build/artifacts/$t"
  rm -rf "$corpus"
  mkdir -p "$corpus" "$artifacts"
  cp "$root/tests/fuzz/corpus/$t/"* "$corpus/"
  local dict=() status
  [ -f "$root/tests/fuzz/$t.dict" ] && dict=(-dict="$root/tests/fuzz/$t.dict")
  "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "${dict[@]}" "$corpus" >"$build/logs/$t.log" 2>&1 && status=0 || status=$?
  echo "$status" >"$build/logs/$t.rc"
}

rm -rf "$build/logs"
mkdir -p "$build/logs"
touch "$build/logs/.start"  # reproducers of this run are newer (older ones are kept)
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$t" &
done
wait

failed=0
for t in "${targets[@]}"; do
  status=$(cat "$build/logs/$t.rc" 2>/dev/null || echo 1)
  log="$build/logs/$t.log"
  echo "--- $t ($seconds s): $log"
  grep -E '^(INFO: Seed|#[0-9]+\s+(INITED|DONE)|Done [0-9]+ runs|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' \
    "$log" || true
  if [ "$status" -ne 0 ]; then
    failed=$((failed + 1))
    tail -n 60 "$log"
    echo "FUZZ FAILURE: $t exited with $status. Reproducers:"
    find "$build/artifacts/$t" -type f -newer "$build/logs/.start" | while read -r f; do
      echo "  $f"
      echo "  replay: $build/tests/fuzz/$t $f"
    done
  fi
done
[ $failed -eq 0 ] && echo "fuzz: ${#targets[@]} targets, $seconds s each, no failure"
[ $failed -eq 0 ]
