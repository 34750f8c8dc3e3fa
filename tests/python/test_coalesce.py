"""Coalescing (docs/limiter.md, "Hot keys: coalescing"): threads hammering one
key are decided exactly, in far fewer round trips than checks; with
coalesce=False every check is its own round trip."""

import threading

import polylimit
import pytest

THREADS = 24
LIMIT = 300
DENIALS_PER_THREAD = 3


def _hammer(limiter, key):
    """Every thread checks `key` until it has seen DENIALS_PER_THREAD denials.
    Returns (admitted, checks)."""
    admitted = [0] * THREADS
    checks = [0] * THREADS
    errors = []
    start = threading.Barrier(THREADS)

    def run(i):
        try:
            start.wait()
            denied = 0
            while denied < DENIALS_PER_THREAD:
                d = limiter.check(key)
                checks[i] += 1
                if d.allowed:
                    admitted[i] += 1
                else:
                    denied += 1
        except BaseException as e:  # reported by the caller
            errors.append(repr(e))

    workers = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise RuntimeError("; ".join(errors))
    return sum(admitted), sum(checks)


@pytest.mark.parametrize("coalesce", [True, False])
def test_coalesced_hammer_of_one_key(redis_server, key, coalesce):
    with polylimit.Client(redis_server.url, pool_size=8, coalesce=coalesce) as client:
        lim = client.limiter("%d/hour" % LIMIT)
        lim.check(key + ":warm")  # connected, script loaded
        before = client.stats()
        admitted, checks = _hammer(lim, key)
        after = client.stats()
    assert admitted == LIMIT
    assert checks >= LIMIT + THREADS * DENIALS_PER_THREAD
    assert after["checks"] - before["checks"] == checks
    trips = after["round_trips"] - before["round_trips"]
    if coalesce:
        assert trips < checks / 2, "%d round trips for %d checks" % (trips, checks)
    else:
        assert trips == checks


@pytest.mark.parametrize("value", [0, 1, "no", None])
def test_coalesce_must_be_a_bool(value):
    with pytest.raises(TypeError, match="coalesce must be a bool"):
        polylimit.Client("memory://", coalesce=value)
