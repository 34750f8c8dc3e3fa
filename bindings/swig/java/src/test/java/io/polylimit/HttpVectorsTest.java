package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The HTTP contract's golden vectors (tests/http/vectors.json), through the
 * binding's public API: HttpPolicy.fromDocument with memory:// limiters, then
 * prepare, answer and refundDue for every case. The same file is checked by
 * every language's suite and by the C ABI's test.
 */
class HttpVectorsTest {

    @SuppressWarnings("unchecked")
    static Map<String, Object> vectors() throws Exception {
        Path dir = Paths.get(System.getProperty("user.dir")).toAbsolutePath();
        while (dir != null && !Files.exists(dir.resolve("tests/http/vectors.json"))) dir = dir.getParent();
        assertNotNull(dir, "tests/http/vectors.json above " + System.getProperty("user.dir"));
        String text = Files.readString(dir.resolve("tests/http/vectors.json"), StandardCharsets.UTF_8);
        return (Map<String, Object>) TestJson.parse(text);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object o) {
        return (List<Object>) o;
    }

    /** One suite's client, limiters and policy. */
    static final class Suite implements AutoCloseable {
        final Client client = Client.open("memory://");
        final List<Limiter> limiters = new ArrayList<>();
        final HttpPolicy policy;

        Suite(Map<String, Object> s) {
            for (Object spec : list(s.get("limiters"))) limiters.add(client.limiter((String) spec));
            // The document as a Map, written to JSON by the binding.
            policy = HttpPolicy.fromDocument(map(s.get("policy")), limiters);
        }

        HttpPolicy.Step prepare(Map<String, Object> r) {
            HttpPolicy.Request.Builder b = HttpPolicy.Request.builder()
                    .method((String) r.get("method"))
                    .path((String) r.get("path"))
                    .route((String) r.get("route"))
                    .peer((String) r.get("peer"))
                    .user((String) r.get("user"))
                    .tenant((String) r.get("tenant"))
                    .appKey((String) r.get("app_key"));
            if (r.get("cost") != null) b.cost((Long) r.get("cost"));
            if (r.get("headers") != null) {
                for (Map.Entry<String, Object> h : map(r.get("headers")).entrySet()) {
                    b.header(h.getKey(), (String) h.getValue());
                }
            }
            return policy.prepare(b.build());
        }

        @Override
        public void close() {
            policy.close();
            for (Limiter l : limiters) l.close();
            client.close();
        }
    }

    static Decision decision(Map<String, Object> d) {
        boolean allowed = Boolean.TRUE.equals(d.get("allowed"));
        return new Decision(allowed, num(d, "limit"), num(d, "remaining"),
                Duration.ofMillis(num(d, "retry_after_ms")), Duration.ofMillis(num(d, "reset_after_ms")),
                false, Boolean.TRUE.equals(d.get("degraded")), Boolean.TRUE.equals(d.get("shadowed")),
                allowed ? 1 : 0);
    }

    static long num(Map<String, Object> m, String name) {
        Object v = m.get(name);
        return v == null ? 0 : (Long) v;
    }

    static void assertAnswer(Map<String, Object> want, HttpPolicy.Answer got, String where) {
        assertEquals(((Long) want.get("status")).intValue(), got.status(), where + ": status");
        assertEquals(want.get("body"), got.body(), where + ": body");
        List<String> headers = new ArrayList<>();
        for (Object h : list(want.get("headers"))) headers.add(list(h).get(0) + ": " + list(h).get(1));
        List<String> gotHeaders = new ArrayList<>();
        for (HttpPolicy.Header h : got.headers()) gotHeaders.add(h.name() + ": " + h.value());
        assertEquals(headers, gotHeaders, where + ": headers, in order");
    }

    /** The "limiter" of the suite's rule of this name. */
    static int ruleLimiter(Map<String, Object> suite, String rule) {
        for (Object r : list(map(suite.get("policy")).get("rules"))) {
            if (map(r).get("name").equals(rule)) return ((Long) map(r).get("limiter")).intValue();
        }
        throw new AssertionError("no rule " + rule);
    }

    static String actionName(HttpPolicy.Action a) {
        return a.name().toLowerCase(java.util.Locale.ROOT);
    }

    @Test
    void everyCase() throws Exception {
        int cases = 0;
        for (Object so : list(vectors().get("suites"))) {
            Map<String, Object> s = map(so);
            try (Suite suite = new Suite(s)) {
                for (Object co : list(s.get("cases"))) {
                    Map<String, Object> c = map(co);
                    cases++;
                    String where = s.get("name") + " / " + c.get("name");
                    HttpPolicy.Step step = suite.prepare(map(c.get("request")));
                    Map<String, Object> want = map(c.get("step"));
                    assertEquals(want.get("action"), actionName(step.action()), where + ": action");
                    assertEquals(want.get("rule"), step.ruleName(), where + ": rule");
                    if (step.action() == HttpPolicy.Action.CHECK) {
                        assertEquals(want.get("key"), step.key(), where + ": key");
                        assertEquals((long) (Long) want.get("cost"), step.cost(), where + ": cost");
                        assertSame(suite.limiters.get(ruleLimiter(s, step.ruleName())),
                                suite.policy.limiter(step.rule()), where + ": the rule's limiter");
                    }
                    if (want.get("status") != null) {
                        assertEquals(((Long) want.get("status")).intValue(), step.status(), where + ": status");
                    }
                    if (want.get("answer") != null) {
                        assertAnswer(map(want.get("answer")), suite.policy.answer(step, null), where + " / answer");
                    }
                    if (c.get("answers") != null) {
                        for (Object ao : list(c.get("answers"))) {
                            Map<String, Object> a = map(ao);
                            Decision d = a.get("decision") == null ? null : decision(map(a.get("decision")));
                            assertAnswer(map(a.get("answer")), suite.policy.answer(step, d), where + " / answer");
                        }
                    }
                    if (c.get("counts") != null) {
                        Decision admitted = new Decision(true, 5, 3, Duration.ZERO, Duration.ofSeconds(36), false,
                                false, false, 1);
                        for (Map.Entry<String, Object> e : map(c.get("counts")).entrySet()) {
                            boolean counts = (Boolean) e.getValue();
                            assertEquals(!counts, suite.policy.refundDue(step, admitted, Integer.parseInt(e.getKey())),
                                    where + " / counts " + e.getKey());
                        }
                    }
                }
            }
        }
        assertTrue(cases >= 40, "only " + cases + " cases");
    }

    @Test
    void refunds() throws Exception {
        Map<String, Object> v = vectors();
        List<Object> suites = list(v.get("suites"));
        int n = 0;
        for (Object ro : list(v.get("refunds"))) {
            Map<String, Object> r = map(ro);
            Map<String, Object> s = map(suites.get(((Long) r.get("suite")).intValue()));
            try (Suite suite = new Suite(s)) {
                Map<String, Object> request = null;
                for (Object co : list(s.get("cases"))) {
                    if (map(co).get("name").equals(r.get("case"))) request = map(map(co).get("request"));
                }
                assertNotNull(request, (String) r.get("case"));
                HttpPolicy.Step step = suite.prepare(request);
                assertEquals(r.get("refund"), suite.policy.refundDue(step, decision(map(r.get("decision"))),
                        ((Long) r.get("status")).intValue()), (String) r.get("name"));
                n++;
            }
        }
        assertTrue(n > 0);
    }

    @Test
    void invalidDocumentsAreRefused() throws Exception {
        try (Client client = Client.open("memory://");
             Limiter a = client.limiter("5/minute");
             Limiter b = client.limiter("10/second")) {
            int n = 0;
            for (Object io : list(vectors().get("invalid"))) {
                Map<String, Object> inv = map(io);
                String doc = (String) inv.get("document");
                InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                        () -> HttpPolicy.fromDocument(doc, List.of(a, b)), doc);
                assertTrue(e.getMessage().contains((String) inv.get("error")),
                        "message: " + e.getMessage() + "\nwanted: " + inv.get("error"));
                n++;
            }
            assertTrue(n > 0);
        }
    }

    /** decide and settle on a real limiter (memory://): one native call each. */
    @Test
    void decideAndSettle() {
        try (Client client = Client.open("memory://");
             Limiter l = client.limiter("2/minute");
             HttpPolicy p = HttpPolicy.fromDocument(
                     "{\"rules\": [{\"name\": \"login\", \"limiter\": 0, \"count_when\": \"failures\"}]}", List.of(l))) {
            HttpPolicy.Request r = HttpPolicy.Request.builder().method("POST").path("/login").peer("192.0.2.9:1").build();
            HttpPolicy.Exchange ok = p.decide(r);
            assertEquals(HttpPolicy.Action.CHECK, ok.step().action());
            assertEquals("ip:192.0.2.9", ok.step().key());
            assertTrue(ok.answer().proceeds());
            assertTrue(ok.decision().allowed());
            assertEquals(1, ok.decision().remaining());
            // A 200 does not count a failures-only login: the unit goes back.
            assertTrue(p.settle(ok.step(), ok.decision(), 200));
            assertEquals(2, l.peek("ip:192.0.2.9").remaining());
            HttpPolicy.Exchange first = p.decide(r);
            assertFalse(p.settle(first.step(), first.decision(), 401));
            p.decide(r);
            HttpPolicy.Exchange denied = p.decide(r);
            assertEquals(429, denied.answer().status());
            assertEquals("Too Many Requests\n", denied.answer().body());
            assertEquals("\"login\";q=2;w=60", denied.answer().headers().get(4).value());
            Map<String, Long> login = p.requestCounts().get("login");
            assertEquals(3, login.get("allowed"));
            assertEquals(1, login.get("denied"));
            assertTrue(p.metricsPrometheus().contains("polylimit_http_requests_total{rule=\"login\",outcome=\"denied\"} 1"));
        }
    }

    /** A failed check is the exchange's failure, answered as on_error says. */
    @Test
    void aClosedClientIsAFailedCheck() {
        Client client = Client.open("memory://");
        try (Limiter l = client.limiter("2/minute");
             HttpPolicy p = HttpPolicy.fromDocument("{\"rules\": [{\"name\": \"all\", \"limiter\": 0}]}", List.of(l))) {
            client.close();
            HttpPolicy.Exchange ex = p.decide(HttpPolicy.Request.builder().method("GET").path("/").peer("::1").build());
            assertNotNull(ex.failure());
            assertEquals(503, ex.answer().status());
            assertEquals("Rate limiter unavailable\n", ex.answer().body());
        }
    }
}
