"""The deny cache: repeated denials answered in process, without a round trip."""

import polylimit

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
