#!/usr/bin/env bash
# Makes sure the tools and libraries that polylimit needs are present on a
# Debian 12 machine. As root it installs what is missing (apt-get; Go modules
# and Python packages are fetched by their own tools later); otherwise it
# names what is missing and fails.
#   tools/deps.sh [core] [servers] [python] [go] [java] [node] [lint]    (no argument: everything)
set -euo pipefail

want=("$@")
[ ${#want[@]} -eq 0 ] && want=(core servers python go java node lint)

missing_pkgs=()
need_pkg() {  # need_pkg DEBIAN_PACKAGE [COMMAND]: missing if the command (or the package) is absent
  local pkg=$1 cmd=${2:-}
  if [ -n "$cmd" ]; then
    command -v "$cmd" >/dev/null 2>&1 && return 0
  else
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" && return 0
  fi
  missing_pkgs+=("$pkg")
}

for component in "${want[@]}"; do
  case "$component" in
    core)
      need_pkg g++ g++
      need_pkg cmake cmake
      need_pkg ninja-build ninja
      need_pkg pkg-config pkg-config
      need_pkg libssl-dev      # TLS (rediss://)
      # TOML policy documents (core/src/util/toml.cpp): toml++, header-only;
      # a build without it reads JSON policies only.
      need_pkg libtomlplusplus-dev
      need_pkg openssl openssl # tests/cpp/tls_test.cpp, bench_tls: make test certificates
      need_pkg libgtest-dev
      # Tests and benchmarks only (tests/hiredis.cmake): hiredis's reader is
      # the reference the core's reply reader is checked against, and the
      # benchmarks' raw client. No build of the library needs it.
      need_pkg libhiredis-dev
      need_pkg abigail-tools abidiff   # tools/abi-check.sh
      need_pkg libreadline8   # tests: our exports must not collide with readline's rl_*
      need_pkg redis-server redis-server
      need_pkg redis-tools redis-cli   # tests/fixture/redisfix forms clusters with redis-cli --cluster
      # tests/fixture/redisfix, the Redis launcher of every suite (C++, Python,
      # Go, Java, shell), is Python 3 with the standard library only.
      need_pkg python3 python3
      # tests/c/deb_package.sh (.ci/run): cpack's DEB generator runs
      # dpkg-shlibdeps and file; apt-get installs the packages it builds.
      need_pkg dpkg-dev dpkg-shlibdeps
      need_pkg file file
      need_pkg lintian lintian     # tests/c/deb_package.sh: the packages must be lintian clean
      need_pkg help2man help2man   # the polylimit(1) man page, made from --help
      need_pkg gdb gdb             # tests/cpp/test_main.cpp: a hung test program prints its stacks
      # tools/fuzz.sh: clang with libFuzzer and the sanitizer runtimes, which
      # Debian 12 ships in libclang-rt-14-dev (only recommended by clang-14).
      need_pkg clang clang
      need_pkg libclang-rt-14-dev
      ;;
    servers)
      # tools/servers.sh: Valkey and Redis from their release tarballs (the
      # compatibility pass), with their own deps/ and the system's OpenSSL
      # (BUILD_TLS=yes finds it with pkg-config). flock: the cache's lock.
      need_pkg make make
      need_pkg gcc gcc
      need_pkg pkg-config pkg-config
      need_pkg libssl-dev
      need_pkg util-linux flock
      ;;
    python)
      need_pkg python3 python3
      python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing_pkgs+=(python3-venv)
      python3 -c 'import sysconfig, os, sys; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)' \
        >/dev/null 2>&1 || missing_pkgs+=(python3-dev)
      ;;
    go)
      need_pkg golang-go go
      ;;
    java)
      need_pkg swig swig
      need_pkg default-jdk-headless javac
      need_pkg maven mvn
      need_pkg unzip unzip   # tests/java/run.sh inspects the jar
      ;;
    node)
      # bindings/node: Node.js and its headers (/usr/include/node), npm for
      # node-addon-api; the addon is built with CMake (core component).
      need_pkg nodejs node
      need_pkg npm npm
      # Its headers: in libnode-dev on Debian 12, in nodejs itself later.
      [ -f /usr/include/node/node_api.h ] || missing_pkgs+=(libnode-dev)
      ;;
    lint)
      # tools/lint.sh: Debian 12's clang-format (14) and ShellCheck (0.9); ruff
      # (pip, into build/venv-lint) and Biome (npm ci in tools/lint) it
      # installs itself; gofmt and go vet come with Go, rustfmt and clippy
      # with the Rust toolchain.
      need_pkg clang-format clang-format
      need_pkg shellcheck shellcheck
      need_pkg python3 python3
      python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing_pkgs+=(python3-venv)
      need_pkg golang-go go
      need_pkg nodejs node
      need_pkg npm npm
      ;;
    *)
      echo "deps.sh: unknown component '$component'" >&2
      exit 2
      ;;
  esac
done

[ ${#missing_pkgs[@]} -eq 0 ] && exit 0
# De-duplicate, keep order.
mapfile -t missing_pkgs < <(printf '%s\n' "${missing_pkgs[@]}" | awk '!seen[$0]++')
if [ "$(id -u)" -ne 0 ]; then
  echo "Missing Debian packages: ${missing_pkgs[*]}" >&2
  echo "Install them with: sudo apt-get install -y ${missing_pkgs[*]}   (or run this command as root)" >&2
  exit 1
fi
echo "Installing Debian packages: ${missing_pkgs[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing_pkgs[@]}" >/dev/null
