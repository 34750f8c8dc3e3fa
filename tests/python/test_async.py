"""asyncio: the a* calls run in the client's thread pool and never block the loop."""

import asyncio
import time

import pytest

import polylimit


def _thousand_checks(url, key):
    """1000 acheck calls in flight at once, with a ticker task beside them.
    Returns (decisions, max gap between ticks, ticks while checks were in flight)."""

    async def main():
        with polylimit.Client(url) as client:
            lim = client.limiter(limit=600, window=600)
            ticks = []
            stop = asyncio.Event()

            async def ticker():
                while not stop.is_set():
                    ticks.append(time.perf_counter())
                    await asyncio.sleep(0.002)

            tick = asyncio.create_task(ticker())
            while not ticks:  # the ticker is running
                await asyncio.sleep(0)
            started = time.perf_counter()
            tasks = [asyncio.ensure_future(lim.acheck(key)) for _ in range(1000)]
            decisions = await asyncio.gather(*tasks)
            finished = time.perf_counter()
            stop.set()
            await tick
            # The first loop iteration after the launch starts all 1000 tasks
            # (~20 ms of loop work whatever the library does); the bound is
            # on the loop while the calls are in flight, after that.
            after = [t for t in ticks if t > started]
            gaps = [b - a for a, b in zip(after, after[1:])]
            during = sum(t < finished for t in after)
            return decisions, max(gaps, default=0.0), during

    return asyncio.run(main())


def test_thousand_concurrent_acheck_keep_the_loop_responsive(redis_server, key):
    # A blocking acheck would run all 1000 checks inside one loop iteration:
    # no tick at all while they are in flight (test_acheck_on_a_frozen_server
    # proves the same with calls that each block for a long time). The 50 ms bound on the largest
    # gap is measured up to three times: a 2-core machine shared with other
    # jobs can deschedule the whole process for longer than that.
    worst = []
    for attempt in range(3):
        decisions, max_gap, during = _thousand_checks(redis_server.url, "%s:%d" % (key, attempt))
        assert len(decisions) == 1000
        assert sum(d.allowed for d in decisions) == 600
        assert during >= 5, "the ticker ran only %d times while checks were in flight" % during
        if max_gap < 0.05:
            return
        worst.append(round(max_gap * 1000, 1))
    pytest.fail("event loop stalled in every attempt: max gaps %s ms" % worst)


def test_async_variants(url, key):
    async def main():
        with polylimit.Client(url) as client:
            lim = client.limiter("3/m")
            d = await lim.acheck(key, 2)
            assert d.allowed and d.remaining == 1
            assert (await lim.apeek(key)).remaining == 1
            ds = await lim.acheck_many([key, key, key + ":x"])
            assert [x.allowed for x in ds] == [True, False, True]
            ds = await lim.acheck_many(k for k in [key + ":y"])
            assert ds[0].remaining == 2
            assert await lim.areset(key) is None
            assert (await lim.apeek(key)).remaining == 3
            assert (await lim.acheck_at(key, 3, time.time())).allowed
            with pytest.raises(polylimit.InvalidArgument, match="cost = 4 exceeds limit"):
                await lim.acheck(key, 4)
            with pytest.raises(TypeError, match="key must be str or bytes"):
                await lim.acheck(42)

    asyncio.run(main())


def test_async_decorator_and_hit(key):
    async def main():
        with polylimit.Client("memory://") as client:
            lim = client.limiter("1/m")

            @lim.limit(lambda user: key + user)
            async def handler(user):
                await asyncio.sleep(0)
                return "ok " + user

            assert await handler("a") == "ok a"
            with pytest.raises(polylimit.RateLimited) as info:
                await handler("a")
            assert info.value.decision.allowed is False

            async with lim.hit(key + "h") as d:
                assert d.allowed
            with pytest.raises(polylimit.RateLimited):
                async with lim.hit(key + "h"):
                    pytest.fail("the body must not run")

    asyncio.run(main())


def test_async_after_close_raises(key):
    async def main():
        client = polylimit.Client("memory://")
        lim = client.limiter("1/m")
        await lim.acheck(key)
        client.close()
        with pytest.raises(polylimit.Error) as info:
            await lim.acheck(key)
        assert info.value.code == "POLYLIMIT_ECLOSED"

    asyncio.run(main())


def test_acheck_on_a_frozen_server_does_not_block_the_loop(private_redis, key):
    import os
    import signal

    async def main():
        with polylimit.Client(private_redis.url, command_timeout=0.5, pool_size=4) as client:
            lim = client.limiter("10/s")
            await lim.acheck(key)  # connected, script loaded
            os.kill(private_redis.pid, signal.SIGSTOP)
            try:
                ticks = []
                calls = asyncio.gather(*(lim.acheck(key) for _ in range(4)), return_exceptions=True)
                started = time.perf_counter()
                while not calls.done():
                    ticks.append(time.perf_counter())
                    await asyncio.sleep(0.005)
                results = await calls
                return results, ticks, time.perf_counter() - started
            finally:
                os.kill(private_redis.pid, signal.SIGCONT)

    results, ticks, elapsed = asyncio.run(main())
    assert all(isinstance(r, polylimit.Timeout) for r in results), results
    assert elapsed >= 0.45
    # Blocking calls would have held the loop for 4 x 0.5 s with no tick.
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert len(ticks) >= 20 and sorted(gaps)[len(gaps) // 2] < 0.05, (len(ticks), max(gaps))
