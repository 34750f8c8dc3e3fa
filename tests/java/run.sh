#!/usr/bin/env bash
# Builds the Java binding and runs its tests against real redis-server processes:
#   1. the C library, unless POLYLIMIT_PREFIX names an installed build (tools/test.sh
#      sets it); alone, this script builds build/java-lib and installs it
#      into build/java-prefix;
#   2. bindings/swig as its own CMake project (find_package(polylimit)): SWIG
#      generates the io.polylimit.jni sources and libpolylimit_jni.so, linked
#      against the static libpolylimit.a and OpenSSL's archives
#      (self-contained), and capi/vocabulary/generate.py the io.polylimit
#      vocabulary classes (Status, exceptions, Vocabulary);
#   3. Maven compiles the generated and the hand-written sources, runs the
#      JUnit suite (it starts its own redis-server; the JNI library comes from
#      the class path, as in the jar) and packages the jar, which carries
#      META-INF/native/linux-x86_64/libpolylimit_jni.so;
#   4. the jar is checked (unzip -l, no Main-Class, ldd of the JNI library in
#      it) and used as a user would: a consumer App.java compiled with javac
#      in a temporary directory and run with "java -cp jar:dir" against a
#      redis-server, with no -Djava.library.path and no LD_LIBRARY_PATH;
#      The consumer also uses the HTTP headers, the multi-client Prometheus
#      page and checkAsync with nothing but the jar on the class path: the
#      optional integrations (servlet filter, Micrometer) need no jar of
#      theirs unless used;
#   5. the demo worker runs from that jar by class name, in two processes on
#      one key, again with no library path;
#   6. examples/java-servlet builds as a user's Maven project against the jar
#      (installed into the local Maven repository as io.polylimit:polylimit),
#      and its runnable jar answers 200, 200, then 429 over real HTTP;
#   7. the Perl 5 binding from the same polylimit.i gets a smoke test
#      (tests/java/perl-smoke.t), where perl's headers are installed.
# Build output goes to build/java-* only (POLYLIMIT_JAVA_BUILD_DIR=DIR: DIR/java-*).
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

out_root=${POLYLIMIT_JAVA_BUILD_DIR:-$root/build}
echo "--- SWIG: JNI library (and Perl module: $perl_on) ($out_root/java-swig)"
swig_build="$out_root/java-swig"
# -U: find polylimit in this POLYLIMIT_PREFIX again, not in the one a previous run cached.
cmake -S "$root/bindings/swig" -B "$swig_build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -Upolylimit_DIR -DCMAKE_PREFIX_PATH="$POLYLIMIT_PREFIX" -DPOLYLIMIT_SWIG_PERL="$perl_on" >/dev/null
cmake --build "$swig_build" -j "$jobs"

echo "--- Maven: compile, JUnit, jar ($out_root/java-mvn)"
mvn_build="$out_root/java-mvn"
# Not -q: surefire's "Tests run: N, Failures: 0" summary is logged at INFO.
# polylimit.native.dir gives the generated sources and jar-resources/ (the
# JNI library under META-INF/native); the tests load it from there.
mvn -B -ntp -Dstyle.color=never -f "$root/bindings/swig/java/pom.xml" \
  -Dpolylimit.build.dir="$mvn_build" \
  -Dpolylimit.native.dir="$swig_build" \
  clean package
jar="$mvn_build/polylimit-1.0.0.jar"
[ -f "$jar" ]

echo "--- the jar: unzip -l $jar"
unzip -l "$jar"
native_entry=META-INF/native/linux-x86_64/libpolylimit_jni.so
if [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ]; then
  unzip -l "$jar" "$native_entry" >/dev/null || { echo "the jar has no $native_entry" >&2; exit 1; }
  # Linked -z nodelete (bindings/swig/CMakeLists.txt): unloading it with its
  # class loader must not unmap code a library thread still runs.
  unzip -p "$jar" "$native_entry" >"$mvn_build/native-check.so"
  readelf -d "$mvn_build/native-check.so" | grep -q 'Flags:.*NODELETE' ||
    { echo "the jar's $native_entry is not linked -z nodelete" >&2; exit 1; }
fi
manifest=$(unzip -p "$jar" META-INF/MANIFEST.MF)
if grep -qi '^Main-Class:' <<<"$manifest"; then
  echo "the library jar must have no Main-Class" >&2
  exit 1
fi
grep -q '^Automatic-Module-Name: io.polylimit' <<<"$manifest" ||
  { echo "the jar's manifest has no Automatic-Module-Name: io.polylimit" >&2; exit 1; }
# What a public repository requires beside the jar: sources and javadoc jars
# with content, and a pom naming licenses, url, scm and developers.
for kind in sources javadoc; do
  side="$mvn_build/polylimit-1.0.0-$kind.jar"
  [ -f "$side" ] || { echo "no $kind jar ($side)" >&2; exit 1; }
  want=io/polylimit/Limiter.java
  [ "$kind" = javadoc ] && want=io/polylimit/Limiter.html
  listing=$(unzip -l "$side")
  grep -q "$want" <<<"$listing" || { echo "the $kind jar has no $want" >&2; exit 1; }
  echo "$(basename "$side"): $(grep -c '\.\(java\|html\)$' <<<"$listing") files"
done
pom_text=$(cat "$root/bindings/swig/java/pom.xml")
for element in '<licenses>' '<url>' '<scm>' '<developers>' '<name>MIT</name>'; do
  grep -qF "$element" <<<"$pom_text" || { echo "pom.xml lacks $element" >&2; exit 1; }
done
for f in LICENSE THIRD_PARTY_NOTICES; do
  if [ -e "$root/$f" ] || compgen -G "$root/$f.*" >/dev/null; then
    unzip -l "$jar" "META-INF/$f*" >/dev/null || { echo "$f is in the repository but not in the jar's META-INF" >&2; exit 1; }
    echo "META-INF/$f: in the jar"
  else
    echo "META-INF/$f: not in the repository (yet), so not in the jar"
  fi
done

consumer=$(mktemp -d /tmp/polylimit-java-consumer-XXXXXX)
example_pid=
cleanup() {
  [ -n "$example_pid" ] && kill "$example_pid" 2>/dev/null
  # shellcheck disable=SC2153  # set with the PID by tests/redis-server.sh start
  [ -n "${POLYLIMIT_TEST_REDIS_PID:-}" ] && "$root/tests/redis-server.sh" stop "$POLYLIMIT_TEST_REDIS_PID" "$POLYLIMIT_TEST_REDIS_DIR"
  rm -rf "$consumer"
}
trap cleanup EXIT
if unzip -l "$jar" "$native_entry" >/dev/null 2>&1; then
  unzip -q -o -d "$consumer/unpacked" "$jar" "$native_entry"
  deps=$(ldd "$consumer/unpacked/$native_entry")
  echo "ldd $native_entry (from the jar):"
  echo "$deps" | sed 's/^/  /'
  # Nothing but the C and C++ runtimes: no libpolylimit, no OpenSSL, no JVM.
  extra=$(awk '{ print $1 }' <<<"$deps" | grep -Ev '^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|lib(c|m|stdc\+\+|gcc_s|pthread|dl|rt)\.so\.[0-9]+)$' || true)
  if [ -n "$extra" ]; then
    echo "the JNI library in the jar depends on more than libc/libm/libstdc++/libgcc: $extra" >&2
    exit 1
  fi
  exported=$(nm -D --defined-only "$consumer/unpacked/$native_entry" | awk '{ print $3 }' | grep -v '^Java_' || true)
  if [ -n "$exported" ]; then
    echo "the JNI library exports more than its Java_* entry points:" "$exported" >&2
    exit 1
  fi
fi

eval "$("$root/tests/redis-server.sh" start)"

echo "--- a consumer project: javac + java -cp polylimit.jar:. (no java.library.path, no LD_LIBRARY_PATH)"
mkdir -p "$consumer/src" "$consumer/classes" "$consumer/tmp"
cat >"$consumer/src/App.java" <<'JAVA'
import io.polylimit.Client;
import io.polylimit.ClientOptions;
import io.polylimit.Decision;
import io.polylimit.Limiter;
import io.polylimit.NativeLibrary;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;

public class App {
    public static void main(String[] args) throws Exception {
        int admitted = 0;
        try (Client client = Client.open(args[0], ClientOptions.builder().name("consumer").build());
             Limiter limiter = client.limiter("3/minute")) {
            Decision last = null;
            for (int i = 0; i < 5; i++) {
                Decision d = limiter.check("consumer-app");
                if (d.allowed()) admitted++;
                last = d;
            }
            System.out.println("headers " + limiter.headers(last));
            System.out.println("async " + limiter.checkAsync("consumer-app").get().allowed());
            String page = Client.prometheusText(client);
            System.out.println("page " + page.lines().filter(l -> l.startsWith("polylimit_checks_total")).findFirst().orElse(""));
        }
        String where = NativeLibrary.location();
        System.out.println("library " + NativeLibrary.version() + " loaded from " + where);
        if (Files.exists(Paths.get(where)))
            System.out.println("permissions " + PosixFilePermissions.toString(Files.getPosixFilePermissions(Paths.get(where))));
        System.out.println("admitted=" + admitted + " of 5");
    }
}
JAVA
javac -d "$consumer/classes" -cp "$jar" "$consumer/src/App.java"
# -Dpolylimit.tmpdir: a directory of our own, to check the copy is gone at exit.
app_out=$(env -u LD_LIBRARY_PATH -u JAVA_TOOL_OPTIONS java -Xcheck:jni -Dpolylimit.tmpdir="$consumer/tmp" \
  -cp "$jar:$consumer/classes" App "$POLYLIMIT_TEST_REDIS_URL")
echo "$app_out"
grep -qx 'admitted=3 of 5' <<<"$app_out" || { echo "consumer app: expected admitted=3 of 5" >&2; exit 1; }
# The seconds count down from 60 from the first check (one is gone on a slow machine).
s='(59|60)'
grep -Eqx "headers \{Retry-After=$s, RateLimit-Limit=3, RateLimit-Remaining=0, RateLimit-Reset=$s, RateLimit-Policy=\"default\";q=3;w=60, RateLimit=\"default\";r=0;t=$s\}" <<<"$app_out" ||
  { echo "consumer app: not the core's headers of a denial" >&2; exit 1; }
grep -qx 'async false' <<<"$app_out" || { echo "consumer app: checkAsync should be a denial" >&2; exit 1; }
grep -qx 'page polylimit_checks_total{client="consumer"} 6' <<<"$app_out" ||
  { echo "consumer app: the named client's page should count 6 checks" >&2; exit 1; }
grep -q "loaded from $consumer/tmp/libpolylimit_jni-" <<<"$app_out" ||
  { echo "consumer app: the JNI library did not come from the jar" >&2; exit 1; }
grep -qx 'permissions r-x------' <<<"$app_out" ||
  { echo "consumer app: the extracted library is not owner-only" >&2; exit 1; }
if [ -n "$(ls -A "$consumer/tmp")" ]; then
  echo "consumer app: the extracted library was left behind: $(ls "$consumer/tmp")" >&2
  exit 1
fi
echo "consumer app: 3 of 5 admitted, the JNI library came from the jar (owner-only temp file, deleted at exit)"

echo "--- the overrides: -Dpolylimit.library.path, -Dpolylimit.use.system.library=true"
app() { env -u LD_LIBRARY_PATH java -cp "$jar:$consumer/classes" "$@" App "$POLYLIMIT_TEST_REDIS_URL"; }
app_out=$(app -Dpolylimit.library.path="$swig_build/libpolylimit_jni.so")
echo "$app_out" | head -n1
grep -q "loaded from $swig_build/libpolylimit_jni.so$" <<<"$app_out" ||
  { echo "-Dpolylimit.library.path=FILE was not used" >&2; exit 1; }
app_out=$(app -Dpolylimit.use.system.library=true -Djava.library.path="$swig_build")
echo "$app_out" | head -n1
grep -q "loaded from System.loadLibrary(polylimit_jni)$" <<<"$app_out" ||
  { echo "-Dpolylimit.use.system.library=true was not used" >&2; exit 1; }
rc=0
app_out=$(app -Dpolylimit.use.system.library=true -Djava.library.path="$consumer/tmp" 2>&1) || rc=$?
if [ "$rc" -eq 0 ] || ! grep -q "cannot load the JNI library libpolylimit_jni.so from java.library.path=$consumer/tmp" <<<"$app_out"; then
  echo "-Dpolylimit.use.system.library=true without the library: expected a clear UnsatisfiedLinkError, got:" >&2
  echo "$app_out" >&2
  exit 1
fi
echo "without it on java.library.path: $(grep -m1 -o 'cannot load the JNI library[^(]*' <<<"$app_out")"

echo "--- demo worker from the jar by class name, two processes on one key (no library path)"
worker() {
  env -u LD_LIBRARY_PATH java -cp "$jar" io.polylimit.demo.Worker \
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

echo "--- examples/java-servlet: a Maven project on the installed jar, run with java -jar"
# The jar into the local Maven repository, with its POM (its optional and
# provided dependencies), as a user's project finds it.
mvn -B -ntp -q -Dstyle.color=never org.apache.maven.plugins:maven-install-plugin:3.1.3:install-file \
  -Dfile="$jar" -DpomFile="$root/bindings/swig/java/pom.xml"
example_build="$out_root/java-example"
mvn -B -ntp -q -Dstyle.color=never -f "$root/examples/java-servlet/pom.xml" -Dexample.build.dir="$example_build" \
  clean package
example_log="$consumer/example.log"
env -u LD_LIBRARY_PATH POLYLIMIT_URL="$POLYLIMIT_TEST_REDIS_URL" \
  java -jar "$example_build/polylimit-servlet-example.jar" --port 0 --limit 2/minute --prefix "run-sh-$$" \
  >"$example_log" 2>&1 &
example_pid=$!
example_url=
for _ in $(seq 1 150); do
  example_url=$(sed -n 's/^listening on //p' "$example_log")
  [ -n "$example_url" ] && break
  kill -0 "$example_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$example_url" ]; then
  kill "$example_pid" 2>/dev/null || true
  echo "the example app did not start:" >&2
  cat "$example_log" >&2
  exit 1
fi
example_port=${example_url##*:}
example_port=${example_port%/}
# One HTTP/1.1 GET over bash's /dev/tcp (no curl needed): the status line,
# the headers and the body, without CRs.
http_get() {
  local reply
  exec 3<>"/dev/tcp/127.0.0.1/$example_port"
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$1" >&3
  reply=$(tr -d '\r' <&3)
  exec 3<&-
  printf '%s\n' "$reply"
}
codes=""
for _ in 1 2 3; do
  codes+="$(http_get /hello | awk 'NR == 1 { print $2 }') "
done
last_headers=$(http_get /hello)
health=$(http_get /health | awk 'NR == 1 { print $2 }')
kill "$example_pid"
wait "$example_pid" || true
example_pid=
echo "example app at $example_url: /hello answered $codes; /health $health"
if [ "$codes" != "200 200 429 " ] || [ "$health" != 200 ]; then
  echo "the example app: expected 200 200 429 and an exempt /health" >&2
  exit 1
fi
grep -Eqx 'Retry-After: (5[0-9]|60)' <<<"$last_headers" && grep -qx 'RateLimit-Remaining: 0' <<<"$last_headers" ||
  { echo "the example app's 429 lacks the core's headers:" >&2; echo "$last_headers" >&2; exit 1; }

if [ "$perl_on" = ON ]; then
  echo "--- Perl binding smoke test"
  perl -I"$swig_build/perl" "$root/tests/java/perl-smoke.t"
else
  echo "--- Perl binding skipped: perl's headers (CORE/perl.h) are not installed"
fi
