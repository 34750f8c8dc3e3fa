"""The limiter features of C ABI 1.1: algorithms, multi-limit specs, batches,
the deny cache, failure policies, shadow mode, punitive blocks, partial
grants, acquire, refunds, per-call limits and metrics. API tests run on
memory:// and on Redis (the `url` fixture); the rest need a server."""

import asyncio
import math
import os
import signal
import threading
import time

import pytest

import polylimit

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


# -- batches ---------------------------------------------------------------------

def test_check_many_is_one_round_trip(redis_server, key):
    with polylimit.Client(redis_server.url) as client:
        lim = client.limiter("2/minute")
        lim.peek(key)  # connected, script loaded
        before = client.stats()
        keys = [key + ":a", key + ":b", key + ":a", key + ":a", key + ":c"]
        ds = lim.check_many(keys)
        after = client.stats()
    assert [d.allowed for d in ds] == [True, True, True, False, True]
    assert after["round_trips"] - before["round_trips"] == 1
    assert after["checks"] - before["checks"] == 5


def test_check_many_is_exact_across_threads(redis_server, key):
    keys = ["%s:%d" % (key, i) for i in range(10)]
    admitted = []
    with polylimit.Client(redis_server.url, pool_size=4) as client:
        lim = client.limiter("50/minute")

        def run():
            n = 0
            for _ in range(25):
                n += sum(d.allowed for d in lim.check_many(keys))
            admitted.append(n)

        threads = [threading.Thread(target=run) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [lim.peek(k).remaining for k in keys] == [0] * 10
    assert sum(admitted) == 500  # 1000 attempts, exactly 50 per key


def test_check_many_errors_raise_or_come_back_in_place(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("5/minute")
        with pytest.raises(polylimit.InvalidArgument, match=r"^keys\[1\]: key is empty$") as info:
            lim.check_many([key, b"", key + ":z"])
        e = info.value
        assert e.index == 1 and e.code == "POLYLIMIT_EINVALID"
        # The other keys were decided (and consumed) all the same: .results has them.
        assert [type(r).__name__ for r in e.results] == ["Decision", "InvalidArgument", "Decision"]
        assert e.results[0].remaining == 4 and str(e.results[1]) == "key is empty"
        assert lim.peek(key).remaining == 4
        out = lim.check_many([key, "", key, b""], return_exceptions=True)
        assert isinstance(out[0], polylimit.Decision) and out[0].remaining == 3
        # Each failing key has its own status and message (no "keys[i]:" in it) and its index.
        assert isinstance(out[1], polylimit.InvalidArgument) and str(out[1]) == "key is empty"
        assert out[1].code == "POLYLIMIT_EINVALID" and out[1].index == 1
        assert out[2].remaining == 2
        assert isinstance(out[3], polylimit.InvalidArgument) and str(out[3]) == "key is empty" and out[3].index == 3
        # An error of the whole call (a bad cost) raises, or is every key's error.
        with pytest.raises(polylimit.InvalidArgument, match="^cost = 0 must be at least 1$"):
            lim.check_many([key, key + ":y"], 0)
        out = lim.check_many([key, key + ":y"], 0, return_exceptions=True)
        assert [str(x) for x in out] == ["cost = 0 must be at least 1"] * 2 and [x.index for x in out] == [0, 1]
        assert lim.peek(key).remaining == 2


# -- deny cache -------------------------------------------------------------------

def test_deny_cache_answers_locally(redis_server, key):
    with polylimit.Client(redis_server.url) as client:
        lim = client.limiter("1/minute", deny_cache=100)
        assert lim.check(key).allowed
        first = lim.check(key)
        assert not first.allowed and not first.cached  # Redis said no
        trips = client.stats()["round_trips"]
        cached = lim.check(key)
        assert not cached.allowed and cached.cached and cached.retry_after > 0
        stats = client.stats()
        assert stats["round_trips"] == trips and stats["cache_hits"] == 1
        lim.reset(key)  # clears the entry
        assert lim.check(key).allowed


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


# -- shadow, block ------------------------------------------------------------------

def test_shadow_mode_admits_and_flags(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("1/minute", shadow=True)
        a, b = lim.check(key), lim.check(key)
        assert a.allowed and not a.shadowed
        assert b.allowed and b.shadowed and b.granted == 0 and b.retry_after > 0
        assert "shadowed=True" in repr(b)
        stats = client.stats()
    assert stats["admitted"] == 1 and stats["denied"] == 1  # metrics count the real decision


def test_block_keeps_a_denied_key_denied(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("1/s", block=60, clock="client")
        assert lim.check_at(key, 1, T0).allowed
        d = lim.check_at(key, 1, T0 + 0.5)
        assert not d.allowed and d.retry_after == 60.0
        late = lim.check_at(key, 1, T0 + 30)  # the rate would admit; the block does not
        assert not late.allowed and late.retry_after == pytest.approx(30.5)
        assert lim.check_at(key, 1, T0 + 61).allowed


# -- partial grants, acquire, refund, per-call limits -------------------------------

def test_check_at_most_grants_what_fits(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("5/minute")
        a, b, c = (lim.check_at_most(key, 3) for _ in range(3))
    assert (a.allowed, a.granted, a.remaining) == (True, 3, 2)
    assert (b.allowed, b.granted, b.remaining) == (True, 2, 0)
    assert (c.allowed, c.granted) == (False, 0)


def test_acquire_waits_for_admission(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("1 per 300 ms")
        assert lim.check(key)
        assert not lim.acquire(key, timeout=0).allowed  # one try
        started = time.perf_counter()
        d = lim.acquire(key, timeout=0.05)  # admission is later than the timeout: returns early
        assert not d.allowed and time.perf_counter() - started < 0.25  # sleeping would take ~0.3 s
        d = lim.acquire(key, 1, timeout=2)
        elapsed = time.perf_counter() - started
    assert d.allowed and 0.15 < elapsed < 1.5, elapsed


def test_acquire_releases_the_gil(key):
    with polylimit.Client("memory://") as client:
        lim = client.limiter("1 per 400 ms")
        lim.check(key)
        t = threading.Thread(target=lim.acquire, args=(key,), kwargs={"timeout": 2})
        t.start()
        spins = 0
        deadline = time.perf_counter() + 0.2
        while time.perf_counter() < deadline:
            spins += 1
        assert t.is_alive()
        t.join(5)
    assert spins > 10_000


@pytest.mark.parametrize("algorithm", polylimit.ALGORITHMS)
def test_refund_gives_units_back(url, key, algorithm):
    with polylimit.Client(url) as client:
        lim = client.limiter("3/minute", algorithm=algorithm)
        assert lim.check(key, 3).allowed
        assert not lim.check(key).allowed
        d = lim.refund(key, 2)
        assert d.allowed and d.remaining == 2
        assert lim.check(key, 2).allowed
        assert not lim.check(key).allowed


def test_refund_clears_the_deny_cache(redis_server, key):
    with polylimit.Client(redis_server.url) as client:
        lim = client.limiter("1/minute", deny_cache=10)
        lim.check(key)
        lim.check(key)
        assert lim.check(key).cached
        lim.refund(key, 1)
        assert lim.check(key).allowed


def test_check_limit_per_call(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("100/minute")
        ds = [lim.check_limit(key, 1, 2, 60) for _ in range(3)]
        assert [d.allowed for d in ds] == [True, True, False] and ds[0].limit == 2
        d = lim.check_limit(key + ":x", 3, limit=5, window=1.5)
        assert d.allowed and d.limit == 5 and d.remaining == 2
        with pytest.raises(polylimit.InvalidArgument, match="limit"):
            lim.check_limit(key, 1, 0, 60)
        with pytest.raises(polylimit.InvalidArgument, match="whole number of milliseconds"):
            lim.check_limit(key, 1, 2, 0.0001)


def test_bad_arguments_of_the_new_calls():
    with polylimit.Client("memory://") as client:
        lim = client.limiter("5/s")
        with pytest.raises(polylimit.InvalidArgument):
            lim.check_at_most("k", 0)
        with pytest.raises(TypeError, match="max_cost must be an int"):
            lim.check_at_most("k", 1.5)
        with pytest.raises(polylimit.InvalidArgument):
            lim.refund("k", 0)
        with pytest.raises(TypeError, match="units must be an int"):
            lim.refund("k", None)
        with pytest.raises(polylimit.InvalidArgument, match=r"^timeout_ms = -1000 is out of range 0\.\.31622400000$"):
            lim.acquire("k", timeout=-1)
        with pytest.raises(polylimit.InvalidArgument, match=r"^timeout_ms = -1 is out of range 0\.\.31622400000$"):
            lim.acquire("k", timeout=-0.001)
        with pytest.raises(polylimit.InvalidArgument, match=r"^units = 0 is out of range 1\.\.1000000$"):
            lim.refund("k", 0)
        with pytest.raises(TypeError, match="key must be str or bytes"):
            lim.acquire(5)


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


# -- asyncio -------------------------------------------------------------------------

def test_async_variants_of_the_new_calls(url, key):
    async def main():
        with polylimit.Client(url) as client:
            lim = client.limiter("3 per 300 ms")
            d = await lim.acheck_at_most(key, 5)
            assert d.granted == 3
            d = await lim.arefund(key, 1)
            assert d.remaining == 1
            d = await lim.acheck_limit(key + ":l", 2, 2, 60)
            assert d.allowed and d.limit == 2
            ds = await lim.acheck_many([key, ""], return_exceptions=True)
            assert ds[0].allowed and isinstance(ds[1], polylimit.InvalidArgument)
            assert not (await lim.aacquire(key, timeout=0)).allowed
            ticks = []

            async def ticker():
                while True:
                    ticks.append(1)
                    await asyncio.sleep(0.01)

            tick = asyncio.create_task(ticker())
            started = time.perf_counter()
            d = await lim.aacquire(key, 2, timeout=2)
            elapsed = time.perf_counter() - started
            tick.cancel()
            assert d.allowed and 0.1 < elapsed < 1.5
            assert len(ticks) >= 5  # the loop ran while aacquire waited

    asyncio.run(main())
