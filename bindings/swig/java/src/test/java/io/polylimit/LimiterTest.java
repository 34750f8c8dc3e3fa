package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylimit.demo.Worker;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Decisions of a limiter: limits, costs, keys, exactness under threads, the demo worker. */
class LimiterTest extends ServerTestBase {
    @Test
    void checkAdmitsUpToTheLimitThenDenies() {
        try (Limiter limiter = client.limiter(3, Duration.ofMinutes(1))) {
            String key = key();
            for (int i = 0; i < 3; i++) {
                Decision d = limiter.check(key);
                assertTrue(d.allowed(), d.toString());
                assertEquals(3, d.limit());
                assertEquals(2 - i, d.remaining());
                assertEquals(Duration.ZERO, d.retryAfter());
                assertTrue(d.resetAfter().compareTo(Duration.ZERO) > 0);
                assertFalse(d.cached());
                assertFalse(d.degraded());
            }
            Decision denied = limiter.check(key);
            assertFalse(denied.allowed());
            assertTrue(denied.denied());
            assertEquals(0, denied.remaining());
            assertTrue(denied.retryAfter().compareTo(Duration.ZERO) > 0, denied.toString());
            assertTrue(denied.retryAfter().compareTo(Duration.ofMinutes(1)) <= 0, denied.toString());
            assertTrue(denied.toString().startsWith("Decision[denied, limit=3, remaining=0"), denied.toString());
        }
    }

    @Test
    void costIsAllOrNothing() {
        try (Limiter limiter = client.limiter("5/minute")) {
            String key = key();
            assertTrue(limiter.check(key, 2).allowed());
            assertTrue(limiter.check(key, 2).allowed());
            Decision d = limiter.check(key, 2);
            assertFalse(d.allowed());
            assertEquals(1, d.remaining());
            assertTrue(limiter.check(key, 1).allowed());
            assertFalse(limiter.check(key, 1).allowed());
        }
    }

    @Test
    void peekDoesNotConsumeAndResetRestores() {
        try (Limiter limiter = client.limiter("2/min")) {
            String key = key();
            Decision p = limiter.peek(key);
            assertTrue(p.allowed());
            assertEquals(2, p.remaining());
            assertEquals(2, limiter.peek(key).remaining());
            limiter.check(key);
            limiter.check(key);
            assertFalse(limiter.peek(key).allowed());
            assertFalse(limiter.check(key).allowed());
            limiter.reset(key);
            assertEquals(2, limiter.peek(key).remaining());
            assertTrue(limiter.check(key).allowed());
        }
    }

    @Test
    void stringAndByteKeys() {
        try (Limiter limiter = client.limiter("1/min")) {
            String base = key();
            byte[] b = base.getBytes(StandardCharsets.UTF_8);
            // A String key is its UTF-8 bytes: the same key as the byte[].
            assertTrue(limiter.check(base).allowed());
            assertFalse(limiter.check(b).allowed());

            // NUL bytes are part of the key: these three keys are all distinct.
            byte[] nulA = (base + "\0a").getBytes(StandardCharsets.UTF_8);
            byte[] nulB = (base + "\0b").getBytes(StandardCharsets.UTF_8);
            byte[] nulOnly = new byte[] {0};
            assertTrue(limiter.check(nulA).allowed());
            assertTrue(limiter.check(nulB).allowed());
            assertTrue(limiter.check(nulOnly).allowed());
            assertFalse(limiter.check(nulA).allowed());
            assertFalse(limiter.check(nulB).allowed());
            limiter.reset(nulOnly);
            assertTrue(limiter.peek(nulOnly).allowed());

            // The array is copied for the call only: changing it later is harmless.
            byte[] mutable = (base + "-m").getBytes(StandardCharsets.UTF_8);
            assertTrue(limiter.check(mutable).allowed());
            mutable[0] ^= 1;
            assertTrue(limiter.check(mutable).allowed());

            // Non-ASCII and long keys (beyond the stack buffer of the typemap).
            assertTrue(limiter.check(base + "-ключ-🔑").allowed());
            assertFalse(limiter.check((base + "-ключ-🔑").getBytes(StandardCharsets.UTF_8)).allowed());
            String longKey = base + "x".repeat(5000);
            assertTrue(limiter.check(longKey).allowed());
            assertFalse(limiter.check(longKey).allowed());
        }
    }

    @Test
    void sixteenThreadsOnOneKeyAdmitExactlyTheLimit() throws Exception {
        final int threads = 16, perThread = 25, limit = 100;
        String key = key();
        // A connection per thread, so that all 16 really race inside Redis.
        ClientOptions opts = ClientOptions.builder().poolSize(threads).acquireTimeout(Duration.ofSeconds(10)).build();
        try (Client wide = Client.open(redis.url(), opts);
             Limiter limiter = wide.limiter(limit, Duration.ofMinutes(5))) {
            AtomicLong admitted = new AtomicLong();
            CountDownLatch go = new CountDownLatch(1);
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    futures.add(pool.submit(() -> {
                        go.await();
                        for (int i = 0; i < perThread; i++) {
                            if (limiter.check(key).allowed()) admitted.incrementAndGet();
                        }
                        return null;
                    }));
                }
                go.countDown();
                for (Future<?> f : futures) f.get();
            } finally {
                pool.shutdownNow();
            }
            assertEquals(limit, admitted.get());
            assertEquals(0, limiter.peek(key).remaining());
        }
    }

    @Test
    void memoryUrlNeedsNoServer() {
        try (Client c = Client.open("memory://"); Limiter l = c.limiter("1/s")) {
            assertTrue(l.check("k").allowed());
            assertFalse(l.check("k").allowed());
        }
    }

    @Test
    void decisionIsAValue() {
        Decision a = new Decision(true, 5, 4, Duration.ZERO, Duration.ofSeconds(1), false, false, false, 1);
        Decision b = new Decision(true, 5, 4, Duration.ZERO, Duration.ofSeconds(1), false, false, false, 1);
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        assertNotEquals(a, new Decision(false, 5, 4, Duration.ZERO, Duration.ofSeconds(1), false, false, false, 0));
        assertEquals("Decision[allowed, limit=5, remaining=4, retryAfter=0ms, resetAfter=1000ms, granted=1]",
                a.toString());
        assertEquals("Decision[denied, limit=1, remaining=0, retryAfter=5ms, resetAfter=6ms, granted=0, cached, degraded]",
                new Decision(false, 1, 0, Duration.ofMillis(5), Duration.ofMillis(6), true, true, false, 0).toString());
        assertEquals("Decision[allowed, limit=1, remaining=0, retryAfter=0ms, resetAfter=6ms, granted=1, shadowed]",
                new Decision(true, 1, 0, Duration.ZERO, Duration.ofMillis(6), false, false, true, 1).toString());
    }

    @Test
    void statsAndPrometheus() {
        try (Client c = Client.open(redis.url()); Limiter l = c.limiter("1/min")) {
            Stats zero = c.stats();
            assertEquals(0, zero.checks());
            assertEquals(Vocabulary.LATENCY_BUCKETS, zero.latency().size());
            String key = key();
            assertTrue(l.check(key).allowed());
            assertFalse(l.check(key).allowed());
            assertThrows(InvalidArgumentException.class, () -> l.check(""));
            Stats s = c.stats();
            assertEquals(2, s.admitted() + s.denied());
            assertEquals(1, s.admitted());
            assertEquals(1, s.denied());
            assertTrue(s.roundTrips() >= 2, s.toString());
            assertEquals(0, s.cacheHits());
            assertEquals(0, s.degraded());
            assertTrue(s.latencyCount() >= 2, s.toString());
            assertTrue(s.latencySum().compareTo(Duration.ZERO) > 0, s.toString());
            assertEquals(s.latencyCount(), s.latency().stream().mapToLong(Stats.Bucket::count).sum());
            assertTrue(s.latency().get(s.latency().size() - 1).isInfinite());
            for (int i = 1; i < s.latency().size(); i++)
                assertTrue(s.latency().get(i).leMicros() > s.latency().get(i - 1).leMicros());

            String text = c.statsPrometheus();
            assertTrue(text.contains("# TYPE polylimit_checks_total counter\n"), text);
            assertTrue(text.contains("polylimit_admitted_total 1\n"), text);
            assertTrue(text.contains("polylimit_denied_total 1\n"), text);
            assertTrue(text.contains("polylimit_check_latency_seconds_bucket{le=\"+Inf\"} " + s.latencyCount() + "\n"),
                    text);
        }
    }

    @Test
    void demoWorker() {
        String key = key();
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        int rc = Worker.run(new String[] {redis.url(), key, "7", "60000", "10", "java-1"},
                new PrintStream(out, true), new PrintStream(err, true));
        assertEquals(0, rc, err.toString());
        assertEquals("java-1 admitted=7 attempts=10\n", out.toString());
        // A second worker on the same key gets nothing: the limit is shared.
        out.reset();
        assertEquals(0, Worker.run(new String[] {redis.url(), key, "7", "60000", "3", "java-2"},
                new PrintStream(out, true), new PrintStream(err, true)));
        assertEquals("java-2 admitted=0 attempts=3\n", out.toString());
        assertEquals(2, Worker.run(new String[] {"too", "few"}, new PrintStream(out), new PrintStream(err)));
    }
}
