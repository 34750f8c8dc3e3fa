"""Error.outcome_unknown: True when a call failed after its command was sent
(it may have consumed units), False when it failed before the send."""

import os
import signal
import socket

import pytest

import polylimit


@pytest.fixture
def paused_server(private_redis):
    """(server, pause): pause() SIGSTOPs the server; it is always resumed."""
    paused = []

    def pause():
        os.kill(private_redis.pid, signal.SIGSTOP)
        paused.append(True)

    yield private_redis, pause
    if paused:
        os.kill(private_redis.pid, signal.SIGCONT)


def test_the_attribute_is_declared_on_every_error():
    assert polylimit.Error.outcome_unknown is False
    assert polylimit.Timeout.outcome_unknown is False


def test_refused_connection_has_a_known_outcome(key):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connection refused
        with polylimit.Client("redis://127.0.0.1:%d" % port, connect_timeout=0.5) as client:
            lim = client.limiter("5/s")
            with pytest.raises(polylimit.Unavailable) as info:
                lim.check(key)
            results = lim.check_many([key + ":a", key + ":b"], return_exceptions=True)
    assert info.value.outcome_unknown is False
    assert [type(r) for r in results] == [polylimit.Unavailable, polylimit.Unavailable]
    assert [r.outcome_unknown for r in results] == [False, False]


def test_paused_server_times_out_with_an_unknown_outcome(paused_server, key):
    server, pause = paused_server
    with polylimit.Client(server.url, pool_size=1, command_timeout=0.3) as client:
        lim = client.limiter("5/s")
        assert lim.check(key + ":warm")  # connected, script loaded
        pause()
        with pytest.raises(polylimit.Timeout) as info:
            lim.check(key)
    e = info.value
    assert e.code == "POLYLIMIT_ETIMEOUT" and e.outcome_unknown is True, str(e)


def test_paused_server_batch_marks_every_key(paused_server, key):
    # Two clients, each warm, each with one failing call: a second call on the
    # same client would need a new connection, whose handshake times out
    # before anything of the call is sent (a known outcome).
    server, pause = paused_server
    keys = [key + ":" + str(i) for i in range(3)]
    with polylimit.Client(server.url, pool_size=1, command_timeout=0.3) as a, \
            polylimit.Client(server.url, pool_size=1, command_timeout=0.3) as b:
        lim_a, lim_b = a.limiter("5/s"), b.limiter("5/s")
        assert all(lim_a.check_many(keys)) and all(lim_b.check_many(keys))
        pause()
        results = lim_a.check_many(keys, return_exceptions=True)
        with pytest.raises(polylimit.Timeout) as info:
            lim_b.check_many(keys)
    assert [type(r) for r in results] == [polylimit.Timeout] * 3
    assert [r.outcome_unknown for r in results] == [True] * 3
    assert info.value.outcome_unknown is True and info.value.index == 0
