package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylimit.servlet.ClientIp;
import io.polylimit.servlet.HeaderStyle;
import io.polylimit.servlet.KeyFunction;
import io.polylimit.servlet.MissingKey;
import io.polylimit.servlet.RateLimitFilter;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Collections;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The servlet filter in a real servlet container (embedded Jetty 12, ee10),
 * through real HTTP, against the real redis-server of ServerTestBase.
 * Expected header values are computed here from the limit and the window.
 */
class ServletFilterTest extends ServerTestBase {

    /** A prefix of its own per test: every test's key is the same loopback address. */
    static String prefix() {
        return "jt" + UUID.randomUUID().toString().substring(0, 8);
    }

    Limiter limiter(String spec, String prefix) {
        return client.limiterBuilder(spec).prefix(prefix).build();
    }

    static String header(HttpResponse<?> r, String name) {
        return r.headers().firstValue(name).orElse(null);
    }

    /**
     * The headers of a decision of a limit of `limit` per window (a countdown
     * started before the window's first check), `remaining` left.
     */
    static void assertRateLimitHeaders(HttpResponse<?> r, long limit, Countdown window, long remaining) {
        assertRateLimitHeaders(r, "default", limit, window, remaining);
    }

    /** As above for the rule {@code rule} (a path limit's rule is named after its pattern). */
    static void assertRateLimitHeaders(HttpResponse<?> r, String rule, long limit, Countdown window, long remaining) {
        long windowS = window.windowS();
        assertEquals(Long.toString(limit), header(r, "RateLimit-Limit"));
        assertEquals(Long.toString(remaining), header(r, "RateLimit-Remaining"));
        window.check("RateLimit-Reset", header(r, "RateLimit-Reset"));
        assertEquals("\"" + rule + "\";q=" + limit + ";w=" + windowS, header(r, "RateLimit-Policy"));
        assertEquals("\"" + rule + "\";r=" + remaining + ";t=" + header(r, "RateLimit-Reset"), header(r, "RateLimit"));
    }

    @Test
    void allowedThenTooManyRequestsWithExactHeaders() throws Exception {
        long limit = 3;
        Countdown window = new Countdown(60);
        String p = prefix();
        try (Limiter l = limiter("3/minute", p);
             JettyServer s = JettyServer.start(RateLimitFilter.builder().limit(l).build())) {
            for (long i = 1; i <= limit; i++) {
                HttpResponse<String> r = s.get("/hello");
                assertEquals(200, r.statusCode());
                assertEquals("ok /hello", r.body());
                assertRateLimitHeaders(r, limit, window, limit - i);
                assertNull(header(r, "Retry-After"), "no Retry-After when allowed");
            }
            HttpResponse<String> denied = s.get("/hello");
            assertEquals(429, denied.statusCode());
            assertEquals("Too Many Requests\n", denied.body());
            window.check("Retry-After", header(denied, "Retry-After"));
            assertRateLimitHeaders(denied, limit, window, 0);
            // The servlet never ran for the denied request; another path shares the default limit.
            assertEquals(429, s.get("/other").statusCode());
        }
    }

    @Test
    void exemptPathsAreNeitherCountedNorLabelled() throws Exception {
        String p = prefix();
        try (Limiter l = limiter("2/minute", p);
             JettyServer s = JettyServer.start(RateLimitFilter.builder().limit(l)
                     .exempt("/health", "/static/*").build())) {
            for (int i = 0; i < 5; i++) {
                HttpResponse<String> h = s.get("/health");
                assertEquals(200, h.statusCode());
                assertNull(header(h, "RateLimit-Limit"));
                assertEquals(200, s.get("/static/app.js").statusCode());
            }
            assertEquals(200, s.get("/static").statusCode());
            // None of those counted: the full limit is still there.
            HttpResponse<String> r = s.get("/hello");
            assertEquals(200, r.statusCode());
            assertEquals("1", header(r, "RateLimit-Remaining"));
            // Exact paths are exact: /healthz is not /health.
            assertEquals(200, s.get("/healthz").statusCode());
            assertEquals(429, s.get("/health/../hello").statusCode(), "normalised by the container: /hello");
        }
    }

    @Test
    void perPathLimitsAreSeparate() throws Exception {
        Countdown minute = new Countdown(60), tenSeconds = new Countdown(10);
        String p = prefix();
        // The rules' keys are the same (ip:<address>): each limiter counts under a prefix of its own.
        try (Limiter def = limiter("5/minute", p); Limiter login = limiter("2/minute", p + ":login");
             Limiter api = limiter("3/10s", p + ":api");
             JettyServer s = JettyServer.start(RateLimitFilter.builder().limit(def)
                     .pathLimit("/login", login).pathLimit("/api/*", api).build())) {
            HttpResponse<String> first = s.get("/login");
            assertEquals(200, first.statusCode());
            assertRateLimitHeaders(first, "/login", 2, minute, 1);
            assertEquals(200, s.get("/login").statusCode());
            HttpResponse<String> denied = s.get("/login");
            assertEquals(429, denied.statusCode());
            minute.check("Retry-After", header(denied, "Retry-After"));
            // The default limit did not pay for /login.
            HttpResponse<String> hello = s.get("/hello");
            assertEquals(200, hello.statusCode());
            assertRateLimitHeaders(hello, 5, minute, 4);
            // A prefix pattern covers the prefix and everything under it, with its own window.
            assertRateLimitHeaders(s.get("/api/users"), "/api/*", 3, tenSeconds, 2);
            assertRateLimitHeaders(s.get("/api"), "/api/*", 3, tenSeconds, 1);
            assertRateLimitHeaders(s.get("/api/users/7"), "/api/*", 3, tenSeconds, 0);
            HttpResponse<String> apiDenied = s.get("/api/x");
            assertEquals(429, apiDenied.statusCode());
            tenSeconds.check("Retry-After", header(apiDenied, "Retry-After"));
            // /apix is not under /api/*: the default limit.
            assertRateLimitHeaders(s.get("/apix"), 5, minute, 3);
        }
    }

    @Test
    void forwardedForOnlyFromTrustedProxies() throws Exception {
        String p = prefix();
        try (Limiter l = limiter("2/minute", p);
             JettyServer trusting = JettyServer.start(RateLimitFilter.builder().limit(l)
                     .trustedProxies("127.0.0.0/8", "10.0.0.0/8").build())) {
            // The peer (127.0.0.1) is a trusted proxy: the client is the rightmost untrusted hop.
            String xff = "X-Forwarded-For";
            assertEquals(200, trusting.get("/", xff, "203.0.113.5").statusCode());
            assertEquals(200, trusting.get("/", xff, "198.51.100.1, 203.0.113.5, 10.1.2.3").statusCode());
            assertEquals(429, trusting.get("/", xff, "203.0.113.5").statusCode(), "the same client twice before");
            // A client cannot escape by prepending hops of its own: only the right side counts.
            assertEquals(429, trusting.get("/", xff, "1.2.3.4, 203.0.113.5").statusCode());
            // Another client behind the proxy has its own limit.
            HttpResponse<String> other = trusting.get("/", xff, "203.0.113.6");
            assertEquals(200, other.statusCode());
            assertEquals("1", header(other, "RateLimit-Remaining"));
            // Two header instances read as one list; IPv6 spellings are one address.
            assertEquals(200, trusting.get("/", xff, "2001:db8::1").statusCode());
            assertEquals(200, trusting.get("/", xff, "9.9.9.9", xff, "[2001:DB8:0::1]:4711").statusCode());
            assertEquals(429, trusting.get("/", xff, "2001:db8:0:0:0:0:0:1").statusCode());
        }
        String q = prefix();
        try (Limiter l = limiter("2/minute", q);
             JettyServer direct = JettyServer.start(RateLimitFilter.builder().limit(l).build())) {
            // No trusted proxy: the header is the client's to write, so it is ignored.
            assertEquals(200, direct.get("/", "X-Forwarded-For", "203.0.113.1").statusCode());
            assertEquals(200, direct.get("/", "X-Forwarded-For", "203.0.113.2").statusCode());
            assertEquals(429, direct.get("/", "X-Forwarded-For", "203.0.113.3").statusCode());
        }
    }

    /**
     * A policy document through the filter over real HTTP: rules by path and
     * method, the deny list, keys by user (the application's hook), by the
     * application's own key, and by API key; count_when from the document.
     */
    @Test
    void fromADocument() throws Exception {
        String p = prefix();
        String doc = """
                {"deny": {"users": ["mallory"]},
                 "exempt": ["/health"],
                 "rules": [
                   {"name": "login", "paths": ["/login"], "methods": ["POST"], "limiter": 0, "key": "user",
                    "count_when": "failures"},
                   {"name": "app", "paths": ["/app/*"], "limiter": 1, "key": "app"},
                   {"name": "api", "paths": ["/api/*"], "limiter": 1, "key": ["api_key", "ip"]}]}
                """;
        try (Limiter login = limiter("2/minute", p + ":login"); Limiter other = limiter("2/minute", p);
             JettyServer s = JettyServer.start(RateLimitFilter.builder().document(doc, List.of(login, other))
                     .user(req -> req.getHeader("X-User")).appKey(req -> req.getParameter("k")).build())) {
            assertEquals(403, s.get("/login", "X-User", "mallory").statusCode());
            assertEquals(403, s.get("/health", "X-User", "mallory").statusCode(), "the deny list comes first");
            // A GET of /login matches no rule: through, no headers.
            assertNull(header(s.get("/login"), "RateLimit-Limit"));
            HttpResponse<String> anon = s.post("/login");
            assertEquals(401, anon.statusCode(), "the user key is a credential");
            assertEquals("no credential to rate-limit the request by\n", anon.body());
            // Successful logins are refunded (count_when failures); failures count.
            for (int i = 0; i < 3; i++) assertEquals(200, s.post("/login", "X-User", "ann").statusCode());
            assertEquals(List.of(401, 401, 429), List.of(s.post("/login?status=401", "X-User", "ann").statusCode(),
                    s.post("/login?status=401", "X-User", "ann").statusCode(),
                    s.post("/login?status=401", "X-User", "ann").statusCode()));
            HttpResponse<String> r = s.get("/app/x?k=tenant-7");
            assertEquals("\"app\";q=2;w=60", header(r, "RateLimit-Policy"));
            assertEquals(400, s.get("/app/x").statusCode(), "no application key");
            assertEquals(200, s.get("/api/x", "X-API-Key", "secret-1").statusCode());
        }
        try (Client c = Client.open("memory://"); Limiter l = c.limiter("1/minute")) {
            assertThrows(IllegalArgumentException.class,
                    () -> RateLimitFilter.builder().document("{\"rules\": []}", List.of(l)).limit(l).build());
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> RateLimitFilter.fromDocument("{\"rules\": [{\"name\": \"a\", \"limiter\": 0, \"key\": \"ipv7\"}]}",
                            List.of(l)));
            assertTrue(e.getMessage().contains("unknown key part \"ipv7\""), e.getMessage());
        }
    }

    /** The options are written into a document: the rules in order of specificity. */
    @Test
    void optionsBecomeADocument() {
        try (Client c = Client.open("memory://"); Limiter a = c.limiter("1/minute"); Limiter b = c.limiter("2/minute")) {
            RateLimitFilter f = RateLimitFilter.builder().limit(a).pathLimit("/api/*", b).pathLimit("/api/login", b)
                    .exempt("/static/*").trustedProxies("10.0.0.0/8").key(KeyFunction.apiKey("X-Key")
                            .orElse(KeyFunction.clientIp(ClientIp.direct())))
                    .countWhen(status -> status == 401 || status >= 500).build();
            assertEquals("{\"trusted_proxies\":[\"10.0.0.0/8\"],\"exempt\":[\"/static\",\"/static/*\"],\"rules\":["
                    + "{\"name\":\"/api/login\",\"paths\":[\"/api/login\"],\"limiter\":0,\"key\":[\"api_key:X-Key\",\"ip\"],"
                    + "\"count_when\":[401,\"500-999\"]},"
                    + "{\"name\":\"/api/*\",\"paths\":[\"/api\",\"/api/*\"],\"limiter\":0,\"key\":[\"api_key:X-Key\",\"ip\"],"
                    + "\"count_when\":[401,\"500-999\"]},"
                    + "{\"name\":\"default\",\"limiter\":1,\"key\":[\"api_key:X-Key\",\"ip\"],"
                    + "\"count_when\":[401,\"500-999\"]}]}", f.document());
            assertEquals(List.of("/api/login", "/api/*", "default"), f.policy().ruleNames());
        }
    }

    @Test
    void clientIpResolution() {
        ClientIp ip = ClientIp.trusting("10.0.0.0/8", "::1");
        assertEquals("192.0.2.1", ip.resolve("192.0.2.1", hops("6.6.6.6")), "untrusted peer: header ignored");
        assertEquals("6.6.6.6", ip.resolve("10.0.0.1", hops("6.6.6.6")));
        assertEquals("6.6.6.6", ip.resolve("0:0:0:0:0:0:0:1", hops("7.7.7.7, 6.6.6.6, 10.9.9.9")));
        assertEquals("10.0.0.2", ip.resolve("10.0.0.1", hops("10.0.0.2")), "all trusted: the leftmost");
        assertEquals("10.0.0.1", ip.resolve("10.0.0.1", hops("unknown")), "garbage: the proxy that wrote it");
        assertEquals("10.0.0.1", ip.resolve("10.0.0.1", hops("example.com")), "never a DNS lookup");
        assertEquals("10.0.0.1", ip.resolve("10.0.0.1", hops("300.1.1.1")));
        assertEquals("6.6.6.6", ip.resolve("10.0.0.1", hops("6.6.6.6:8080")));
        assertEquals("1.2.3.4", ip.resolve("10.0.0.1", hops("::ffff:1.2.3.4")), "IPv4-mapped is IPv4");
        assertEquals("10.0.0.1", ip.resolve("10.0.0.1", null));
        assertTrue(ip.isTrusted("10.255.0.1"));
        assertFalse(ip.isTrusted("11.0.0.1"));
        assertEquals("6.6.6.6", ClientIp.direct().resolve("6.6.6.6", hops("1.1.1.1")));
        assertThrows(IllegalArgumentException.class, () -> ClientIp.trusting("10.0.0.0/33"));
        assertThrows(IllegalArgumentException.class, () -> ClientIp.trusting("proxy.internal"));
        assertThrows(IllegalArgumentException.class, () -> ClientIp.trusting("10.0.0.0/x"));
        assertTrue(ClientIp.trusting("fd00::/8").isTrusted("fd12::1"));
        assertFalse(ClientIp.trusting("fd00::/8").isTrusted("fe80::1"));
        assertTrue(ClientIp.trusting("0.0.0.0/0").isTrusted("8.8.8.8"));
    }

    private static Enumeration<String> hops(String... values) {
        return Collections.enumeration(List.of(values));
    }

    @Test
    void customKeyFunction() throws Exception {
        String p = prefix();
        KeyFunction byUser = req -> {
            String u = req.getParameter("user");
            return u == null ? null : "user:" + u;
        };
        try (Limiter l = limiter("1/minute", p);
             JettyServer s = JettyServer.start(RateLimitFilter.builder().limit(l).key(byUser).build())) {
            assertEquals(200, s.get("/?user=ann").statusCode());
            assertEquals(429, s.get("/?user=ann").statusCode());
            assertEquals(200, s.get("/?user=bob").statusCode());
            // No key: refused (the default, MissingKey.REJECT), no headers.
            HttpResponse<String> anon = s.get("/");
            assertEquals(400, anon.statusCode());
            assertNull(header(anon, "RateLimit-Limit"));
        }
    }

    /**
     * The rule every language shares (docs/integrations/README.md): a request
     * without a key is refused by default, 401 when the key function is a
     * credential and 400 otherwise, never counted and never reaching the
     * servlet; SKIP, asked for by name, lets it through unlimited.
     */
    @Test
    void missingKeysAreRejectedUnlessSkipped() throws Exception {
        KeyFunction tenant = req -> {
            String t = req.getHeader("X-Tenant");
            return t == null ? null : "tenant:" + t;
        };
        try (Limiter credential = limiter("2/minute", prefix());
             Limiter plain = limiter("2/minute", prefix());
             Limiter skipped = limiter("2/minute", prefix());
             Limiter own = limiter("2/minute", prefix());
             JettyServer c = JettyServer.start(RateLimitFilter.builder().limit(credential)
                     .key(KeyFunction.apiKey("X-API-Key")).build());
             JettyServer p = JettyServer.start(RateLimitFilter.builder().limit(plain).key(tenant).build());
             JettyServer s = JettyServer.start(RateLimitFilter.builder().limit(skipped)
                     .key(KeyFunction.apiKey("X-API-Key")).onMissingKey(MissingKey.SKIP).build());
             JettyServer o = JettyServer.start(RateLimitFilter.builder().limit(own)
                     .key(KeyFunction.credential(tenant)).build())) {
            for (int i = 0; i < 3; i++) { // more than the limit: refused every time, never a 429
                HttpResponse<String> r = c.get("/hello");
                assertEquals(401, r.statusCode());
                assertEquals("no credential to rate-limit the request by\n", r.body());
                assertNull(header(r, "RateLimit-Limit"));
                assertNull(header(r, "Retry-After"));
                r = p.get("/hello");
                assertEquals(400, r.statusCode());
                assertEquals("no rate-limit key in the request\n", r.body());
                assertNull(header(r, "RateLimit-Limit"));
                // The contract has no credential of the application's own: its missing key is a 400.
                assertEquals(400, o.get("/hello").statusCode(), "a function of the application's, as a credential");
            }
            for (int i = 0; i < 5; i++) {
                HttpResponse<String> r = s.get("/hello");
                assertEquals(200, r.statusCode(), "SKIP: through, unlimited");
                assertNull(header(r, "RateLimit-Limit"));
            }
            // With a key, each is limited as usual: nothing above was counted.
            for (JettyServer server : List.of(c, s)) {
                assertEquals(List.of(200, 200, 429), List.of(server.get("/hello", "X-API-Key", "k").statusCode(),
                        server.get("/hello", "X-API-Key", "k").statusCode(),
                        server.get("/hello", "X-API-Key", "k").statusCode()));
            }
            assertEquals(List.of(200, 200, 429), List.of(p.get("/hello", "X-Tenant", "t").statusCode(),
                    p.get("/hello", "X-Tenant", "t").statusCode(), p.get("/hello", "X-Tenant", "t").statusCode()));
        }
        // By init-params: api-key:<Name> is a credential; on-missing-key=skip.
        Map<String, String> params = new LinkedHashMap<>();
        params.put("url", redis.url());
        params.put("limit", "2/minute");
        params.put("key", "api-key:X-API-Key");
        params.put("prefix", prefix());
        try (JettyServer s = JettyServer.start(RateLimitFilter.class, params)) {
            assertEquals(401, s.get("/hello").statusCode());
            assertEquals(200, s.get("/hello", "X-API-Key", "k").statusCode());
        }
        params.put("on-missing-key", "skip");
        params.put("prefix", prefix());
        try (JettyServer s = JettyServer.start(RateLimitFilter.class, params)) {
            for (int i = 0; i < 3; i++) assertEquals(200, s.get("/hello").statusCode());
        }
    }

    @Test
    void missingKeyDefaultIsReject() {
        // Every way to make a filter starts from REJECT; SKIP only by name.
        assertEquals(MissingKey.REJECT, MissingKey.values()[0]);
        try (Limiter l = limiter("1/minute", prefix())) {
            RateLimitFilter f = RateLimitFilter.builder().limit(l).build();
            assertTrue(f.toString().contains("onMissingKey=reject"), f.toString());
        }
        assertEquals(MissingKey.SKIP, MissingKey.fromParam(" Skip "));
        assertEquals("reject", MissingKey.REJECT.paramValue());
        assertTrue(KeyFunction.apiKey("X-API-Key").isCredential());
        assertFalse(KeyFunction.header("X-API-Key").isCredential());
        assertTrue(KeyFunction.header("A").orElse(KeyFunction.apiKey("B")).isCredential());
        assertFalse(KeyFunction.header("A").orElse(KeyFunction.clientIp(ClientIp.direct())).isCredential());
    }

    @Test
    @SuppressWarnings("deprecation") // errorStatus: kept for compatibility
    void failuresAnswerTheErrorStatus() throws Exception {
        // Nothing listens on this port: connection refused, the ERROR policy throws.
        try (Client dead = Client.open("redis://127.0.0.1:" + RedisServer.freePort());
             Limiter l = dead.limiter("5/minute");
             Limiter open = dead.limiterBuilder("5/minute").onFailure(Limiter.FailurePolicy.OPEN).build();
             JettyServer s = JettyServer.start(RateLimitFilter.builder().limit(l).build());
             JettyServer custom = JettyServer.start(RateLimitFilter.builder().limit(l).errorStatus(500).build());
             JettyServer failOpen = JettyServer.start(RateLimitFilter.builder().limit(open).build())) {
            HttpResponse<String> r = s.get("/hello");
            assertEquals(503, r.statusCode());
            assertEquals("Rate limiter unavailable\n", r.body());
            assertNull(header(r, "RateLimit-Limit"));
            assertEquals(500, custom.get("/hello").statusCode());
            // The limiter's failure policy decides first: OPEN admits (a degraded decision).
            assertEquals(200, failOpen.get("/hello").statusCode());
        }
        // A broken key function is a failure too, never an exception for the container.
        try (Limiter l = limiter("5/minute", prefix());
             JettyServer s = JettyServer.start(RateLimitFilter.builder().limit(l)
                     .key(req -> { throw new IllegalStateException("boom"); }).build())) {
            assertEquals(503, s.get("/").statusCode());
        }
    }

    /**
     * countWhen: only failed logins count (successes are refunded after the
     * servlet); the check still comes first, so a key over its limit is
     * refused even for a request that would not count. By init-param too.
     */
    @Test
    void countWhenCountsOnlyMatchingResponses() throws Exception {
        KeyFunction byUser = req -> req.getHeader("X-User");
        try (Limiter l = limiter("2/minute", prefix());
             JettyServer s = JettyServer.start(RateLimitFilter.builder().limit(l).key(byUser)
                     .countWhen(RateLimitFilter.FAILURES).build())) {
            for (int i = 0; i < 4; i++) assertEquals(200, s.get("/login", "X-User", "ann").statusCode());
            assertEquals(List.of(401, 401, 429), List.of(s.get("/login?status=401", "X-User", "ann").statusCode(),
                    s.get("/login?status=401", "X-User", "ann").statusCode(),
                    s.get("/login?status=401", "X-User", "ann").statusCode()));
            assertEquals(429, s.get("/login", "X-User", "ann").statusCode(), "over the limit: refused first");
            assertEquals(401, s.get("/login?status=401", "X-User", "bob").statusCode());
            assertEquals(400, s.get("/login").statusCode(), "the missing-key rule is unchanged");
        }
        Map<String, String> params = new LinkedHashMap<>();
        params.put("url", redis.url());
        params.put("limit", "2/minute");
        params.put("prefix", prefix());
        params.put("count-when", "401, 403");
        try (JettyServer s = JettyServer.start(RateLimitFilter.class, params)) {
            for (int i = 0; i < 3; i++) assertEquals(500, s.get("/?status=500").statusCode(), "500 does not count");
            assertEquals(List.of(403, 401, 429), List.of(s.get("/?status=403").statusCode(),
                    s.get("/?status=401").statusCode(), s.get("/?status=401").statusCode()));
        }
    }

    /** The pattern of countWhen by hand, as docs/integrations/java.md shows it for code without the filter. */
    @Test
    void countWhenByHand() {
        try (Limiter limiter = limiter("2/minute", prefix())) {
            List<Integer> got = new java.util.ArrayList<>();
            for (int answer : new int[] {200, 200, 200, 401, 401, 401, 200}) {
                String key = "user:ann";
                Decision d = limiter.check(key);
                if (!d.allowed()) {
                    got.add(429);
                    continue;
                }
                int status = answer; // the work
                if (status < 400 && !d.degraded()) limiter.refund(key, 1); // a success: give the unit back
                got.add(status);
            }
            assertEquals(List.of(200, 200, 200, 401, 401, 429, 429), got);
        }
    }

    @Test
    void configuredByInitParams() throws Exception {
        String p = prefix();
        Map<String, String> params = new LinkedHashMap<>();
        params.put("url", redis.url());
        params.put("limit", "3 per minute");
        params.put("path-limit:/login", "1/minute");
        params.put("exempt", "/health, /metrics");
        params.put("key", "header:X-API-Key");
        params.put("prefix", p);
        params.put("header-style", "structured");
        params.put("client-name", "web");
        Countdown minute = new Countdown(60);
        try (JettyServer s = JettyServer.start(RateLimitFilter.class, params)) {
            HttpResponse<String> r = s.get("/hello", "X-API-Key", "k1");
            assertEquals(200, r.statusCode());
            // structured: the draft's two fields only.
            assertEquals("\"default\";q=3;w=60", header(r, "RateLimit-Policy"));
            assertTrue(header(r, "RateLimit").startsWith("\"default\";r=2;t="), header(r, "RateLimit"));
            minute.checkT("RateLimit", header(r, "RateLimit"));
            assertNull(header(r, "RateLimit-Limit"));
            assertEquals(200, s.get("/hello", "X-API-Key", "k1").statusCode());
            assertEquals(200, s.get("/hello", "X-API-Key", "k1").statusCode());
            HttpResponse<String> denied = s.get("/hello", "X-API-Key", "k1");
            assertEquals(429, denied.statusCode());
            minute.check("Retry-After on 429 in every style", header(denied, "Retry-After"));
            // Another API key, its own limit; no API key: the client IP.
            assertTrue(header(s.get("/hello", "X-API-Key", "k2"), "RateLimit").startsWith("\"default\";r=2;t="));
            assertTrue(header(s.get("/hello"), "RateLimit").startsWith("\"default\";r=2;t="));
            assertEquals(200, s.get("/login").statusCode());
            assertEquals(429, s.get("/login").statusCode());
            assertEquals(200, s.get("/health").statusCode());
        }
        // The state is in Redis under the contract's key, the SHA-256 (hex) of the API key, never the key itself.
        String digest = java.util.HexFormat.of().formatHex(
                MessageDigest.getInstance("SHA-256").digest("k1".getBytes(StandardCharsets.UTF_8)));
        try (Limiter l = client.limiterBuilder("3 per minute").prefix(p).build()) {
            assertEquals(0, l.peek("header:x-api-key:" + digest).remaining());
            assertEquals(3, l.peek("header:x-api-key:k1").remaining());
        }
    }

    @Test
    @SuppressWarnings("deprecation") // headerStyle: kept for compatibility
    void headerStyles() throws Exception {
        Countdown minute = new Countdown(60);
        String p = prefix();
        try (Limiter l = limiter("1/minute", p);
             JettyServer sep = JettyServer.start(RateLimitFilter.builder().limit(l)
                     .headerStyle(HeaderStyle.SEPARATE).build())) {
            HttpResponse<String> r = sep.get("/");
            assertEquals("1", header(r, "RateLimit-Limit"));
            assertNull(header(r, "RateLimit-Policy"));
            assertNull(header(r, "RateLimit"));
        }
        try (Limiter l = limiter("1/minute", prefix());
             JettyServer none = JettyServer.start(RateLimitFilter.builder().limit(l)
                     .headerStyle(HeaderStyle.RETRY_AFTER_ONLY).build())) {
            HttpResponse<String> ok = none.get("/");
            assertNull(header(ok, "RateLimit-Limit"));
            assertNull(header(ok, "RateLimit"));
            HttpResponse<String> denied = none.get("/");
            assertEquals(429, denied.statusCode());
            minute.check("Retry-After", header(denied, "Retry-After"));
            assertNull(header(denied, "RateLimit-Remaining"));
        }
        assertEquals(HeaderStyle.RETRY_AFTER_ONLY, HeaderStyle.fromParam("retry-after-only"));
        assertThrows(IllegalArgumentException.class, () -> HeaderStyle.fromParam("draft-7"));
    }

    @Test
    void badInitParamsFailInit() {
        Map<String, String> base = Map.of("url", redis.url(), "limit", "5/minute");
        assertInitFails(with(base, "limt", "5/minute"), "unknown init-param \"limt\"");
        assertInitFails(with(base, "limit", "5/fortnight"), "fortnight");
        assertInitFails(with(base, "algorithm", "leaky"), "algorithm \"leaky\"");
        assertInitFails(with(base, "failure-policy", "maybe"), "failure-policy");
        assertInitFails(with(base, "error-status", "200"), "out of range 400..599");
        assertInitFails(with(base, "trusted-proxies", "proxy.internal"), "proxy.internal");
        assertInitFails(with(base, "key", "cookie:sid"), "key \"cookie:sid\"");
        assertInitFails(with(base, "key", "class:java.lang.String"), "not a KeyFunction");
        assertInitFails(with(base, "on-missing-key", "allow"), "on-missing-key \"allow\": expected reject or skip");
        assertInitFails(with(base, "count-when", "errors"), "count-when \"errors\": expected failures");
        assertInitFails(with(base, "path-limit:login", "1/minute"), "must start with '/'");
        assertInitFails(Map.of("url", redis.url()), "no limit");
        // No url and no POLYLIMIT_URL (surefire runs without it): the core's refusal, no default.
        assertInitFails(Map.of("limit", "5/minute"), "POLYLIMIT_URL is not set");
        // Both ways at once.
        RateLimitFilter built = RateLimitFilter.builder().limit(client.limiter("5/minute")).build();
        ServletException e = assertThrows(ServletException.class, () -> built.init(config(Map.of("limit", "1/s"))));
        assertTrue(e.getMessage().contains("configure one way only"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> RateLimitFilter.builder().build());
    }

    @Test
    void initParamFailurePolicyAndAlgorithm() throws Exception {
        Map<String, String> params = new LinkedHashMap<>();
        params.put("url", "redis://127.0.0.1:" + RedisServer.freePort()); // nothing listens
        params.put("limit", "10/s burst 20");
        params.put("algorithm", "gcra");
        params.put("failure-policy", "open");
        try (JettyServer s = JettyServer.start(RateLimitFilter.class, params)) {
            assertEquals(200, s.get("/").statusCode(), "fail open");
        }
        params.put("failure-policy", "error");
        params.put("error-status", "502");
        try (JettyServer s = JettyServer.start(RateLimitFilter.class, params)) {
            assertEquals(502, s.get("/").statusCode());
        }
    }

    private static Map<String, String> with(Map<String, String> base, String k, String v) {
        Map<String, String> m = new LinkedHashMap<>(base);
        m.put(k, v);
        return m;
    }

    private static void assertInitFails(Map<String, String> params, String expected) {
        RateLimitFilter f = new RateLimitFilter();
        ServletException e = assertThrows(ServletException.class, () -> f.init(config(params)));
        assertTrue(e.getMessage().contains(expected), "expected \"" + expected + "\" in: " + e.getMessage());
        f.destroy();
    }

    private static FilterConfig config(Map<String, String> params) {
        return new FilterConfig() {
            @Override
            public String getFilterName() {
                return "polylimit";
            }

            @Override
            public ServletContext getServletContext() {
                return null;
            }

            @Override
            public String getInitParameter(String name) {
                return params.get(name);
            }

            @Override
            public Enumeration<String> getInitParameterNames() {
                return Collections.enumeration(params.keySet());
            }
        };
    }

}
