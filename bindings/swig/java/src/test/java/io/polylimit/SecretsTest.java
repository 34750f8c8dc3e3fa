package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * No password reaches anything the binding shows: a unique marker password
 * goes through every error path Java can reach (URLs that do not parse, TLS
 * option errors, wrong passwords and an ACL user against a real
 * redis-server, a server that echoes AUTH's arguments, refused ports, Cluster
 * seeds refused, wrong sentinel and data passwords against a real sentinel)
 * and must not appear in any exception's message, toString or stack trace
 * text, a Client's or Limiter's toString, the stats or the Prometheus text.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SecretsTest {
    static final String MARKER = "s3cr3t-MARKER-" + UUID.randomUUID().toString().replace("-", "");

    static void assertClean(String context, String text) {
        assertFalse(text.contains(MARKER), context + ": the marker leaked: " + text);
        assertFalse(text.contains(MARKER.substring(14)), context + ": part of the marker leaked: " + text);
    }

    static void assertClean(String context, Throwable e) {
        StringWriter trace = new StringWriter();
        e.printStackTrace(new PrintWriter(trace));
        assertClean(context, String.valueOf(e.getMessage()));
        assertClean(context, e.toString());
        assertClean(context, trace.toString());
    }

    /** Runs one call; returns what it threw (checked), or null. */
    static PolylimitException attempt(String context, Supplier<?> call) {
        try {
            Object result = call.get();
            if (result != null) assertClean(context, result.toString());
            return null;
        } catch (PolylimitException e) {
            assertClean(context, e);
            return e;
        }
    }

    /**
     * Opens url and, when it opens, makes calls that reach the server; every
     * text shown on the way is checked. Returns the first error.
     */
    static PolylimitException exercise(String url, ClientOptions.Builder options) {
        String shown = Client.redactUrl(url);
        assertClean("redactUrl", shown);
        assertTrue(shown.contains("***"), "nothing redacted: " + shown);
        assertEquals(shown, Client.redactUrl(shown), "idempotent");
        Client client;
        try {
            client = Client.open(url, options.connectTimeout(Duration.ofSeconds(1)).build());
        } catch (PolylimitException e) {
            assertClean("open " + shown, e);
            return e;
        }
        PolylimitException first = null;
        try (client) {
            assertClean("toString", client.toString());
            assertTrue(client.toString().contains("***"), client.toString());
            try (Limiter limiter = client.limiter(5, Duration.ofSeconds(1))) {
                assertClean("limiter", limiter.toString());
                for (Supplier<?> call : List.<Supplier<?>>of(
                        () -> limiter.check("k"),
                        () -> limiter.peek("k"),
                        () -> limiter.checkMany(List.of("a", "b")),
                        () -> limiter.checkManyResults(List.of("a", "b"), 1),
                        () -> limiter.checkAsync("k").join())) {
                    PolylimitException e;
                    try {
                        e = attempt("call on " + shown, call);
                    } catch (java.util.concurrent.CompletionException wrapped) {
                        assertClean("async on " + shown, wrapped);
                        e = wrapped.getCause() instanceof PolylimitException
                                ? (PolylimitException) wrapped.getCause() : null;
                    }
                    if (first == null) first = e;
                }
            }
            assertClean("stats", client.stats().toString());
            assertClean("prometheus", client.statsPrometheus());
            assertClean("prometheusText", Client.prometheusText(client));
        }
        assertClean("closed", client.toString());
        return first;
    }

    static PolylimitException exercise(String url) {
        return exercise(url, ClientOptions.builder());
    }

    static String m(String form) {
        return form.replace("PW", MARKER);
    }

    @Test
    void redactionForms() {
        assertEquals("redis://bob:***@host:6379/2", Client.redactUrl(m("redis://bob:PW@host:6379/2")));
        assertEquals("rediss://***@host", Client.redactUrl(m("rediss://PW@host")));
        assertEquals("redis+sentinel://u:***@s1,s2/m?sentinel_user=sen&sentinel_password=***",
                Client.redactUrl(m("redis+sentinel://u:PW@s1,s2/m?sentinel_user=sen&sentinel_password=PW")));
        assertEquals("redis://host:6379", Client.redactUrl("redis://host:6379"));
        assertEquals("redis://u:***@h", Client.redactUrl(m("redis://u:PW/x@h")));
        assertEquals("redis://u:***@h", Client.redactUrl(m("redis://u:PW\0x@h")));
        assertThrows(NullPointerException.class, () -> Client.redactUrl(null));
    }

    @Test
    void badUrls() {
        String[] forms = {
            "redis://user:PW@h:99999", "redis://user:PW@h:notaport", "redis://:PW@h:1:2", "redis://PW@h:0",
            "redis://user:PW@h:6379/notadb", "redis://user:PW@h:6379?x=1", "redis://user:PW@:6379",
            "redis://user:PW@h\u0001st:1", "rediss://user:PW@h:99999", "redis://user:PW%zz@h:1",
            "redis://user:PW%2Fx@h:99999", "redis://user:PW/x@h:1", "redis://user:PW?x@h:1",
            "redis://user:PW#x@h:99999", "redis://user:PW@x@h:99999", "redis://user:PW?a=b@h:1",
            "redis+cluster://user:PW@h:1,h:99999", "redis+cluster://user:PW@h:1/3", "rediss+cluster://:PW@h:1,,h:2",
            "redis+sentinel://user:PW@h:26379", "redis+sentinel://h:26379/m?sentinel_password=PW&bogus=1",
            "redis+sentinel://h:26379/m?sentinel_user=u&sentinel_password=PW&x", "rediss+sentinel://:PW@h/m/notadb",
            "unix://user:PW@/tmp/x.sock", "unix:///tmp/x.sock?db=x&password=PW", "unix:///tmp/PW@x.sock",
            "bogus://user:PW@h:1", "user:PW@h://x", "redis:/user:PW@h", "://user:PW@h", "memory://u:PW@",
            "redis://user:PW\0@h:1",
        };
        for (String form : forms) {
            PolylimitException e = exercise(m(form));
            assertInstanceOf(InvalidArgumentException.class, e, Client.redactUrl(m(form)));
        }
    }

    @Test
    void tlsOptions() throws Exception {
        assertInstanceOf(InvalidArgumentException.class,
                exercise(m("redis://u:PW@127.0.0.1:1"), ClientOptions.builder().tlsInsecure(true)));
        assertInstanceOf(InvalidArgumentException.class, exercise(m("rediss://u:PW@127.0.0.1:1"),
                ClientOptions.builder().tlsCaFile(Path.of("/nonexistent/polylimit-ca.pem"))));
        try (RedisServer plain = RedisServer.start()) {
            assertNotNull(exercise(m("rediss://u:PW@127.0.0.1:" + plain.port), ClientOptions.builder().tlsInsecure(true)));
        }
    }

    @Test
    void wrongPasswords() throws Exception {
        try (RedisServer secured = RedisServer.start("--requirepass", "right-password")) {
            String base = "127.0.0.1:" + secured.port;
            for (String url : new String[] {"redis://:PW@" + base, "redis://default:PW@" + base + "/3",
                    "redis://nosuchuser:PW@" + base, "redis://:PW%40x@" + base}) {
                assertInstanceOf(AuthException.class, exercise(m(url)), Client.redactUrl(m(url)));
            }
        }
        try (RedisServer open = RedisServer.start("--user", "alice", "on", ">right-password", "~*", "+@all")) {
            assertInstanceOf(AuthException.class, exercise(m("redis://alice:PW@127.0.0.1:" + open.port)));
            // A password for a server without one.
            assertInstanceOf(AuthException.class, exercise(m("redis://:PW@127.0.0.1:" + open.port)));
        }
    }

    @Test
    void serverEchoingAuthArguments() throws Exception {
        try (RedisServer renamed = RedisServer.start("--rename-command", "AUTH", "")) {
            PolylimitException e = exercise(m("redis://:PW@127.0.0.1:" + renamed.port));
            assertNotNull(e);
            assertTrue(e.getMessage().contains("unknown command"), e.getMessage());
        }
    }

    @Test
    void unreachable() throws Exception {
        for (String url : new String[] {
                "redis://u:PW@127.0.0.1:" + RedisServer.freePort(),
                "redis+cluster://u:PW@127.0.0.1:" + RedisServer.freePort() + ",127.0.0.1:" + RedisServer.freePort(),
                "redis+sentinel://u:PW@127.0.0.1:" + RedisServer.freePort() + "/m?sentinel_password=PW",
                "rediss+sentinel://:PW@127.0.0.1:" + RedisServer.freePort() + "/m"}) {
            assertInstanceOf(UnavailableException.class, exercise(m(url)), Client.redactUrl(m(url)));
        }
    }

    @Test
    void sentinel() throws Exception {
        Process launcher = new ProcessBuilder("python3", RedisServer.launcherPath().toString(), "sentinel", "--name",
                "secretmaster", "--replicas", "0", "--sentinels", "1", "--password", "data-password",
                "--sentinel-password", "sentinel-password", "--no-discovery")
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            String line = new BufferedReader(new InputStreamReader(launcher.getInputStream(), StandardCharsets.UTF_8))
                    .readLine();
            assertNotNull(line, "redisfix sentinel: no output");
            assertFalse(line.contains("\"error\""), line);
            Matcher port = Pattern.compile("\"sentinels\": \\[\\{\"port\": (\\d+)").matcher(line);
            assertTrue(port.find(), line);
            String addr = "127.0.0.1:" + port.group(1);
            assertInstanceOf(AuthException.class,
                    exercise(m("redis+sentinel://:data-password@" + addr + "/secretmaster?sentinel_password=PW")));
            assertInstanceOf(AuthException.class,
                    exercise(m("redis+sentinel://:PW@" + addr + "/secretmaster?sentinel_password=sentinel-password")));
            assertNotNull(exercise(m("redis+sentinel://:PW@" + addr + "/nosuchmaster?sentinel_password=PW")));
        } finally {
            launcher.getOutputStream().close();  // end of input: the launcher stops everything
            if (!launcher.waitFor(30, TimeUnit.SECONDS)) launcher.destroyForcibly().waitFor();
        }
    }
    /**
     * An API key sent to the servlet filter never reaches Redis (SCAN of the
     * real server after the requests), a log line, an answer or an error:
     * the core keys it by its SHA-256 hex.
     */
    @Test
    void apiKeysOfHttpRequests() throws Exception {
        java.util.logging.Logger log = java.util.logging.Logger.getLogger(
                io.polylimit.servlet.RateLimitFilter.class.getName());
        List<String> lines = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                lines.add(new java.util.logging.SimpleFormatter().format(r));
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        log.addHandler(capture);
        String doc = "{\"rules\": [{\"name\": \"api\", \"limiter\": 0, \"key\": \"api_key\"}]}";
        try (RedisServer redis = RedisServer.start();
             Client client = Client.open(redis.url());
             Limiter limiter = client.limiterBuilder("2/minute").prefix("secrets").build();
             Client dead = Client.open("redis://127.0.0.1:" + RedisServer.freePort());
             Limiter deadLimiter = dead.limiter("2/minute");
             JettyServer s = JettyServer.start(io.polylimit.servlet.RateLimitFilter.fromDocument(doc, List.of(limiter)));
             JettyServer failing = JettyServer.start(
                     io.polylimit.servlet.RateLimitFilter.fromDocument(doc, List.of(deadLimiter)))) {
            List<Integer> statuses = new java.util.ArrayList<>();
            for (int i = 0; i < 3; i++) {
                java.net.http.HttpResponse<String> r = s.get("/x", "X-API-Key", MARKER);
                statuses.add(r.statusCode());
                assertClean("answer", r.body() + r.headers().map());
            }
            assertEquals(List.of(200, 200, 429), statuses);
            java.net.http.HttpResponse<String> r = failing.get("/x", "X-API-Key", MARKER);
            assertEquals(503, r.statusCode());
            assertClean("answer of a failed check", r.body() + r.headers().map());
            // The application's key over the key limit: refused, without the key in the message.
            try (HttpPolicy p = HttpPolicy.fromDocument(
                    "{\"rules\": [{\"name\": \"app\", \"limiter\": 0, \"key\": \"app\"}]}", List.of(limiter))) {
                String longKey = MARKER.repeat(40);
                PolylimitException e = assertThrows(PolylimitException.class, () -> p.prepare(
                        HttpPolicy.Request.builder().method("GET").path("/").peer("::1").appKey(longKey).build()));
                assertClean("error", e);
                HttpPolicy.Step step = HttpPolicy.fromDocument(doc, List.of(limiter)).prepare(HttpPolicy.Request
                        .builder().method("GET").path("/").peer("::1").header("X-API-Key", MARKER).build());
                assertClean("step", step.toString() + step.key());
            }
            Process scan = new ProcessBuilder("redis-cli", "-p", Integer.toString(redis.port), "--scan")
                    .redirectErrorStream(true).start();
            String keys;
            try (BufferedReader in = new BufferedReader(new InputStreamReader(scan.getInputStream(),
                    StandardCharsets.UTF_8))) {
                keys = String.join("\n", in.lines().toList());
            }
            assertEquals(0, scan.waitFor());
            assertTrue(keys.contains("apikey:"), "the key is in Redis by its hash: " + keys);
            assertClean("Redis keys", keys);
        } finally {
            log.removeHandler(capture);
        }
        assertTrue(lines.stream().anyMatch(l -> l.contains("rate limit check failed")), lines.toString());
        for (String line : lines) assertClean("log line", line);
    }
}
