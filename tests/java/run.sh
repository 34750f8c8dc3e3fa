#!/usr/bin/env bash
# Builds the Java binding and runs its tests against real redis-server processes:
#   1. the C library, unless POLYLIMIT_PREFIX names an installed build (tools/test.sh
#      sets it); alone, this script builds build/java-lib and installs it
#      into build/java-prefix;
#   2. bindings/swig as its own CMake project (find_package(polylimit)): SWIG
#      generates the io.polylimit.jni sources and libpolylimit_jni.so, linked
#      against the shared libpolylimit.so.1, and capi/vocabulary/generate.py
#      the io.polylimit vocabulary classes (Status, exceptions, Vocabulary);
#   3. Maven compiles the generated and the hand-written sources, runs the
#      JUnit suite (it starts its own redis-server) and packages the jar;
#   4. the demo worker runs from that jar, in two processes on one key;
#   5. the Perl 5 binding from the same polylimit.i gets a smoke test
#      (tests/java/perl-smoke.t), where perl's headers are installed.
# Build output goes to build/java-* only.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
jobs=2 # the machine is shared: never more

"$root/tools/deps.sh" core java

# FindJNI needs a JDK home; take the one javac belongs to.
if [ -z "${JAVA_HOME:-}" ]; then
  JAVA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
  export JAVA_HOME
fi
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)

if [ -z "${POLYLIMIT_PREFIX:-}" ]; then
  echo "--- building the C library (build/java-lib -> build/java-prefix)"
  POLYLIMIT_PREFIX="$root/build/java-prefix"
  cmake -S "$root" -B "$root/build/java-lib" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DPOLYLIMIT_BUILD_TESTS=OFF -DPOLYLIMIT_BUILD_TOOLS=OFF >/dev/null
  cmake --build "$root/build/java-lib" -j "$jobs"
  rm -rf "$POLYLIMIT_PREFIX"
  cmake --install "$root/build/java-lib" --prefix "$POLYLIMIT_PREFIX" >/dev/null
  libdir=$(dirname "$(ls -d "$POLYLIMIT_PREFIX"/lib*/pkgconfig | head -n1)")
  export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CMAKE_PREFIX_PATH="$POLYLIMIT_PREFIX${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
fi

# The Perl binding is optional: only where perl's headers are installed.
perl_on=OFF
if perl -MConfig -e 'exit(-f "$Config{archlibexp}/CORE/perl.h" ? 0 : 1)' 2>/dev/null; then
  perl_on=ON
fi

echo "--- SWIG: JNI library (and Perl module: $perl_on) (build/java-swig)"
swig_build="$root/build/java-swig"
# -U: find polylimit in this POLYLIMIT_PREFIX again, not in the one a previous run cached.
cmake -S "$root/bindings/swig" -B "$swig_build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -Upolylimit_DIR -DCMAKE_PREFIX_PATH="$POLYLIMIT_PREFIX" -DPOLYLIMIT_SWIG_PERL="$perl_on" >/dev/null
cmake --build "$swig_build" -j "$jobs"
jni_dir=$(dirname "$(find "$swig_build" -maxdepth 1 -name 'libpolylimit_jni.*' | head -n1)")

echo "--- Maven: compile, JUnit, jar (build/java-mvn)"
mvn_build="$root/build/java-mvn"
# Not -q: surefire's "Tests run: N, Failures: 0" summary is logged at INFO.
mvn -B -ntp -Dstyle.color=never -f "$root/bindings/swig/java/pom.xml" \
  -Dpolylimit.build.dir="$mvn_build" \
  -Dpolylimit.swig.sources="$swig_build/java" \
  -Dpolylimit.vocabulary.sources="$swig_build/java-vocabulary" \
  -Dpolylimit.library.path="$jni_dir" \
  clean package
jar="$mvn_build/polylimit-1.0.0.jar"
[ -f "$jar" ]

echo "--- demo worker from the jar, two processes on one key"
eval "$("$root/tests/redis-server.sh" start)"
trap '"$root/tests/redis-server.sh" stop "$POLYLIMIT_TEST_REDIS_PID" "$POLYLIMIT_TEST_REDIS_DIR"' EXIT
worker() {
  java -cp "$jar" -Djava.library.path="$jni_dir" io.polylimit.demo.Worker \
    "$POLYLIMIT_TEST_REDIS_URL" java-run-sh 25 60000 40 "$1"
}
out_a=$(mktemp) out_b=$(mktemp)
worker java-a >"$out_a" &
pid_a=$!
worker java-b >"$out_b" &
pid_b=$!
wait "$pid_a"
wait "$pid_b"
cat "$out_a" "$out_b"
total=$(awk '/ admitted=[0-9]+ attempts=40$/ { sub(/.* admitted=/, ""); sum += $1 } END { print sum + 0 }' "$out_a" "$out_b")
rm -f "$out_a" "$out_b"
if [ "$total" != 25 ]; then
  echo "demo workers admitted $total in total, expected exactly 25" >&2
  exit 1
fi
echo "demo workers: 25 of 80 admitted across two processes, as the limit says"

if [ "$perl_on" = ON ]; then
  echo "--- Perl binding smoke test"
  perl -I"$swig_build/perl" "$root/tests/java/perl-smoke.t"
else
  echo "--- Perl binding skipped: perl's headers (CORE/perl.h) are not installed"
fi
