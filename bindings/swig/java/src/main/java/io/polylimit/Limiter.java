package io.polylimit;

import io.polylimit.jni.PolylimitNative;
import io.polylimit.jni.PolylimitNativeConstants;
import io.polylimit.jni.SWIGTYPE_p_polylimit_client;
import io.polylimit.jni.SWIGTYPE_p_polylimit_limiter;
import io.polylimit.jni.polylimit_algorithm;
import io.polylimit.jni.polylimit_clock;
import io.polylimit.jni.polylimit_decision;
import io.polylimit.jni.polylimit_error;
import io.polylimit.jni.polylimit_failure_policy;
import io.polylimit.jni.polylimit_limiter_options;
import io.polylimit.jni.polylimit_status;
import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One or more rate limits applied per key; thread-safe. Each decision is one
 * atomic script call in Redis, so any number of processes sharing a Redis and
 * a prefix never admit more than the limits (see the algorithms for what
 * "more" means for each).
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
        SERVER(polylimit_clock.POLYLIMIT_CLOCK_SERVER),
        /** This process's realtime clock. */
        CLIENT(polylimit_clock.POLYLIMIT_CLOCK_CLIENT);

        private final int code;

        Clock(int code) {
            this.code = code;
        }
    }

    /** How decisions are made; see docs/limiter.md. */
    public enum Algorithm {
        /** Exact sliding-window log (a ZSET member per admitted unit); the default. */
        SLIDING_LOG(polylimit_algorithm.POLYLIMIT_ALG_SLIDING_LOG),
        /** Two fixed windows weighted by elapsed time: O(1) memory, approximate (below 2 x limit). */
        SLIDING_COUNTER(polylimit_algorithm.POLYLIMIT_ALG_SLIDING_COUNTER),
        /** A counter per window-aligned interval: O(1), up to 2 x limit around a window edge. */
        FIXED_WINDOW(polylimit_algorithm.POLYLIMIT_ALG_FIXED_WINDOW),
        /** GCRA / token bucket: limit per window, smooth, up to {@code burst} at once. */
        GCRA(polylimit_algorithm.POLYLIMIT_ALG_GCRA);

        private final int code;

        Algorithm(int code) {
            this.code = code;
        }
    }

    /**
     * What a check answers when Redis cannot (timeout, refused or broken
     * connection, pool exhausted, circuit breaker open). Error replies (script,
     * ACL, auth) are never hidden.
     */
    public enum FailurePolicy {
        /** Throw the exception (the default). */
        ERROR(polylimit_failure_policy.POLYLIMIT_FAIL_ERROR),
        /** Admit, with {@link Decision#degraded()}. */
        OPEN(polylimit_failure_policy.POLYLIMIT_FAIL_OPEN),
        /** Deny, with {@link Decision#degraded()}; retry after the breaker cool-down. */
        CLOSED(polylimit_failure_policy.POLYLIMIT_FAIL_CLOSED),
        /** Decide with an in-process limiter (same algorithm and limits, this process only). */
        LOCAL(polylimit_failure_policy.POLYLIMIT_FAIL_LOCAL);

        private final int code;

        FailurePolicy(int code) {
            this.code = code;
        }
    }

    private static final int PACKED = PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION;

    private final NativeRef<SWIGTYPE_p_polylimit_limiter> ref;
    private final Cleaner.Cleanable cleanable;
    private final String spec;
    private final Algorithm algorithm;
    private final String prefix;
    private final Clock clock;

    private Limiter(SWIGTYPE_p_polylimit_limiter handle, String spec, Algorithm algorithm, String prefix, Clock clock) {
        this.ref = new NativeRef<>(handle, PolylimitNative::polylimit_limiter_free, "limiter");
        this.cleanable = Natives.CLEANER.register(this, ref);
        this.spec = spec;
        this.algorithm = algorithm;
        this.prefix = prefix;
        this.clock = clock;
    }

    /** One C call that fills a decision. */
    @FunctionalInterface
    private interface DecisionCall {
        int call(SWIGTYPE_p_polylimit_limiter h, polylimit_decision out, polylimit_error err);
    }

    private Decision decide(DecisionCall call) {
        SWIGTYPE_p_polylimit_limiter h = ref.acquire();
        polylimit_decision out = new polylimit_decision();
        polylimit_error err = new polylimit_error();
        try {
            Status.check(call.call(h, out, err), err);
            return decision(out);
        } finally {
            out.delete();
            err.delete();
            ref.release();
        }
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
     * Admits {@code cost} units for key, all or nothing (against every limit).
     *
     * @param cost 1..limit, else {@link InvalidArgumentException}
     * @return the decision; a denial is {@code allowed() == false}, not an exception
     */
    public Decision check(byte[] key, long cost) {
        Objects.requireNonNull(key, "key");
        return decide((h, out, err) -> PolylimitNative.polylimit_check(h, key, cost, out, err));
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
        return decide((h, out, err) -> PolylimitNative.polylimit_check_at(h, key, cost, nowUs, out, err));
    }

    public Decision checkAt(String key, long cost, Instant at) {
        return checkAt(bytes(key), cost, at);
    }

    /**
     * Checks each key for {@code cost} in one pipelined round trip to Redis;
     * one decision per key, in order. Each key is decided on its own (all or
     * nothing per key, not across keys).
     *
     * @throws PolylimitException for the first key that failed (the message names
     *         it, e.g. "keys[3]: key is empty"); the other keys may have been decided
     */
    public List<Decision> checkMany(List<String> keys, long cost) {
        Objects.requireNonNull(keys, "keys");
        byte[][] raw = new byte[keys.size()][];
        for (int i = 0; i < raw.length; i++) raw[i] = bytes(keys.get(i));
        return checkManyBytes(raw, cost);
    }

    public List<Decision> checkMany(List<String> keys) {
        return checkMany(keys, 1);
    }

    /** As {@link #checkMany(List, long)} for byte keys. */
    public List<Decision> checkManyBytes(byte[][] keys, long cost) {
        Objects.requireNonNull(keys, "keys");
        for (byte[] k : keys) Objects.requireNonNull(k, "key");
        long[] values = new long[Math.multiplyExact(keys.length, PACKED)];
        int[] codes = new int[keys.length];
        SWIGTYPE_p_polylimit_limiter h = ref.acquire();
        polylimit_error err = new polylimit_error();
        try {
            Status.check(PolylimitNative.polylimit_check_many_packed(h, keys, cost, values, codes, err), err);
        } finally {
            err.delete();
            ref.release();
        }
        List<Decision> out = new ArrayList<>(keys.length);
        for (int i = 0; i < keys.length; i++) {
            int o = i * PACKED;
            out.add(new Decision(values[o] != 0, values[o + 4], values[o + 5], Duration.ofMillis(values[o + 6]),
                    Duration.ofMillis(values[o + 7]), values[o + 1] != 0, values[o + 2] != 0, values[o + 3] != 0,
                    values[o + 8]));
        }
        return out;
    }

    /** What a check of one unit would answer now, without consuming anything. */
    public Decision peek(String key) {
        return peek(bytes(key));
    }

    public Decision peek(byte[] key) {
        Objects.requireNonNull(key, "key");
        return decide((h, out, err) -> PolylimitNative.polylimit_peek(h, key, out, err));
    }

    /**
     * Admits as many units as fit now, up to {@code maxCost}; {@link Decision#granted()}
     * says how many ({@code allowed()} when at least one). Never over-admits; may
     * take two round trips.
     */
    public Decision checkAtMost(String key, long maxCost) {
        return checkAtMost(bytes(key), maxCost);
    }

    public Decision checkAtMost(byte[] key, long maxCost) {
        Objects.requireNonNull(key, "key");
        return decide((h, out, err) -> PolylimitNative.polylimit_check_at_most(h, key, maxCost, out, err));
    }

    /**
     * Blocks until {@code cost} units are admitted, for at most {@code timeout}
     * (zero: one try). Returns a denial, early, when admission would come later
     * than the timeout. Millisecond precision (rounded up).
     */
    public Decision acquire(String key, long cost, Duration timeout) {
        return acquire(bytes(key), cost, timeout);
    }

    public Decision acquire(byte[] key, long cost, Duration timeout) {
        Objects.requireNonNull(key, "key");
        long timeoutMs = millisCeil(timeout, "timeout");
        return decide((h, out, err) -> PolylimitNative.polylimit_acquire(h, key, cost, timeoutMs, out, err));
    }

    /**
     * As {@link #check(byte[], long)} with {@code limit} units per {@code window}
     * for this call only (limits that change at run time), with this limiter's
     * algorithm (GCRA: burst = limit). Replaces all of the limiter's limits for
     * the call; the deny cache is not used.
     */
    public Decision checkWithLimit(String key, long cost, long limit, Duration window) {
        return checkWithLimit(bytes(key), cost, limit, window);
    }

    public Decision checkWithLimit(byte[] key, long cost, long limit, Duration window) {
        Objects.requireNonNull(key, "key");
        long windowMs = exactMillis(window, "window");
        return decide((h, out, err) -> PolylimitNative.polylimit_check_limit(h, key, cost, limit, windowMs, out, err));
    }

    /**
     * Gives back up to {@code units} units taken earlier (the operation they paid
     * for failed); returns what {@link #peek} would then. Clears the key's deny
     * cache entry.
     */
    public Decision refund(String key, long units) {
        return refund(bytes(key), units);
    }

    public Decision refund(byte[] key, long units) {
        Objects.requireNonNull(key, "key");
        return decide((h, out, err) -> PolylimitNative.polylimit_refund(h, key, units, out, err));
    }

    /** Clears the key's state: it is back to full capacity. */
    public void reset(String key) {
        reset(bytes(key));
    }

    public void reset(byte[] key) {
        Objects.requireNonNull(key, "key");
        SWIGTYPE_p_polylimit_limiter h = ref.acquire();
        polylimit_error err = new polylimit_error();
        try {
            Status.check(PolylimitNative.polylimit_reset(h, key, err), err);
        } finally {
            err.delete();
            ref.release();
        }
    }

    /**
     * The rate spec as given ({@code "10/s; 1000/hour"}), or
     * {@code "<limit> per <window>ms"} for a limiter built from a limit and a
     * window. The limits themselves are parsed by the C core, not here.
     */
    public String spec() {
        return spec;
    }

    public Algorithm algorithm() {
        return algorithm;
    }

    /** The Redis key prefix ("pl" unless set). */
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
        return "Limiter[" + spec + ", " + algorithm + ", prefix=" + prefix + ", clock=" + clock
                + (isClosed() ? ", closed]" : "]");
    }

    private static byte[] bytes(String key) {
        return Objects.requireNonNull(key, "key").getBytes(StandardCharsets.UTF_8);
    }

    private static Decision decision(polylimit_decision d) {
        return new Decision(d.getAllowed() != 0, d.getLimit(), d.getRemaining(),
                Duration.ofMillis(d.getRetry_after_ms()), Duration.ofMillis(d.getReset_after_ms()),
                d.getCached() != 0, d.getDegraded() != 0, d.getShadowed() != 0, d.getGranted());
    }

    /** A whole number of milliseconds, else InvalidArgumentException. */
    static long exactMillis(Duration d, String what) {
        Objects.requireNonNull(d, what);
        long ms;
        try {
            ms = d.toMillis();
        } catch (ArithmeticException e) {
            throw new InvalidArgumentException(what + " = " + d + " is too long");
        }
        if (!d.equals(Duration.ofMillis(ms)))
            throw new InvalidArgumentException(what + " = " + d + " is not a whole number of milliseconds");
        return ms;
    }

    /** Milliseconds, rounded up; negative stays negative (C rejects it). */
    static long millisCeil(Duration d, String what) {
        Objects.requireNonNull(d, what);
        try {
            long ms = d.toMillis();
            return d.equals(Duration.ofMillis(ms)) || d.isNegative() ? ms : Math.addExact(ms, 1);
        } catch (ArithmeticException e) {
            throw new InvalidArgumentException(what + " = " + d + " is too long");
        }
    }

    /**
     * Builds a {@link Limiter}:
     * {@code client.limiterBuilder("10/s burst 20").algorithm(Algorithm.GCRA).prefix("api").build()}.
     * Everything is validated by build(), before any I/O; a bad spec is an
     * {@link InvalidArgumentException} with the core's message quoting the bad part.
     */
    public static final class Builder {
        private final Client client;
        private final String spec; // null: limit and window
        private final long limit;
        private final Duration window;
        private String prefix;
        private Clock clock = Clock.SERVER;
        private Algorithm algorithm = Algorithm.SLIDING_LOG;
        private Long burst;
        private int denyCacheSize;
        private FailurePolicy failurePolicy = FailurePolicy.ERROR;
        private int breakerFailures;
        private Duration breakerCooldown = Duration.ZERO;
        private boolean shadow;
        private Duration block = Duration.ZERO;

        Builder(Client client, String spec) {
            this.client = client;
            this.spec = Objects.requireNonNull(spec, "spec");
            this.limit = 0;
            this.window = null;
        }

        Builder(Client client, long limit, Duration window) {
            this.client = client;
            this.spec = null;
            this.limit = limit;
            this.window = Objects.requireNonNull(window, "window");
        }

        /** Redis key prefix (default "pl"); at most 256 bytes of UTF-8, no NUL. */
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

        /** The algorithm (default {@link Algorithm#SLIDING_LOG}). */
        public Builder algorithm(Algorithm algorithm) {
            this.algorithm = Objects.requireNonNull(algorithm, "algorithm");
            return this;
        }

        /**
         * GCRA only: units admitted at once (default: the limit). For a limiter
         * built from a spec, write it in the spec instead ({@code "10/s burst 20"}).
         */
        public Builder burst(long burst) {
            this.burst = burst;
            return this;
        }

        /**
         * A local deny cache of at most {@code size} keys (LRU): after Redis denies
         * a key, checks of it in this process are denied locally ({@link Decision#cached()})
         * until its retry-after has passed. 0 (default): off.
         */
        public Builder denyCache(int size) {
            this.denyCacheSize = size;
            return this;
        }

        /** What to answer when Redis cannot (default {@link FailurePolicy#ERROR}). */
        public Builder onFailure(FailurePolicy policy) {
            this.failurePolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * After {@code failures} consecutive outages, fail fast (then apply the
         * failure policy) for {@code cooldown}, then let one probe through.
         */
        public Builder circuitBreaker(int failures, Duration cooldown) {
            this.breakerFailures = failures;
            this.breakerCooldown = Objects.requireNonNull(cooldown, "cooldown");
            return this;
        }

        /**
         * Shadow (dry-run) mode: decide, consume and count as usual, but always
         * admit; a would-be denial comes back allowed with {@link Decision#shadowed()}.
         */
        public Builder shadow() {
            this.shadow = true;
            return this;
        }

        /** Punitive block: a denied key stays denied for {@code duration}. Zero: off. */
        public Builder block(Duration duration) {
            this.block = Objects.requireNonNull(duration, "duration");
            return this;
        }

        /**
         * @throws InvalidArgumentException for a bad spec, limit, window, prefix or option
         * @throws ClosedException if the client is closed
         */
        public Limiter build() {
            long windowMs = spec == null ? exactMillis(window, "window") : 0;
            long cooldownMs = exactMillis(breakerCooldown, "circuit breaker cooldown");
            long blockMs = exactMillis(block, "block");
            if (cooldownMs > Integer.MAX_VALUE)
                throw new InvalidArgumentException("circuit breaker cooldown = " + breakerCooldown + " is too long");
            if (spec != null && burst != null)
                throw new InvalidArgumentException("burst: write it in the rate spec, e.g. \"10/s burst 20\"");
            if (spec != null && spec.indexOf('\0') >= 0)
                throw new InvalidArgumentException("rate spec contains a NUL character");
            polylimit_limiter_options opts = new polylimit_limiter_options();
            polylimit_error err = new polylimit_error();
            try {
                opts.setAlgorithm(algorithm.code);
                opts.setClock(clock.code);
                opts.setLimit(limit);
                opts.setWindow_ms(windowMs);
                opts.setBurst(burst == null ? 0 : burst);
                opts.setDeny_cache_size(denyCacheSize);
                opts.setFailure_policy(failurePolicy.code);
                opts.setBreaker_failures(breakerFailures);
                opts.setBreaker_cooldown_ms((int) cooldownMs);
                opts.setShadow(shadow ? 1 : 0);
                opts.setBlock_ms(blockMs);
                if (prefix != null && opts.setPrefix(prefix.getBytes(StandardCharsets.UTF_8)) != polylimit_status.POLYLIMIT_OK)
                    throw new InvalidArgumentException("prefix contains a NUL character");
                SWIGTYPE_p_polylimit_limiter[] out = new SWIGTYPE_p_polylimit_limiter[1];
                SWIGTYPE_p_polylimit_client c = client.acquire();
                try {
                    int rc = spec != null
                            ? PolylimitNative.polylimit_limiter_new_spec(c, spec, opts, out, err)
                            : PolylimitNative.polylimit_limiter_new(c, opts, out, err);
                    Status.check(rc, err);
                } finally {
                    client.release();
                }
                String described = spec != null ? spec : limit + " per " + windowMs + "ms";
                return new Limiter(out[0], described, algorithm, prefix == null ? "pl" : prefix, clock);
            } finally {
                opts.delete();
                err.delete();
            }
        }
    }
}
