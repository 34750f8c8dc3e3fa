#!/usr/bin/env bash
# The Python suite: builds the wheel, installs it into a virtualenv under
# build/, and runs pytest against the installed package (not the sources).
# Works alone from the repository root or from tools/test.sh (which sets
# POLYLIMIT_SOURCE_DIR). Only PyPI is needed: pytest, scikit-build-core, pybind11.
set -euo pipefail
root=${POLYLIMIT_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$root"

build="$root/build"
venv="$build/venv-python"
dist="$build/dist-python"
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
py="$venv/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$py" -m pip install -q "pytest>=7" "scikit-build-core>=0.10" "pybind11>=2.12"

# No build isolation: the build tools are the venv's, so the CMake build
# directory (kept between runs for speed) always sees the same paths.
rm -rf "$dist"
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  "$py" -m pip wheel . -w "$dist" --no-build-isolation --no-deps -q \
  --config-settings=build-dir="$build/python-skbuild"
wheels=("$dist"/polylimit-*.whl)
[ -f "${wheels[0]}" ] || { echo "run.sh: no wheel was built" >&2; exit 1; }
"$py" -m pip install -q --force-reinstall --no-deps "${wheels[0]}"

export POLYLIMIT_PY_WHEEL="${wheels[0]}"
status=0
"$py" -m pytest "$root/tests/python" -p no:cacheprovider "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "run.sh: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
