"""Every public call of the polylimit package, on memory:// and on Redis."""

import datetime
import os
import time

import polylimit
import pytest
from polylimit import _core

# -- package ------------------------------------------------------------------


def test_version_is_the_headers():
    header = os.path.join(os.path.dirname(__file__), "..", "..", "capi", "include", "polylimit.h")
    with open(header) as f:
        text = f.read()
    assert '#define POLYLIMIT_VERSION_STRING "%s"' % polylimit.__version__ in text
    assert _core.version_string() == polylimit.__version__
    assert _core.version_number() >= _core.VERSION_NUMBER


def test_installed_package_is_tested():
    # run.sh tests the wheel, not the source tree.
    src = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", "bindings"))
    assert not os.path.realpath(polylimit.__file__).startswith(src)


def test_all_exports_exist():
    for name in polylimit.__all__:
        assert hasattr(polylimit, name), name
    assert polylimit.ALGORITHMS == ("fixed_window", "gcra", "sliding_counter", "sliding_log")
    assert polylimit.CLOCKS == ("client", "server")
    assert polylimit.FAILURE_POLICIES == ("closed", "error", "local", "open")
    assert not hasattr(polylimit, "parse_rate")  # one spec parser: the core's


def test_error_hierarchy():
    assert issubclass(polylimit.InvalidArgument, ValueError)
    assert issubclass(polylimit.Unavailable, ConnectionError)
    assert issubclass(polylimit.Timeout, TimeoutError)
    for cls in (
        polylimit.InvalidArgument,
        polylimit.Unavailable,
        polylimit.Timeout,
        polylimit.AuthError,
        polylimit.PermissionDenied,
        polylimit.ScriptError,
        polylimit.PoolExhausted,
        polylimit.NoMemory,
        polylimit.ServerError,
        polylimit.ClosedError,
        polylimit.RateLimited,
    ):
        assert issubclass(cls, polylimit.Error)
    assert polylimit.InvalidArgument.code == "POLYLIMIT_EINVALID"
    assert polylimit.Timeout.code == "POLYLIMIT_ETIMEOUT" and polylimit.Timeout.retryable
    assert polylimit.ClosedError.code == "POLYLIMIT_ECLOSED" and not polylimit.ClosedError.retryable


# -- checks ---------------------------------------------------------------------


def test_check_admits_up_to_the_limit(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("3/minute")
        decisions = [lim.check(key) for _ in range(4)]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert [d.remaining for d in decisions] == [2, 1, 0, 0]
    first, denied = decisions[0], decisions[3]
    assert bool(first) is True and bool(denied) is False
    assert first.limit == 3 and first.retry_after == 0.0
    assert 0 < first.reset_after <= 60.0 and isinstance(first.reset_after, float)
    assert 0 < denied.retry_after <= 60.0 and denied.retry_after_ms == pytest.approx(denied.retry_after * 1000)
    assert denied.cached is False and denied.degraded is False
    assert repr(denied).startswith("Decision(allowed=False, limit=3, remaining=0, retry_after=")


def test_cost_is_all_or_nothing(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter(limit=5, window=60)
        assert lim.check(key, 3).remaining == 2
        d = lim.check(key, 3)
        assert not d.allowed and d.remaining == 2
        assert lim.check(key, 2).allowed


def test_peek_consumes_nothing(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("2/m")
        assert lim.peek(key).remaining == 2
        lim.check(key)
        p = lim.peek(key)
        assert p.allowed and p.remaining == 1
        assert lim.peek(key).remaining == 1
        lim.check(key)
        assert not lim.peek(key).allowed


def test_reset_restores_capacity(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("1/h")
        assert lim.check(key)
        assert not lim.check(key)
        assert lim.reset(key) is None
        assert lim.check(key)


def test_check_many(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("2/m")
        keys = [key + ":a", key + ":b", key + ":a", key + ":a"]
        ds = lim.check_many(keys)
        assert [d.allowed for d in ds] == [True, True, True, False]
        assert lim.check_many([]) == []
        ds = lim.check_many((k for k in [key + ":c"]), cost=2)
        assert len(ds) == 1 and ds[0].remaining == 0


def test_check_at_float_seconds_int_microseconds_and_datetime(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("2 per 10 seconds")
        t = time.time()
        assert lim.check_at(key, 1, t).allowed
        assert lim.check_at(key, 1, int(t * 1e6) + 1000).allowed
        assert not lim.check_at(key, 1, t + 1.0).allowed
        # 10 s later (as a datetime) the first two entries have left the window.
        later = datetime.datetime.fromtimestamp(t + 10.5, tz=datetime.timezone.utc)
        assert lim.check_at(key, 2, later).allowed


def test_keys_are_bytes_nul_and_utf8(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("1/m")
        base = key.encode()
        assert lim.check(base + b"\x00a")
        assert lim.check(base + b"\x00b")  # NUL does not truncate the key
        assert not lim.check(base + b"\x00a")
        assert lim.check(key + "é")
        assert not lim.check((key + "é").encode("utf-8"))  # str is sent as UTF-8
        assert lim.check(base + b"\xff\xfe")  # not UTF-8: fine as bytes


def test_prefix_separates_limiters(url, key):
    with polylimit.Client(url) as client:
        a = client.limiter("1/m", prefix="a")
        b = client.limiter("1/m", prefix="b")
        same = client.limiter("1/m", prefix="a")
        assert a.check(key) and b.check(key)
        assert not same.check(key)
        assert same.prefix == "a"


@pytest.mark.parametrize("algorithm", polylimit.ALGORITHMS)
@pytest.mark.parametrize("clock", ["server", "client"])
def test_every_algorithm_and_clock(url, key, algorithm, clock):
    with polylimit.Client(url) as client:
        lim = client.limiter("5/s", algorithm=algorithm, clock=clock)
        assert lim.algorithm == algorithm and lim.clock == clock
        assert sum(lim.check(key).allowed for _ in range(7)) == 5
        assert lim.peek(key).remaining == 0


def test_window_slides(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("2 per 200 ms")
        assert lim.check(key) and lim.check(key)
        d = lim.check(key)
        assert not d and 0 < d.retry_after <= 0.2
        time.sleep(d.retry_after + 0.05)  # not a wait for a condition: the window sliding in real time is under test
        assert lim.check(key)


def test_limiter_description():
    with polylimit.Client("memory://") as client:
        lim = client.limiter(limit=100, window=60)
        assert lim.rate == polylimit.Rate(100, 60.0) and lim.spec is None
        assert lim.rate.limit == 100 and lim.rate.window == 60.0
        assert client.limiter(limit=7, window=datetime.timedelta(milliseconds=1500)).rate == (7, 1.5)
        assert "100 per 60s" in repr(lim)
        assert lim.client is client
        assert lim.on_failure == "error" and lim.shadow is False
        # A spec is parsed by the core, which does not report the parsed limits.
        spec = client.limiter("10/s; 1000/hour", algorithm="fixed_window", on_failure="open", shadow=True)
        assert spec.spec == "10/s; 1000/hour" and spec.rate is None
        assert repr(spec) == "<polylimit.Limiter '10/s; 1000/hour' fixed_window prefix='pl'>"
        assert spec.on_failure == "open" and spec.shadow is True


# -- client lifetime ----------------------------------------------------------


def test_close_is_idempotent_and_closes_limiters(key):
    client = polylimit.Client("memory://")
    lim = client.limiter("5/s")
    assert lim.check(key)
    assert not client.closed
    client.close()
    client.close()
    assert client.closed and "closed" in repr(client)
    with pytest.raises(polylimit.ClosedError) as info:
        lim.check(key)
    assert info.value.code == "POLYLIMIT_ECLOSED" and str(info.value) == "the client is closed"
    assert "closed" in repr(lim)
    with pytest.raises(polylimit.ClosedError) as info:
        client.limiter("1/s")
    assert info.value.code == "POLYLIMIT_ECLOSED" and str(info.value) == "the client is closed"


def test_context_manager_closes():
    with polylimit.Client("memory://") as client:
        pass
    assert client.closed


def test_repr_hides_the_password():
    with polylimit.Client("redis://user:s3cret@127.0.0.1:1") as client:
        assert "s3cret" not in repr(client) and "***" in repr(client)
        assert client.url == "redis://user:s3cret@127.0.0.1:1"


def test_options_are_accepted(redis_server, key):
    with polylimit.Client(
        redis_server.url,
        pool_size=2,
        connect_timeout=0.5,
        command_timeout=0.25,
        acquire_timeout=datetime.timedelta(seconds=1),
        keepalive=False,
        idle_check=0.0001,
    ) as client:
        assert client.limiter("1/s").check(key)
    with polylimit.Client(redis_server.url, keepalive=30) as client:
        assert client.limiter("1/s").check(key + "x")


# -- helpers ----------------------------------------------------------------------


def test_hit_context_manager(key):
    with polylimit.Client("memory://") as client:
        lim = client.limiter("1/m")
        with lim.hit(key) as d:
            assert d.allowed and d.remaining == 0
        with pytest.raises(polylimit.RateLimited) as info:
            with lim.hit(key):
                pytest.fail("the body must not run")
        e = info.value
        assert e.decision.allowed is False and e.retry_after > 0 and e.code is None
        assert "retry after" in str(e)


def test_limit_decorator(key):
    with polylimit.Client("memory://") as client:
        lim = client.limiter("2/m")

        @lim.limit(lambda user, n=0: key + user)
        def handler(user, n=0):
            """docstring kept"""
            return user * n

        assert handler("a", n=2) == "aa"
        assert handler("a") == ""
        with pytest.raises(polylimit.RateLimited):
            handler("a")
        assert handler("b") == ""
        assert handler.__doc__ == "docstring kept" and handler.__name__ == "handler"

        calls = []

        @lim.limit()
        def whole():
            calls.append(1)

        whole()
        whole()
        with pytest.raises(polylimit.RateLimited):
            whole()
        assert len(calls) == 2

        @lim.limit(key.encode() + b"fixed", cost=2)
        def fixed():
            return True

        assert fixed()
        with pytest.raises(polylimit.RateLimited):
            fixed()


# -- bad arguments ----------------------------------------------------------------


@pytest.fixture
def lim():
    with polylimit.Client("memory://") as client:
        yield client.limiter("10/s")


@pytest.mark.parametrize("bad_key", [1, 1.5, None, bytearray(b"k"), memoryview(b"k"), ["k"], object()])
def test_key_of_wrong_type(lim, bad_key):
    for call in (lim.check, lim.peek, lim.reset):
        with pytest.raises(TypeError, match="key must be str or bytes, not"):
            call(bad_key)
    with pytest.raises(TypeError):
        lim.check_many([bad_key])


def test_check_many_rejects_a_single_key(lim):
    with pytest.raises(TypeError, match="keys must be an iterable of keys, not a single str"):
        lim.check_many("abc")
    with pytest.raises(TypeError, match="not a single bytes"):
        lim.check_many(b"abc")
    with pytest.raises(TypeError):
        lim.check_many(5)


def test_empty_key(lim):
    with pytest.raises(polylimit.InvalidArgument, match="key is empty"):
        lim.check("")
    with pytest.raises(polylimit.InvalidArgument, match=r"keys\[1\]: key is empty"):
        lim.check_many(["a", b""])


def test_lone_surrogate_key(lim):
    # The library's InvalidArgument naming the key (tests/python/test_secrets.py
    # covers every call), not Python's UnicodeEncodeError.
    with pytest.raises(polylimit.InvalidArgument, match="^key "):
        lim.check("\udc80")


@pytest.mark.parametrize(
    "cost,exc,message",
    [
        (0, polylimit.InvalidArgument, "cost = 0 must be at least 1"),
        (-1, polylimit.InvalidArgument, "cost = -1 must be at least 1"),
        (11, polylimit.InvalidArgument, "cost = 11 exceeds limit = 10"),
        (2**70, polylimit.InvalidArgument, "cost = 1180591620717411303424 is out of range"),
        (1.0, TypeError, "cost must be an int, not float"),
        ("1", TypeError, "cost must be an int, not str"),
        (True, TypeError, "cost must be an int, not bool"),
        (None, TypeError, "cost must be an int, not NoneType"),
    ],
)
def test_bad_cost(lim, cost, exc, message):
    with pytest.raises(exc, match=message):
        lim.check("k", cost)
    with pytest.raises(exc, match=message):
        lim.check_many(["k"], cost)
    with pytest.raises(exc, match=message):
        lim.check_at("k", cost, time.time())


def test_errors_carry_code_and_status(lim):
    with pytest.raises(polylimit.InvalidArgument) as info:
        lim.check("k", 0)
    assert info.value.code == "POLYLIMIT_EINVALID" and info.value.status == -2
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "now,exc,message",
    [
        (-1.0, polylimit.InvalidArgument, "now_us = -1000000 is out of range"),
        (0, polylimit.InvalidArgument, "now_us = 0 is out of range"),
        (2**60, polylimit.InvalidArgument, "is out of range"),
        (float("nan"), polylimit.InvalidArgument, "not finite"),
        ("now", TypeError, "now must be float seconds, int microseconds"),
        (datetime.datetime(2024, 1, 1), polylimit.InvalidArgument, "naive datetime"),
    ],
)
def test_bad_check_at_time(lim, now, exc, message):
    with pytest.raises(exc, match=message):
        lim.check_at("k", 1, now)


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "10",
        "10/",
        "/s",
        "ten/s",
        "10/fortnight",
        "10 per",
        "-1/s",
        "10/0s",
        "10/0.0001s",
        "10/1.5ms",
        "10//s",
        "1e3/s",
        "10/s extra",
        "10 pers",
    ],
)
def test_bad_spec(spec):
    with polylimit.Client("memory://") as client:
        with pytest.raises(polylimit.InvalidArgument, match="rate spec") as info:
            client.limiter(spec)
    assert info.value.code == "POLYLIMIT_EINVALID"


@pytest.mark.parametrize(
    "spec,message",
    [
        # The messages are the core's (capi polylimit_limiter_new_spec), quoting the bad part.
        ("", "rate spec is empty (expected e.g. '100/minute' or '10/s; 1000/hour')"),
        ("10", "rate spec '10': expected '/' or 'per' after the count"),
        ("ten/s", "rate spec 'ten/s': expected count (a whole number) at 'ten/s'"),
        ("10/fortnight", "rate spec '10/fortnight': unknown time unit 'fortnight' (use ms, s, m, h, d, month or year)"),
        ("10/s extra", "rate spec '10/s extra': unexpected 'extra' after the period"),
        ("2000000/s", "rate spec '2000000/s': count 2000000 is larger than 1000000"),
        ("3 / 1.5 s", "rate spec '3 / 1.5 s': expected a time unit (ms, s, m, h, d, month, year) at '.5 s'"),
        ("10/s; 5/hour; x", "rate spec ' x': expected count (a whole number) at 'x'"),
        ("10/s burst 20", "rate spec '10/s burst 20': burst = 20 is only for the gcra algorithm"),
    ],
)
def test_bad_spec_messages_come_from_the_core(spec, message):
    with polylimit.Client("memory://") as client:
        with pytest.raises(polylimit.InvalidArgument) as info:
            client.limiter(spec)
    assert str(info.value).startswith(message)


def test_spec_of_wrong_type():
    with polylimit.Client("memory://") as client:
        with pytest.raises(TypeError, match="rate spec must be a str"):
            client.limiter(100)


@pytest.mark.parametrize(
    "kwargs,exc,message",
    [
        # Ranges are the core's, named as the C API names them (deny_cache_size,
        # block_ms ...); the binding only converts types (seconds to ms, rounded up).
        ({}, polylimit.InvalidArgument, "a rate is needed"),
        ({"limit": 10}, polylimit.InvalidArgument, "a rate is needed"),
        ({"spec": "1/s", "limit": 1}, polylimit.InvalidArgument, "not both"),
        ({"limit": 0, "window": 1}, polylimit.InvalidArgument, r"^limit = 0 is out of range 1\.\.1000000$"),
        ({"limit": 1000001, "window": 1}, polylimit.InvalidArgument, r"^limit = 1000001 is out of range 1\.\.1000000$"),
        (
            {"limit": 2**64, "window": 1},
            polylimit.InvalidArgument,
            r"^limit = 18446744073709551616 is out of range 1\.\.1000000$",
        ),
        ({"limit": 1.5, "window": 1}, TypeError, "limit must be an int, not float"),
        ({"limit": True, "window": 1}, TypeError, "limit must be an int, not bool"),
        ({"limit": 1, "window": 0}, polylimit.InvalidArgument, r"^window_ms = 0 is out of range 1\.\.31622400000$"),
        ({"limit": 1, "window": -1.0}, polylimit.InvalidArgument, r"^window_ms = -1000 is out of range 1\.\."),
        ({"limit": 1, "window": 0.0001}, polylimit.InvalidArgument, "not a whole number of milliseconds"),
        (
            {"limit": 1, "window": 1e12},
            polylimit.InvalidArgument,
            r"^window_ms = 1000000000000000 is out of range 1\.\.31622400000$",
        ),
        ({"limit": 1, "window": float("inf")}, polylimit.InvalidArgument, "window = inf is not a finite number"),
        ({"limit": 1, "window": "60"}, TypeError, "window must be a number of seconds, not str"),
        (
            {"spec": "1/s", "algorithm": "token"},
            polylimit.InvalidArgument,
            "algorithm 'token' is unknown; available: fixed_window, gcra, sliding_counter, sliding_log",
        ),
        ({"spec": "1/s", "on_failure": "ignore"}, polylimit.InvalidArgument, "on_failure 'ignore' is unknown"),
        ({"spec": "1/s", "on_failure": None}, TypeError, "on_failure must be a str"),
        ({"spec": "1/s", "burst": 5, "algorithm": "gcra"}, polylimit.InvalidArgument, "burst goes in the spec"),
        ({"limit": 1, "window": 1, "burst": 5}, polylimit.InvalidArgument, "burst = 5 is only for the gcra algorithm"),
        (
            {"limit": 1, "window": 1, "burst": -1, "algorithm": "gcra"},
            polylimit.InvalidArgument,
            r"^burst = -1 is out of range 0\.\.1000000$",
        ),
        ({"limit": 1, "window": 1, "burst": 2.0, "algorithm": "gcra"}, TypeError, "burst must be an int"),
        (
            {"spec": "1/s", "deny_cache": -1},
            polylimit.InvalidArgument,
            r"^deny_cache_size = -1 is out of range 0\.\.10000000$",
        ),
        (
            {"spec": "1/s", "deny_cache": 2**40},
            polylimit.InvalidArgument,  # too big for the C int: same words
            r"^deny_cache_size = 1099511627776 is out of range 0\.\.10000000$",
        ),
        ({"spec": "1/s", "deny_cache": 1.0}, TypeError, "deny_cache must be an int"),
        (
            {"spec": "1/s", "breaker_failures": -1},
            polylimit.InvalidArgument,
            r"^breaker_failures = -1 is out of range 0\.\.1000000$",
        ),
        (
            {"spec": "1/s", "breaker_cooldown": 0},
            polylimit.InvalidArgument,
            r"^breaker_cooldown_ms = 0 is out of range 1\.\.3600000$",
        ),
        (
            {"spec": "1/s", "breaker_cooldown": 3601},
            polylimit.InvalidArgument,
            r"^breaker_cooldown_ms = 3601000 is out of range 1\.\.3600000$",
        ),
        (
            {"spec": "1/s", "block": -1},
            polylimit.InvalidArgument,
            r"^block_ms = -1000 is out of range 0\.\.31622400000$",
        ),
        (
            {"spec": "1/s", "block": -0.0001},
            polylimit.InvalidArgument,
            r"^block_ms = -1 is out of range",
        ),  # away from 0
        (
            {"spec": "1/s", "block": 1e12},
            polylimit.InvalidArgument,
            r"^block_ms = 1000000000000000 is out of range 0\.\.31622400000$",
        ),
        ({"spec": "1/s", "block": "1"}, TypeError, "block must be a number of seconds"),
        ({"spec": "1/s", "shadow": 1}, TypeError, "shadow must be a bool"),
        ({"spec": "1/s", "algorithm": 0}, TypeError, "algorithm must be a str"),
        (
            {"spec": "1/s", "clock": "local"},
            polylimit.InvalidArgument,
            "clock 'local' is unknown; use 'server' or 'client'",
        ),
        ({"spec": "1/s", "prefix": ""}, polylimit.InvalidArgument, "prefix is empty"),
        ({"spec": "1/s", "prefix": "a{b}"}, polylimit.InvalidArgument, "must not contain"),
        ({"spec": "1/s", "prefix": "x" * 257}, polylimit.InvalidArgument, "prefix is longer than 256 bytes"),
        ({"spec": "1/s", "prefix": "a\0b"}, polylimit.InvalidArgument, "prefix contains a NUL"),
        ({"spec": "1/s", "prefix": b"pl"}, TypeError, "prefix must be a str"),
    ],
)
def test_bad_limiter_arguments(kwargs, exc, message):
    with polylimit.Client("memory://") as client:
        with pytest.raises(exc, match=message):
            client.limiter(**kwargs)


@pytest.mark.parametrize(
    "url,message",
    [
        ("", "url"),
        ("bogus://x", 'unknown scheme "bogus"'),
        ("redis://127.0.0.1:99999", "out of range"),
        ("redis://127.0.0.1:6379/notadb", "not a number"),
        ("memory://\0", "NUL"),
    ],
)
def test_bad_url(url, message):
    with pytest.raises(polylimit.InvalidArgument, match=message) as info:
        polylimit.Client(url)
    assert info.value.code == "POLYLIMIT_EINVALID"


def test_url_of_wrong_type():
    with pytest.raises(TypeError, match="url must be a str or None, not bytes"):
        polylimit.Client(b"memory://")


@pytest.mark.parametrize(
    "kwargs,exc,message",
    [
        # The core's ranges and words; 0 cannot reach the core (the C struct reads
        # it as "default"), so the binding refuses it, in the same words.
        ({"pool_size": 0}, polylimit.InvalidArgument, r"^pool_size = 0 is out of range 1\.\.4096$"),
        ({"pool_size": -3}, polylimit.InvalidArgument, r"^pool_size = -3 is out of range 1\.\.4096$"),
        ({"pool_size": 2**40}, polylimit.InvalidArgument, r"^pool_size = 1099511627776 is out of range 1\.\.4096$"),
        ({"pool_size": 2.0}, TypeError, "pool_size must be an int"),
        ({"connect_timeout": 0}, polylimit.InvalidArgument, r"^connect_timeout_ms = 0 is out of range 1\.\.3600000$"),
        (
            {"command_timeout": -1},
            polylimit.InvalidArgument,
            r"^command_timeout_ms = -1000 is out of range 1\.\.3600000$",
        ),
        ({"acquire_timeout": float("inf")}, polylimit.InvalidArgument, "acquire_timeout = inf is not a finite number"),
        ({"acquire_timeout": 0}, polylimit.InvalidArgument, "acquire_timeout = 0 cannot be given"),
        (
            {"command_timeout": 1e10},
            polylimit.InvalidArgument,
            r"^command_timeout_ms = 10000000000000 is out of range 1\.\.3600000$",
        ),
        ({"connect_timeout": "1"}, TypeError, "connect_timeout must be a number of seconds, not str"),
        ({"idle_check": -0.5}, polylimit.InvalidArgument, r"^idle_check_ms = -500 is out of range 0\.\.86400000$"),
        ({"keepalive": -1}, polylimit.InvalidArgument, r"^keepalive_s = -1 is out of range 0\.\.86400$"),
        ({"keepalive": 86401}, polylimit.InvalidArgument, r"^keepalive_s = 86401 is out of range 0\.\.86400$"),
        ({"keepalive": 1.5}, TypeError, "keepalive must be an int"),
    ],
)
def test_bad_client_options(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        polylimit.Client("memory://", **kwargs)


def test_unknown_option_is_a_type_error():
    with pytest.raises(TypeError):
        polylimit.Client("memory://", pool=3)


# -- failures from the server ----------------------------------------------------


def test_unavailable_when_nothing_listens(key):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connection refused
        with polylimit.Client("redis://127.0.0.1:%d" % port, connect_timeout=0.5) as client:
            with pytest.raises(polylimit.Unavailable) as info:
                client.limiter("1/s").check(key)
    e = info.value
    assert isinstance(e, ConnectionError) and e.code == "POLYLIMIT_EUNAVAILABLE" and str(e)


def test_auth_and_permission_errors(redis_server, key):
    user = "u" + key[-8:]
    redis_server.command("ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "-evalsha", "-eval")
    try:
        with polylimit.Client("redis://%s:wrong@127.0.0.1:%d" % (user, redis_server.port)) as client:
            with pytest.raises(polylimit.AuthError) as info:
                client.limiter("1/s").check(key)
            assert info.value.code == "POLYLIMIT_EAUTH"
        with polylimit.Client("redis://%s:pw@127.0.0.1:%d" % (user, redis_server.port)) as client:
            with pytest.raises(polylimit.PermissionDenied) as info:
                client.limiter("1/s").check(key)
            assert info.value.code == "POLYLIMIT_EPERM" and "NOPERM" in str(info.value).upper()
    finally:
        redis_server.command("ACL", "DELUSER", user)


def test_script_error_on_a_key_of_the_wrong_type(redis_server, key, prefix):
    # Find the storage key the script uses (whatever its layout), then make it
    # a hash: the wrong type for any structure the script keeps there.
    with polylimit.Client(redis_server.url) as client:
        lim = client.limiter("1/s", prefix=prefix)
        assert lim.check(key)
        storage = redis_server.command("KEYS", prefix + ":*")
        assert len(storage) == 1, storage
        try:
            redis_server.command("DEL", storage[0])
            redis_server.command("HSET", storage[0], "not", "ours")
            with pytest.raises(polylimit.ScriptError) as info:
                lim.check(key)
            assert info.value.code == "POLYLIMIT_ESCRIPT" and "WRONGTYPE" in str(info.value)
        finally:
            redis_server.command("DEL", storage[0])


def test_script_flush_is_survived(redis_server, key):
    with polylimit.Client(redis_server.url) as client:
        lim = client.limiter("3/m")
        assert lim.check(key)
        redis_server.command("SCRIPT", "FLUSH")
        assert lim.check(key).remaining == 1


def test_decision_value_semantics(key):
    with polylimit.Client("memory://") as client:
        lim = client.limiter("5/m")
        a = lim.peek(key)
        b = lim.peek(key)
        assert a == b and not (a != b)
        assert a != lim.check(key)
        assert (a == "x") is False
        with pytest.raises(TypeError):
            hash(a)
        assert isinstance(a, polylimit.Decision)


@pytest.mark.parametrize(
    "spec,limit,window_ms",
    [
        ("100/minute", 100, 60_000),
        ("10/s", 10, 1000),
        ("5 per 2 seconds", 5, 2000),
        ("1 per second", 1, 1000),
        ("7/250ms", 7, 250),
        ("2/H", 2, 3_600_000),
        ("9 PER 2 Hours", 9, 7_200_000),
        ("4/mins", 4, 60_000),
        ("1/day", 1, 86_400_000),
        ("  12/d  ", 12, 86_400_000),
    ],
)
def test_rate_specs(spec, limit, window_ms):
    # The core parses the spec; a sliding log's first check at a fixed time
    # shows the limit and (reset_after) the window.
    with polylimit.Client("memory://") as client:
        d = client.limiter(spec, clock="client").check_at("k", 1, 1_700_000_000_000_000)
    assert d.limit == limit and d.remaining == limit - 1 and d.reset_after_ms == window_ms
