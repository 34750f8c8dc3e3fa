package io.polylimit.servlet;

import jakarta.servlet.http.HttpServletRequest;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.Locale;
import java.util.Objects;

/**
 * Whom a request counts against: a key per client (IP address, API key, user
 * id). Called on every request, from any thread.
 *
 * <p>A key function returns null when it has no key for the request. The
 * filter then refuses the request ({@link MissingKey#REJECT}, the default):
 * {@code 401 Unauthorized} when the function is a credential
 * ({@link #isCredential()}: {@link #apiKey}, or any function wrapped by
 * {@link #credential}), else {@code 400 Bad Request}; only a filter built
 * with {@link MissingKey#SKIP} lets it through unlimited. Combine partial
 * functions with {@link #orElse(KeyFunction)} (as the {@code header:NAME}
 * init-param does, falling back to the client IP) to always have a key.
 * Keys are never logged.
 */
@FunctionalInterface
public interface KeyFunction {

    /** The key of this request, or null for none. */
    String key(HttpServletRequest request);

    /**
     * Whether this key is a credential (an API key, a token, a user id): a
     * request without one is answered 401 rather than 400. False unless
     * made by {@link #apiKey} or {@link #credential}.
     */
    default boolean isCredential() {
        return false;
    }

    /**
     * This function's key, or {@code other}'s when this one has none. A
     * credential when either is one (giving it would have given a key).
     */
    default KeyFunction orElse(KeyFunction other) {
        Objects.requireNonNull(other, "other");
        KeyFunction either = request -> {
            String k = key(request);
            return k != null ? k : other.key(request);
        };
        return isCredential() || other.isCredential() ? credential(either) : either;
    }

    /** {@code f} as a credential: a request it finds no key in is answered 401 (see {@link MissingKey}). */
    static KeyFunction credential(KeyFunction f) {
        Objects.requireNonNull(f, "f");
        return new KeyFunction() {
            @Override
            public String key(HttpServletRequest request) {
                return f.key(request);
            }

            @Override
            public boolean isCredential() {
                return true;
            }
        };
    }

    /** {@code "ip:<address>"}, the client address as {@code resolver} finds it. */
    static KeyFunction clientIp(ClientIp resolver) {
        Objects.requireNonNull(resolver, "resolver");
        return request -> "ip:" + resolver.resolve(request);
    }

    /**
     * A request header such as an API key: {@code "header:<name>:<SHA-256 of
     * the value, base64url>"}, so that the secret itself is never stored in
     * Redis; null when the request has no such header or it is empty. (A key
     * function of your own can use the value as it is.)
     */
    static KeyFunction header(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) throw new IllegalArgumentException("header name is empty");
        String prefix = "header:" + name.toLowerCase(Locale.ROOT) + ":";
        return request -> {
            String v = request.getHeader(name);
            return v == null || v.isEmpty() ? null : prefix + sha256(v);
        };
    }

    /**
     * An API key in a request header, as {@link #header} keys it, and a
     * credential: a request without the header is answered
     * {@code 401 Unauthorized} (unless the filter skips missing keys).
     */
    static KeyFunction apiKey(String name) {
        return credential(header(name));
    }

    /** SHA-256 of the UTF-8 bytes, base64url without padding (43 characters). */
    static String sha256(String value) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(value.getBytes(StandardCharsets.UTF_8));
            return Base64.getUrlEncoder().withoutPadding().encodeToString(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e); // every JVM has it
        }
    }
}
