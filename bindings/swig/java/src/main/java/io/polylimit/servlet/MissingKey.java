package io.polylimit.servlet;

import java.util.Locale;

/**
 * What the filter does with a request whose {@link KeyFunction} returns null
 * (no key: no API-key header, an anonymous user). The names are those of
 * every language's integrations ({@code reject}, {@code skip}); the rule is
 * in docs/integrations/README.md, "Missing keys".
 */
public enum MissingKey {
    /**
     * The default: answer {@code 401 Unauthorized} when the key function is a
     * credential ({@link KeyFunction#isCredential()}), else {@code 400 Bad
     * Request}; nothing is counted and the chain is not called.
     */
    REJECT,
    /** Let the request down the chain without a check or rate-limit headers. Only when asked for. */
    SKIP;

    /** The init-param spelling: {@code reject} or {@code skip}. */
    public String paramValue() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** From the init-param spelling (case-insensitive). */
    public static MissingKey fromParam(String value) {
        String v = value.trim().toUpperCase(Locale.ROOT);
        for (MissingKey m : values()) if (m.name().equals(v)) return m;
        throw new IllegalArgumentException("on-missing-key \"" + value + "\": expected reject or skip");
    }
}
