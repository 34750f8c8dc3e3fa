package io.polylimit;

import java.time.Duration;
import java.util.Objects;

/**
 * One rate-limit decision. A denial is a decision with {@code allowed() ==
 * false}, never an exception.
 *
 * @param allowed    the cost was admitted (and consumed); for peek and refund: one unit would be
 * @param limit      the limit that decided (with several limits: the one that denied, or the
 *                   one with the least remaining; GCRA: the burst)
 * @param remaining  units left in the window after this decision
 * @param retryAfter zero when allowed; else how long until this cost would be admitted
 * @param resetAfter how long until the key is back to full capacity
 * @param cached     answered by the local deny cache, without a round trip
 * @param degraded   answered by the failure policy, not by Redis
 * @param shadowed   the limiter is in shadow mode and this would have been a denial; it was admitted
 * @param granted    units admitted: the cost or 0; for {@link Limiter#checkAtMost} how many
 */
public record Decision(boolean allowed, long limit, long remaining, Duration retryAfter, Duration resetAfter,
                       boolean cached, boolean degraded, boolean shadowed, long granted) {

    public Decision {
        Objects.requireNonNull(retryAfter, "retryAfter");
        Objects.requireNonNull(resetAfter, "resetAfter");
    }

    /** Not allowed: the caller should back off for {@link #retryAfter()}. */
    public boolean denied() {
        return !allowed;
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("Decision[")
                .append(allowed ? "allowed" : "denied")
                .append(", limit=").append(limit)
                .append(", remaining=").append(remaining)
                .append(", retryAfter=").append(retryAfter.toMillis()).append("ms")
                .append(", resetAfter=").append(resetAfter.toMillis()).append("ms")
                .append(", granted=").append(granted);
        if (cached) b.append(", cached");
        if (degraded) b.append(", degraded");
        if (shadowed) b.append(", shadowed");
        return b.append(']').toString();
    }
}
