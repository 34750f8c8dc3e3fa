#!/usr/bin/env bash
# Builds the servers of the compatibility pass (Valkey, Redis releases other
# than the distribution's) from their release tarballs, offline, into a cache
# outside the checkout, and says where their binaries are.
#
#   tools/servers.sh build NAME...|all   build (or reuse) each; prints "NAME BINDIR"
#   tools/servers.sh path NAME           prints BINDIR of a built NAME (status 1 if not built)
#   tools/servers.sh list                the tarballs SHA256SUMS lists, built or not
#
# NAME is a tarball's name without .tar.gz: valkey-8.0.1, redis-7.2.6; or
# just "valkey" or "redis" when the sources hold one release of it.
# BINDIR holds the server, its CLI (valkey-server and valkey-cli, or
# redis-server and redis-cli) and a file "version" (the release number).
#
# Sources: $POLYLIMIT_SERVER_SOURCES, by default ../shared/servers beside the
#   checkout: the tarballs and SHA256SUMS. Each tarball is checked against
#   SHA256SUMS before it is used.
# Cache:   $POLYLIMIT_SERVER_CACHE, by default
#   ${XDG_CACHE_HOME:-$HOME/.cache}/polylimit/servers; one folder per build,
#   NAME-<first 16 hex digits of the tarball's SHA-256>, so a changed tarball
#   builds afresh and an unchanged one is built once. A build happens in a
#   scratch folder beside it and is renamed into place when complete, under a
#   lock (flock): an interrupted or concurrent build never leaves a partial one.
# The build: make -j$POLYLIMIT_JOBS (default 2) BUILD_TLS=yes, against the
# system's OpenSSL (pkg-config), with the tarball's own dependencies (deps/):
# no network. tools/deps.sh servers installs make, gcc, pkg-config, libssl-dev.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sources=${POLYLIMIT_SERVER_SOURCES:-$root/../shared/servers}
if [ -d "$sources" ]; then sources=$(cd "$sources" && pwd); fi
cache=${POLYLIMIT_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polylimit/servers}
jobs=${POLYLIMIT_JOBS:-2}

die() { echo "servers.sh: $*" >&2; exit 1; }

need_sources() {
  [ -f "$sources/SHA256SUMS" ] ||
    die "no server sources: $sources/SHA256SUMS is missing (set POLYLIMIT_SERVER_SOURCES to the folder of the tarballs and SHA256SUMS)"
}

names() {  # every NAME that SHA256SUMS lists
  need_sources
  sed -n 's/^[0-9a-f]\{64\}[ *][ *]*\(.*\)\.tar\.gz$/\1/p' "$sources/SHA256SUMS"
}

canonical() {  # canonical NAME: NAME as SHA256SUMS lists it ("valkey" -> valkey-8.0.1)
  local all matches
  all=$(names)
  if grep -qxF -- "$1" <<<"$all"; then echo "$1"; return 0; fi
  matches=$(grep -- "^$1-[0-9]" <<<"$all" || true)
  [ -n "$matches" ] || die "no $1 in $sources/SHA256SUMS (known: $(tr '\n' ' ' <<<"$all"))"
  [ "$(wc -l <<<"$matches")" -eq 1 ] || die "$1 is ambiguous: $(tr '\n' ' ' <<<"$matches")"
  echo "$matches"
}

listed_sha() {  # listed_sha NAME: its hash in SHA256SUMS
  need_sources
  local sha
  sha=$(awk -v f="$1.tar.gz" '{ n = $2; sub(/^\*/, "", n) } n == f { print $1 }' "$sources/SHA256SUMS")
  [ -n "$sha" ] || die "$1.tar.gz is not listed in $sources/SHA256SUMS (known: $(names | tr '\n' ' '))"
  echo "$sha"
}

bindir_of() {  # bindir_of NAME: where its build goes (built or not)
  local sha
  sha=$(listed_sha "$1")
  echo "$cache/$1-${sha:0:16}/bin"
}

built() {  # built BINDIR: a complete build is there
  [ -f "$1/version" ] && { [ -x "$1/valkey-server" ] || [ -x "$1/redis-server" ]; }
}

build_one() {  # build_one NAME
  local name sha bindir final scratch tarball actual start
  name=$(canonical "$1")
  sha=$(listed_sha "$name")
  bindir=$(bindir_of "$name")
  final=$(dirname "$bindir")
  if built "$bindir"; then
    echo "$name $bindir"
    return 0
  fi
  tarball="$sources/$name.tar.gz"
  [ -f "$tarball" ] || die "$tarball is missing"
  actual=$(sha256sum "$tarball" | cut -d' ' -f1)
  [ "$actual" = "$sha" ] || die "$tarball: SHA-256 $actual, but SHA256SUMS says $sha"
  mkdir -p "$cache"
  exec 9>"$cache/.$name.lock"
  flock 9
  if built "$bindir"; then  # another run built it while we waited
    exec 9>&-
    echo "$name $bindir"
    return 0
  fi
  scratch=$(mktemp -d "$cache/.build-$name-XXXXXX")
  # shellcheck disable=SC2064  # expand now: the scratch folder of this build
  trap "rm -rf '$scratch'" EXIT
  start=$SECONDS
  echo "building $name (make -j$jobs BUILD_TLS=yes) in $scratch ..." >&2
  tar -xzf "$tarball" -C "$scratch"
  local src
  src=$(find "$scratch" -mindepth 1 -maxdepth 1 -type d | head -n1)
  [ -f "$src/src/Makefile" ] || die "$tarball: no src/Makefile in it"
  if ! make -C "$src" -j"$jobs" BUILD_TLS=yes >"$scratch/build.log" 2>&1; then
    tail -n 30 "$scratch/build.log" >&2
    die "$name: make failed (the last lines above)"
  fi
  mkdir -p "$scratch/out/bin"
  local prog found=0
  for prog in valkey-server valkey-cli redis-server redis-cli; do
    # Valkey 8 also makes redis-* links to its programs: keep only its own names.
    if [ -x "$src/src/$prog" ] && [ ! -L "$src/src/$prog" ]; then
      cp "$src/src/$prog" "$scratch/out/bin/"
      found=$((found + 1))
    fi
  done
  [ $found -ge 2 ] || die "$name: the build made no server and CLI"
  local server
  server=$(find "$scratch/out/bin" -name '*-server' | head -n1)
  # "Redis server v=7.2.6 ..." / "Server v=8.0.1 ...", "valkey-server v=8.0.1"
  "$server" --version | sed -n 's/.* v=\([0-9][0-9.]*\) .*/\1/p' >"$scratch/out/bin/version"
  [ -s "$scratch/out/bin/version" ] || die "$name: cannot read the version of $server"
  {
    echo "name: $name"
    echo "sha256: $sha"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) in $((SECONDS - start)) s (make -j$jobs BUILD_TLS=yes)"
    echo "server: $("$server" --version)"
  } >"$scratch/out/BUILD-INFO"
  rm -rf "$final"
  mv "$scratch/out" "$final"
  rm -rf "$scratch"
  trap - EXIT
  exec 9>&-
  echo "built $name in $((SECONDS - start)) s" >&2
  echo "$name $bindir"
}

case "${1:-}" in
  build)
    shift
    [ $# -gt 0 ] || die "usage: $0 build NAME...|all"
    need_sources
    if [ "$1" = all ]; then mapfile -t wanted < <(names); else wanted=("$@"); fi
    [ ${#wanted[@]} -gt 0 ] || die "$sources/SHA256SUMS lists no tarball"
    for n in "${wanted[@]}"; do build_one "$n"; done
    ;;
  path)
    [ $# -eq 2 ] || die "usage: $0 path NAME"
    name=$(canonical "$2")
    dir=$(bindir_of "$name")
    built "$dir" || die "$name is not built (tools/servers.sh build $name)"
    echo "$dir"
    ;;
  list)
    need_sources
    for n in $(names); do
      dir=$(bindir_of "$n")
      if built "$dir"; then echo "$n built $dir"; else echo "$n not-built"; fi
    done
    ;;
  *)
    echo "usage: $0 build NAME...|all | path NAME | list" >&2
    exit 2
    ;;
esac
