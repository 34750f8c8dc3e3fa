#!/usr/bin/env bash
# Cross-language suites, after every language suite has built its artifacts:
#  - exactness: C, Python, Go, Java, Node and Rust worker processes hammer the
#    same key at the same moment with limit 2000; exactly 2000 must be
#    admitted in total. Every language is required here (the demo alone may
#    skip one).
#  - the HTTP contract (tests/http/cross_language.py): one service per
#    language on one Redis with one policy; each identity gets exactly the
#    limit over all five, and every refusal is the same answer.
#  - one policy file reloaded live (tests/http/cross_language_reload.py): the
#    five services open docs/examples/policy.toml; plans hold across them,
#    a rewrite is answered by all within a second, a broken file by none.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
POLYLIMIT_DEMO_REQUIRE_ALL=1 POLYLIMIT_DEMO_START_DELAY_MS=${POLYLIMIT_DEMO_START_DELAY_MS:-5000} \
  "$root/tools/demo.sh" 2000 600
echo
echo "== the HTTP contract across languages (tests/http/cross_language.py)"
python3 "$root/tests/http/cross_language.py"
echo "== one policy file reloaded live across languages (tests/http/cross_language_reload.py)"
python3 "$root/tests/http/cross_language_reload.py"
