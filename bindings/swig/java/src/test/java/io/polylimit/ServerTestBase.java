package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

/**
 * What every test class of the binding shares: a real redis-server that the
 * class starts and stops, a fresh {@link Client} per test, unique keys.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
abstract class ServerTestBase {
    static RedisServer redis;
    Client client;

    @BeforeAll
    static void startRedis() throws Exception {
        // An ACL user that may only touch keys under the "ok:" prefix, for the
        // auth and permission tests; the default user stays open.
        redis = RedisServer.start("--user", "limited", "on", ">secret", "~ok:*", "+@all");
    }

    @AfterAll
    static void stopRedis() throws Exception {
        if (redis != null) redis.close();
        redis = null;
    }

    @BeforeEach
    void open() {
        client = Client.open(redis.url());
    }

    @AfterEach
    void close() {
        client.close();
    }

    static String key() {
        return "java-test:" + UUID.randomUUID();
    }

    /** A client-clock time in the middle of an aligned minute, so that fixed windows do not roll over. */
    static Instant midMinute() {
        long s = Instant.now().getEpochSecond();
        return Instant.ofEpochSecond(s - s % 60 + 20);
    }

    static InvalidArgumentException assertInvalid(Executable call) {
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, call);
        assertEquals(Status.EINVALID, e.code());
        assertEquals("POLYLIMIT_EINVALID", e.statusName());
        assertFalse(e.getMessage().isEmpty());
        return e;
    }
}
