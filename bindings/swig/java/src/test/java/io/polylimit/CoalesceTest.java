package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Coalescing (docs/limiter.md, "Hot keys: coalescing"): threads hammering one
 * key are decided exactly, in far fewer round trips than checks; with
 * {@code coalesce(false)} every check is its own round trip.
 */
class CoalesceTest extends ServerTestBase {
    static final int THREADS = 24;
    static final int LIMIT = 300;
    static final int DENIALS = 3; // each thread checks until it has seen this many

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void hammerOfOneKey(boolean coalesce) throws Exception {
        ClientOptions opts = ClientOptions.builder().poolSize(8).coalesce(coalesce).build();
        try (Client c = Client.open(redis.url(), opts);
             Limiter limiter = c.limiter(LIMIT, Duration.ofHours(1))) {
            String hot = key();
            limiter.check(key()); // connected, script loaded
            Stats before = c.stats();
            AtomicLong admitted = new AtomicLong(), checks = new AtomicLong();
            CyclicBarrier start = new CyclicBarrier(THREADS);
            ExecutorService pool = Executors.newFixedThreadPool(THREADS);
            try {
                List<Future<?>> fs = new ArrayList<>();
                for (int i = 0; i < THREADS; i++) {
                    fs.add(pool.submit(() -> {
                        start.await();
                        for (int denied = 0; denied < DENIALS; ) {
                            Decision d = limiter.check(hot);
                            checks.incrementAndGet();
                            if (d.allowed()) admitted.incrementAndGet();
                            else denied++;
                        }
                        return null;
                    }));
                }
                for (Future<?> f : fs) f.get();
            } finally {
                pool.shutdownNow();
            }
            Stats after = c.stats();
            long n = checks.get();
            assertEquals(LIMIT, admitted.get(), "admitted of " + n + " checks");
            assertEquals(n, after.checks() - before.checks());
            long trips = after.roundTrips() - before.roundTrips();
            if (coalesce) {
                assertTrue(trips * 2 < n, trips + " round trips for " + n + " checks");
            } else {
                assertEquals(n, trips, "one round trip per check");
            }
        }
    }

    @Test
    void optionsShowCoalescingOff() {
        assertTrue(ClientOptions.builder().coalesce(false).build().toString().contains("coalesce=false"));
        assertFalse(ClientOptions.defaults().toString().contains("coalesce"));
    }
}
