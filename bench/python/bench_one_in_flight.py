#!/usr/bin/env python3
"""One call in flight: polylimit's ``acheck`` against its blocking ``check``,
and the same comparison for a bare Redis round trip, which shows what the
event loop itself costs.

Rows, each on its own connection to one redis-server started here (a free
loopback port), one call after another:

- ``check``: polylimit's blocking check (fixed window, a limit nobody
  reaches, 1,000 keys);
- ``acheck``: the same checks awaited on an asyncio loop (completed from
  the library's queue, ``docs/transport.md``);
- ``PING, blocking socket``: ``sendall`` + ``recv`` on a plain socket;
- ``PING, asyncio Protocol``: the least an asyncio client does for one
  round trip: ``transport.write``, a Future that ``data_received`` resolves,
  ``await``. No library; this is the loop's own cost.

and, when uvloop is installed, the two asyncio rows again on a uvloop loop.
Every row is measured --runs times, interleaved (each round runs every row),
for --calls calls; the table shows the median calls/s with min..max, the CPU
time of this process per call (``time.process_time``), and the ratio of
each asynchronous row's median to its blocking row's (``acheck`` to
``check``, the asyncio PING to the blocking PING).

    python bench/python/bench_one_in_flight.py [--calls 5000] [--runs 7]

Needs polylimit (pip install .) and redis-server on PATH; uvloop optional.
A program that prints a table, not a test.
"""

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_async import start_redis  # noqa: E402


def timed(calls, run):
    """(calls/s, CPU us per call) of run(), which makes `calls` calls."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return calls / (time.perf_counter() - wall), (time.process_time() - cpu) / calls * 1e6


class _Pong(asyncio.Protocol):
    waiter = None  # the Future of the PING in flight

    def data_received(self, data):
        if not self.waiter.done():  # "+PONG\r\n" comes in one piece on loopback
            self.waiter.set_result(data)


def rows(url, port, calls, loops):
    import polylimit

    client = polylimit.Client(url)
    limiter = client.limiter(limit=1_000_000, window=60, algorithm="fixed_window", prefix="one")
    keys = ["k%d" % i for i in range(1000)]

    def check():
        for i in range(calls):
            limiter.check(keys[i % 1000])

    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def ping():
        for _ in range(calls):
            sock.sendall(b"PING\r\n")
            sock.recv(64)

    def on(loop, coroutine):
        return lambda: timed(calls, lambda: loop.run_until_complete(coroutine()))

    out = [("check", None, lambda: timed(calls, check)), ("PING, blocking socket", None, lambda: timed(calls, ping))]
    for name, loop in loops:

        async def acheck():
            for i in range(calls):
                await limiter.acheck(keys[i % 1000])

        transport, pong = loop.run_until_complete(loop.create_connection(_Pong, "127.0.0.1", port))

        async def aping(loop=loop, transport=transport, pong=pong):
            for _ in range(calls):
                pong.waiter = loop.create_future()
                transport.write(b"PING\r\n")
                await pong.waiter

        out.append(("acheck, %s" % name, "check", on(loop, acheck)))
        out.append(("PING, %s Protocol" % name, "PING, blocking socket", on(loop, aping)))
    return out, client


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=5000, help="calls per measurement")
    ap.add_argument("--runs", type=int, default=7, help="interleaved repetitions (median, min..max)")
    args = ap.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("redis-server is not on PATH")

    loops = [("asyncio", asyncio.new_event_loop())]
    try:
        import uvloop

        loops.append(("uvloop", uvloop.new_event_loop()))
    except ImportError:
        print("(uvloop not installed: asyncio rows only)")

    proc, port, _ = start_redis()
    try:
        table, client = rows("redis://127.0.0.1:%d" % port, port, args.calls, loops)
        for _, _, run in table:  # warm up: connections, the script
            run()
        got = {name: [] for name, _, _ in table}
        for _ in range(args.runs):
            for name, _, run in table:
                got[name].append(run())
        client.close()
    finally:
        proc.terminate()
        proc.wait()

    median = {name: statistics.median(r[0] for r in v) for name, v in got.items()}
    print(
        "One call in flight, %d calls a measurement, medians of %d interleaved runs (Python %s)"
        % (args.calls, args.runs, sys.version.split()[0])
    )
    print("| row | calls/s (min..max) | CPU us/call | vs its blocking row |")
    print("|---|---:|---:|---:|")
    for name, base, _ in table:
        v = got[name]
        ratio = "%.2fx" % (median[name] / median[base]) if base else "-"
        print(
            "| %s | %.0f (%.0f..%.0f) | %.1f | %s |"
            % (
                name,
                median[name],
                min(r[0] for r in v),
                max(r[0] for r in v),
                statistics.median(r[1] for r in v),
                ratio,
            )
        )


if __name__ == "__main__":
    main()
