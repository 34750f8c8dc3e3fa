package io.polylimit;

import io.polylimit.jni.PolylimitNative;
import io.polylimit.jni.PolylimitNativeConstants;
import io.polylimit.jni.SWIGTYPE_p_polylimit_client;
import io.polylimit.jni.SWIGTYPE_p_polylimit_http_policy;
import io.polylimit.jni.SWIGTYPE_p_polylimit_limiter;
import io.polylimit.jni.polylimit_error;
import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

/**
 * The HTTP request policy of the core (docs/integrations/contract.md): a JSON
 * policy document and the limiters its rules name by index. Every language's
 * middleware asks the same policy the same questions, so services in
 * different languages on one Redis agree on the key, the limit, the status,
 * the body and the headers of a request.
 *
 * <p>Per request: {@link #prepare} describes the request and gives a
 * {@link Step}; a {@link Action#CHECK} step is checked on
 * {@link #limiter(int) the rule's limiter} (blocking or
 * {@link Limiter#checkAsync}), and {@link #answer} turns the decision into
 * the response; after the response, {@link #refundDue} says whether the
 * request's units go back (the rule's {@code count_when}). {@link #decide}
 * does prepare, the blocking check and answer in one native call, and
 * {@link #settle} the refund: what {@code io.polylimit.servlet.RateLimitFilter}
 * uses.
 *
 * <p>Immutable and safe to share between threads. {@link #close()} frees it
 * (a Cleaner does it for a policy forgotten); it does not close the limiters.
 */
public final class HttpPolicy implements AutoCloseable {
    /** What a {@link Step} asks of the middleware. */
    public enum Action {
        /** The request goes on unchecked, with no headers. */
        PROCEED,
        /** Check {@link Step#key()} for {@link Step#cost()} on the rule's limiter, then {@link #answer}. */
        CHECK,
        /** Answer at once ({@link Step#status()}: 400, 401 or 403) with {@link #answer}{@code (step, null)}. */
        RESPOND,
        /** The rule keys by the application's key: prepare again with {@link Request#withAppKey}. */
        NEED_APP_KEY,
        /**
         * The rule's limit is the tenant's plan's and the document has a
         * resolver: resolve the plan ({@link LivePolicy}) and prepare again
         * with {@link Request#withPlan}.
         */
        NEED_PLAN
    }

    /** One response header. */
    public record Header(String name, String value) {}

    /**
     * The response to give: {@code status} 0 lets the request go on (with
     * {@code headers}, the rate-limit headers; none when the policy sends
     * none); else answer with it, the body and the headers (Content-Type
     * last). The body is plain text, {@code ""} when going on.
     */
    public record Answer(int status, String body, List<Header> headers) {
        public Answer {
            Objects.requireNonNull(body, "body");
            headers = List.copyOf(headers);
        }

        /** Whether the request goes on to the application. */
        public boolean proceeds() {
            return status == 0;
        }
    }

    /** What to do with a request ({@link #prepare}). */
    public static final class Step {
        private final Action action;
        private final int status;
        private final int rule;
        private final long cost;
        private final byte[] key;
        private final String ruleName;
        private final int limiter;

        Step(Action action, int status, int rule, long cost, byte[] key, String ruleName) {
            this(action, status, rule, cost, key, ruleName, -1);
        }

        Step(Action action, int status, int rule, long cost, byte[] key, String ruleName, int limiter) {
            this.action = action;
            this.status = status;
            this.rule = rule;
            this.cost = cost;
            this.key = key;
            this.ruleName = ruleName;
            this.limiter = limiter;
        }

        /**
         * {@link Action#CHECK} of a policy with its own limits
         * ({@link HttpPolicy#load}, {@link LivePolicy}): the index of the
         * limiter to check on ({@link HttpPolicy#limiter(Step)}); else -1.
         */
        public int limiterIndex() {
            return limiter;
        }

        public Action action() {
            return action;
        }

        /** {@link Action#RESPOND}: 400, 401 or 403; else 0. */
        public int status() {
            return status;
        }

        /** The index of the rule that matched, or -1. */
        public int rule() {
            return rule;
        }

        /** The name of the rule that matched, or null. */
        public String ruleName() {
            return ruleName;
        }

        /** {@link Action#CHECK}: the units to check. */
        public long cost() {
            return cost;
        }

        /** {@link Action#CHECK}: the key to check (as the contract writes it: {@code ip:192.0.2.1}); else "". */
        public String key() {
            return new String(key, StandardCharsets.UTF_8);
        }

        /** The key's bytes. */
        public byte[] keyBytes() {
            return key.clone();
        }

        @Override
        public String toString() {
            // Never the key: it may stand for a credential (it is hashed, but still the client's identity).
            return "Step[" + action + (rule >= 0 ? ", rule=" + ruleName : "") + (status != 0 ? ", status=" + status : "")
                    + (action == Action.CHECK ? ", cost=" + cost : "") + "]";
        }
    }

    /**
     * A request decided by {@link #decide}: its step, the check's decision
     * (null when there was no check, or it failed), the answer, and the
     * check's failure (null unless it failed: the answer is then 503, or
     * going on when the policy's {@code on_error} is {@code allow}).
     */
    public record Exchange(Step step, Decision decision, Answer answer, PolylimitException failure) {}

    /**
     * One request as the middleware describes it. Strings are as the server
     * has them; a null one is absent. Build with {@link #builder()}.
     */
    public static final class Request {
        final String method;
        final String path;
        final String route;
        final String peer;
        final String user;
        final String tenant;
        final String appKey;
        final long cost;
        final Function<String, String> headers;
        final String plan;

        private Request(Builder b) {
            method = b.method;
            path = b.path;
            route = b.route;
            peer = b.peer;
            user = b.user;
            tenant = b.tenant;
            appKey = b.appKey;
            cost = b.cost;
            plan = null;
            if (b.lookup != null) {
                headers = b.lookup;
            } else {
                Map<String, String> m = Map.copyOf(b.headers);
                headers = m::get;
            }
        }

        private Request(Request r, String appKey, String plan) {
            method = r.method;
            path = r.path;
            route = r.route;
            peer = r.peer;
            user = r.user;
            tenant = r.tenant;
            this.appKey = appKey;
            cost = r.cost;
            headers = r.headers;
            this.plan = plan;
        }

        public static Builder builder() {
            return new Builder();
        }

        /** This request with the application's key (for a {@link Action#NEED_APP_KEY} step); null or "": none. */
        public Request withAppKey(String appKey) {
            return new Request(this, appKey, plan);
        }

        /**
         * This request with its tenant's plan, as the application's resolver
         * answered a {@link Action#NEED_PLAN} step; {@code ""}: the default
         * plan; null: not resolved.
         */
        public Request withPlan(String plan) {
            return new Request(this, appKey, plan);
        }

        /** The tenant's id, or null. */
        public String tenant() {
            return tenant;
        }

        /** Builds a {@link Request}. */
        public static final class Builder {
            private String method;
            private String path;
            private String route;
            private String peer;
            private String user;
            private String tenant;
            private String appKey;
            private long cost;
            private final Map<String, String> headers = new LinkedHashMap<>();
            private Function<String, String> lookup;

            private Builder() {}

            /** The method, any case. */
            public Builder method(String method) {
                this.method = method;
                return this;
            }

            /** The path, without the query. */
            public Builder path(String path) {
                this.path = path;
                return this;
            }

            /** The framework's route template ({@code /users/{id}}), when it knows one. */
            public Builder route(String route) {
                this.route = route;
                return this;
            }

            /** The socket's other end, as the server gives it: {@code 10.0.0.1:51234}, {@code [::1]:80}, {@code ::1}. */
            public Builder peer(String peer) {
                this.peer = peer;
                return this;
            }

            /** The authenticated user's id; null: anonymous. */
            public Builder user(String user) {
                this.user = user;
                return this;
            }

            /** The tenant's id; null: none. */
            public Builder tenant(String tenant) {
                this.tenant = tenant;
                return this;
            }

            /** The application's key for rules keyed by {@code app}. */
            public Builder appKey(String appKey) {
                this.appKey = appKey;
                return this;
            }

            /** This request's cost instead of the rule's; 0: the rule's. */
            public Builder cost(long cost) {
                this.cost = cost;
                return this;
            }

            /** A request header; a repeated one is joined with {@code ", "}, in order. */
            public Builder header(String name, String value) {
                Objects.requireNonNull(name, "name");
                Objects.requireNonNull(value, "value");
                headers.merge(name.toLowerCase(java.util.Locale.ROOT), value, (a, b) -> a + ", " + b);
                return this;
            }

            /**
             * The headers as a lookup instead: called with each lower-case
             * name the policy reads ({@link HttpPolicy#headerNames()}), it
             * gives the value (repeated headers joined with {@code ", "}) or
             * null. Replaces {@link #header}.
             */
            public Builder headers(Function<String, String> lookup) {
                this.lookup = Objects.requireNonNull(lookup, "lookup");
                return this;
            }

            public Request build() {
                return new Request(this);
            }
        }
    }

    private static final int PACKED = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP;
    private static final int FIELDS = PolylimitNativeConstants.POLYLIMIT_HTTP_FIELDS;
    private static final int V_ACTION = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_ACTION;
    private static final int V_STATUS = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_STATUS;
    private static final int V_RULE = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_RULE;
    private static final int V_COST = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_COST;
    private static final int V_CHECKED = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_CHECKED;
    private static final int V_DECISION = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_DECISION;
    private static final int V_RESPONSE = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_RESPONSE_STATUS;
    private static final int V_KEY_LEN = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_KEY_LEN;
    private static final int V_BODY_LEN = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_BODY_LEN;
    private static final int V_HEADERS_LEN = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_HEADERS_LEN;
    private static final int V_CHECK_FAILED = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_CHECK_FAILED;
    private static final int LIVE_PACKED = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_LIVE;
    private static final int V_LIMITER = PolylimitNativeConstants.POLYLIMIT_PACKED_HTTP_LIMITER;
    private static final byte[] NO_KEY = new byte[0];
    private static final Action[] ACTIONS = Action.values();

    private final NativeRef<SWIGTYPE_p_polylimit_http_policy> ref;
    private final Cleaner.Cleanable cleanable;
    private final List<Limiter> limiters;
    private final List<String> headerNames;
    private final List<String> ruleNames;
    private final int[] ruleLimiters;
    /** A policy of load() or a live policy's: its steps name their limiters. Else null. */
    private final Shape shape;
    /** The live policy this one is the current one of (plans, resolver), or null. */
    private final LivePolicy live;

    private HttpPolicy(SWIGTYPE_p_polylimit_http_policy handle, List<Limiter> limiters) {
        this.ref = new NativeRef<>(handle, PolylimitNative::polylimit_http_policy_free, "HTTP policy");
        this.cleanable = Natives.CLEANER.register(this, ref);
        this.limiters = limiters;
        Shape s = new Shape(handle, null, limiters);
        this.headerNames = s.headerNames;
        this.ruleNames = s.ruleNames;
        this.ruleLimiters = s.ruleLimiters;
        this.shape = null;
        this.live = null;
    }

    /** A policy with its own limits: one of load(), or a live policy's current one. */
    HttpPolicy(SWIGTYPE_p_polylimit_http_policy handle, Shape shape, LivePolicy live) {
        this.ref = new NativeRef<>(handle, PolylimitNative::polylimit_http_policy_free, "HTTP policy");
        this.cleanable = Natives.CLEANER.register(this, ref);
        this.limiters = shape.appLimiters;
        this.headerNames = shape.headerNames;
        this.ruleNames = shape.ruleNames;
        this.ruleLimiters = shape.ruleLimiters;
        this.shape = shape;
        this.live = live;
    }

    /**
     * What a policy's calls need beside its handle, read once per policy
     * (a live policy shares it between the requests on one policy): its
     * headers, rules, the application's limiters and handles of the
     * document's limiters, made on first use.
     */
    static final class Shape {
        final long id;
        final List<String> headerNames;
        final List<String> ruleNames;
        final int[] ruleLimiters;
        final List<Limiter> appLimiters;
        final long resolverTimeoutMs;
        private final Client client;
        private final Limiter[] documentLimiters;

        Shape(SWIGTYPE_p_polylimit_http_policy handle, Client client, List<Limiter> appLimiters) {
            this.client = client;
            this.appLimiters = appLimiters;
            List<String> names = new ArrayList<>();
            long n = PolylimitNative.polylimit_http_policy_header_count(handle);
            for (long i = 0; i < n; i++) names.add(PolylimitNative.polylimit_http_policy_header_name(handle, i));
            this.headerNames = Collections.unmodifiableList(names);
            List<String> rules = new ArrayList<>();
            long r = PolylimitNative.polylimit_http_policy_rule_count(handle);
            ruleLimiters = new int[(int) r];
            for (int i = 0; i < r; i++) {
                rules.add(PolylimitNative.polylimit_http_policy_rule_name(handle, i));
                ruleLimiters[i] = PolylimitNative.polylimit_http_policy_rule_limiter(handle, i);
            }
            this.ruleNames = Collections.unmodifiableList(rules);
            if (client != null) {
                id = PolylimitNative.polylimit_http_policy_id(handle).longValue();
                resolverTimeoutMs = PolylimitNative.polylimit_http_policy_resolver_timeout_ms(handle);
                long count = PolylimitNative.polylimit_http_policy_limiter_count(handle);
                documentLimiters = new Limiter[(int) Math.max(0, count - appLimiters.size())];
            } else {
                id = 0;
                resolverTimeoutMs = 0;
                documentLimiters = new Limiter[0];
            }
        }

        /** Limiter {@code index} of the policy (the application's, then the document's); null out of range. */
        Limiter limiter(HttpPolicy owner, int index) {
            if (index < 0) return null;
            if (index < appLimiters.size()) return appLimiters.get(index);
            int d = index - appLimiters.size();
            if (d >= documentLimiters.length) return null;
            synchronized (documentLimiters) {
                Limiter l = documentLimiters[d];
                if (l != null) return l;
                SWIGTYPE_p_polylimit_limiter[] out = new SWIGTYPE_p_polylimit_limiter[1];
                polylimit_error err = new polylimit_error();
                SWIGTYPE_p_polylimit_http_policy h = owner.ref.acquire();
                try {
                    Errors.check(PolylimitNative.polylimit_http_policy_limiter(h, index, out, err), err);
                } finally {
                    owner.ref.release();
                    err.delete();
                }
                l = Limiter.ofPolicy(client, out[0], "the policy's limiter " + index);
                documentLimiters[d] = l;
                return l;
            }
        }
    }

    /**
     * The policy of a JSON document ({@code docs/integrations/contract.md},
     * "The policy document") whose rules name {@code limiters} by index
     * ({@code "limiter": 0} is the first).
     *
     * @throws InvalidArgumentException for a document the core refuses; the
     *         message names the line and the field
     *         ({@code policy line 4: rules[0] ("login").key: unknown key part "ipv7"; ...})
     * @throws ClosedException if a limiter or its client is closed
     */
    public static HttpPolicy fromDocument(String document, List<Limiter> limiters) {
        Objects.requireNonNull(document, "document");
        List<Limiter> list = List.copyOf(Objects.requireNonNull(limiters, "limiters"));
        byte[] bytes = document.getBytes(StandardCharsets.UTF_8);
        SWIGTYPE_p_polylimit_limiter[] handles = new SWIGTYPE_p_polylimit_limiter[list.size()];
        SWIGTYPE_p_polylimit_http_policy[] out = new SWIGTYPE_p_polylimit_http_policy[1];
        polylimit_error err = new polylimit_error();
        int held = 0;
        try {
            for (; held < handles.length; held++) handles[held] = list.get(held).beginCall();
            Errors.check(PolylimitNative.polylimit_http_policy_new_packed(bytes, handles, out, err), err);
        } finally {
            for (int i = 0; i < held; i++) list.get(i).endCall();
            err.delete();
        }
        return new HttpPolicy(out[0], list);
    }

    /**
     * The policy of a document, TOML or JSON (JSON when it starts with
     * <code>{</code>), whose rules may name their own limits ({@code limit =
     * "10/minute"}, plans): the core makes those limiters on {@code client}
     * and keeps them; {@code limiters} are the application's, named by
     * {@code limiter = i}. A policy that never reloads ({@link LivePolicy}
     * does). A document with a {@code [resolver]} section needs a plan
     * resolver: use {@link LivePolicy} for it; this refuses such a document.
     *
     * @throws InvalidArgumentException for a document the core refuses (the
     *         message names the line), or one with a resolver section
     */
    public static HttpPolicy load(Client client, String document, List<Limiter> limiters) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(document, "document");
        List<Limiter> list = List.copyOf(Objects.requireNonNull(limiters, "limiters"));
        byte[] bytes = document.getBytes(StandardCharsets.UTF_8);
        SWIGTYPE_p_polylimit_limiter[] handles = new SWIGTYPE_p_polylimit_limiter[list.size()];
        SWIGTYPE_p_polylimit_http_policy[] out = new SWIGTYPE_p_polylimit_http_policy[1];
        polylimit_error err = new polylimit_error();
        int held = 0;
        SWIGTYPE_p_polylimit_client c = client.acquire();
        try {
            for (; held < handles.length; held++) handles[held] = list.get(held).beginCall();
            Errors.check(PolylimitNative.polylimit_http_policy_load_packed(c, bytes, handles, out, err), err);
        } finally {
            for (int i = 0; i < held; i++) list.get(i).endCall();
            client.release();
            err.delete();
        }
        HttpPolicy p = new HttpPolicy(out[0], new Shape(out[0], client, list), null);
        if (p.shape.resolverTimeoutMs > 0) {
            p.close();
            throw new InvalidArgumentException("the policy document has a [resolver] section but no plan resolver "
                    + "was given: use LivePolicy.builder(client).resolver(...)");
        }
        return p;
    }

    /** {@link #load(Client, String, List)} of a document given as Java values (written as JSON). */
    public static HttpPolicy load(Client client, Map<String, ?> document, List<Limiter> limiters) {
        return load(client, Json.write(Objects.requireNonNull(document, "document")), limiters);
    }

    /**
     * The policy of a document given as Java values: a {@link Map} (an
     * object, in its iteration order), lists, strings, numbers, booleans and
     * null, written as JSON and read by {@link #fromDocument(String, List)}.
     */
    public static HttpPolicy fromDocument(Map<String, ?> document, List<Limiter> limiters) {
        return fromDocument(Json.write(Objects.requireNonNull(document, "document")), limiters);
    }

    /**
     * A document given as Java values (see {@link #fromDocument(Map, List)})
     * as JSON text.
     */
    public static String documentJson(Map<String, ?> document) {
        return Json.write(Objects.requireNonNull(document, "document"));
    }

    /** The request headers the policy reads, lower case, in its order. */
    public List<String> headerNames() {
        return headerNames;
    }

    /** The rules' names, in order. */
    public List<String> ruleNames() {
        return ruleNames;
    }

    /** The limiters, as given. */
    public List<Limiter> limiters() {
        return limiters;
    }

    /** The limiter of rule {@code rule} ({@link Step#rule()}), or null when the rule exempts. */
    public Limiter limiter(int rule) {
        int i = ruleLimiters[rule];
        if (shape != null) return shape.limiter(this, i);
        return i < 0 ? null : limiters.get(i);
    }

    /**
     * The limiter a {@link Action#CHECK} step is checked and refunded on:
     * the step's own ({@link Step#limiterIndex()}: a plan's limit) for a
     * policy with its own limits, else its rule's; null when none.
     */
    public Limiter limiter(Step step) {
        Objects.requireNonNull(step, "step");
        if (shape != null && step.limiter >= 0) return shape.limiter(this, step.limiter);
        return step.rule < 0 ? null : limiter(step.rule);
    }

    /** The document's plan resolver deadline in milliseconds; 0 without a resolver section (or a static policy). */
    public long resolverTimeoutMs() {
        return shape == null ? 0 : shape.resolverTimeoutMs;
    }

    /** Whether this policy's steps name their own limiters ({@link #load}, {@link LivePolicy}). */
    boolean named() {
        return shape != null;
    }

    /** What to do with a request (no I/O). */
    public Step prepare(Request request) {
        Objects.requireNonNull(request, "request");
        byte[][] fields = fields(request);
        long[] v = new long[shape != null ? LIVE_PACKED : PACKED];
        byte[][] text = new byte[1][];
        SWIGTYPE_p_polylimit_http_policy h = ref.acquire();
        polylimit_error err = new polylimit_error();
        try {
            if (shape != null) {
                // Without a resolver, "" (the document's tenants, else its
                // default plan): such a policy never asks for the plan.
                String plan = request.plan != null ? request.plan : live == null || !live.hasResolver() ? "" : null;
                Errors.check(PolylimitNative.polylimit_http_prepare_plan_packed(h, fields, request.cost, utf8(plan), v,
                        text, err), err);
            } else {
                Errors.check(PolylimitNative.polylimit_http_prepare_packed(h, fields, request.cost, v, text, err), err);
            }
        } finally {
            err.delete();
            ref.release();
        }
        return step(v, text[0]);
    }

    /**
     * The response for a step: a {@link Action#RESPOND} step's (decision
     * ignored), or a {@link Action#CHECK} step's with the check's decision
     * (null: the check failed: 503, or going on with no headers when the
     * policy's {@code on_error} is {@code allow}). Other steps go on with no
     * headers. Counts the request in the policy's metrics.
     */
    public Answer answer(Step step, Decision decision) {
        Objects.requireNonNull(step, "step");
        long[] v = values(step, decision);
        byte[][] text = new byte[1][];
        SWIGTYPE_p_polylimit_http_policy h = ref.acquire();
        polylimit_error err = new polylimit_error();
        try {
            if (shape != null) {
                Errors.check(PolylimitNative.polylimit_http_answer_live_packed(h, step.key, v, text, err), err);
            } else {
                Errors.check(PolylimitNative.polylimit_http_answer_packed(h, step.key, v, text, err), err);
            }
        } finally {
            err.delete();
            ref.release();
        }
        return answer(v, text[0], 0);
    }

    /**
     * The answer for a request of {@code step}'s rule whose check could not
     * be made (the application's key or cost failed, a limiter was closed):
     * as for a failed check, 503 or going on with the policy's
     * {@code on_error}; counted as the rule's {@code errors}. A step without
     * a rule goes on.
     */
    public Answer answerFailure(Step step) {
        Objects.requireNonNull(step, "step");
        if (step.rule < 0) return new Answer(0, "", List.of());
        return answer(new Step(Action.CHECK, 0, step.rule, Math.max(step.cost, 1), NO_KEY, step.ruleName,
                step.limiter), null);
    }

    /**
     * Whether a {@link Action#CHECK} step's units go back now that its
     * response has {@code status}: the rule's {@code count_when} does not
     * count it, and Redis took them (an admitted decision, neither shadowed
     * nor degraded).
     */
    public boolean refundDue(Step step, Decision decision, int status) {
        Objects.requireNonNull(step, "step");
        Objects.requireNonNull(decision, "decision");
        long[] v = values(step, decision);
        SWIGTYPE_p_polylimit_http_policy h = ref.acquire();
        try {
            return (shape != null ? PolylimitNative.polylimit_http_refund_due_live_packed(h, step.key, v, status)
                    : PolylimitNative.polylimit_http_refund_due_packed(h, step.key, v, status)) != 0;
        } finally {
            ref.release();
        }
    }

    /**
     * {@link #prepare}, the check on the rule's limiter (blocking, as
     * {@link Limiter#check}) and {@link #answer}, in one native call. A
     * failed check is not thrown: it is the exchange's
     * {@link Exchange#failure()}, and the answer says what to do (503, or go
     * on). A {@link Action#NEED_APP_KEY} step comes back as it is (answer:
     * go on); decide again with {@link Request#withAppKey}.
     *
     * @throws InvalidArgumentException for a request the core refuses (an
     *         application key over 1024 bytes)
     */
    public Exchange decide(Request request) {
        Objects.requireNonNull(request, "request");
        if (shape != null) return decideNamed(request);
        byte[][] fields = fields(request);
        long[] v = new long[PACKED];
        byte[][] text = new byte[1][];
        SWIGTYPE_p_polylimit_http_policy h = ref.acquire();
        polylimit_error err = new polylimit_error();
        int held = 0;
        PolylimitException failure = null;
        try {
            try {
                for (; held < limiters.size(); held++) limiters.get(held).beginCall();
            } catch (ClosedException e) {
                // A limiter (or its client) closed under the policy: the check
                // fails, and the core says what that answers.
                failure = e;
            }
            if (failure == null) {
                // polylimit_http_decide: a failed check is an answer, its
                // error in err (the call itself succeeds).
                Errors.check(PolylimitNative.polylimit_http_decide_packed(h, fields, request.cost, v, text, err), err);
                if (v[V_CHECK_FAILED] != 0) failure = Errors.exception(err.getCode(), err);
            }
        } finally {
            for (int i = 0; i < held; i++) limiters.get(i).endCall();
            err.delete();
            ref.release();
        }
        if (failure != null && v[V_CHECK_FAILED] == 0) {
            Step step = prepare(request);
            return new Exchange(step, null, answer(step, null), failure);
        }
        Step step = step(v, text[0]);
        Decision decision = v[V_CHECKED] != 0 ? Limiter.packedDecision(v, V_DECISION) : null;
        int keyLen = (int) v[V_KEY_LEN];
        return new Exchange(step, decision, answer(v, text[0], keyLen), failure);
    }

    /**
     * decide() of a policy whose steps name their limiters: prepare (a
     * {@link Action#NEED_PLAN} step resolved by the live policy's resolver,
     * within the document's deadline), the blocking check on the step's
     * limiter, answer.
     */
    private Exchange decideNamed(Request request) {
        Step step = prepare(request);
        if (step.action == Action.NEED_PLAN) {
            String plan = live == null ? "" : live.resolvePlan(request.tenant, shape.resolverTimeoutMs);
            request = request.withPlan(plan);
            step = prepare(request);
            if (step.action == Action.NEED_PLAN) step = prepare(request.withPlan(""));
        }
        if (step.action != Action.CHECK) {
            Answer a = step.action == Action.RESPOND ? answer(step, null) : new Answer(0, "", List.of());
            return new Exchange(step, null, a, null);
        }
        Decision decision = null;
        PolylimitException failure = null;
        Limiter limiter = limiter(step);
        try {
            if (limiter == null) throw new InvalidArgumentException("the step's limiter is not the policy's");
            decision = limiter.check(step.key, step.cost);
        } catch (PolylimitException e) {
            failure = e;
        }
        return new Exchange(step, decision, answer(step, decision), failure);
    }

    /**
     * {@link #refundDue} and, when due, the refund of the step's units on its
     * rule's limiter (blocking).
     *
     * @return whether it refunded
     * @throws PolylimitException when the refund failed (the units stay taken)
     */
    public boolean settle(Step step, Decision decision, int status) {
        Objects.requireNonNull(step, "step");
        Objects.requireNonNull(decision, "decision");
        if (step.action != Action.CHECK) return false;
        if (shape != null) {
            if (!refundDue(step, decision, status)) return false;
            Limiter limiter = limiter(step);
            if (limiter == null) throw new InvalidArgumentException("the step's limiter is not the policy's");
            limiter.refund(step.key, step.cost);
            return true;
        }
        long[] v = values(step, decision);
        SWIGTYPE_p_polylimit_limiter[] handles = new SWIGTYPE_p_polylimit_limiter[limiters.size()];
        SWIGTYPE_p_polylimit_http_policy h = ref.acquire();
        polylimit_error err = new polylimit_error();
        int held = 0;
        try {
            for (; held < handles.length; held++) handles[held] = limiters.get(held).beginCall();
            int rc = PolylimitNative.polylimit_http_settle_packed(h, handles, step.key, v, status, err);
            if (rc < 0) throw Errors.exception(rc, err);
            return rc == 1;
        } finally {
            for (int i = 0; i < held; i++) limiters.get(i).endCall();
            err.delete();
            ref.release();
        }
    }

    /**
     * Requests decided per rule and outcome in the Prometheus text format:
     * {@code polylimit_http_requests_total{rule="login",outcome="denied"} 3}
     * (outcomes {@code allowed}, {@code denied}, {@code missing_key},
     * {@code invalid}, {@code forbidden}, {@code errors}; the deny list
     * counts under the rule {@code (lists)}). Never a key.
     */
    public String metricsPrometheus() {
        byte[][] out = new byte[1][];
        SWIGTYPE_p_polylimit_http_policy h = ref.acquire();
        polylimit_error err = new polylimit_error();
        try {
            Errors.check(PolylimitNative.polylimit_http_policy_metrics_prometheus(h, out, err), err);
        } finally {
            err.delete();
            ref.release();
        }
        return out[0] == null ? "" : new String(out[0], StandardCharsets.UTF_8);
    }

    /** {@link #metricsPrometheus()} as counts: rule, then outcome, to requests (in the core's order). */
    public Map<String, Map<String, Long>> requestCounts() {
        Map<String, Map<String, Long>> out = new LinkedHashMap<>();
        String prefix = "polylimit_http_requests_total{rule=\"";
        for (String line : metricsPrometheus().split("\n")) {
            if (!line.startsWith(prefix)) continue;
            int ruleEnd = line.indexOf("\",outcome=\"", prefix.length());
            int outcomeEnd = line.indexOf("\"} ", ruleEnd);
            if (ruleEnd < 0 || outcomeEnd < 0) continue;
            String rule = line.substring(prefix.length(), ruleEnd);
            String outcome = line.substring(ruleEnd + "\",outcome=\"".length(), outcomeEnd);
            long n = Long.parseLong(line.substring(outcomeEnd + 3).trim());
            out.computeIfAbsent(rule, r -> new LinkedHashMap<>()).put(outcome, n);
        }
        return out;
    }

    public boolean isClosed() {
        return ref.isClosed();
    }

    /** Frees the policy (after the calls in flight); a second call does nothing. The limiters stay open. */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "HttpPolicy[rules=" + ruleNames + ", headers=" + headerNames + (isClosed() ? ", closed]" : "]");
    }

    /** The request's strings, in the order of POLYLIMIT_HTTP_FIELD_*, then the policy's headers. */
    private byte[][] fields(Request r) {
        byte[][] f = new byte[FIELDS + headerNames.size()][];
        f[PolylimitNativeConstants.POLYLIMIT_HTTP_FIELD_METHOD] = utf8(r.method);
        f[PolylimitNativeConstants.POLYLIMIT_HTTP_FIELD_PATH] = utf8(r.path);
        f[PolylimitNativeConstants.POLYLIMIT_HTTP_FIELD_ROUTE] = utf8(r.route);
        f[PolylimitNativeConstants.POLYLIMIT_HTTP_FIELD_PEER] = utf8(r.peer);
        f[PolylimitNativeConstants.POLYLIMIT_HTTP_FIELD_USER] = utf8(r.user);
        f[PolylimitNativeConstants.POLYLIMIT_HTTP_FIELD_TENANT] = utf8(r.tenant);
        f[PolylimitNativeConstants.POLYLIMIT_HTTP_FIELD_APP_KEY] = utf8(r.appKey);
        for (int i = 0; i < headerNames.size(); i++) f[FIELDS + i] = headerBytes(r.headers.apply(headerNames.get(i)));
        return f;
    }

    private static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * A header value's bytes: servers decode header bytes as ISO-8859-1, so
     * a value of such characters goes back to the bytes the client sent
     * (what an API key's hash must be of); any other text as UTF-8.
     */
    private static byte[] headerBytes(String s) {
        if (s == null) return null;
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) > 0xFF) return s.getBytes(StandardCharsets.UTF_8);
        }
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    private Step step(long[] v, byte[] text) {
        int action = (int) v[V_ACTION];
        int rule = (int) v[V_RULE];
        int keyLen = (int) v[V_KEY_LEN];
        byte[] key = keyLen == 0 || text == null ? NO_KEY : java.util.Arrays.copyOf(text, keyLen);
        int limiter = v.length > V_LIMITER && action == Action.CHECK.ordinal() ? (int) v[V_LIMITER] : -1;
        return new Step(action >= 0 && action < ACTIONS.length ? ACTIONS[action] : Action.PROCEED, (int) v[V_STATUS],
                rule, v[V_COST], key, rule >= 0 && rule < ruleNames.size() ? ruleNames.get(rule) : null, limiter);
    }

    private long[] values(Step step, Decision decision) {
        long[] v = new long[shape != null ? LIVE_PACKED : PACKED];
        if (shape != null) v[V_LIMITER] = step.limiter;
        v[V_ACTION] = step.action.ordinal();
        v[V_STATUS] = step.status;
        v[V_RULE] = step.rule;
        v[V_COST] = step.cost;
        if (decision != null) {
            v[V_CHECKED] = 1;
            Limiter.pack(decision, v, V_DECISION);
        }
        return v;
    }

    private static Answer answer(long[] v, byte[] text, int at) {
        int bodyLen = (int) v[V_BODY_LEN];
        int headersLen = (int) v[V_HEADERS_LEN];
        String body = bodyLen == 0 ? "" : new String(text, at, bodyLen, StandardCharsets.UTF_8);
        List<Header> headers = new ArrayList<>(7);
        if (headersLen > 0) {
            String all = new String(text, at + bodyLen, headersLen, StandardCharsets.UTF_8);
            for (String line : all.split("\n")) {
                if (line.isEmpty()) continue;
                int colon = line.indexOf(": ");
                if (colon <= 0) throw new PolylimitException(Status.ERROR, "malformed header line from the core: " + line);
                headers.add(new Header(line.substring(0, colon), line.substring(colon + 2)));
            }
        }
        return new Answer((int) v[V_RESPONSE], body, headers);
    }
}
