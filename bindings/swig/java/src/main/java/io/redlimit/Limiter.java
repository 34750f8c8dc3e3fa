package io.redlimit;

import io.redlimit.jni.rl_clock;
import io.redlimit.jni.RedlimitNative;
import io.redlimit.jni.SWIGTYPE_p_rl_client;
import io.redlimit.jni.SWIGTYPE_p_rl_limiter;
import io.redlimit.jni.rl_decision;
import io.redlimit.jni.rl_error;
import io.redlimit.jni.rl_limiter_options;
import io.redlimit.jni.rl_status;
import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An exact sliding-window limit (limit units per window) applied per key;
 * thread-safe. Each decision is one atomic script call in Redis, so any number
 * of processes sharing a Redis and a prefix never admit more than the limit.
 *
 * <p>Keys are bytes: a String key is its UTF-8 encoding, and a byte[] key may
 * hold any bytes, NUL included. An empty key is an {@link InvalidArgumentException},
 * a null key a {@link NullPointerException}.
 *
 * <p>{@link #close()} is idempotent and thread-safe; later calls throw
 * {@link ClosedException}.
 */
public final class Limiter implements AutoCloseable {
    /** Where the time of a decision comes from. */
    public enum Clock {
        /** The Redis server's TIME: app servers with skewed clocks still agree (default). */
        SERVER(rl_clock.RL_CLOCK_SERVER),
        /** This process's realtime clock. */
        CLIENT(rl_clock.RL_CLOCK_CLIENT);

        private final int code;

        Clock(int code) {
            this.code = code;
        }
    }

    private final NativeRef<SWIGTYPE_p_rl_limiter> ref;
    private final Cleaner.Cleanable cleanable;
    private final long limit;
    private final Duration window;
    private final String prefix;
    private final Clock clock;

    private Limiter(SWIGTYPE_p_rl_limiter handle, long limit, Duration window, String prefix, Clock clock) {
        this.ref = new NativeRef<>(handle, RedlimitNative::rl_limiter_free, "limiter");
        this.cleanable = Natives.CLEANER.register(this, ref);
        this.limit = limit;
        this.window = window;
        this.prefix = prefix;
        this.clock = clock;
    }

    /** Admits one unit for key, or denies it. */
    public Decision check(String key) {
        return check(bytes(key), 1);
    }

    public Decision check(byte[] key) {
        return check(key, 1);
    }

    public Decision check(String key, long cost) {
        return check(bytes(key), cost);
    }

    /**
     * Admits {@code cost} units for key, all or nothing.
     *
     * @param cost 1..limit, else {@link InvalidArgumentException}
     * @return the decision; a denial is {@code allowed() == false}, not an exception
     */
    public Decision check(byte[] key, long cost) {
        Objects.requireNonNull(key, "key");
        SWIGTYPE_p_rl_limiter h = ref.acquire();
        rl_decision out = new rl_decision();
        rl_error err = new rl_error();
        try {
            Status.check(RedlimitNative.rl_check(h, key, cost, out, err), err);
            return decision(out);
        } finally {
            out.delete();
            err.delete();
            ref.release();
        }
    }

    /**
     * As {@link #check(byte[], long)} at a time given by the caller instead of
     * the limiter's clock (replays, tests). Microsecond precision.
     */
    public Decision checkAt(byte[] key, long cost, Instant at) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(at, "at");
        long nowUs;
        try {
            nowUs = ChronoUnit.MICROS.between(Instant.EPOCH, at);
        } catch (ArithmeticException e) {
            throw new InvalidArgumentException("at = " + at + " is out of range");
        }
        SWIGTYPE_p_rl_limiter h = ref.acquire();
        rl_decision out = new rl_decision();
        rl_error err = new rl_error();
        try {
            Status.check(RedlimitNative.rl_check_at(h, key, cost, nowUs, out, err), err);
            return decision(out);
        } finally {
            out.delete();
            err.delete();
            ref.release();
        }
    }

    public Decision checkAt(String key, long cost, Instant at) {
        return checkAt(bytes(key), cost, at);
    }

    /**
     * Checks each key for {@code cost}, in order; one decision per key. Each key
     * is decided on its own (not all-or-nothing across keys). The first error
     * stops and is thrown.
     */
    public List<Decision> checkMany(List<String> keys, long cost) {
        Objects.requireNonNull(keys, "keys");
        List<Decision> out = new ArrayList<>(keys.size());
        for (String key : keys) out.add(check(key, cost));
        return out;
    }

    public List<Decision> checkMany(List<String> keys) {
        return checkMany(keys, 1);
    }

    /** What a check of one unit would answer now, without consuming anything. */
    public Decision peek(String key) {
        return peek(bytes(key));
    }

    public Decision peek(byte[] key) {
        Objects.requireNonNull(key, "key");
        SWIGTYPE_p_rl_limiter h = ref.acquire();
        rl_decision out = new rl_decision();
        rl_error err = new rl_error();
        try {
            Status.check(RedlimitNative.rl_peek(h, key, out, err), err);
            return decision(out);
        } finally {
            out.delete();
            err.delete();
            ref.release();
        }
    }

    /** Clears the key's state: it is back to full capacity. */
    public void reset(String key) {
        reset(bytes(key));
    }

    public void reset(byte[] key) {
        Objects.requireNonNull(key, "key");
        SWIGTYPE_p_rl_limiter h = ref.acquire();
        rl_error err = new rl_error();
        try {
            Status.check(RedlimitNative.rl_reset(h, key, err), err);
        } finally {
            err.delete();
            ref.release();
        }
    }

    public long limit() {
        return limit;
    }

    public Duration window() {
        return window;
    }

    /** The Redis key prefix ("rl" unless set). */
    public String prefix() {
        return prefix;
    }

    public Clock clock() {
        return clock;
    }

    public boolean isClosed() {
        return ref.isClosed();
    }

    /** Frees the limiter; a second call does nothing. Calls in flight finish first. */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "Limiter[" + limit + " per " + window.toMillis() + "ms, prefix=" + prefix + ", clock=" + clock
                + (isClosed() ? ", closed]" : "]");
    }

    private static byte[] bytes(String key) {
        return Objects.requireNonNull(key, "key").getBytes(StandardCharsets.UTF_8);
    }

    private static Decision decision(rl_decision d) {
        return new Decision(d.getAllowed() != 0, d.getLimit(), d.getRemaining(),
                Duration.ofMillis(d.getRetry_after_ms()), Duration.ofMillis(d.getReset_after_ms()),
                d.getCached() != 0, d.getDegraded() != 0);
    }

    // "<limit> / [n] <unit>" or "<limit> per [n] <unit>", e.g. 100/minute, 10/s, 5 per 2 seconds.
    private static final Pattern SPEC =
            Pattern.compile("(?i)\\s*(\\d+)\\s*(?:/|\\sper\\s)\\s*(\\d+)?\\s*([a-z]+)\\s*");

    /** Parses a rate spec into {limit, window in ms}; the one place specs are read. */
    static long[] parseSpec(String spec) {
        Objects.requireNonNull(spec, "spec");
        Matcher m = SPEC.matcher(spec);
        if (!m.matches())
            throw new InvalidArgumentException("spec \"" + spec + "\" is not like \"100/minute\", \"10/s\" or \"5 per 2 seconds\"");
        long unitMs;
        switch (m.group(3).toLowerCase(Locale.ROOT)) {
            case "ms": case "msec": case "millisecond": case "milliseconds": unitMs = 1L; break;
            case "s": case "sec": case "secs": case "second": case "seconds": unitMs = 1_000L; break;
            case "m": case "min": case "mins": case "minute": case "minutes": unitMs = 60_000L; break;
            case "h": case "hr": case "hrs": case "hour": case "hours": unitMs = 3_600_000L; break;
            case "d": case "day": case "days": unitMs = 86_400_000L; break;
            default: throw new InvalidArgumentException("spec \"" + spec + "\": unknown unit \"" + m.group(3) + "\"");
        }
        try {
            long limit = Long.parseLong(m.group(1));
            long count = m.group(2) == null ? 1 : Long.parseLong(m.group(2));
            return new long[] {limit, Math.multiplyExact(count, unitMs)};
        } catch (NumberFormatException | ArithmeticException e) {
            throw new InvalidArgumentException("spec \"" + spec + "\": number out of range");
        }
    }

    /**
     * Builds a {@link Limiter}: {@code client.limiterBuilder("10/s").prefix("api").clock(Clock.CLIENT).build()}.
     * Everything is validated by build(), before any I/O.
     */
    public static final class Builder {
        private final Client client;
        private final long limit;
        private final Duration window;
        private String prefix;
        private Clock clock = Clock.SERVER;

        Builder(Client client, String spec) {
            this.client = client;
            long[] parsed = parseSpec(spec);
            this.limit = parsed[0];
            this.window = Duration.ofMillis(parsed[1]);
        }

        Builder(Client client, long limit, Duration window) {
            this.client = client;
            this.limit = limit;
            this.window = Objects.requireNonNull(window, "window");
        }

        /** Redis key prefix (default "rl"); at most 256 bytes of UTF-8, no NUL. */
        public Builder prefix(String prefix) {
            this.prefix = Objects.requireNonNull(prefix, "prefix");
            return this;
        }

        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /** Shorthand for {@code clock(Clock.CLIENT)}. */
        public Builder clientClock() {
            return clock(Clock.CLIENT);
        }

        /**
         * @throws InvalidArgumentException for a limit, window or prefix out of range
         * @throws ClosedException if the client is closed
         */
        public Limiter build() {
            long windowMs;
            try {
                windowMs = window.toMillis();
            } catch (ArithmeticException e) {
                throw new InvalidArgumentException("window = " + window + " is too long");
            }
            if (!window.equals(Duration.ofMillis(windowMs)))
                throw new InvalidArgumentException("window = " + window + " is not a whole number of milliseconds");
            rl_limiter_options opts = new rl_limiter_options();
            rl_error err = new rl_error();
            try {
                opts.setLimit(limit);
                opts.setWindow_ms(windowMs);
                opts.setClock(clock.code);
                if (prefix != null && opts.setPrefix(prefix.getBytes(StandardCharsets.UTF_8)) != rl_status.RL_OK)
                    throw new InvalidArgumentException("prefix contains a NUL character");
                SWIGTYPE_p_rl_limiter[] out = new SWIGTYPE_p_rl_limiter[1];
                SWIGTYPE_p_rl_client c = client.acquire();
                try {
                    Status.check(RedlimitNative.rl_limiter_new(c, opts, out, err), err);
                } finally {
                    client.release();
                }
                return new Limiter(out[0], limit, window, prefix == null ? "rl" : prefix, clock);
            } finally {
                opts.delete();
                err.delete();
            }
        }
    }
}
