"""Failure policies (error, open, closed, local) and the circuit breaker, on
a server frozen with SIGSTOP."""

import os
import signal
import threading
import time

import polylimit
import pytest

# -- failure policies --------------------------------------------------------------


@pytest.fixture
def frozen_server(private_redis):
    """(server, freeze): freeze() SIGSTOPs the server; it is always resumed."""
    stopped = []

    def freeze():
        os.kill(private_redis.pid, signal.SIGSTOP)
        stopped.append(True)

    yield private_redis, freeze
    if stopped:
        os.kill(private_redis.pid, signal.SIGCONT)


def test_failure_policies_on_a_frozen_server(frozen_server, key):
    server, freeze = frozen_server
    with polylimit.Client(server.url, command_timeout=0.2) as client:
        lims = {p: client.limiter("2/minute", on_failure=p) for p in polylimit.FAILURE_POLICIES}
        for policy, lim in lims.items():
            assert lim.check(key + ":warm:" + policy).allowed  # connected, scripts loaded
        freeze()
        with pytest.raises(polylimit.Timeout):
            lims["error"].check(key)
        d = lims["open"].check(key)
        assert d.allowed and d.degraded and d.granted == 1
        d = lims["closed"].check(key)
        assert not d.allowed and d.degraded and d.retry_after == 1.0
        local = [lims["local"].check(key) for _ in range(3)]  # an in-process limiter, same limits
        assert [x.allowed for x in local] == [True, True, False] and all(x.degraded for x in local)
        stats = client.stats()
    assert stats["degraded"] == 5 and stats["errors"] >= 1


def test_circuit_breaker_fails_fast(frozen_server, key):
    server, freeze = frozen_server
    with polylimit.Client(server.url, command_timeout=0.2) as client:
        lim = client.limiter("2/minute", on_failure="closed", breaker_failures=2, breaker_cooldown=30)
        lim.check(key)
        freeze()
        for _ in range(2):  # two outages open the breaker
            d = lim.check(key)
            assert d.degraded and not d.allowed
        trips = client.stats()["round_trips"]
        started = time.perf_counter()
        d = lim.check(key)
        elapsed = time.perf_counter() - started
        assert client.stats()["round_trips"] == trips  # no round trip while the breaker is open
    assert d.degraded and not d.allowed and d.retry_after == 30.0
    assert elapsed < 0.2, elapsed  # a try would wait for the 0.2 s command timeout


def test_check_many_on_a_frozen_server_keeps_the_gil_free(frozen_server, key):
    server, freeze = frozen_server
    with polylimit.Client(server.url, command_timeout=0.3) as client:
        lim = client.limiter("10/s")
        lim.check(key)
        freeze()
        out = []
        t = threading.Thread(target=lambda: out.append(lim.check_many([key, key + ":b"], return_exceptions=True)))
        t.start()
        spins = 0
        deadline = time.perf_counter() + 0.2
        while time.perf_counter() < deadline:
            spins += 1
        t.join(5)
    assert spins > 10_000
    assert all(isinstance(e, polylimit.Timeout) for e in out[0]), out
    assert [e.index for e in out[0]] == [0, 1] and all(str(e) and "keys[" not in str(e) for e in out[0])
