"""Variants of a check: shadow mode, punitive blocks, partial grants
(check_at_most), acquire, refunds, per-call limits, and their asyncio forms."""

import asyncio
import gc
import threading
import time

import polylimit
import pytest

# A time aligned to 60 s (fixed windows start at multiples of the window).
T0 = 1_699_999_980.0


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


# -- leases ---------------------------------------------------------------------------


def test_lease_takes_a_block_and_gives_back_unused_units(url, key):
    with polylimit.Client(url) as client:
        watch = client.limiter(limit=100, window=60)
        lim = client.limiter(limit=100, window=60, lease_units=10, lease=60)
        for _ in range(3):
            assert lim.check(key).allowed
        assert watch.peek(key).remaining == 90  # one round trip took 10
        del lim  # the limiter goes: the 7 units it did not use go back
        gc.collect()
        assert watch.peek(key).remaining == 97
        stats = client.stats()
        assert (stats["leased_units"], stats["refunded_units"], stats["stranded_units"]) == (10, 7, 0)
        with pytest.raises(polylimit.InvalidArgument, match="lease_units = 11 exceeds limit = 10"):
            client.limiter(limit=10, window=1, lease_units=11)
        with pytest.raises(polylimit.InvalidArgument, match="lease_ms = 0"):
            client.limiter(limit=10, window=1, lease_units=1, lease=0)


def test_acheck_takes_and_renews_leases(url, key):
    # The non-blocking check renews leases as check() does: 30 checks at once,
    # one round trip per 10 units.
    async def main():
        with polylimit.Client(url) as client:
            watch = client.limiter(limit=100, window=60)
            lim = client.limiter(limit=100, window=60, lease_units=10, lease=60)
            assert (await lim.acheck(key)).allowed
            trips = client.stats()["round_trips"]
            ds = await asyncio.gather(*(lim.acheck(key) for _ in range(29)))
            assert all(d.allowed for d in ds)
            in_process = url.startswith("memory:")
            assert client.stats()["round_trips"] - trips == (0 if in_process else 2)
            assert client.stats()["leased_units"] == 30
            assert (await watch.apeek(key)).remaining == 70

    asyncio.run(main())
