"""One vocabulary for every language: the generated table (polylimit._vocabulary,
built from capi/vocabulary/vocabulary.json) against the exception classes,
the same range messages as Go and Java (the core writes them), the lifetime
rule (closing a client closes its limiters) and check_many's per-key errors."""

import asyncio
import builtins
import datetime
import gc
import os
import re
import subprocess
import sys

import polylimit
import pytest
from polylimit import _core, _errors, _vocabulary

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


# -- (d) the generated table and the exception classes agree -----------------------


def test_every_status_has_its_class():
    assert _vocabulary.STATUSES, "empty status table"
    for status, (c_name, text, retryable, outage, class_name) in _vocabulary.STATUSES.items():
        cls = getattr(polylimit, class_name, None)
        assert cls is not None, "%s (%s) has no class polylimit.%s" % (c_name, status, class_name)
        assert class_name in polylimit.__all__
        assert issubclass(cls, polylimit.Error)
        assert cls.status == status and cls.code == c_name, cls
        assert (cls.retryable, cls.outage) == (retryable, outage), cls
        assert "status" in vars(cls) and "code" in vars(cls)  # its own, not inherited
        assert _core.status_name(status) == c_name  # the C library agrees
        assert _errors.BY_STATUS[status] is cls
        base, doc = _vocabulary.EXCEPTION_CLASSES[class_name]
        if base:
            assert issubclass(cls, getattr(builtins, base)), (cls, base)
        assert text and doc
    # Written in _errors.py, not made up at import time for an unknown name.
    assert _errors.GENERATED_CLASSES == []
    assert set(_errors.BY_STATUS) == set(_vocabulary.STATUSES)


def test_every_error_class_is_in_the_table():
    names = {row[4] for row in _vocabulary.STATUSES.values()}
    classes = {
        name
        for name, obj in vars(_errors).items()
        if isinstance(obj, type) and issubclass(obj, polylimit.Error) and obj is not polylimit.RateLimited
    }
    assert classes == names
    assert polylimit.Error.status == -1 and polylimit.Error.code == "POLYLIMIT_ERROR"
    assert polylimit.RateLimited.code is None  # a denial, not a status


def test_the_installed_table_is_generated_from_the_checkout(tmp_path):
    generator = os.path.join(ROOT, "capi", "vocabulary", "generate.py")
    subprocess.run([sys.executable, generator, "python", str(tmp_path)], check=True)
    with open(tmp_path / "_vocabulary.py", encoding="utf-8") as f:
        fresh = f.read()
    with open(_vocabulary.__file__, encoding="utf-8") as f:
        installed = f.read()
    assert installed == fresh, "polylimit/_vocabulary.py in the wheel is stale: rebuild"
    assert os.path.dirname(_vocabulary.__file__) == os.path.dirname(_core.__file__)


def test_literal_types_list_exactly_the_names_of_the_table():
    import typing

    assert set(typing.get_args(polylimit.AlgorithmName)) == set(_vocabulary.ALGORITHMS)
    assert set(typing.get_args(polylimit.ClockName)) == set(_vocabulary.CLOCKS)
    assert set(typing.get_args(polylimit.FailurePolicyName)) == set(_vocabulary.FAILURE_POLICIES)


def test_names_and_fields_come_from_the_table():
    assert polylimit.ALGORITHMS == tuple(sorted(_vocabulary.ALGORITHMS))
    assert polylimit.CLOCKS == tuple(sorted(_vocabulary.CLOCKS))
    assert polylimit.FAILURE_POLICIES == tuple(sorted(_vocabulary.FAILURE_POLICIES))
    with polylimit.Client("memory://") as client:
        d = client.limiter("5/s").check("k")
        for field in _vocabulary.DECISION_FIELDS:
            assert hasattr(d, field), field
        stats = client.stats()
    assert set(stats) == set(_vocabulary.STATS_COUNTERS) | {"latency_buckets"}
    assert len(stats["latency_buckets"]) == _vocabulary.LATENCY_BUCKETS


def test_no_status_number_or_bound_is_written_in_the_package():
    src = os.path.join(ROOT, "bindings", "python", "src")
    for dirpath, _, files in os.walk(src):
        for name in files:
            if not name.endswith((".py", ".cpp")):
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                text = f.read()
            # Documentation may quote a code; code may not assign one.
            assert not re.search(r"status\s*=\s*-\d", text), name
            assert not re.search(r"[=:(,]\s*\"POLYLIMIT_E[A-Z]+\"", text), name
            assert not re.search(r"\b(4096|3600000|31622400000|1000000|10000000)\b", text), name


# -- (a) one bound, one message, in every language ----------------------------------


# These are the strings the Go and Java suites assert too: the core writes them.
@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"pool_size": 5000}, "pool_size = 5000 is out of range 1..4096"),
        ({"command_timeout": 3601}, "command_timeout_ms = 3601000 is out of range 1..3600000"),
        ({"keepalive": 86401}, "keepalive_s = 86401 is out of range 0..86400"),
    ],
)
def test_client_option_bound_message(kwargs, message):
    with pytest.raises(polylimit.InvalidArgument) as info:
        polylimit.Client("memory://", **kwargs)
    assert str(info.value) == message
    assert info.value.code == "POLYLIMIT_EINVALID" and info.value.status == polylimit.InvalidArgument.status


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"deny_cache": 10000001}, "deny_cache_size = 10000001 is out of range 0..10000000"),
        ({"deny_cache": -1}, "deny_cache_size = -1 is out of range 0..10000000"),
        ({"block": 31622401}, "block_ms = 31622401000 is out of range 0..31622400000"),
        ({"breaker_cooldown": 3601}, "breaker_cooldown_ms = 3601000 is out of range 1..3600000"),
        ({"breaker_failures": 1000001}, "breaker_failures = 1000001 is out of range 0..1000000"),
    ],
)
def test_limiter_option_bound_message(kwargs, message):
    with polylimit.Client("memory://") as client:
        with pytest.raises(polylimit.InvalidArgument) as info:
            client.limiter("10/s", **kwargs)
    assert str(info.value) == message


def test_call_bound_messages(url):
    with polylimit.Client(url) as client:
        lim = client.limiter("10/s")
        with pytest.raises(polylimit.InvalidArgument) as info:
            lim.refund("k", 0)
        assert str(info.value) == "units = 0 is out of range 1..1000000"
        with pytest.raises(polylimit.InvalidArgument) as info:
            lim.acquire("k", timeout=-0.001)
        assert str(info.value) == "timeout_ms = -1 is out of range 0..31622400000"
        with pytest.raises(polylimit.InvalidArgument) as info:
            lim.check_at("k", 1, 0)
        assert str(info.value) == "now_us = 0 is out of range 1..4503599627370496"
        with pytest.raises(polylimit.InvalidArgument) as info:
            lim.check_limit("k", 1, 1000001, 1)
        assert str(info.value) == "limit = 1000001 is out of range 1..1000000"


def test_messages_use_the_tables_bounds():
    # The bounds in the messages above are the table's (and the C header's).
    assert _vocabulary.BOUNDS["pool_size"] == (1, 4096)
    assert _vocabulary.BOUNDS["deny_cache_size"] == (0, 10000000)
    assert _vocabulary.BOUNDS["block_ms"] == (0, 31622400000)
    with open(os.path.join(ROOT, "capi", "include", "polylimit.h"), encoding="utf-8") as f:
        header = f.read()
    for name, (lo, hi) in _vocabulary.BOUNDS.items():
        assert "#define POLYLIMIT_MIN_%s %dLL" % (name.upper(), lo) in header, name
        assert "#define POLYLIMIT_MAX_%s %dLL" % (name.upper(), hi) in header, name


@pytest.mark.parametrize(
    "block,retry_after_ms",
    [
        (0.3, 300),  # the decimal the float prints as: not 301 from its binary value
        (datetime.timedelta(microseconds=300500), 301),  # rounded up
        (0.2999, 300),
    ],
)
def test_durations_round_up_to_whole_milliseconds(block, retry_after_ms):
    with polylimit.Client("memory://") as client:
        lim = client.limiter("1/100ms", block=block, clock="client")
        assert lim.check_at("k", 1, 1_700_000_000.0).allowed
        # Denied: the block (longer than the rate's 90 ms) says how long.
        assert lim.check_at("k", 1, 1_700_000_000.01).retry_after_ms == retry_after_ms


# -- (b) closing the client closes its limiters --------------------------------------


def test_closing_the_client_closes_its_limiters(url, key):
    client = polylimit.Client(url)
    lims = [client.limiter("5/s"), client.limiter("10/s; 100/h", algorithm="gcra")]
    for lim in lims:
        assert lim.check(key)
    client.close()
    for lim in lims:
        for call in (
            lambda: lim.check(key),
            lambda: lim.peek(key),
            lambda: lim.reset(key),
            lambda: lim.check_at_most(key, 2),
            lambda: lim.refund(key, 1),
            lambda: lim.acquire(key, timeout=1),
            lambda: lim.check_limit(key, 1, 5, 1),
            lambda: lim.check_many([key]),
        ):
            with pytest.raises(polylimit.ClosedError) as info:
                call()
            e = info.value
            assert (
                str(e) == "the client is closed"
                and e.code == "POLYLIMIT_ECLOSED"
                and e.status == polylimit.ClosedError.status
            )
            assert isinstance(e, polylimit.Error) and not e.retryable
        out = lim.check_many([key, key + ":b"], return_exceptions=True)
        assert all(isinstance(x, polylimit.ClosedError) for x in out) and [x.index for x in out] == [0, 1]
    # A limiter made after close is refused too.
    with pytest.raises(polylimit.ClosedError, match="^the client is closed$"):
        client.limiter("1/s")
    with pytest.raises(polylimit.ClosedError):
        client.limiter(limit=1, window=1)


def test_limiters_stay_safe_after_their_client_is_gone(key):
    client = polylimit.Client("memory://")
    lim = client.limiter("5/s")
    client.close()
    del client
    gc.collect()
    for _ in range(3):
        with pytest.raises(polylimit.ClosedError):
            lim.check(key)
    assert "closed" in repr(lim)
    del lim
    gc.collect()


def test_async_calls_after_close_raise_closed(url, key):
    async def main():
        client = polylimit.Client(url)
        lim = client.limiter("5/s")
        assert (await lim.acheck(key)).allowed
        client.close()
        with pytest.raises(polylimit.ClosedError):
            await lim.acheck(key)
        with pytest.raises(polylimit.ClosedError):
            await lim.acheck_many([key])
        out = await lim.acheck_many([key], return_exceptions=True)
        assert isinstance(out[0], polylimit.ClosedError)
        with pytest.raises(polylimit.ClosedError):
            await lim.aacquire(key, timeout=0)

    asyncio.run(main())


# -- (c) check_many: each key its own error ------------------------------------------


def test_check_many_reports_the_failing_keys_own_error(url, key):
    with polylimit.Client(url) as client:
        lim = client.limiter("2/minute")
        keys = [key + ":a", "", key + ":b", key + ":a", b"", key + ":a"]
        out = lim.check_many(keys, return_exceptions=True)
        kinds = [type(x).__name__ for x in out]
        assert kinds == ["Decision", "InvalidArgument", "Decision", "Decision", "InvalidArgument", "Decision"]
        assert [x.allowed for x in (out[0], out[2], out[3], out[5])] == [True, True, True, False]
        for i in (1, 4):
            assert str(out[i]) == "key is empty" and out[i].index == i
            assert out[i].code == "POLYLIMIT_EINVALID" and out[i].status == polylimit.InvalidArgument.status
        assert isinstance(out[1], ValueError)
        # Raised: the first failing key's status, its index, and every key's outcome.
        with pytest.raises(polylimit.InvalidArgument) as info:
            lim.check_many([key + ":c", key + ":d", ""])
        e = info.value
        assert e.index == 2 and str(e) == "keys[2]: key is empty"
        assert [type(x).__name__ for x in e.results] == ["Decision", "Decision", "InvalidArgument"]
        assert str(e.results[2]) == "key is empty"
        assert lim.peek(key + ":c").remaining == 1  # decided and consumed all the same


def test_check_many_refused_as_a_whole_raises_always():
    with polylimit.Client("memory://") as client:
        lim = client.limiter("5/s")
        too_many = _vocabulary.BOUNDS["batch"][1] + 1
        for return_exceptions in (False, True):
            with pytest.raises(polylimit.InvalidArgument) as info:
                lim.check_many(["k"] * too_many, return_exceptions=return_exceptions)
            assert str(info.value) == "batch = %d is out of range 0..%d" % (too_many, too_many - 1)
            assert info.value.index is None
