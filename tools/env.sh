# Sourced by tools/test.sh and tools/demo.sh: builds the library (Release),
# installs it under build/prefix and exports the paths every language needs.
#   RL_SOURCE_DIR  the checkout          RL_BUILD_DIR  the CMake build
#   RL_PREFIX      the installed tree    PKG_CONFIG_PATH, LD_LIBRARY_PATH, CMAKE_PREFIX_PATH
export RL_SOURCE_DIR=${RL_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
export RL_BUILD_DIR="$RL_SOURCE_DIR/build/release"
export RL_PREFIX="$RL_SOURCE_DIR/build/prefix"
RL_JOBS=$(nproc 2>/dev/null || echo 2)

rl_build_release() {
  cmake -S "$RL_SOURCE_DIR" -B "$RL_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build "$RL_BUILD_DIR" -j "$RL_JOBS" &&
    rm -rf "$RL_PREFIX" && cmake --install "$RL_BUILD_DIR" --prefix "$RL_PREFIX" >/dev/null || return 1
  local libdir
  libdir=$(dirname "$(ls -d "$RL_PREFIX"/lib*/pkgconfig | head -n1)")
  export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CMAKE_PREFIX_PATH="$RL_PREFIX${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
}
