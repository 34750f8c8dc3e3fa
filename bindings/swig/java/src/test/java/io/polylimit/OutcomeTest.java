package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
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

    /**
     * Threads check (single keys, and batches on every other call of half of
     * them) while another connection kills every normal client again and
     * again (CLIENT KILL during load). Afterwards the stored state, read
     * through a client of its own, holds every admitted unit plus at most one
     * unit per error with an unknown outcome: errors with a known outcome
     * consumed nothing (docs/error-model.md, "Unknown outcome").
     */
    @Test
    void aClientKillStormConsumesOnlyThroughUnknownOutcomes() throws Exception {
        final int workers = 4, batch = 4;
        final long limit = 1_000_000; // never denies: every unit stored is an admission's or an error's
        final String prefix = "java-storm-" + UUID.randomUUID();
        List<String> keys = new ArrayList<>();
        for (int w = 0; w < workers; w++)
            for (int k = 0; k < batch; k++) keys.add("w" + w + "k" + k);
        AtomicLong admitted = new AtomicLong(), denied = new AtomicLong(), unknown = new AtomicLong(),
                known = new AtomicLong(), calls = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        int kills = 0;
        try (RedisServer server = RedisServer.start()) {
            ClientOptions opts = ClientOptions.builder().poolSize(2).commandTimeout(Duration.ofSeconds(2)).build();
            try (Client c = Client.open(server.url(), opts);
                 Limiter l = c.limiterBuilder(limit, Duration.ofHours(1)).prefix(prefix).build()) {
                List<Thread> threads = new ArrayList<>();
                for (int w = 0; w < workers; w++) {
                    final int me = w;
                    final List<String> mine = keys.subList(w * batch, (w + 1) * batch);
                    threads.add(new Thread(() -> {
                        for (long i = 0; !stop.get(); i++) {
                            calls.incrementAndGet();
                            if (me % 2 == 1 && i % 2 == 1) { // a batch of this thread's keys
                                List<KeyResult> results;
                                try {
                                    results = l.checkManyResults(mine, 1);
                                } catch (PolylimitException e) {
                                    (e.outcomeUnknown() ? unknown : known).addAndGet(mine.size());
                                    continue;
                                }
                                for (KeyResult r : results) {
                                    if (r.error() != null)
                                        (r.error().outcomeUnknown() ? unknown : known).incrementAndGet();
                                    else
                                        (r.decision().allowed() ? admitted : denied).incrementAndGet();
                                }
                                continue;
                            }
                            try {
                                (l.check(mine.get((int) (i % batch))).allowed() ? admitted : denied).incrementAndGet();
                            } catch (PolylimitException e) {
                                (e.outcomeUnknown() ? unknown : known).incrementAndGet();
                            }
                        }
                    }, "storm-" + w));
                }
                threads.forEach(Thread::start);
                try {
                    // Kill, then wait until the checkers are back at work (more
                    // calls admitted) before the next kill; until enough kills
                    // hit calls in flight, or a time limit.
                    long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
                    while (System.nanoTime() < giveUp && !(unknown.get() >= 10 && kills >= 50)) {
                        String reply = server.command("CLIENT", "KILL", "TYPE", "normal"); // not this one (SKIPME)
                        assertTrue(reply.startsWith(":"), reply);
                        kills++;
                        long resumeAt = admitted.get() + 10;
                        long back = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
                        while (admitted.get() < resumeAt && System.nanoTime() < back) Thread.sleep(1);
                    }
                } finally {
                    stop.set(true);
                    for (Thread t : threads) t.join();
                }
                // The client recovers once the storm ends.
                RedisServer.waitUntil("a check after the storm", Duration.ofSeconds(5), () -> {
                    try {
                        return l.check("after").allowed();
                    } catch (PolylimitException e) {
                        return false;
                    }
                });
            }
            // The stored units, through a client of its own (a separate connection).
            long stored = 0;
            try (Client reader = Client.open(server.url());
                 Limiter peek = reader.limiterBuilder(limit, Duration.ofHours(1)).prefix(prefix).build()) {
                for (String k : keys) stored += limit - peek.peek(k).remaining();
            }
            System.out.printf("CLIENT KILL storm: %d kills, %d calls; %d admitted, %d stored; errors: %d with an "
                    + "unknown outcome, %d with a known outcome; %d of the unknown ones consumed%n", kills,
                    calls.get(), admitted.get(), stored, unknown.get(), known.get(), stored - admitted.get());
            assertEquals(0, denied.get(), "denials under a limit never reached");
            assertTrue(unknown.get() > 0, "no kill hit a call in flight (" + kills + " kills)");
            assertTrue(stored >= admitted.get(), "an admitted unit is missing: " + stored + " stored, "
                    + admitted.get() + " admitted");
            assertTrue(stored - admitted.get() <= unknown.get(), "an error with a known outcome consumed units: "
                    + stored + " stored, " + admitted.get() + " admitted, " + unknown.get() + " unknown");
        }
    }
}
