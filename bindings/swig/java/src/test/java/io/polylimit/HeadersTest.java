package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * Limiter.headers: the core's HTTP rate-limit headers, checked against values
 * the test computes from the limit and the window; and checkAsync's results
 * (its non-blocking behaviour: AsyncTest).
 */
class HeadersTest extends ServerTestBase {

    /** Whole seconds rounded up, as HTTP clients read them. */
    static long ceilSeconds(Duration d) {
        long ms = d.toMillis();
        return ms <= 0 ? 0 : (ms + 999) / 1000;
    }

    @Test
    void singleLimitAllowedThenDenied() {
        long limit = 3, windowS = 60;
        try (Limiter l = client.limiter("3/minute")) {
            String key = key();
            Countdown window = new Countdown(windowS);
            for (long i = 1; i <= limit; i++) {
                Decision d = l.check(key);
                Map<String, String> h = l.headers(d);
                assertEquals(List.of("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy",
                        "RateLimit"), new ArrayList<>(h.keySet()), "order, and no Retry-After when allowed");
                long remaining = limit - i;
                // The window began at the first check, well under a second ago.
                assertEquals(Long.toString(limit), h.get("RateLimit-Limit"));
                assertEquals(Long.toString(remaining), h.get("RateLimit-Remaining"));
                window.check("RateLimit-Reset", h.get("RateLimit-Reset"));
                assertEquals("\"default\";q=" + limit + ";w=" + windowS, h.get("RateLimit-Policy"));
                assertTrue(h.get("RateLimit").startsWith("\"default\";r=" + remaining + ";t="), h.get("RateLimit"));
                assertEquals(h.get("RateLimit-Reset"), h.get("RateLimit").substring(h.get("RateLimit").lastIndexOf('=') + 1));
            }
            Decision denied = l.check(key);
            assertFalse(denied.allowed());
            Map<String, String> h = l.headers(denied);
            assertEquals(List.of("Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
                    "RateLimit-Policy", "RateLimit"), new ArrayList<>(h.keySet()));
            window.check("Retry-After", h.get("Retry-After"));
            assertEquals(Long.toString(ceilSeconds(denied.retryAfter())), h.get("Retry-After"));
            assertEquals(Long.toString(ceilSeconds(denied.resetAfter())), h.get("RateLimit-Reset"));
            assertEquals("0", h.get("RateLimit-Remaining"));
            assertEquals("\"default\";r=0;t=" + h.get("RateLimit-Reset"), h.get("RateLimit"));
            assertThrows(UnsupportedOperationException.class, () -> h.put("X", "y"));
        }
    }

    @Test
    void severalLimitsNameEachPolicy() {
        // limits-package syntax: "," between limits, "per", "hour"/"day".
        try (Limiter l = client.limiter("2 per minute, 5 per hour")) {
            String key = key();
            Countdown minute = new Countdown(60);
            Decision d = l.check(key);
            Map<String, String> h = l.headers(d);
            assertEquals("\"2-per-60s\";q=2;w=60, \"5-per-3600s\";q=5;w=3600", h.get("RateLimit-Policy"));
            // The deciding limit is the one with the least left: 1 of 2, not 4 of 5.
            assertEquals("2", h.get("RateLimit-Limit"));
            assertEquals("1", h.get("RateLimit-Remaining"));
            // The headers speak of the deciding limit: its reset is the minute's, not the
            // decision's (the whole key is full again only after the hour).
            minute.check("RateLimit-Reset", h.get("RateLimit-Reset"));
            assertTrue(ceilSeconds(d.resetAfter()) > 3500, d.toString());
            assertEquals("\"2-per-60s\";r=1;t=" + h.get("RateLimit-Reset"), h.get("RateLimit"));
        }
        try (Limiter l = client.limiter("10/second | 100/month")) {
            Map<String, String> h = l.headers(l.check(key()));
            assertEquals("\"10-per-1s\";q=10;w=1, \"100-per-2592000s\";q=100;w=2592000", h.get("RateLimit-Policy"));
        }
    }

    @Test
    void checkWithLimitHasNoPolicy() {
        try (Limiter l = client.limiter("3/minute")) {
            Countdown window = new Countdown(30);
            Decision d = l.checkWithLimit(key(), 1, 7, Duration.ofSeconds(30));
            Map<String, String> h = l.headers(d);
            assertEquals("7", h.get("RateLimit-Limit"));
            assertEquals("6", h.get("RateLimit-Remaining"));
            window.check("RateLimit-Reset", h.get("RateLimit-Reset"));
            assertFalse(h.containsKey("RateLimit-Policy"));
            assertEquals("\"default\";r=6;t=" + h.get("RateLimit-Reset"), h.get("RateLimit"));
        }
    }

    @Test
    void headersOfAHandMadeDecision() {
        // Values pass through to the core as given: rounding up, never below 1 s for Retry-After.
        try (Limiter l = client.limiter("10/minute")) {
            Decision d = new Decision(false, 10, -2, Duration.ofMillis(1), Duration.ofMillis(1001), false, false,
                    false, 0);
            Map<String, String> h = l.headers(d);
            assertEquals("1", h.get("Retry-After"));
            assertEquals("0", h.get("RateLimit-Remaining"), "never negative");
            assertEquals("2", h.get("RateLimit-Reset"));
        }
    }

    @Test
    void headersOfAClosedLimiter() {
        Limiter l = client.limiter("3/minute");
        Decision d = l.check(key());
        l.close();
        assertThrows(ClosedException.class, () -> l.headers(d));
        assertThrows(NullPointerException.class, () -> client.limiter("3/minute").headers(null));
    }

    @Test
    void checkAsyncDecidesAsCheckDoes() throws Exception {
        try (Limiter l = client.limiter("2/minute")) {
            String key = key();
            CompletableFuture<Decision> f1 = l.checkAsync(key); // not blocking: AsyncTest
            assertTrue(f1.get().allowed());
            assertEquals(1, f1.get().remaining());
            assertTrue(l.checkAsync(key, 1).get().allowed());
            assertFalse(l.checkAsync(key.getBytes(java.nio.charset.StandardCharsets.UTF_8), 1).get().allowed());
            // Errors complete the future exceptionally, with the exception check would throw.
            CompletableFuture<Decision> bad = l.checkAsync(key, 0);
            assertTrue(bad.isCompletedExceptionally());
            ExecutionException e = assertThrows(ExecutionException.class, bad::get);
            assertInstanceOf(InvalidArgumentException.class, e.getCause());
            assertThrows(NullPointerException.class, () -> l.checkAsync((String) null));
        }
        Limiter closed = client.limiter("2/minute");
        closed.close();
        ExecutionException e = assertThrows(ExecutionException.class, () -> closed.checkAsync(key()).get());
        assertInstanceOf(ClosedException.class, e.getCause());
    }
}
