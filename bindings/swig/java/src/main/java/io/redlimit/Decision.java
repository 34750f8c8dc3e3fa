package io.redlimit;

import java.time.Duration;
import java.util.Objects;

/**
 * One rate-limit decision. A denial is a decision with {@code allowed() ==
 * false}, never an exception.
 *
 * @param allowed    the cost was admitted (and consumed); for peek: one unit would be
 * @param limit      the limit that decided
 * @param remaining  units left in the window after this decision
 * @param retryAfter zero when allowed; else how long until this cost would be admitted
 * @param resetAfter how long until the key is back to full capacity
 * @param cached     answered by the local deny cache
 * @param degraded   answered by the failure policy, not by Redis
 */
public record Decision(boolean allowed, long limit, long remaining, Duration retryAfter, Duration resetAfter,
                       boolean cached, boolean degraded) {

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
                .append(", resetAfter=").append(resetAfter.toMillis()).append("ms");
        if (cached) b.append(", cached");
        if (degraded) b.append(", degraded");
        return b.append(']').toString();
    }
}
