package io.polylimit.servlet;

import jakarta.servlet.http.HttpServletRequest;
import java.util.Objects;

/**
 * Whom a request counts against. The helpers here ({@link #clientIp},
 * {@link #header}, {@link #apiKey}, {@link #credential}, {@link #orElse}) are
 * the core's key parts ({@code ip}, {@code header:<Name>},
 * {@code api_key:<Name>}, alternatives): the {@link RateLimitFilter} hands
 * them to the core's policy, which derives the key
 * (docs/integrations/contract.md, "Keys"). A function of your own (a lambda)
 * is the application's key, the core's {@code app} part: the filter calls it
 * when a rule keyed by it matches, and a null or empty key is a missing key.
 *
 * <p>A missing key is refused ({@link MissingKey#REJECT}, the default):
 * {@code 401 Unauthorized} when the key is a credential (an API key), else
 * {@code 400 Bad Request}; only {@link MissingKey#SKIP} lets it through
 * unlimited. Keys are never logged.
 */
@FunctionalInterface
public interface KeyFunction {

    /**
     * The key of this request, or null for none. For the helpers, the
     * core's key ({@code ip:192.0.2.1}, {@code apikey:<SHA-256 hex>});
     * the filter itself never calls a helper's.
     */
    String key(HttpServletRequest request);

    /**
     * Whether this key is a credential (an API key): a request without one
     * is answered 401 rather than 400. True for {@link #apiKey} and
     * {@link #credential} of a header. (The contract has no credential of the
     * application's own: a function of yours that finds no key is answered
     * 400, also when wrapped by {@link #credential}.)
     */
    default boolean isCredential() {
        return false;
    }

    /**
     * This function's key, or {@code other}'s when this one has none: the
     * core's list of alternatives ({@code ["header:X-API-Key", "ip"]}). A
     * credential when either is one.
     */
    default KeyFunction orElse(KeyFunction other) {
        return CoreKey.of(this).or(CoreKey.of(Objects.requireNonNull(other, "other")));
    }

    /**
     * {@code f} as a credential: a {@link #header} becomes an {@link #apiKey}
     * (a request without it is answered 401). A function of your own stays
     * the application's key (see {@link #isCredential()}).
     */
    static KeyFunction credential(KeyFunction f) {
        return CoreKey.of(Objects.requireNonNull(f, "f")).asCredential();
    }

    /** The client's address (the core's {@code ip}), behind the proxies {@code resolver} trusts. */
    static KeyFunction clientIp(ClientIp resolver) {
        Objects.requireNonNull(resolver, "resolver");
        return new CoreKey(java.util.List.of("ip"), null, resolver.proxies());
    }

    /**
     * A request header (the core's {@code header:<Name>}): the key is
     * {@code header:<lower-case name>:<SHA-256 hex of the value>}, so that
     * the value is never stored in Redis; none when the request has no such
     * header or it is empty.
     */
    static KeyFunction header(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) throw new IllegalArgumentException("header name is empty");
        return new CoreKey(java.util.List.of("header:" + name.trim()), null, java.util.List.of());
    }

    /**
     * An API key in a request header (the core's {@code api_key:<Name>}): the
     * key is {@code apikey:<SHA-256 hex of the value>}, and a credential: a
     * request without the header is answered {@code 401 Unauthorized} (unless
     * the filter skips missing keys).
     */
    static KeyFunction apiKey(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) throw new IllegalArgumentException("header name is empty");
        return new CoreKey(java.util.List.of("api_key:" + name.trim()), null, java.util.List.of());
    }
}
