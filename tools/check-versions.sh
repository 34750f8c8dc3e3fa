#!/usr/bin/env bash
# Checks that every place that repeats the version agrees with its one
# source, POLYLIMIT_VERSION_STRING in capi/include/polylimit.h: the Java pom,
# the npm package, the Rust crates, the Debian changelog, and CHANGELOG.md (which must have a section for it,
# or an "Unreleased" section above it while the next version is made).
# Prints "N passed, N failed".
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
passed=0 failed=0
check() {  # check WHAT ACTUAL
  if [ "$2" = "$version" ]; then
    echo "ok    $1: $2"; passed=$((passed + 1))
  else
    echo "FAIL  $1: '$2', the header says '$version'"; failed=$((failed + 1))
  fi
}
version=$(sed -n 's/^#define POLYLIMIT_VERSION_STRING "\(.*\)"$/\1/p' capi/include/polylimit.h)
[ -n "$version" ] || { echo "no POLYLIMIT_VERSION_STRING in capi/include/polylimit.h"; echo "0 passed, 1 failed"; exit 1; }
echo "version (capi/include/polylimit.h): $version"
# The project's own <version>, the first one after </modelVersion>.
check "bindings/swig/java/pom.xml" "$(sed -n '/<\/modelVersion>/,/<\/version>/s|.*<version>\(.*\)</version>.*|\1|p' bindings/swig/java/pom.xml | head -n1)"
check "packaging/debian/changelog" "$(sed -n '1s/^polylimit (\([^)]*\)).*/\1/p' packaging/debian/changelog)"
check "bindings/node/package.json" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' bindings/node/package.json)"
for crate in polylimit polylimit-sys; do
  check "bindings/rust/$crate/Cargo.toml" "$(sed -n 's/^version = "\(.*\)"$/\1/p' "bindings/rust/$crate/Cargo.toml" | head -n1)"
done
check "CHANGELOG.md, the newest released section" "$(sed -n 's/^## \[\([0-9][^]]*\)\].*/\1/p' CHANGELOG.md | head -n1)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
