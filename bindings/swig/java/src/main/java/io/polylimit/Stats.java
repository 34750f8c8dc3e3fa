package io.polylimit;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * The counters of one {@link Client} (all its limiters) since it was opened,
 * from {@link Client#stats()}. Counters are unsigned 64-bit in C; they are
 * read as long (they would need centuries to pass {@code Long.MAX_VALUE}).
 *
 * @param checks          checks decided or failed (each key of a checkMany counts)
 * @param admitted        checks admitted
 * @param denied          checks denied
 * @param errors          checks that failed with an error
 * @param roundTrips      round trips to Redis; a pipelined batch is one
 * @param noscriptReloads SCRIPT LOADs after a NOSCRIPT reply
 * @param cacheHits       checks answered by the local deny cache
 * @param degraded        checks answered by the failure policy
 * @param nearLimit       admitted with less than 10% of the limit left
 * @param latencyCount    checks in the latency histogram
 * @param latencySum      their total latency (microsecond precision)
 * @param evictingNodes   Redis nodes whose maxmemory policy can evict limiter keys (a gauge: a
 *                        limit can over-admit there; see docs/deployments.md)
 * @param connectAttempts connects tried to Redis data nodes, made or failed (bounded by the
 *                        reconnect backoff while a node is down)
 * @param scriptCalls     script calls sent to Redis; checks of one key coalesced into one call
 *                        count once (docs/limiter.md, "Hot keys")
 * @param coalesced       checks decided in one script call with other checks of their key
 * @param leasedUnits     units taken from Redis by leases (docs/limiter.md, "Leases")
 * @param refundedUnits   unused leased units given back
 * @param strandedUnits   unused leased units that could not be given back (Redis frees them
 *                        with the window)
 * @param latency         the histogram: one bucket per upper bound, counts not cumulative
 */
public record Stats(long checks, long admitted, long denied, long errors, long roundTrips, long noscriptReloads,
                    long cacheHits, long degraded, long nearLimit, long latencyCount, Duration latencySum,
                    long evictingNodes, long connectAttempts, long scriptCalls, long coalesced,
                    long leasedUnits, long refundedUnits, long strandedUnits, List<Bucket> latency) {

    public Stats {
        Objects.requireNonNull(latencySum, "latencySum");
        latency = List.copyOf(latency);
    }

    /**
     * One latency bucket.
     *
     * @param leMicros upper bound in microseconds; {@code Long.MAX_VALUE} for the last (+Inf)
     * @param count    checks that took at most leMicros and more than the previous bound
     */
    public record Bucket(long leMicros, long count) {
        /** The +Inf bucket. */
        public boolean isInfinite() {
            return leMicros == Long.MAX_VALUE;
        }
    }
}
