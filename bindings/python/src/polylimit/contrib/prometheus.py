"""A prometheus_client collector for polylimit clients::

    from prometheus_client import REGISTRY
    from polylimit.contrib.prometheus import PolylimitCollector

    REGISTRY.register(PolylimitCollector(client_a, client_b))

Every scrape reads ``client.stats()`` of each client and yields the same
families as :func:`polylimit.prometheus_text` (``polylimit_checks_total``,
..., the ``polylimit_check_latency_seconds`` histogram), one sample per
client labelled ``client="<name>"`` (the client's ``name=``; a client
without one is labelled by its position, ``"0"``, ``"1"``, ...). To serve
polylimit's own page without prometheus_client, return
``polylimit.prometheus_text(...)`` from a /metrics route instead.
"""

import math
from typing import Any, Dict, Iterable, Iterator, List, Tuple

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from .._client import Client
from .http import Policy

__all__ = ["PolylimitCollector"]

# stats() field -> (family name without _total, help, kind); the names and
# help of the core's own exposition (polylimit_client_stats_prometheus).
_FAMILIES: List[Tuple[str, str, str, str]] = [
    ("checks", "polylimit_checks", "Checks decided or failed.", "counter"),
    ("admitted", "polylimit_admitted", "Checks admitted.", "counter"),
    ("denied", "polylimit_denied", "Checks denied.", "counter"),
    ("errors", "polylimit_errors", "Checks that returned an error.", "counter"),
    ("round_trips", "polylimit_round_trips", "Round trips to Redis.", "counter"),
    ("noscript_reloads", "polylimit_noscript_reloads", "Script reloads after NOSCRIPT.", "counter"),
    ("cache_hits", "polylimit_cache_hits", "Checks answered by the local deny cache.", "counter"),
    ("degraded", "polylimit_degraded", "Checks answered by the failure policy.", "counter"),
    ("near_limit", "polylimit_near_limit", "Admitted checks with less than 10% of the limit remaining.", "counter"),
    (
        "connect_attempts",
        "polylimit_connect_attempts",
        "Connects tried to Redis data nodes (made or failed); bounded by the reconnect backoff.",
        "counter",
    ),
    (
        "evicting_nodes",
        "polylimit_evicting_nodes",
        "Redis nodes whose maxmemory policy can evict limiter keys (over-admission risk).",
        "gauge",
    ),
]


class PolylimitCollector(Collector):
    """Collects the counters of one or more clients at each scrape."""

    def __init__(self, *clients: Client, policies: Iterable[Policy] = ()) -> None:
        for c in clients:
            if not isinstance(c, Client):
                raise TypeError("PolylimitCollector takes polylimit.Client objects, not %s" % type(c).__name__)
        self._clients = clients
        self._policies = list(policies)
        for p in self._policies:
            if not isinstance(p, Policy):
                raise TypeError("policies must be polylimit.contrib.http.Policy objects, not %s" % type(p).__name__)

    def _http(self) -> Iterator[Metric]:
        """The policies' counters, read from the core's own page."""
        totals: Dict[Tuple[str, str], float] = {}
        for p in self._policies:
            for family in text_string_to_metric_families(p.metrics_prometheus()):
                for sample in family.samples:
                    if sample.name == "polylimit_http_requests_total":
                        label = (sample.labels["rule"], sample.labels["outcome"])
                        totals[label] = totals.get(label, 0.0) + sample.value
        family = CounterMetricFamily(
            "polylimit_http_requests",
            "Requests the HTTP policy decided, per rule and outcome.",
            labels=["rule", "outcome"],
        )
        for (rule, outcome), value in totals.items():
            family.add_metric([rule, outcome], value)
        yield family

    def _labelled(self) -> List[Tuple[str, Dict[str, Any]]]:
        out = []
        for i, c in enumerate(self._clients):
            if c.closed:
                continue
            out.append((c.name if c.name is not None else str(i), dict(c.stats())))
        return out

    def collect(self) -> Iterator[Metric]:
        samples = self._labelled()
        for field, name, doc, kind in _FAMILIES:
            family: Metric
            if kind == "counter":
                family = CounterMetricFamily(name, doc, labels=["client"])
            else:
                family = GaugeMetricFamily(name, doc, labels=["client"])
            for label, stats in samples:
                family.add_metric([label], float(stats[field]))
            yield family
        histogram = HistogramMetricFamily("polylimit_check_latency_seconds", "Latency of a check.", labels=["client"])
        for label, stats in samples:
            buckets = []
            cumulative = 0
            for le_us, count in stats["latency_buckets"]:
                cumulative += count
                le = "+Inf" if math.isinf(le_us) else repr(le_us / 1e6)
                buckets.append((le, float(cumulative)))
            histogram.add_metric([label], buckets, sum_value=stats["latency_sum_us"] / 1e6)
        yield histogram
        if self._policies:
            yield from self._http()

    def describe(self) -> Iterator[Metric]:
        return iter(())
