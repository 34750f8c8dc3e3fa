package io.polylimit;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * A native handle shared by concurrent calls and freed exactly once, after
 * close and after the last call in flight has returned: close never frees a
 * handle under a running call, and a call after close gets ClosedException
 * instead of a dangling pointer. Lock-free; calls never wait for each other.
 *
 * <p>It is also the Cleaner action of its owner, so it must not refer to the
 * owner (that would keep the owner reachable for ever).
 */
final class NativeRef<T> implements Runnable {
    private static final long CLOSED = 1L << 62;
    /** Handles freed so far, process-wide; the tests watch the Cleaner with it. */
    static final AtomicLong FREED = new AtomicLong();

    private final T handle;
    private final Consumer<T> free;
    private final String what;
    /** CLOSED bit plus the number of calls in flight. */
    private final AtomicLong state = new AtomicLong();

    NativeRef(T handle, Consumer<T> free, String what) {
        this.handle = handle;
        this.free = free;
        this.what = what;
    }

    /** Starts a call: returns the handle, which stays valid until release(). */
    T acquire() {
        for (;;) {
            long s = state.get();
            if ((s & CLOSED) != 0) throw new ClosedException("the " + what + " is closed");
            if (state.compareAndSet(s, s + 1)) return handle;
        }
    }

    /** Ends a call; the last call out after close frees the handle. */
    void release() {
        if (state.decrementAndGet() == CLOSED) free();
    }

    boolean isClosed() {
        return (state.get() & CLOSED) != 0;
    }

    /** Closes (idempotent); frees now if no call is in flight. */
    @Override
    public void run() {
        long before = state.getAndUpdate(s -> s | CLOSED);
        if (before == 0) free();
    }

    private void free() {
        free.accept(handle);
        FREED.incrementAndGet();
    }
}
