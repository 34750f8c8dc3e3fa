#!/usr/bin/env python3
"""A policy file reloaded under load: what a reload costs each language's service.

    chrt -f 20 python3 bench/http/bench_reload.py [--runs 3] [--seconds 4]
        [--langs python,go,java,node,rust] [--connections 64] [--reload-ms 100]

Per language: a fresh redis-server (tests/fixture/redisfix standalone) and
the language's service of the cross-language suite
(tests/http/services/<lang>/run) opening a TOML policy file it watches
(every 100 ms). wrk drives it with CONNECTIONS requests in flight
(keys.lua: 2,000 tenants on a plan nothing reaches) and, beside it for the
whole measurement, one connection of the hot tenant (a plan of 500 an
hour), one request after another. Two phases,
interleaved run by run: "steady" (the file untouched) and "reloading" (the
file rewritten every RELOAD_MS, alternating two texts with the same limits,
so every service reloads ~10 times a second). Per phase: requests/s and the
latency percentiles wrk measured (medians of the runs, min-max); the p99
difference (target: at most +1 ms); requests lost (connect/read/write
errors, timeouts, statuses other than 200 and 429: target 0); and, after
all runs, the hot tenant's admissions (exactly 500, never more, however
many reloads it went through).

Needs wrk and the builds of the cross-language suite (each language's
run script says which).
"""

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "http"))
sys.path.insert(0, HERE)
import bench_http  # noqa: E402  (wrk and its script)
import cross_language as xl  # noqa: E402  (the services and Redis)

LANGS = ["python", "go", "java", "node", "rust"]
HOT_LIMIT = 500

POLICY = """# bench/http/bench_reload.py ({variant})
version = 1
prefix = "{prefix}"
default_plan = "open"

[plans.open]
api = "1000000/hour"

[plans.tight]
api = "{hot}/hour"

[tenants]
hot = "tight"

[[rules]]
name = "api"
paths = ["/api/*"]
key = "tenant"
limit = "plan"
"""


def write(path, text):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def wrk(port, seconds, args):
    # keys.lua: 2,000 tenants in X-Tenant on /api/x.
    return bench_http.wrk(port, seconds, args, ["2000", "X-Tenant", "/api/x", "0"])


class HotClient:
    """The hot tenant, one request after another on one connection, beside
    wrk for the whole measurement: counts its 200s (admissions) and 429s."""

    def __init__(self, port):
        self.port = port
        self.stop = threading.Event()
        self.statuses = {}
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self.stop.is_set():
            try:
                c.request("GET", "/api/x", headers={"X-Tenant": "hot"})
                r = c.getresponse()
                r.read()
                status = r.status
            except OSError:
                status = "error"
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            self.statuses[status] = self.statuses.get(status, 0) + 1
        c.close()

    def finish(self):
        self.stop.set()
        self.thread.join()
        return self.statuses


class Rewriter:
    """Rewrites the policy file every `ms` until stopped; counts rewrites."""

    def __init__(self, path, prefix, ms):
        self.path, self.prefix, self.ms = path, prefix, ms
        self.stop = threading.Event()
        self.count = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(self.ms / 1000.0):
            self.count += 1
            write(self.path, POLICY.format(variant=self.count, prefix=self.prefix, hot=HOT_LIMIT))

    def finish(self):
        self.stop.set()
        self.thread.join()
        return self.count


def spread(values, fmt="%.0f"):
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(values), min(values), max(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--langs", default=",".join(LANGS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reload-ms", type=int, default=100)
    args = ap.parse_args()
    langs = [name for name in args.langs.split(",") if name]
    workdir = tempfile.mkdtemp(prefix="polylimit-bench-reload-")
    policy_path = os.path.join(workdir, "policy.toml")
    config_path = os.path.join(workdir, "config.json")
    with open(config_path, "w") as f:
        json.dump({"policy_file": policy_path, "watch_ms": 100}, f)
    rows = []
    failed = False
    for lang in langs:
        prefix = "br" + lang
        write(policy_path, POLICY.format(variant=0, prefix=prefix, hot=HOT_LIMIT))
        redis, desc = xl.start_redis()
        service = xl.Service(lang, config_path, desc["url"])
        try:
            service.wait(300)
            wrk(service.port, 1, args)  # warm-up: connections, scripts, JIT
            phases = {"steady": [], "reloading": []}
            reloads = 0
            hot = HotClient(service.port)
            for run in range(args.runs):
                for phase in ("steady", "reloading") if run % 2 == 0 else ("reloading", "steady"):
                    rewriter = Rewriter(policy_path, prefix, args.reload_ms) if phase == "reloading" else None
                    r = wrk(service.port, args.seconds, args)
                    if rewriter:
                        reloads += rewriter.finish()
                    phases[phase].append(r)
            hot_statuses = hot.finish()
            admitted = hot_statuses.get(200, 0)
        finally:
            service.stop()
            redis.stdin.close()
            redis.wait()
        row = {"lang": lang, "reloads": reloads, "hot_admitted": admitted, "hot": hot_statuses}
        for phase, results in phases.items():
            lost = sum(
                sum(r["errors"].values()) + sum(n for s, n in r["statuses"].items() if s not in (200, 429))
                for r in results
            )
            row[phase] = {
                "rps": [r["requests"] / (r["duration_us"] / 1e6) for r in results],
                "p50": [r["latency_p50_us"] / 1000.0 for r in results],
                "p99": [r["latency_p99_us"] / 1000.0 for r in results],
                "p999": [r["latency_p999_us"] / 1000.0 for r in results],
                "lost": lost,
            }
        rows.append(row)
        hot_lost = sum(n for st, n in hot_statuses.items() if st not in (200, 429))
        failed = failed or admitted != HOT_LIMIT or hot_lost or row["steady"]["lost"] or row["reloading"]["lost"]
    print(
        "A policy file rewritten every %d ms under %d connections (wrk -t%d), %d interleaved runs of %d s; "
        "medians (min-max)\n" % (args.reload_ms, args.connections, args.threads, args.runs, args.seconds)
    )
    print("| service | phase | requests/s | p50 ms | p99 ms | p99.9 ms | lost |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        for phase in ("steady", "reloading"):
            p = row[phase]
            print(
                "| %s | %s | %s | %s | %s | %s | %d |"
                % (
                    row["lang"],
                    phase,
                    spread(p["rps"]),
                    spread(p["p50"], "%.2f"),
                    spread(p["p99"], "%.2f"),
                    spread(p["p999"], "%.2f"),
                    p["lost"],
                )
            )
    print(
        "\n| service | reloads | p99 reloading - steady (ms) | hot tenant: requests, admitted (limit %d) |" % HOT_LIMIT
    )
    print("|---|---|---|---|")
    for row in rows:
        diff = statistics.median(row["reloading"]["p99"]) - statistics.median(row["steady"]["p99"])
        print(
            "| %s | %d | %+.2f | %d, %d |"
            % (row["lang"], row["reloads"], diff, sum(row["hot"].values()), row["hot_admitted"])
        )
    os.unlink(policy_path)
    os.unlink(config_path)
    os.rmdir(workdir)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
