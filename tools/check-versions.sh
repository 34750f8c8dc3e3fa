#!/usr/bin/env bash
# Checks that every place that repeats the version agrees with its one
# source, POLYLIMIT_VERSION_STRING in capi/include/polylimit.h: the Java pom,
# the npm package, the Rust crates, the Debian changelog, and CHANGELOG.md (which must have a section for it,
# or an "Unreleased" section above it while the next version is made).
# With --dist DIR (tools/release.sh's folder), also every file in DIR: its
# version by its name and by its metadata (the wheel's METADATA, the sdist's
# PKG-INFO, the pom, the npm package.json, the crates' Cargo.toml, the
# Debian control fields, the Go module's .info), and the release notes'
# title; a file of no known kind fails.
# Prints "N passed, N failed".
#   tools/check-versions.sh [--dist DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dist=
if [ "${1:-}" = --dist ]; then
  [ -d "${2:-}" ] || { echo "check-versions.sh: --dist needs a folder" >&2; exit 2; }
  dist=$(cd "$2" && pwd)
fi
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

if [ -n "$dist" ]; then
  # One line per artifact: its version from its name, then from inside it.
  v='[0-9][0-9A-Za-z.+~-]*'  # (a wheel's or a jar's own suffixes are taken off first)
  name_version() { sed -n "s/$1/\\1/p" <<<"$2"; }
  files=0
  for path in "$dist"/*; do
    [ -f "$path" ] || continue
    f=$(basename "$path")
    files=$((files + 1))
    case "$f" in
      polylimit-*.whl)
        check "$f (name)" "$(name_version "^polylimit-\([^-]*\)-.*\.whl$" "$f")"
        check "$f (METADATA)" "$(unzip -p "$path" '*.dist-info/METADATA' | sed -n 's/^Version: //p' | head -n1)" ;;
      polylimit-*.tar.gz)
        check "$f (name)" "$(name_version "^polylimit-\($v\)\.tar\.gz$" "$f")"
        check "$f (PKG-INFO)" "$(tar -xzOf "$path" "${f%.tar.gz}/PKG-INFO" | sed -n 's/^Version: //p' | head -n1)" ;;
      polylimit-*.jar)
        base=${f%-sources.jar}; base=${base%-javadoc.jar}; base=${base%.jar}
        check "$f (name)" "${base#polylimit-}"
        if [[ $f != *-sources.jar && $f != *-javadoc.jar ]]; then
          # The pom Maven puts into the jar (META-INF/maven/.../pom.properties).
          check "$f (pom.properties)" "$(unzip -p "$path" 'META-INF/maven/*/pom.properties' | sed -n 's/^version=//p' | tr -d '\r')"
        fi ;;
      polylimit-*.pom)
        check "$f (name)" "$(name_version "^polylimit-\($v\)\.pom$" "$f")"
        check "$f (<version>)" "$(sed -n '/<\/modelVersion>/,/<\/version>/s|.*<version>\(.*\)</version>.*|\1|p' "$path" | head -n1)" ;;
      polylimit-*.tgz)
        check "$f (name)" "$(name_version "^polylimit-\($v\)\.tgz$" "$f")"
        check "$f (package.json)" "$(tar -xzOf "$path" package/package.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')" ;;
      polylimit-sys-*.crate | polylimit-*.crate)
        check "$f (name)" "$(name_version "^polylimit-\($v\)\.crate$" "${f/#polylimit-sys-/polylimit-}")"
        check "$f (Cargo.toml)" "$(tar -xzOf "$path" "${f%.crate}/Cargo.toml" | sed -n 's/^version = "\(.*\)"$/\1/p' | head -n1)" ;;
      *.deb)
        check "$f (name)" "$(name_version "^[a-z0-9-]*_\($v\)_[a-z0-9]*\.deb$" "$f")"
        check "$f (Version)" "$(dpkg-deb -f "$path" Version)" ;;
      polylimit@v*.zip | polylimit@v*.mod | polylimit@v*.info)
        check "$f (name)" "$(name_version "^polylimit@v\($v\)\.\(zip\|mod\|info\)$" "$f")"
        if [[ $f == *.info ]]; then
          check "$f (Version)" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["Version"].removeprefix("v"))' "$path")"
        fi ;;
      RELEASE_NOTES.md)
        check "$f (title)" "$(sed -n '1s/^# polylimit //p' "$path")" ;;
      SHA256SUMS)
        files=$((files - 1)) ;;
      *)
        echo "FAIL  $f: not an artifact of a known kind (no version to check)"; failed=$((failed + 1)) ;;
    esac
  done
  [ "$files" -gt 0 ] || { echo "FAIL  $dist: no artifact"; failed=$((failed + 1)); }
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
