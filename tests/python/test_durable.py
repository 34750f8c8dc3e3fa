"""Failover-safe mode (durable_replicas=): a check is admitted only once a
replica acknowledged its write. Against a master without a replica, every
admitted check is "not durable": NotDurable, or the on_failure policy's answer
(docs/deployments.md, "Failover-safe mode")."""

import time

import polylimit
import pytest
from polylimit import _vocabulary


def test_not_durable_without_a_replica(redis_server, prefix):
    with polylimit.Client(redis_server.url) as client:
        lim = client.limiter("5/minute", prefix=prefix, durable_replicas=1, durable_timeout=0.05)
        t0 = time.monotonic()
        with pytest.raises(polylimit.NotDurable) as info:
            lim.check("k")
        took = time.monotonic() - t0
        e = info.value
        assert e.code == "POLYLIMIT_ENOTDURABLE"
        assert e.status == -12
        assert e.outage and e.retryable
        assert e.outcome_unknown  # the master consumed the units
        assert "0 of 1 replicas within 50 ms (WAIT)" in str(e)
        assert 0.045 <= took <= 0.05 + 0.25
        # The units stay consumed on the master.
        assert lim.peek("k").remaining == 4


@pytest.mark.parametrize("on_failure, allowed", [("open", True), ("closed", False), ("local", True)])
def test_failure_policy_answers_not_durable(redis_server, prefix, on_failure, allowed):
    with polylimit.Client(redis_server.url) as client:
        lim = client.limiter("5/minute", prefix=prefix, on_failure=on_failure, durable_replicas=1, durable_timeout=0.05)
        d = lim.check("k")
        assert d.degraded
        assert bool(d) is allowed


def test_durable_options_are_checked_by_the_core(redis_server, prefix):
    with polylimit.Client(redis_server.url, command_timeout=0.2) as client:
        with pytest.raises(polylimit.InvalidArgument, match=r"^durable_replicas = 101 is out of range 0\.\.100$"):
            client.limiter("5/minute", prefix=prefix, durable_replicas=101)
        with pytest.raises(polylimit.InvalidArgument, match="must be below the client's command_timeout_ms = 200"):
            client.limiter("5/minute", prefix=prefix, durable_replicas=1, durable_timeout=0.2)
        with pytest.raises(polylimit.InvalidArgument, match=r"^durable_timeout_ms = 0 is out of range"):
            client.limiter("5/minute", prefix=prefix, durable_replicas=1, durable_timeout=0)
        with pytest.raises(TypeError):
            client.limiter("5/minute", prefix=prefix, durable_aof=1)
    assert _vocabulary.BOUNDS["durable_timeout_ms"] == (1, 3600000)


def test_in_process_decisions_need_no_acknowledgement(prefix):
    with polylimit.Client("memory://") as client:
        lim = client.limiter("1/minute", prefix=prefix, durable_replicas=1)
        assert lim.check("k")
        assert not lim.check("k")
