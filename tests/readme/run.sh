#!/usr/bin/env bash
# The README suite: every fenced code block in README.md is run, compiled,
# checked as a fragment of a tested file, or marked as output / as commands
# another test covers (tests/readme/check_readme.py says how, per marker).
#
# Needs what tools/test.sh provides, and runs after the python and java suites:
#   POLYLIMIT_PREFIX, PKG_CONFIG_PATH, LD_LIBRARY_PATH   the installed library
#     (the C quick start's basic.c and the Go quick start link against it);
#   a Python with polylimit installed: POLYLIMIT_README_PYTHON, else the first of
#     build/venv-python-test, build/venv-python (tests/python/run.sh) that imports it;
#   the jar: POLYLIMIT_README_JAR, else ${POLYLIMIT_JAVA_BUILD_DIR:-build}/java-mvn/polylimit-*.jar
#     (tests/java/run.sh).
#   cargo, for the Rust quick start (built against the installed library,
#     feature system; output in build/rust-readme-target).
# Starts its own redis-server (tests/redis-server.sh); the blocks' URL
# redis://127.0.0.1:6379 is replaced by its URL.
# First, needing nothing built: every list or table of languages in the docs
# names every language that has a binding (tests/readme/check_languages.py),
# and that check fails when one is left out (test_check_languages.py).
set -euo pipefail
root=${POLYLIMIT_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$root"

die() { echo "tests/readme/run.sh: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

languages_rc=0
python3 "$root/tests/readme/check_languages.py" || languages_rc=1
python3 -m unittest "$root/tests/readme/test_check_languages.py" || languages_rc=1
[ -n "${POLYLIMIT_PREFIX:-}" ] || die "POLYLIMIT_PREFIX is not set: run it from tools/test.sh (or set POLYLIMIT_PREFIX, PKG_CONFIG_PATH, LD_LIBRARY_PATH to an installed build)"
pkg-config --exists polylimit || die "pkg-config cannot find polylimit (PKG_CONFIG_PATH=${PKG_CONFIG_PATH:-})"
command -v redis-server >/dev/null || die "redis-server: not found"

python=${POLYLIMIT_README_PYTHON:-}
if [ -z "$python" ]; then
  for venv in "$root/build/venv-python-test" "$root/build/venv-python"; do
    if [ -x "$venv/bin/python" ] && (cd /tmp && "$venv/bin/python" -c 'import polylimit') 2>/dev/null; then
      python="$venv/bin/python"
      break
    fi
  done
fi
[ -n "$python" ] || die "no Python with polylimit installed (tests/python/run.sh makes build/venv-python-test); or set POLYLIMIT_README_PYTHON"

jar=${POLYLIMIT_README_JAR:-}
if [ -z "$jar" ]; then
  # The library jar, not the -sources or -javadoc jar beside it.
  for candidate in "${POLYLIMIT_JAVA_BUILD_DIR:-$root/build}"/java-mvn/polylimit-*.jar; do
    case "$candidate" in *-sources.jar | *-javadoc.jar) continue ;; esac
    jar=$candidate
    break
  done
fi
[ -f "$jar" ] || die "no jar at $jar (tests/java/run.sh builds it); or set POLYLIMIT_README_JAR"
jar=$(readlink -f "$jar")

echo "readme: libpolylimit $(pkg-config --modversion polylimit) from $POLYLIMIT_PREFIX"
echo "readme: python $python"
echo "readme: jar $jar"

eval "$("$root/tests/redis-server.sh" start)"
trap '"$root/tests/redis-server.sh" stop "$POLYLIMIT_TEST_REDIS_PID" "$POLYLIMIT_TEST_REDIS_DIR"' EXIT

readme_rc=0
python3 "$root/tests/readme/check_readme.py" --readme "$root/README.md" \
  --redis-url "$POLYLIMIT_TEST_REDIS_URL" --python "$python" --jar "$jar" || readme_rc=$?
# The policy guide: its blocks are fragments of the programs that run them
# (the five services of tests/http/cross_language_reload.py, the CLI test).
policy_rc=0
python3 "$root/tests/readme/check_readme.py" --readme "$root/docs/policy.md" --no-run || policy_rc=$?
[ $languages_rc -eq 0 ] || echo "tests/readme/run.sh: the languages check failed (above)" >&2
[ $policy_rc -eq 0 ] || echo "tests/readme/run.sh: docs/policy.md's blocks failed (above)" >&2
[ $readme_rc -eq 0 ] && [ $languages_rc -eq 0 ] && [ $policy_rc -eq 0 ]
