package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** checkMany / checkManyResults: one round trip, each key decided on its own, each failure its own. */
class BatchTest extends ServerTestBase {
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
    void eachFailedKeyGetsItsOwnError() {
        try (Limiter limiter = client.limiter(2, Duration.ofMinutes(1))) {
            String a = key(), b = key();
            List<KeyResult> rs = limiter.checkManyResults(List.of(a, "", b, ""), 1);
            assertEquals(4, rs.size());
            assertTrue(rs.get(0).ok(), rs.get(0).toString());
            assertTrue(rs.get(0).get().allowed());
            assertEquals(1, rs.get(0).decision().remaining());
            assertTrue(rs.get(2).ok());
            assertNull(rs.get(2).error());

            // The empty key: its own status and its own message, no "keys[1]: "
            // prefix: the very text the single-key call gives.
            assertFalse(rs.get(1).ok());
            assertNull(rs.get(1).decision());
            InvalidArgumentException empty = assertInstanceOf(InvalidArgumentException.class, rs.get(1).error());
            assertEquals(Status.EINVALID, empty.code());
            String single = assertInvalid(() -> limiter.check("")).getMessage();
            assertEquals(single, empty.getMessage());
            assertSame(empty, assertThrows(InvalidArgumentException.class, () -> rs.get(1).get()));
            InvalidArgumentException empty2 = assertInstanceOf(InvalidArgumentException.class, rs.get(3).error());
            assertNotSame(empty, empty2);
            assertEquals(single, empty2.getMessage());

            // The throwing form: the first failed key's exception, named by index.
            InvalidArgumentException first = assertThrows(InvalidArgumentException.class,
                    () -> limiter.checkMany(List.of(b, ""), 1));
            assertEquals("keys[1]: " + single, first.getMessage());

            // Byte keys, NUL included.
            List<KeyResult> raw = limiter.checkManyResults(new byte[][] {a.getBytes(StandardCharsets.UTF_8),
                    new byte[0], (a + "\0").getBytes(StandardCharsets.UTF_8)}, 1);
            assertEquals(0, raw.get(0).get().remaining()); // a, the second time
            assertInstanceOf(InvalidArgumentException.class, raw.get(1).error());
            assertEquals(1, raw.get(2).get().remaining()); // another key
            // A failure of the whole call (a bad cost) is every key's error.
            for (KeyResult r : limiter.checkManyResults(List.of(a, b), 0)) {
                InvalidArgumentException e = assertInstanceOf(InvalidArgumentException.class, r.error());
                assertTrue(e.getMessage().contains("cost"), e.getMessage());
            }
            assertTrue(limiter.checkManyResults(List.of(), 1).isEmpty());
            assertThrows(NullPointerException.class, () -> limiter.checkManyResults(new byte[][] {null}, 1));
            assertThrows(IllegalArgumentException.class, () -> new KeyResult(null, null));
        }
    }

    @Test
    void aKeyThatFailsInRedisFailsAlone() throws Exception {
        // A GCRA state key that holds a list makes the script fail inside Redis
        // (WRONGTYPE) for that key alone. The storage key layout is the core's:
        // prefix:gcra:{fnv1a64(key)}:key (core/src/limiter/limiter.cpp).
        String prefix = "java-batch-" + UUID.randomUUID().toString().substring(0, 8);
        try (Limiter limiter = client.limiterBuilder(2, Duration.ofMinutes(1)).algorithm(Limiter.Algorithm.GCRA)
                .prefix(prefix).build()) {
            String a = key(), wrong = key();
            String storage = prefix + ":gcra:{" + String.format("%016x", fnv1a64(wrong)) + "}:" + wrong;
            assertEquals(":1", redis.command("LPUSH", storage, "not a GCRA state"));
            try {
                List<KeyResult> rs = limiter.checkManyResults(List.of(a, wrong, ""), 1);
                assertTrue(rs.get(0).get().allowed());
                ScriptException script = assertInstanceOf(ScriptException.class, rs.get(1).error(),
                        rs.get(1).toString());
                assertEquals(Status.ESCRIPT, script.code());
                assertTrue(script.getMessage().contains("WRONGTYPE"), script.getMessage());
                assertFalse(script.getMessage().startsWith("keys["), script.getMessage());
                assertInstanceOf(InvalidArgumentException.class, rs.get(2).error());
                // The throwing form names the first failed key, with the same message.
                ScriptException first = assertThrows(ScriptException.class,
                        () -> limiter.checkMany(List.of(a, wrong, ""), 1));
                assertEquals("keys[1]: " + script.getMessage(), first.getMessage());
            } finally {
                redis.command("DEL", storage);
            }
        }
    }

    /** The hash of the core's storage key (core/src/limiter/limiter.cpp). */
    private static long fnv1a64(String key) {
        long h = 0xcbf29ce484222325L;
        for (byte b : key.getBytes(StandardCharsets.UTF_8)) {
            h ^= b & 0xff;
            h *= 0x100000001b3L;
        }
        return h;
    }
}
