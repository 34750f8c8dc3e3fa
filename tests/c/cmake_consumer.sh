# shellcheck shell=bash
# Sourced by the installed-library tests: a CMake consumer project of
# capi/examples/basic.c in its own folder, C only.
#   cmake_consumer DIR TARGET [PREFIX]
# Writes DIR/CMakeLists.txt (project(consumer C), find_package(polylimit 1.0),
# one executable `basic` linked to TARGET, e.g. polylimit::polylimit_static),
# configures it (with CMAKE_PREFIX_PATH=PREFIX when given, else the system
# installation) and builds DIR/build/basic. Needs $src, the checkout.
cmake_consumer() {
  local dir=$1 target=$2 prefix=${3:-}
  mkdir -p "$dir"
  # shellcheck disable=SC2154  # $src: set by the script that sources this one
  cp "$src/capi/examples/basic.c" "$dir/"
  cat > "$dir/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(polylimit 1.0 REQUIRED)
add_executable(basic basic.c)
target_link_libraries(basic PRIVATE $target)
CM
  cmake -S "$dir" -B "$dir/build" ${prefix:+-DCMAKE_PREFIX_PATH="$prefix"} >/dev/null
  cmake --build "$dir/build" >/dev/null
}
