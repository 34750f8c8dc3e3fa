"""Redis-side conditions seen from Python: out of memory is NoMemory for
every algorithm, nothing is written, and a failure policy does not hide it."""

import polylimit
import pytest

ALGORITHMS = ["sliding_log", "sliding_counter", "fixed_window", "gcra"]


def test_out_of_memory_is_distinct_and_consumes_nothing(private_redis):
    private_redis.command("CONFIG", "SET", "maxmemory-policy", "noeviction")
    blob = "x" * (64 * 1024)
    for i in range(64):
        private_redis.command("SET", "junk:%d" % i, blob)
    private_redis.command("CONFIG", "SET", "maxmemory", "1mb")
    with polylimit.Client(private_redis.url) as client:
        for algorithm in ALGORITHMS:
            limiter = client.limiter(
                "5/minute; 50/hour", algorithm=algorithm, on_failure="open", prefix="oom-" + algorithm
            )
            with pytest.raises(polylimit.NoMemory) as raised:
                limiter.check("k")
            assert raised.value.code == "POLYLIMIT_ENOMEM", algorithm
            assert "OOM" in str(raised.value), algorithm
            assert private_redis.command("DBSIZE") == 64, algorithm  # nothing written
        private_redis.command("CONFIG", "SET", "maxmemory", "0")
        assert client.limiter("5/minute", prefix="oom-after").check("k")
