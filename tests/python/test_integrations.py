"""The web integrations through real HTTP: the example apps of
examples/python-{fastapi,flask,django} served by uvicorn, Flask's own server
(werkzeug) and waitress in processes of their own, against the suite's
redis-server, asked with urllib. Header values are computed here from the
limits (10 per 60 s, 3 per 60 s, ...), not read from the library."""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _command(kind, port):
    host = "127.0.0.1"
    if kind in ("fastapi", "asgi"):
        # --no-proxy-headers: uvicorn would otherwise rewrite the client
        # address from X-Forwarded-For itself (it trusts 127.0.0.1).
        return [
            sys.executable,
            "-m",
            "uvicorn",
            "app:app",
            "--host",
            host,
            "--port",
            str(port),
            "--no-proxy-headers",
            "--log-level",
            "warning",
        ]
    if kind == "flask":
        return [sys.executable, "-m", "flask", "--app", "app", "run", "--host", host, "--port", str(port)]
    if kind == "django":
        return [sys.executable, "app.py", str(port)]  # waitress
    raise ValueError(kind)


class Server:
    """One app served in a process of its own: examples/python-<kind>, or
    the app in `app_dir` (served the way `kind`'s are)."""

    def __init__(self, kind, redis_url, prefix, trusted="", app_dir=None):
        self.kind = kind
        self.port = _free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        env = dict(
            os.environ,
            POLYLIMIT_URL=redis_url,
            EXAMPLE_PREFIX=prefix,
            EXAMPLE_TRUSTED_PROXIES=trusted,
            PYTHONUNBUFFERED="1",
        )
        self.log = open(os.path.join(_logdir(), "%s-%d.log" % (kind, self.port)), "w+")
        cwd = app_dir or os.path.join(EXAMPLES, "python-" + kind)
        self.proc = subprocess.Popen(
            _command(kind, self.port),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def wait(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError("%s server exited: %s" % (self.kind, self.log.read()))
            try:
                if request(self.base + "/health")[0] == 200:
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("%s server did not answer" % self.kind)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.seek(0)
        text = self.log.read()
        self.log.close()
        return text


_LOGDIR = []


def _logdir():
    if not _LOGDIR:
        import atexit
        import shutil
        import tempfile

        _LOGDIR.append(tempfile.mkdtemp(prefix="polylimit-py-http-"))
        # The servers' logs are read into failure messages at stop(); the
        # directory goes when the test process exits.
        atexit.register(shutil.rmtree, _LOGDIR[0], True)
    return _LOGDIR[0]


def request(url, method="GET", headers=None, data=None):
    """(status, headers (case-insensitive, an email.message.Message), body)."""
    req = urllib.request.Request(
        url,
        method=method,
        headers=headers or {},
        data=data if data is not None else (b"" if method == "POST" else None),
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.headers, e.read()


def start(*servers):
    for s in servers:
        s.wait()
    return servers


@pytest.fixture(scope="module")
def servers(redis_server):
    """One server per framework (started when a test first needs it),
    trusting X-Forwarded-For from 127.0.0.1 (the test client), so that every
    test can be its own client address."""
    running = {}

    def get(kind):
        if kind not in running:
            running[kind] = Server(kind, redis_server.url, "it" + uuid.uuid4().hex[:8], trusted="127.0.0.1")
            running[kind].wait()
        return running[kind]

    yield get
    logs = [s.stop() for s in running.values()]
    for log in logs:
        assert "Traceback" not in log, log


@pytest.fixture(params=["fastapi", "flask", "django"])
def app_server(request, servers):
    return servers(request.param)


_next_ip = [0]


def fresh_ip():
    """A client address of the documentation range not used before in this run."""
    _next_ip[0] += 1
    n = _next_ip[0]
    return "198.51.%d.%d" % (100 + n // 250, 1 + n % 250)


RATE_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy", "RateLimit")


def expect_rate_headers(h, limit, window, remaining, denied, rule="default"):
    """The core's headers for `limit` per `window` seconds (one limit: its
    policy is named after the rule that decided), `remaining` left;
    Reset/Retry-After are the window rounded up, less the little time the
    test has taken."""
    name = '"%s"' % rule
    assert h["RateLimit-Limit"] == str(limit)
    assert h["RateLimit-Remaining"] == str(remaining)
    reset = int(h["RateLimit-Reset"])
    assert window - 2 <= reset <= window, h
    assert h["RateLimit-Policy"] == "%s;q=%d;w=%d" % (name, limit, window)
    assert h["RateLimit"] == "%s;r=%d;t=%d" % (name, remaining, reset)
    if denied:
        retry = int(h["Retry-After"])
        assert 1 <= retry <= window, h
    else:
        assert "Retry-After" not in h


def test_limit_counts_down_then_429(app_server):
    ip = fresh_ip()
    for i in range(10):
        status, h, _ = request(app_server.base + "/", headers={"X-Forwarded-For": ip})
        assert status == 200, (i, h)
        expect_rate_headers(h, 10, 60, 9 - i, denied=False)
    for _ in range(2):
        status, h, body = request(app_server.base + "/", headers={"X-Forwarded-For": ip})
        assert status == 429
        expect_rate_headers(h, 10, 60, 0, denied=True)
        assert b"Too Many Requests" in body


def test_exempt_route_is_never_limited(app_server):
    ip = fresh_ip()
    for _ in range(15):
        status, h, _ = request(app_server.base + "/health", headers={"X-Forwarded-For": ip})
        assert status == 200
        assert not [n for n in RATE_HEADERS if n in h], dict(h)
    # ... and did not count: the default limit is untouched for this client.
    status, h, _ = request(app_server.base + "/", headers={"X-Forwarded-For": ip})
    assert status == 200 and h["RateLimit-Remaining"] == "9"


def test_per_route_limit(app_server):
    ip = fresh_ip()
    for i in range(3):
        status, h, _ = request(app_server.base + "/login", method="POST", headers={"X-Forwarded-For": ip})
        assert status == 200, h
        expect_rate_headers(h, 3, 60, 2 - i, denied=False, rule="login")
    status, h, _ = request(app_server.base + "/login", method="POST", headers={"X-Forwarded-For": ip})
    assert status == 429
    expect_rate_headers(h, 3, 60, 0, denied=True, rule="login")
    # The route's limit replaced the default one and counts apart from it.
    status, h, _ = request(app_server.base + "/", headers={"X-Forwarded-For": ip})
    assert status == 200
    expect_rate_headers(h, 10, 60, 9, denied=False)


def test_trusted_proxy_forwarded_for(app_server):
    a, b = fresh_ip(), fresh_ip()
    for i in range(10):
        assert request(app_server.base + "/", headers={"X-Forwarded-For": a})[0] == 200
    assert request(app_server.base + "/", headers={"X-Forwarded-For": a})[0] == 429
    # Another client behind the same proxy has its own budget.
    status, h, _ = request(app_server.base + "/", headers={"X-Forwarded-For": b})
    assert status == 200 and h["RateLimit-Remaining"] == "9"
    # A client cannot pick its address: what it wrote itself is left of the
    # address the (trusted) proxy appended, and the proxy's is the one used.
    status, h, _ = request(app_server.base + "/", headers={"X-Forwarded-For": "%s, %s" % (fresh_ip(), a)})
    assert status == 429
    status, h, _ = request(app_server.base + "/", headers={"X-Forwarded-For": "%s, %s" % (a, b)})
    assert status == 200 and h["RateLimit-Remaining"] == "8"
    # A trusted hop in the chain is skipped over: 127.0.0.1 is a proxy too.
    status, h, _ = request(app_server.base + "/", headers={"X-Forwarded-For": "%s, 127.0.0.1" % b})
    assert status == 200 and h["RateLimit-Remaining"] == "7"


def test_fastapi_dependency_per_api_key(redis_server, servers):
    app_server = servers("fastapi")
    key_a, key_b = uuid.uuid4().hex, uuid.uuid4().hex
    for i in range(5):
        status, h, _ = request(app_server.base + "/search?q=x", headers={"X-API-Key": key_a})
        assert status == 200, h
        expect_rate_headers(h, 5, 60, 4 - i, denied=False)
    # The contract's answer (the example installs refusal_handler): the
    # core's plain-text body and Content-Type, as the middleware sends.
    status, h, body = request(app_server.base + "/search", headers={"X-API-Key": key_a})
    assert status == 429 and body == b"Too Many Requests\n", body
    assert h["Content-Type"] == "text/plain; charset=utf-8"
    expect_rate_headers(h, 5, 60, 0, denied=True)
    status, h, _ = request(app_server.base + "/search", headers={"X-API-Key": key_b})
    assert status == 200 and h["RateLimit-Remaining"] == "4"
    # No key: refused, not let through unlimited (an API key is a credential).
    status, h, body = request(app_server.base + "/search")
    assert status == 401 and "RateLimit-Limit" not in h, (status, body)
    assert body == b"no credential to rate-limit the request by\n"
    # The API key itself is not in Redis: only its digest.
    stored = redis_server.command("KEYS", "*")
    assert stored and not [k for k in stored if key_a.encode() in k]


def test_flask_user_key(servers):
    app_server = servers("flask")
    import base64

    ip = fresh_ip()

    def basic(name):
        return {"Authorization": "Basic " + base64.b64encode(name.encode() + b":pw").decode(), "X-Forwarded-For": ip}

    alice, bob = "alice" + uuid.uuid4().hex[:6], "bob" + uuid.uuid4().hex[:6]
    for i in range(4):
        status, h, _ = request(app_server.base + "/me", headers=basic(alice))
        assert status == 200
        expect_rate_headers(h, 4, 60, 3 - i, denied=False, rule="me")
    assert request(app_server.base + "/me", headers=basic(alice))[0] == 429
    # Same address, another user: another budget; anonymous: keyed by IP.
    assert request(app_server.base + "/me", headers=basic(bob))[0] == 200
    status, h, _ = request(app_server.base + "/me", headers={"X-Forwarded-For": ip})
    assert status == 200 and h["RateLimit-Remaining"] == "3"


@pytest.mark.parametrize(
    "kinds", [("fastapi", "fastapi"), ("flask", "django")], ids=["fastapi+fastapi", "flask+django"]
)
def test_two_servers_share_one_limit_exactly(redis_server, kinds):
    """Two server processes, one Redis: exactly 10 requests are admitted in
    all. Neither trusts a proxy, so X-Forwarded-For is ignored: every request
    is the client 127.0.0.1, whatever it claims."""
    prefix = "share" + uuid.uuid4().hex[:8]
    servers = [Server(kind, redis_server.url, prefix) for kind in kinds]
    try:
        start(*servers)
        statuses = []
        for i in range(30):
            s = servers[i % 2]
            status, h, _ = request(s.base + "/", headers={"X-Forwarded-For": fresh_ip()})
            statuses.append(status)
            if status == 200:
                expect_rate_headers(h, 10, 60, 10 - statuses.count(200), denied=False)
            else:
                expect_rate_headers(h, 10, 60, 0, denied=True)
        assert statuses == [200] * 10 + [429] * 20
    finally:
        logs = [s.stop() for s in servers]
    for log in logs:
        assert "Traceback" not in log, log


def test_metrics_route_of_the_fastapi_example(servers):
    app_server = servers("fastapi")
    from prometheus_client.parser import text_string_to_metric_families

    status, h, body = request(app_server.base + "/metrics")
    assert status == 200 and "RateLimit-Limit" not in h
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    checks = families["polylimit_checks"]
    assert [s.labels for s in checks.samples] == [{"client": "fastapi"}]
    assert checks.samples[0].value >= 1
    # The policy's requests per rule and outcome: rule names, never keys.
    rules = {(s.labels["rule"], s.labels["outcome"]) for s in families["polylimit_http_requests"].samples}
    assert ("default", "allowed") in rules and ("login", "denied") in rules
    assert all(set(s.labels) == {"rule", "outcome"} for s in families["polylimit_http_requests"].samples)
