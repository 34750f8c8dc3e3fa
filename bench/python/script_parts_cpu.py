#!/usr/bin/env python3
"""Where a script's Redis time goes: the parts of a decision, one at a time.

Runs tiny Lua scripts, each adding one part to an empty one (reading the
arguments, the server's TIME, one read or write, the reply as a table or as
one string), against a running redis-server, and prints the server's time
per call (CONFIG RESETSTAT, the timed EVALSHA calls pipelined by 100, INFO
commandstats: cmdstat_evalsha usec / calls): median (min..max) of
interleaved repetitions, and each part's cost above the empty script. It
is the breakdown behind the single-check scripts (core/scripts/single/, see
bench/README.md, bench_script_cpu).

    python script_parts_cpu.py --port PORT [--reps 7] [--calls 4000]

Redis times each call in whole microseconds, so every figure reads up to
~1 us low, alike for every row: compare rows of one run. Needs: pip install
redis. A program that prints, not a test.
"""

import argparse
import random
import statistics

import redis

# name, script, KEYS, ARGV. The keys hold what their commands expect.
ARGS = ("check", "1", "", "100", "3600000000")
PARTS = [
    ("empty script", "return 1", [], []),
    ("+ 1 key, 5 arguments", "return 1", ["parts:s"], list(ARGS)),
    ("+ TIME", "redis.call('TIME') return 1", [], []),
    ("+ GET", "redis.call('GET', KEYS[1]) return 1", ["parts:s"], []),
    ("+ HMGET of 2 fields", "redis.call('HMGET', KEYS[1], 'w', 'n') return 1", ["parts:h"], []),
    ("+ HSET of 2 fields", "redis.call('HSET', KEYS[1], 'w', '1700000000000000', 'n', '5') return 1",
     ["parts:h"], []),
    ("+ PEXPIRE", "redis.call('PEXPIRE', KEYS[1], '3600000') return 1", ["parts:h"], []),
    ("+ 6 local functions", "local function a() end local function b() end local function c() end "
     "local function d() end local function e() end local function f() end return 1", [], []),
    ("+ 8 tables", "local a, b, c, d, e, f, g, h = {}, {}, {}, {}, {}, {}, {}, {} return 1", [], []),
    ("reply: a 5-number table", "return {1, 100, 99, 0, 3600000}", [], []),
    ("reply: 5 numbers in one string", "return string.format('%d %d %d %d %d', 1, 100, 99, 0, 3600000)", [], []),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=4000)
    a = ap.parse_args()
    r = redis.Redis(host=a.host, port=a.port)
    r.set("parts:s", "1700000000000000")
    r.hset("parts:h", mapping={"w": "1700000000000000", "n": "5"})
    shas = [r.script_load(body) for _, body, _, _ in PARTS]
    times = [[] for _ in PARTS]
    for _ in range(a.reps):
        order = list(range(len(PARTS)))
        random.shuffle(order)
        for i in order:
            _, _, keys, argv = PARTS[i]
            r.config_resetstat()
            p = r.pipeline(transaction=False)
            for n in range(a.calls):
                p.evalsha(shas[i], len(keys), *keys, *argv)
                if n % 100 == 99:
                    p.execute()
            p.execute()
            st = r.info("commandstats")["cmdstat_evalsha"]
            if st["calls"] != a.calls:
                raise SystemExit(f"Redis counted {st['calls']} calls, sent {a.calls}")
            times[i].append(st["usec"] / st["calls"])
    base = statistics.median(times[0])
    print(f"redis-server {r.info('server')['redis_version']}; {a.reps} interleaved repetitions of {a.calls} calls; "
          "us per call (cmdstat_evalsha), median (min..max)\n")
    print(f"| {'script':32} | {'us per call':>20} | {'vs empty':>8} |")
    print(f"|{'-' * 34}|{'-' * 22}|{'-' * 10}|")
    for (name, _, _, _), t in zip(PARTS, times):
        m = statistics.median(t)
        cell = f"{m:.2f} ({min(t):.2f}..{max(t):.2f})"
        print(f"| {name:32} | {cell:>20} | {m - base:+8.2f} |")


if __name__ == "__main__":
    main()
