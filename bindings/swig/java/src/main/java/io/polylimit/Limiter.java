package io.polylimit;

import io.polylimit.jni.PolylimitNative;
import io.polylimit.jni.PolylimitNativeConstants;
import io.polylimit.jni.SWIGTYPE_p_polylimit_client;
import io.polylimit.jni.SWIGTYPE_p_polylimit_limiter;
import io.polylimit.jni.polylimit_algorithm;
import io.polylimit.jni.polylimit_clock;
import io.polylimit.jni.polylimit_decision;
import io.polylimit.jni.polylimit_error;
import io.polylimit.jni.polylimit_error_list;
import io.polylimit.jni.polylimit_failure_policy;
import io.polylimit.jni.polylimit_limiter_options;
import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

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
 * {@link ClosedException}. Closing the {@link Client} it was made from closes
 * the limiter too: its calls then throw {@link ClosedException} ("the client
 * is closed"), and {@link #close()} still releases its handle.
 *
 * <p>Numbers pass to the C core as they are, and a Duration becomes whole
 * milliseconds rounded up; the core checks every range, with one message
 * format for all languages: {@code "<name> = <value> is out of range <min>..<max>"}.
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
    /** A status polylimit_limiter_check_many did not write (every status is 0 or negative). */
    private static final int UNTOUCHED = 1;

    private final Client client; // keeps the client reachable while this limiter is
    private final NativeRef<SWIGTYPE_p_polylimit_limiter> ref;
    private final Cleaner.Cleanable cleanable;
    private final String spec;
    private final Algorithm algorithm;
    private final String prefix;
    private final Clock clock;

    private Limiter(Client client, SWIGTYPE_p_polylimit_limiter handle, String spec, Algorithm algorithm, String prefix,
                    Clock clock) {
        this.client = client;
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

    /**
     * Starts a call: the limiter's handle, valid until {@link #end()}. The
     * client is held too, so that closing it waits for the call (C forbids a
     * client close racing a call of its limiters).
     *
     * @throws ClosedException "the limiter is closed" or "the client is closed"
     */
    private SWIGTYPE_p_polylimit_limiter begin() {
        SWIGTYPE_p_polylimit_limiter h = ref.acquire();
        try {
            client.acquire();
        } catch (RuntimeException e) {
            ref.release();
            throw e;
        }
        return h;
    }

    private void end() {
        client.release();
        ref.release();
    }

    /**
     * A handle of a limiter an HTTP policy made for its document's limits, on
     * {@code client} (its algorithm and prefix are the document's; the
     * accessors show the defaults).
     */
    static Limiter ofPolicy(Client client, SWIGTYPE_p_polylimit_limiter handle, String described) {
        return new Limiter(client, handle, described, Algorithm.SLIDING_LOG, "pl", Clock.SERVER);
    }

    /** {@link #begin()} for a call made by another class of this package ({@link HttpPolicy}). */
    SWIGTYPE_p_polylimit_limiter beginCall() {
        return begin();
    }

    /** Ends a {@link #beginCall()}. */
    void endCall() {
        end();
    }

    private Decision decide(DecisionCall call) {
        SWIGTYPE_p_polylimit_limiter h = begin();
        polylimit_decision out = new polylimit_decision();
        polylimit_error err = new polylimit_error();
        try {
            Errors.check(call.call(h, out, err), err);
            return decision(out);
        } finally {
            out.delete();
            err.delete();
            end();
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
        return decide((h, out, err) -> PolylimitNative.polylimit_limiter_check(h, key, cost, out, err));
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
            throw Convert.outOfRange("now_us", at, Vocabulary.MIN_NOW_US, Vocabulary.MAX_NOW_US);
        }
        return decide((h, out, err) -> PolylimitNative.polylimit_limiter_check_at(h, key, cost, nowUs, out, err));
    }

    public Decision checkAt(String key, long cost, Instant at) {
        return checkAt(bytes(key), cost, at);
    }

    /**
     * Checks each key for {@code cost} in one pipelined round trip to Redis;
     * one decision per key, in order. Each key is decided on its own (all or
     * nothing per key, not across keys).
     *
     * @throws PolylimitException when a key failed: the exception of the first
     *         one, whose message names it ("keys[3]: ..."); the other keys may
     *         have been decided. {@link #checkManyResults(List, long)} gives
     *         every key its decision or its own error instead.
     */
    public List<Decision> checkMany(List<String> keys, long cost) {
        return checkManyBytes(utf8(keys), cost);
    }

    public List<Decision> checkMany(List<String> keys) {
        return checkMany(keys, 1);
    }

    /** As {@link #checkMany(List, long)} for byte keys. */
    public List<Decision> checkManyBytes(byte[][] keys, long cost) {
        Batch b = batch(keys, cost);
        if (b.rc != Status.OK) throw b.error;
        List<Decision> out = new ArrayList<>(keys.length);
        for (int i = 0; i < keys.length; i++) out.add(b.decision(i));
        return out;
    }

    /**
     * As {@link #checkMany(List, long)}, but nothing is thrown for a key: each
     * key's result is its decision or its own error (its own status class and
     * the C library's message for that key, without a "keys[i]: " prefix).
     * When the call fails as a whole (a bad cost) every key holds that error.
     *
     * @throws ClosedException if the limiter or its client is closed
     */
    public List<KeyResult> checkManyResults(List<String> keys, long cost) {
        return checkManyResults(utf8(keys), cost);
    }

    /** As {@link #checkManyResults(List, long)} for byte keys. */
    public List<KeyResult> checkManyResults(byte[][] keys, long cost) {
        Batch b = batch(keys, cost);
        List<KeyResult> out = new ArrayList<>(keys.length);
        for (int i = 0; i < keys.length; i++) {
            int code = b.codes[i];
            if (code == Status.OK) out.add(KeyResult.of(b.decision(i)));
            else if (code == UNTOUCHED) out.add(KeyResult.failed(b.error != null ? b.error // failed before any key
                    : new PolylimitException(Status.ERROR, "keys[" + i + "]: no status")));
            else out.add(KeyResult.failed(b.keyErrors[i]));
        }
        return out;
    }

    /** What one polylimit_limiter_check_many_packed call returned. */
    private static final class Batch {
        int rc;
        PolylimitException error; // of the whole call (rc), null when rc is POLYLIMIT_OK
        long[] values;
        int[] codes;
        PolylimitException[] keyErrors;

        Decision decision(int i) {
            return packedDecision(values, i * PACKED);
        }
    }

    private Batch batch(byte[][] keys, long cost) {
        Objects.requireNonNull(keys, "keys");
        for (byte[] k : keys) Objects.requireNonNull(k, "key");
        Batch b = new Batch();
        b.values = new long[Math.multiplyExact(keys.length, PACKED)];
        b.codes = new int[keys.length];
        Arrays.fill(b.codes, UNTOUCHED);
        b.keyErrors = new PolylimitException[keys.length];
        SWIGTYPE_p_polylimit_limiter h = begin();
        polylimit_error err = new polylimit_error();
        polylimit_error_list keyErrors = new polylimit_error_list(keys.length);
        try {
            b.rc = PolylimitNative.polylimit_limiter_check_many_packed(h, keys, cost, b.values, b.codes, keyErrors, err);
            if (b.rc != Status.OK) b.error = Errors.exception(b.rc, err);
            for (int i = 0; i < keys.length; i++) {
                int code = b.codes[i];
                if (code != Status.OK && code != UNTOUCHED) b.keyErrors[i] = Errors.exception(keyErrors, i, code);
            }
        } finally {
            keyErrors.delete();
            err.delete();
            end();
        }
        return b;
    }

    /**
     * As {@link #check(String)} without blocking: the check is sent to Redis
     * and this returns at once; the future completes when the reply arrives.
     * The first call on a client may connect first (bounded by the connect
     * timeout), and a check answered locally (deny cache, open circuit
     * breaker) may be complete already. No thread waits per call: each
     * {@link Client} has one daemon thread, {@code polylimit-completions}
     * (with {@code -<name>} for a named client), started by its first
     * {@code checkAsync}, that completes the futures of all its limiters.
     *
     * <p><b>The futures complete on that thread</b>, so dependent actions
     * attached with {@code thenApply}, {@code thenAccept}, {@code whenComplete}
     * ... run there unless they use the {@code *Async} variants (exceptions,
     * as {@link CompletableFuture} has them: an action attached to a complete
     * future runs on the attaching thread, and a thread waiting in
     * {@code get()}/{@code join()} of the future may run its actions). Keep
     * such actions short and never block in them: every other check of the
     * client waits meanwhile, and waiting there for another future of the
     * same client (a {@code join()}) never returns.
     *
     * <p>A failed check completes the future exceptionally with the
     * {@link PolylimitException} that {@link #check(String)} would throw (a
     * timeout after the client's command timeout, and so on), after the
     * failure policy, as for {@link #check(String)}. Arguments the core
     * rejects (a bad cost), a closed limiter or client, and a full connection
     * queue ({@link PoolExhaustedException}) fail it before this returns.
     * {@link Client#close()} completes the checks still outstanding with a
     * {@link ClosedException} ("the client is closed", with
     * {@link PolylimitException#outcomeUnknown()}: they may have run).
     * Closing this limiter does not affect its checks in flight. Cancelling
     * the future does not cancel the check.
     *
     * @throws NullPointerException if key is null (at once, not in the future)
     */
    public CompletableFuture<Decision> checkAsync(String key) {
        return checkAsync(bytes(key), 1);
    }

    /** As {@link #checkAsync(String)} for {@code cost} units. */
    public CompletableFuture<Decision> checkAsync(String key, long cost) {
        return checkAsync(bytes(key), cost);
    }

    /** As {@link #checkAsync(String)} for a byte key and {@code cost} units. */
    public CompletableFuture<Decision> checkAsync(byte[] key, long cost) {
        Objects.requireNonNull(key, "key");
        SWIGTYPE_p_polylimit_limiter h;
        try {
            h = begin();
        } catch (PolylimitException e) {
            return CompletableFuture.failedFuture(e);
        }
        try {
            // The handles are held for the submit only: C keeps what the check needs.
            return client.async().submit(h, key, cost);
        } finally {
            end();
        }
    }

    /**
     * The standard HTTP rate-limit response headers for a decision of this
     * limiter, in order, as the C core formats them for every language:
     * {@code Retry-After} (denials only, whole seconds rounded up, at least 1),
     * {@code RateLimit-Limit}, {@code RateLimit-Remaining}, {@code RateLimit-Reset}
     * (seconds until full capacity), and the IETF httpapi draft's structured
     * fields {@code RateLimit-Policy} (every limit: {@code "name";q=<limit>;w=<window s>})
     * and {@code RateLimit} (the deciding one: {@code "name";r=<remaining>;t=<reset s>}).
     * A decision of {@link #checkWithLimit} has no {@code RateLimit-Policy}.
     * No value is computed in Java.
     *
     * @param decision a decision of this limiter
     * @return an unmodifiable map in header order, names as above
     * @throws ClosedException if the limiter or its client is closed
     */
    public Map<String, String> headers(Decision decision) {
        Objects.requireNonNull(decision, "decision");
        long[] v = new long[PACKED];
        pack(decision, v, 0);
        byte[][] out = new byte[1][];
        SWIGTYPE_p_polylimit_limiter h = begin();
        polylimit_error err = new polylimit_error();
        try {
            Errors.check(PolylimitNative.polylimit_limiter_headers_packed(h, v, out, err), err);
        } finally {
            err.delete();
            end();
        }
        String text = out[0] == null ? "" : new String(out[0], StandardCharsets.UTF_8);
        Map<String, String> headers = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            if (line.isEmpty()) continue;
            int colon = line.indexOf(": ");
            if (colon <= 0) throw new PolylimitException(Status.ERROR, "malformed header line from the core: " + line);
            headers.put(line.substring(0, colon), line.substring(colon + 2));
        }
        return Collections.unmodifiableMap(headers);
    }

    /** What a check of one unit would answer now, without consuming anything. */
    public Decision peek(String key) {
        return peek(bytes(key));
    }

    public Decision peek(byte[] key) {
        Objects.requireNonNull(key, "key");
        return decide((h, out, err) -> PolylimitNative.polylimit_limiter_peek(h, key, out, err));
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
        return decide((h, out, err) -> PolylimitNative.polylimit_limiter_check_at_most(h, key, maxCost, out, err));
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
        long timeoutMs = Convert.millis(Objects.requireNonNull(timeout, "timeout"), "timeout_ms",
                Vocabulary.MIN_TIMEOUT_MS, Vocabulary.MAX_TIMEOUT_MS);
        return decide((h, out, err) -> PolylimitNative.polylimit_limiter_acquire(h, key, cost, timeoutMs, out, err));
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
        long windowMs = Convert.millis(Objects.requireNonNull(window, "window"), "window_ms",
                Vocabulary.MIN_WINDOW_MS, Vocabulary.MAX_WINDOW_MS);
        return decide((h, out, err) -> PolylimitNative.polylimit_limiter_check_limit(h, key, cost, limit, windowMs, out, err));
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
        return decide((h, out, err) -> PolylimitNative.polylimit_limiter_refund(h, key, units, out, err));
    }

    /** Clears the key's state: it is back to full capacity. */
    public void reset(String key) {
        reset(bytes(key));
    }

    public void reset(byte[] key) {
        Objects.requireNonNull(key, "key");
        SWIGTYPE_p_polylimit_limiter h = begin();
        polylimit_error err = new polylimit_error();
        try {
            Errors.check(PolylimitNative.polylimit_limiter_reset(h, key, err), err);
        } finally {
            err.delete();
            end();
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

    /** The client this limiter was made from. */
    public Client client() {
        return client;
    }

    /** Whether this limiter, or the client it was made from, is closed. */
    public boolean isClosed() {
        return ref.isClosed() || client.isClosed();
    }

    /**
     * Frees the limiter; a second call does nothing. Calls in flight finish
     * first. Needed after its client was closed too (that only closes it).
     */
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

    private static byte[][] utf8(List<String> keys) {
        Objects.requireNonNull(keys, "keys");
        byte[][] raw = new byte[keys.size()][];
        for (int i = 0; i < raw.length; i++) raw[i] = bytes(keys.get(i));
        return raw;
    }

    /** Packs a decision into values[o ...], as {@link #packedDecision} reads it. */
    static void pack(Decision decision, long[] v, int o) {
        // Indexes generated from the header's X-macro POLYLIMIT_DECISION_FIELDS.
        v[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_allowed] = decision.allowed() ? 1 : 0;
        v[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_cached] = decision.cached() ? 1 : 0;
        v[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_degraded] = decision.degraded() ? 1 : 0;
        v[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_shadowed] = decision.shadowed() ? 1 : 0;
        v[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_limit] = decision.limit();
        v[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_remaining] = decision.remaining();
        v[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_retry_after_ms] = decision.retryAfter().toMillis();
        v[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_reset_after_ms] = decision.resetAfter().toMillis();
        v[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_granted] = decision.granted();
    }

    /** The decision packed at values[o ...] (polylimit_limiter_check_many_packed, polylimit_completion_batch_unpack). */
    static Decision packedDecision(long[] values, int o) {
        // Indexes generated from the header's X-macro POLYLIMIT_DECISION_FIELDS.
        return new Decision(
                values[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_allowed] != 0,
                values[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_limit],
                values[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_remaining],
                Duration.ofMillis(values[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_retry_after_ms]),
                Duration.ofMillis(values[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_reset_after_ms]),
                values[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_cached] != 0,
                values[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_degraded] != 0,
                values[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_shadowed] != 0,
                values[o + PolylimitNativeConstants.POLYLIMIT_PACKED_DECISION_granted]);
    }

    private static Decision decision(polylimit_decision d) {
        return new Decision(d.getAllowed() != 0, d.getLimit(), d.getRemaining(),
                Duration.ofMillis(d.getRetry_after_ms()), Duration.ofMillis(d.getReset_after_ms()),
                d.getCached() != 0, d.getDegraded() != 0, d.getShadowed() != 0, d.getGranted());
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
        private int durableReplicas;
        private Duration durableTimeout = Duration.ZERO;
        private boolean durableAof;
        private long leaseUnits;
        private Duration lease = Duration.ZERO;

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

        /** Redis key prefix (default "pl"): UTF-8, no NUL, at most {@link Vocabulary#MAX_PREFIX_LEN} bytes. */
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
         * failure policy) for {@code cooldown} (rounded up to ms; zero: the
         * default, {@link Vocabulary#DEFAULT_BREAKER_COOLDOWN_MS} ms), then let
         * one probe through.
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

        /** Punitive block: a denied key stays denied for {@code duration} (rounded up to ms). Zero: off. */
        public Builder block(Duration duration) {
            this.block = Objects.requireNonNull(duration, "duration");
            return this;
        }

        /**
         * Failover-safe mode: a check is admitted only once its write is acknowledged
         * by {@code replicas} replicas (WAIT, sent with the script in one round trip)
         * within {@code timeout} (rounded up to ms; zero: the default,
         * {@link Vocabulary#DEFAULT_DURABLE_TIMEOUT_MS} ms; below the client's command
         * timeout). An admitted check whose write is not acknowledged in time throws
         * {@link NotDurableException} (its units stay consumed on the master), which the
         * failure policy handles like an outage. 0 replicas: off.
         */
        public Builder durable(int replicas, Duration timeout) {
            this.durableReplicas = replicas;
            this.durableTimeout = Objects.requireNonNull(timeout, "timeout");
            return this;
        }

        /**
         * Failover-safe mode with persistence: the write must also be fsynced to the
         * master's append-only file (WAITAOF: Redis 7.2 or later, appendonly yes); the
         * replicas of {@link #durable} must then have fsynced it too.
         */
        public Builder durableAof() {
            this.durableAof = true;
            return this;
        }

        /**
         * Leases (docs/limiter.md, "Leases"): a check takes {@code units} units of the
         * key from Redis in one round trip and hands them out in this process without
         * one, for {@code duration} (rounded up to ms; zero: the default,
         * {@link Vocabulary#DEFAULT_LEASE_MS} ms; at most the window). Unused units go
         * back when the lease ends, the limiter is closed or the client closes.
         * Admissions can exceed the limit in a window by at most {@code units} per
         * limiter holding leases on the key. 0 units: off; at most the smallest limit;
         * not with {@link #block}. Blocking and asynchronous checks both take and renew
         * leases.
         */
        public Builder lease(long units, Duration duration) {
            this.leaseUnits = units;
            this.lease = Objects.requireNonNull(duration, "duration");
            return this;
        }

        /**
         * @throws InvalidArgumentException for a bad spec, limit, window, prefix or option
         * @throws ClosedException if the client is closed
         */
        public Limiter build() {
            // Conversions only (Duration -> whole ms, rounded up); the core checks the ranges.
            long windowMs = spec == null
                    ? Convert.millis(window, "window_ms", Vocabulary.MIN_WINDOW_MS, Vocabulary.MAX_WINDOW_MS) : 0;
            int cooldownMs = Convert.intMillis(breakerCooldown, "breaker_cooldown_ms",
                    Vocabulary.MIN_BREAKER_COOLDOWN_MS, Vocabulary.MAX_BREAKER_COOLDOWN_MS);
            long blockMs = Convert.millis(block, "block_ms", Vocabulary.MIN_BLOCK_MS, Vocabulary.MAX_BLOCK_MS);
            int durableTimeoutMs = Convert.intMillis(durableTimeout, "durable_timeout_ms",
                    Vocabulary.MIN_DURABLE_TIMEOUT_MS, Vocabulary.MAX_DURABLE_TIMEOUT_MS);
            long leaseMs = Convert.millis(lease, "lease_ms", Vocabulary.MIN_LEASE_MS, Vocabulary.MAX_LEASE_MS);
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
                opts.setBreaker_cooldown_ms(cooldownMs);
                opts.setShadow(shadow ? 1 : 0);
                opts.setBlock_ms(blockMs);
                opts.setDurable_replicas(durableReplicas);
                opts.setDurable_timeout_ms(durableTimeoutMs);
                opts.setDurable_aof(durableAof ? 1 : 0);
                opts.setLease_units(leaseUnits);
                opts.setLease_ms(leaseMs);
                if (prefix != null) {
                    int rc = opts.setPrefix(prefix.getBytes(StandardCharsets.UTF_8));
                    if (rc == Status.EINVALID) throw new InvalidArgumentException("prefix contains a NUL character");
                    if (rc != Status.OK) throw Status.exception(rc, "copying the prefix", 0);
                }
                SWIGTYPE_p_polylimit_limiter[] out = new SWIGTYPE_p_polylimit_limiter[1];
                SWIGTYPE_p_polylimit_client c = client.acquire();
                try {
                    int rc = spec != null
                            ? PolylimitNative.polylimit_limiter_new_spec(c, spec, opts, out, err)
                            : PolylimitNative.polylimit_limiter_new(c, opts, out, err);
                    Errors.check(rc, err);
                } finally {
                    client.release();
                }
                String described = spec != null ? spec : limit + " per " + windowMs + "ms";
                return new Limiter(client, out[0], described, algorithm, prefix == null ? "pl" : prefix, clock);
            } finally {
                opts.delete();
                err.delete();
            }
        }
    }
}
