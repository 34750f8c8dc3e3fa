package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** Algorithms, rate specs and the options of a limiter (deny cache, shadow, block, ...). */
class LimiterOptionsTest extends ServerTestBase {
    @Test
    void specsAreParsedByTheCore() {
        assertSpec("100/minute", 100);
        assertSpec("10/s", 10);
        assertSpec("5 per 2 seconds", 5);
        assertSpec(" 7 / 250ms ", 7);
        assertSpec("3 PER hour", 3);
        assertSpec("1/2d", 1);
        // Everything the Python limits package parses: ',' ';' '|' between limits, month, year.
        assertSpec("200 per day, 50 per hour", 50);
        assertSpec("10/second | 100/minute", 10);
        assertSpec("3 per month", 3);
        assertSpec("1/year", 1);
        try (Limiter l = client.limiter("5 per 2 seconds")) {
            assertEquals("5 per 2 seconds", l.spec());
            assertEquals(Limiter.Algorithm.SLIDING_LOG, l.algorithm());
        }
        for (String bad : new String[] {"", "100", "/minute", "100/", "100/fortnight", "-1/s", "1.5/s",
                "100 minute", "99999999999999999999/s", "1/99999999999999999 days", "10/s burst 5",
                "10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s"}) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> client.limiter(bad), bad);
            assertEquals(Status.EINVALID, e.code());
            // The message is the C core's, which quotes the spec (no parser in Java).
            assertTrue(e.getMessage().startsWith("rate spec"), bad + " -> " + e.getMessage());
        }
        InvalidArgumentException unit = assertThrows(InvalidArgumentException.class,
                () -> client.limiter("100/fortnight"));
        assertEquals("rate spec '100/fortnight': unknown time unit 'fortnight' (use ms, s, m, h, d, month or year)",
                unit.getMessage());
        assertInvalid(() -> client.limiterBuilder("10/s").burst(5).build()); // burst goes in the spec
        assertInvalid(() -> client.limiterBuilder("10/s\0").build());
    }

    /** The core's parse, seen through a fresh key: limit and full capacity. */
    private void assertSpec(String spec, long limit) {
        try (Limiter l = client.limiter(spec)) {
            Decision d = l.peek(key());
            assertEquals(limit, d.limit(), spec);
            assertEquals(limit, d.remaining(), spec);
        }
    }

    @Test
    void builderSetsPrefixAndClock() {
        try (Limiter l = client.limiterBuilder("2/min").prefix("ok").clientClock().build()) {
            assertEquals("ok", l.prefix());
            assertEquals(Limiter.Clock.CLIENT, l.clock());
            String key = key();
            assertTrue(l.check(key).allowed());
            // Another prefix is another namespace: the same key is fresh there.
            try (Limiter other = client.limiterBuilder(2, Duration.ofMinutes(1)).prefix("other").build()) {
                assertEquals(2, other.peek(key).remaining());
            }
            assertEquals(1, l.peek(key).remaining());
        }
        // checkAt: the caller's time decides; a window later everything is free again.
        try (Limiter l = client.limiterBuilder(1, Duration.ofSeconds(10)).clock(Limiter.Clock.CLIENT).build()) {
            String key = key();
            Instant t0 = Instant.now();
            assertTrue(l.checkAt(key, 1, t0).allowed());
            Decision d = l.checkAt(key, 1, t0.plusSeconds(1));
            assertFalse(d.allowed());
            assertEquals(Duration.ofSeconds(9), d.retryAfter());
            assertTrue(l.checkAt(key, 1, t0.plusSeconds(11)).allowed());
        }
    }

    @Test
    void everyAlgorithmAdmitsTheLimitThenDenies() {
        for (Limiter.Algorithm alg : Limiter.Algorithm.values()) {
            try (Limiter l = client.limiterBuilder(3, Duration.ofMinutes(1)).algorithm(alg).clientClock().build()) {
                assertEquals(alg, l.algorithm());
                String key = key();
                Instant t0 = midMinute();
                for (int i = 0; i < 3; i++) {
                    Decision d = l.checkAt(key, 1, t0.plusMillis(i));
                    assertTrue(d.allowed(), alg + " #" + i + ": " + d);
                    assertEquals(3, d.limit(), alg + ": " + d);
                    assertEquals(2 - i, d.remaining(), alg + ": " + d);
                    assertEquals(1, d.granted(), alg + ": " + d);
                }
                Decision denied = l.checkAt(key, 1, t0.plusMillis(3));
                assertFalse(denied.allowed(), alg + ": " + denied);
                assertEquals(0, denied.granted());
                assertTrue(denied.retryAfter().compareTo(Duration.ZERO) > 0, alg + ": " + denied);
                assertTrue(denied.retryAfter().compareTo(Duration.ofMinutes(1)) <= 0, alg + ": " + denied);
                // Two windows later everything is free again, whatever the algorithm.
                assertTrue(l.checkAt(key, 3, t0.plusSeconds(120)).allowed(), alg.toString());
            }
        }
        // Server clock too: one round each.
        for (Limiter.Algorithm alg : Limiter.Algorithm.values()) {
            try (Limiter l = client.limiterBuilder("2/hour").algorithm(alg).build()) {
                String key = key();
                assertTrue(l.check(key).allowed(), alg.toString());
                assertTrue(l.check(key).allowed(), alg.toString());
                assertFalse(l.check(key).allowed(), alg.toString());
            }
        }
    }

    @Test
    void gcraBurst() {
        // One per minute, four at once.
        try (Limiter l = client.limiterBuilder(1, Duration.ofMinutes(1)).algorithm(Limiter.Algorithm.GCRA)
                .burst(4).build()) {
            String key = key();
            for (int i = 0; i < 4; i++) assertTrue(l.check(key).allowed(), "burst #" + i);
            Decision d = l.check(key);
            assertFalse(d.allowed());
            assertEquals(4, d.limit()); // GCRA reports the burst
        }
        try (Limiter l = client.limiterBuilder("1/min burst 2").algorithm(Limiter.Algorithm.GCRA).build()) {
            String key = key();
            assertTrue(l.check(key).allowed());
            assertTrue(l.check(key).allowed());
            assertFalse(l.check(key).allowed());
        }
        // burst belongs to GCRA only.
        assertInvalid(() -> client.limiterBuilder(1, Duration.ofMinutes(1)).burst(2).build());
    }

    @Test
    void severalLimitsInOneSpec() {
        try (Limiter l = client.limiterBuilder("2/s; 3/minute").clientClock().build()) {
            String key = key();
            Instant t0 = midMinute();
            Decision a = l.checkAt(key, 1, t0);
            assertTrue(a.allowed());
            assertEquals(2, a.limit()); // the one with the least remaining
            assertEquals(1, a.remaining());
            assertTrue(l.checkAt(key, 1, t0.plusMillis(1)).allowed());
            Decision perSecond = l.checkAt(key, 1, t0.plusMillis(2));
            assertFalse(perSecond.allowed());
            assertEquals(2, perSecond.limit()); // denied by 2/s
            Decision third = l.checkAt(key, 1, t0.plusMillis(1500));
            assertTrue(third.allowed());
            assertEquals(3, third.limit());
            assertEquals(0, third.remaining());
            Decision perMinute = l.checkAt(key, 1, t0.plusMillis(2600));
            assertFalse(perMinute.allowed()); // 2/s has room, 3/minute has not
            assertEquals(3, perMinute.limit());
            assertTrue(perMinute.retryAfter().compareTo(Duration.ofSeconds(50)) > 0, perMinute.toString());
        }
    }

    @Test
    void denyCacheAnswersLocally() {
        try (Limiter l = client.limiterBuilder("1/min").denyCache(100).build()) {
            String key = key();
            assertTrue(l.check(key).allowed());
            Decision fromRedis = l.check(key);
            assertFalse(fromRedis.allowed());
            assertFalse(fromRedis.cached());
            Stats before = client.stats();
            Decision cached = l.check(key);
            assertFalse(cached.allowed());
            assertTrue(cached.cached(), cached.toString());
            assertTrue(cached.retryAfter().compareTo(Duration.ZERO) > 0);
            Stats after = client.stats();
            assertEquals(before.roundTrips(), after.roundTrips()); // no round trip
            assertEquals(before.cacheHits() + 1, after.cacheHits());
            l.reset(key); // clears the entry
            assertTrue(l.check(key).allowed());
        }
    }

    @Test
    void shadowModeAdmitsButMarks() {
        try (Limiter l = client.limiterBuilder("1/min").shadow().build()) {
            String key = key();
            Decision first = l.check(key);
            assertTrue(first.allowed());
            assertFalse(first.shadowed());
            Decision second = l.check(key);
            assertTrue(second.allowed(), second.toString());
            assertTrue(second.shadowed(), second.toString());
            // Metrics count the real decision.
            assertEquals(1, client.stats().denied());
        }
    }

    @Test
    void blockKeepsADeniedKeyDenied() throws Exception {
        try (Limiter l = client.limiterBuilder(1, Duration.ofMillis(200)).block(Duration.ofSeconds(30)).build()) {
            String key = key();
            assertTrue(l.check(key).allowed());
            Decision denied = l.check(key);
            assertFalse(denied.allowed());
            assertTrue(denied.retryAfter().compareTo(Duration.ofSeconds(20)) > 0, denied.toString());
            // Not a wait for a condition: the window passing in real time is under test.
            Thread.sleep(300); // the limit would admit again now, the block does not
            Decision still = l.check(key);
            assertFalse(still.allowed(), still.toString());
            assertTrue(still.retryAfter().compareTo(Duration.ofSeconds(20)) > 0, still.toString());
        }
        assertInvalid(() -> client.limiterBuilder("1/s").block(Duration.ofMillis(-1)).build());
    }

    @Test
    void checkAtMostGrantsWhatFits() {
        try (Limiter l = client.limiter("5/min")) {
            String key = key();
            Decision a = l.checkAtMost(key, 3);
            assertTrue(a.allowed());
            assertEquals(3, a.granted());
            Decision b = l.checkAtMost(key, 3);
            assertTrue(b.allowed());
            assertEquals(2, b.granted());
            assertEquals(0, b.remaining());
            Decision c = l.checkAtMost(key, 3);
            assertFalse(c.allowed());
            assertEquals(0, c.granted());
            assertInvalid(() -> l.checkAtMost(key, 0));
        }
    }

    @Test
    void acquireWaitsForAdmission() {
        try (Limiter l = client.limiter(1, Duration.ofMillis(400))) {
            String key = key();
            assertTrue(l.check(key).allowed());
            long t = System.nanoTime();
            Decision waited = l.acquire(key, 1, Duration.ofSeconds(5));
            long tookMs = (System.nanoTime() - t) / 1_000_000;
            assertTrue(waited.allowed(), waited.toString());
            assertTrue(tookMs >= 200 && tookMs < 4000, "took " + tookMs + "ms");
            // Admission would come after the timeout: a denial, returned early.
            t = System.nanoTime();
            Decision gaveUp = l.acquire(key, 1, Duration.ofMillis(10));
            tookMs = (System.nanoTime() - t) / 1_000_000;
            assertFalse(gaveUp.allowed(), gaveUp.toString());
            assertTrue(tookMs < 300, "took " + tookMs + "ms");
            // Zero timeout: one try.
            assertFalse(l.acquire(key, 1, Duration.ZERO).allowed());
        }
    }

    @Test
    void leaseTakesABlockAndGivesBackTheRest() throws Exception {
        String key = key();
        try (Client other = Client.open(redis.url());
                Limiter watch = other.limiterBuilder("100/min").build()) {
            long trips;
            try (Limiter l = client.limiterBuilder("100/min").lease(10, Duration.ofMinutes(1)).build()) {
                assertTrue(l.check(key).allowed());
                trips = client.stats().roundTrips();
                assertTrue(l.check(key).allowed());
                assertTrue(l.checkAsync(key).get().allowed());  // from the lease too
                assertEquals(trips, client.stats().roundTrips());
                assertEquals(90, watch.peek(key).remaining());
            }  // closed: the 7 units left go back
            assertEquals(97, watch.peek(key).remaining());
            assertEquals(7, client.stats().refundedUnits());
        }
        assertInvalid(() -> client.limiterBuilder("10/s").lease(11, Duration.ZERO).build());
        assertInvalid(() -> client.limiterBuilder("10/s").lease(1, Duration.ofSeconds(2)).build());
    }

    @Test
    void refundGivesUnitsBack() {
        try (Limiter l = client.limiterBuilder("2/min").denyCache(10).build()) {
            String key = key();
            assertTrue(l.check(key).allowed());
            assertTrue(l.check(key).allowed());
            assertFalse(l.check(key).allowed());
            Decision r = l.refund(key, 1);
            assertTrue(r.allowed(), r.toString());
            assertEquals(1, r.remaining());
            Decision again = l.check(key); // the deny cache entry is gone too
            assertTrue(again.allowed(), again.toString());
            assertFalse(l.check(key).allowed());
            assertInvalid(() -> l.refund(key, 0));
        }
    }

    @Test
    void limitPerCall() {
        try (Limiter l = client.limiter("1/min")) {
            String key = key();
            for (int i = 0; i < 3; i++) {
                Decision d = l.checkWithLimit(key, 1, 3, Duration.ofMinutes(1));
                assertTrue(d.allowed(), d.toString());
                assertEquals(3, d.limit());
            }
            assertFalse(l.checkWithLimit(key, 1, 3, Duration.ofMinutes(1)).allowed());
            assertInvalid(() -> l.checkWithLimit(key, 1, 0, Duration.ofMinutes(1)));
            assertInvalid(() -> l.checkWithLimit(key, 1, 3, Duration.ZERO));
        }
    }
}
