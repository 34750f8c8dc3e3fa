package io.polylimit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * A policy document written in code (docs/policy.md): what a policy file can
 * say, typed, and serialised to the JSON document the core reads. Immutable;
 * made with {@link #builder()}:
 *
 * <pre>{@code
 * PolicyDocument doc = PolicyDocument.builder()
 *         .prefix("shop")
 *         .trustedProxies("10.0.0.0/8")
 *         .plan("free", Map.of("api", "10/minute"))
 *         .plan("pro", Map.of("api", "100/minute"))
 *         .defaultPlan("free")
 *         .tenant("acme", "pro")
 *         .rule(PolicyDocument.rule("api").paths("/api/*").key("tenant").limit("plan"))
 *         .build();
 * LivePolicy live = LivePolicy.builder(client).document(doc).build();
 * }</pre>
 *
 * <p>Only the types are checked here; the core checks the rest (a plan
 * without a limit a rule takes, a bad rate spec, an unknown key part) when
 * the document is given to it, and its message names the field
 * ({@code policy line 1: rules[0] ("api").limit: ...}). A field left unset
 * is not written: the core's default applies.
 */
public final class PolicyDocument {
    /** {@code on_error}: what the middleware does when a check fails. */
    public enum OnError {
        /** 503 (the default). */
        UNAVAILABLE,
        /** The request goes on, without rate-limit headers. */
        ALLOW;

        String json() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** A rule's {@code on_missing_key}. */
    public enum OnMissingKey {
        /** 401 for a missing credential, else 400 (the default). */
        REJECT,
        /** The request goes on unchecked. */
        SKIP;

        String json() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final Map<String, Object> fields;
    private final String json;

    private PolicyDocument(Map<String, Object> fields) {
        this.fields = Collections.unmodifiableMap(fields);
        this.json = Json.write(this.fields);
    }

    /** A builder of a document; nothing is set. */
    public static Builder builder() {
        return new Builder();
    }

    /** A rule named {@code name}, matching every path and method until told otherwise. */
    public static Rule rule(String name) {
        return new Rule(name);
    }

    /** Empty {@code allow} / {@code deny} lists, to add to: {@code PolicyDocument.lists().ips("203.0.113.0/24")}. */
    public static Lists lists() {
        return Lists.EMPTY;
    }

    /** A {@code resolver} table with the core's defaults (timeout 50 ms, cache 60 s, 10000 tenants). */
    public static Resolver resolver() {
        return Resolver.DEFAULTS;
    }

    /** A cost read from the request header {@code header}: {@code {"header": ...}}. */
    public static HeaderCost headerCost(String header) {
        return new HeaderCost(Objects.requireNonNull(header, "header"), null, null);
    }

    /** The document as JSON text, as given to the core. */
    public String toJson() {
        return json;
    }

    /** The document as Java values (maps, lists, strings, numbers, booleans): what {@link #toJson()} writes. */
    public Map<String, Object> toMap() {
        return fields;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PolicyDocument && ((PolicyDocument) o).json.equals(json);
    }

    @Override
    public int hashCode() {
        return json.hashCode();
    }

    /** The JSON text ({@link #toJson()}). */
    @Override
    public String toString() {
        return json;
    }

    private static List<String> strings(String field, String... values) {
        Objects.requireNonNull(values, field);
        for (String v : values) Objects.requireNonNull(v, field);
        return List.of(values);
    }

    private static List<String> strings(String field, List<String> values) {
        return strings(field, Objects.requireNonNull(values, field).toArray(new String[0]));
    }

    private static Map<String, Object> with(Map<String, Object> fields, String name, Object value) {
        Map<String, Object> m = new LinkedHashMap<>(fields);
        m.put(name, value);
        return Collections.unmodifiableMap(m);
    }

    /** Builds a {@link PolicyDocument}; each setter replaces what it sets ({@link #rule} and {@link #plan} add). */
    public static final class Builder {
        private final Map<String, Object> fields = new LinkedHashMap<>();
        private final Map<String, Object> plans = new LinkedHashMap<>();
        private final Map<String, Object> tenants = new LinkedHashMap<>();
        private final List<Rule> rules = new ArrayList<>();

        private Builder() {}

        private Builder set(String name, Object value) {
            fields.put(name, value);
            return this;
        }

        /** {@code version} (1). */
        public Builder version(int version) {
            return set("version", version);
        }

        /** {@code prefix}: the Redis key prefix of the document's own limits (default {@code pl}). */
        public Builder prefix(String prefix) {
            return set("prefix", Objects.requireNonNull(prefix, "prefix"));
        }

        /** {@code trusted_proxies}: addresses or CIDRs whose {@code X-Forwarded-For} is believed. */
        public Builder trustedProxies(String... proxies) {
            return set("trusted_proxies", strings("trustedProxies", proxies));
        }

        /** {@code trusted_proxies} as a list. */
        public Builder trustedProxies(List<String> proxies) {
            return set("trusted_proxies", strings("trustedProxies", proxies));
        }

        /** {@code ipv4_prefix}: the IPv4 network an {@code ip} key stands for (default 32). */
        public Builder ipv4Prefix(int bits) {
            return set("ipv4_prefix", bits);
        }

        /** {@code ipv6_prefix}: the IPv6 network an {@code ip} key stands for (default 64). */
        public Builder ipv6Prefix(int bits) {
            return set("ipv6_prefix", bits);
        }

        /** {@code api_key_header}: the header the lists' {@code api_keys} are read from (default X-API-Key). */
        public Builder apiKeyHeader(String header) {
            return set("api_key_header", Objects.requireNonNull(header, "header"));
        }

        /** {@code exempt}: path globs never limited. */
        public Builder exempt(String... paths) {
            return set("exempt", strings("exempt", paths));
        }

        /** {@code allow}: requests that go on unchecked (after {@code deny}). */
        public Builder allow(Lists lists) {
            return set("allow", Objects.requireNonNull(lists, "allow").fields);
        }

        /** {@code deny}: requests answered 403 before anything else. */
        public Builder deny(Lists lists) {
            return set("deny", Objects.requireNonNull(lists, "deny").fields);
        }

        /** {@code send_headers}: the rate-limit headers on admitted responses too (default true). */
        public Builder sendHeaders(boolean send) {
            return set("send_headers", send);
        }

        /** {@code on_error} (default {@link OnError#UNAVAILABLE}). */
        public Builder onError(OnError onError) {
            return set("on_error", Objects.requireNonNull(onError, "onError").json());
        }

        /**
         * Adds (or replaces) plan {@code name}: limit name to rate spec
         * ({@code Map.of("api", "10/minute", "search", "2/second")}).
         */
        public Builder plan(String name, Map<String, String> limits) {
            Objects.requireNonNull(name, "plan name");
            Map<String, Object> m = new LinkedHashMap<>();
            Objects.requireNonNull(limits, "limits").forEach((k, v) ->
                    m.put(Objects.requireNonNull(k, "limit name"), Objects.requireNonNull(v, "rate spec")));
            plans.put(name, Collections.unmodifiableMap(m));
            return this;
        }

        /** {@code default_plan}: the plan of a tenant nothing places (required with plans). */
        public Builder defaultPlan(String plan) {
            return set("default_plan", Objects.requireNonNull(plan, "plan"));
        }

        /** Places {@code tenant} on {@code plan} (the {@code tenants} table). */
        public Builder tenant(String tenant, String plan) {
            tenants.put(Objects.requireNonNull(tenant, "tenant"), Objects.requireNonNull(plan, "plan"));
            return this;
        }

        /** Places each tenant of {@code tenants} on its plan. */
        public Builder tenants(Map<String, String> tenants) {
            Objects.requireNonNull(tenants, "tenants").forEach(this::tenant);
            return this;
        }

        /**
         * The {@code resolver} table: the application's plan resolver places
         * the tenants the document does not name (the live policy must be
         * given one: {@link LivePolicy.Builder#resolver}).
         */
        public Builder resolver(Resolver resolver) {
            return set("resolver", Objects.requireNonNull(resolver, "resolver").fields);
        }

        /** Adds a rule (the rules are tried in the order they are added). */
        public Builder rule(Rule rule) {
            rules.add(Objects.requireNonNull(rule, "rule"));
            return this;
        }

        /** Adds the rules, in order. */
        public Builder rules(List<Rule> rules) {
            Objects.requireNonNull(rules, "rules").forEach(this::rule);
            return this;
        }

        public PolicyDocument build() {
            Map<String, Object> m = new LinkedHashMap<>(fields);
            if (!plans.isEmpty()) m.put("plans", Collections.unmodifiableMap(new LinkedHashMap<>(plans)));
            if (!tenants.isEmpty()) m.put("tenants", Collections.unmodifiableMap(new LinkedHashMap<>(tenants)));
            List<Object> rs = new ArrayList<>();
            for (Rule r : rules) rs.add(r.fields);
            m.put("rules", Collections.unmodifiableList(rs));
            return new PolicyDocument(m);
        }
    }

    /**
     * A rule (immutable: each method returns a new rule). Its limit is one
     * of {@link #limit(String)} ({@code "10/minute"}, {@code "plan"},
     * {@code "plan:<name>"}, {@code "none"}), {@link #planLimit()},
     * {@link #planLimit(String)}, {@link #noLimit()} or {@link #limiter(int)}.
     */
    public static final class Rule {
        final Map<String, Object> fields;

        private Rule(String name) {
            this.fields = Map.of("name", Objects.requireNonNull(name, "rule name"));
        }

        private Rule(Map<String, Object> fields) {
            this.fields = fields;
        }

        private Rule with(String name, Object value) {
            return new Rule(PolicyDocument.with(fields, name, value));
        }

        /** The rule's name. */
        public String name() {
            return (String) fields.get("name");
        }

        /** {@code paths}: path globs ({@code *} any run of characters, {@code ?} one). */
        public Rule paths(String... globs) {
            return with("paths", strings("paths", globs));
        }

        /** {@code routes}: route templates, matched exactly against the framework's. */
        public Rule routes(String... templates) {
            return with("routes", strings("routes", templates));
        }

        /** {@code methods}: the methods the rule applies to (default: every method). */
        public Rule methods(String... methods) {
            return with("methods", strings("methods", methods));
        }

        /** {@code limit}: a rate spec, {@code "plan"}, {@code "plan:<name>"} or {@code "none"}. */
        public Rule limit(String limit) {
            return with("limit", Objects.requireNonNull(limit, "limit"));
        }

        /** {@code limit = "plan"}: the limit named like the rule in the tenant's plan. */
        public Rule planLimit() {
            return limit("plan");
        }

        /** {@code limit = "plan:<name>"}: the tenant's plan's limit {@code name}. */
        public Rule planLimit(String name) {
            return limit("plan:" + Objects.requireNonNull(name, "name"));
        }

        /** {@code limit = "none"}: what the rule matches is exempt. */
        public Rule noLimit() {
            return limit("none");
        }

        /** {@code limiter}: the application's limiter {@code index} (of those given with the document). */
        public Rule limiter(int index) {
            return with("limiter", index);
        }

        /** {@code algorithm} of the rule's own or plan limit (default sliding log). */
        public Rule algorithm(Limiter.Algorithm algorithm) {
            return with("algorithm", Objects.requireNonNull(algorithm, "algorithm").name().toLowerCase(Locale.ROOT));
        }

        /** {@code key}: one composition of key parts ({@code "ip"}, {@code "user+route"}, {@code "header:X-Org"}). */
        public Rule key(String composition) {
            return with("key", Objects.requireNonNull(composition, "key"));
        }

        /** {@code key}: alternatives, the first the request has is used ({@code "api_key", "ip"}). */
        public Rule keyAlternatives(String... compositions) {
            return with("key", strings("key", compositions));
        }

        /** {@code key}: alternatives as a list. */
        public Rule keyAlternatives(List<String> compositions) {
            return with("key", strings("key", compositions));
        }

        /** {@code credential}: whether a missing key is a missing credential (401) rather than 400. */
        public Rule credential(boolean credential) {
            return with("credential", credential);
        }

        /** {@code cost}: the units each request takes. */
        public Rule cost(long units) {
            return with("cost", units);
        }

        /** {@code cost}: read from a request header ({@link PolicyDocument#headerCost}). */
        public Rule cost(HeaderCost cost) {
            return with("cost", Objects.requireNonNull(cost, "cost").fields());
        }

        /** {@code on_missing_key} (default {@link OnMissingKey#REJECT}). */
        public Rule onMissingKey(OnMissingKey onMissingKey) {
            return with("on_missing_key", Objects.requireNonNull(onMissingKey, "onMissingKey").json());
        }

        /** {@code count_when}: which responses keep their units (default {@link CountWhen#ALL}). */
        public Rule countWhen(CountWhen countWhen) {
            return with("count_when", Objects.requireNonNull(countWhen, "countWhen").value);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Rule && ((Rule) o).fields.equals(fields);
        }

        @Override
        public int hashCode() {
            return fields.hashCode();
        }

        @Override
        public String toString() {
            return Json.write(fields);
        }
    }

    /** The lists of {@code allow} or {@code deny} (immutable: each method returns new lists). */
    public static final class Lists {
        static final Lists EMPTY = new Lists(Map.of());
        final Map<String, Object> fields;

        private Lists(Map<String, Object> fields) {
            this.fields = fields;
        }

        /** {@code ips}: addresses and CIDRs. */
        public Lists ips(String... ips) {
            return new Lists(with(fields, "ips", strings("ips", ips)));
        }

        /** {@code api_keys}: {@code sha256:<64 hex>} or the key itself (hashed when the document is read). */
        public Lists apiKeys(String... keys) {
            return new Lists(with(fields, "api_keys", strings("apiKeys", keys)));
        }

        /** {@code users}: user ids. */
        public Lists users(String... users) {
            return new Lists(with(fields, "users", strings("users", users)));
        }

        /** {@code tenants}: tenant ids. */
        public Lists tenants(String... tenants) {
            return new Lists(with(fields, "tenants", strings("tenants", tenants)));
        }

        @Override
        public String toString() {
            // Never the API keys: they may be the secrets themselves.
            return "Lists" + fields.keySet();
        }
    }

    /** The {@code resolver} table (immutable). An unset field is the core's default. */
    public static final class Resolver {
        static final Resolver DEFAULTS = new Resolver(Map.of());
        final Map<String, Object> fields;

        private Resolver(Map<String, Object> fields) {
            this.fields = fields;
        }

        /** {@code timeout_ms}: how long a request waits for the resolver (default 50 ms). */
        public Resolver timeout(Duration timeout) {
            return new Resolver(with(fields, "timeout_ms", Objects.requireNonNull(timeout, "timeout").toMillis()));
        }

        /** {@code cache_ttl_ms}: how long an answer is kept (default 60 s). */
        public Resolver cacheTtl(Duration ttl) {
            return new Resolver(with(fields, "cache_ttl_ms", Objects.requireNonNull(ttl, "ttl").toMillis()));
        }

        /** {@code cache_size}: at most this many tenants cached (default 10000). */
        public Resolver cacheSize(long tenants) {
            return new Resolver(with(fields, "cache_size", tenants));
        }

        @Override
        public String toString() {
            return Json.write(fields);
        }
    }

    /** A cost read from a request header: {@code {"header", "default", "max"}} (immutable). */
    public static final class HeaderCost {
        private final String header;
        private final Long defaultCost;
        private final Long max;

        private HeaderCost(String header, Long defaultCost, Long max) {
            this.header = header;
            this.defaultCost = defaultCost;
            this.max = max;
        }

        /** {@code default}: the cost of a request without the header (default 1). */
        public HeaderCost orDefault(long units) {
            return new HeaderCost(header, units, max);
        }

        /** {@code max}: a larger value is answered 400. */
        public HeaderCost max(long units) {
            return new HeaderCost(header, defaultCost, units);
        }

        Map<String, Object> fields() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("header", header);
            if (defaultCost != null) m.put("default", defaultCost);
            if (max != null) m.put("max", max);
            return Collections.unmodifiableMap(m);
        }

        @Override
        public String toString() {
            return Json.write(fields());
        }
    }

    /**
     * A rule's {@code count_when}: {@link #ALL}, {@link #FAILURES} (status
     * 400 or more), {@link #SUCCESSES} (below 400), or statuses, classes and
     * ranges: {@code CountWhen.statuses(401).statusClass(5).range(400, 403)}.
     * Immutable.
     */
    public static final class CountWhen {
        /** Every response keeps its units (the default). */
        public static final CountWhen ALL = new CountWhen("all");
        /** Responses of status 400 or more keep their units; the others are refunded. */
        public static final CountWhen FAILURES = new CountWhen("failures");
        /** Responses below 400 keep their units. */
        public static final CountWhen SUCCESSES = new CountWhen("successes");

        final Object value; // a String, or an unmodifiable List of Integer and String

        private CountWhen(Object value) {
            this.value = value;
        }

        /** The responses of these statuses keep their units. */
        public static CountWhen statuses(int... statuses) {
            List<Object> l = new ArrayList<>();
            for (int s : statuses) l.add(s);
            return new CountWhen(Collections.unmodifiableList(l));
        }

        private CountWhen plus(Object entry) {
            List<Object> l = new ArrayList<>();
            if (value instanceof List) l.addAll((List<?>) value);
            else throw new IllegalStateException("count_when \"" + value + "\" takes no statuses");
            l.add(entry);
            return new CountWhen(Collections.unmodifiableList(l));
        }

        /** And status {@code status}. */
        public CountWhen status(int status) {
            return plus(status);
        }

        /** And every status of class {@code digit} ({@code 5}: {@code "5xx"}). */
        public CountWhen statusClass(int digit) {
            return plus(digit + "xx");
        }

        /** And the statuses from {@code from} to {@code to} ({@code "400-403"}). */
        public CountWhen range(int from, int to) {
            return plus(from + "-" + to);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof CountWhen && ((CountWhen) o).value.equals(value);
        }

        @Override
        public int hashCode() {
            return value.hashCode();
        }

        @Override
        public String toString() {
            return Json.write(value);
        }
    }
}
