package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Tags;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.polylimit.micrometer.PolylimitHttpMetrics;
import io.polylimit.micrometer.PolylimitMetrics;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Metrics: several clients on one Prometheus page (Client.prometheusText), and
 * the Micrometer binder scraped through a PrometheusMeterRegistry.
 */
class MetricsTest extends ServerTestBase {

    private static Client named(String name) {
        return Client.open(redis.url(), ClientOptions.builder().name(name).build());
    }

    @Test
    void twoClientsOnOneValidPage() {
        try (Client web = named("web"); Client worker = named("worker");
             Limiter lw = web.limiter("2/minute"); Limiter lk = worker.limiter("2/minute")) {
            String key = key();
            lw.check(key);
            lw.check(key);
            lw.check(key); // denied
            lk.check(key()); // another client, another key

            String text = Client.prometheusText(web, worker);
            PrometheusPage page = PrometheusPage.parse(text);
            assertEquals(3, page.value("polylimit_checks_total{client=\"web\"}"));
            assertEquals(1, page.value("polylimit_checks_total{client=\"worker\"}"));
            assertEquals(2, page.value("polylimit_admitted_total{client=\"web\"}"));
            assertEquals(1, page.value("polylimit_denied_total{client=\"web\"}"));
            assertEquals(0, page.value("polylimit_denied_total{client=\"worker\"}"));
            assertEquals(3, page.value("polylimit_check_latency_seconds_count{client=\"web\"}"));
            assertEquals(3, page.value("polylimit_check_latency_seconds_bucket{client=\"web\",le=\"+Inf\"}"));
            assertEquals("counter", page.types.get("polylimit_checks_total"));
            assertEquals("histogram", page.types.get("polylimit_check_latency_seconds"));
            assertEquals(1, text.split("# HELP polylimit_checks_total ", -1).length - 1, "HELP once");
            assertEquals(text, Client.prometheusText(List.of(web, worker)));

            // What the page is not: two single pages pasted together.
            String pasted = web.statsPrometheus() + worker.statsPrometheus();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PrometheusPage.parse(pasted));
            assertTrue(e.getMessage().contains("second HELP"), e.getMessage());
            // A single client's page is valid on its own, labelled with its name.
            assertEquals(3, PrometheusPage.parse(web.statsPrometheus()).value("polylimit_checks_total{client=\"web\"}"));
        }
    }

    @Test
    void severalClientsNeedDistinctNames() {
        try (Client a = named("same"); Client b = named("same"); Client anon = Client.open(redis.url())) {
            InvalidArgumentException dup = assertInvalid(() -> Client.prometheusText(a, b));
            assertTrue(dup.getMessage().contains("clients[1]") && dup.getMessage().contains("same"), dup.getMessage());
            InvalidArgumentException unnamed = assertInvalid(() -> Client.prometheusText(a, anon));
            assertTrue(unnamed.getMessage().contains("clients[1] has no name"), unnamed.getMessage());
            assertInvalid(Client::prometheusText);
            // One unnamed client alone is fine: no label.
            assertEquals(0, PrometheusPage.parse(Client.prometheusText(anon)).value("polylimit_checks_total"));
            assertThrows(NullPointerException.class, () -> Client.prometheusText(a, null));
        }
        Client closed = named("closed");
        closed.close();
        try (Client open = named("open")) {
            assertThrows(ClosedException.class, () -> Client.prometheusText(open, closed));
            // The open one was lent for the call and given back: it still closes normally.
            assertFalse(open.isClosed());
        }
    }

    @Test
    void micrometerBinderScrapedAsPrometheus() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (Client api = named("api"); Client batch = named("batch");
             Limiter l = api.limiter("3/minute"); Limiter lb = batch.limiter("3/minute")) {
            new PolylimitMetrics(api).bindTo(registry);
            new PolylimitMetrics(batch, Tags.of("service", "jobs")).bindTo(registry);
            String key = key();
            for (int i = 0; i < 5; i++) l.check(key); // 3 admitted, 2 denied
            lb.check(key());

            PrometheusPage page = PrometheusPage.parse(registry.scrape());
            assertEquals(5.0, page.value("polylimit_checks_total{client=\"api\"}"));
            assertEquals(3.0, page.value("polylimit_admitted_total{client=\"api\"}"));
            assertEquals(2.0, page.value("polylimit_denied_total{client=\"api\"}"));
            assertEquals(0.0, page.value("polylimit_errors_total{client=\"api\"}"));
            assertEquals(5.0, page.value("polylimit_check_latency_seconds_count{client=\"api\"}"));
            assertTrue(page.value("polylimit_check_latency_seconds_sum{client=\"api\"}") > 0);
            assertEquals(1.0, page.value("polylimit_checks_total{client=\"batch\",service=\"jobs\"}"));
            assertEquals(0.0, page.value("polylimit_evicting_nodes{client=\"api\"}"));
            // The same numbers as the client's own counters.
            Stats s = api.stats();
            assertEquals((double) s.roundTrips(), page.value("polylimit_round_trips_total{client=\"api\"}"));

            l.check(key); // live: the next scrape sees it
            assertEquals(6.0, PrometheusPage.parse(registry.scrape()).value("polylimit_checks_total{client=\"api\"}"));
        }
        // Closed clients: the scrape still works, the values are gone.
        PrometheusPage after = PrometheusPage.parse(registry.scrape());
        assertTrue(Double.isNaN(after.value("polylimit_evicting_nodes{client=\"api\"}")));
    }

    @Test
    void unnamedClientIsTaggedDefault() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new PolylimitMetrics(client).bindTo(registry);
        try (Limiter l = client.limiter("3/minute")) {
            l.check(key());
        }
        assertEquals(1.0, PrometheusPage.parse(registry.scrape()).value("polylimit_checks_total{client=\"default\"}"));
    }
    /** The HTTP policy's counters per rule and outcome, through Micrometer's Prometheus registry. */
    @Test
    @SuppressWarnings("try") // closes the policy inside its try, to read the counters after
    void httpPolicyCountersPerRule() {
        try (Client c = Client.open(redis.url()); Limiter l = c.limiterBuilder("1/minute").prefix("mt" + key()).build();
             HttpPolicy p = HttpPolicy.fromDocument("""
                     {"deny": {"ips": ["203.0.113.0/24"]},
                      "rules": [{"name": "login", "paths": ["/login"], "limiter": 0, "key": "api_key"},
                                {"name": "default", "limiter": 0}]}""", List.of(l))) {
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            new PolylimitHttpMetrics(p).bindTo(registry);
            HttpPolicy.Request.Builder login = HttpPolicy.Request.builder().method("POST").path("/login").peer("192.0.2.1");
            p.decide(login.header("X-API-Key", "secret-key-1").build());
            p.decide(login.build()); // the same key: denied
            p.decide(HttpPolicy.Request.builder().method("GET").path("/login").peer("192.0.2.1").build()); // no key
            p.decide(HttpPolicy.Request.builder().method("GET").path("/").peer("203.0.113.9").build()); // denied list
            String page = registry.scrape();
            PrometheusPage parsed = PrometheusPage.parse(page);
            assertEquals(1, parsed.value("polylimit_http_requests_total{outcome=\"allowed\",rule=\"login\"}"));
            assertEquals(1, parsed.value("polylimit_http_requests_total{outcome=\"denied\",rule=\"login\"}"));
            assertEquals(1, parsed.value("polylimit_http_requests_total{outcome=\"missing_key\",rule=\"login\"}"));
            assertEquals(1, parsed.value("polylimit_http_requests_total{outcome=\"forbidden\",rule=\"(lists)\"}"));
            assertEquals(0, parsed.value("polylimit_http_requests_total{outcome=\"allowed\",rule=\"default\"}"));
            assertFalse(page.contains("secret-key-1"), "never a key");
            p.close();
            assertTrue(Double.isNaN(registry.get("polylimit.http.requests").tags("rule", "login", "outcome", "allowed")
                    .functionCounter().count()));
        }
    }
}
