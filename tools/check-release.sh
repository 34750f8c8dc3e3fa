#!/usr/bin/env bash
# The check half of tools/release.sh: takes a folder of release artifacts
# (default dist/) and checks them as a whole, then installs and uses each
# one from a fresh project in a temporary folder against a real
# redis-server it starts (tests/redis-server.sh):
#   set      SHA256SUMS verifies and lists every file; every file's version
#            by name and metadata is the header's (tools/check-versions.sh
#            --dist); the release notes have a CHANGELOG.md section; each
#            artifact that carries code carries LICENSE and
#            THIRD_PARTY_NOTICES (the Debian packages: copyright, and the
#            notices in libpolylimit1)
#   python   the wheel in a fresh venv, run with no compiler on PATH: the
#            import comes from the venv, one check admitted, one denied;
#            the sdist built into a wheel with the lowest scikit-build-core
#            and pybind11 pyproject.toml allows, with no network and
#            hiredis hidden, then the same check
#   java     a javac project on the jar, run by java with no compiler on
#            PATH and no library path: the JNI library comes from the jar;
#            the sources and javadoc jars hold the API
#   node     npm install of the tarball into a fresh npm project, then
#            installed and run with only node, npm and sh on PATH: the prebuilt
#            addon loads from node_modules
#   rust     the two .crate files unpacked, a fresh Cargo project on them
#            (its dependencies fetched first, then built --offline with no
#            network and hiredis hidden: the bundled core compiled from
#            polylimit-sys's native/), run: 3 of 5 admitted
#   go       tests/go/consumer.sh on the module zip: a module proxy in a
#            folder, fresh modules `go get` it, built with no network and
#            no hiredis, run
#   deb      tests/c/deb_package.sh on the packages: contents, control
#            fields, lintian, apt-get install, the C example (pkg-config and
#            CMake) and the CLI, purge (root only)
# "No network" is `unshare -n` and "hiredis hidden" tests/without-hiredis.sh,
# both as root; elsewhere those steps say they run with the network and
# hiredis in view; in CI (CI=true) they must not.
#   tools/check-release.sh [DIR] [--only LIST] [--skip LIST]
# LIST: comma-separated of set,python,java,node,rust,go,deb. With --only
# (or a folder without SHA256SUMS) the checks of the parts present run and
# the sums are checked when there are some.
# Prints each check with its time, then "N passed, N failed".
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

all=(set python java node rust go deb)
dir="$root/dist"
only=""
skip=""
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    -h | --help) sed -n '/^#   tools\/check-release.sh/p' "${BASH_SOURCE[0]}" | sed 's/^#   //' >&2; exit 2 ;;
    -*) echo "check-release.sh: unknown option $1" >&2; exit 2 ;;
    *) dir=$1; shift ;;
  esac
done
for part in ${only//,/ } ${skip//,/ }; do
  case " ${all[*]} " in *" $part "*) ;; *) echo "check-release.sh: unknown part '$part' (${all[*]})" >&2; exit 2 ;; esac
done
[ -d "$dir" ] || { echo "check-release.sh: no folder $dir (tools/release.sh builds it)" >&2; exit 1; }
dir=$(cd "$dir" && pwd)
wanted() {
  { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; } && [[ ",$skip," != *",$1,"* ]]
}
version=$(sed -n 's/^#define POLYLIMIT_VERSION_STRING "\(.*\)"$/\1/p' "$root/capi/include/polylimit.h")
[ -n "$version" ] || { echo "check-release.sh: no POLYLIMIT_VERSION_STRING in capi/include/polylimit.h" >&2; exit 1; }
jobs=${POLYLIMIT_JOBS:-2}
build="$root/build"
export PIP_DISABLE_PIP_VERSION_CHECK=1

tmp=$(mktemp -d /tmp/polylimit-release-check-XXXXXX)
redis_pid=
cleanup() {
  if [ -n "$redis_pid" ]; then "$root/tests/redis-server.sh" stop "$redis_pid" "$redis_dir" || true; fi
  chmod -R u+w "$tmp" 2>/dev/null || true # Go's module cache is read-only
  rm -rf "$tmp"
}
trap cleanup EXIT

# Source builds: no network (unshare -n) and no hiredis, where this machine
# can do both (root).
nonet=() hide=()
if [ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null; then nonet=(unshare -n); fi
if "$root/tests/without-hiredis.sh" --check 2>/dev/null; then hide=("$root/tests/without-hiredis.sh"); fi
if [ "${CI:-}" = true ] && { [ ${#nonet[@]} -eq 0 ] || [ ${#hide[@]} -eq 0 ]; }; then
  echo "check-release.sh: CI must build the source artifacts with no network and no hiredis (root, unshare)" >&2
  exit 1
fi
[ ${#nonet[@]} -gt 0 ] || echo "check-release.sh: source builds keep the network (unshare -n needs root)"
[ ${#hide[@]} -gt 0 ] || echo "check-release.sh: source builds keep hiredis in view (tests/without-hiredis.sh needs root)"

# nocc NAME TOOL...: a folder holding only TOOL... (symlinks), for a PATH with
# no compiler, cmake or make on it; prints it.
nocc() {
  local bin="$tmp/path-$1" tool
  shift
  mkdir -p "$bin"
  for tool; do ln -sf "$(command -v "$tool")" "$bin/$tool"; done
  for tool in cc c++ gcc g++ clang clang++ cmake make ninja; do
    if PATH="$bin" command -v "$tool" >/dev/null; then echo "check-release.sh: $tool is on the bare PATH" >&2; return 1; fi
  done
  echo "$bin"
}
# one PATTERN: the one file of the folder matching PATTERN (a glob), or fail.
one() {
  local found=()
  mapfile -t found < <(cd "$dir" && compgen -G "$1" || true)
  [ ${#found[@]} -eq 1 ] || { echo "expected one $1 in $dir, found ${#found[@]}: ${found[*]}" >&2; return 1; }
  echo "$dir/${found[0]}"
}
# has LISTING REGEX WHAT: LISTING (one path a line) has a line matching REGEX.
has() {
  grep -Eq "$2" <<<"$1" || { echo "$3: no file matching $2" >&2; return 1; }
}
# One redis-server for the checks that use an artifact (started before them,
# in this shell: the checks run as jobs).
url=
redis() { [ -n "$url" ] || { echo "no redis-server started" >&2; return 1; }; }
start_redis() {
  eval "$("$root/tests/redis-server.sh" start)"
  redis_pid=$POLYLIMIT_TEST_REDIS_PID redis_dir=$POLYLIMIT_TEST_REDIS_DIR url=$POLYLIMIT_TEST_REDIS_URL
}

passed=0 failed=0
results=()
log="$tmp/log"
# run NAME FUNCTION: one check; its output is shown when it fails.
run() {
  local name=$1 start=$SECONDS rc=0
  # In the background: a function called as `f || ...` would run with set -e
  # off; a job keeps it on, so any failing command fails the check.
  "$2" >"$log" 2>&1 &
  wait $! || rc=$?
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    results+=("ok      $name ($((SECONDS - start)) s)")
    sed 's/^/    /' "$log"
    echo "ok      $name ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    results+=("FAILED  $name ($((SECONDS - start)) s)")
    sed 's/^/    /' "$log"
    echo "FAILED  $name ($((SECONDS - start)) s)"
  fi
}

# --- the set ------------------------------------------------------------------
check_sums() {
  (cd "$dir" && sha256sum --strict -c SHA256SUMS) || return 1
  local listed present
  listed=$(awk '{ sub(/^\*/, "", $2); print $2 }' "$dir/SHA256SUMS" | LC_ALL=C sort)
  present=$(cd "$dir" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort)
  [ "$listed" = "$present" ] || { echo "SHA256SUMS does not list exactly the folder's files:"; diff <(echo "$listed") <(echo "$present"); return 1; }
}
check_versions() { "$root/tools/check-versions.sh" --dist "$dir"; }
check_notes() {
  local notes="$dir/RELEASE_NOTES.md"
  [ -s "$notes" ] || { echo "no RELEASE_NOTES.md"; return 1; }
  [ "$(head -n1 "$notes")" = "# polylimit $version" ] || { echo "RELEASE_NOTES.md's title is not '# polylimit $version'"; return 1; }
  grep -Eq "^### \[($version|Unreleased)\]" "$notes" || { echo "RELEASE_NOTES.md has no CHANGELOG section of $version or Unreleased"; return 1; }
  [ "$(grep -c '^- ' "$notes")" -gt 0 ] || { echo "RELEASE_NOTES.md lists no change"; return 1; }
  echo "RELEASE_NOTES.md: $(sed -n 's/^### \[\(.*\)\].*/[\1]/p' "$notes" | head -n1), $(grep -c '^- ' "$notes") entries"
}
check_licences() {
  local f list n=0
  for f in "$dir"/*; do
    case "$(basename "$f")" in
      *.whl) list=$(unzip -Z1 "$f")
        has "$list" '\.dist-info/(licenses/)?LICENSE$' "$(basename "$f")" &&
          has "$list" '\.dist-info/(licenses/)?THIRD_PARTY_NOTICES$' "$(basename "$f")" || return 1 ;;
      *.tar.gz | *.tgz | *.crate) list=$(tar -tzf "$f" | sed 's|^[^/]*/||')
        case "$(basename "$f")" in
          polylimit-sys-*.crate) has "$list" '^native/LICENSE$' "$(basename "$f")" &&
            has "$list" '^native/THIRD_PARTY_NOTICES$' "$(basename "$f")" || return 1 ;;
          *) has "$list" '^LICENSE$' "$(basename "$f")" && has "$list" '^THIRD_PARTY_NOTICES$' "$(basename "$f")" || return 1 ;;
        esac ;;
      *-javadoc.jar) continue ;; # documentation, no code
      *.jar) list=$(unzip -Z1 "$f")
        has "$list" '^META-INF/LICENSE' "$(basename "$f")" && has "$list" '^META-INF/THIRD_PARTY_NOTICES' "$(basename "$f")" || return 1 ;;
      *.deb) list=$(dpkg -c "$f" | awk '{ print $6 }')
        has "$list" '^\./usr/share/doc/[^/]+/copyright$' "$(basename "$f")" || return 1
        case "$(basename "$f")" in
          libpolylimit1_*) has "$list" '/THIRD_PARTY_NOTICES$' "$(basename "$f")" || return 1 ;;
        esac ;;
      *.zip) list=$(unzip -Z1 "$f" | sed 's|^[^@]*@[^/]*/||') # (under MODULE@VERSION/)
        has "$list" '^LICENSE$' "$(basename "$f")" && has "$list" '^THIRD_PARTY_NOTICES$' "$(basename "$f")" || return 1 ;;
      *) continue ;;
    esac
    n=$((n + 1))
    echo "$(basename "$f"): licence and notices"
  done
  [ "$n" -gt 0 ] || { echo "no artifact to check"; return 1; }
}

# --- python -------------------------------------------------------------------
# The same use of the package, in a venv: its import, its version, one check
# admitted, one denied.
py_use() {  # py_use VENV (from a folder of its own: nothing of the checkout importable)
  cd "$tmp" && "$1/bin/python" - "$1" "$version" "$url" <<'EOF'
import os, sys
import polylimit
venv, version, url = sys.argv[1:4]
where = os.path.realpath(polylimit.__file__)
assert where.startswith(os.path.realpath(venv) + os.sep), where
assert polylimit.__version__ == version, polylimit.__version__
lim = polylimit.Client(url).limiter("1/minute", prefix="release-py-%d" % os.getpid())
got = [lim.check(b"k").allowed for _ in range(2)]
assert got == [True, False], got
print("polylimit", polylimit.__version__, "from", where, "- admitted, denied")
EOF
}
check_wheel() {
  local wheel venv="$tmp/wheel-venv" bare
  wheel=$(one 'polylimit-*-manylinux_*.whl') || return 1
  # The glibc floor (bindings/python/README.md): no newer than manylinux_2_34.
  local minor
  minor=$(basename "$wheel" | sed -n 's/.*-manylinux_2_\([0-9]*\)_.*/\1/p')
  [ -n "$minor" ] && [ "$minor" -le 34 ] || { echo "$(basename "$wheel"): tagged above manylinux_2_34"; return 1; }
  redis
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --no-index --no-deps "$wheel"
  bare=$(nocc wheel) || return 1
  PATH="$bare" py_use "$venv"
}
check_sdist() {
  local sdist venv="$tmp/sdist-venv" sk pb
  sdist=$(one 'polylimit-*.tar.gz') || return 1
  redis
  # The floors pyproject.toml names (the sdist's own), fetched first.
  sk=$(tar -xzOf "$sdist" "$(basename "$sdist" .tar.gz)/pyproject.toml" | sed -n 's/.*"scikit-build-core>=\([0-9][0-9.]*\)".*/\1/p' | head -n1)
  pb=$(tar -xzOf "$sdist" "$(basename "$sdist" .tar.gz)/pyproject.toml" | sed -n 's/.*"pybind11>=\([0-9][0-9.]*\)".*/\1/p' | head -n1)
  [ -n "$sk" ] && [ -n "$pb" ] || { echo "no scikit-build-core or pybind11 floor in the sdist's pyproject.toml"; return 1; }
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q "scikit-build-core==$sk" "pybind11==$pb"
  echo "building a wheel from $(basename "$sdist") with scikit-build-core==$sk pybind11==$pb${nonet[*]:+, no network}${hide[*]:+, hiredis hidden}"
  "${hide[@]}" "${nonet[@]}" env CMAKE_BUILD_PARALLEL_LEVEL="$jobs" \
    "$venv/bin/python" -m pip wheel "$sdist" -w "$tmp/sdist-wheel" --no-build-isolation --no-deps --no-index -q
  "$venv/bin/python" -m pip install -q --no-index --no-deps "$tmp"/sdist-wheel/polylimit-*.whl
  py_use "$venv"
}

# --- java ---------------------------------------------------------------------
check_jar() {
  local jar proj="$tmp/java" bare out kind want listing
  jar=$(one "polylimit-$version.jar") || return 1
  for kind in sources javadoc; do
    want=java
    [ "$kind" = javadoc ] && want=html
    listing=$(unzip -Z1 "$(one "polylimit-$version-$kind.jar")") || return 1
    # (javadoc puts a named module's pages under the module's name)
    grep -Eq "(^|/)io/polylimit/Limiter\.$want\$" <<<"$listing" ||
      { echo "the $kind jar has no io/polylimit/Limiter.$want"; return 1; }
  done
  grep -qF "<artifactId>polylimit</artifactId>" "$(one "polylimit-$version.pom")" || { echo "the pom is not polylimit's"; return 1; }
  redis
  mkdir -p "$proj/src" "$proj/classes" "$proj/tmp"
  cat >"$proj/src/App.java" <<'JAVA'
import io.polylimit.Client;
import io.polylimit.Limiter;
import io.polylimit.NativeLibrary;

public class App {
    public static void main(String[] args) throws Exception {
        try (Client client = Client.open(args[0]);
             Limiter limiter = client.limiter("1/minute")) {
            String key = "release-java-" + ProcessHandle.current().pid();
            boolean first = limiter.check(key).allowed(), second = limiter.check(key).allowed();
            System.out.println("library " + NativeLibrary.version() + " from " + NativeLibrary.location());
            System.out.println("first=" + first + " second=" + second);
        }
    }
}
JAVA
  javac -d "$proj/classes" -cp "$jar" "$proj/src/App.java"
  bare=$(nocc java java) || return 1
  out=$(env -u LD_LIBRARY_PATH -u JAVA_TOOL_OPTIONS PATH="$bare" java -Dpolylimit.tmpdir="$proj/tmp" \
    -cp "$jar:$proj/classes" App "$url") || { echo "$out"; return 1; }
  echo "$out"
  grep -qx 'first=true second=false' <<<"$out" || { echo "expected first=true second=false"; return 1; }
  grep -q "^library $version from $proj/tmp/libpolylimit_jni-" <<<"$out" ||
    { echo "expected library $version, loaded from the jar"; return 1; }
}

# --- node ---------------------------------------------------------------------
check_npm() {
  local tgz proj="$tmp/npm" bare
  tgz=$(one "polylimit-$version.tgz") || return 1
  redis
  bare=$(nocc npm node npm sh) || return 1  # npm runs the install step with sh
  mkdir -p "$proj"
  # npm itself with nothing else on PATH: installing a matching prebuild
  # needs no compiler.
  (cd "$proj" && PATH="$bare" npm init -y >/dev/null &&
    PATH="$bare" npm install --silent --no-audit --no-fund --omit=dev "$tgz")
  (cd "$proj" && env -u POLYLIMIT_NODE_ADDON PATH="$bare" node -e '
    const [version, url] = process.argv.slice(1);
    const polylimit = require("polylimit");
    const where = require.resolve("polylimit");
    if (!where.startsWith(process.cwd() + "/node_modules/")) throw new Error("loaded from " + where);
    if (polylimit.version !== version) throw new Error("version " + polylimit.version);
    const client = new polylimit.Client(url);
    const limiter = client.limiter("1/minute", { prefix: "release-node-" + process.pid });
    (async () => {
      const got = [(await limiter.check("k")).allowed, (await limiter.check("k")).allowed];
      client.close();
      if (got.join() !== "true,false") throw new Error("decisions " + got);
      console.log("polylimit " + polylimit.version + " from " + where + " - admitted, denied");
    })().catch((e) => { console.error(e); process.exit(1); });
  ' "$version" "$url")
}

# --- rust ---------------------------------------------------------------------
check_crates() {
  local sys poly proj="$tmp/rust" out
  sys=$(one "polylimit-sys-$version.crate") || return 1
  poly=$(one "polylimit-$version.crate") || return 1
  # (a listing in a variable: `tar | grep -q` can fail on SIGPIPE under pipefail)
  local listing
  listing=$(tar -tzf "$sys")
  grep -q "^polylimit-sys-$version/native/core/" <<<"$listing" || { echo "polylimit-sys carries no native/core"; return 1; }
  mkdir -p "$proj/crates" "$proj/fresh/src"
  tar -xzf "$sys" -C "$proj/crates"
  tar -xzf "$poly" -C "$proj/crates"
  cat >"$proj/fresh/Cargo.toml" <<TOML
[package]
name = "fresh"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
polylimit = { path = "$proj/crates/polylimit-$version" }

[patch.crates-io]
polylimit-sys = { path = "$proj/crates/polylimit-sys-$version" }
TOML
  cat >"$proj/fresh/src/main.rs" <<'RS'
fn main() {
    let url = std::env::args().nth(1).expect("usage: fresh URL");
    let client = polylimit::Client::open(&url).expect("open");
    let limiter = client.limiter("3/minute").expect("limiter");
    let key = format!("release-rust-{}", std::process::id());
    let admitted = (0..5).filter(|_| limiter.check(&key, 1).expect("check").allowed).count();
    println!("fresh admitted={admitted} library={}", polylimit::library_version());
}
RS
  # The versions the binding's own builds resolved, when there are some.
  [ ! -f "$root/bindings/rust/Cargo.lock" ] || cp "$root/bindings/rust/Cargo.lock" "$proj/fresh/Cargo.lock"
  (cd "$proj/fresh" && cargo fetch -q)
  redis
  local start=$SECONDS
  # Nothing installed may be found: no PKG_CONFIG_PATH, no LD_LIBRARY_PATH.
  (cd "$proj/fresh" && "${hide[@]}" "${nonet[@]}" env -u PKG_CONFIG_PATH LD_LIBRARY_PATH= \
    CARGO_TARGET_DIR="$build/rust-fresh-target" cargo build --offline -q -j "$jobs")
  echo "cargo build --offline${nonet[*]:+ (no network)}${hide[*]:+ (hiredis hidden)}: $((SECONDS - start)) s"
  out=$(env LD_LIBRARY_PATH= "$build/rust-fresh-target/debug/fresh" "$url")
  echo "$out"
  [ "$out" = "fresh admitted=3 library=$version" ] || { echo "expected 'fresh admitted=3 library=$version'"; return 1; }
}

# --- go -----------------------------------------------------------------------
check_go() {
  one "polylimit@v$version.zip" >/dev/null && one "polylimit@v$version.mod" >/dev/null &&
    one "polylimit@v$version.info" >/dev/null || return 1
  (cd "$root/tools/gomodzip" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -o "$build/gomodzip/gomodzip" .)
  "$build/gomodzip/gomodzip" -check "$dir/polylimit@v$version.zip" \
    -module "$(sed -n 's/^module //p' "$dir/polylimit@v$version.mod")" -version "v$version"
  "$root/tests/go/consumer.sh" "$dir"
}

# --- deb ----------------------------------------------------------------------
check_deb() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "not root: the packages cannot be installed here (apt-get); only their versions and licences were checked"
    [ "${CI:-}" != true ] || return 1
    return 0
  fi
  "$root/tests/c/deb_package.sh" "$dir"
}

echo "check-release.sh: $dir (polylimit $version)"
if wanted set; then
  if [ -f "$dir/SHA256SUMS" ] || [ -z "$only" ]; then run "SHA256SUMS verifies and lists every file" check_sums; fi
  run "every artifact's version is $version (tools/check-versions.sh --dist)" check_versions
  if [ -f "$dir/RELEASE_NOTES.md" ] || [ -z "$only" ]; then run "release notes from CHANGELOG.md" check_notes; fi
  run "licence and third-party notices in each artifact" check_licences
fi
present() { compgen -G "$dir/$1" >/dev/null || [ -z "$only" ]; }
for part in python java node rust; do if wanted "$part"; then start_redis; break; fi; done
if wanted python && present 'polylimit-*.whl'; then run "python: the wheel in a fresh venv, no compiler on PATH" check_wheel; fi
if wanted python && present 'polylimit-*.tar.gz'; then
  run "python: the sdist built into a wheel (floors, no network, no hiredis), used" check_sdist
fi
if wanted java && present 'polylimit-*.jar'; then run "java: a javac project on the jar, run with no compiler on PATH" check_jar; fi
if wanted node && present 'polylimit-*.tgz'; then run "node: npm install of the tarball, no compiler on PATH" check_npm; fi
if wanted rust && present 'polylimit-*.crate'; then run "rust: a fresh project on the .crate files, built offline" check_crates; fi
if wanted go && present 'polylimit@v*.zip'; then run "go: go get from a module proxy folder (tests/go/consumer.sh)" check_go; fi
if wanted deb && present '*.deb'; then run "deb: inspect, lintian, install, use, purge (tests/c/deb_package.sh)" check_deb; fi

echo
echo "=== release checks: $dir"
printf '%s\n' "${results[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
