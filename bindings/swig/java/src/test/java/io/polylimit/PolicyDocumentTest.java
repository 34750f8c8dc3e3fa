package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The policy document in code: docs/examples/policy.toml built with
 * {@link PolicyDocument} decides every request as the file does; the JSON it
 * writes; a wrong document refused with the core's message.
 */
class PolicyDocumentTest {
    /** docs/examples/policy.toml, in code. */
    static PolicyDocument example() {
        return PolicyDocument.builder()
                .version(1)
                .prefix("shop")
                .trustedProxies("10.0.0.0/8")
                .defaultPlan("free")
                .plan("free", ordered("api", "10/minute", "search", "2/second"))
                .plan("pro", ordered("api", "100/minute", "search", "10/second"))
                .plan("enterprise", ordered("api", "1000/minute; 50/second", "search", "100/second"))
                .tenant("acme", "pro")
                .tenant("initech", "enterprise")
                .deny(PolicyDocument.lists().ips("203.0.113.0/24"))
                .rule(PolicyDocument.rule("health").paths("/healthz").noLimit())
                .rule(PolicyDocument.rule("login").paths("/login").methods("POST").key("ip").limit("5/minute")
                        .countWhen(PolicyDocument.CountWhen.FAILURES))
                .rule(PolicyDocument.rule("search").paths("/api/search*").key("tenant").planLimit()
                        .algorithm(Limiter.Algorithm.GCRA))
                .rule(PolicyDocument.rule("api").paths("/api/*").key("tenant").limit("plan"))
                .build();
    }

    static Map<String, String> ordered(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    static String exampleFile() throws Exception {
        Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        while (dir != null && !Files.exists(dir.resolve("docs/examples/policy.toml"))) dir = dir.getParent();
        assertNotNull(dir, "docs/examples/policy.toml above " + System.getProperty("user.dir"));
        return Files.readString(dir.resolve("docs/examples/policy.toml"), StandardCharsets.UTF_8);
    }

    /** The requests of the comparison, each sent several times so that the limits' state moves. */
    static List<HttpPolicy.Request> requests() {
        List<HttpPolicy.Request> out = new ArrayList<>();
        for (String tenant : new String[] {"acme", "initech", "globex", null}) {
            for (String path : new String[] {"/api/orders", "/api/search", "/healthz"}) {
                out.add(HttpPolicy.Request.builder().method("GET").path(path).peer("192.0.2.10").tenant(tenant)
                        .build());
            }
        }
        HttpPolicy.Request login = HttpPolicy.Request.builder().method("POST").path("/login").peer("10.0.0.1")
                .header("X-Forwarded-For", "198.51.100.7").build();
        HttpPolicy.Request denied = HttpPolicy.Request.builder().method("GET").path("/api/orders").peer("10.0.0.1")
                .header("X-Forwarded-For", "203.0.113.9").tenant("acme").build();
        out.add(login);
        out.add(denied);
        // Each one 7 times in a row: past login's 5/minute and search's 2/second.
        List<HttpPolicy.Request> repeated = new ArrayList<>();
        for (HttpPolicy.Request r : out) for (int i = 0; i < 7; i++) repeated.add(r);
        return repeated;
    }

    /** What a request gives on one policy: its step, its limiter's limit and its answer. */
    static String outcome(HttpPolicy p, HttpPolicy.Request r, Instant at) {
        HttpPolicy.Step step = p.prepare(r);
        StringBuilder s = new StringBuilder();
        s.append(step.action()).append(" rule=").append(step.ruleName()).append(" status=").append(step.status())
                .append(" key=").append(step.key()).append(" cost=").append(step.cost());
        Decision d = null;
        if (step.action() == HttpPolicy.Action.CHECK) {
            Limiter l = p.limiter(step);
            d = l.checkAt(step.keyBytes(), step.cost(), at);
            // The limit the plan gave (the answer's RateLimit-Policy says its name and window).
            s.append(" limit=").append(d.limit());
        }
        HttpPolicy.Answer a = p.answer(step, d);
        s.append(" answer=").append(a.status()).append(' ').append(a.headers());
        return s.toString();
    }

    /** The RateLimit-Policy header of an outcome. */
    static String policyHeader(String outcome) {
        return outcome.replaceAll(".*RateLimit-Policy, value=([^\\]]*)\\].*", "$1");
    }

    @Test
    void theExampleInCodeDecidesAsTheFile() throws Exception {
        String file = exampleFile();
        PolicyDocument doc = example();
        // Two in-memory stores, one per document: each request moves both the same way.
        try (Client fc = Client.open("memory://"); Client dc = Client.open("memory://");
             LivePolicy fromFile = LivePolicy.builder(fc).document(file).build();
             LivePolicy fromCode = LivePolicy.builder(dc).document(doc).build()) {
            Set<HttpPolicy.Action> actions = EnumSet.noneOf(HttpPolicy.Action.class);
            Set<String> limits = new java.util.TreeSet<>();
            int admitted = 0;
            int denied = 0;
            // The same time for both (not the clock's: the comparison must not
            // depend on how long each check took), 100 ms further each request:
            // a GCRA limit refills between requests, a sliding log does not.
            Instant at = Instant.now();
            for (HttpPolicy.Request r : requests()) {
                String want;
                String got;
                at = at.plusMillis(100);
                try (HttpPolicy pf = fromFile.current(); HttpPolicy pd = fromCode.current()) {
                    want = outcome(pf, r, at);
                    got = outcome(pd, r, at);
                    HttpPolicy.Step step = pf.prepare(r);
                    actions.add(step.action());
                    if (step.action() == HttpPolicy.Action.CHECK) {
                        limits.add(step.ruleName() + " " + policyHeader(want));
                    }
                }
                assertEquals(want, got, "the builder's document decided otherwise than the file");
                if (want.contains(" answer=0 ") && want.startsWith("CHECK")) admitted++;
                if (want.contains(" answer=429 ")) denied++;
            }
            // The comparison covered what the file says: checks on each plan, the
            // exemption, the deny list, a 401 without a tenant, admissions and denials.
            assertEquals(EnumSet.of(HttpPolicy.Action.CHECK, HttpPolicy.Action.PROCEED, HttpPolicy.Action.RESPOND),
                    actions);
            assertEquals(Set.of("api \"api\";q=10;w=60", "api \"api\";q=100;w=60",
                    "api \"api-1000-per-60s\";q=1000;w=60, \"api-50-per-1s\";q=50;w=1",
                    "search \"search\";q=2;w=1", "search \"search\";q=10;w=1", "search \"search\";q=100;w=1",
                    "login \"login\";q=5;w=60"), limits);
            assertTrue(admitted > 0 && denied > 0, "admitted " + admitted + ", denied " + denied);
        }
    }

    @Test
    void theJsonIsTheDocument() {
        PolicyDocument doc = PolicyDocument.builder()
                .prefix("p")
                .ipv4Prefix(24)
                .ipv6Prefix(48)
                .apiKeyHeader("X-Key")
                .exempt("/metrics")
                .allow(PolicyDocument.lists().users("root").tenants("internal"))
                .deny(PolicyDocument.lists().ips("192.0.2.0/24").apiKeys("sha256:" + "0".repeat(64)))
                .sendHeaders(false)
                .onError(PolicyDocument.OnError.ALLOW)
                .plan("free", Map.of("api", "10/minute"))
                .defaultPlan("free")
                .tenants(Map.of("acme", "free"))
                .resolver(PolicyDocument.resolver().timeout(Duration.ofMillis(30)).cacheTtl(Duration.ofSeconds(5))
                        .cacheSize(100))
                .rule(PolicyDocument.rule("up").routes("/users/{id}").methods("PUT").limiter(0)
                        .keyAlternatives("api_key", "ip").credential(false)
                        .cost(PolicyDocument.headerCost("X-Cost").orDefault(2).max(50))
                        .onMissingKey(PolicyDocument.OnMissingKey.SKIP)
                        .countWhen(PolicyDocument.CountWhen.statuses(401).statusClass(5).range(400, 403)))
                .rule(PolicyDocument.rule("rest").planLimit("api").cost(3))
                .build();
        assertEquals("{\"prefix\":\"p\",\"ipv4_prefix\":24,\"ipv6_prefix\":48,\"api_key_header\":\"X-Key\","
                + "\"exempt\":[\"/metrics\"],\"allow\":{\"users\":[\"root\"],\"tenants\":[\"internal\"]},"
                + "\"deny\":{\"ips\":[\"192.0.2.0/24\"],\"api_keys\":[\"sha256:" + "0".repeat(64) + "\"]},"
                + "\"send_headers\":false,\"on_error\":\"allow\",\"default_plan\":\"free\","
                + "\"resolver\":{\"timeout_ms\":30,\"cache_ttl_ms\":5000,\"cache_size\":100},"
                + "\"plans\":{\"free\":{\"api\":\"10/minute\"}},\"tenants\":{\"acme\":\"free\"},"
                + "\"rules\":[{\"name\":\"up\",\"routes\":[\"/users/{id}\"],\"methods\":[\"PUT\"],\"limiter\":0,"
                + "\"key\":[\"api_key\",\"ip\"],\"credential\":false,"
                + "\"cost\":{\"header\":\"X-Cost\",\"default\":2,\"max\":50},\"on_missing_key\":\"skip\","
                + "\"count_when\":[401,\"5xx\",\"400-403\"]},"
                + "{\"name\":\"rest\",\"limit\":\"plan:api\",\"cost\":3}]}", doc.toJson());
        // The core reads it all: with the application's limiter and a resolver, it is a policy.
        try (Client c = Client.open("memory://"); Limiter l = c.limiter("5/minute");
             LivePolicy live = LivePolicy.builder(c).document(doc).limiters(List.of(l)).resolver(t -> "free")
                     .build()) {
            try (HttpPolicy p = live.current()) {
                assertEquals(List.of("up", "rest"), p.ruleNames());
                assertEquals(30, p.resolverTimeoutMs());
            }
        }
        // Immutable: a rule's methods return new rules.
        PolicyDocument.Rule r = PolicyDocument.rule("x");
        r.paths("/a");
        assertEquals("{\"name\":\"x\"}", r.toString());
    }

    @Test
    void aWrongDocumentIsRefusedWithTheCoresMessage() {
        PolicyDocument wrong = PolicyDocument.builder()
                .rule(PolicyDocument.rule("login").paths("/login").key("ipv7").limit("5/minute"))
                .build();
        try (Client c = Client.open("memory://")) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> LivePolicy.fromDocument(c, wrong, List.of()));
            assertTrue(e.getMessage().contains("rules[0] (\"login\").key: unknown key part \"ipv7\""), e.getMessage());
            assertThrows(InvalidArgumentException.class, () -> HttpPolicy.load(c, wrong, List.of()));

            // On reload: refused, the message kept, the old policy in force.
            try (LivePolicy live = LivePolicy.fromDocument(c, example(), List.of())) {
                PolicyDocument noPlan = PolicyDocument.builder().prefix("shop").defaultPlan("gold")
                        .plan("free", Map.of("api", "10/minute"))
                        .rule(PolicyDocument.rule("api").key("tenant").planLimit()).build();
                InvalidArgumentException r = assertThrows(InvalidArgumentException.class, () -> live.reload(noPlan));
                assertTrue(r.getMessage().contains("default_plan"), r.getMessage());
                assertEquals(1, live.generation());
                assertTrue(live.lastError().contains("default_plan"), live.lastError());
                try (HttpPolicy p = live.current()) {
                    assertEquals(List.of("health", "login", "search", "api"), p.ruleNames());
                }
            }
        }
    }
}
