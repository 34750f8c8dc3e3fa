"""check_many: one round trip for many keys, exact across threads, and errors
raised or returned in place."""

import threading

import polylimit
import pytest

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
