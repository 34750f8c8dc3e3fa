package io.polylimit.servlet;

import io.polylimit.Client;
import io.polylimit.ClientOptions;
import io.polylimit.Decision;
import io.polylimit.Limiter;
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
import java.util.function.IntPredicate;

/**
 * A Jakarta Servlet filter that rate-limits requests with polylimit: every
 * server sharing the Redis and the prefix shares the limits.
 *
 * <p>For each request the filter takes the path inside the context
 * ({@code getServletPath() + getPathInfo()}, as the container decoded and
 * normalised it) and:
 * <ol>
 *   <li>lets an exempt path through untouched (no check, no headers);
 *   <li>picks the most specific limit for the path: an exact path beats a
 *       {@code /prefix/*} pattern, a longer prefix beats a shorter one, and
 *       the default limit covers paths without one of their own (a path
 *       counts against one limit only). No limit: through untouched;
 *   <li>asks the key function whom the request counts against (default: the
 *       client IP, honouring {@code X-Forwarded-For} only from trusted
 *       proxies). A null key is refused, {@code 401 Unauthorized} when the
 *       key function is a credential ({@link KeyFunction#isCredential()}),
 *       else {@code 400 Bad Request}, unless the filter is built with
 *       {@link MissingKey#SKIP} (then: through untouched);
 *   <li>checks one unit and sets the core's rate-limit headers
 *       ({@link Limiter#headers}, filtered by the {@link HeaderStyle}) on the
 *       response, allowed or not; a denial is answered with 429 Too Many
 *       Requests and {@code Retry-After}, an allowed request goes on down the
 *       chain with the {@link Decision} in the request attribute
 *       {@link #DECISION_ATTRIBUTE}.
 * </ol>
 * When the check fails (Redis down with the limiter's failure policy
 * {@code ERROR}, a script or ACL error, a broken key function) the request is
 * answered with the error status (503 Service Unavailable unless set) and the
 * failure is logged; no exception reaches the container. With the failure
 * policies {@code OPEN}, {@code CLOSED} or {@code LOCAL} an outage is a
 * (degraded) decision instead, handled as above.
 *
 * <h2>Counting only some responses</h2>
 * With {@link Builder#countWhen} (or the {@code count-when} init-param) a
 * request counts only when its response status matches, e.g. failed logins
 * ({@code status >= 400}: the brute-force pattern). The check still comes
 * before the servlet, so a key over its limit is refused even when its request
 * would not have counted, and at most the limit's worth of requests per key
 * run at once (counting after each response instead would let a burst of
 * parallel attempts all through before any is counted). After the chain, an
 * admitted request whose status does not match gets its unit back
 * ({@link Limiter#refund}; a failed refund is logged and leaves it counted).
 * A request that throws, or that went asynchronous
 * ({@code request.isAsyncStarted()}), keeps its unit. The rate-limit headers
 * are those of the check.
 *
 * <h2>Programmatically</h2>
 * <pre>{@code
 * RateLimitFilter filter = RateLimitFilter.builder()
 *     .limit(client.limiter("100/minute"))                // every other path
 *     .pathLimit("/login", client.limiter("5/minute"))
 *     .exempt("/health", "/static/*")
 *     .trustedProxies("10.0.0.0/8")
 *     .build();
 * }</pre>
 * The filter does not close limiters it was given.
 *
 * <h2>With init-params (web.xml, or a container's filter registration)</h2>
 * <table>
 *   <caption>init-params</caption>
 *   <tr><td>{@code url}</td><td>Redis URL; unset: the {@code POLYLIMIT_URL} environment
 *       variable; neither: init fails (there is no default)</td></tr>
 *   <tr><td>{@code limit}</td><td>rate spec for paths without their own, e.g. {@code 100/minute}</td></tr>
 *   <tr><td>{@code path-limit:<pattern>}</td><td>rate spec for one path pattern, e.g.
 *       {@code path-limit:/login} = {@code 5/minute}</td></tr>
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
 *   <tr><td>{@code error-status}</td><td>status when the check fails (default 503)</td></tr>
 *   <tr><td>{@code header-style}</td><td>{@code all} (default), {@code structured},
 *       {@code separate}, {@code retry-after-only}</td></tr>
 *   <tr><td>{@code client-name}</td><td>the client's metrics label</td></tr>
 * </table>
 * An unknown init-param or a bad value fails {@link #init} with a
 * {@link ServletException} naming it. A filter configured by init-params owns
 * its client and limiters and closes them in {@link #destroy()}.
 *
 * <p>Patterns: {@code /exact}, {@code /prefix/*} (the prefix itself and
 * everything under it) and {@code /*} (every path).
 */
public final class RateLimitFilter implements Filter {
    /** The request attribute holding the {@link Decision} of an allowed request. */
    public static final String DECISION_ATTRIBUTE = "io.polylimit.servlet.decision";
    /** The status answered when the check fails, unless set. */
    public static final int DEFAULT_ERROR_STATUS = 503;
    /** 429 Too Many Requests. */
    public static final int TOO_MANY_REQUESTS = 429;
    /** 400 Bad Request: no key, {@link MissingKey#REJECT}. */
    public static final int NO_KEY = 400;
    /** 401 Unauthorized: no key of a credential key function, {@link MissingKey#REJECT}. */
    public static final int NO_CREDENTIAL = 401;
    /** Counts responses with a status of 400 or more: failed logins, the brute-force pattern. */
    public static final IntPredicate FAILURES = status -> status >= 400;

    private static final System.Logger LOG = System.getLogger(RateLimitFilter.class.getName());
    private static final Set<String> PARAMS = Set.of("url", "client-name", "limit", "exempt", "key",
            "trusted-proxies", "prefix", "algorithm", "failure-policy", "error-status", "header-style",
            "on-missing-key", "count-when");
    private static final String PATH_LIMIT = "path-limit:";

    private volatile Config config; // null until built or initialised
    private final boolean programmatic;
    // Owned when configured by init-params; closed in destroy().
    private Client ownedClient;
    private final List<Limiter> ownedLimiters = new ArrayList<>();

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

        Limiter.Algorithm algorithm = params.containsKey("algorithm")
                ? enumParam(Limiter.Algorithm.class, "algorithm", params.get("algorithm")) : null;
        Limiter.FailurePolicy policy = params.containsKey("failure-policy")
                ? enumParam(Limiter.FailurePolicy.class, "failure-policy", params.get("failure-policy")) : null;
        String prefix = params.get("prefix");
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
            Limiter.Builder lb = ownedClient.limiterBuilder(e.getValue().trim());
            if (algorithm != null) lb.algorithm(algorithm);
            if (policy != null) lb.onFailure(policy);
            if (prefix != null) lb.prefix(prefix.trim());
            Limiter limiter = lb.build();
            ownedLimiters.add(limiter);
            if (isDefault) b.limit(limiter);
            else b.pathLimit(e.getKey().substring(PATH_LIMIT.length()).trim(), limiter);
        }
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
        String path = path(req);
        for (PathPattern p : c.exempt) {
            if (p.matches(path)) {
                chain.doFilter(request, response);
                return;
            }
        }
        Rule rule = c.ruleFor(path);
        if (rule == null) {
            chain.doFilter(request, response);
            return;
        }
        Decision decision = null;
        Map<String, String> headers = null;
        String stored = null;
        try {
            String key = c.key.key(req);
            if (key != null) {
                // The rule's name keeps each limit's state apart under one prefix.
                stored = rule.id + "|" + key;
                decision = rule.limiter.check(stored);
                headers = rule.limiter.headers(decision);
            }
        } catch (RuntimeException e) { // PolylimitException, or a broken key function
            // Never the key in a log line: it may be an API key.
            LOG.log(System.Logger.Level.WARNING, "rate limit check failed for " + req.getMethod() + " " + path
                    + "; answering " + c.errorStatus + ": " + e);
            fail(res, c.errorStatus, "rate limiter unavailable\n");
            return;
        }
        if (decision == null) { // no key: never through unlimited unless the filter says SKIP
            if (c.missingKey == MissingKey.SKIP) {
                chain.doFilter(request, response);
            } else if (c.key.isCredential()) {
                fail(res, NO_CREDENTIAL, "no credential to rate-limit the request by\n");
            } else {
                fail(res, NO_KEY, "no rate-limit key in the request\n");
            }
            return;
        }
        for (Map.Entry<String, String> h : headers.entrySet()) {
            if (c.headerStyle.includes(h.getKey())) res.setHeader(h.getKey(), h.getValue());
        }
        if (!decision.allowed()) {
            fail(res, TOO_MANY_REQUESTS, "rate limit exceeded\n");
            return;
        }
        req.setAttribute(DECISION_ATTRIBUTE, decision);
        chain.doFilter(request, response);
        // Only units Redis took go back: not a shadowed would-be denial's,
        // nor a degraded decision's (it came from the failure policy).
        if (c.countWhen != null && !decision.degraded() && !decision.shadowed() && !req.isAsyncStarted()
                && !c.countWhen.test(res.getStatus())) {
            try {
                rule.limiter.refund(stored, 1);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "rate limit refund failed for " + req.getMethod() + " " + path
                        + "; the request stays counted: " + e);
            }
        }
    }

    private static void fail(HttpServletResponse res, int status, String body) throws IOException {
        if (res.isCommitted()) return;
        res.setStatus(status);
        res.setContentType("text/plain;charset=utf-8");
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
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

    /** Closes the client and limiters this filter opened from its init-params; not those it was given. */
    @Override
    public void destroy() {
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

    @Override
    public String toString() {
        Config c = config;
        return "RateLimitFilter[" + (c == null ? "not initialised" : c) + "]";
    }

    /** One limit and the paths it covers. */
    private static final class Rule {
        final String id; // "*" for the default limit, else the pattern
        final PathPattern pattern; // null for the default
        final Limiter limiter;

        Rule(String id, PathPattern pattern, Limiter limiter) {
            this.id = id;
            this.pattern = pattern;
            this.limiter = limiter;
        }
    }

    /** The filter's settings; immutable. */
    private static final class Config {
        final Rule defaultRule;
        final List<Rule> rules;
        final List<PathPattern> exempt;
        final KeyFunction key;
        final int errorStatus;
        final HeaderStyle headerStyle;
        final MissingKey missingKey;
        final IntPredicate countWhen; // null: every request counts
        final String described;

        Config(Builder b) {
            defaultRule = b.defaultLimiter == null ? null : new Rule("*", null, b.defaultLimiter);
            rules = List.copyOf(b.rules);
            exempt = List.copyOf(b.exempt);
            key = b.key != null ? b.key : KeyFunction.clientIp(b.clientIp);
            errorStatus = b.errorStatus;
            headerStyle = b.headerStyle;
            missingKey = b.missingKey;
            countWhen = b.countWhen;
            List<String> patterns = new ArrayList<>();
            for (Rule r : rules) patterns.add(r.id + "=" + r.limiter.spec());
            described = "limit=" + (defaultRule == null ? "none" : defaultRule.limiter.spec()) + ", paths=" + patterns
                    + ", exempt=" + exempt + ", " + (b.key != null ? "custom key" : b.clientIp) + ", errorStatus="
                    + errorStatus + ", headers=" + headerStyle + ", onMissingKey=" + missingKey.paramValue()
                    + (countWhen != null ? ", countWhen" : "");
        }

        Rule ruleFor(String path) {
            Rule best = null;
            for (Rule r : rules) {
                if (r.pattern.matches(path) && (best == null || r.pattern.specificity > best.pattern.specificity)) best = r;
            }
            return best != null ? best : defaultRule;
        }

        @Override
        public String toString() {
            return described;
        }
    }

    /** {@code /exact}, {@code /prefix/*} or {@code /*}. */
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

        boolean matches(String path) {
            if (!prefix) return path.equals(base);
            return base.isEmpty() || path.equals(base) || path.startsWith(base + "/");
        }

        @Override
        public String toString() {
            return text;
        }
    }

    /** Builds a {@link RateLimitFilter} from limiters the caller made (and closes). */
    public static final class Builder {
        private Limiter defaultLimiter;
        private final List<Rule> rules = new ArrayList<>();
        private final List<PathPattern> exempt = new ArrayList<>();
        private KeyFunction key;
        private ClientIp clientIp = ClientIp.direct();
        private int errorStatus = DEFAULT_ERROR_STATUS;
        private HeaderStyle headerStyle = HeaderStyle.ALL;
        private MissingKey missingKey = MissingKey.REJECT;
        private IntPredicate countWhen;

        private Builder() {}

        /** The limit of every path without its own {@link #pathLimit}. Unset: those paths are not limited. */
        public Builder limit(Limiter limiter) {
            this.defaultLimiter = Objects.requireNonNull(limiter, "limiter");
            return this;
        }

        /** A limit of its own for the paths matching {@code pattern} ({@code /exact}, {@code /prefix/*}). */
        public Builder pathLimit(String pattern, Limiter limiter) {
            PathPattern p = new PathPattern(pattern);
            Objects.requireNonNull(limiter, "limiter");
            for (Rule r : rules) {
                if (r.id.equals(p.text)) throw new IllegalArgumentException("path pattern \"" + pattern + "\" is given twice");
            }
            rules.add(new Rule(p.text, p, limiter));
            return this;
        }

        /** Paths that are never limited and get no headers (health checks, static files). */
        public Builder exempt(String... patterns) {
            for (String p : patterns) exempt.add(new PathPattern(p));
            return this;
        }

        /** Whom a request counts against; default: {@link KeyFunction#clientIp} with the trusted proxies. */
        public Builder key(KeyFunction key) {
            this.key = Objects.requireNonNull(key, "key");
            return this;
        }

        /**
         * Proxies whose {@code X-Forwarded-For} is believed (IPs or CIDR ranges),
         * for the default key; see {@link ClientIp}. None: the peer address.
         */
        public Builder trustedProxies(String... proxies) {
            this.clientIp = ClientIp.trusting(proxies);
            return this;
        }

        /** The status answered when a check fails (default 503); 400..599. */
        public Builder errorStatus(int status) {
            if (status < 400 || status > 599) {
                throw new IllegalArgumentException("error-status " + status + " is out of range 400..599");
            }
            this.errorStatus = status;
            return this;
        }

        /** Which of the core's headers are sent (default {@link HeaderStyle#ALL}). */
        public Builder headerStyle(HeaderStyle style) {
            this.headerStyle = Objects.requireNonNull(style, "style");
            return this;
        }

        /**
         * What a request gets when the key function returns null, for every
         * limit of this filter (they share its key function; use a second
         * filter for a limit with another rule): {@link MissingKey#REJECT}
         * (the default: 400, or 401 for a credential) or
         * {@link MissingKey#SKIP} (not limited).
         */
        public Builder onMissingKey(MissingKey missingKey) {
            this.missingKey = Objects.requireNonNull(missingKey, "missingKey");
            return this;
        }

        /**
         * Counts a request only when {@code countWhen} accepts its response
         * status (e.g. {@link RateLimitFilter#FAILURES}); the others get their
         * unit back after the chain. See "Counting only some responses" above.
         */
        public Builder countWhen(IntPredicate countWhen) {
            this.countWhen = Objects.requireNonNull(countWhen, "countWhen");
            return this;
        }

        private Config config() {
            if (defaultLimiter == null && rules.isEmpty()) {
                throw new IllegalArgumentException("no limit: set limit(...) or a pathLimit(...)");
            }
            return new Config(this);
        }

        /** @throws IllegalArgumentException without any limit */
        public RateLimitFilter build() {
            return new RateLimitFilter(config());
        }
    }
}
