#!/usr/bin/env bash
# Builds the Java binding (SWIG JNI library + jar, which carries the
# self-contained JNI library; tests skipped) against the installed library in
# POLYLIMIT_PREFIX, and prints the command line that runs the
# demo worker (io.polylimit.demo.Worker). Used by tools/demo.sh.
#
# POLYLIMIT_JAVA_JAR=FILE: a jar built already (tools/test.sh passes the one
# the Java suite built and tested): used as it is, nothing is built.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ -n "${POLYLIMIT_JAVA_JAR:-}" ]; then
  [ -f "$POLYLIMIT_JAVA_JAR" ] || { echo "POLYLIMIT_JAVA_JAR: no such file: $POLYLIMIT_JAVA_JAR" >&2; exit 1; }
  echo "java -cp $POLYLIMIT_JAVA_JAR io.polylimit.demo.Worker"
  exit 0
fi
: "${POLYLIMIT_PREFIX:?POLYLIMIT_PREFIX must name an installed polylimit (tools/env.sh sets it)}"
if [ -z "${JAVA_HOME:-}" ]; then
  JAVA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
  export JAVA_HOME
fi
swig_build="$root/build/demo-java-swig"
mvn_build="$root/build/demo-java-mvn"
log="$root/build/demo-java.log"
build() {
  cmake -S "$root/bindings/swig" -B "$swig_build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -Upolylimit_DIR -DCMAKE_PREFIX_PATH="$POLYLIMIT_PREFIX" -DPOLYLIMIT_SWIG_PERL=OFF
  cmake --build "$swig_build" -j 2
  mvn -B -ntp -Dstyle.color=never -f "$root/bindings/swig/java/pom.xml" -Dpolylimit.build.dir="$mvn_build" \
    -Dpolylimit.native.dir="$swig_build" -DskipTests -Dmaven.source.skip -Dmaven.javadoc.skip package
}
# A second try only for what a first one may meet once (a plugin download cut
# short); a failure says why on stderr, not only in the log.
if ! build >"$log" 2>&1; then
  echo "Java build failed, trying once more; the first try's last lines:" >&2
  tail -n 25 "$log" | sed 's/^/  /' >&2
  if ! build >"$log" 2>&1; then
    echo "Java build failed again; see build/demo-java.log, last lines:" >&2
    tail -n 40 "$log" | sed 's/^/  /' >&2
    exit 1
  fi
fi
# The jar carries the JNI library (META-INF/native): no library path needed.
echo "java -cp $mvn_build/polylimit-1.0.0.jar io.polylimit.demo.Worker"
