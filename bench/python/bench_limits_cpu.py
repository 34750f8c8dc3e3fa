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

By hand: python bench_limits_cpu.py --port PORT [--calls 4000] [--prefix p] [--batch N]
(--batch N: the timed script calls, as limits' own hit() computes them, go N
per pipeline, as bench_script_cpu sends its own; bench_script_cpu passes 100)
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


class Batching:
    """Stands in for one of the storage's scripts (a redis-py Script): while
    `sink` is a list, a call goes there (this stand-in, the KEYS and ARGV the
    library computed) instead of to Redis, and answers `stand_in` so that
    the library's hit() returns; else the call goes through."""

    def __init__(self, name, script, stand_in):
        self.name, self.script, self.stand_in, self.sink = name, script, stand_in, None

    def __call__(self, keys=None, args=None, client=None):
        if self.sink is None:
            return self.script(keys=keys, args=args, client=client)
        self.sink.append((self, keys, args))
        return self.stand_in


def hits(client, limiter, scripts, item, names, calls, batch, admitted):
    """`calls` hits of cost 1 on `names` in turn, their verdicts. batch 1:
    hit() itself, one round trip each (the library's own way); batch N: the
    script calls the library's hit() makes, sent N per pipeline, each reply
    read by admitted(stand-in, reply)."""
    if batch == 1:
        return [limiter.hit(item, names[i % len(names)]) for i in range(calls)]
    out = []
    for at in range(0, calls, batch):
        end = min(calls, at + batch)
        sink = []
        for s in scripts:
            s.sink = sink
        try:
            for i in range(at, end):
                limiter.hit(item, names[i % len(names)])
        finally:
            for s in scripts:
                s.sink = None
        if len(sink) != end - at:
            raise RuntimeError(f"{len(sink)} script calls for {end - at} hits")
        pipe = client.pipeline(transaction=False)
        for s, keys, args in sink:
            s.script(keys=keys, args=args, client=pipe)
        out += [admitted(s, r) for (s, _, _), r in zip(sink, pipe.execute())]
    return out


def measure(client, limiter, scripts, scenario, units, admit, calls, prefix, batch):
    """usec per timed hit: keys filled with `units`, then `calls` hits of cost 1."""
    item = RateLimitItemPerHour(2 * units if admit else units)
    # Admit: each key takes `units` more hits; deny: full keys, any number.
    keys = math.ceil(calls / units) if admit else 4
    names = [f"{prefix}:{scenario}:{k}" for k in range(keys)]
    for name in names:
        if not limiter.hit(item, name, cost=units):
            raise RuntimeError(f"{scenario}: prefill not admitted")
    client.config_resetstat()
    # The fixed window's script answers the count after the increment.
    admitted = lambda s, r: int(r) <= item.amount if s.name == "lua_incr_expire" else bool(r)  # noqa: E731
    for ok in hits(client, limiter, scripts, item, names, calls, batch, admitted):
        if ok != admit:
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
    ap.add_argument(
        "--batch",
        type=int,
        default=1,
        help="timed calls per round trip: 1, each hit() on its own; N, the library's script "
        "calls sent N per pipeline, as bench_script_cpu sends its own",
    )
    args = ap.parse_args()
    url = f"redis://127.0.0.1:{args.port}"
    client = redis.Redis.from_url(url)
    st = storage.RedisStorage(url)
    # Each strategy's hit() runs one of these; a stand-in answer that admits.
    scripts = [
        Batching(name, getattr(st, name), stand_in)
        for name, stand_in in (
            ("lua_acquire_moving_window", 1),
            ("lua_acquire_sliding_window", 1),
            ("lua_incr_expire", 0),
        )
    ]
    for s in scripts:
        setattr(st, s.name, s)
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
                us = measure(
                    client,
                    limiter,
                    scripts,
                    scenario.replace(" ", "-"),
                    units,
                    admit,
                    args.calls,
                    args.prefix,
                    max(1, args.batch),
                )
                print(f"{peer}\t{scenario}\t{us:.3f}\t{args.calls}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
