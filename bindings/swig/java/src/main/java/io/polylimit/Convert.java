package io.polylimit;

import java.time.Duration;

/**
 * Type conversions from Java values to the C ABI's integers: the binding's
 * only job with a value. Ranges are the core's to check; a value that the C
 * type cannot even hold is reported here, in the core's words
 * ("<name> = <value> is out of range <min>..<max>", bounds from the generated
 * {@link Vocabulary}), so both look the same to the caller.
 */
final class Convert {
    private Convert() {}

    /** The core's message for a value outside min..max. */
    static InvalidArgumentException outOfRange(String name, Object value, long min, long max) {
        return new InvalidArgumentException(name + " = " + value + " is out of range " + min + ".." + max);
    }

    /**
     * Whole milliseconds, rounded up (away from zero): a non-zero Duration never
     * becomes 0, which C reads as "the default" or "off" for some options.
     */
    static long millis(Duration d, String name, long min, long max) {
        try {
            long ms = d.toMillis(); // truncated toward zero
            if (d.equals(Duration.ofMillis(ms))) return ms;
            return Math.addExact(ms, d.isNegative() ? -1 : 1);
        } catch (ArithmeticException e) {
            throw outOfRange(name, d, min, max);
        }
    }

    /** As {@link #millis}, for a C int field. */
    static int intMillis(Duration d, String name, long min, long max) {
        return toInt(millis(d, name, min, max), name, min, max);
    }

    /** Whole seconds, rounded up (away from zero), for a C int field. */
    static int intSeconds(Duration d, String name, long min, long max) {
        long ms = millis(d, name, min, max);
        long s = ms / 1000 + (ms % 1000 == 0 ? 0 : Long.signum(ms)); // away from zero
        return toInt(s, name, min, max);
    }

    /** A long for a C int field. */
    static int toInt(long v, String name, long min, long max) {
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) throw outOfRange(name, v, min, max);
        return (int) v;
    }
}
