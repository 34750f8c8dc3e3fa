#!/usr/bin/env bash
# Cross-language exactness: C, Python, Go, Java, Node and Rust worker processes hammer the
# same key at the same moment with limit 2000; exactly 2000 must be admitted
# in total. Every language is required here (the demo alone may skip one).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
POLYLIMIT_DEMO_REQUIRE_ALL=1 POLYLIMIT_DEMO_START_DELAY_MS=${POLYLIMIT_DEMO_START_DELAY_MS:-5000} \
  exec "$root/tools/demo.sh" 2000 600
