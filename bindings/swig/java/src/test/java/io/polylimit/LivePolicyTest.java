package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The live policy: plans in the document, reload, a refused document, the plan resolver, a watched file. */
class LivePolicyTest extends ServerTestBase {
    /** Plans free (10/minute) and pro (100/minute); acme is pro; FREE is replaced by reloads. */
    static String plans(String prefix, String free, String resolver) {
        return "# plans\n"
                + "prefix = \"" + prefix + "\"\n"
                + "default_plan = \"free\"\n"
                + "\n"
                + "[plans.free]\n"
                + "api = \"" + free + "\"\n"
                + "[plans.pro]\n"
                + "api = \"100/minute\"\n"
                + "\n"
                + "[tenants]\n"
                + "acme = \"pro\"\n"
                + "\n"
                + "[[rules]]\n"
                + "name = \"api\"\n"
                + "key = \"tenant\"\n"
                + "limit = \"plan\"\n"
                + resolver;
    }

    static String prefix() {
        return "jlive-" + UUID.randomUUID();
    }

    static int admitted(LivePolicy live, String tenant, int n) {
        int ok = 0;
        for (int i = 0; i < n; i++) {
            try (HttpPolicy p = live.current()) {
                HttpPolicy.Exchange ex = p.decide(HttpPolicy.Request.builder().method("GET").path("/api/x")
                        .peer("192.0.2.1").tenant(tenant).build());
                assertEquals(null, ex.failure());
                if (ex.answer().proceeds()) ok++;
            }
        }
        return ok;
    }

    @Test
    void plansAdmitTheirLimitsAndReloadChangesThem() {
        String prefix = prefix();
        try (LivePolicy live = LivePolicy.fromDocument(client, plans(prefix, "10/minute", ""), List.of())) {
            assertEquals(1, live.generation());
            assertEquals(10, admitted(live, "globex", 15));
            assertEquals(100, admitted(live, "acme", 110));
            // The step names the plan's limiter: its decision carries the plan's limit.
            try (HttpPolicy p = live.current()) {
                HttpPolicy.Step step = p.prepare(HttpPolicy.Request.builder().method("GET").path("/api/x")
                        .tenant("acme").build());
                assertEquals(HttpPolicy.Action.CHECK, step.action());
                assertEquals("tenant:acme", step.key());
                assertEquals(100, p.limiter(step).check(step.keyBytes(), 1).limit());
            }

            live.reload(plans(prefix, "20/minute", ""));
            assertEquals(2, live.generation());
            assertEquals(10, admitted(live, "globex", 15)); // 20 in the window, 10 used already

            // A broken document is refused, naming its line; the old limits stay.
            String broken = plans(prefix, "20/minute", "").replace("limit = \"plan\"", "limit = \"10/fortnight\"");
            InvalidArgumentException e = assertInvalid(() -> live.reload(broken));
            assertTrue(e.getMessage().contains("line 16"), e.getMessage());
            assertEquals(2, live.generation());
            assertEquals(0, admitted(live, "globex", 3));
            assertEquals(20, admitted(live, "initech", 25)); // another free tenant: the new limit
            String metrics = live.metricsPrometheus();
            assertTrue(metrics.contains("polylimit_http_policy_reloads_total"), metrics);
        }
    }

    @Test
    void theServletFilterChecksAndRefundsOnThePlansLimiter() throws Exception {
        String doc = "prefix = \"" + prefix() + "\"\ndefault_plan = \"free\"\n"
                + "[plans.free]\napi = \"2/minute\"\n[plans.pro]\napi = \"5/minute\"\n[tenants]\nacme = \"pro\"\n"
                + "[[rules]]\nname = \"api\"\nkey = \"tenant\"\nlimit = \"plan\"\ncount_when = \"failures\"\n";
        try (LivePolicy live = LivePolicy.fromDocument(client, doc, List.of());
             JettyServer s = JettyServer.start(io.polylimit.servlet.RateLimitFilter.builder().livePolicy(live)
                     .tenant(req -> req.getHeader("X-Tenant")).build())) {
            // Successes go back on acme's (pro) limiter: never denied.
            for (int i = 0; i < 7; i++) {
                var r = s.get("/x", "X-Tenant", "acme");
                assertEquals(200, r.statusCode());
                assertEquals("5", r.headers().firstValue("RateLimit-Limit").orElse(null));
            }
            List<Integer> codes = new java.util.ArrayList<>();
            for (int i = 0; i < 6; i++) codes.add(s.get("/x?status=401", "X-Tenant", "acme").statusCode());
            assertEquals(List.of(401, 401, 401, 401, 401, 429), codes);
            assertEquals(List.of(401, 401, 429), List.of(s.get("/x?status=401", "X-Tenant", "globex").statusCode(),
                    s.get("/x?status=401", "X-Tenant", "globex").statusCode(),
                    s.get("/x?status=401", "X-Tenant", "globex").statusCode()));
            live.reload(doc.replace("api = \"2/minute\"", "api = \"3/minute\""));
            assertEquals(List.of(401, 429), List.of(s.get("/x?status=401", "X-Tenant", "globex").statusCode(),
                    s.get("/x?status=401", "X-Tenant", "globex").statusCode()));
            assertEquals(401, s.get("/x", "X-Tenant", "").statusCode(), "no tenant: a missing credential");
        }
    }

    @Test
    void initParamsOpenAWatchedPolicyFile() throws Exception {
        Path dir = Files.createTempDirectory("polylimit-live");
        Path file = dir.resolve("policy.toml");
        String doc = "prefix = \"" + prefix() + "\"\n[[rules]]\nname = \"site\"\nkey = \"ip\"\nlimit = \"2/minute\"\n";
        Files.writeString(file, doc, StandardCharsets.UTF_8);
        try (JettyServer s = JettyServer.start(io.polylimit.servlet.RateLimitFilter.class,
                java.util.Map.of("url", redis.url(), "policy-file", file.toString(), "watch-ms", "50"))) {
            assertEquals(List.of(200, 200, 429), List.of(s.get("/a").statusCode(), s.get("/a").statusCode(),
                    s.get("/a").statusCode()));
            Path tmp = dir.resolve("policy.toml.new");
            Files.writeString(tmp, doc.replace("2/minute", "3/minute"), StandardCharsets.UTF_8);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            int status = 429;
            long deadline = System.nanoTime() + 1_000_000_000L;
            while (status == 429 && System.nanoTime() < deadline) {
                Thread.sleep(20);
                status = s.get("/a").statusCode();
            }
            assertEquals(200, status, "the rewritten file's limit within a second");
            assertEquals(429, s.get("/a").statusCode());
        } finally {
            Files.deleteIfExists(file);
            Files.delete(dir);
        }
    }

    @Test
    void aResolverThatThrowsOrIsSlowGivesTheDefaultPlan() {
        String resolver = "\n[resolver]\ntimeout_ms = 200\ncache_ttl_ms = 60000\n";
        AtomicInteger calls = new AtomicInteger();
        try (LivePolicy live = LivePolicy.builder(client).document(plans(prefix(), "10/minute", resolver))
                .resolver(tenant -> {
                    calls.incrementAndGet();
                    switch (tenant) {
                        case "throws":
                            throw new IllegalStateException("the plan store is down");
                        case "slow":
                            try {
                                Thread.sleep(3000);
                            } catch (InterruptedException ie) {
                                Thread.currentThread().interrupt();
                            }
                            return "pro";
                        default:
                            return "pro";
                    }
                }).build()) {
            assertEquals(10, admitted(live, "throws", 15));
            long t0 = System.nanoTime();
            assertEquals(10, admitted(live, "slow", 12)); // each request waits the deadline at most
            long perRequestMs = (System.nanoTime() - t0) / 1_000_000 / 12;
            assertTrue(perRequestMs < 600, "a slow resolver held a request " + perRequestMs + " ms");
            // A resolved tenant gets its plan, asked once (then cached by the core).
            int before = calls.get();
            assertEquals(100, admitted(live, "initech", 105));
            assertEquals(before + 1, calls.get());
        }
    }

    @Test
    void anAsyncResolverIsBoundedByTheDeadline() {
        String resolver = "\n[resolver]\ntimeout_ms = 100\n";
        try (LivePolicy live = LivePolicy.builder(client).document(plans(prefix(), "10/minute", resolver))
                .asyncResolver(tenant -> new CompletableFuture<String>()) // never completes
                .build()) {
            long t0 = System.nanoTime();
            assertEquals(10, admitted(live, "hooli", 11));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 11 * 400, "took " + ms + " ms");
        }
    }

    @Test
    void aDocumentWithAResolverNeedsOne() {
        String doc = plans(prefix(), "10/minute", "\n[resolver]\ntimeout_ms = 50\n");
        InvalidArgumentException e = assertInvalid(() -> LivePolicy.fromDocument(client, doc, List.of()));
        assertTrue(e.getMessage().contains("resolver"), e.getMessage());
        assertInvalid(() -> HttpPolicy.load(client, doc, List.of()));
    }

    @Test
    void aWatchedFileIsReloadedWhenRewritten() throws Exception {
        Path dir = Files.createTempDirectory("polylimit-live");
        Path file = dir.resolve("policy.toml");
        String prefix = prefix();
        Files.writeString(file, plans(prefix, "10/minute", ""), StandardCharsets.UTF_8);
        try (LivePolicy live = LivePolicy.open(client, file, Duration.ofMillis(50))) {
            assertEquals(10, admitted(live, "globex", 12));
            Path tmp = dir.resolve("policy.toml.new");
            Files.writeString(tmp, plans(prefix, "15/minute", ""), StandardCharsets.UTF_8);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            long deadline = System.nanoTime() + 1_000_000_000L;
            while (live.generation() < 2 && System.nanoTime() < deadline) Thread.sleep(10);
            assertEquals(2, live.generation());
            assertEquals(5, admitted(live, "globex", 8));
            // A broken file: refused, remembered, the old policy stays.
            Files.writeString(tmp, "[[rules]\n", StandardCharsets.UTF_8);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            deadline = System.nanoTime() + 1_000_000_000L;
            while (live.lastError().isEmpty() && System.nanoTime() < deadline) Thread.sleep(10);
            assertNotNull(live.lastError());
            assertTrue(live.lastError().contains("line 1"), live.lastError());
            assertEquals(2, live.generation());
        } finally {
            Files.deleteIfExists(file);
            Files.deleteIfExists(dir.resolve("policy.toml.new"));
            Files.delete(dir);
        }
    }
}
