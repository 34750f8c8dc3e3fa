package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * examples/java-servlet started twice, as two JVMs (two Jettys, two polylimit
 * clients) on one Redis: together they admit exactly the limit. The app takes
 * its Redis URL from POLYLIMIT_URL, which this test sets for its processes
 * only.
 */
class ExampleAppTest extends ServerTestBase {

    /** One running example app. */
    static final class App implements AutoCloseable {
        final Process process;
        final String base;
        final Path log;

        App(Process process, String base, Path log) {
            this.process = process;
            this.base = base;
            this.log = log;
        }

        @Override
        public void close() throws IOException {
            process.destroy(); // SIGTERM: the app's shutdown hook stops Jetty and closes the client
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly().waitFor();
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
            Files.deleteIfExists(log);
        }
    }

    static Process launch(Path log, String... args) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // Surefire's class path: the binding, the example (a test source root), Jetty.
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> cmd = new ArrayList<>(List.of(java, "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-cp", cp));
        String libPath = System.getProperty(NativeLibrary.PATH_PROPERTY);
        if (libPath != null) cmd.add("-D" + NativeLibrary.PATH_PROPERTY + "=" + libPath);
        cmd.add("io.polylimit.examples.servlet.ExampleApp");
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(log.toFile());
        pb.environment().put("POLYLIMIT_URL", redis.url());
        return pb.start();
    }

    /** Starts the app; returns once it printed its address. */
    static App start(String... args) throws Exception {
        Path log = Files.createTempFile("polylimit-example-", ".log");
        Process p = launch(log, args);
        CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
            try {
                BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
                for (String l = r.readLine(); l != null; l = r.readLine()) {
                    if (l.startsWith("listening on ")) return l.substring("listening on ".length());
                }
                return null;
            } catch (IOException e) {
                return null;
            }
        });
        String url = line.get(30, TimeUnit.SECONDS);
        if (url == null) {
            p.destroyForcibly().waitFor();
            throw new AssertionError("the example app did not start: " + Files.readString(log));
        }
        return new App(p, url.replaceAll("/$", ""), log);
    }

    @Test
    void twoServerProcessesShareOneLimit() throws Exception {
        long limit = 7;
        String prefix = "ex" + UUID.randomUUID().toString().substring(0, 8);
        String[] args = {"--port", "0", "--limit", limit + "/minute", "--login-limit", "2/minute", "--prefix", prefix};
        CompletableFuture<App> startA = CompletableFuture.supplyAsync(() -> {
            try {
                return start(args);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        try (App b = start(args); App a = startA.get(40, TimeUnit.SECONDS)) {
            Countdown minute = new Countdown(60);
            int admitted = 0, deniedCount = 0, admittedByA = 0, admittedByB = 0;
            for (int i = 0; i < 20; i++) {
                App app = i % 2 == 0 ? a : b;
                HttpResponse<String> r = JettyServer.getAt(app.base, "/hello");
                if (r.statusCode() == 200) {
                    admitted++;
                    if (app == a) admittedByA++;
                    else admittedByB++;
                    // Each answer counts the other process's requests too.
                    assertEquals(Long.toString(limit - admitted), r.headers().firstValue("RateLimit-Remaining").orElse(null));
                } else {
                    assertEquals(429, r.statusCode());
                    minute.check("Retry-After", r.headers().firstValue("Retry-After").orElse(null));
                    deniedCount++;
                }
            }
            assertEquals(limit, admitted, "exactly the limit across two JVMs");
            assertEquals(20 - limit, deniedCount);
            assertTrue(admittedByA > 0 && admittedByB > 0, "both processes admitted some");
            // /login has its own limit, shared as well; /health and /metrics are exempt.
            assertEquals(200, JettyServer.getAt(a.base, "/login").statusCode());
            assertEquals(200, JettyServer.getAt(b.base, "/login").statusCode());
            assertEquals(429, JettyServer.getAt(a.base, "/login").statusCode());
            assertEquals(200, JettyServer.getAt(b.base, "/health").statusCode());
            HttpResponse<String> metrics = JettyServer.getAt(b.base, "/metrics");
            assertEquals(200, metrics.statusCode());
            PrometheusPage page = PrometheusPage.parse(metrics.body());
            // B answered 10 /hello, 1 /login; nothing else was checked by it.
            assertEquals(11.0, page.value("polylimit_checks_total{client=\"example\"}"));
        }
    }

    @Test
    void withoutAUrlTheAppStopsWithTheLibrarysMessage() throws Exception {
        Path log = Files.createTempFile("polylimit-example-", ".log");
        try {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
            ProcessBuilder pb = new ProcessBuilder(java, "-XX:TieredStopAtLevel=1", "-cp", cp,
                    "io.polylimit.examples.servlet.ExampleApp", "--port", "0").redirectErrorStream(true)
                    .redirectOutput(log.toFile());
            pb.environment().remove("POLYLIMIT_URL");
            Process p = pb.start();
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            String out = Files.readString(log);
            assertTrue(p.exitValue() != 0, out);
            assertTrue(out.contains("POLYLIMIT_URL is not set") && out.contains("memory://"), out);
        } finally {
            Files.deleteIfExists(log);
        }
    }

}
