#!/usr/bin/env python3
"""Redis CPU per decision of the `limits` package, the peer of bench_script_cpu.

Runs `limits`' moving window (an exact log in a LIST: polylimit's sliding_log),
fixed window (fixed_window) and sliding window counter (sliding_counter) on
Redis storage against a running redis-server, with the scenarios
bench_script_cpu runs: admit and deny paths, keys holding ~10 / 100 / 1000
units, window 1 h. Per scenario: fresh keys, an untimed prefill, CONFIG
RESETSTAT, the timed hits, then INFO commandstats: cmdstat_evalsha usec /
calls (each hit of these strategies is one EVALSHA). Prints one line per
scenario: peer name, scenario name, usec per decision, calls.

bench_script_cpu runs it once per repetition against its own server, in the
same run, when given its command line (see bench/README.md):

    bench_script_cpu 5 "" "build/venv-bench/bin/python bench/python/bench_limits_cpu.py"

By hand: python bench_limits_cpu.py --port PORT [--calls 4000] [--prefix p]
Needs: pip install limits redis. A program that prints, not a test.
"""

import argparse
import importlib.metadata
import math
import sys

import redis
from limits import RateLimitItemPerHour, storage, strategies


def commandstats(client):
    """{command: (calls, usec)} from INFO commandstats."""
    out = {}
    for name, fields in client.info("commandstats").items():
        out[name.removeprefix("cmdstat_")] = (fields["calls"], fields["usec"])
    return out


def measure(client, limiter, scenario, units, admit, calls, prefix):
    """usec per timed hit: keys filled with `units`, then `calls` hits of cost 1."""
    item = RateLimitItemPerHour(2 * units if admit else units)
    # Admit: each key takes `units` more hits; deny: full keys, any number.
    keys = math.ceil(calls / units) if admit else 4
    names = [f"{prefix}:{scenario}:{k}" for k in range(keys)]
    for name in names:
        if not limiter.hit(item, name, cost=units):
            raise RuntimeError(f"{scenario}: prefill not admitted")
    client.config_resetstat()
    for i in range(calls):
        if limiter.hit(item, names[i % keys]) != admit:
            raise RuntimeError(f"{scenario}: a timed hit was not {'admitted' if admit else 'denied'}")
    stats = commandstats(client)
    evalsha_calls, usec = stats.get("evalsha", (0, 0))
    if evalsha_calls != calls:
        raise RuntimeError(f"{scenario}: Redis counted {evalsha_calls} EVALSHA for {calls} hits")
    return usec / evalsha_calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--prefix", default="limits")
    args = ap.parse_args()
    url = f"redis://127.0.0.1:{args.port}"
    client = redis.Redis.from_url(url)
    st = storage.RedisStorage(url)
    # The version is in the name: the figures are that release's scripts'.
    name = f"limits {importlib.metadata.version('limits')}"
    peers = [
        (f"{name} moving window", "sliding_log", strategies.MovingWindowRateLimiter(st)),
        (f"{name} sliding window counter", "sliding_counter", strategies.SlidingWindowCounterRateLimiter(st)),
        (f"{name} fixed window", "fixed_window", strategies.FixedWindowRateLimiter(st)),
    ]
    for peer, algorithm, limiter in peers:
        for admit in (True, False):
            for units in (10, 100, 1000):
                scenario = f"{algorithm} {'admit' if admit else 'deny'} {units}"
                us = measure(client, limiter, scenario.replace(" ", "-"), units, admit, args.calls, args.prefix)
                print(f"{peer}\t{scenario}\t{us:.3f}\t{args.calls}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
