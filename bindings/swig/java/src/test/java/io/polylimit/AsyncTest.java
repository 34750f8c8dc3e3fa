package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.ref.WeakReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Limiter.checkAsync against real redis-servers: it does not block, one
 * thread per client completes the futures, the limit holds across concurrent
 * calls, and timeouts and close() complete them exceptionally.
 */
class AsyncTest extends ServerTestBase {

    /** Live threads of this JVM with that name (the completion thread of a named client). */
    static List<Thread> threadsNamed(String name) {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals(name))
                .collect(Collectors.toList());
    }

    /** OS threads of this process, the library's own included (the JVM counts only its own). */
    static long osThreads() throws Exception {
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            return tasks.count();
        }
    }

    static PolylimitException failure(CompletableFuture<Decision> f) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
        return assertInstanceOf(PolylimitException.class, e.getCause());
    }

    @Test
    void sixtyFourConcurrentChecksShareOneLimitExactly() throws Exception {
        final int submitters = 8, perSubmitter = 8, limit = 20;
        try (Limiter l = client.limiter(limit + "/minute")) {
            String key = key();
            CountDownLatch go = new CountDownLatch(1);
            ExecutorService pool = Executors.newFixedThreadPool(submitters);
            List<Future<List<CompletableFuture<Decision>>>> submitted = new ArrayList<>();
            try {
                for (int s = 0; s < submitters; s++) {
                    submitted.add(pool.submit(() -> {
                        go.await();
                        List<CompletableFuture<Decision>> mine = new ArrayList<>();
                        for (int i = 0; i < perSubmitter; i++) mine.add(l.checkAsync(key));
                        return mine;
                    }));
                }
                go.countDown();
                List<Decision> all = new ArrayList<>();
                for (Future<List<CompletableFuture<Decision>>> s : submitted)
                    for (CompletableFuture<Decision> f : s.get(30, TimeUnit.SECONDS))
                        all.add(f.get(30, TimeUnit.SECONDS));
                assertEquals(submitters * perSubmitter, all.size());
                List<Decision> admitted = all.stream().filter(Decision::allowed).collect(Collectors.toList());
                assertEquals(limit, admitted.size(), "exactly the limit is admitted: " + all);
                // Each admission is one atomic script run: every remaining count 0..limit-1 once.
                Set<Long> remaining = admitted.stream().map(Decision::remaining).collect(Collectors.toCollection(TreeSet::new));
                assertEquals(LongStream.range(0, limit).boxed().collect(Collectors.toSet()), remaining);
                assertTrue(all.stream().filter(Decision::denied).allMatch(d -> d.retryAfter().compareTo(Duration.ZERO) > 0));
                assertEquals(limit, l.peek(key).limit());
                assertFalse(l.check(key).allowed(), "the synchronous check sees the same key full");
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Test
    void aPausedServerLeavesTheFuturePendingThenTimesOut() throws Exception {
        Duration timeout = Duration.ofMillis(500);
        try (RedisServer paused = RedisServer.start()) {
            ClientOptions opts = ClientOptions.builder().name("async-timeout").poolSize(1).commandTimeout(timeout)
                    .connectTimeout(timeout).build();
            try (Client c = Client.open(paused.url(), opts); Limiter l = c.limiter("5/s")) {
                assertTrue(l.checkAsync(key()).get(10, TimeUnit.SECONDS).allowed()); // warm: connected, script loaded
                paused.signal("STOP");
                try {
                    long t0 = System.nanoTime();
                    CompletableFuture<Decision> f = l.checkAsync(key());
                    long submitMs = (System.nanoTime() - t0) / 1_000_000;
                    assertFalse(f.isDone(), "pending while Redis does not answer");
                    assertTrue(submitMs < timeout.toMillis(), "checkAsync returned after " + submitMs + " ms");
                    AtomicReference<String> completedOn = new AtomicReference<>();
                    CompletableFuture<Decision> seen = f.whenComplete((d, e) -> completedOn.set(Thread.currentThread().getName()));

                    // Waiting on the dependent, not on f: a thread waiting in f.get() may run f's dependents itself.
                    assertThrows(ExecutionException.class, () -> seen.get(timeout.toMillis() + 3000, TimeUnit.MILLISECONDS));
                    long tookMs = (System.nanoTime() - t0) / 1_000_000;
                    assertEquals("polylimit-completions-async-timeout", completedOn.get(),
                            "dependent actions run on the client's completion thread");
                    ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(0, TimeUnit.MILLISECONDS));
                    TimeoutException te = assertInstanceOf(TimeoutException.class, e.getCause(), e.getCause().toString());
                    assertEquals(Status.ETIMEOUT, te.code());
                    assertTrue(te.outcomeUnknown(), "the command was sent: " + te);
                    assertTrue(tookMs >= timeout.toMillis() - 50 && tookMs <= timeout.toMillis() + 3000,
                            "completed after " + tookMs + " ms, command timeout " + timeout.toMillis() + " ms");
                } finally {
                    paused.signal("CONT");
                }
                // The client recovers once Redis answers again.
                RedisServer.waitUntil("a check after CONT", Duration.ofSeconds(10), () -> {
                    try {
                        return l.checkAsync(key()).get(5, TimeUnit.SECONDS).allowed();
                    } catch (ExecutionException e) {
                        return false;
                    }
                });
            }
        }
    }

    @Test
    void outstandingChecksUseNoThreadEach() throws Exception {
        final int calls = 100;
        try (RedisServer paused = RedisServer.start()) {
            // One connection: a second one would be connected by a submit, whose handshake
            // with the stopped server blocks (the C library connects on the submitting thread).
            ClientOptions opts = ClientOptions.builder().name("async-threads").poolSize(1)
                    .commandTimeout(Duration.ofSeconds(20)).build();
            try (Client c = Client.open(paused.url(), opts); Limiter l = c.limiter("1000/minute")) {
                assertTrue(l.checkAsync(key()).get(10, TimeUnit.SECONDS).allowed()); // the poller is started
                assertEquals(1, threadsNamed("polylimit-completions-async-threads").size());
                int javaBefore = ManagementFactory.getThreadMXBean().getThreadCount();
                long osBefore = osThreads();
                List<CompletableFuture<Decision>> futures = new ArrayList<>();
                paused.signal("STOP");
                try {
                    for (int i = 0; i < calls; i++) futures.add(l.checkAsync(key()));
                    long done = futures.stream().filter(CompletableFuture::isDone).count();
                    assertEquals(0, done, "all outstanding while Redis is stopped");
                    int javaDuring = ManagementFactory.getThreadMXBean().getThreadCount();
                    long osDuring = osThreads();
                    // Slack for threads the JVM starts on its own (JIT compilers, ...): far below one per call.
                    assertTrue(javaDuring - javaBefore <= 2, "Java threads " + javaBefore + " -> " + javaDuring);
                    assertTrue(osDuring - osBefore <= 8, "OS threads " + osBefore + " -> " + osDuring);
                    assertEquals(1, threadsNamed("polylimit-completions-async-threads").size());
                } finally {
                    paused.signal("CONT");
                }
                for (CompletableFuture<Decision> f : futures) assertTrue(f.get(20, TimeUnit.SECONDS).allowed());
            }
        }
    }

    @Test
    void closeCompletesOutstandingChecks() throws Exception {
        Duration timeout = Duration.ofSeconds(20);
        try (RedisServer paused = RedisServer.start()) {
            ClientOptions opts = ClientOptions.builder().name("async-close").poolSize(1).commandTimeout(timeout).build();
            Client c = Client.open(paused.url(), opts);
            Limiter l = c.limiter("1000/minute");
            try {
                assertTrue(l.checkAsync(key()).get(10, TimeUnit.SECONDS).allowed());
                List<Thread> poller = threadsNamed("polylimit-completions-async-close");
                assertEquals(1, poller.size());
                List<CompletableFuture<Decision>> futures = new ArrayList<>();
                paused.signal("STOP");
                try {
                    for (int i = 0; i < 20; i++) futures.add(l.checkAsync(key()));
                    assertTrue(futures.stream().noneMatch(CompletableFuture::isDone));
                    long t0 = System.nanoTime();
                    c.close();
                    long closeMs = (System.nanoTime() - t0) / 1_000_000;
                    assertTrue(closeMs < 5000, "close took " + closeMs + " ms");
                    for (CompletableFuture<Decision> f : futures) {
                        assertTrue(f.isDone(), "complete when close returns");
                        PolylimitException e = failure(f);
                        assertInstanceOf(ClosedException.class, e, e.toString());
                        assertEquals("the client is closed", e.getMessage());
                    }
                    assertFalse(poller.get(0).isAlive(), "close joined the completion thread");
                    // Later checks fail at once, as the synchronous check does.
                    CompletableFuture<Decision> late = l.checkAsync(key());
                    assertTrue(late.isCompletedExceptionally());
                    assertEquals("the client is closed", failure(late).getMessage());
                    assertEquals("the client is closed", assertThrows(ClosedException.class, () -> l.check(key())).getMessage());
                } finally {
                    paused.signal("CONT");
                }
            } finally {
                l.close();
                c.close();
            }
        }
    }

    @Test
    void closeFromADependentActionOnTheCompletionThread() throws Exception {
        Client c = Client.open(redis.url(), ClientOptions.builder().name("async-self-close").build());
        try (Limiter l = c.limiter("10/minute")) {
            CompletableFuture<Void> closed = l.checkAsync(key()).thenRun(c::close);
            closed.get(10, TimeUnit.SECONDS);
            assertTrue(c.isClosed());
            RedisServer.waitUntil("the completion thread exits", Duration.ofSeconds(10),
                    () -> threadsNamed("polylimit-completions-async-self-close").isEmpty());
        } finally {
            c.close();
        }
    }

    @Test
    void anUnclosedClientIsCleanedWithItsCompletionThread() throws Exception {
        WeakReference<Client> weak = openAndDrop("async-dropped");
        RedisServer.waitUntil("the Cleaner closes the dropped client and its thread", Duration.ofSeconds(20), () -> {
            System.gc();
            return weak.get() == null && threadsNamed("polylimit-completions-async-dropped").isEmpty();
        });
    }

    /** Uses checkAsync on a client that is then dropped without close(). */
    private WeakReference<Client> openAndDrop(String name) throws Exception {
        Client c = Client.open(redis.url(), ClientOptions.builder().name(name).build());
        Limiter l = c.limiter("10/minute");
        assertTrue(l.checkAsync(key()).get(10, TimeUnit.SECONDS).allowed());
        assertEquals(1, threadsNamed("polylimit-completions-" + name).size());
        return new WeakReference<>(c);
    }
}
