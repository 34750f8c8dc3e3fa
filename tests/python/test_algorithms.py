"""The algorithms (sliding log, sliding counter, fixed window, GCRA): the same
decisions on memory:// and Redis, check_at determinism, GCRA bursts and
multi-limit specs."""

import polylimit
import pytest

# A time aligned to 60 s (fixed windows start at multiples of the window).
T0 = 1_699_999_980.0

# (seconds after T0, cost) for "3 per 10 seconds".
SEQUENCE = [(0, 1), (1, 1), (2, 1), (3, 1), (5, 2), (10.5, 1), (11.5, 2), (14, 1), (45, 3), (45.1, 1)]


def _run_sequence(lim, key):
    return [lim.check_at(key, cost, T0 + at) for at, cost in SEQUENCE]


# -- algorithms -------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", polylimit.ALGORITHMS)
def test_every_algorithm_allows_then_denies(url, key, algorithm):
    with polylimit.Client(url) as client:
        lim = client.limiter("3/minute", algorithm=algorithm)
        ds = [lim.check(key) for _ in range(4)]
        assert [d.allowed for d in ds] == [True, True, True, False]
        assert [d.granted for d in ds] == [1, 1, 1, 0]
        assert ds[0].limit == 3 and ds[3].retry_after > 0
        assert not lim.peek(key).allowed
        lim.reset(key)
        assert lim.check(key, 3).allowed


@pytest.mark.parametrize("algorithm", polylimit.ALGORITHMS)
def test_check_at_is_deterministic_and_backends_agree(redis_server, key, algorithm):
    """With the caller's clock, the same sequence gives the same Decisions
    every time, in process and in Redis."""
    results = []
    for url in ("memory://", redis_server.url, redis_server.url):
        with polylimit.Client(url) as client:
            lim = client.limiter("3 per 10 seconds", algorithm=algorithm, clock="client")
            results.append(_run_sequence(lim, "%s:%d" % (key, len(results))))
    assert results[0] == results[1] == results[2], results
    allowed = [d.allowed for d in results[0]]
    assert allowed[:4] == [True, True, True, False]  # 3 at once, then denied
    assert allowed[8] is True  # much later: back to full capacity (3 units)


def test_gcra_burst(url, key):
    with polylimit.Client(url) as client:
        spec = client.limiter("10/s burst 20", algorithm="gcra", clock="client")
        kw = client.limiter(limit=10, window=1, burst=20, algorithm="gcra", clock="client")
        for lim, k in ((spec, key + ":spec"), (kw, key + ":kw")):
            ds = [lim.check_at(k, 1, T0) for _ in range(21)]
            assert sum(d.allowed for d in ds) == 20 and ds[0].limit == 20
            assert lim.check_at(k, 1, T0 + 0.1).allowed  # one emission interval later
        assert kw.rate == (10, 1.0)


def test_multi_limit_spec(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("2/s; 3/minute", clock="client")
        a, b, c = (lim.check_at(key, 1, T0 + t) for t in (0, 0.1, 0.2))
        assert a.allowed and b.allowed and not c.allowed
        assert c.limit == 2 and 0 < c.retry_after <= 1.0  # the per-second limit denied
        d = lim.check_at(key, 1, T0 + 1.5)
        assert d.allowed and d.limit == 3 and d.remaining == 0  # the tightest: the minute
        e = lim.check_at(key, 1, T0 + 3)
        assert not e.allowed and e.limit == 3 and e.retry_after > 50
        # All or nothing across the limits: the denied checks consumed nothing.
        assert lim.check_at(key, 1, T0 + 60.5).allowed
