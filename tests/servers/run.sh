#!/usr/bin/env bash
# tests/servers/run.sh - the compatibility pass: the tests that depend most on
# the server run again on each server that tools/servers.sh builds (Valkey
# 8.0.1, Redis 7.2.6; every other suite runs on Debian's redis-server 7.0):
#
#   - the script differential and the exactness tests (script_diff_tests,
#     exactness_tests), and the decisions themselves: the seeded explicit-time
#     streams of script_diff_tests write every library script reply to a
#     transcript (POLYLIMIT_DECISIONS_TRANSCRIPT), which must be
#     byte-identical to the one written on Debian's redis-server;
#   - coalescing (coalesce_tests), the failover-safe mode (durable_tests:
#     WAIT, and WAITAOF, which these servers have and 7.0 has not), a Cluster
#     set with slot migration under load and a manual failover then a killed
#     master (cluster_tests), Sentinel (sentinel_tests), TLS (tls_tests);
#   - the error mapping: server_condition_tests (OOM, NOPERM, eviction) and
#     the fault matrix (tests/faults: LOADING, BUSY, READONLY, NOSCRIPT,
#     MOVED/ASK, TRYAGAIN, CLUSTERDOWN, connection faults), whose report goes
#     to build/servers/NAME/reliability.md;
#   - the demo on Valkey (tools/demo.sh --server valkey), unless
#     POLYLIMIT_SERVERS_DEMO=0.
#
#   tests/servers/run.sh [NAME...]     (default: every server in SHA256SUMS)
#
# The servers come from $POLYLIMIT_SERVER_SOURCES (default ../shared/servers
# beside the checkout). Without them the pass fails in CI (CI=true) and is
# skipped elsewhere (exit status 77, with the reason). Uses the Release build
# in $POLYLIMIT_BUILD_DIR (tools/test.sh sets it; otherwise tools/env.sh
# builds it). Everything it writes goes to build/servers/; the server builds
# to the cache outside the checkout (tools/servers.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
sources=${POLYLIMIT_SERVER_SOURCES:-$root/../shared/servers}

if [ ! -f "$sources/SHA256SUMS" ]; then
  msg="no server sources at $sources (SHA256SUMS and the tarballs; set POLYLIMIT_SERVER_SOURCES)"
  if [ "${CI:-}" = true ]; then
    echo "compatibility pass FAILED: $msg" >&2
    exit 1
  fi
  echo "compatibility pass skipped: $msg"
  exit 77
fi

if [ -z "${POLYLIMIT_BUILD_DIR:-}" ] || [ ! -f "$POLYLIMIT_BUILD_DIR/CMakeCache.txt" ]; then
  # shellcheck source=tools/env.sh
  source "$root/tools/env.sh"
  polylimit_build_release >/dev/null
fi
jobs=${POLYLIMIT_JOBS:-2}
out="$root/build/servers"
rm -rf "$out"
mkdir -p "$out"

if [ $# -gt 0 ]; then
  names=("$@")
else
  mapfile -t names < <("$root/tools/servers.sh" list | cut -d' ' -f1)
fi
[ ${#names[@]} -gt 0 ] || { echo "no servers listed in $sources/SHA256SUMS" >&2; exit 1; }

start=$SECONDS
"$root/tools/servers.sh" build "${names[@]}"
build_s=$((SECONDS - start))
echo "servers ready in $build_s s"

# The tests of the pass: whole programs, or the chosen cases of a program
# (GTEST_FILTER holds them all: a pattern only matches in its own program).
programs='^(script_diff_tests|exactness_tests|coalesce_tests|durable_tests|cluster_tests|sentinel_tests|tls_tests|server_condition_tests)$'
filter=(
  'ScriptDiff.*' '*ScriptDiffStreams.*' 'ScriptKeys.*' 'ScriptExpiry.*' 'SlidingLogRing.*' '*RollingUpgrade.*'
  'Exactness.*'
  '*CoalesceStreams.*' 'Coalesce.*'
  # Durable: WAIT with no replica, WAITAOF, a replica, a Cluster; one
  # Sentinel failover under load (SIGKILL of the master, the mode on).
  'NoReplica.*' 'DurableAof.*' 'DurableReplica.*' 'DurableCluster.*' 'Durable/SentinelUnderLoad.AdmittedVersusLimit/KillMaster_ModeOn'
  # Cluster: the slot map, a live slot migration under load, MOVED, a
  # manual failover then a SIGKILLed master.
  'SharedCluster.*' 'Cluster.LiveReshardingMovesTheLogWithTheKey' 'Cluster.SlotPingPongDuringAHandoverCostsNoError'
  'Cluster.FirstMovedRefreshesTheWholeMap' 'Cluster.ManualFailoverThenSigkillOfAMaster' 'ClusterTopology.*'
  # Sentinel: a demoted master (READONLY), a killed one, the follower.
  'Sentinel.DemotedMasterAnswersReadonlyAndClientMoves' 'Sentinel.KilledMasterIsReplacedByPromotedReplica'
  'SharedSentinels.*' 'SentinelFollower.FailoverFollowedWithinMilliseconds' 'SentinelTopology.*'
  'Tls.*'
  '*Each.*' 'OutOfMemory.*' 'Eviction.*' 'Acl.*' 'Identifiers.*' 'Replies.*'
)
gtest_filter=$(IFS=:; echo "${filter[*]}")
streams_filter='*ScriptDiffStreams.*'

# run_tests LABEL SERVER FILTER REGEX [TRANSCRIPT]: ctest on SERVER; the
# tests' whole output in $out/LABEL.log. Fails on a failed test, and on a
# skipped one (GTEST_SKIP): a case skipped here would pass unseen. A program
# that fails runs once more: a few cases bound a failover's or a timeout's
# duration in milliseconds, which two programs running side by side on 2
# cores can miss (93.7 ms against 50 once, 1-2 ms alone); a server
# difference fails both times. (A transcript is rewritten by each run.)
run_tests() {
  local label=$1 server=$2 f=$3 regex=$4 transcript=${5:-} status=0
  POLYLIMIT_SERVER=$server GTEST_FILTER=$f POLYLIMIT_DECISIONS_TRANSCRIPT=$transcript \
    ctest --test-dir "$POLYLIMIT_BUILD_DIR" -R "$regex" -j "$jobs" -V --output-on-failure --repeat until-pass:2 \
    >"$out/$label.log" 2>&1 || status=$?
  grep -E '^[0-9]+: \[ +(OK|FAILED|SKIPPED) +\]' "$out/$label.log" | grep -v ' OK ' || true
  sed -n '/tests passed\|tests failed/,$p' "$out/$label.log" | grep -v '^$' || true
  local ran skipped
  ran=$(grep -cE '^[0-9]+: \[ +OK +\]' "$out/$label.log" || true)
  skipped=$(grep -cE '^[0-9]+: \[ +SKIPPED +\]' "$out/$label.log" || true)
  echo "$label: $ran test cases passed, $skipped skipped (log: build/servers/$label.log)"
  if [ "$skipped" -gt 0 ]; then
    echo "$label: a test case was skipped on this server" >&2
    status=1
  fi
  # Each program ran cases (a filter that matches none would pass silently).
  local n prog programs_seen=0
  while read -r n prog; do
    programs_seen=$((programs_seen + 1))
    if ! grep -qE "^$n: \[ +OK +\]" "$out/$label.log"; then
      echo "$label: $prog ran no test case" >&2
      status=1
    fi
  done < <(sed -n 's|^\([0-9]*\): Test command: .*/\([A-Za-z0-9_]*\)$|\1 \2|p' "$out/$label.log")
  if [ "$programs_seen" -eq 0 ]; then
    echo "$label: no test program ran" >&2
    status=1
  fi
  return $status
}

# One seed for the streams of every server of this run (gtest's, which is
# otherwise taken from the clock): a new one each run, printed to replay it.
seed=${POLYLIMIT_DECISIONS_SEED:-$((RANDOM % 99999 + 1))}
export GTEST_RANDOM_SEED=$seed
echo "the decision streams' seed: $seed (POLYLIMIT_DECISIONS_SEED=$seed replays them)"

failed=0
summary=()
note() { summary+=("$1"); echo "$1"; }

# The decisions on Debian's redis-server, the reference.
echo
echo "=== the reference decisions: Debian's redis-server ($(redis-server --version | sed -n 's/.* v=\([^ ]*\) .*/\1/p')) ==="
start=$SECONDS
if run_tests reference-system system "$streams_filter" '^script_diff_tests$' "$out/decisions-system.txt"; then
  note "PASS  reference decisions on Debian's redis-server: $(wc -l <"$out/decisions-system.txt") replies ($((SECONDS - start)) s)"
else
  note "FAIL  reference decisions on Debian's redis-server ($((SECONDS - start)) s)"
  failed=1
fi

for name in "${names[@]}"; do
  echo
  echo "=== $name ==="
  start=$SECONDS
  status=0
  run_tests "$name" "$name" "$gtest_filter" "$programs" "$out/decisions-$name.txt" || status=1
  if [ ! -s "$out/decisions-$name.txt" ]; then
    echo "$name: no decisions transcript written" >&2
    status=1
  elif ! cmp -s "$out/decisions-system.txt" "$out/decisions-$name.txt"; then
    echo "$name: the script replies differ from Debian's redis-server's for the same streams:" >&2
    diff "$out/decisions-system.txt" "$out/decisions-$name.txt" | head -n 20 >&2 || true
    status=1
  else
    echo "$name: $(wc -l <"$out/decisions-$name.txt") script replies byte-identical to Debian's redis-server's"
  fi
  tests_s=$((SECONDS - start))
  # The error mapping under faults (the fault matrix's own checks).
  mkdir -p "$out/$name"
  fstart=$SECONDS
  if ! POLYLIMIT_SERVER=$name "$POLYLIMIT_BUILD_DIR/tests/faults/fault_matrix" --out "$out/$name/reliability.md" \
      >"$out/$name-faults.log" 2>&1; then
    echo "$name: the fault matrix failed (build/servers/$name-faults.log):" >&2
    grep -v '| pass' "$out/$name/reliability.md" 2>/dev/null | grep '^| [0-9]' >&2 || tail -n 20 "$out/$name-faults.log" >&2
    status=1
  else
    echo "$name: fault matrix: $(grep -c '| pass' "$out/$name/reliability.md") scenarios pass"
  fi
  faults_s=$((SECONDS - fstart))
  if [ $status -eq 0 ]; then
    note "PASS  $name ($((SECONDS - start)) s: tests $tests_s s, fault matrix $faults_s s)"
  else
    note "FAIL  $name ($((SECONDS - start)) s: tests $tests_s s, fault matrix $faults_s s)"
    failed=1
  fi
done

if [ "${POLYLIMIT_SERVERS_DEMO:-1}" != 0 ] && printf '%s\n' "${names[@]}" | grep -q '^valkey'; then
  echo
  echo "=== the demo on Valkey ==="
  start=$SECONDS
  if "$root/tools/demo.sh" --server valkey 2>&1 | tee "$out/demo-valkey.log"; then
    note "PASS  the demo on Valkey ($((SECONDS - start)) s)"
  else
    note "FAIL  the demo on Valkey ($((SECONDS - start)) s)"
    failed=1
  fi
fi

echo
echo "=== compatibility pass ==="
echo "server builds: $build_s s (0 when cached)"
printf '%s\n' "${summary[@]}"
exit $failed
