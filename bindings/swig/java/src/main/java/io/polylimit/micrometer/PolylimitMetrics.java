package io.polylimit.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.polylimit.Client;
import io.polylimit.PolylimitException;
import io.polylimit.Stats;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * Micrometer meters for one polylimit {@link Client}: its counters
 * ({@link Client#stats()}, all its limiters together), tagged
 * {@code client=<name>}. Bind one per client:
 *
 * <pre>{@code
 * Client client = Client.open(url, ClientOptions.builder().name("api").build());
 * new PolylimitMetrics(client).bindTo(registry);
 * }</pre>
 *
 * <p>Meters (Prometheus names in brackets): {@code polylimit.checks}
 * ({@code polylimit_checks_total}), {@code polylimit.admitted},
 * {@code polylimit.denied}, {@code polylimit.errors}, {@code polylimit.round.trips},
 * {@code polylimit.noscript.reloads}, {@code polylimit.cache.hits},
 * {@code polylimit.degraded}, {@code polylimit.near.limit},
 * {@code polylimit.connect.attempts} (function counters); the gauge
 * {@code polylimit.evicting.nodes}; and the function timer
 * {@code polylimit.check.latency} (count and total time of the checks).
 * Each read is a copy of the C counters, no I/O. Once the client is closed the
 * meters read NaN.
 *
 * <p>micrometer-core is an optional dependency of the polylimit jar: this
 * class needs it on the class path, nothing else in the jar does.
 */
public final class PolylimitMetrics implements MeterBinder {
    /** The tag naming the client. */
    public static final String CLIENT_TAG = "client";

    private final Client client;
    private final Tags tags;

    /** Tagged {@code client=<the client's name>}, or {@code client=default} for an unnamed client. */
    public PolylimitMetrics(Client client) {
        this(client, Tags.empty());
    }

    /** With extra tags besides {@code client}. */
    public PolylimitMetrics(Client client, Iterable<Tag> extraTags) {
        this.client = Objects.requireNonNull(client, "client");
        String name = client.name() != null ? client.name() : "default";
        this.tags = Tags.of(CLIENT_TAG, name).and(Objects.requireNonNull(extraTags, "extraTags"));
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        counter(registry, "polylimit.checks", "Checks decided or failed (each key of a batch counts)", Stats::checks);
        counter(registry, "polylimit.admitted", "Checks admitted", Stats::admitted);
        counter(registry, "polylimit.denied", "Checks denied", Stats::denied);
        counter(registry, "polylimit.errors", "Checks that failed with an error", Stats::errors);
        counter(registry, "polylimit.round.trips", "Round trips to Redis; a pipelined batch is one", Stats::roundTrips);
        counter(registry, "polylimit.noscript.reloads", "SCRIPT LOADs after a NOSCRIPT reply", Stats::noscriptReloads);
        counter(registry, "polylimit.cache.hits", "Checks answered by the local deny cache", Stats::cacheHits);
        counter(registry, "polylimit.degraded", "Checks answered by the failure policy", Stats::degraded);
        counter(registry, "polylimit.near.limit", "Checks admitted with less than 10% of the limit left",
                Stats::nearLimit);
        counter(registry, "polylimit.connect.attempts", "Connects tried to Redis data nodes", Stats::connectAttempts);
        Gauge.builder("polylimit.evicting.nodes", client, c -> read(c, Stats::evictingNodes))
                .description("Redis nodes whose maxmemory policy can evict limiter keys")
                .tags(tags)
                .strongReference(true)
                .register(registry);
        FunctionTimer.builder("polylimit.check.latency", client,
                        c -> (long) read(c, Stats::latencyCount),
                        c -> read(c, s -> s.latencySum().toNanos() / 1000.0),
                        TimeUnit.MICROSECONDS)
                .description("Latency of the checks")
                .tags(tags)
                .register(registry);
    }

    private void counter(MeterRegistry registry, String name, String help, ToDoubleFunction<Stats> field) {
        FunctionCounter.builder(name, client, c -> read(c, field))
                .description(help)
                .tags(tags)
                .register(registry);
    }

    /** One counter of a fresh copy; NaN once the client is closed. */
    private static double read(Client c, ToDoubleFunction<Stats> field) {
        if (c.isClosed()) return Double.NaN;
        try {
            return field.applyAsDouble(c.stats());
        } catch (PolylimitException e) { // closed between the test and the read
            return Double.NaN;
        }
    }

    @Override
    public String toString() {
        return "PolylimitMetrics[" + tags + "]";
    }
}
