package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylimit.jni.PolylimitNative;
import io.polylimit.jni.PolylimitNativeConstants;
import io.polylimit.jni.SWIGTYPE_p_polylimit_client;
import io.polylimit.jni.SWIGTYPE_p_polylimit_limiter;
import io.polylimit.jni.polylimit_decision;
import io.polylimit.jni.polylimit_error;
import io.polylimit.jni.polylimit_error_list;
import io.polylimit.jni.polylimit_limiter_options;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Loading, closing and freeing: idempotent close, a client closes its limiters, races, the Cleaner. */
class LifecycleTest extends ServerTestBase {
    @Test
    void libraryVersionMatchesHeader() {
        assertEquals(PolylimitNativeConstants.POLYLIMIT_VERSION_STRING, NativeLibrary.version());
        assertEquals(NativeLibrary.bindingVersion(), NativeLibrary.version());
    }

    @Test
    void closeIsIdempotentAndUseAfterCloseThrows() {
        Client c = Client.open(redis.url());
        Limiter l = c.limiter("10/min");
        String key = key();
        assertTrue(l.check(key).allowed());

        l.close();
        l.close();
        assertTrue(l.isClosed());
        assertTrue(l.toString().endsWith("closed]"));
        ClosedException e = assertThrows(ClosedException.class, () -> l.check(key));
        assertEquals(Status.ECLOSED, e.code());
        assertEquals("the limiter is closed", e.getMessage());
        assertClosed(l, key);
        // The client is not affected.
        assertFalse(c.isClosed());
        try (Limiter other = c.limiter("10/min")) {
            assertEquals(9, other.peek(key).remaining());
        }

        c.close();
        c.close();
        assertTrue(c.isClosed());
        assertTrue(c.toString().endsWith("closed]"));
        ClosedException ce = assertThrows(ClosedException.class, () -> c.limiter("1/s"));
        assertEquals(Status.ECLOSED, ce.code());
        assertEquals("the client is closed", ce.getMessage());
        assertThrows(ClosedException.class, () -> c.limiterBuilder(1, Duration.ofSeconds(1)).build());
        assertThrows(ClosedException.class, () -> c.stats());
        assertThrows(ClosedException.class, () -> c.statsPrometheus());
    }

    /** Every call of a closed limiter throws ClosedException. */
    private static void assertClosed(Limiter l, String key) {
        byte[] raw = key.getBytes(StandardCharsets.UTF_8);
        assertThrows(ClosedException.class, () -> l.check(key));
        assertThrows(ClosedException.class, () -> l.check(raw, 1));
        assertThrows(ClosedException.class, () -> l.checkAt(key, 1, Instant.now()));
        assertThrows(ClosedException.class, () -> l.peek(key));
        assertThrows(ClosedException.class, () -> l.reset(key));
        assertThrows(ClosedException.class, () -> l.checkMany(List.of(key), 1));
        assertThrows(ClosedException.class, () -> l.checkManyResults(List.of(key), 1));
        assertThrows(ClosedException.class, () -> l.checkAtMost(key, 1));
        assertThrows(ClosedException.class, () -> l.acquire(key, 1, Duration.ZERO));
        assertThrows(ClosedException.class, () -> l.checkWithLimit(key, 1, 5, Duration.ofSeconds(1)));
        assertThrows(ClosedException.class, () -> l.refund(key, 1));
    }

    @Test
    void closingTheClientClosesItsLimiters() {
        Client c = Client.open(redis.url());
        Limiter a = c.limiter("10/min");
        Limiter b = c.limiterBuilder(5, Duration.ofMinutes(1)).algorithm(Limiter.Algorithm.GCRA).build();
        String key = key();
        assertTrue(a.check(key).allowed());
        assertTrue(b.check(key).allowed());
        assertSame(c, a.client());

        c.close();
        for (Limiter l : List.of(a, b)) {
            assertTrue(l.isClosed(), l.toString());
            ClosedException e = assertThrows(ClosedException.class, () -> l.check(key));
            assertEquals(Status.ECLOSED, e.code());
            assertEquals("the client is closed", e.getMessage()); // the C library's words
            assertClosed(l, key);
        }
        // Limiter.close() still releases each handle: in any order, twice.
        long before = NativeRef.FREED.get();
        a.close();
        a.close();
        b.close();
        assertTrue(NativeRef.FREED.get() - before >= 2);
        assertEquals("the limiter is closed", assertThrows(ClosedException.class, () -> a.check(key)).getMessage());
    }

    @Test
    void theCLayerAnswersEclosedOnceTheClientIsClosed() {
        // The same rule one layer down, through the generated JNI classes alone.
        polylimit_error err = new polylimit_error();
        polylimit_limiter_options opts = new polylimit_limiter_options();
        polylimit_decision d = new polylimit_decision();
        polylimit_error_list keyErrors = new polylimit_error_list(2);
        try {
            SWIGTYPE_p_polylimit_client[] c = new SWIGTYPE_p_polylimit_client[1];
            assertEquals(Status.OK, PolylimitNative.polylimit_client_open(redis.url(), null, c, err));
            opts.setLimit(5);
            opts.setWindow_ms(60_000);
            SWIGTYPE_p_polylimit_limiter[] l = new SWIGTYPE_p_polylimit_limiter[1];
            assertEquals(Status.OK, PolylimitNative.polylimit_limiter_new(c[0], opts, l, err));
            byte[] k = key().getBytes(StandardCharsets.UTF_8);
            assertEquals(Status.OK, PolylimitNative.polylimit_limiter_check(l[0], k, 1, d, err));

            PolylimitNative.polylimit_client_close(c[0]);
            assertEquals(Status.ECLOSED, PolylimitNative.polylimit_limiter_check(l[0], k, 1, d, err));
            assertEquals(Status.ECLOSED, err.getCode());
            assertEquals("the client is closed", new String(err.messageBytes(), StandardCharsets.UTF_8));
            // A batch: every key reports it, with its own message.
            long[] values = new long[2 * PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION];
            int[] codes = new int[2];
            assertEquals(Status.ECLOSED, PolylimitNative.polylimit_limiter_check_many_packed(
                    l[0], new byte[][] {k, k}, 1, values, codes, keyErrors, err));
            for (int i = 0; i < 2; i++) {
                assertEquals(Status.ECLOSED, codes[i]);
                assertEquals(Status.ECLOSED, keyErrors.code(i));
                assertEquals("the client is closed", new String(keyErrors.messageBytes(i), StandardCharsets.UTF_8));
            }
            PolylimitNative.polylimit_limiter_free(l[0]); // still valid memory until here
        } finally {
            keyErrors.delete();
            d.delete();
            opts.delete();
            err.delete();
        }
    }

    @Test
    void aLimiterKeepsItsClientFromTheCleaner() throws Exception {
        // The client is neither kept nor closed by the caller: its limiter keeps
        // it reachable, so the Cleaner cannot close it (and the limiter with it).
        Limiter l = Client.open(redis.url()).limiter("100/min");
        // Collect until a collection has demonstrably run (a weakly reachable
        // canary is gone), then give the Cleaner thread the same chances the
        // old fixed loop gave it: an absence can only be shown over a span.
        java.lang.ref.WeakReference<Object> canary = new java.lang.ref.WeakReference<>(new Object());
        RedisServer.waitUntil("a garbage collection", Duration.ofSeconds(10), () -> {
            System.gc();
            return canary.get() == null;
        });
        for (int i = 0; i < 20; i++) {
            System.gc();
            Thread.sleep(10); // not synchronisation: time for a (wrong) Cleaner action to show
        }
        assertFalse(l.isClosed());
        assertTrue(l.check(key()).allowed());
        Client c = l.client();
        l.close();
        c.close();
    }

    @Test
    void closeWhileOtherThreadsCheck() throws Exception {
        // Calls racing close either finish normally or see ClosedException; the
        // native handle is freed only after the last call in flight. Even
        // rounds close the limiter, odd rounds its client (C forbids a client
        // close racing its limiters' calls: the binding makes the close wait).
        for (int round = 0; round < 6; round++) {
            Client c = Client.open(redis.url());
            Limiter l = c.limiter(1_000_000, Duration.ofSeconds(10));
            String key = key();
            AtomicInteger ok = new AtomicInteger(), closed = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    futures.add(pool.submit(() -> {
                        for (int i = 0; i < 200; i++) {
                            try {
                                if (i % 10 == 0) l.checkMany(List.of(key, key), 1);
                                else l.check(key);
                                ok.incrementAndGet();
                            } catch (ClosedException e) {
                                closed.incrementAndGet();
                            }
                        }
                        return null;
                    }));
                }
                // Close while the callers are under way: once calls have completed.
                RedisServer.waitUntil("calls under way", Duration.ofSeconds(10), () -> ok.get() + closed.get() > 0);
                if (round % 2 == 0) l.close();
                else c.close();
                for (Future<?> f : futures) f.get();
            } finally {
                pool.shutdownNow();
                l.close();
                c.close();
            }
            assertEquals(8 * 200, ok.get() + closed.get());
        }
    }

    @Test
    void cleanerFreesWhatWasNeverClosed() throws Exception {
        long before = NativeRef.FREED.get();
        for (int i = 0; i < 200; i++) {
            Limiter forgotten = client.limiter("5/s"); // never closed
            forgotten.check("k");
        }
        for (int i = 0; i < 100 && NativeRef.FREED.get() - before < 100; i++) {
            System.gc();
            Thread.sleep(20);
        }
        assertTrue(NativeRef.FREED.get() - before >= 100, "the Cleaner freed " + (NativeRef.FREED.get() - before));
    }
}
