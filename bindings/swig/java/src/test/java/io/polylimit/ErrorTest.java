package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.polylimit.jni.PolylimitNative;
import io.polylimit.jni.polylimit_status;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** Errors: bad arguments and the core's one message format, the generated status classes, outages. */
class ErrorTest extends ServerTestBase {
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
        assertInvalid(() -> client.limiter(Vocabulary.MAX_LIMIT + 1, Duration.ofSeconds(1)));
        assertInvalid(() -> client.limiter(1, Duration.ZERO));
        assertInvalid(() -> client.limiter(1, Duration.ofMillis(-1)));
        assertInvalid(() -> client.limiter(1, Duration.ofMillis(Vocabulary.MAX_WINDOW_MS + 1)));
        assertInvalid(() -> client.limiter(1, Duration.ofSeconds(Long.MAX_VALUE)));
        assertInvalid(() -> client.limiterBuilder("1/s").prefix("").build());
        assertInvalid(() -> client.limiterBuilder("1/s").prefix("a\0b").build());
        assertInvalid(() -> client.limiterBuilder("1/s").prefix("{tag}").build());
        assertInvalid(() -> client.limiterBuilder("1/s")
                .prefix("p".repeat((int) Vocabulary.MAX_PREFIX_LEN + 1)).build());
        assertInvalid(() -> Client.open("nonsense"));
        assertInvalid(() -> Client.open("ftp://127.0.0.1:1"));
        assertInvalid(() -> Client.open("redis://127.0.0.1:notaport"));
        assertInvalid(() -> Client.open("redis://127.0.0.1:1\0"));
        // Client options are checked by the core when the client opens.
        assertInvalid(() -> Client.open(redis.url(), ClientOptions.builder().poolSize(-1).build()));
        assertInvalid(() -> Client.open(redis.url(),
                ClientOptions.builder().commandTimeout(Duration.ofMillis(-1)).build()));
        assertInvalid(() -> ClientOptions.builder().connectTimeout(Duration.ofDays(365))); // no C int holds it
        assertThrows(NullPointerException.class, () -> ClientOptions.builder().commandTimeout(null));
        // No URL is no default: the core reads POLYLIMIT_URL (unset in the tests: see ClientOptionsTest).
        assertInvalid(() -> Client.open((String) null));
        assertThrows(NullPointerException.class, () -> Client.open(redis.url(), null));
    }

    @Test
    void oneBoundOneMessageInEveryLanguage() {
        // The same strings the Python and Go tests assert: the core checks, once.
        InvalidArgumentException pool = assertInvalid(
                () -> Client.open(redis.url(), ClientOptions.builder().poolSize(5000).build()));
        assertTrue(pool.getMessage().contains("pool_size = 5000 is out of range 1..4096"), pool.getMessage());
        InvalidArgumentException cache = assertInvalid(
                () -> client.limiterBuilder("1/s").denyCache(20_000_000).build());
        assertTrue(cache.getMessage().contains("deny_cache_size = 20000000 is out of range 0..10000000"),
                cache.getMessage());
        InvalidArgumentException limit = assertInvalid(
                () -> client.limiter(Vocabulary.MAX_LIMIT + 1, Duration.ofSeconds(1)));
        assertTrue(limit.getMessage().contains("limit = " + (Vocabulary.MAX_LIMIT + 1) + " is out of range "
                + Vocabulary.MIN_LIMIT + ".." + Vocabulary.MAX_LIMIT), limit.getMessage());
        // A value no C int can hold never reaches the core: converted here, in the same words.
        InvalidArgumentException connect = assertInvalid(
                () -> ClientOptions.builder().connectTimeout(Duration.ofDays(365)));
        assertEquals("connect_timeout_ms = 31536000000 is out of range 1..3600000", connect.getMessage());
        // 0 still means the default.
        try (Client c = Client.open(redis.url(), ClientOptions.builder().poolSize(0)
                .commandTimeout(Duration.ZERO).build()); Limiter l = c.limiter("1/s")) {
            assertTrue(l.check(key()).allowed());
        }
    }

    @Test
    void durationsBecomeWholeMillisecondsRoundedUp() {
        try (Limiter l = client.limiter(1, Duration.ofNanos(1_500_000))) {
            assertEquals("1 per 2ms", l.spec());
        }
        try (Limiter l = client.limiter(1, Duration.ofNanos(1))) {
            assertEquals("1 per 1ms", l.spec());
        }
        // A non-zero Duration never becomes 0 (a default): the core sees the negative.
        InvalidArgumentException e = assertInvalid(() -> client.limiter(1, Duration.ofNanos(-1)));
        assertTrue(e.getMessage().contains("window_ms = -1 is out of range"), e.getMessage());
        String opts = ClientOptions.builder().commandTimeout(Duration.ofNanos(1))
                .keepalive(Duration.ofMillis(1500)).build().toString();
        assertTrue(opts.contains("commandTimeoutMs=1,"), opts);
        assertTrue(opts.contains("keepaliveS=2,"), opts);
    }

    @Test
    void everyCodeMapsToItsException() {
        Map<Integer, Class<? extends PolylimitException>> expected = new HashMap<>();
        expected.put(-1, PolylimitException.class);
        expected.put(-2, InvalidArgumentException.class);
        expected.put(-3, UnavailableException.class);
        expected.put(-4, TimeoutException.class);
        expected.put(-5, AuthException.class);
        expected.put(-6, PermissionException.class);
        expected.put(-7, ScriptException.class);
        expected.put(-8, PoolExhaustedException.class);
        expected.put(-9, NoMemoryException.class);
        expected.put(-10, ServerException.class);
        expected.put(-11, ClosedException.class);
        expected.put(-12, NotDurableException.class);
        for (int code = -1; code >= -12; code--) {
            PolylimitException e = PolylimitException.of(code, "m", 7);
            assertEquals(expected.get(code), e.getClass(), Status.name(code));
            assertEquals(Status.exceptionClass(code), e.getClass());
            assertEquals(code, e.code());
            assertEquals(7, e.sysErrno());
            assertEquals("m", e.getMessage());
            // The name is the C library's own.
            assertEquals(PolylimitNative.polylimit_status_name(code), e.statusName());
            assertEquals(Status.retryable(code), e.retryable());
        }
        for (int code : new int[] {-1, -13, -99}) {
            PolylimitException e = PolylimitException.of(code, "", 7);
            assertEquals(PolylimitException.class, e.getClass());
            assertEquals(code, e.code());
            assertFalse(e.getMessage().isEmpty()); // falls back to the code's name
        }
        assertEquals("POLYLIMIT_UNKNOWN(-99)", PolylimitException.of(-99, "", 0).statusName());
        assertEquals("POLYLIMIT_ESCRIPT", PolylimitException.of(-7, "x", 0).statusName());
        assertTrue(PolylimitException.of(Status.ETIMEOUT, "x", 0).retryable());
        assertFalse(PolylimitException.of(Status.EINVALID, "x", 0).retryable());
    }

    @Test
    void generatedStatusesCoverTheHeader() throws Exception {
        // Every status SWIG read from polylimit.h has its generated constant,
        // the C library's name, and an exception class; nothing more or less.
        Set<Integer> fromHeader = new TreeSet<>();
        Set<Class<?>> classes = new HashSet<>();
        for (Field f : polylimit_status.class.getFields()) {
            int code = f.getInt(null);
            fromHeader.add(code);
            assertEquals(f.getName(), Status.name(code));
            assertEquals(PolylimitNative.polylimit_status_name(code), Status.name(code));
            assertEquals(code, Status.class.getField(f.getName().substring("POLYLIMIT_".length())).getInt(null));
            assertFalse(Status.text(code).isEmpty());
            if (code == Status.OK) continue;
            Class<? extends PolylimitException> type = Status.exceptionClass(code);
            classes.add(type);
            if (type != PolylimitException.class) {
                // A generated subclass: its constructors set its own code.
                assertEquals(code, type.getConstructor(String.class).newInstance("x").code());
                assertEquals(3, type.getConstructor(String.class, int.class).newInstance("x", 3).sysErrno());
            }
        }
        assertEquals(fromHeader, new TreeSet<>(Status.CODES));
        assertEquals(13, fromHeader.size()); // POLYLIMIT_OK and -1..-12
        assertEquals(12, classes.size()); // POLYLIMIT_ERROR is the base class, every other code its own
        assertEquals("POLYLIMIT_UNKNOWN", PolylimitNative.polylimit_status_name(-13));
    }

    @Test
    void unavailableServer() throws Exception {
        int port = RedisServer.freePort(); // nothing listens there
        ClientOptions opts = ClientOptions.builder().connectTimeout(Duration.ofMillis(300)).build();
        try (Client c = Client.open("redis://127.0.0.1:" + port, opts); Limiter l = c.limiter("1/s")) {
            UnavailableException e = assertThrows(UnavailableException.class, () -> l.check(key()));
            assertEquals(Status.EUNAVAILABLE, e.code());
        }
    }

    @Test
    void timeoutsAgainstASilentServer() throws Exception {
        // A listener that accepts (via the backlog) and never answers. Calls
        // share the one connection (pipelined), so a second caller waits for
        // it instead of failing with EPOOL (that needs 4096 queued calls).
        try (ServerSocket silent = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            ClientOptions opts = ClientOptions.builder().poolSize(1).commandTimeout(Duration.ofMillis(500))
                    .acquireTimeout(Duration.ofMillis(50)).build();
            try (Client c = Client.open("redis://127.0.0.1:" + silent.getLocalPort(), opts);
                 Limiter l = c.limiter("1/s")) {
                ExecutorService pool = Executors.newSingleThreadExecutor();
                try {
                    Future<?> first = pool.submit(() -> l.check("k"));
                    RedisServer.waitUntil("a request pending at the silent listener", Duration.ofSeconds(2),
                            () -> RedisServer.requestPending(silent.getLocalPort()));
                    long t0 = System.nanoTime();
                    // The second waits for the connection the first is making; when that
                    // fails it meets the reconnect backoff: a timeout or "unavailable".
                    PolylimitException second = assertThrows(PolylimitException.class, () -> l.check("k"));
                    assertTrue(second.code() == Status.ETIMEOUT || second.code() == Status.EUNAVAILABLE,
                            second.toString());
                    assertTrue(System.nanoTime() - t0 < 3_000_000_000L, "bounded by the command timeout");
                    java.util.concurrent.ExecutionException e =
                            assertThrows(java.util.concurrent.ExecutionException.class, first::get);
                    assertInstanceOf(TimeoutException.class, e.getCause());
                    assertEquals(Status.ETIMEOUT, ((PolylimitException) e.getCause()).code());
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
            assertEquals(Status.EAUTH, e.code());
            assertFalse(c.toString().contains("wrong"), c.toString()); // password redacted
        }
        try (Client c = Client.open("redis://limited:secret@" + hostPort)) {
            try (Limiter allowed = c.limiterBuilder("1/s").prefix("ok").build()) {
                assertTrue(allowed.check(key()).allowed());
            }
            try (Limiter denied = c.limiterBuilder("1/s").prefix("forbidden").build()) {
                PermissionException e = assertThrows(PermissionException.class, () -> denied.check(key()));
                assertEquals(Status.EPERM, e.code());
            }
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
}
