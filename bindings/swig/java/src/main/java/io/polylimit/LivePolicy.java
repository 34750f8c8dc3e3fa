package io.polylimit;

import io.polylimit.jni.PolylimitNative;
import io.polylimit.jni.SWIGTYPE_p_polylimit_client;
import io.polylimit.jni.SWIGTYPE_p_polylimit_http_live;
import io.polylimit.jni.SWIGTYPE_p_polylimit_http_policy;
import io.polylimit.jni.SWIGTYPE_p_polylimit_limiter;
import io.polylimit.jni.polylimit_error;
import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * An HTTP policy that can be replaced while requests run (docs/policy.md):
 * made from a document (TOML or JSON, or Java values written as JSON) or
 * opened from a file, which the core can watch and reload when it changes.
 * {@link #reload} swaps in a new document atomically; a document with an
 * error is refused (the message names the line) and the old policy stays.
 *
 * <p>Per request take {@link #current()}, a reference to the policy in force
 * (an {@link HttpPolicy}: prepare, check on {@link HttpPolicy#limiter(HttpPolicy.Step)},
 * answer, settle, or {@link HttpPolicy#decide}), and close it once the
 * response is settled: a request finishes on the policy it started with.
 * {@code io.polylimit.servlet.RateLimitFilter.Builder#livePolicy} does this.
 *
 * <p>Plans: a rule whose limit is the tenant's plan's takes the plan from
 * the document's {@code tenants} table; for a tenant the table does not name,
 * when the document has a {@code [resolver]} section, the application's
 * {@linkplain Builder#resolver resolver} answers (cached by the core for
 * {@code resolver.cache_ttl_ms}), within {@code resolver.timeout_ms}: an
 * exception, a null answer or a timeout gives the default plan.
 */
public final class LivePolicy implements AutoCloseable {
    private static final AtomicInteger THREADS = new AtomicInteger();

    private final Client client;
    private final List<Limiter> limiters;
    private final NativeRef<SWIGTYPE_p_polylimit_http_live> ref;
    private final Cleaner.Cleanable cleanable;
    private final Function<String, ? extends CompletionStage<String>> asyncResolver;
    private final Function<String, String> resolver;
    private final ThreadPoolExecutor executor; // runs a blocking resolver under its deadline; null without one
    private final AtomicReference<HttpPolicy.Shape> shape = new AtomicReference<>();

    private LivePolicy(Builder b, SWIGTYPE_p_polylimit_http_live handle) {
        this.client = b.client;
        this.limiters = b.limiters;
        this.resolver = b.resolver;
        this.asyncResolver = b.asyncResolver;
        this.ref = new NativeRef<>(handle, PolylimitNative::polylimit_http_live_free, "live policy");
        ThreadPoolExecutor ex = null;
        if (resolver != null) {
            ex = new ThreadPoolExecutor(b.resolverThreads, b.resolverThreads, 30, TimeUnit.SECONDS,
                    new ArrayBlockingQueue<>(256), r -> {
                        Thread t = new Thread(r, "polylimit-plan-resolver-" + THREADS.incrementAndGet());
                        t.setDaemon(true);
                        return t;
                    });
            ex.allowCoreThreadTimeOut(true);
        }
        this.executor = ex;
        ThreadPoolExecutor pool = ex;
        NativeRef<SWIGTYPE_p_polylimit_http_live> r = ref;
        this.cleanable = Natives.CLEANER.register(this, () -> {
            if (pool != null) pool.shutdownNow();
            r.run();
        });
    }

    /** A builder of a live policy on {@code client} (the document's limits are made on it). */
    public static Builder builder(Client client) {
        return new Builder(client);
    }

    /** A live policy of a document (TOML or JSON) with the application's limiters (rules' {@code limiter = i}). */
    public static LivePolicy fromDocument(Client client, String document, List<Limiter> limiters) {
        return builder(client).document(document).limiters(limiters).build();
    }

    /** A live policy of a file, reloaded within {@code watch} of a change (null or zero: not watched). */
    public static LivePolicy open(Client client, Path path, Duration watch) {
        return builder(client).file(path).watch(watch).build();
    }

    /**
     * The policy in force, for one request: close it once the request is
     * settled (its refund made). Cheap: no parsing, one reference.
     */
    public HttpPolicy current() {
        SWIGTYPE_p_polylimit_http_live h = ref.acquire();
        SWIGTYPE_p_polylimit_http_policy p;
        try {
            p = PolylimitNative.polylimit_http_live_current(h);
        } finally {
            ref.release();
        }
        try {
            long id = PolylimitNative.polylimit_http_policy_id(p).longValue();
            HttpPolicy.Shape s = shape.get();
            if (s == null || s.id != id) {
                s = new HttpPolicy.Shape(p, client, limiters);
                shape.set(s);
            }
            return new HttpPolicy(p, s, this);
        } catch (RuntimeException | Error e) {
            PolylimitNative.polylimit_http_policy_free(p);
            throw e;
        }
    }

    /**
     * Replaces the policy by {@code document} (TOML or JSON), or refuses it.
     *
     * @throws InvalidArgumentException naming the line and the problem; the old policy stays in force
     */
    public void reload(String document) {
        Objects.requireNonNull(document, "document");
        byte[] bytes = document.getBytes(StandardCharsets.UTF_8);
        call((h, err) -> PolylimitNative.polylimit_http_live_reload_packed(h, bytes, err));
    }

    /** {@link #reload(String)} of a document given as Java values (written as JSON). */
    public void reload(Map<String, ?> document) {
        reload(Json.write(Objects.requireNonNull(document, "document")));
    }

    /**
     * Reads the file again (a policy {@linkplain Builder#file opened from a
     * file}) and reloads it.
     *
     * @throws InvalidArgumentException for a refused document (the old policy stays)
     * @throws PolylimitException when the file cannot be read, or this was made from a document
     */
    public void reloadFile() {
        call(PolylimitNative::polylimit_http_live_reload_file);
    }

    /** 1 after creation, +1 per accepted reload (by {@link #reload}, {@link #reloadFile} or the watch). */
    public long generation() {
        SWIGTYPE_p_polylimit_http_live h = ref.acquire();
        try {
            return PolylimitNative.polylimit_http_live_generation(h).longValue();
        } finally {
            ref.release();
        }
    }

    /** Why the last reload was refused ("" since an accepted one): what a watched file's error shows. */
    public String lastError() {
        byte[][] out = new byte[1][];
        call((h, err) -> PolylimitNative.polylimit_http_live_last_error(h, out, err));
        return out[0] == null ? "" : new String(out[0], StandardCharsets.UTF_8);
    }

    /**
     * The current policy's requests per rule and outcome and
     * {@code polylimit_http_policy_reloads_total}, in the Prometheus text format.
     */
    public String metricsPrometheus() {
        byte[][] out = new byte[1][];
        call((h, err) -> PolylimitNative.polylimit_http_live_metrics_prometheus(h, out, err));
        return out[0] == null ? "" : new String(out[0], StandardCharsets.UTF_8);
    }

    /** Whether the application gave a plan resolver. */
    public boolean hasResolver() {
        return resolver != null || asyncResolver != null;
    }

    /**
     * The plan of {@code tenant}: the core's cache, else the application's
     * resolver within {@code timeoutMs} (a success is cached); {@code ""}
     * (the default plan) without a resolver or a tenant, on an exception, a
     * null answer or a timeout. Blocks the calling thread at most about
     * {@code timeoutMs}.
     */
    public String resolvePlan(String tenant, long timeoutMs) {
        if (tenant == null || !hasResolver()) return "";
        byte[] t = tenant.getBytes(StandardCharsets.UTF_8);
        byte[][] cached = new byte[1][];
        SWIGTYPE_p_polylimit_http_live h = ref.acquire();
        try {
            if (PolylimitNative.polylimit_http_live_cached_plan_packed(h, t, cached) == 1)
                return cached[0] == null ? "" : new String(cached[0], StandardCharsets.UTF_8);
        } finally {
            ref.release();
        }
        String plan = ask(tenant, Math.max(1, timeoutMs));
        if (plan == null) return "";
        byte[] pb = plan.getBytes(StandardCharsets.UTF_8);
        try {
            call((lh, err) -> PolylimitNative.polylimit_http_live_cache_plan_packed(lh, t, pb, err));
        } catch (PolylimitException e) {
            // Not cached (a plan name the core refuses to keep): asked again next time.
        }
        return plan;
    }

    /** The resolver's answer within the deadline, or null. */
    private String ask(String tenant, long timeoutMs) {
        Future<String> f = null;
        try {
            if (asyncResolver != null) {
                CompletionStage<String> stage = asyncResolver.apply(tenant);
                if (stage == null) return null;
                f = stage.toCompletableFuture();
            } else {
                f = executor.submit(() -> resolver.apply(tenant));
            }
            return f.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (TimeoutException | ExecutionException | RuntimeException e) {
            // The default plan: a failed, slow or refused resolver never fails the request.
        }
        if (f != null) f.cancel(true);
        return null;
    }

    public boolean isClosed() {
        return ref.isClosed();
    }

    /**
     * Stops the watch and frees the live policy (after the calls in flight);
     * requests holding a {@link #current()} policy finish on it. A second
     * call does nothing. The client and limiters stay open.
     */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "LivePolicy[" + (isClosed() ? "closed]" : "generation=" + generation() + "]");
    }

    @FunctionalInterface
    private interface Call {
        int call(SWIGTYPE_p_polylimit_http_live h, polylimit_error err);
    }

    private void call(Call c) {
        SWIGTYPE_p_polylimit_http_live h = ref.acquire();
        polylimit_error err = new polylimit_error();
        try {
            Errors.check(c.call(h, err), err);
        } finally {
            err.delete();
            ref.release();
        }
    }

    /** Builds a {@link LivePolicy}: a document or a file, and optionally limiters, a watch and a resolver. */
    public static final class Builder {
        private final Client client;
        private String document;
        private Path file;
        private Duration watch = Duration.ZERO;
        private List<Limiter> limiters = List.of();
        private Function<String, String> resolver;
        private Function<String, ? extends CompletionStage<String>> asyncResolver;
        private int resolverThreads = 4;

        private Builder(Client client) {
            this.client = Objects.requireNonNull(client, "client");
        }

        /** The document, TOML or JSON (JSON when it starts with <code>{</code>). */
        public Builder document(String document) {
            this.document = Objects.requireNonNull(document, "document");
            return this;
        }

        /** The document as Java values (a {@link Map}, lists, strings, numbers, booleans), written as JSON. */
        public Builder document(Map<String, ?> document) {
            return document(Json.write(Objects.requireNonNull(document, "document")));
        }

        /** The document's file instead (read now; {@link #reloadFile} and the watch read it again). */
        public Builder file(Path file) {
            this.file = Objects.requireNonNull(file, "file");
            return this;
        }

        /** With {@link #file}: re-read the file when it changes, checked at this interval (default: not watched). */
        public Builder watch(Duration watch) {
            this.watch = watch == null ? Duration.ZERO : watch;
            return this;
        }

        /** The application's limiters, named by the rules' {@code limiter = i}. */
        public Builder limiters(List<Limiter> limiters) {
            this.limiters = List.copyOf(Objects.requireNonNull(limiters, "limiters"));
            return this;
        }

        /**
         * The plan resolver: tenant id to plan name (null or unknown: the
         * default plan). It runs on a small pool of daemon threads, the
         * request waiting at most the document's {@code resolver.timeout_ms}.
         */
        public Builder resolver(Function<String, String> resolver) {
            this.resolver = Objects.requireNonNull(resolver, "resolver");
            this.asyncResolver = null;
            return this;
        }

        /** The plan resolver as an asynchronous call (its stage awaited at most the document's deadline). */
        public Builder asyncResolver(Function<String, ? extends CompletionStage<String>> resolver) {
            this.asyncResolver = Objects.requireNonNull(resolver, "resolver");
            this.resolver = null;
            return this;
        }

        /** The threads running a blocking {@link #resolver} (default 4). */
        public Builder resolverThreads(int threads) {
            if (threads < 1) throw new IllegalArgumentException("resolverThreads: at least 1");
            this.resolverThreads = threads;
            return this;
        }

        /**
         * @throws InvalidArgumentException for a document the core refuses
         *         (naming the line), or one with a {@code [resolver]} section
         *         when no resolver was given
         * @throws PolylimitException when the file cannot be read
         */
        public LivePolicy build() {
            if ((document == null) == (file == null))
                throw new IllegalArgumentException("give a document or a file, one of them");
            long watchMs = watch.toMillis();
            if (watchMs < 0 || watchMs > Integer.MAX_VALUE) throw new IllegalArgumentException("watch: out of range");
            SWIGTYPE_p_polylimit_limiter[] handles = new SWIGTYPE_p_polylimit_limiter[limiters.size()];
            SWIGTYPE_p_polylimit_http_live[] out = new SWIGTYPE_p_polylimit_http_live[1];
            polylimit_error err = new polylimit_error();
            int held = 0;
            SWIGTYPE_p_polylimit_client c = client.acquire();
            try {
                for (; held < handles.length; held++) handles[held] = limiters.get(held).beginCall();
                int rc = document != null
                        ? PolylimitNative.polylimit_http_live_new_packed(c, document.getBytes(StandardCharsets.UTF_8),
                                handles, out, err)
                        : PolylimitNative.polylimit_http_live_open_packed(c,
                                file.toString().getBytes(StandardCharsets.UTF_8), handles, (int) watchMs, out, err);
                Errors.check(rc, err);
            } finally {
                for (int i = 0; i < held; i++) limiters.get(i).endCall();
                client.release();
                err.delete();
            }
            LivePolicy live = new LivePolicy(this, out[0]);
            if (!live.hasResolver()) {
                try (HttpPolicy p = live.current()) {
                    if (p.resolverTimeoutMs() > 0) {
                        live.close();
                        throw new InvalidArgumentException("the policy document has a [resolver] section but no "
                                + "plan resolver was given: LivePolicy.Builder.resolver(...) or asyncResolver(...)");
                    }
                }
            }
            return live;
        }
    }
}
