package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The expected value of a header that counts whole seconds down from a window
 * (RateLimit-Reset, Retry-After, the draft's t=): started before the first
 * check of the window, it knows how long can have passed since. Under a
 * second: exactly the window (rounded up). Longer (a slow machine, a cold
 * JVM): between the window minus the seconds passed and the window.
 */
final class Countdown {
    private final long startNanos = System.nanoTime();
    private final long windowS;

    Countdown(long windowS) {
        this.windowS = windowS;
    }

    long windowS() {
        return windowS;
    }

    /** Checks a header value against the window and the time passed. */
    void check(String what, String actual) {
        long passedMs = (System.nanoTime() - startNanos) / 1_000_000;
        long v = Long.parseLong(actual);
        if (passedMs < 1000) {
            assertEquals(windowS, v, what + " (" + passedMs + " ms since the first check)");
        } else {
            long low = windowS - (passedMs + 999) / 1000;
            assertTrue(v <= windowS && v >= low, what + " = " + v + ", expected " + low + ".." + windowS
                    + " (" + passedMs + " ms since the first check)");
        }
    }

    /** Checks the t= parameter of a RateLimit field value ("name";r=N;t=T). */
    void checkT(String what, String field) {
        int at = field.lastIndexOf(";t=");
        assertTrue(at > 0, what + ": no t= in " + field);
        check(what + " t", field.substring(at + 3));
    }
}
