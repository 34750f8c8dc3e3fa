package io.polylimit;

import java.util.Objects;

/**
 * One key's outcome in a batch ({@link Limiter#checkManyResults}): its
 * decision, or its own error, never both. Each failed key carries the
 * exception for its own status and the C library's message for that key
 * (an empty key among good ones gets its own {@link InvalidArgumentException};
 * a key whose Redis node timed out gets a {@link TimeoutException}).
 *
 * @param decision the key's decision, or null when it failed
 * @param error    the key's error, or null when it was decided
 */
public record KeyResult(Decision decision, PolylimitException error) {

    public KeyResult {
        if ((decision == null) == (error == null))
            throw new IllegalArgumentException("a KeyResult holds a decision or an error, exactly one");
    }

    static KeyResult of(Decision decision) {
        return new KeyResult(Objects.requireNonNull(decision, "decision"), null);
    }

    static KeyResult failed(PolylimitException error) {
        return new KeyResult(null, Objects.requireNonNull(error, "error"));
    }

    /** The key was decided (admitted or denied); false when it failed. */
    public boolean ok() {
        return error == null;
    }

    /** The decision, or the key's error thrown. */
    public Decision get() {
        if (error != null) throw error;
        return decision;
    }

    @Override
    public String toString() {
        return error == null ? decision.toString() : "KeyResult[" + error + "]";
    }
}
