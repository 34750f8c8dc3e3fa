"""Metrics: client.stats() and the Prometheus text."""

import math

import polylimit
import pytest

# -- metrics -----------------------------------------------------------------------


def test_stats_and_prometheus(redis_server, key):
    with polylimit.Client(redis_server.url) as client:
        assert client.stats()["checks"] == 0
        lim = client.limiter("2/minute")
        for _ in range(3):
            lim.check(key)
        stats = client.stats()
        text = client.stats_prometheus()
    assert (stats["checks"], stats["admitted"], stats["denied"], stats["errors"]) == (3, 2, 1, 0)
    assert stats["round_trips"] >= 3 and stats["noscript_reloads"] <= 1
    assert stats["cache_hits"] == 0 and stats["degraded"] == 0 and stats["near_limit"] >= 1
    assert stats["latency_count"] == 3 and stats["latency_sum_us"] > 0
    buckets = stats["latency_buckets"]
    assert len(buckets) == 16 and sum(n for _, n in buckets) == 3
    assert buckets[-1][0] == math.inf and [b for b, _ in buckets] == sorted(b for b, _ in buckets)
    assert isinstance(text, str)
    assert "# TYPE polylimit_checks_total counter\npolylimit_checks_total 3\n" in text
    assert "polylimit_admitted_total 2\n" in text and "polylimit_denied_total 1\n" in text
    assert "polylimit_round_trips_total %d\n" % stats["round_trips"] in text
    assert "# TYPE polylimit_check_latency_seconds histogram" in text
    assert 'polylimit_check_latency_seconds_bucket{le="+Inf"} 3' in text


def test_stats_after_close_raise():
    client = polylimit.Client("memory://")
    client.close()
    with pytest.raises(polylimit.Error) as info:
        client.stats()
    assert info.value.code == "POLYLIMIT_ECLOSED"
    with pytest.raises(polylimit.Error):
        client.stats_prometheus()
