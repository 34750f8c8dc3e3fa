# shellcheck shell=bash
# Sourced by tools/test.sh and tools/demo.sh: builds the library (Release),
# installs it under build/prefix and exports the paths every language needs.
#   POLYLIMIT_SOURCE_DIR  the checkout          POLYLIMIT_BUILD_DIR  the CMake build
#   POLYLIMIT_PREFIX      the installed tree    PKG_CONFIG_PATH, LD_LIBRARY_PATH, CMAKE_PREFIX_PATH
export POLYLIMIT_SOURCE_DIR=${POLYLIMIT_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
export POLYLIMIT_BUILD_DIR="$POLYLIMIT_SOURCE_DIR/build/release"
export POLYLIMIT_PREFIX="$POLYLIMIT_SOURCE_DIR/build/prefix"
POLYLIMIT_JOBS=$(nproc 2>/dev/null || echo 2)

polylimit_build_release() {
  cmake -S "$POLYLIMIT_SOURCE_DIR" -B "$POLYLIMIT_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build "$POLYLIMIT_BUILD_DIR" -j "$POLYLIMIT_JOBS" &&
    rm -rf "$POLYLIMIT_PREFIX" && cmake --install "$POLYLIMIT_BUILD_DIR" --prefix "$POLYLIMIT_PREFIX" >/dev/null || return 1
  local libdir
  libdir=$(dirname "$(ls -d "$POLYLIMIT_PREFIX"/lib*/pkgconfig | head -n1)")
  export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CMAKE_PREFIX_PATH="$POLYLIMIT_PREFIX${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
}
