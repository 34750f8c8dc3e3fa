package io.polylimit.servlet;

import java.util.Locale;
import java.util.Set;

/**
 * Which of the core's rate-limit headers ({@link io.polylimit.Limiter#headers})
 * the filter sends. Deprecated: every language sends the policy's headers
 * ({@code send_headers} leaves them off admitted responses); kept for
 * compatibility. The values always come from the core; a style only
 * chooses names. {@code Retry-After} is sent on every 429 whatever the style.
 */
public enum HeaderStyle {
    /** Every header the core formats (the default). */
    ALL(null),
    /**
     * The IETF httpapi draft's structured fields only: {@code RateLimit-Policy}
     * and {@code RateLimit} (the draft's {@code q}, {@code w}, {@code r},
     * {@code t} parameters).
     */
    STRUCTURED(Set.of("RateLimit-Policy", "RateLimit")),
    /** The separate fields most clients read today: {@code RateLimit-Limit}, {@code -Remaining}, {@code -Reset}. */
    SEPARATE(Set.of("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")),
    /** No rate-limit fields; {@code Retry-After} on 429 only. */
    RETRY_AFTER_ONLY(Set.of());

    private final Set<String> names; // null: all

    HeaderStyle(Set<String> names) {
        this.names = names;
    }

    /** Whether a header of this name is sent in this style. */
    public boolean includes(String header) {
        return names == null || header.equals("Retry-After") || header.equals("Content-Type") || names.contains(header);
    }

    /** The init-param spelling: {@code all}, {@code structured}, {@code separate}, {@code retry-after-only}. */
    public String paramValue() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** From the init-param spelling (case-insensitive; '_' or '-'). */
    public static HeaderStyle fromParam(String value) {
        String v = value.trim().toUpperCase(Locale.ROOT).replace('-', '_');
        for (HeaderStyle s : values()) if (s.name().equals(v)) return s;
        throw new IllegalArgumentException("header-style \"" + value + "\": expected all, structured, separate or retry-after-only");
    }
}
