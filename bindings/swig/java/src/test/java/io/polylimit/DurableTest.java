package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Failover-safe mode ({@code durable(replicas, timeout)}): a check is admitted only
 * once a replica acknowledged its write. The class's server has no replica, so every
 * admitted check is "not durable": {@link NotDurableException}, or the failure
 * policy's answer.
 */
class DurableTest extends ServerTestBase {
    @Test
    void notDurableWithoutAReplica() {
        try (Limiter l = client.limiterBuilder("5/min").durable(1, Duration.ofMillis(50)).build()) {
            String k = key();
            long t = System.nanoTime();
            NotDurableException e = assertThrows(NotDurableException.class, () -> l.check(k));
            long tookMs = (System.nanoTime() - t) / 1_000_000;
            assertEquals(Status.ENOTDURABLE, e.code());
            assertTrue(e.outcomeUnknown(), "the master consumed the units");
            assertTrue(e.getMessage().contains("0 of 1 replicas within 50 ms (WAIT)"), e.getMessage());
            assertTrue(tookMs >= 45 && tookMs <= 300, "took " + tookMs + " ms");
            assertEquals(4, l.peek(k).remaining()); // the units stay consumed on the master
        }
    }

    @Test
    void failurePoliciesAnswerNotDurable() {
        for (Limiter.FailurePolicy policy : new Limiter.FailurePolicy[] {
                Limiter.FailurePolicy.OPEN, Limiter.FailurePolicy.CLOSED, Limiter.FailurePolicy.LOCAL}) {
            try (Limiter l = client.limiterBuilder("5/min").onFailure(policy)
                    .durable(1, Duration.ofMillis(50)).build()) {
                Decision d = l.check(key());
                assertTrue(d.degraded(), policy + ": " + d);
                assertEquals(policy != Limiter.FailurePolicy.CLOSED, d.allowed(), policy + ": " + d);
            }
        }
    }

    @Test
    void optionsAreCheckedByTheCore() {
        ClientOptions opts = ClientOptions.builder().commandTimeout(Duration.ofMillis(200)).build();
        try (Client c = Client.open(redis.url(), opts)) {
            InvalidArgumentException e = assertInvalid(
                    () -> c.limiterBuilder("5/min").durable(101, Duration.ZERO).build());
            assertTrue(e.getMessage().contains("durable_replicas = 101 is out of range 0..100"), e.getMessage());
            e = assertInvalid(() -> c.limiterBuilder("5/min").durable(1, Duration.ofMillis(200)).build());
            assertTrue(e.getMessage().contains("must be below the client's command_timeout_ms = 200"), e.getMessage());
            // Zero: the default timeout (100 ms), which fits.
            c.limiterBuilder("5/min").durable(1, Duration.ZERO).build().close();
        }
        assertEquals(100, Vocabulary.DEFAULT_DURABLE_TIMEOUT_MS);
    }
}
