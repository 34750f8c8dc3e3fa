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
 * <p>A key function returns null when it has no key for the request; the
 * filter then lets the request through without a limit, so combine partial
 * functions with {@link #orElse(KeyFunction)} (as the {@code header:NAME}
 * init-param does, falling back to the client IP) unless that is meant.
 * Keys are never logged.
 */
@FunctionalInterface
public interface KeyFunction {

    /** The key of this request, or null for none. */
    String key(HttpServletRequest request);

    /** This function's key, or {@code other}'s when this one has none. */
    default KeyFunction orElse(KeyFunction other) {
        Objects.requireNonNull(other, "other");
        return request -> {
            String k = key(request);
            return k != null ? k : other.key(request);
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
