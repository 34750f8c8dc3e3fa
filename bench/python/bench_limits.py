#!/usr/bin/env python3
"""polylimit against the `limits` package (moving window on Redis storage).

Both libraries run the same workload against the same redis-server, which the
benchmark starts itself on a free loopback port: checks of "1000 per minute"
spread over 10,000 keys (so almost every check is admitted and both do their
full write path), single-threaded and with 8 threads. Each configuration runs
for --seconds, --runs times; the table shows medians.

    python bench/python/bench_limits.py [--seconds 2] [--runs 3] [--threads 8]

Needs: polylimit (pip install .), limits and redis (pip install limits redis),
and redis-server on PATH. This is a program that prints a table, not a test.
"""

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

KEYS = 10_000
LIMIT = 1000
WINDOW_S = 60


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


def flushall(port):
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.sendall(b"FLUSHALL\r\n")
        c.recv(16)


# -- the contenders ---------------------------------------------------------------
# Each factory returns check(key) -> bool, safe to call from many threads.


def make_polylimit(url, threads):
    import polylimit

    client = polylimit.Client(url, pool_size=max(threads, 1))
    limiter = client.limiter(limit=LIMIT, window=WINDOW_S, prefix="bench")

    def check(key, _check=limiter.check):
        return _check(key).allowed

    return check, client.close


def make_limits(url, threads):
    from limits import RateLimitItemPerMinute, storage, strategies

    store = storage.storage_from_string(url)
    limiter = strategies.MovingWindowRateLimiter(store)
    item = RateLimitItemPerMinute(LIMIT)

    def check(key, _hit=limiter.hit):
        return _hit(item, key)

    return check, lambda: None


def make_polylimit_memory(url, threads):
    # The same binding with no network: what the Python and C++ layers cost.
    return make_polylimit("memory://", threads)


CONTENDERS = {"polylimit": make_polylimit, "limits": make_limits, "pl-memory": make_polylimit_memory}


def ceiling(port, clients, seconds):
    """redis-benchmark running polylimit's own script (EVALSHA, no Python):
    what the server and loopback allow. Returns (requests/s, p50 us) or None."""
    exe = shutil.which("redis-benchmark")
    scripts = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "core", "scripts")
    parts = [os.path.join(scripts, "common", "prelude.lua"), os.path.join(scripts, "sliding_log.lua")]
    if exe is None or not all(os.path.exists(p) for p in parts):
        return None
    # The library embeds the prelude followed by the script (core/cmake/embed_scripts.cmake).
    with open(parts[0]) as f, open(parts[1]) as g:
        body = f.read() + "\n" + g.read()
    sha = subprocess.run(
        ["redis-cli", "-p", str(port), "SCRIPT", "LOAD", body], check=True, capture_output=True, text=True
    ).stdout.strip()
    n = int(max(clients, 1) * 15000 * seconds)
    window_us = WINDOW_S * 1_000_000
    out = subprocess.run(
        [
            exe,
            "-p",
            str(port),
            "-c",
            str(clients),
            "-n",
            str(n),
            "-r",
            str(KEYS),
            "-q",
            # The script's arguments (core/scripts/common/prelude.lua): op, cost, now_us ('' for
            # TIME), then per limit: limit, window_us (no block: no block_us).
            "evalsha",
            sha,
            "1",
            "bench:__rand_int__",
            "check",
            "1",
            "",
            str(LIMIT),
            str(window_us),
        ],
        capture_output=True,
        text=True,
    ).stdout
    m = re.search(r"([0-9.]+) requests per second, p50=([0-9.]+) msec", out)
    return (float(m.group(1)), float(m.group(2)) * 1000) if m else None


# -- measurement --------------------------------------------------------------------


def run(check, threads, seconds):
    """Calls check() on rotating keys from `threads` threads for `seconds`.
    Returns (checks per second, per-call latencies in microseconds)."""
    latencies = [[] for _ in range(threads)]
    counts = [0] * threads
    barrier = threading.Barrier(threads + 1)
    stop_at = [0.0]

    def worker(i):
        lat = latencies[i]
        n = i * 7919
        clock = time.perf_counter
        barrier.wait()
        end = stop_at[0]
        while True:
            t0 = clock()
            check("user:%d" % (n % KEYS))
            t1 = clock()
            lat.append(t1 - t0)
            n += 1
            if t1 >= end:
                break
        counts[i] = len(lat)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    start = time.perf_counter()
    stop_at[0] = start + seconds
    barrier.wait()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - start
    all_lat = sorted(x * 1e6 for lat in latencies for x in lat)
    return sum(counts) / elapsed, all_lat


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, int(round(p / 100.0 * (len(sorted_values) - 1))))
    return sorted_values[i]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="duration of one measurement")
    ap.add_argument("--runs", type=int, default=3, help="measurements per configuration (medians are shown)")
    ap.add_argument("--threads", type=int, default=8, help="threads of the multi-threaded configuration")
    ap.add_argument("--no-ceiling", action="store_true", help="skip the redis-benchmark ceiling rows")
    args = ap.parse_args()

    proc, port, directory = start_redis()
    url = "redis://127.0.0.1:%d" % port
    results = {}
    ceilings = {}
    try:
        for threads in (1, args.threads):
            for name, factory in CONTENDERS.items():
                per_run = []
                for _ in range(args.runs):
                    flushall(port)
                    check, close = factory(url, threads)
                    for i in range(200):  # warm up: connections, script load
                        check("warmup:%d" % i)
                    rate, lat = run(check, threads, args.seconds)
                    close()
                    per_run.append((rate, percentile(lat, 50), percentile(lat, 99)))
                results[(name, threads)] = tuple(statistics.median(r[i] for r in per_run) for i in range(3))
                print(
                    "  measured %-8s threads=%d: %.0f checks/s" % (name, threads, results[(name, threads)][0]),
                    file=sys.stderr,
                )
        if not args.no_ceiling and shutil.which("redis-cli"):
            for threads in (1, args.threads):
                flushall(port)
                ceilings[threads] = ceiling(port, threads, args.seconds)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        shutil.rmtree(directory, ignore_errors=True)

    import limits
    import polylimit

    print()
    print(
        "polylimit %s vs limits %s (moving window, Redis storage); Python %s; %d cores; medians of %d runs of %.1f s"
        % (
            polylimit.__version__,
            limits.__version__,
            sys.version.split()[0],
            os.cpu_count() or 0,
            args.runs,
            args.seconds,
        )
    )
    print("workload: %d per %d s over %d keys (admit path)" % (LIMIT, WINDOW_S, KEYS))
    print()
    header = "| %-9s | %7s | %11s | %8s | %8s |" % ("library", "threads", "checks/s", "p50 us", "p99 us")
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for threads in (1, args.threads):
        for name in CONTENDERS:
            rate, p50, p99 = results[(name, threads)]
            print("| %-9s | %7d | %11.0f | %8.1f | %8.1f |" % (name, threads, rate, p50, p99))
        if ceilings.get(threads):
            rate, p50 = ceilings[threads]
            print("| %-9s | %7d | %11.0f | %8.1f | %8s |" % ("ceiling", threads, rate, p50, "-"))
    print("pl-memory: polylimit on memory:// (no Redis): the binding's own cost")
    if ceilings:
        print("ceiling: redis-benchmark sending the same EVALSHA with that many connections (no Python)")
    print()
    for threads in (1, args.threads):
        ratio = results[("polylimit", threads)][0] / results[("limits", threads)][0]
        print("throughput ratio polylimit/limits, %d thread%s: %.1fx" % (threads, "" if threads == 1 else "s", ratio))


if __name__ == "__main__":
    main()
