package io.polylimit;

import io.polylimit.jni.polylimit_status;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylimit.demo.Worker;
import io.polylimit.jni.PolylimitNativeConstants;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The Java binding against a real redis-server that this class starts and stops. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PolylimitTest {
    private static RedisServer redis;
    private Client client;

    @BeforeAll
    static void startRedis() throws Exception {
        // An ACL user that may only touch keys under the "ok:" prefix, for the
        // auth and permission tests; the default user stays open.
        redis = RedisServer.start("--user", "limited", "on", ">secret", "~ok:*", "+@all");
    }

    @AfterAll
    static void stopRedis() throws Exception {
        if (redis != null) redis.close();
    }

    @BeforeEach
    void open() {
        client = Client.open(redis.url());
    }

    @AfterEach
    void close() {
        client.close();
    }

    private static String key() {
        return "java-test:" + UUID.randomUUID();
    }

    @Test
    void libraryVersionMatchesHeader() {
        assertEquals(PolylimitNativeConstants.POLYLIMIT_VERSION_STRING, NativeLibrary.version());
        assertEquals(NativeLibrary.bindingVersion(), NativeLibrary.version());
    }

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
    void checkMany() {
        try (Limiter limiter = client.limiter(2, Duration.ofSeconds(30))) {
            String a = key(), b = key();
            List<Decision> first = limiter.checkMany(List.of(a, b, a), 1);
            assertEquals(3, first.size());
            assertTrue(first.get(0).allowed());
            assertTrue(first.get(1).allowed());
            assertTrue(first.get(2).allowed());
            assertEquals(0, first.get(2).remaining());
            List<Decision> second = limiter.checkMany(List.of(a, b), 1);
            assertFalse(second.get(0).allowed());
            assertTrue(second.get(1).allowed());
            assertTrue(limiter.checkMany(List.of(), 1).isEmpty());
        }
    }

    @Test
    void specsAreParsedByTheCore() {
        assertSpec("100/minute", 100);
        assertSpec("10/s", 10);
        assertSpec("5 per 2 seconds", 5);
        assertSpec(" 7 / 250ms ", 7);
        assertSpec("3 PER hour", 3);
        assertSpec("1/2d", 1);
        try (Limiter l = client.limiter("5 per 2 seconds")) {
            assertEquals("5 per 2 seconds", l.spec());
            assertEquals(Limiter.Algorithm.SLIDING_LOG, l.algorithm());
        }
        for (String bad : new String[] {"", "100", "/minute", "100/", "100/fortnight", "-1/s", "1.5/s",
                "100 minute", "99999999999999999999/s", "1/99999999999999999 days", "10/s burst 5",
                "10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s; 10/s"}) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> client.limiter(bad), bad);
            assertEquals(polylimit_status.POLYLIMIT_EINVALID, e.code());
            // The message is the C core's, which quotes the spec (no parser in Java).
            assertTrue(e.getMessage().startsWith("rate spec"), bad + " -> " + e.getMessage());
        }
        InvalidArgumentException unit = assertThrows(InvalidArgumentException.class,
                () -> client.limiter("100/fortnight"));
        assertEquals("rate spec '100/fortnight': unknown time unit 'fortnight' (use ms, s, m, h or d)",
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
    void badArgumentsThrowInvalidArgument() {
        try (Limiter limiter = client.limiter("3/min")) {
            String key = key();
            assertInvalid(() -> limiter.check(key, 0));
            assertInvalid(() -> limiter.check(key, -1));
            assertInvalid(() -> limiter.check(key, 4)); // cost above the limit
            assertInvalid(() -> limiter.check(""));
            assertInvalid(() -> limiter.check(new byte[0]));
            assertInvalid(() -> limiter.peek(""));
            assertInvalid(() -> limiter.reset(new byte[0]));
            assertThrows(NullPointerException.class, () -> limiter.check((String) null));
            assertThrows(NullPointerException.class, () -> limiter.check((byte[]) null));
            assertThrows(NullPointerException.class, () -> limiter.checkMany(null, 1));
            assertEquals(3, limiter.peek(key).remaining()); // nothing was consumed
        }
        assertInvalid(() -> client.limiter(0, Duration.ofSeconds(1)));
        assertInvalid(() -> client.limiter(-5, Duration.ofSeconds(1)));
        assertInvalid(() -> client.limiter(PolylimitNativeConstants.POLYLIMIT_MAX_LIMIT + 1, Duration.ofSeconds(1)));
        assertInvalid(() -> client.limiter(1, Duration.ZERO));
        assertInvalid(() -> client.limiter(1, Duration.ofMillis(-1)));
        assertInvalid(() -> client.limiter(1, Duration.ofNanos(1_500_000)));
        assertInvalid(() -> client.limiter(1, Duration.ofMillis(PolylimitNativeConstants.POLYLIMIT_MAX_WINDOW_MS + 1)));
        assertInvalid(() -> client.limiter(1, Duration.ofSeconds(Long.MAX_VALUE)));
        assertInvalid(() -> client.limiterBuilder("1/s").prefix("").build());
        assertInvalid(() -> client.limiterBuilder("1/s").prefix("a\0b").build());
        assertInvalid(() -> client.limiterBuilder("1/s").prefix("{tag}").build());
        assertInvalid(() -> client.limiterBuilder("1/s")
                .prefix("p".repeat(PolylimitNativeConstants.POLYLIMIT_MAX_PREFIX_LEN + 1)).build());
        assertInvalid(() -> Client.open("nonsense"));
        assertInvalid(() -> Client.open("ftp://127.0.0.1:1"));
        assertInvalid(() -> Client.open("redis://127.0.0.1:notaport"));
        assertInvalid(() -> Client.open("redis://127.0.0.1:1\0"));
        assertInvalid(() -> ClientOptions.builder().poolSize(0));
        assertInvalid(() -> ClientOptions.builder().commandTimeout(Duration.ofMillis(-1)));
        assertInvalid(() -> ClientOptions.builder().connectTimeout(Duration.ofDays(365)));
        assertThrows(NullPointerException.class, () -> Client.open(null));
        assertThrows(NullPointerException.class, () -> Client.open(redis.url(), null));
    }

    private static void assertInvalid(org.junit.jupiter.api.function.Executable call) {
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, call);
        assertEquals(polylimit_status.POLYLIMIT_EINVALID, e.code());
        assertEquals("POLYLIMIT_EINVALID", e.statusName());
        assertFalse(e.getMessage().isEmpty());
    }

    @Test
    void unavailableServer() throws Exception {
        int port = RedisServer.freePort(); // nothing listens there
        ClientOptions opts = ClientOptions.builder().connectTimeout(Duration.ofMillis(300)).build();
        try (Client c = Client.open("redis://127.0.0.1:" + port, opts); Limiter l = c.limiter("1/s")) {
            UnavailableException e = assertThrows(UnavailableException.class, () -> l.check(key()));
            assertEquals(polylimit_status.POLYLIMIT_EUNAVAILABLE, e.code());
        }
    }

    @Test
    void timeoutAndPoolExhausted() throws Exception {
        // A listener that accepts (via the backlog) and never answers.
        try (ServerSocket silent = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            ClientOptions opts = ClientOptions.builder().poolSize(1).commandTimeout(Duration.ofMillis(2500))
                    .acquireTimeout(Duration.ofMillis(50)).build();
            try (Client c = Client.open("redis://127.0.0.1:" + silent.getLocalPort(), opts);
                 Limiter l = c.limiter("1/s")) {
                ExecutorService pool = Executors.newSingleThreadExecutor();
                try {
                    Future<?> first = pool.submit(() -> l.check("k"));
                    Thread.sleep(800); // first now holds the only connection
                    PoolExhaustedException p = assertThrows(PoolExhaustedException.class, () -> l.check("k"));
                    assertEquals(polylimit_status.POLYLIMIT_EPOOL, p.code());
                    java.util.concurrent.ExecutionException e =
                            assertThrows(java.util.concurrent.ExecutionException.class, first::get);
                    assertInstanceOf(TimeoutException.class, e.getCause());
                    assertEquals(polylimit_status.POLYLIMIT_ETIMEOUT, ((PolylimitException) e.getCause()).code());
                } finally {
                    pool.shutdownNow();
                }
            }
        }
    }

    @Test
    void authAndPermission() {
        String hostPort = "127.0.0.1:" + redis.port;
        try (Client c = Client.open("redis://limited:wrong@" + hostPort); Limiter l = c.limiter("1/s")) {
            AuthException e = assertThrows(AuthException.class, () -> l.check(key()));
            assertEquals(polylimit_status.POLYLIMIT_EAUTH, e.code());
            assertFalse(c.toString().contains("wrong"), c.toString()); // password redacted
        }
        try (Client c = Client.open("redis://limited:secret@" + hostPort)) {
            try (Limiter allowed = c.limiterBuilder("1/s").prefix("ok").build()) {
                assertTrue(allowed.check(key()).allowed());
            }
            try (Limiter denied = c.limiterBuilder("1/s").prefix("forbidden").build()) {
                PermissionException e = assertThrows(PermissionException.class, () -> denied.check(key()));
                assertEquals(polylimit_status.POLYLIMIT_EPERM, e.code());
            }
        }
    }

    @Test
    void everyCodeMapsToItsException() {
        assertInstanceOf(InvalidArgumentException.class, PolylimitException.of(-2, "m", 0));
        assertInstanceOf(UnavailableException.class, PolylimitException.of(-3, "m", 0));
        assertInstanceOf(TimeoutException.class, PolylimitException.of(-4, "m", 0));
        assertInstanceOf(AuthException.class, PolylimitException.of(-5, "m", 0));
        assertInstanceOf(PermissionException.class, PolylimitException.of(-6, "m", 0));
        assertInstanceOf(ScriptException.class, PolylimitException.of(-7, "m", 0));
        assertInstanceOf(PoolExhaustedException.class, PolylimitException.of(-8, "m", 0));
        assertInstanceOf(ClosedException.class, PolylimitException.of(-11, "m", 0));
        for (int code : new int[] {-1, -9, -10, -99}) {
            PolylimitException e = PolylimitException.of(code, "", 7);
            assertEquals(PolylimitException.class, e.getClass());
            assertEquals(code, e.code());
            assertEquals(7, e.sysErrno());
            assertFalse(e.getMessage().isEmpty()); // falls back to the code's name
        }
        assertEquals("POLYLIMIT_UNKNOWN(-99)", PolylimitException.of(-99, "", 0).statusName());
        assertEquals("POLYLIMIT_ESCRIPT", PolylimitException.of(-7, "x", 0).statusName());
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
    void closeIsIdempotentAndUseAfterCloseThrows() {
        Client c = Client.open(redis.url());
        Limiter l = c.limiter("10/min");
        String key = key();
        assertTrue(l.check(key).allowed());

        c.close();
        c.close();
        assertTrue(c.isClosed());
        assertTrue(c.toString().endsWith("closed]"));
        ClosedException e = assertThrows(ClosedException.class, () -> c.limiter("1/s"));
        assertEquals(polylimit_status.POLYLIMIT_ECLOSED, e.code());
        // The limiter holds its own reference to the client and keeps working.
        assertTrue(l.check(key).allowed());

        l.close();
        l.close();
        assertTrue(l.isClosed());
        assertThrows(ClosedException.class, () -> l.check(key));
        assertThrows(ClosedException.class, () -> l.check(key.getBytes(StandardCharsets.UTF_8), 1));
        assertThrows(ClosedException.class, () -> l.peek(key));
        assertThrows(ClosedException.class, () -> l.reset(key));
        assertThrows(ClosedException.class, () -> l.checkMany(List.of(key), 1));
        assertThrows(ClosedException.class, () -> l.checkAtMost(key, 1));
        assertThrows(ClosedException.class, () -> l.refund(key, 1));
        assertThrows(ClosedException.class, () -> c.stats());
        assertThrows(ClosedException.class, () -> c.statsPrometheus());
    }

    @Test
    void closeWhileOtherThreadsCheck() throws Exception {
        // Calls racing close either finish normally or see ClosedException; the
        // native handle is freed only after the last call in flight.
        for (int round = 0; round < 5; round++) {
            Limiter l = client.limiter(1_000_000, Duration.ofSeconds(10));
            String key = key();
            AtomicInteger ok = new AtomicInteger(), closed = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    futures.add(pool.submit(() -> {
                        for (int i = 0; i < 200; i++) {
                            try {
                                l.check(key);
                                ok.incrementAndGet();
                            } catch (ClosedException e) {
                                closed.incrementAndGet();
                            }
                        }
                        return null;
                    }));
                }
                Thread.sleep(20);
                l.close();
                for (Future<?> f : futures) f.get();
            } finally {
                pool.shutdownNow();
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

    // ---- algorithms, specs and options of the limiter -----------------------

    /** A client-clock time in the middle of an aligned minute, so that fixed windows do not roll over. */
    private static Instant midMinute() {
        long s = Instant.now().getEpochSecond();
        return Instant.ofEpochSecond(s - s % 60 + 20);
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
    void checkManyIsOneRoundTrip() {
        try (Limiter limiter = client.limiter(2, Duration.ofMinutes(1))) {
            String a = key(), b = key(), c = key();
            limiter.check(c); // the script is loaded now
            long before = client.stats().roundTrips();
            List<Decision> ds = limiter.checkMany(List.of(a, b, c, a, a), 1);
            assertEquals(before + 1, client.stats().roundTrips());
            assertEquals(5, ds.size());
            assertTrue(ds.get(0).allowed());
            assertTrue(ds.get(1).allowed());
            assertTrue(ds.get(2).allowed());
            assertEquals(0, ds.get(2).remaining());
            assertTrue(ds.get(3).allowed());
            assertFalse(ds.get(4).allowed()); // a third time: denied, in order
            assertEquals(0, ds.get(4).granted());
            // Byte keys, NUL included; cost per key.
            byte[][] raw = {(a + "\0x").getBytes(StandardCharsets.UTF_8), (b + "\0").getBytes(StandardCharsets.UTF_8)};
            List<Decision> two = limiter.checkManyBytes(raw, 2);
            assertTrue(two.get(0).allowed());
            assertEquals(2, two.get(0).granted());
            assertEquals(0, two.get(1).remaining());
            // A bad key fails the call, naming it.
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> limiter.checkMany(List.of(key(), ""), 1));
            assertTrue(e.getMessage().contains("keys[1]"), e.getMessage());
            assertThrows(NullPointerException.class, () -> limiter.checkManyBytes(new byte[][] {null}, 1));
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
    void failurePoliciesWhileTheServerHangs() throws Exception {
        try (RedisServer hung = RedisServer.start()) {
            ClientOptions opts = ClientOptions.builder().commandTimeout(Duration.ofMillis(200))
                    .connectTimeout(Duration.ofMillis(200)).acquireTimeout(Duration.ofMillis(200)).build();
            try (Client c = Client.open(hung.url(), opts);
                 Limiter error = c.limiter("2/min");
                 Limiter open = c.limiterBuilder("2/min").onFailure(Limiter.FailurePolicy.OPEN).build();
                 Limiter closed = c.limiterBuilder("2/min").onFailure(Limiter.FailurePolicy.CLOSED).build();
                 Limiter local = c.limiterBuilder("2/min").onFailure(Limiter.FailurePolicy.LOCAL).build();
                 Limiter breaker = c.limiterBuilder("2/min").onFailure(Limiter.FailurePolicy.OPEN)
                         .circuitBreaker(1, Duration.ofSeconds(30)).build()) {
                assertFalse(error.check(key()).degraded()); // healthy: Redis answers
                hung.signal("STOP");
                try {
                    PolylimitException e = assertThrows(PolylimitException.class, () -> error.check(key()));
                    assertTrue(e instanceof TimeoutException || e instanceof UnavailableException, e.toString());

                    Decision o = open.check(key());
                    assertTrue(o.allowed(), o.toString());
                    assertTrue(o.degraded(), o.toString());

                    Decision cl = closed.check(key());
                    assertFalse(cl.allowed(), cl.toString());
                    assertTrue(cl.degraded(), cl.toString());
                    assertTrue(cl.retryAfter().compareTo(Duration.ZERO) > 0, cl.toString());

                    String k = key();
                    Decision l1 = local.check(k), l2 = local.check(k), l3 = local.check(k);
                    assertTrue(l1.allowed() && l1.degraded(), l1.toString());
                    assertTrue(l2.allowed() && l2.degraded(), l2.toString());
                    assertTrue(!l3.allowed() && l3.degraded(), l3.toString()); // the local limiter applies the limit

                    assertTrue(breaker.check(key()).degraded()); // one failure opens the breaker
                    long t = System.nanoTime();
                    Decision fast = breaker.check(key());
                    long tookMs = (System.nanoTime() - t) / 1_000_000;
                    assertTrue(fast.allowed() && fast.degraded(), fast.toString());
                    assertTrue(tookMs < 150, "an open breaker fails fast, took " + tookMs + "ms");

                    assertTrue(c.stats().degraded() >= 7, c.stats().toString());
                } finally {
                    hung.signal("CONT");
                }
            }
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
            assertInvalid(() -> l.checkWithLimit(key, 1, 3, Duration.ofNanos(1)));
        }
    }

    @Test
    void statsAndPrometheus() {
        try (Client c = Client.open(redis.url()); Limiter l = c.limiter("1/min")) {
            Stats zero = c.stats();
            assertEquals(0, zero.checks());
            assertEquals(PolylimitNativeConstants.POLYLIMIT_STATS_LATENCY_BUCKETS, zero.latency().size());
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
}
