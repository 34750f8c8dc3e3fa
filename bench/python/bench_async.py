#!/usr/bin/env python3
"""polylimit's acheck on asyncio against limits.aio, with coalescing on and off.

One redis-server, started here on a free loopback port (the "Redis busy"
and "Redis CPU us/check" columns are its main thread's CPU, from INFO cpu).

Cells, each a number of tasks on one event loop, every task awaiting one
check after another:

- distinct keys, 1 and 64 tasks: 2,000 keys, task i of n checking keys i,
  i+n, i+2n, ... in turn, so no two checks in flight share a key ("many
  clients, not one hot key"); allow path: a limit nobody reaches
  (1,000,000 per minute); deny path: 1 per hour, every key used up before
  the cell (each check a script call that denies; polylimit's deny cache
  stays off);
- hot key, 64 tasks: one key, allow and deny paths as above (polylimit
  coalesces the checks waiting on it: its "script calls/check" column).

polylimit: ``acheck`` (completed on the loop from the core's queue) with
fixed window, GCRA and the sliding log (its default), each on a client with
coalescing on (the default) and one made with ``coalesce=False``.
limits.aio: its async Redis storage as its docs show it
(``storage_from_string("async+redis://...")``: coredis, its default
implementation, and ``implementation="redispy"``: redis.asyncio), fixed
window and moving window (its exact sliding window: the sliding log's
peer; limits has no GCRA, so GCRA is compared with its fixed window).
Also, unless --threads 0: N threads sharing one client, polylimit's
blocking ``check`` (sliding log) against ``limits`` over redis-py (moving
window), distinct keys.

Every cell runs --runs times, interleaved (each round runs every cell, the
order of the contenders reversed every other round), --seconds each:
checks/s = checks completed / measured wall time. The table shows the
median and min..max over the rounds, the share admitted, the client's CPU
per check (getrusage(RUSAGE_SELF): every thread of this process), the Redis
main thread's CPU per check, ``CPU used`` = checks/s x (client + Redis CPU
per check) / cores, ``Redis busy`` = checks/s x Redis CPU per check (share
of one core), polylimit's script calls per check (client stats), the
on/off ratio (a coalescing-on row's median over its coalescing-off row's,
with the range of the per-round ratios) and the ratio to limits with the
matching algorithm in the same cell: limits.aio over coredis, then over
redis-py (redis.asyncio; the threads' row: limits over redis-py). The
progress lines on stderr give each round's figures and, for the asyncio
cells, the share of one core the event loop's thread used (time.thread_time).

    python bench/python/bench_async.py [--seconds 1] [--runs 3] [--keys 2000]

Needs polylimit (pip install .), limits with its async Redis extra and
redis (pip install 'limits[async-redis]' redis) and redis-server on PATH.
A program that prints a table, not a test.
"""

import argparse
import asyncio
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BIG = 1_000_000  # per minute: never reached in a cell
CORES = os.cpu_count() or 1


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
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        + ["--dir", directory, "--protected-mode", "no", "--logfile", os.path.join(directory, "redis.log")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            return proc, port, directory, Control(port)
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("redis-server did not start")


class Control:
    """One plain connection for FLUSHALL and INFO (RESP read here: no client
    library of either side is involved)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        if self.command("PING") != "PONG":
            raise OSError("no PONG")

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("redis-server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def command(self, *words):
        self.sock.sendall(b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w.encode()) for w in words))
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"$":
            n = int(rest)
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(65536)
            body, self.buf = self.buf[:n], self.buf[n + 2 :]
            return body.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        return rest.decode()

    def info(self, section):
        fields = {}
        for line in self.command("INFO", section).splitlines():
            if ":" in line:
                name, value = line.split(":", 1)
                fields[name] = value.strip()
        return fields

    def cpu_us(self):
        """The Redis main thread's CPU time so far, user + system, in us (the
        whole process's where the main-thread fields are absent)."""
        f = self.info("cpu")
        if "used_cpu_user_main_thread" in f:
            return (float(f["used_cpu_user_main_thread"]) + float(f["used_cpu_sys_main_thread"])) * 1e6
        return (float(f["used_cpu_user"]) + float(f["used_cpu_sys"])) * 1e6


def process_cpu_us():
    r = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return (r.ru_utime + r.ru_stime) * 1e6


# -- the contenders -------------------------------------------------------------
# A contender: (library, variant, factory). factory(url, limit, window, prefix)
# is a coroutine for the asyncio cells (a function for threads) returning
# (check, close, stats): check(key) -> truthy when admitted (awaitable for
# asyncio), stats() -> the client's counters or None.


def polylimit_async(algorithm, coalesce):
    async def factory(url, limit, window, prefix):
        import polylimit

        client = polylimit.Client(url, coalesce=coalesce)
        acheck = client.limiter(limit=limit, window=window, algorithm=algorithm, prefix=prefix).acheck

        async def check(key):
            return (await acheck(key)).allowed

        return check, client.close, client.stats

    return factory


def limits_async(strategy, implementation):
    async def factory(url, limit, window, prefix):
        from limits import RateLimitItemPerSecond, storage
        from limits.aio import strategies

        options = {} if implementation == "coredis" else {"implementation": implementation}
        store = storage.storage_from_string("async+" + url, **options)
        hit = getattr(strategies, strategy)(store).hit
        item = RateLimitItemPerSecond(limit, window, namespace=prefix)

        async def check(key):
            return await hit(item, key)

        return check, lambda: None, lambda: None

    return factory


def polylimit_sync(url, limit, window, prefix):
    import polylimit

    client = polylimit.Client(url)
    check_ = client.limiter(limit=limit, window=window, prefix=prefix).check

    def check(key):
        return check_(key).allowed

    return check, client.close, client.stats


def limits_sync(url, limit, window, prefix):
    from limits import RateLimitItemPerSecond, storage, strategies

    store = storage.storage_from_string(url)
    hit = strategies.MovingWindowRateLimiter(store).hit
    item = RateLimitItemPerSecond(limit, window, namespace=prefix)

    def check(key):
        return hit(item, key)

    return check, lambda: None, lambda: None


PL = "polylimit acheck"
ON, OFF = "", ", no coalescing"
CD, RP = "limits.aio coredis", "limits.aio redis.asyncio"
# (library, variant, factory); the peer of each polylimit algorithm:
PEER = {"fixed_window": "fixed window", "gcra": "fixed window", "sliding_log": "moving window"}
# Each algorithm's coalescing-off cell runs right after its on cell (or right
# before, in the reversed rounds): the pair sees the same machine.
ASYNC = [(PL, alg + note, polylimit_async(alg, note == ON)) for alg in PEER for note in (ON, OFF)]
ASYNC += [
    (lib, name, limits_async(strategy, impl))
    for lib, impl in ((CD, "coredis"), (RP, "redispy"))
    for name, strategy in (("fixed window", "FixedWindowRateLimiter"), ("moving window", "MovingWindowRateLimiter"))
]
THREADS = [("polylimit check", "sliding_log", polylimit_sync), ("limits redis-py", "moving window", limits_sync)]


def hot_ok(variant):
    # One key at 1,000,000 per minute in a log (polylimit's ring, limits'
    # list) grows by every admitted check: the hot cells are the O(1) ones.
    return "sliding_log" not in variant and "moving" not in variant


# -- measurement ----------------------------------------------------------------

PATHS = {"allow": (BIG, 60), "deny": (1, 3600)}


class Cell:
    def __init__(self, scope, path, n, library, variant, factory, mode):
        self.scope, self.path, self.n = scope, path, n  # scope: "distinct" or "hot"
        self.library, self.variant, self.factory, self.mode = library, variant, factory, mode
        self.runs = []  # per round: dict(rate, admitted, errors, cpu, redis, calls)

    def key_lists(self, keys):
        if self.scope == "hot":
            return [["hot"]] * self.n
        return [keys[i :: self.n] for i in range(self.n)]  # no two tasks share a key

    def prefix(self):
        # A prefix of its own for each cell: one library's keys never meet another's.
        return "b%s-%s-%s-%d" % (
            self.library.split()[0][:2],
            self.variant.replace(" ", "").replace(",", ""),
            self.path,
            id(self) % 1000003,
        )


async def run_async(cell, url, control, keys, seconds):
    limit, window = PATHS[cell.path]
    check, close, stats = await cell.factory(url, limit, window, cell.prefix())
    lists = cell.key_lists(keys)
    try:
        if cell.path == "deny":  # use every key up first (1 per hour)
            used = sorted({k for ks in lists for k in ks})
            for i in range(0, len(used), 64):  # redis.asyncio's pool in limits opens up to 100
                await asyncio.gather(*(check(k) for k in used[i : i + 64]))
        # Warm up: as many checks in flight as the cell (connections, scripts).
        await asyncio.gather(*(check("warm:%d" % i) for i in range(cell.n)))
        counts, admitted, errors = [0] * cell.n, [0] * cell.n, [0] * cell.n
        stop = False

        async def task(i):
            ks, n, ok, failed = lists[i], 0, 0, 0
            m = len(ks)
            while not stop:
                try:
                    ok += bool(await check(ks[n % m]))
                except Exception:  # counted, not fatal: a loaded machine can time a call out
                    failed += 1
                n += 1
            counts[i], admitted[i], errors[i] = n, ok, failed

        s0, r0, c0, t0 = stats(), control.cpu_us(), process_cpu_us(), time.perf_counter()
        l0 = time.thread_time()  # the event loop's thread alone
        tasks = [asyncio.ensure_future(task(i)) for i in range(cell.n)]
        await asyncio.sleep(seconds)
        stop = True
        await asyncio.gather(*tasks)
        loop_us = (time.thread_time() - l0) * 1e6
        elapsed, c1, r1, s1 = time.perf_counter() - t0, process_cpu_us(), control.cpu_us(), stats()
    finally:
        close()
    r = result(counts, admitted, errors, elapsed, c1 - c0, r1 - r0, s0, s1)
    r["loop"] = loop_us / elapsed / 1e6  # share of one core the loop's thread used
    return r


def run_threads(cell, url, control, keys, seconds):
    limit, window = PATHS[cell.path]
    check, close, stats = cell.factory(url, limit, window, cell.prefix())
    lists = cell.key_lists(keys)
    try:
        if cell.path == "deny":
            for k in keys:
                check(k)
        counts, admitted, errors = [0] * cell.n, [0] * cell.n, [0] * cell.n
        stop = [False]
        barrier = threading.Barrier(cell.n + 1)

        def worker(i):
            ks, n, ok, failed = lists[i], 0, 0, 0
            m = len(ks)
            check("warm:%d" % i)
            barrier.wait()
            while not stop[0]:
                try:
                    ok += bool(check(ks[n % m]))
                except Exception:
                    failed += 1
                n += 1
            counts[i], admitted[i], errors[i] = n, ok, failed

        workers = [threading.Thread(target=worker, args=(i,)) for i in range(cell.n)]
        for w in workers:
            w.start()
        barrier.wait()
        s0, r0, c0, t0 = stats(), control.cpu_us(), process_cpu_us(), time.perf_counter()
        time.sleep(seconds)
        stop[0] = True
        for w in workers:
            w.join()
        elapsed, c1, r1, s1 = time.perf_counter() - t0, process_cpu_us(), control.cpu_us(), stats()
    finally:
        close()
    return result(counts, admitted, errors, elapsed, c1 - c0, r1 - r0, s0, s1)


def result(counts, admitted, errors, elapsed, cpu_us, redis_us, s0, s1):
    n = max(1, sum(counts))
    calls = None
    if s0 is not None:
        checks = s1["checks"] - s0["checks"]
        calls = (s1["script_calls"] - s0["script_calls"]) / max(1, checks)
    return dict(
        rate=sum(counts) / elapsed,
        admitted=sum(admitted) / n,
        errors=sum(errors),
        cpu=cpu_us / n,
        redis=redis_us / n,
        calls=calls,
    )


# -- the table ------------------------------------------------------------------


def med(xs):
    return statistics.median(xs)


def spread(xs, fmt):
    return ("%s (%s..%s)" % (fmt, fmt, fmt)) % (med(xs), min(xs), max(xs))


def ratio(a, b):
    """Ratio of medians, with the range of the per-round ratios."""
    ra, rb = [x["rate"] for x in a.runs], [x["rate"] for x in b.runs]
    per = [x / y for x, y in zip(ra, rb)]
    return "%.2fx (%.2f..%.2f)" % (med(ra) / med(rb), min(per), max(per))


def table(cells):
    rows = [
        [
            "keys",
            "path",
            "in flight",
            "library",
            "variant",
            "checks/s (min..max)",
            "admitted",
            "errors",
            "CPU us/check",
            "Redis CPU us/check",
            "CPU used",
            "Redis busy",
            "script calls/check",
            "on/off (min..max)",
            "vs coredis (min..max)",
            "vs redis-py (min..max)",
        ]
    ]
    find = {(c.scope, c.path, c.n, c.library, c.variant): c for c in cells}
    for c in cells:
        rates = [x["rate"] for x in c.runs]
        used = med([x["rate"] * (x["cpu"] + x["redis"]) / 1e6 / CORES for x in c.runs])
        busy = med([x["rate"] * x["redis"] / 1e6 for x in c.runs])
        calls = "-" if c.runs[0]["calls"] is None else "%.3f" % med([x["calls"] for x in c.runs])
        onoff = vs_cd = vs_rp = ""
        if c.library == PL:
            algorithm = c.variant.split(",")[0]
            if not c.variant.endswith(OFF):
                off = find.get((c.scope, c.path, c.n, PL, algorithm + OFF))
                onoff = ratio(c, off) if off else ""
            for lib, slot in ((CD, 0), (RP, 1)):
                peer = find.get((c.scope, c.path, c.n, lib, PEER[algorithm]))
                if peer:
                    if slot == 0:
                        vs_cd = ratio(c, peer)
                    else:
                        vs_rp = ratio(c, peer)
        elif c.mode == "threads" and c.library == THREADS[0][0]:
            peer = find.get((c.scope, c.path, c.n, THREADS[1][0], THREADS[1][1]))
            vs_rp = ratio(c, peer) if peer else ""
        rows.append(
            [
                c.scope,
                c.path,
                ("%d threads" % c.n) if c.mode == "threads" else str(c.n),
                c.library,
                c.variant,
                spread(rates, "%.0f"),
                "%.3f" % med([x["admitted"] for x in c.runs]),
                str(sum(x["errors"] for x in c.runs)),
                "%.1f" % med([x["cpu"] for x in c.runs]),
                "%.1f" % med([x["redis"] for x in c.runs]),
                "%.0f %%" % (100 * used),
                "%.0f %%" % (100 * busy),
                calls,
                onoff,
                vs_cd,
                vs_rp,
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for i, r in enumerate(rows):
        out.append("| " + " | ".join(v.ljust(w) for v, w in zip(r, widths)) + " |")
        if i == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


def versions():
    import limits
    import polylimit
    import redis

    try:
        import coredis

        cd = coredis.__version__
    except ImportError:
        cd = "absent"
    return "polylimit %s, limits %s (coredis %s, redis-py %s); Python %s" % (
        polylimit.__version__,
        limits.__version__,
        cd,
        redis.__version__,
        sys.version.split()[0],
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="duration of one cell")
    ap.add_argument("--runs", type=int, default=3, help="interleaved rounds (median, min..max)")
    ap.add_argument("--keys", type=int, default=2000, help="distinct keys")
    ap.add_argument("--tasks", default="1,64", help="tasks in flight of the distinct-key cells")
    ap.add_argument("--hot-tasks", type=int, default=64, help="tasks of the hot-key cells (0: none)")
    ap.add_argument("--threads", type=int, default=8, help="threads of the blocking cells (0: none)")
    ap.add_argument("--only", default="", help="run only the cells whose text contains this")
    args = ap.parse_args()

    cells = []
    for path in PATHS:
        for n in [int(t) for t in args.tasks.split(",")]:
            cells += [Cell("distinct", path, n, lib, var, f, "asyncio") for lib, var, f in ASYNC]
    if args.hot_tasks:
        for path in PATHS:
            cells += [Cell("hot", path, args.hot_tasks, lib, var, f, "asyncio") for lib, var, f in ASYNC if hot_ok(var)]
    if args.threads:
        for path in PATHS:
            cells += [Cell("distinct", path, args.threads, lib, var, f, "threads") for lib, var, f in THREADS]
    if args.only:
        cells = [c for c in cells if args.only in " ".join((c.scope, c.path, str(c.n), c.library, c.variant, c.mode))]
    keys = ["user:%d" % i for i in range(args.keys)]

    head = versions()
    print(head, file=sys.stderr)
    proc, port, directory, control = start_redis()
    url = "redis://127.0.0.1:%d" % port
    load = [os.getloadavg()[0]]
    started = time.monotonic()
    try:
        for run in range(args.runs):
            # The contenders' order reversed every other round, within each group.
            groups = {}
            for c in cells:
                groups.setdefault((c.scope, c.path, c.n, c.mode), []).append(c)
            for group in groups.values():
                for c in group if run % 2 == 0 else group[::-1]:
                    control.command("FLUSHALL")
                    if c.mode == "asyncio":
                        r = asyncio.run(run_async(c, url, control, keys, args.seconds))
                    else:
                        r = run_threads(c, url, control, keys, args.seconds)
                    c.runs.append(r)
                    print(
                        "  run %d %-8s %-5s %2d %-24s %-28s %8.0f checks/s  admitted %.3f  errors %d  loop thread %s"
                        % (
                            (run + 1, c.scope, c.path, c.n, c.library, c.variant, r["rate"], r["admitted"])
                            + (r["errors"], "%.0f %%" % (100 * r["loop"]) if "loop" in r else "-")
                        ),
                        file=sys.stderr,
                    )
            load.append(os.getloadavg()[0])
        redis_version = control.info("server").get("redis_version", "?")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        shutil.rmtree(directory, ignore_errors=True)

    print()
    print("%s; redis-server %s; %d cores" % (head, redis_version, CORES))
    print(
        "medians of %d interleaved runs of %.1f s per cell (%.0f s in all); 1-min load average %s"
        % (args.runs, args.seconds, time.monotonic() - started, " -> ".join("%.1f" % x for x in load))
    )
    print(
        "distinct: %d keys, no two in flight alike; hot: one key; allow: %d per minute (never reached); "
        "deny: 1 per hour, used up first" % (args.keys, BIG)
    )
    print()
    print(table(cells))
    print()
    print(
        "CPU us/check: this process (all threads); Redis CPU us/check: the server's main thread (INFO cpu); "
        "CPU used = checks/s x (both) / %d cores; Redis busy = checks/s x Redis CPU (one core); on/off: "
        "coalescing on over off; vs: polylimit over limits.aio with the matching algorithm (fixed window for "
        "GCRA), same cell; ratios of medians, in brackets the range of the per-round ratios" % CORES
    )


if __name__ == "__main__":
    main()
