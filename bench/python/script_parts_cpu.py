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

A second table weighs what a call costs apart from its decision: polylimit's
GCRA check script (one key a call, as the library sends it) against a probe
that decides several keys in one call (the same GCRA arithmetic and one
GET and one SET per key, one TIME for all), admitting, per decision: the
time in EVALSHA and the Redis main thread's whole CPU time (INFO cpu, which
also counts reading the commands and writing the replies). The probe is not
the library's: it measures what deciding the checks of distinct keys in one
call would save.

    python script_parts_cpu.py --port PORT [--reps 7] [--calls 4000]

Redis times each call in whole microseconds, so every figure reads up to
~1 us low, alike for every row: compare rows of one run. Needs: pip install
redis. A program that prints, not a test.
"""

import argparse
import os
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
    ("+ HSET of 2 fields", "redis.call('HSET', KEYS[1], 'w', '1700000000000000', 'n', '5') return 1", ["parts:h"], []),
    ("+ PEXPIRE", "redis.call('PEXPIRE', KEYS[1], '3600000') return 1", ["parts:h"], []),
    (
        "+ 6 local functions",
        "local function a() end local function b() end local function c() end "
        "local function d() end local function e() end local function f() end return 1",
        [],
        [],
    ),
    ("+ 8 tables", "local a, b, c, d, e, f, g, h = {}, {}, {}, {}, {}, {}, {}, {} return 1", [], []),
    ("reply: a 5-number table", "return {1, 100, 99, 0, 3600000}", [], []),
    ("reply: 5 numbers in one string", "return string.format('%d %d %d %d %d', 1, 100, 99, 0, 3600000)", [], []),
]


# The probe: GCRA for every key of the call at one server instant, the
# decisions in one string; ARGV: window_us, capacity, interval_us.
MULTI_GCRA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window, cap, interval = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tau, out = interval * cap, {}
for i = 1, #KEYS do
  local tat = now
  local v = redis.call('GET', KEYS[i])
  if v then
    tat = tonumber(v)
    if tat < now then tat = now end
  end
  local allowed, retry_ms = 1, 0
  local over = tat + interval - now - tau
  if over > 0 then allowed, retry_ms = 0, math.ceil(over / 1000) else tat = tat + interval end
  local remaining = math.floor((tau - (tat - now)) / interval)
  out[i] = string.format('%d %d %d %d %d', allowed, cap, remaining, retry_ms, math.ceil((tat - now) / 1000))
  if allowed == 1 then
    redis.call('SET', KEYS[i], string.format('%d', tat), 'PX', string.format('%d', math.ceil((tat - now) / 1000) + 1))
  end
end
return table.concat(out, ' ')
"""
BATCHES = (1, 4, 16, 64)


def cpu_us(r):
    """The Redis main thread's CPU time so far (user + system), in us."""
    info = r.info("cpu")
    return (info["used_cpu_user_main_thread"] + info["used_cpu_sys_main_thread"]) * 1e6


def batches(r, reps, decisions):
    """The second table: us per decision, one key a call against N a call."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "core", "scripts")
    with open(os.path.join(root, "single", "common", "prelude.lua")) as f:
        prelude = f.read()
    with open(os.path.join(root, "single", "gcra.lua")) as f:
        single = "#!lua\n" + prelude + "\n" + f.read()  # as core/cmake/embed_scripts.cmake joins them
    rows = [("polylimit GCRA check script", r.script_load(single), 1)]
    rows += [(f"probe, {n} key{'s' if n > 1 else ''} a call", r.script_load(MULTI_GCRA), n) for n in BATCHES]
    window, cap = 1_000_000_000, 1_000_000  # admits every decision of a run
    times = [([], []) for _ in rows]
    for rep in range(reps):
        order = list(range(len(rows)))
        random.shuffle(order)
        for i in order:
            _, sha, n = rows[i]
            r.config_resetstat()
            cpu0 = cpu_us(r)
            p = r.pipeline(transaction=False)
            for c in range(decisions // n):
                keys = [f"parts:gcra:{i}:{(c * n + k) % 64}" for k in range(n)]
                if i == 0:  # the check script: its own arguments
                    p.evalsha(sha, 1, *keys, "check", "1", "", window, cap, window // cap)
                else:
                    p.evalsha(sha, n, *keys, window, cap, window // cap)
                if c % 100 == 99:
                    p.execute()
            p.execute()
            cpu = cpu_us(r) - cpu0
            st = r.info("commandstats")["cmdstat_evalsha"]
            done = st["calls"] * n
            times[i][0].append(st["usec"] / done)
            times[i][1].append(cpu / done)
    base = statistics.median(times[0][1])
    print(
        f"\nGCRA decisions, admitting, 64 keys; {reps} interleaved repetitions of {decisions} decisions; "
        "us per decision, median (min..max)\n"
    )
    print(f"| {'calls':28} | {'in EVALSHA':>20} | {'Redis main thread':>20} | {'vs one a call':>13} |")
    print(f"|{'-' * 30}|{'-' * 22}|{'-' * 22}|{'-' * 15}|")
    for (name, _, _), (script, whole) in zip(rows, times):
        cells = [f"{statistics.median(t):.2f} ({min(t):.2f}..{max(t):.2f})" for t in (script, whole)]
        print(f"| {name:28} | {cells[0]:>20} | {cells[1]:>20} | {statistics.median(whole) / base:12.2f}x |")


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
    print(
        f"redis-server {r.info('server')['redis_version']}; {a.reps} interleaved repetitions of {a.calls} calls; "
        "us per call (cmdstat_evalsha), median (min..max)\n"
    )
    print(f"| {'script':32} | {'us per call':>20} | {'vs empty':>8} |")
    print(f"|{'-' * 34}|{'-' * 22}|{'-' * 10}|")
    for (name, _, _, _), t in zip(PARTS, times):
        m = statistics.median(t)
        cell = f"{m:.2f} ({min(t):.2f}..{max(t):.2f})"
        print(f"| {name:32} | {cell:>20} | {m - base:+8.2f} |")
    batches(r, a.reps, a.calls * 4)


if __name__ == "__main__":
    main()
