#!/usr/bin/env python3
"""polylimit against `limits`: asyncio (acheck vs limits.aio) and threads.

One redis-server, started here on a free loopback port. Both libraries run
an exact sliding window (polylimit's default sliding log; limits'
moving-window strategy), one script call per check, on two paths:

- allow: "1000 per minute" over 10,000 keys: nearly every check is admitted
  and writes;
- deny:  "10 per hour" over 100 keys filled to the limit before the timed
  part: every check is denied (polylimit's deny cache stays off, so both
  libraries make the round trip).

Configurations: asyncio with 1 and 64 tasks on one loop (polylimit
``acheck``, completed on the loop, with and without coalescing (the
default's cost or gain on distinct keys); ``limits.aio`` over coredis, its default,
and over redis.asyncio), and 8 threads sharing one client (polylimit
``check`` vs ``limits`` over redis-py). Every configuration is measured
--runs times, repetitions interleaved (each repetition runs every
configuration, the libraries' order alternating), each for --seconds:
calls/s = calls completed / measured wall time. The table shows the median
and min..max, and the ratio of polylimit's median to each limits row's
median from the same run.

    python bench/python/bench_async.py [--seconds 2] [--runs 3]

Needs polylimit (pip install .), limits[async-redis] and redis
(pip install 'limits[async-redis]' redis) and redis-server on PATH.
A program that prints a table, not a test.
"""

import argparse
import asyncio
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

PATHS = {
    # path: (limit, window seconds, keys)
    "allow": (1000, 60, 10_000),
    "deny": (10, 3600, 100),
}


# -- redis-server ---------------------------------------------------------------


def start_redis():
    exe = shutil.which("redis-server")
    if exe is None:
        sys.exit("redis-server is not on PATH")
    directory = tempfile.mkdtemp(prefix="polylimit-bench-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            exe,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            directory,
            "--protected-mode",
            "no",
            "--logfile",
            os.path.join(directory, "redis.log"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as c:
                c.sendall(b"PING\r\n")
                if c.recv(16).startswith(b"+PONG"):
                    return proc, port, directory
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("redis-server did not start")


def redis_command(port, line):
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.sendall(line.encode() + b"\r\n")
        return c.recv(65536).decode(errors="replace")


# -- the contenders -------------------------------------------------------------
# A factory takes (url, path) and returns (check, close): check(key) -> bool,
# an async function for the asyncio modes, a plain one for threads. Async
# factories are coroutines, run on the loop that measures.


def _pl_async(coalesce):
    async def factory(url, path):
        import polylimit

        limit, window, _ = PATHS[path]
        client = polylimit.Client(url, coalesce=coalesce)
        acheck = client.limiter(limit=limit, window=window, prefix="b" + path).acheck

        async def check(key):
            return (await acheck(key)).allowed

        return check, client.close

    return factory


def _limits_aio(implementation):
    async def factory(url, path):
        from limits import RateLimitItemPerSecond
        from limits.aio import storage, strategies

        limit, window, _ = PATHS[path]
        store = storage.RedisStorage("async+" + url, implementation=implementation)
        hit = strategies.MovingWindowRateLimiter(store).hit
        item = RateLimitItemPerSecond(limit, window)

        async def check(key):
            return await hit(item, key)

        return check, lambda: None

    return factory


def pl_sync(url, path):
    import polylimit

    limit, window, _ = PATHS[path]
    client = polylimit.Client(url)
    check_ = client.limiter(limit=limit, window=window, prefix="b" + path).check

    def check(key):
        return check_(key).allowed

    return check, client.close


def limits_sync(url, path):
    from limits import RateLimitItemPerSecond, storage, strategies

    limit, window, _ = PATHS[path]
    store = storage.storage_from_string(url)
    hit = strategies.MovingWindowRateLimiter(store).hit
    item = RateLimitItemPerSecond(limit, window)

    def check(key):
        return hit(item, key)

    return check, lambda: None


# mode -> [(library label, factory)]; the first is polylimit, the ratio's numerator.
MODES = {
    # Without coalescing: what the default costs or gains on distinct keys.
    "asyncio": [
        ("polylimit acheck", _pl_async(True)),
        ("pl, no coalescing", _pl_async(False)),
        ("limits.aio coredis", _limits_aio("coredis")),
        ("limits.aio redispy", _limits_aio("redispy")),
    ],
    "threads": [("polylimit check", pl_sync), ("limits redis-py", limits_sync)],
}


def keys_for(path):
    return ["user:%d" % i for i in range(PATHS[path][2])]


# -- measurement ----------------------------------------------------------------


async def measure_async(factory, url, path, tasks, seconds):
    """Returns (calls/s, fraction admitted, calls that raised)."""
    check, close = await factory(url, path)
    keys = keys_for(path)
    try:
        # Warm up: connections (as many as `tasks` use), scripts; and on the
        # deny path every key filled to its limit.
        fill = PATHS[path][0] if path == "deny" else 1
        for _ in range(fill):
            await asyncio.gather(*(check(k) for k in keys[:100]))
        await asyncio.gather(*(check("warm:%d" % i) for i in range(tasks)))
        counts = [0] * tasks
        admitted = [0] * tasks
        errors = [0] * tasks
        stop = [False]

        async def worker(i):
            n, ok, failed, nkeys = i * 7919, 0, 0, len(keys)
            while not stop[0]:
                try:
                    ok += await check(keys[n % nkeys])
                except Exception:  # counted, not fatal: a loaded machine can time a call out
                    failed += 1
                n += 1
            counts[i] = n - i * 7919
            admitted[i] = ok
            errors[i] = failed

        started = time.perf_counter()
        running = [asyncio.ensure_future(worker(i)) for i in range(tasks)]
        await asyncio.sleep(seconds)
        stop[0] = True
        await asyncio.gather(*running)
        elapsed = time.perf_counter() - started
        return sum(counts) / elapsed, sum(admitted) / max(1, sum(counts)), sum(errors)
    finally:
        close()


def measure_threads(factory, url, path, threads, seconds):
    check, close = factory(url, path)
    keys = keys_for(path)
    try:
        fill = PATHS[path][0] if path == "deny" else 1
        for _ in range(fill):
            for k in keys[:100]:
                check(k)
        counts = [0] * threads
        admitted = [0] * threads
        errors = [0] * threads
        stop = [False]
        barrier = threading.Barrier(threads + 1)

        def worker(i):
            n, ok, failed, nkeys = i * 7919, 0, 0, len(keys)
            barrier.wait()
            while not stop[0]:
                try:
                    ok += check(keys[n % nkeys])
                except Exception:
                    failed += 1
                n += 1
            counts[i] = n - i * 7919
            admitted[i] = ok
            errors[i] = failed

        workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        barrier.wait()
        started = time.perf_counter()
        time.sleep(seconds)
        stop[0] = True
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - started
        return sum(counts) / elapsed, sum(admitted) / max(1, sum(counts)), sum(errors)
    finally:
        close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="duration of one measurement")
    ap.add_argument("--runs", type=int, default=3, help="interleaved repetitions (median, min..max)")
    ap.add_argument("--tasks", default="1,64", help="asyncio tasks per configuration")
    ap.add_argument("--threads", type=int, default=8, help="threads of the threaded configuration")
    args = ap.parse_args()

    configs = [(path, "asyncio", int(t)) for path in PATHS for t in args.tasks.split(",")]
    configs += [(path, "threads", args.threads) for path in PATHS]
    proc, port, directory = start_redis()
    url = "redis://127.0.0.1:%d" % port
    rates = {}  # (path, mode, n, library) -> [calls/s per run]
    admitted = {}  # the same -> [fraction admitted per run]
    errors = {}  # the same -> calls that raised, all runs
    load = [os.getloadavg()[0]]
    try:
        for run in range(args.runs):
            for path, mode, n in configs:
                contenders = MODES[mode] if run % 2 == 0 else MODES[mode][::-1]
                for library, factory in contenders:
                    redis_command(port, "FLUSHALL")
                    if mode == "asyncio":
                        rate, ok, failed = asyncio.run(measure_async(factory, url, path, n, args.seconds))
                    else:
                        rate, ok, failed = measure_threads(factory, url, path, n, args.seconds)
                    rates.setdefault((path, mode, n, library), []).append(rate)
                    admitted.setdefault((path, mode, n, library), []).append(ok)
                    errors[(path, mode, n, library)] = errors.get((path, mode, n, library), 0) + failed
                    print(
                        "  run %d %-5s %-7s %2d %-20s %9.0f calls/s  admitted %.3f  errors %d"
                        % (run + 1, path, mode, n, library, rate, ok, failed),
                        file=sys.stderr,
                    )
            load.append(os.getloadavg()[0])
        server = redis_command(port, "INFO server")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        shutil.rmtree(directory, ignore_errors=True)

    import limits
    import polylimit

    redis_version = next(
        (line.split(":", 1)[1].strip() for line in server.splitlines() if line.startswith("redis_version:")), "?"
    )
    print()
    print(
        "polylimit %s (sliding log) vs limits %s (moving window); Python %s; redis-server %s; %d cores"
        % (polylimit.__version__, limits.__version__, sys.version.split()[0], redis_version, os.cpu_count() or 0)
    )
    print(
        "%d interleaved runs of %.1f s per row; 1-min load average %s"
        % (args.runs, args.seconds, " -> ".join("%.1f" % x for x in load))
    )
    print(
        "allow: %d per %d s over %d keys; deny: %d per %d s over %d keys filled first"
        % (PATHS["allow"] + PATHS["deny"])
    )
    print()
    header = "| %-5s | %-7s | %5s | %-20s | %26s | %9s | %6s | %20s |" % (
        "path",
        "mode",
        "n",
        "library",
        "calls/s median (min..max)",
        "admitted",
        "errors",
        "pl/this (min..max)",
    )
    print(header)
    print("|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|")
    for path, mode, n in configs:
        ours_runs = rates[(path, mode, n, MODES[mode][0][0])]
        ours = statistics.median(ours_runs)
        for library, _ in MODES[mode]:
            r = rates[(path, mode, n, library)]
            med = statistics.median(r)
            cell = "%.0f (%.0f..%.0f)" % (med, min(r), max(r))
            per_run = [a / b for a, b in zip(ours_runs, r)]  # the same repetition
            ratio = (
                "" if library == MODES[mode][0][0] else "%.2fx (%.1f..%.1f)" % (ours / med, min(per_run), max(per_run))
            )
            print(
                "| %-5s | %-7s | %5d | %-20s | %26s | %9.3f | %6d | %20s |"
                % (
                    path,
                    mode,
                    n,
                    library,
                    cell,
                    statistics.median(admitted[(path, mode, n, library)]),
                    errors[(path, mode, n, library)],
                    ratio,
                )
            )
    print()
    print(
        "pl/this: polylimit's median calls/s over this row's median, same run (in brackets: the range of the "
        "ratios within each repetition); errors: calls that raised (all runs; counted in calls/s)"
    )


if __name__ == "__main__":
    main()
