package io.polylimit.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.polylimit.HttpPolicy;
import io.polylimit.PolylimitException;
import java.util.Map;
import java.util.Objects;

/**
 * Micrometer counters of an {@link HttpPolicy} (the servlet filter's:
 * {@code RateLimitFilter.policy()}): the requests it decided per rule and
 * outcome, {@code polylimit.http.requests} (Prometheus:
 * {@code polylimit_http_requests_total{rule="login",outcome="denied"}}),
 * tagged {@code rule} (the rule's name; the deny list is {@code (lists)})
 * and {@code outcome} ({@code allowed}, {@code denied}, {@code missing_key},
 * {@code invalid}, {@code forbidden}, {@code errors}). One series per rule
 * and outcome, never per key. Each read is a copy of the core's counters, no
 * I/O; once the policy is closed the counters read NaN.
 *
 * <pre>{@code
 * new PolylimitHttpMetrics(filter.policy()).bindTo(registry);
 * }</pre>
 */
public final class PolylimitHttpMetrics implements MeterBinder {
    /** The tag naming the rule. */
    public static final String RULE_TAG = "rule";
    /** The tag naming the outcome. */
    public static final String OUTCOME_TAG = "outcome";

    private final HttpPolicy policy;
    private final Tags tags;

    public PolylimitHttpMetrics(HttpPolicy policy) {
        this(policy, Tags.empty());
    }

    /** With extra tags besides {@code rule} and {@code outcome}. */
    public PolylimitHttpMetrics(HttpPolicy policy, Iterable<Tag> extraTags) {
        this.policy = Objects.requireNonNull(policy, "policy");
        this.tags = Tags.of(Objects.requireNonNull(extraTags, "extraTags"));
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        // The series the core keeps: every rule and outcome, and the lists' (forbidden).
        for (Map.Entry<String, Map<String, Long>> rule : policy.requestCounts().entrySet()) {
            for (String outcome : rule.getValue().keySet()) {
                String r = rule.getKey();
                FunctionCounter.builder("polylimit.http.requests", policy, p -> read(p, r, outcome))
                        .description("Requests the HTTP policy decided, per rule and outcome")
                        .tags(tags.and(RULE_TAG, r, OUTCOME_TAG, outcome))
                        .register(registry);
            }
        }
    }

    private static double read(HttpPolicy p, String rule, String outcome) {
        if (p.isClosed()) return Double.NaN;
        try {
            Map<String, Long> r = p.requestCounts().get(rule);
            Long n = r == null ? null : r.get(outcome);
            return n == null ? Double.NaN : n;
        } catch (PolylimitException e) { // closed between the test and the read
            return Double.NaN;
        }
    }

    @Override
    public String toString() {
        return "PolylimitHttpMetrics[" + policy.ruleNames() + "]";
    }
}
