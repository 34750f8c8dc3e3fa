#!/usr/bin/env python3
"""One policy, five services, one answer: the HTTP contract across languages.

Starts a redis-server (tests/fixture/redisfix) and one service per language
(tests/http/services/<lang>/run CONFIG PORT: Python, Go, Java, Node and Rust,
each behind its own framework integration, real HTTP on loopback), all with
the same policy and limiter prefixes, then, for each kind of identity,
spreads requests round-robin over the five services and checks that exactly
the limit is admitted in total; that a denied address gets 403 from all
five; that every 429 (and every 401) has the same status, body and headers
(time-dependent values within a second of each other); and that no API key
reaches Redis.

    tests/http/cross_language.py [--langs python,go,...]

Every language is required unless --langs (or POLYLIMIT_HTTP_LANGS) names a
subset. The services are built by their language suites before (see each
run script).
"""

import argparse
import concurrent.futures
import hashlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LANGS = ["python", "go", "java", "node", "rust"]
LIMIT = 5
ENC_LIMIT = 3  # the rule whose glob is written decoded ("/enc/a b*")
API_KEY = "sk-cross-" + uuid.uuid4().hex  # a secret: must never reach Redis

# Values that move with the clock; equal within a second across services.
TIMED = {"retry-after", "ratelimit-reset"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis():
    # redisfix stops the server when its stdin closes.
    p = subprocess.Popen(
        [os.path.join(ROOT, "tests", "fixture", "redisfix"), "standalone"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = p.stdout.readline()
    if not line:
        sys.exit("redisfix did not start a redis-server")
    return p, json.loads(line)


def redis_keys(port):
    """Every key in the server (SCAN), as text."""
    keys, cursor = [], b"0"
    with socket.create_connection(("127.0.0.1", port)) as s:
        f = s.makefile("rb")
        while True:
            parts = [b"SCAN", cursor, b"COUNT", b"1000"]
            s.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in parts))
            assert f.readline().startswith(b"*2")
            f.readline()
            cursor = f.readline().rstrip()
            n = int(f.readline()[1:])
            for _ in range(n):
                size = int(f.readline()[1:])
                keys.append(f.read(size + 2)[:-2].decode("utf-8", "replace"))
            if cursor == b"0":
                return keys


class Service:
    def __init__(self, lang, config, url):
        self.lang = lang
        self.port = free_port()
        # POLYLIMIT_HTTP_SERVICE_<LANG>: another run script (another checkout's build).
        run = os.environ.get("POLYLIMIT_HTTP_SERVICE_" + lang.upper()) or os.path.join(HERE, "services", lang, "run")
        if not os.access(run, os.X_OK):
            sys.exit("no service for %s: %s is missing" % (lang, run))
        env = dict(os.environ, POLYLIMIT_URL=url)
        self.log = tempfile.NamedTemporaryFile(prefix="polylimit-http-%s-" % lang, suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [run, config, str(self.port)],
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
            text=True,
            start_new_session=True,
        )
        self.ready = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        for line in self.proc.stdout:
            if line.strip() == "ready":
                self.ready.set()

    def wait(self, timeout):
        deadline = time.monotonic() + timeout
        # Until ready, the deadline, or the service's exit (no waiting out the deadline then).
        while not self.ready.wait(0.2) and self.proc.poll() is None and time.monotonic() < deadline:
            pass
        if not self.ready.is_set() or self.proc.poll() is not None:
            self.log.flush()
            with open(self.log.name, encoding="utf-8", errors="replace") as f:
                tail = f.read()[-3000:]
            sys.exit("the %s service did not become ready in %d s:\n%s" % (self.lang, timeout, tail))

    def request(self, path, headers):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.request("GET", path, headers=headers)
            r = c.getresponse()
            body = r.read().decode("utf-8", "replace")
            # Header names are case-insensitive; keep the order.
            hs = [
                (k.lower(), v)
                for k, v in r.getheaders()
                if k.lower().startswith("ratelimit") or k.lower() in ("retry-after", "content-type")
            ]
            return {"lang": self.lang, "status": r.status, "body": body, "headers": hs}
        finally:
            c.close()

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        os.unlink(self.log.name)


failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def same_answers(responses, what):
    """Every response alike: status, body, header names, values (the
    time-dependent ones within 1 of each other)."""
    if not responses:
        check(False, what + ": no responses to compare")
        return
    # By name: Go's net/http writes headers sorted (the golden vectors check
    # the core's order in every language).
    first = responses[0]
    for r in responses[1:]:
        names = [k for k, _ in sorted(r["headers"])]
        if (
            r["status"] != first["status"]
            or r["body"] != first["body"]
            or names != [k for k, _ in sorted(first["headers"])]
        ):
            check(False, "%s: %s answered %r, %s answered %r" % (what, first["lang"], first, r["lang"], r))
            return
        for (k, a), (_, b) in zip(sorted(first["headers"]), sorted(r["headers"])):
            if k == "content-type":
                # Servers may respell the media type's parameters
                # ("text/plain;charset=utf-8"): compare what it says.
                close = a.replace(" ", "").lower() == b.replace(" ", "").lower()
            elif k in TIMED:
                close = abs(int(a) - int(b)) <= 1
            elif k == "ratelimit":
                # "name";r=N;t=S: the same but for t.
                close = (
                    a.split(";t=")[0] == b.split(";t=")[0] and abs(int(a.split(";t=")[1]) - int(b.split(";t=")[1])) <= 1
                )
            else:
                close = a == b
            if not close:
                check(False, "%s: header %s: %s sent %r, %s sent %r" % (what, k, first["lang"], a, r["lang"], b))
                return
    check(
        True,
        "%s: %d answers from %s identical" % (what, len(responses), ", ".join(sorted({r["lang"] for r in responses}))),
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--langs", default=os.environ.get("POLYLIMIT_HTTP_LANGS", ",".join(LANGS)))
    ap.add_argument("--ready-timeout", type=int, default=300)
    args = ap.parse_args()
    langs = [name for name in args.langs.split(",") if name]
    prefix = "xl" + uuid.uuid4().hex[:6]
    config = {
        "limiters": [
            {"rate": "%d/hour" % LIMIT, "prefix": prefix + ":ip"},
            {"rate": "%d/hour" % LIMIT, "prefix": prefix + ":key"},
            {"rate": "%d/hour" % LIMIT, "prefix": prefix + ":user"},
            {"rate": "%d/hour" % ENC_LIMIT, "prefix": prefix + ":enc"},
        ],
        "policy": {
            "trusted_proxies": ["127.0.0.1", "::1"],
            "deny": {"ips": ["198.51.100.0/24"]},
            "exempt": ["/healthz"],
            "rules": [
                {"name": "by-key", "paths": ["/key/*"], "limiter": 1, "key": "api_key"},
                {"name": "by-user", "paths": ["/user/*"], "limiter": 2, "key": "user"},
                # Written in the decoded form, as routers match paths.
                {"name": "by-enc", "paths": ["/enc/a b*"], "limiter": 3, "key": "ip"},
                {"name": "by-ip", "limiter": 0, "key": "ip"},
            ],
        },
    }
    redis, desc = start_redis()
    services = []
    fd, config_path = tempfile.mkstemp(prefix="polylimit-http-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(config, f)
    try:
        started = time.monotonic()
        services = [Service(name, config_path, desc["url"]) for name in langs]
        for s in services:
            s.wait(args.ready_timeout)
        print("%d services ready in %.1f s: %s" % (len(services), time.monotonic() - started, ", ".join(langs)))

        def round_robin(path, headers_for, n):
            out = []
            for i in range(n):
                out.append(services[i % len(services)].request(path, headers_for(i)))
            return out

        n = LIMIT * 3  # three times the limit, whatever the number of services
        kinds = [
            ("IPv4 via X-Forwarded-For", "/ip/a", lambda i: {"X-Forwarded-For": "203.0.113.7"}),
            (
                "two IPv6 addresses of one /64",
                "/ip/b",
                lambda i: {"X-Forwarded-For": "2001:db8:7:1::%x" % (10 + i % 2)},
            ),
            (
                "an API key (from changing addresses)",
                "/key/a",
                lambda i: {"X-API-Key": API_KEY, "X-Forwarded-For": "192.0.2.%d" % (i + 1)},
            ),
            (
                "a user id (from changing addresses)",
                "/user/a",
                lambda i: {"X-User": "alice", "X-Forwarded-For": "192.0.2.%d" % (100 + i)},
            ),
        ]
        denials = []
        for name, path, headers_for in kinds:
            rs = round_robin(path, headers_for, n)
            admitted = [r for r in rs if r["status"] == 200]
            check(
                len(admitted) == LIMIT and all(r["body"] == "ok\n" for r in admitted),
                "%s: %d of %d admitted over %d services (limit %d)" % (name, len(admitted), n, len(services), LIMIT),
            )
            others = [r for r in rs if r["status"] != 200]
            check(all(r["status"] == 429 for r in others), "%s: every other request answered 429" % name)
            same_answers(others, name + ": the 429s")
            denials += others

        # A percent-encoded path is matched in its decoded form (as routers
        # match it) by every service: "/enc/a%20b" is "/enc/a b", under the
        # rule "/enc/a b*" and its own limit, whatever the language.
        client = {"X-Forwarded-For": "203.0.113.50"}
        rs = round_robin("/enc/a%20b", lambda i: client, ENC_LIMIT * max(2, len(services)))
        admitted = [r for r in rs if r["status"] == 200]
        check(
            len(admitted) == ENC_LIMIT
            and all(r["status"] == 429 for r in rs if r["status"] != 200)
            and all(any(k == "ratelimit-policy" and v.startswith('"by-enc"') for k, v in r["headers"]) for r in rs),
            "a percent-encoded path (/enc/a%%20b): %d of %d admitted over %d services, all by the rule of"
            " /enc/a b* (limit %d)" % (len(admitted), len(rs), len(services), ENC_LIMIT),
        )
        same_answers([r for r in rs if r["status"] != 200], "a percent-encoded path: the 429s")
        # The same client outside the glob: the by-ip rule's fresh budget, not by-enc's.
        rs = [s.request("/enc/ab", client) for s in services]
        check(
            all(r["status"] == 200 for r in rs)
            and all(any(k == "ratelimit-policy" and v.startswith('"by-ip"') for k, v in r["headers"]) for r in rs),
            "a path outside /enc/a b*: admitted by the by-ip rule on every service",
        )

        # 64 requests at once, spread over the services: still exactly the limit.
        with concurrent.futures.ThreadPoolExecutor(64) as pool:
            rs = list(
                pool.map(
                    lambda i: services[i % len(services)].request("/ip/burst", {"X-Forwarded-For": "203.0.113.99"}),
                    range(64),
                )
            )
        admitted = sum(r["status"] == 200 for r in rs)
        check(admitted == LIMIT, "64 concurrent requests of one client: %d admitted (limit %d)" % (admitted, LIMIT))

        rs = [s.request("/ip/c", {"X-Forwarded-For": "198.51.100.9"}) for s in services]
        check(all(r["status"] == 403 for r in rs), "a denied address: 403 from every service")
        same_answers(rs, "the 403s")
        rs = [s.request("/key/b", {"X-Forwarded-For": "192.0.2.200"}) for s in services]
        check(all(r["status"] == 401 for r in rs), "no API key: 401 from every service")
        same_answers(rs, "the 401s")
        rs = [s.request("/healthz", {"X-Forwarded-For": "198.51.100.200"}) for s in services]
        check(all(r["status"] == 403 for r in rs), "the deny list wins over an exempt path")
        rs = [s.request("/healthz", {"X-Forwarded-For": "203.0.113.7"}) for s in services]
        check(
            all(r["status"] == 200 and not any(k.startswith("ratelimit") for k, _ in r["headers"]) for r in rs),
            "an exempt path: 200 unchecked from every service (the used-up client too)",
        )

        keys = redis_keys(desc["nodes"][0]["port"])
        check(not any(API_KEY in k for k in keys), "no API key in any of the %d Redis keys" % len(keys))
        digest = hashlib.sha256(API_KEY.encode()).hexdigest()
        for want in ("ip:203.0.113.7", "ip:2001:db8:7:1::/64", "apikey:" + digest, "user:alice"):
            check(any(want in k for k in keys), "a Redis key holds %s" % want)
        for s in services:
            check(s.proc.poll() is None, "the %s service is still running" % s.lang)
    finally:
        for s in services:
            s.stop()
        os.unlink(config_path)
        redis.stdin.close()
        redis.wait()
    print()
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
