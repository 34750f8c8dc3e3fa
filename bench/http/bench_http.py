#!/usr/bin/env python3
"""End to end over HTTP: polylimit's middleware against the one users would
pick instead, per language, on the same Redis setup, server and handler.

    chrt -f 20 python3 bench/http/bench_http.py [--runs 3] [--seconds 4]
        [--langs node,python,go] [--connections 64] [--threads 2] [--keys 2000]

For every cell (language x path x side) it starts a fresh redis-server
(tests/fixture/redisfix standalone), the service (polylimit's:
tests/http/services/<lang>/run; the peer's: bench/http/<lang>/), all keyed by
the X-API-Key header with the same limit and a handler answering 200 "ok",
and drives it with wrk (-c CONNECTIONS -t THREADS -d SECONDS, keys.lua: a
key picked at random from KEYS per request). Paths: allow (1000000/hour,
nothing reaches it) and deny (1/hour; a warm-up pass first uses every key
once, so every measured request is refused). Every response's status is
counted; a cell whose statuses are not all 200 (allow) or all 429 (deny)
fails loudly. Per cell: requests/s (wrk's requests over its measured time),
Redis CPU per request (INFO cpu, main thread user + sys, before and after),
the service's CPU per request (/proc/PID/stat utime + stime) and Redis
commands per request (INFO stats). Runs are interleaved: run 1 of every
cell, then run 2, ...; polylimit and the peer alternate which goes first.
The tables give medians with min-max and the ratios polylimit / peer.

Needs wrk (Debian: apt-get install wrk), redis-server, and the builds named
in bench/http/README.md.
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LANGS = ["node", "python", "go"]
PATHS = {"allow": ("1000000/hour", 200), "deny": ("1/hour", 429)}
PEERS = {
    "node": "Express + express-rate-limit + rate-limit-redis (node-redis)",
    "python": "FastAPI + slowapi (limits, redis-py) under uvicorn",
    "go": "net/http + ulule/limiter (go-redis)",
}
OURS = {
    "node": "Express + polylimit/express",
    "python": "FastAPI + polylimit.contrib.asgi under uvicorn",
    "go": "net/http + polylimit httplimit",
}
# polylimit with its default algorithm (the sliding log), and with the fixed
# window every peer here uses by default: the same algorithm on both sides.
SIDES = ["polylimit", "polylimit-fw", "peer"]
ALGORITHMS = {"polylimit-fw": "fixed_window"}
DEFAULT_PYTHON = os.path.join(ROOT, "build", "venv-bench-http", "bin", "python")
GO_PEER = os.path.join(ROOT, "build", "bench-http", "go-peer")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def key_name(i):
    return "bench-key-%05d" % i  # as keys.lua names them, i from 1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sh(cmd, cwd=None):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False).stdout.strip()
    except OSError as e:
        return "(%s)" % e


class Redis:
    """A fresh redis-server from redisfix; stopped when its stdin closes."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [os.path.join(ROOT, "tests", "fixture", "redisfix"), "standalone"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        if not line:
            sys.exit("redisfix did not start a redis-server")
        desc = json.loads(line)
        if "error" in desc:
            sys.exit("redisfix: %s" % desc["error"])
        self.url = desc["url"]
        self.port = desc["nodes"][0]["port"]
        self.version = desc.get("server", {}).get("version", "?")

    def info(self, section):
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            arg = section.encode()
            s.sendall(b"*2\r\n$4\r\nINFO\r\n$%d\r\n%s\r\n" % (len(arg), arg))
            f = s.makefile("rb")
            head = f.readline()
            assert head.startswith(b"$"), head
            body = f.read(int(head[1:]) + 2).decode()
        out = {}
        for line in body.splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                out[k] = v
        return out

    def cpu_seconds(self):
        i = self.info("cpu")
        return float(i["used_cpu_sys_main_thread"]) + float(i["used_cpu_user_main_thread"])

    def commands(self):
        return int(self.info("stats")["total_commands_processed"])

    def commandstats(self):
        """{command: (calls, usec)} from INFO commandstats."""
        out = {}
        for k, v in self.info("commandstats").items():
            f = dict(x.split("=", 1) for x in v.split(","))
            out[k[len("cmdstat_") :]] = (int(f["calls"]), int(f["usec"]))
        return out

    def stop(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def proc_cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3); utime, stime are fields 14, 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Service:
    def __init__(self, argv, env, label, ready_timeout):
        self.label = label
        self.log = tempfile.NamedTemporaryFile(prefix="bench-http-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
            text=True,
            start_new_session=True,
        )
        ready = threading.Event()

        def watch():
            for line in self.proc.stdout:
                if line.strip() == "ready":
                    ready.set()

        threading.Thread(target=watch, daemon=True).start()
        if not ready.wait(ready_timeout) or self.proc.poll() is not None:
            tail = self.tail()
            self.stop()
            raise RuntimeError("%s did not become ready in %d s:\n%s" % (label, ready_timeout, tail))

    def tail(self):
        self.log.flush()
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()[-3000:]

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
        os.unlink(self.log.name)


def side_command(side, lang, config, port, args):
    """argv and extra environment of one side's service, or a reason it cannot run."""
    if side.startswith("polylimit"):
        run = os.path.join(ROOT, "tests", "http", "services", lang, "run")
        if not os.access(run, os.X_OK):
            return None, "not built (no tests/http/services/%s/run)" % lang
        env = {"POLYLIMIT_PYTHON": args.python} if lang == "python" else {}
        return ([run, config, str(port)], env), None
    if lang == "node":
        return (["node", os.path.join(HERE, "node", "server.js"), config, str(port)], {}), None
    if lang == "python":
        return ([args.python, os.path.join(HERE, "python", "peer.py"), config, str(port)], {}), None
    return ([GO_PEER, config, str(port)], {}), None


def wrk(port, seconds, args, script_args=None):
    """Runs wrk with keys.lua; `script_args` after "--" (default: the keys)."""
    cmd = [
        "wrk",
        "-c%d" % args.connections,
        "-t%d" % args.threads,
        "-d%ds" % seconds,
        "--timeout",
        "10s",
        "-s",
        os.path.join(HERE, "keys.lua"),
        "http://127.0.0.1:%d/" % port,
        "--",
    ] + (script_args or [str(args.keys)])
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("BENCH-HTTP "):
            r = json.loads(line[len("BENCH-HTTP ") :])
            r["statuses"] = {int(k): v for k, v in r["statuses"].items()}
            return r
    raise RuntimeError("wrk printed no result (exit %d):\n%s%s" % (out.returncode, out.stdout, out.stderr))


def use_every_key(port, nkeys):
    """One request per key, 16 connections: spends a 1/hour limit of each key."""
    statuses = {}
    lock = threading.Lock()

    def worker(start):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine = {}
        for i in range(start, nkeys + 1, 16):
            c.request("GET", "/", headers={"X-API-Key": key_name(i)})
            r = c.getresponse()
            r.read()
            mine[r.status] = mine.get(r.status, 0) + 1
        c.close()
        with lock:
            for k, v in mine.items():
                statuses[k] = statuses.get(k, 0) + v

    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(worker, range(1, 17)))
    return statuses


def bad_statuses(result, expected):
    wrong = {s: n for s, n in result["statuses"].items() if s != expected}
    errors = {k: v for k, v in result["errors"].items() if v}
    if wrong or errors or not result["requests"]:
        return "statuses %s, socket errors %s (expected only %d)" % (
            dict(sorted(result["statuses"].items())),
            errors,
            expected,
        )
    return None


def measure(lang, side, path, args):
    """One cell, one run: a dict of figures, or {"error": ...}."""
    rate, expected = PATHS[path]
    limiter = {"rate": rate, "prefix": "bh"}
    if side in ALGORITHMS:
        limiter["algorithm"] = ALGORITHMS[side]
    config = {
        "limiters": [limiter],
        "policy": {"rules": [{"name": "bench", "limiter": 0, "key": "api_key"}]},
    }
    redis = Redis()
    fd, config_path = tempfile.mkstemp(prefix="bench-http-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(config, f)
    service = None
    try:
        port = free_port()
        cmd, reason = side_command(side, lang, config_path, port, args)
        if cmd is None:
            return {"error": reason, "not_built": True}
        argv, extra = cmd
        env = dict(os.environ, POLYLIMIT_URL=redis.url, **extra)
        service = Service(argv, env, "%s %s" % (side, lang), args.ready_timeout)
        if path == "deny":
            first = use_every_key(port, args.keys)
            if first != {200: args.keys}:
                return {"error": "warm-up pass: statuses %s (expected %d x 200)" % (first, args.keys)}
        warm = wrk(port, args.warmup, args)
        bad = bad_statuses(warm, expected)
        if bad:
            return {"error": "warm-up: " + bad}
        k0 = redis.commandstats()
        r0, c0, s0 = redis.cpu_seconds(), redis.commands(), proc_cpu_seconds(service.proc.pid)
        res = wrk(port, args.seconds, args)
        r1, c1, s1 = redis.cpu_seconds(), redis.commands(), proc_cpu_seconds(service.proc.pid)
        k1 = redis.commandstats()
        bad = bad_statuses(res, expected)
        if bad:
            return {"error": bad}
        n = res["requests"]
        return {
            "rps": n / (res["duration_us"] / 1e6),
            "redis_us": (r1 - r0) * 1e6 / n,
            "service_us": (s1 - s0) * 1e6 / n,
            # INFO itself is a command: leave out the ones between the readings.
            "redis_cmds": (c1 - c0 - 3) / n,
            "by_command": {
                c: (calls - k0.get(c, (0, 0))[0], usec - k0.get(c, (0, 0))[1])
                for c, (calls, usec) in k1.items()
                if c != "info" and calls != k0.get(c, (0, 0))[0]
            },
            "p50_ms": res["latency_p50_us"] / 1000,
            "p99_ms": res["latency_p99_us"] / 1000,
            "requests": n,
        }
    except (RuntimeError, OSError) as e:
        return {"error": str(e)}
    finally:
        if service is not None:
            service.stop()
        redis.stop()
        os.unlink(config_path)


def fmt_spread(values, digits=0):
    f = "%%.%df" % digits
    return "%s (%s-%s)" % (f % statistics.median(values), f % min(values), f % max(values))


def versions(args):
    lines = []
    py = args.python
    lines.append(
        "polylimit: commit %s (%s)"
        % (sh(["git", "rev-parse", "--short", "HEAD"], ROOT), sh(["git", "log", "-1", "--format=%s"], ROOT))
    )
    node_pkg = os.path.join(ROOT, "bindings", "node", "package.json")
    if os.path.exists(node_pkg):
        with open(node_pkg) as f:
            lines.append("  node binding %s" % json.load(f)["version"])
    lines.append("  python package %s" % sh([py, "-c", "import polylimit; print(polylimit.__version__)"]))
    npm = sh(["npm", "ls", "--depth=0"], os.path.join(HERE, "node")).splitlines()[1:]
    lines.append("node peer (npm ls): " + ", ".join(x.split(" ", 1)[-1] for x in npm))
    pkgs = ["fastapi", "starlette", "uvicorn", "slowapi", "limits", "redis"]
    shown = sh([py, "-m", "pip", "show"] + pkgs)
    pv = {}
    name = None
    for line in shown.splitlines():
        if line.startswith("Name: "):
            name = line[6:].lower()
        elif line.startswith("Version: ") and name:
            pv[name] = line[9:]
    lines.append("python peer (pip show): " + ", ".join("%s %s" % (p, pv.get(p, "?")) for p in pkgs))
    mods = sh(
        ["go", "list", "-m", "github.com/ulule/limiter/v3", "github.com/redis/go-redis/v9"], os.path.join(HERE, "go")
    )
    lines.append("go peer (go list -m): " + ", ".join(mods.splitlines()))
    lines.append(
        "node %s, %s, %s, wrk: %s"
        % (
            sh(["node", "--version"]),
            sh([py, "--version"]),
            sh(["go", "env", "GOVERSION"]),
            sh(["sh", "-c", "wrk -v 2>&1 | head -1"]),
        )
    )
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1, help="seconds of wrk before each measurement")
    ap.add_argument("--langs", default=",".join(LANGS))
    ap.add_argument("--paths", default="allow,deny")
    ap.add_argument("--sides", default=",".join(SIDES))
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--python", default=DEFAULT_PYTHON, help="the interpreter of both Python services")
    ap.add_argument("--ready-timeout", type=int, default=600)
    args = ap.parse_args()
    langs = [x for x in args.langs.split(",") if x]
    paths = [x for x in args.paths.split(",") if x]
    sides_wanted = [x for x in args.sides.split(",") if x]

    if "go" in langs:
        env = dict(os.environ, GOTOOLCHAIN="local")
        b = subprocess.run(["go", "build", "-o", GO_PEER, "."], cwd=os.path.join(HERE, "go"), env=env, check=False)
        if b.returncode:
            sys.exit("could not build the Go peer")

    policy = os.sched_getscheduler(0)
    sched = {os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR"}.get(policy, "SCHED_OTHER")
    print(
        "bench/http: %d runs x %d s, wrk -c%d -t%d, %d keys, interleaved"
        % (args.runs, args.seconds, args.connections, args.threads, args.keys)
    )
    print(
        "scheduling: %s priority %d (run under `chrt -f 20` on a shared machine)"
        % (sched, os.sched_getparam(0).sched_priority)
    )
    print("load average at start: %s, %d CPUs" % (" ".join("%.2f" % x for x in os.getloadavg()), os.cpu_count()))
    r = Redis()
    print("redis-server %s" % r.version)
    r.stop()
    for line in versions(args):
        print(line)
    print(flush=True)

    results = {}  # (lang, path, side) -> [figures]
    errors = {}
    for run in range(args.runs):
        for li, lang in enumerate(langs):
            for pi, path in enumerate(paths):
                # Each run starts with another side.
                k = (run + li + pi) % len(sides_wanted)
                sides = sides_wanted[k:] + sides_wanted[:k]
                for side in sides:
                    cell = (lang, path, side)
                    if cell in errors and errors[cell].get("not_built"):
                        continue
                    t = time.monotonic()
                    m = measure(lang, side, path, args)
                    if "error" in m:
                        errors[cell] = m
                        what = "skipped" if m.get("not_built") else "FAILED"
                        print(
                            "run %d %-6s %-5s %-9s %s: %s" % (run + 1, lang, path, side, what, m["error"]), flush=True
                        )
                        continue
                    results.setdefault(cell, []).append(m)
                    evals = sum(m["by_command"].get(c, (0, 0))[0] for c in ("evalsha", "eval"))
                    print(
                        "run %d %-6s %-5s %-12s %8.0f req/s  redis %6.1f us/req  service %7.1f us/req  "
                        "%.2f cmds/req  %.2f EVALSHA/req  p50 %.1f ms  (%.0f s)"
                        % (
                            run + 1,
                            lang,
                            path,
                            side,
                            m["rps"],
                            m["redis_us"],
                            m["service_us"],
                            m["redis_cmds"],
                            evals / m["requests"],
                            m["p50_ms"],
                            time.monotonic() - t,
                        ),
                        flush=True,
                    )
    print("\nload average at end: %s" % " ".join("%.2f" % x for x in os.getloadavg()))

    failed = any(not e.get("not_built") for e in errors.values())
    for lang in langs:
        print("\n%s: polylimit = %s; peer = %s\n" % (lang, OURS[lang], PEERS[lang]))
        print(
            "| path | side | req/s median (min-max) | vs peer: ratio of medians (per run min-max)"
            " | Redis CPU us/req | service CPU us/req | Redis cmds/req | p50 ms |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for path in paths:
            peer = results.get((lang, path, "peer"), [])
            for side in sides_wanted:
                figs = results.get((lang, path, side), [])
                e = errors.get((lang, path, side))
                if e is not None or not figs:
                    what = "not built" if e is not None and e.get("not_built") else "FAILED"
                    print("| %s | %s | %s | - | - | - | - | - |" % (path, side, what))
                    continue
                ratio = "-"
                if side != "peer" and peer and (lang, path, "peer") not in errors:
                    per_run = [a["rps"] / b["rps"] for a, b in zip(figs, peer)]
                    ratio = "%.2fx (%.2f-%.2f)" % (
                        statistics.median(m["rps"] for m in figs) / statistics.median(m["rps"] for m in peer),
                        min(per_run),
                        max(per_run),
                    )
                print(
                    "| %s | %s | %s | %s | %s | %s | %.2f | %.1f |"
                    % (
                        path,
                        side,
                        fmt_spread([m["rps"] for m in figs]),
                        ratio,
                        fmt_spread([m["redis_us"] for m in figs], 1),
                        fmt_spread([m["service_us"] for m in figs], 1),
                        statistics.median(m["redis_cmds"] for m in figs),
                        statistics.median(m["p50_ms"] for m in figs),
                    )
                )
    print("\nRedis commands per request and the time Redis counted in each (INFO commandstats, all runs):")
    for lang in langs:
        for path in paths:
            for side in sides_wanted:
                figs = results.get((lang, path, side), [])
                if not figs:
                    continue
                n = sum(m["requests"] for m in figs)
                total = {}
                for m in figs:
                    for c, (calls, usec) in m["by_command"].items():
                        t = total.setdefault(c, [0, 0])
                        t[0] += calls
                        t[1] += usec
                parts = [
                    "%s %.2f x %.1f us" % (c, calls / n, usec / calls)
                    for c, (calls, usec) in sorted(total.items(), key=lambda x: -x[1][1])
                ]
                usec = sum(u for _, u in total.values()) / n
                print("  %-6s %-5s %-12s %.1f us/req in commands: %s" % (lang, path, side, usec, ", ".join(parts)))
    for (lang, path, side), e in sorted(errors.items()):
        print("\n%s %s %s: %s" % (lang, path, side, e["error"]))
    if failed:
        print("\nFAILED: a cell's statuses or service were wrong (above)")
        sys.exit(1)


if __name__ == "__main__":
    main()
