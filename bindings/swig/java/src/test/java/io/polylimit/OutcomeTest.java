package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link PolylimitException#outcomeUnknown()}: true when a call failed after its
 * command was sent (it may have consumed units), false when it failed before
 * the send.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class OutcomeTest {

    private static String key() {
        return "java-outcome:" + UUID.randomUUID();
    }

    @Test
    void aRefusedConnectionHasAKnownOutcome() throws Exception {
        int port = RedisServer.freePort(); // nothing listens there
        ClientOptions opts = ClientOptions.builder().poolSize(1).connectTimeout(Duration.ofMillis(300)).build();
        try (Client c = Client.open("redis://127.0.0.1:" + port, opts); Limiter l = c.limiter("5/s")) {
            UnavailableException e = assertThrows(UnavailableException.class, () -> l.check(key()));
            assertFalse(e.outcomeUnknown(), e.toString());
            List<KeyResult> results = l.checkManyResults(List.of(key(), key()), 1);
            for (KeyResult r : results) {
                assertNotNull(r.error(), r.toString());
                assertFalse(r.error().outcomeUnknown(), r.error().toString());
            }
        }
    }

    @Test
    void aPausedServerTimesOutWithAnUnknownOutcome() throws Exception {
        // Each client makes one failing call on its warm connection: a second
        // call would need a new connection, whose handshake times out before
        // anything of the call is sent (a known outcome).
        try (RedisServer paused = RedisServer.start()) {
            ClientOptions opts = ClientOptions.builder().poolSize(1).commandTimeout(Duration.ofMillis(300))
                    .connectTimeout(Duration.ofMillis(300)).build();
            List<String> keys = List.of(key(), key(), key());
            try (Client a = Client.open(paused.url(), opts); Limiter single = a.limiter("5/s");
                 Client b = Client.open(paused.url(), opts); Limiter batch = b.limiter("5/s");
                 Client c = Client.open(paused.url(), opts); Limiter thrown = c.limiter("5/s")) {
                for (Limiter l : List.of(single, batch, thrown))
                    assertEquals(3, l.checkMany(keys).stream().filter(Decision::allowed).count()); // warm
                paused.signal("STOP");
                try {
                    TimeoutException e = assertThrows(TimeoutException.class, () -> single.check(key()));
                    assertTrue(e.outcomeUnknown(), e.toString());

                    List<KeyResult> results = batch.checkManyResults(keys, 1);
                    assertEquals(3, results.size());
                    for (KeyResult r : results) {
                        assertTrue(r.error() instanceof TimeoutException, r.toString());
                        assertTrue(r.error().outcomeUnknown(), r.error().toString());
                    }

                    TimeoutException whole = assertThrows(TimeoutException.class, () -> thrown.checkMany(keys));
                    assertTrue(whole.outcomeUnknown(), whole.toString());
                } finally {
                    paused.signal("CONT");
                }
            }
        }
    }
}
