"""The GIL is released while a call waits on Redis, and timeouts are honoured.

The server is frozen with SIGSTOP: connections stay open but nothing answers,
so a check blocks until command_timeout. Meanwhile the main thread must keep
running Python code."""

import os
import signal
import threading
import time

import polylimit
import pytest
from conftest import pending_requests, wait_until


@pytest.fixture
def frozen(private_redis):
    """Yields a function that freezes the server; always thaws it."""
    stopped = []

    def freeze():
        os.kill(private_redis.pid, signal.SIGSTOP)
        stopped.append(True)

    yield freeze
    if stopped:
        os.kill(private_redis.pid, signal.SIGCONT)


def _spin(seconds):
    """Pure Python for `seconds` (it needs the GIL); how many turns it made.
    With the GIL held by a blocked call it makes ~0 turns; released, hundreds
    of thousands."""
    spins = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        spins += 1
    return spins


def test_gil_is_released_during_io(private_redis, frozen, key):
    with polylimit.Client(private_redis.url, command_timeout=0.6) as client:
        lim = client.limiter("10/s")
        assert lim.check(key)  # connect and load the script first
        frozen()
        outcome = {}

        def blocked():
            started = time.perf_counter()
            try:
                lim.check(key)
            except polylimit.Timeout as e:
                outcome["error"] = e
            outcome["seconds"] = time.perf_counter() - started

        t = threading.Thread(target=blocked)
        t.start()
        spins = _spin(0.4)
        assert t.is_alive(), "the check returned although the server is stopped"
        t.join(5)
        assert not t.is_alive()
    e = outcome.get("error")
    assert isinstance(e, polylimit.Timeout) and isinstance(e, TimeoutError), outcome
    assert e.code == "POLYLIMIT_ETIMEOUT" and str(e)
    assert 0.5 <= outcome["seconds"] < 3.0
    assert spins > 10_000, spins


def test_check_many_releases_the_gil_too(private_redis, frozen, key):
    with polylimit.Client(private_redis.url, command_timeout=0.3) as client:
        lim = client.limiter("10/s")
        lim.check(key)
        frozen()
        errors = []
        t = threading.Thread(target=lambda: errors.append(pytest.raises(polylimit.Timeout, lim.check_many, [key])))
        t.start()
        spins = _spin(0.2)
        t.join(5)
    assert errors and "keys[0]" in str(errors[0].value)
    assert spins > 10_000


def test_callers_share_the_connection_without_holding_the_gil(private_redis, frozen, key):
    # One connection; a second caller queues behind the first (pipelined)
    # instead of failing with PoolExhausted, and both wait without the GIL.
    with polylimit.Client(private_redis.url, pool_size=1, command_timeout=0.5, acquire_timeout=0.1) as client:
        lim = client.limiter("10/s")
        lim.check(key)
        frozen()
        errors = []
        holder = threading.Thread(target=lambda: errors.append(pytest.raises(polylimit.Timeout, lim.check, key)))
        holder.start()
        wait_until(lambda: pending_requests(private_redis.port) > 0, what="a request pending at the frozen server")
        second = threading.Thread(target=lambda: errors.append(pytest.raises(polylimit.Timeout, lim.check, key)))
        second.start()
        spins = _spin(0.2)
        holder.join(5)
        second.join(5)
    assert len(errors) == 2 and all(e.value.code == "POLYLIMIT_ETIMEOUT" for e in errors)
    assert spins > 10_000


def test_recovers_after_the_server_returns(private_redis, key):
    with polylimit.Client(private_redis.url, command_timeout=0.3) as client:
        lim = client.limiter("10/s")
        assert lim.check(key)
        os.kill(private_redis.pid, signal.SIGSTOP)
        try:
            with pytest.raises(polylimit.Timeout):
                lim.check(key)
        finally:
            os.kill(private_redis.pid, signal.SIGCONT)
        assert lim.check(key).allowed  # the broken connection was replaced


@pytest.mark.parametrize("how", ["close", "free"])
def test_leases_go_back_without_the_gil(private_redis, frozen, key, how):
    # Closing the client, or dropping the last reference to a limiter with
    # leases, gives the unused units back: a round trip, here to a stopped
    # server, that must not hold the GIL.
    client = polylimit.Client(private_redis.url, command_timeout=0.6)
    watch = polylimit.Client(private_redis.url)
    try:
        box = [client.limiter("100/minute", lease_units=10, lease=60)]
        assert box[0].check(key).allowed
        frozen()
        if how == "close":
            t = threading.Thread(target=client.close)
        else:
            t = threading.Thread(target=box.clear)  # the limiter's last reference
        t.start()
        spins = _spin(0.3)
        assert t.is_alive(), "the give-back returned although the server is stopped"
        t.join(5)
        assert not t.is_alive()
        assert spins > 10_000, spins  # ~0 with the GIL held by the give-back
        st = client.stats() if how == "free" else None
        # The server was stopped for the whole give-back: it timed out, and
        # the 9 units stay with Redis until the window frees them.
        if st is not None:
            assert (st["leased_units"], st["refunded_units"], st["stranded_units"]) == (10, 0, 9), st
    finally:
        os.kill(private_redis.pid, signal.SIGCONT)
        client.close()
        watch.close()
