package io.polylimit;

import io.polylimit.jni.PolylimitNative;
import io.polylimit.jni.SWIGTYPE_p_polylimit_client;
import io.polylimit.jni.polylimit_client_options;
import io.polylimit.jni.PolylimitNativeConstants;
import io.polylimit.jni.polylimit_error;
import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;

/**
 * A connection pool to one Redis deployment; thread-safe, meant to be shared
 * and kept for the life of the application.
 *
 * <pre>{@code
 * try (Client client = Client.open("redis://127.0.0.1:6379");
 *      Limiter limiter = client.limiter("100/minute")) {
 *     Decision d = limiter.check("user:42");
 *     if (!d.allowed()) { ... retry after d.retryAfter() ... }
 * }
 * }</pre>
 *
 * <p>URLs: {@code redis://[user:pass@]host:port[/db]}, {@code unix:///path.sock[?db=N]},
 * {@code redis+cluster://...}, {@code redis+sentinel://...}, and {@code memory://}
 * (in-process, no server: only when asked for). Without a URL ({@link #open()},
 * or a null or empty one) the C core reads the {@code POLYLIMIT_URL}
 * environment variable, and when that is unset too the open fails with an
 * {@link InvalidArgumentException}: there is no silent local default.
 * Connections are made lazily, on the first command.
 *
 * <p>{@link #close()} is idempotent and thread-safe, and waits for no call:
 * calls in flight (on the client or its limiters) finish first, later ones
 * fail. Checks of {@link Limiter#checkAsync} still outstanding fail with a
 * {@link ClosedException} at once, and close waits for the client's
 * completion thread to exit.
 * Closing a client closes every limiter made from it, as in every language of
 * polylimit: their calls throw {@link ClosedException} ("the client is
 * closed") from then on. {@link Limiter#close()} still releases each limiter's
 * own handle (do it, or let try-with-resources do it; the order does not
 * matter). A limiter keeps its client reachable, so a client is never closed
 * by the garbage collector while one of its limiters is still in use.
 */
public final class Client implements AutoCloseable {
    private final NativeRef<SWIGTYPE_p_polylimit_client> ref;
    private final AsyncChecks async; // Limiter.checkAsync: a queue and its poller thread, made on first use
    private final Cleaner.Cleanable cleanable;
    private final String url; // password removed
    private final String name; // null: unnamed

    private Client(SWIGTYPE_p_polylimit_client handle, String url, String name) {
        NativeRef<SWIGTYPE_p_polylimit_client> r = new NativeRef<>(handle, PolylimitNative::polylimit_client_close,
                "client");
        AsyncChecks a = new AsyncChecks(name);
        this.ref = r;
        this.async = a;
        // Locals, not fields: the action must not refer to this. The checks
        // go first, so that the outstanding ones fail with Java's
        // "the client is closed" rather than racing the C close.
        this.cleanable = Natives.CLEANER.register(this, () -> {
            try {
                a.close();
            } finally {
                r.run();
            }
        });
        this.url = url;
        this.name = name;
    }

    /**
     * Opens a client for the URL in the {@code POLYLIMIT_URL} environment
     * variable (read by the C core), with default options.
     *
     * @throws InvalidArgumentException when POLYLIMIT_URL is unset (the message
     *         names the URL forms, {@code memory://} among them), or malformed
     */
    public static Client open() {
        return open(null, ClientOptions.defaults());
    }

    /** Opens a client with default options; a null or empty url: {@code POLYLIMIT_URL}. */
    public static Client open(String url) {
        return open(url, ClientOptions.defaults());
    }

    /**
     * Opens a client.
     *
     * @param url     the deployment; null or empty: the {@code POLYLIMIT_URL}
     *                environment variable, else an {@link InvalidArgumentException}
     * @param options connection options, {@link ClientOptions#defaults()} for none
     * @throws InvalidArgumentException for a malformed or missing URL, or a bad option
     * @throws NullPointerException if options is null
     */
    public static Client open(String url, ClientOptions options) {
        Objects.requireNonNull(options, "options");
        if (url != null && url.indexOf('\0') >= 0) throw new InvalidArgumentException("url contains a NUL character");
        NativeLibrary.load();
        polylimit_client_options nativeOpts = options.toNative();
        polylimit_error err = new polylimit_error();
        try {
            SWIGTYPE_p_polylimit_client[] out = new SWIGTYPE_p_polylimit_client[1];
            // null passes NULL: the core reads POLYLIMIT_URL, never a default.
            Errors.check(PolylimitNative.polylimit_client_open(url, nativeOpts, out, err), err);
            String shown = url == null || url.isEmpty() ? "$POLYLIMIT_URL" : redactUrl(url);
            return new Client(out[0], shown, options.name());
        } finally {
            nativeOpts.delete();
            err.delete();
        }
    }

    /** The name given with {@link ClientOptions.Builder#name(String)} (the metrics label), or null. */
    public String name() {
        return name;
    }

    /**
     * A limiter from a rate spec, parsed by the C core: {@code "100/minute"},
     * {@code "10/s"}, {@code "5 per 2 seconds"}, several limits that must all
     * admit ({@code "10/s; 1000/hour"}), a GCRA burst ({@code "10/s burst 20"},
     * with {@code Algorithm.GCRA}). A bad spec is an {@link InvalidArgumentException}
     * whose message quotes the bad part.
     */
    public Limiter limiter(String spec) {
        return limiterBuilder(spec).build();
    }

    /** A limiter admitting {@code limit} units per sliding {@code window}. */
    public Limiter limiter(long limit, Duration window) {
        return limiterBuilder(limit, window).build();
    }

    /** A builder for a limiter from a rate spec, to set the algorithm, prefix, clock and options. */
    public Limiter.Builder limiterBuilder(String spec) {
        return new Limiter.Builder(this, spec);
    }

    /** A builder for a limiter of {@code limit} units per {@code window}. */
    public Limiter.Builder limiterBuilder(long limit, Duration window) {
        return new Limiter.Builder(this, limit, window);
    }

    /** The counters of this client (all its limiters) since it was opened. */
    public Stats stats() {
        long[] v = new long[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS];
        SWIGTYPE_p_polylimit_client h = ref.acquire();
        polylimit_error err = new polylimit_error();
        try {
            Errors.check(PolylimitNative.polylimit_client_stats_packed(h, v, err), err);
        } finally {
            err.delete();
            ref.release();
        }
        // Indexes generated from the header's X-macro POLYLIMIT_STATS_COUNTERS.
        int n = PolylimitNativeConstants.POLYLIMIT_STATS_LATENCY_BUCKETS;
        int le = PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_LATENCY_LE_US;
        int counts = PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_LATENCY_BUCKETS;
        List<Stats.Bucket> buckets = new ArrayList<>(n);
        for (int i = 0; i < n; i++) buckets.add(new Stats.Bucket(v[le + i], v[counts + i]));
        return new Stats(
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_checks],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_admitted],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_denied],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_errors],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_round_trips],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_noscript_reloads],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_cache_hits],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_degraded],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_near_limit],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_latency_count],
                Duration.of(v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_latency_sum_us], ChronoUnit.MICROS),
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_evicting_nodes],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_connect_attempts],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_script_calls],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_coalesced],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_leased_units],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_refunded_units],
                v[PolylimitNativeConstants.POLYLIMIT_PACKED_STATS_stranded_units],
                buckets);
    }

    /**
     * The same counters in the Prometheus text format (metric names start with
     * "polylimit_"), labelled {@code client="<name>"} when the client is named.
     * For several clients on one page use {@link #prometheusText(Client...)}.
     */
    public String statsPrometheus() {
        byte[][] out = new byte[1][];
        SWIGTYPE_p_polylimit_client h = ref.acquire();
        polylimit_error err = new polylimit_error();
        try {
            Errors.check(PolylimitNative.polylimit_client_stats_prometheus(h, out, err), err);
        } finally {
            err.delete();
            ref.release();
        }
        return out[0] == null ? "" : new String(out[0], StandardCharsets.UTF_8);
    }

    /**
     * Several clients' counters on one valid Prometheus page: each metric's
     * HELP and TYPE once, then one sample per client labelled
     * {@code client="<name>"}. Concatenating {@link #statsPrometheus()} pages
     * is not valid exposition (a metric's HELP/TYPE twice); this is. With more
     * than one client every client needs a distinct {@link ClientOptions.Builder#name name}.
     *
     * @throws InvalidArgumentException no client, or a missing or repeated name
     *         (the core's message names {@code clients[i]})
     * @throws ClosedException if one of the clients is closed
     */
    public static String prometheusText(Client... clients) {
        Objects.requireNonNull(clients, "clients");
        for (Client c : clients) Objects.requireNonNull(c, "client");
        SWIGTYPE_p_polylimit_client[] handles = new SWIGTYPE_p_polylimit_client[clients.length];
        int held = 0;
        byte[][] out = new byte[1][];
        polylimit_error err = new polylimit_error();
        try {
            // Every client stays open for the call (close waits for it).
            for (; held < clients.length; held++) handles[held] = clients[held].ref.acquire();
            Errors.check(PolylimitNative.polylimit_clients_stats_prometheus(handles, out, err), err);
        } finally {
            for (int i = 0; i < held; i++) clients[i].ref.release();
            err.delete();
        }
        return out[0] == null ? "" : new String(out[0], StandardCharsets.UTF_8);
    }

    /** As {@link #prometheusText(Client...)} for a collection. */
    public static String prometheusText(Collection<Client> clients) {
        return prometheusText(Objects.requireNonNull(clients, "clients").toArray(new Client[0]));
    }

    /**
     * Lends the native handle to one call, on the client or on one of its
     * limiters (the C client must not close under a call of its limiter);
     * {@link #release()} must follow.
     *
     * @throws ClosedException "the client is closed"
     */
    SWIGTYPE_p_polylimit_client acquire() {
        return ref.acquire();
    }

    void release() {
        ref.release();
    }

    /** The client's non-blocking checks (Limiter.checkAsync). */
    AsyncChecks async() {
        return async;
    }

    public boolean isClosed() {
        return ref.isClosed();
    }

    /**
     * Closes the client and, with it, every limiter made from it (their calls
     * throw {@link ClosedException} from now on); a second call does nothing.
     * Calls in flight finish first: the connections are released after the
     * last of them returns. Futures of {@link Limiter#checkAsync} still
     * outstanding complete exceptionally with a {@link ClosedException} ("the
     * client is closed"), on this thread (so their dependent actions run
     * here); then close waits for the completion thread to exit (it is woken,
     * so that takes no longer than a dependent action already running there).
     */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "Client[" + url + (name != null ? ", name=" + name : "") + (isClosed() ? ", closed]" : "]");
    }

    /**
     * {@code url} with every password replaced by {@code ***}
     * ({@code redis://user:***@host}, {@code sentinel_password=***}), by the
     * core's one redaction ({@code polylimit_redact_url}): what every message
     * and {@link #toString()} of this library shows. Any string is accepted;
     * one that does not parse is redacted too, hiding more when in doubt.
     */
    public static String redactUrl(String url) {
        Objects.requireNonNull(url, "url");
        NativeLibrary.load();
        byte[][] out = new byte[1][];
        polylimit_error err = new polylimit_error();
        try {
            // A NUL would end the C string early: the redaction sees all of it.
            Errors.check(PolylimitNative.polylimit_redact_url(url.replace('\0', ' '), out, err), err);
        } finally {
            err.delete();
        }
        return out[0] == null ? "" : new String(out[0], StandardCharsets.UTF_8);
    }
}
