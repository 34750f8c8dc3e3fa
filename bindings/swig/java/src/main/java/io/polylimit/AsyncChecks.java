package io.polylimit;

import io.polylimit.jni.PolylimitNative;
import io.polylimit.jni.PolylimitNativeConstants;
import io.polylimit.jni.SWIGTYPE_p_polylimit_limiter;
import io.polylimit.jni.SWIGTYPE_p_polylimit_queue;
import io.polylimit.jni.polylimit_completion_batch;
import io.polylimit.jni.polylimit_error;
import java.util.Iterator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The non-blocking checks of one {@link Client}: one native completion queue
 * and one daemon thread that waits in {@code polylimit_queue_poll} and
 * completes each check's future by its token. Both are made by the first
 * {@link Limiter#checkAsync}, so a client that never uses it pays nothing.
 *
 * <p>Every future completes exactly once, through {@code pending.remove}:
 * by the poller (the check's completion), by {@link #submit} (a submit that
 * failed, or that raced {@link #close()}), or by {@link #close()} (what was
 * still outstanding).
 *
 * <p>This refers to no Client: it is part of the Client's Cleaner action, and
 * its poller thread must not keep the Client reachable.
 */
final class AsyncChecks {
    /** Completions moved per poll: the JNI crossings of a busy queue are shared. */
    private static final int BATCH = 64;
    private static final int PACKED = PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION;
    /** How long close() waits between wakes while the poller has not exited. */
    private static final long WAKE_INTERVAL_MS = 100;

    private final String threadName;
    private final ConcurrentHashMap<Long, CompletableFuture<Decision>> pending = new ConcurrentHashMap<>();
    private final AtomicLong nextToken = new AtomicLong();
    private final Object lock = new Object();
    /** The queue; null until the first submit. Closing it refuses new submits ("the client is closed"). */
    private volatile NativeRef<SWIGTYPE_p_polylimit_queue> queue;
    private Thread poller; // guarded by lock
    private volatile boolean closed;

    AsyncChecks(String clientName) {
        this.threadName = clientName == null ? "polylimit-completions" : "polylimit-completions-" + clientName;
    }

    /**
     * Submits one check of the limiter {@code h} (held by the caller for this
     * call) and returns its future; never throws a {@link PolylimitException}
     * (a failed submit is a failed future).
     */
    CompletableFuture<Decision> submit(SWIGTYPE_p_polylimit_limiter h, byte[] key, long cost) {
        NativeRef<SWIGTYPE_p_polylimit_queue> ref;
        SWIGTYPE_p_polylimit_queue q;
        try {
            ref = start();
            q = ref.acquire(); // the queue outlives this submit, even if close() runs meanwhile
        } catch (PolylimitException e) {
            return CompletableFuture.failedFuture(e);
        }
        long token = nextToken.incrementAndGet();
        CompletableFuture<Decision> f = new CompletableFuture<>();
        // Registered before the submit: the completion may be polled before it returns.
        pending.put(token, f);
        polylimit_error err = new polylimit_error();
        try {
            int rc = PolylimitNative.polylimit_limiter_submit_check(h, key, cost, q, token, err);
            if (rc != Status.OK && pending.remove(token) != null) f.completeExceptionally(Errors.exception(rc, err));
        } finally {
            err.delete();
            ref.release();
        }
        // A close() that swept the pending checks before this one was
        // registered, and whose poller may be gone: nobody else completes it.
        if (closed && pending.remove(token) != null) f.completeExceptionally(closedError());
        return f;
    }

    /** The queue, made with its poller on first use. */
    private NativeRef<SWIGTYPE_p_polylimit_queue> start() {
        NativeRef<SWIGTYPE_p_polylimit_queue> ref = queue;
        if (ref != null) return ref;
        synchronized (lock) {
            if (closed) throw new ClosedException("the client is closed");
            if (queue != null) return queue;
            SWIGTYPE_p_polylimit_queue[] out = new SWIGTYPE_p_polylimit_queue[1];
            polylimit_error err = new polylimit_error();
            try {
                Errors.check(PolylimitNative.polylimit_queue_new(out, err), err);
            } finally {
                err.delete();
            }
            // "client": a submit after close fails as the synchronous check does, "the client is closed".
            ref = new NativeRef<>(out[0], PolylimitNative::polylimit_queue_free, "client");
            SWIGTYPE_p_polylimit_queue q = ref.acquire(); // the poller's hold, released when it exits
            NativeRef<SWIGTYPE_p_polylimit_queue> held = ref;
            Thread t = new Thread(() -> poll(held, q), threadName);
            t.setDaemon(true); // an unclosed client must not keep the JVM alive
            try {
                t.start();
            } catch (Throwable e) { // no native thread to be had
                ref.release();
                ref.run();
                throw e;
            }
            poller = t;
            queue = ref;
            return ref;
        }
    }

    /** The poller thread's loop: blocks in C until completions arrive or close() wakes it. */
    private void poll(NativeRef<SWIGTYPE_p_polylimit_queue> ref, SWIGTYPE_p_polylimit_queue q) {
        long[] tokens = new long[BATCH];
        long[] values = new long[BATCH * PACKED];
        int[] codes = new int[BATCH];
        polylimit_completion_batch batch = null;
        try {
            batch = new polylimit_completion_batch(BATCH);
            while (!closed) {
                if (PolylimitNative.polylimit_queue_poll_batch(q, batch, -1) <= 0) continue; // woken
                int n = PolylimitNative.polylimit_completion_batch_unpack(batch, tokens, values, codes);
                for (int i = 0; i < n; i++) {
                    CompletableFuture<Decision> f = pending.remove(tokens[i]);
                    if (f == null) continue; // already failed by close()
                    // Dependent actions run here; CompletableFuture keeps their exceptions in their own futures.
                    if (codes[i] == Status.OK) f.complete(Limiter.packedDecision(values, i * PACKED));
                    else f.completeExceptionally(Errors.exception(batch, i, codes[i]));
                }
            }
        } finally {
            if (batch != null) batch.delete();
            ref.release(); // frees the queue when close() has closed it and no submit holds it
        }
    }

    /**
     * Refuses new checks, fails those outstanding with {@link ClosedException},
     * and waits for the poller to exit (not when called on the poller, by a
     * dependent action). Idempotent.
     */
    void close() {
        NativeRef<SWIGTYPE_p_polylimit_queue> ref;
        Thread t;
        synchronized (lock) {
            if (closed) return;
            closed = true;
            ref = queue;
            t = poller;
        }
        if (ref == null) return; // never used
        SWIGTYPE_p_polylimit_queue q = ref.acquire(); // the poller holds it, so it is not closed yet
        try {
            ref.run(); // no new submit; freed by the last holder
            // Failed before waiting for the poller: a dependent action blocked
            // on one of these (on the poller) would otherwise hold close() up.
            for (Iterator<Long> it = pending.keySet().iterator(); it.hasNext();) {
                CompletableFuture<Decision> f = pending.remove(it.next());
                if (f != null) f.completeExceptionally(closedError());
            }
            if (t == Thread.currentThread()) return; // the loop ends after this batch
            boolean interrupted = false;
            // Woken again and again: a wake that came before the poller entered its poll may be lost.
            while (t.isAlive()) {
                PolylimitNative.polylimit_queue_wake(q);
                try {
                    t.join(WAKE_INTERVAL_MS);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) Thread.currentThread().interrupt();
        } finally {
            ref.release();
        }
    }

    private static ClosedException closedError() {
        // As the synchronous check after close says; the check may have been sent.
        ClosedException e = new ClosedException("the client is closed");
        e.withOutcomeUnknown(true);
        return e;
    }
}
