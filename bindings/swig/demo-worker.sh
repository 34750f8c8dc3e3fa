#!/usr/bin/env bash
# Builds the Java binding (SWIG JNI library + jar, which carries the
# self-contained JNI library; tests skipped) against the installed library in
# POLYLIMIT_PREFIX, and prints the command line that runs the
# demo worker (io.polylimit.demo.Worker). Used by tools/demo.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${POLYLIMIT_PREFIX:?POLYLIMIT_PREFIX must name an installed polylimit (tools/env.sh sets it)}"
if [ -z "${JAVA_HOME:-}" ]; then
  JAVA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
  export JAVA_HOME
fi
swig_build="$root/build/demo-java-swig"
mvn_build="$root/build/demo-java-mvn"
{
  cmake -S "$root/bindings/swig" -B "$swig_build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -Upolylimit_DIR -DCMAKE_PREFIX_PATH="$POLYLIMIT_PREFIX" -DPOLYLIMIT_SWIG_PERL=OFF
  cmake --build "$swig_build" -j 2
  mvn -B -q -ntp -f "$root/bindings/swig/java/pom.xml" -Dpolylimit.build.dir="$mvn_build" \
    -Dpolylimit.native.dir="$swig_build" -DskipTests -Dmaven.source.skip -Dmaven.javadoc.skip package
} >"$root/build/demo-java.log" 2>&1 || { echo "Java build failed; see build/demo-java.log" >&2; exit 1; }
# The jar carries the JNI library (META-INF/native): no library path needed.
echo "java -cp $mvn_build/polylimit-1.0.0.jar io.polylimit.demo.Worker"
