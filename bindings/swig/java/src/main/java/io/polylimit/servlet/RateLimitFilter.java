package io.polylimit.servlet;

import io.polylimit.Client;
import io.polylimit.ClientOptions;
import io.polylimit.Decision;
import io.polylimit.HttpPolicy;
import io.polylimit.LivePolicy;
import io.polylimit.Limiter;
import io.polylimit.PolylimitException;
import io.polylimit.Status;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import java.util.function.IntPredicate;
import java.util.function.ToLongFunction;
import java.util.regex.Pattern;

/**
 * A Jakarta Servlet filter that rate-limits requests with the core's HTTP
 * request policy (docs/integrations/contract.md): every server sharing the
 * Redis and the limiters' prefixes shares the limits, whatever its language.
 *
 * <p>The filter decides nothing itself. For each request it describes the
 * request to the policy ({@link HttpPolicy}): the method, the path inside the
 * context ({@code getServletPath() + getPathInfo()}), the peer address
 * ({@code getRemoteAddr()}), the values of the headers the policy reads (and
 * only those), the user ({@link Builder#user}, default
 * {@code getRemoteUser()}), the tenant ({@link Builder#tenant}) and the
 * request's cost ({@link Builder#cost}); one native call then matches the
 * rule, derives the key, checks it on the rule's limiter (blocking) and
 * formats the answer, which the filter applies: a 429, 503, 400, 401 or 403
 * with the core's body and headers, or the request goes down the chain with
 * the rate-limit headers and the {@link Decision} in the request attribute
 * {@link #DECISION_ATTRIBUTE}. After the chain, the rule's {@code count_when}
 * may give the units back (a refund): not for a request that threw or went
 * asynchronous ({@code request.isAsyncStarted()}). A failed check is logged
 * (never with the key) and answered as the policy's {@code on_error} says.
 *
 * <h2>From a policy document</h2>
 * <pre>{@code
 * RateLimitFilter filter = RateLimitFilter.fromDocument("""
 *     {"trusted_proxies": ["10.0.0.0/8"],
 *      "exempt": ["/health"],
 *      "rules": [{"name": "login", "paths": ["/login"], "methods": ["POST"], "limiter": 0,
 *                 "count_when": "failures"},
 *                {"name": "api", "paths": ["/api/*"], "limiter": 1, "key": ["api_key", "ip"]}]}
 *     """, List.of(client.limiter("5/minute"), client.limiter("100/minute")));
 * }</pre>
 * With hooks (the user, the tenant, the application's key of {@code "app"}
 * rules, a cost): {@code RateLimitFilter.builder().document(json, limiters).user(...).build()}.
 *
 * <h2>From options</h2>
 * <pre>{@code
 * RateLimitFilter filter = RateLimitFilter.builder()
 *     .limit(client.limiter("100/minute"))                // every other path
 *     .pathLimit("/login", client.limiter("5/minute"))
 *     .exempt("/health", "/static/*")
 *     .trustedProxies("10.0.0.0/8")
 *     .build();
 * }</pre>
 * The options are written into a policy document ({@link #document()} shows
 * it): one rule per {@link Builder#pathLimit} (exact paths first, then
 * longer prefixes before shorter ones), then the {@link Builder#limit} rule
 * named {@code default}; the key ({@link Builder#key}) is each rule's
 * {@code key}, {@link Builder#onMissingKey} its {@code on_missing_key} and
 * {@link Builder#countWhen} its {@code count_when}. The rules' keys do not
 * name the rule: give limiters that must count apart prefixes of their own.
 * The filter does not close limiters it was given.
 *
 * <h2>With init-params (web.xml, or a container's filter registration)</h2>
 * <table>
 *   <caption>init-params</caption>
 *   <tr><td>{@code url}</td><td>Redis URL; unset: the {@code POLYLIMIT_URL} environment
 *       variable; neither: init fails (there is no default)</td></tr>
 *   <tr><td>{@code limit}</td><td>rate spec for paths without their own, e.g. {@code 100/minute}</td></tr>
 *   <tr><td>{@code path-limit:<pattern>}</td><td>rate spec for one path pattern, e.g.
 *       {@code path-limit:/login} = {@code 5/minute} (its limiter's prefix is
 *       {@code <prefix>:<pattern>})</td></tr>
 *   <tr><td>{@code exempt}</td><td>comma-separated path patterns</td></tr>
 *   <tr><td>{@code key}</td><td>{@code ip} (default); {@code header:<Name>} (that header,
 *       else the client IP); {@code api-key:<Name>} (that header, a credential: none is 401);
 *       {@code class:<name>} of a {@link KeyFunction} with a public no-argument constructor</td></tr>
 *   <tr><td>{@code on-missing-key}</td><td>{@code reject} (default: 400, or 401 for a credential)
 *       or {@code skip} (not limited)</td></tr>
 *   <tr><td>{@code count-when}</td><td>{@code failures} (only responses with a status of 400 or
 *       more count) or comma-separated statuses that count, e.g. {@code 401, 403}; unset: all</td></tr>
 *   <tr><td>{@code trusted-proxies}</td><td>comma-separated IPs or CIDR ranges</td></tr>
 *   <tr><td>{@code prefix}</td><td>Redis key prefix (default {@code pl})</td></tr>
 *   <tr><td>{@code algorithm}</td><td>{@code sliding-log} (default), {@code sliding-counter},
 *       {@code fixed-window}, {@code gcra}</td></tr>
 *   <tr><td>{@code failure-policy}</td><td>{@code error} (default), {@code open}, {@code closed},
 *       {@code local}</td></tr>
 *   <tr><td>{@code on-error}</td><td>{@code unavailable} (default: 503) or {@code allow}</td></tr>
 *   <tr><td>{@code send-headers}</td><td>{@code true} (default) or {@code false}: rate-limit
 *       headers on admitted responses</td></tr>
 *   <tr><td>{@code error-status}</td><td>deprecated: the status of a failed check instead of 503</td></tr>
 *   <tr><td>{@code header-style}</td><td>deprecated: {@code all} (default), {@code structured},
 *       {@code separate}, {@code retry-after-only}</td></tr>
 *   <tr><td>{@code client-name}</td><td>the client's metrics label</td></tr>
 *   <tr><td>{@code policy-file}</td><td>instead of the limits and options: a policy document
 *       (TOML or JSON) in that file, a {@link LivePolicy} reloaded when the file changes (only
 *       {@code url}, {@code client-name}, {@code watch-ms} and the deprecated ones go with it)</td></tr>
 *   <tr><td>{@code watch-ms}</td><td>with {@code policy-file}: how often the file is checked
 *       (default 1000; 0: never)</td></tr>
 * </table>
 * An unknown init-param or a bad value fails {@link #init} with a
 * {@link ServletException} naming it. A filter configured by init-params owns
 * its client, limiters and policy and closes them in {@link #destroy()}.
 *
 * <p>Patterns: {@code /exact}, {@code /prefix/*} (the prefix itself and
 * everything under it) and {@code /*} (every path).
 */
public final class RateLimitFilter implements Filter {
    /** The request attribute holding the {@link Decision} of an allowed request. */
    public static final String DECISION_ATTRIBUTE = "io.polylimit.servlet.decision";
    /** The status of a failed check (the policy's {@code on_error: unavailable}). */
    public static final int DEFAULT_ERROR_STATUS = 503;
    /** 429 Too Many Requests. */
    public static final int TOO_MANY_REQUESTS = 429;
    /** 400 Bad Request: no key, {@link MissingKey#REJECT}. */
    public static final int NO_KEY = 400;
    /** 401 Unauthorized: no credential to key by, {@link MissingKey#REJECT}. */
    public static final int NO_CREDENTIAL = 401;
    /** Counts responses with a status of 400 or more (the document's {@code "failures"}): failed logins. */
    public static final IntPredicate FAILURES = status -> status >= 400;
    /** The name of the {@link Builder#limit} rule. */
    public static final String DEFAULT_RULE = "default";

    private static final System.Logger LOG = System.getLogger(RateLimitFilter.class.getName());
    private static final Set<String> PARAMS = Set.of("url", "client-name", "limit", "exempt", "key",
            "trusted-proxies", "prefix", "algorithm", "failure-policy", "error-status", "header-style",
            "on-missing-key", "count-when", "on-error", "send-headers", "policy-file", "watch-ms");
    /** The init-params that go with "policy-file" (the document says the rest). */
    private static final Set<String> FILE_PARAMS = Set.of("url", "client-name", "error-status", "header-style",
            "policy-file", "watch-ms");
    private static final String PATH_LIMIT = "path-limit:";
    private static final Pattern RULE_NAME = Pattern.compile("[\\x21-\\x7e&&[^\"\\\\]]{1,64}");

    private volatile Config config; // null until built or initialised
    private final boolean programmatic;
    // Owned when configured by init-params; closed in destroy().
    private Client ownedClient;
    private final List<Limiter> ownedLimiters = new ArrayList<>();
    private LivePolicy ownedLive;

    /** A filter configured by its init-params in {@link #init(FilterConfig)} (web.xml). */
    public RateLimitFilter() {
        this.programmatic = false;
    }

    private RateLimitFilter(Config config) {
        this.config = config;
        this.programmatic = true;
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * A filter of a policy document (JSON, docs/integrations/contract.md)
     * whose rules name {@code limiters} by index, with the default hooks
     * (the user is {@code getRemoteUser()}; no tenant, no application key).
     *
     * @throws io.polylimit.InvalidArgumentException for a document the core
     *         refuses (the message names the line and the field)
     */
    public static RateLimitFilter fromDocument(String json, List<Limiter> limiters) {
        return builder().document(json, limiters).build();
    }

    @Override
    public void init(FilterConfig filterConfig) throws ServletException {
        List<String> names = filterConfig == null ? List.of()
                : Collections.list(filterConfig.getInitParameterNames());
        if (programmatic) {
            if (!names.isEmpty()) {
                throw new ServletException("RateLimitFilter: built programmatically, so init-params "
                        + names + " would be ignored; configure one way only");
            }
            return;
        }
        if (config != null) return; // initialised twice
        Map<String, String> params = new LinkedHashMap<>();
        for (String n : names) params.put(n, filterConfig.getInitParameter(n));
        try {
            config = fromParams(params);
        } catch (RuntimeException e) {
            destroy();
            throw new ServletException("RateLimitFilter: " + e.getMessage(), e);
        }
    }

    private Config fromParams(Map<String, String> params) {
        for (String n : params.keySet()) {
            if (!PARAMS.contains(n) && !n.startsWith(PATH_LIMIT)) {
                throw new IllegalArgumentException("unknown init-param \"" + n + "\" (known: " + PARAMS
                        + " and path-limit:<pattern>)");
            }
        }
        Builder b = new Builder();
        if (params.containsKey("policy-file")) return fromFile(params, b);
        if (params.containsKey("watch-ms")) throw new IllegalArgumentException("watch-ms: only with policy-file");
        String proxies = params.get("trusted-proxies");
        if (proxies != null) b.trustedProxies(splitList(proxies).toArray(new String[0]));
        String key = params.get("key");
        if (key != null) b.key(keyFunction(key.trim(), b.clientIp));
        String exempt = params.get("exempt");
        if (exempt != null) b.exempt(splitList(exempt).toArray(new String[0]));
        if (params.containsKey("error-status")) b.errorStatus(parseStatus(params.get("error-status")));
        if (params.containsKey("header-style")) b.headerStyle(HeaderStyle.fromParam(params.get("header-style")));
        if (params.containsKey("on-missing-key")) b.onMissingKey(MissingKey.fromParam(params.get("on-missing-key")));
        if (params.containsKey("count-when")) b.countWhen(countWhen(params.get("count-when")));
        if (params.containsKey("on-error")) b.onError(onError(params.get("on-error")));
        if (params.containsKey("send-headers")) b.sendHeaders(bool("send-headers", params.get("send-headers")));

        Limiter.Algorithm algorithm = params.containsKey("algorithm")
                ? enumParam(Limiter.Algorithm.class, "algorithm", params.get("algorithm")) : null;
        Limiter.FailurePolicy policy = params.containsKey("failure-policy")
                ? enumParam(Limiter.FailurePolicy.class, "failure-policy", params.get("failure-policy")) : null;
        String prefix = params.get("prefix");
        prefix = prefix == null || prefix.isBlank() ? "pl" : prefix.trim();
        String url = params.get("url");
        String name = params.get("client-name");

        boolean anyLimit = params.containsKey("limit") || params.keySet().stream().anyMatch(n -> n.startsWith(PATH_LIMIT));
        if (!anyLimit) throw new IllegalArgumentException("no limit: set \"limit\" or a \"path-limit:<pattern>\"");
        // No URL: null, and the core reads POLYLIMIT_URL (or refuses).
        ownedClient = Client.open(url == null || url.isBlank() ? null : url.trim(),
                ClientOptions.builder().name(name == null || name.isBlank() ? null : name.trim()).build());
        for (Map.Entry<String, String> e : params.entrySet()) {
            boolean isDefault = e.getKey().equals("limit");
            if (!isDefault && !e.getKey().startsWith(PATH_LIMIT)) continue;
            String pattern = isDefault ? null : new PathPattern(e.getKey().substring(PATH_LIMIT.length())).text;
            Limiter.Builder lb = ownedClient.limiterBuilder(e.getValue().trim());
            if (algorithm != null) lb.algorithm(algorithm);
            if (policy != null) lb.onFailure(policy);
            // The keys do not name the rule: each path's limiter counts under a prefix of its own.
            lb.prefix(isDefault ? prefix : prefix + ":" + pattern);
            Limiter limiter = lb.build();
            ownedLimiters.add(limiter);
            if (isDefault) b.limit(limiter);
            else b.pathLimit(pattern, limiter);
        }
        return b.config();
    }

    /** A live policy of the file "policy-file", watched every "watch-ms" (default 1000; 0: not watched). */
    private Config fromFile(Map<String, String> params, Builder b) {
        for (String n : params.keySet()) {
            if (!FILE_PARAMS.contains(n)) {
                throw new IllegalArgumentException("init-param \"" + n + "\" with policy-file: the document says it"
                        + " (with policy-file: " + FILE_PARAMS + ")");
            }
        }
        if (params.containsKey("error-status")) b.errorStatus(parseStatus(params.get("error-status")));
        if (params.containsKey("header-style")) b.headerStyle(HeaderStyle.fromParam(params.get("header-style")));
        long watchMs = 1000;
        String watch = params.get("watch-ms");
        if (watch != null) {
            try {
                watchMs = Long.parseLong(watch.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("watch-ms: not a number: " + watch);
            }
            if (watchMs < 0) throw new IllegalArgumentException("watch-ms: not negative");
        }
        String url = params.get("url");
        String name = params.get("client-name");
        ownedClient = Client.open(url == null || url.isBlank() ? null : url.trim(),
                ClientOptions.builder().name(name == null || name.isBlank() ? null : name.trim()).build());
        ownedLive = LivePolicy.open(ownedClient, java.nio.file.Path.of(params.get("policy-file").trim()),
                java.time.Duration.ofMillis(watchMs));
        b.livePolicy(ownedLive);
        return b.config();
    }

    private static KeyFunction keyFunction(String spec, ClientIp clientIp) {
        if (spec.equals("ip")) return KeyFunction.clientIp(clientIp);
        if (spec.startsWith("header:")) {
            return KeyFunction.header(spec.substring("header:".length()).trim()).orElse(KeyFunction.clientIp(clientIp));
        }
        if (spec.startsWith("api-key:")) return KeyFunction.apiKey(spec.substring("api-key:".length()).trim());
        if (spec.startsWith("class:")) {
            String cls = spec.substring("class:".length()).trim();
            try {
                ClassLoader loader = Thread.currentThread().getContextClassLoader();
                Class<?> c = Class.forName(cls, true, loader != null ? loader : RateLimitFilter.class.getClassLoader());
                return (KeyFunction) c.getConstructor().newInstance();
            } catch (ReflectiveOperationException | ClassCastException e) {
                throw new IllegalArgumentException("key \"" + spec + "\": not a KeyFunction with a public "
                        + "no-argument constructor (" + e + ")", e);
            }
        }
        throw new IllegalArgumentException("key \"" + spec
                + "\": expected ip, header:<Name>, api-key:<Name> or class:<KeyFunction>");
    }

    /** {@code failures}, or the statuses that count ({@code 401, 403}). */
    private static IntPredicate countWhen(String value) {
        String v = value.trim();
        if (v.equals("failures")) return FAILURES;
        Set<Integer> statuses = new java.util.HashSet<>();
        for (String s : splitList(v)) {
            try {
                statuses.add(Integer.parseInt(s));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("count-when \"" + value
                        + "\": expected failures or comma-separated statuses (401, 403)");
            }
        }
        if (statuses.isEmpty()) throw new IllegalArgumentException("count-when is empty");
        return statuses::contains;
    }

    private static boolean onError(String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        if (v.equals("allow")) return true;
        if (v.equals("unavailable")) return false;
        throw new IllegalArgumentException("on-error \"" + value + "\": expected unavailable or allow");
    }

    private static boolean bool(String param, String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        if (v.equals("true")) return true;
        if (v.equals("false")) return false;
        throw new IllegalArgumentException(param + " \"" + value + "\": expected true or false");
    }

    private static <E extends Enum<E>> E enumParam(Class<E> type, String param, String value) {
        String v = value.trim().toUpperCase(Locale.ROOT).replace('-', '_');
        for (E e : type.getEnumConstants()) if (e.name().equals(v)) return e;
        List<String> names = new ArrayList<>();
        for (E e : type.getEnumConstants()) names.add(e.name().toLowerCase(Locale.ROOT).replace('_', '-'));
        throw new IllegalArgumentException(param + " \"" + value + "\": expected one of " + names);
    }

    private static int parseStatus(String value) {
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("error-status \"" + value + "\" is not a number");
        }
    }

    private static List<String> splitList(String value) {
        List<String> out = new ArrayList<>();
        for (String s : value.split("[,\\s]+")) if (!s.isEmpty()) out.add(s);
        return out;
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        Config c = config;
        if (c == null) {
            // Never initialised: the container did not call init. Fail this request, loudly.
            LOG.log(System.Logger.Level.ERROR, "RateLimitFilter used before init()");
            ((HttpServletResponse) response).setStatus(DEFAULT_ERROR_STATUS);
            return;
        }
        if (!(request instanceof HttpServletRequest) || !(response instanceof HttpServletResponse)) {
            chain.doFilter(request, response);
            return;
        }
        HttpServletRequest req = (HttpServletRequest) request;
        HttpServletResponse res = (HttpServletResponse) response;
        // A live policy: the one in force when the request came, until it is settled.
        HttpPolicy policy = c.live != null ? c.live.current() : c.policy;
        try {
            handle(c, policy, req, res, chain);
        } finally {
            if (c.live != null) policy.close();
        }
    }

    private static void handle(Config c, HttpPolicy policy, HttpServletRequest req, HttpServletResponse res,
                               FilterChain chain) throws IOException, ServletException {
        HttpPolicy.Exchange ex = decide(c, policy, req);
        HttpPolicy.Answer answer = ex.answer();
        int status = answer.status();
        if (ex.failure() != null) {
            if (status == DEFAULT_ERROR_STATUS) status = c.errorStatus;
            // Never the key in a log line: it stands for a client (or an API key's hash).
            LOG.log(System.Logger.Level.WARNING, "rate limit check failed for " + req.getMethod() + " " + path(req)
                    + " (rule " + ex.step().ruleName() + "); " + (status == 0 ? "going on" : "answering " + status)
                    + ": " + ex.failure());
        }
        if (status != 0) {
            respond(res, status, answer, c.headerStyle);
            return;
        }
        for (HttpPolicy.Header h : answer.headers()) {
            if (c.headerStyle.includes(h.name())) res.setHeader(h.name(), h.value());
        }
        Decision decision = ex.decision();
        if (decision != null) req.setAttribute(DECISION_ATTRIBUTE, decision);
        chain.doFilter(req, res);
        if (decision != null && !req.isAsyncStarted()) {
            try {
                policy.settle(ex.step(), decision, res.getStatus());
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "rate limit refund failed for " + req.getMethod() + " "
                        + path(req) + "; the request stays counted: " + e);
            }
        }
    }

    /**
     * One native call; a second one, with the application's key, when the
     * rule asks for it. When a hook of the application throws, the request
     * is answered as a failed check of its rule (the policy's on_error).
     */
    private static HttpPolicy.Exchange decide(Config c, HttpPolicy policy, HttpServletRequest req) {
        HttpPolicy.Request.Builder b = CoreKeys.describe(req, req.getRemoteAddr(),
                name -> CoreKeys.joined(req.getHeaders(name)));
        HttpPolicy.Request base = b.build();
        HttpPolicy.Request r = base;
        HttpPolicy.Exchange ex = null;
        try {
            if (c.user != null) b.user(c.user.apply(req));
            if (c.tenant != null) b.tenant(c.tenant.apply(req));
            if (c.route != null) b.route(c.route.apply(req));
            if (c.cost != null) b.cost(c.cost.applyAsLong(req));
            r = b.build();
            ex = policy.decide(r);
            if (ex.step().action() == HttpPolicy.Action.NEED_APP_KEY) {
                String key = c.appKey == null ? null : c.appKey.key(req);
                ex = policy.decide(r.withAppKey(key == null ? "" : key));
            }
            return ex;
        } catch (RuntimeException e) { // an application hook (user, tenant, key, cost) threw
            HttpPolicy.Step step = ex != null ? ex.step() : policy.prepare(base);
            PolylimitException failure;
            if (e instanceof PolylimitException) {
                failure = (PolylimitException) e;
            } else {
                failure = new PolylimitException(Status.ERROR, "the application's hook failed: " + e);
                failure.initCause(e);
            }
            HttpPolicy.Answer answer = step.action() == HttpPolicy.Action.RESPOND
                    ? policy.answer(step, null) : policy.answerFailure(step);
            return new HttpPolicy.Exchange(step, null, answer, failure);
        }
    }

    private static void respond(HttpServletResponse res, int status, HttpPolicy.Answer answer, HeaderStyle style)
            throws IOException {
        if (res.isCommitted()) return;
        res.setStatus(status);
        for (HttpPolicy.Header h : answer.headers()) {
            if (style.includes(h.name())) res.setHeader(h.name(), h.value());
        }
        byte[] bytes = answer.body().getBytes(StandardCharsets.UTF_8);
        res.setContentLength(bytes.length);
        res.getOutputStream().write(bytes);
    }

    /** The path inside the context, as the container decoded and normalised it. */
    static String path(HttpServletRequest req) {
        String servletPath = req.getServletPath();
        String info = req.getPathInfo();
        String p = (servletPath == null ? "" : servletPath) + (info == null ? "" : info);
        return p.isEmpty() ? "/" : p;
    }

    /** Closes the client, limiters and policy this filter opened from its init-params; not those it was given. */
    @Override
    public void destroy() {
        Config c = config;
        if (!programmatic && c != null && c.policy != null) c.policy.close();
        if (ownedLive != null) ownedLive.close();
        ownedLive = null;
        for (Limiter l : ownedLimiters) l.close();
        ownedLimiters.clear();
        if (ownedClient != null) ownedClient.close();
        ownedClient = null;
        if (!programmatic) config = null;
    }

    /** The client this filter opened from its init-params (for metrics), or null. */
    public Client client() {
        return ownedClient;
    }

    /**
     * The policy this filter asks (for its metrics: {@link HttpPolicy#metricsPrometheus()}), or null before
     * init or with a {@linkplain #livePolicy() live policy}.
     */
    public HttpPolicy policy() {
        Config c = config;
        return c == null ? null : c.policy;
    }

    /** The live policy this filter asks ({@link Builder#livePolicy}), or null. */
    public LivePolicy livePolicy() {
        Config c = config;
        return c == null ? null : c.live;
    }

    /** The policy document: as given, or as the options were written into it; null before init. */
    public String document() {
        Config c = config;
        return c == null ? null : c.document;
    }

    @Override
    public String toString() {
        Config c = config;
        return "RateLimitFilter[" + (c == null ? "not initialised" : c) + "]";
    }

    /** The filter's settings; immutable. */
    private static final class Config {
        final HttpPolicy policy; // null with a live policy
        final LivePolicy live;
        final String document;
        final KeyFunction appKey; // for rules keyed by "app"; null: none
        final Function<HttpServletRequest, String> user;
        final Function<HttpServletRequest, String> tenant;
        final Function<HttpServletRequest, String> route;
        final ToLongFunction<HttpServletRequest> cost;
        final int errorStatus;
        final HeaderStyle headerStyle;
        final String described;

        Config(HttpPolicy policy, String document, KeyFunction appKey, Builder b, String described) {
            this.policy = policy;
            this.live = b.live;
            this.document = document;
            this.appKey = appKey;
            this.user = b.user;
            this.tenant = b.tenant;
            this.route = b.route;
            this.cost = b.cost;
            this.errorStatus = b.errorStatus;
            this.headerStyle = b.headerStyle;
            this.described = described;
        }

        @Override
        public String toString() {
            return described;
        }
    }

    /** {@code /exact}, {@code /prefix/*} or {@code /*}: the document's path globs. */
    static final class PathPattern {
        final String text;
        final String base; // exact path, or the prefix without "/*"
        final boolean prefix;
        final int specificity;

        PathPattern(String text) {
            Objects.requireNonNull(text, "pattern");
            String t = text.trim();
            if (!t.startsWith("/")) {
                throw new IllegalArgumentException("path pattern \"" + text + "\" must start with '/'");
            }
            if (t.endsWith("/*")) {
                prefix = true;
                base = t.substring(0, t.length() - 2);
                specificity = base.length();
            } else {
                if (t.contains("*")) {
                    throw new IllegalArgumentException("path pattern \"" + text
                            + "\": '*' only as a final \"/*\" (/exact, /prefix/*, /*)");
                }
                prefix = false;
                base = t;
                specificity = Integer.MAX_VALUE;
            }
            this.text = t;
        }

        /** The globs: the path; or the prefix itself and everything under it. */
        List<String> globs() {
            if (!prefix) return List.of(base);
            if (base.isEmpty()) return List.of("/*");
            return List.of(base, base + "/*");
        }

        @Override
        public String toString() {
            return text;
        }
    }

    /** Builds a {@link RateLimitFilter} from limiters the caller made (and closes). */
    public static final class Builder {
        private Limiter defaultLimiter;
        private final List<Map.Entry<PathPattern, Limiter>> paths = new ArrayList<>();
        private final List<PathPattern> exempt = new ArrayList<>();
        private KeyFunction key;
        private ClientIp clientIp = ClientIp.direct();
        private int errorStatus = DEFAULT_ERROR_STATUS;
        private HeaderStyle headerStyle = HeaderStyle.ALL;
        private MissingKey missingKey = MissingKey.REJECT;
        private IntPredicate countWhen;
        private Boolean onErrorAllow;
        private Boolean sendHeaders;
        private String document;
        private List<Limiter> documentLimiters;
        private HttpPolicy policy;
        private LivePolicy live;
        private KeyFunction appKey;
        private Function<HttpServletRequest, String> user = HttpServletRequest::getRemoteUser;
        private Function<HttpServletRequest, String> tenant;
        private Function<HttpServletRequest, String> route;
        private ToLongFunction<HttpServletRequest> cost;
        private boolean options; // an option that the document would otherwise say was set

        private Builder() {}

        /**
         * The policy document (JSON) and the limiters its rules name by
         * index, instead of the options ({@link #limit}, {@link #pathLimit},
         * {@link #exempt}, {@link #key}, {@link #trustedProxies},
         * {@link #onMissingKey}, {@link #countWhen}, {@link #onError},
         * {@link #sendHeaders}): the document says all that.
         */
        public Builder document(String json, List<Limiter> limiters) {
            this.document = Objects.requireNonNull(json, "json");
            this.documentLimiters = List.copyOf(Objects.requireNonNull(limiters, "limiters"));
            return this;
        }

        /**
         * A live policy (reloaded by its owner or its file's watch; this
         * filter does not close it), instead of options: each request takes
         * the policy in force when it came, resolves its tenant's plan with
         * the live policy's resolver when the document asks, and is checked
         * on the limit its step names.
         */
        public Builder livePolicy(LivePolicy live) {
            this.live = Objects.requireNonNull(live, "live");
            return this;
        }

        /** A policy made already (shared with other filters; this filter does not close it), instead of options. */
        public Builder policy(HttpPolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** The limit of every path without its own {@link #pathLimit} (the rule {@code default}). */
        public Builder limit(Limiter limiter) {
            this.defaultLimiter = Objects.requireNonNull(limiter, "limiter");
            options = true;
            return this;
        }

        /**
         * A limit of its own for the paths matching {@code pattern}
         * ({@code /exact}, {@code /prefix/*}): a rule named after the
         * pattern. Its keys are those of the other rules: give its limiter a
         * prefix of its own to count apart.
         */
        public Builder pathLimit(String pattern, Limiter limiter) {
            PathPattern p = new PathPattern(pattern);
            Objects.requireNonNull(limiter, "limiter");
            for (Map.Entry<PathPattern, Limiter> e : paths) {
                if (e.getKey().text.equals(p.text)) {
                    throw new IllegalArgumentException("path pattern \"" + pattern + "\" is given twice");
                }
            }
            paths.add(Map.entry(p, limiter));
            options = true;
            return this;
        }

        /** Paths that are never limited and get no headers (health checks, static files). */
        public Builder exempt(String... patterns) {
            for (String p : patterns) exempt.add(new PathPattern(p));
            options = true;
            return this;
        }

        /** Whom a request counts against; default: {@link KeyFunction#clientIp} with the trusted proxies. */
        public Builder key(KeyFunction key) {
            this.key = Objects.requireNonNull(key, "key");
            options = true;
            return this;
        }

        /** Proxies whose {@code X-Forwarded-For} is believed (IPs or CIDR ranges). None: the peer address. */
        public Builder trustedProxies(String... proxies) {
            this.clientIp = ClientIp.trusting(proxies);
            options = true;
            return this;
        }

        /**
         * The status answered when a check fails, instead of the policy's 503; 400..599.
         *
         * @deprecated every language answers a failed check with 503 (or lets
         *     it through: {@link #onError}); kept for compatibility
         */
        @Deprecated
        public Builder errorStatus(int status) {
            if (status < 400 || status > 599) {
                throw new IllegalArgumentException("error-status " + status + " is out of range 400..599");
            }
            this.errorStatus = status;
            return this;
        }

        /**
         * Which of the policy's rate-limit headers are sent (default {@link HeaderStyle#ALL}).
         *
         * @deprecated every language sends the same headers; {@link #sendHeaders}
         *     leaves them off admitted responses
         */
        @Deprecated
        public Builder headerStyle(HeaderStyle style) {
            this.headerStyle = Objects.requireNonNull(style, "style");
            return this;
        }

        /**
         * What a request without a key gets, for every rule of the options:
         * {@link MissingKey#REJECT} (the default: 400, or 401 for a
         * credential) or {@link MissingKey#SKIP} (not limited).
         */
        public Builder onMissingKey(MissingKey missingKey) {
            this.missingKey = Objects.requireNonNull(missingKey, "missingKey");
            options = true;
            return this;
        }

        /**
         * Counts a request only when {@code countWhen} accepts its response
         * status (e.g. {@link RateLimitFilter#FAILURES}); the others get their
         * units back after the chain. A function of the status alone: it is
         * asked once per status (100..999) when the filter is built, and the
         * statuses it accepts become the rules' {@code count_when}.
         */
        public Builder countWhen(IntPredicate countWhen) {
            this.countWhen = Objects.requireNonNull(countWhen, "countWhen");
            options = true;
            return this;
        }

        /** When a check fails: false (the default) answers 503, true lets the request through without headers. */
        public Builder onError(boolean allow) {
            this.onErrorAllow = allow;
            options = true;
            return this;
        }

        /** Whether admitted responses get the rate-limit headers (default true; a 429 always has them). */
        public Builder sendHeaders(boolean send) {
            this.sendHeaders = send;
            options = true;
            return this;
        }

        /** The authenticated user's id (the {@code user} key part and lists); default {@code getRemoteUser()}. */
        public Builder user(Function<HttpServletRequest, String> user) {
            this.user = Objects.requireNonNull(user, "user");
            return this;
        }

        /** The tenant's id (the {@code tenant} key part and lists); default none. */
        public Builder tenant(Function<HttpServletRequest, String> tenant) {
            this.tenant = Objects.requireNonNull(tenant, "tenant");
            return this;
        }

        /** The route template of a request (for the rules' {@code routes} and the {@code route} key); default none. */
        public Builder route(Function<HttpServletRequest, String> route) {
            this.route = Objects.requireNonNull(route, "route");
            return this;
        }

        /** The application's key for rules keyed by {@code app}; null or empty: no key. */
        public Builder appKey(KeyFunction appKey) {
            this.appKey = Objects.requireNonNull(appKey, "appKey");
            return this;
        }

        /** A request's cost instead of its rule's (0 or less: the rule's). */
        public Builder cost(ToLongFunction<HttpServletRequest> cost) {
            this.cost = Objects.requireNonNull(cost, "cost");
            return this;
        }

        private Config config() {
            if (live != null) {
                if (options || document != null || policy != null) {
                    throw new IllegalArgumentException("a live policy says the rules, keys, lists and proxies: "
                            + "give it alone, without a document, a policy or the options");
                }
                return new Config(null, null, appKey, this, "live policy, " + live);
            }
            if (document != null || policy != null) {
                if (options) {
                    throw new IllegalArgumentException("a policy document says the rules, keys, lists and proxies: "
                            + "give either it or the options (limit, pathLimit, exempt, key, ...)");
                }
                if (document != null && policy != null) {
                    throw new IllegalArgumentException("give a document or a policy, not both");
                }
                HttpPolicy p = policy != null ? policy : HttpPolicy.fromDocument(document, documentLimiters);
                return new Config(p, document, appKey, this, "document, rules=" + p.ruleNames());
            }
            if (defaultLimiter == null && paths.isEmpty()) {
                throw new IllegalArgumentException("no limit: set limit(...) or a pathLimit(...)");
            }
            CoreKey k = CoreKey.of(key != null ? key : KeyFunction.clientIp(clientIp));
            List<String> proxies = !clientIp.proxies().isEmpty() ? clientIp.proxies() : k.trustedProxies;
            List<Limiter> limiters = new ArrayList<>();
            Map<String, Object> doc = new LinkedHashMap<>();
            if (!proxies.isEmpty()) doc.put("trusted_proxies", proxies);
            if (!exempt.isEmpty()) {
                List<String> globs = new ArrayList<>();
                for (PathPattern p : exempt) globs.addAll(p.globs());
                doc.put("exempt", globs);
            }
            if (sendHeaders != null) doc.put("send_headers", sendHeaders);
            if (onErrorAllow != null) doc.put("on_error", onErrorAllow ? "allow" : "unavailable");
            Object counted = countWhen == null ? null : countedStatuses(countWhen);
            // The most specific pattern first: exact paths, then longer prefixes.
            List<Map.Entry<PathPattern, Limiter>> ordered = new ArrayList<>(paths);
            ordered.sort((a, b) -> Integer.compare(b.getKey().specificity, a.getKey().specificity));
            List<Map<String, Object>> rules = new ArrayList<>();
            Set<String> names = new java.util.HashSet<>(Set.of(DEFAULT_RULE));
            Map<String, String> prefixes = new LinkedHashMap<>(); // prefix+algorithm -> the first rule
            for (Map.Entry<PathPattern, Limiter> e : ordered) {
                String name = e.getKey().text;
                if (!RULE_NAME.matcher(name).matches() || !names.add(name)) name = "path-" + rules.size();
                names.add(name);
                rules.add(rule(name, e.getKey().globs(), index(limiters, e.getValue()), k, counted));
                shared(prefixes, e.getValue(), name);
            }
            if (defaultLimiter != null) {
                rules.add(rule(DEFAULT_RULE, null, index(limiters, defaultLimiter), k, counted));
                shared(prefixes, defaultLimiter, DEFAULT_RULE);
            }
            doc.put("rules", rules);
            String json = HttpPolicy.documentJson(doc);
            HttpPolicy p = HttpPolicy.fromDocument(json, limiters);
            List<String> patterns = new ArrayList<>();
            for (Map.Entry<PathPattern, Limiter> e : paths) patterns.add(e.getKey().text + "=" + e.getValue().spec());
            String described = "limit=" + (defaultLimiter == null ? "none" : defaultLimiter.spec()) + ", paths="
                    + patterns + ", exempt=" + exempt + ", key=" + k.alternatives + ", proxies=" + proxies
                    + ", errorStatus=" + errorStatus + ", headers=" + headerStyle + ", onMissingKey="
                    + missingKey.paramValue() + (countWhen != null ? ", countWhen" : "");
            return new Config(p, json, k.app != null ? k.app : appKey, this, described);
        }

        private Map<String, Object> rule(String name, List<String> globs, int limiter, CoreKey k, Object counted) {
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("name", name);
            if (globs != null) r.put("paths", globs);
            r.put("limiter", limiter);
            r.put("key", k.documentKey());
            if (missingKey == MissingKey.SKIP) r.put("on_missing_key", "skip");
            if (counted != null) r.put("count_when", counted);
            return r;
        }

        private static int index(List<Limiter> limiters, Limiter l) {
            for (int i = 0; i < limiters.size(); i++) if (limiters.get(i) == l) return i;
            limiters.add(l);
            return limiters.size() - 1;
        }

        /** Warns when two rules' limiters count under one prefix: their keys are the same. */
        private static void shared(Map<String, String> prefixes, Limiter l, String rule) {
            String where = l.prefix() + "|" + l.algorithm();
            String first = prefixes.putIfAbsent(where, rule);
            if (first != null) {
                LOG.log(System.Logger.Level.WARNING, "RateLimitFilter: the rules \"" + first + "\" and \"" + rule
                        + "\" check limiters of one prefix (\"" + l.prefix() + "\") and algorithm: a key counts "
                        + "in both; give each limiter a prefix of its own to count them apart");
            }
        }

        /** The statuses (100..999) the predicate accepts, as the document's list of statuses and ranges. */
        private static Object countedStatuses(IntPredicate p) {
            if (p == FAILURES) return "failures";
            List<Object> out = new ArrayList<>();
            int from = -1;
            for (int s = 100; s <= 1000; s++) {
                boolean in = s <= 999 && p.test(s);
                if (in && from < 0) from = s;
                if (!in && from >= 0) {
                    out.add(from == s - 1 ? (Object) from : from + "-" + (s - 1));
                    from = -1;
                }
            }
            if (out.isEmpty()) return List.of(999); // no status counts (none is 999)
            if (out.size() == 1 && "100-999".equals(out.get(0))) return "all";
            return out;
        }

        /** @throws IllegalArgumentException without any limit, or with a document and options */
        public RateLimitFilter build() {
            return new RateLimitFilter(config());
        }
    }
}
