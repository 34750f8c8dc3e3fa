"""The live policy (polylimit.contrib.live): limits and plans in the policy
document, reload, the watched file, the plan resolver (docs/policy.md)."""

import asyncio
import os
import threading
import time

import polylimit
import pytest
from polylimit.contrib.asgi import RateLimitMiddleware
from polylimit.contrib.http import Policy, RequestView
from polylimit.contrib.live import LivePolicy

PLANS = """# plans: free and pro
version = 1
prefix = "{prefix}"
default_plan = "free"

[plans.free]
api = "10/minute"
[plans.pro]
api = "100/minute"

[tenants]
acme = "pro"

[[rules]]
name = "api"
paths = ["/api/*"]
key = "tenant"
limit = "plan"

[[rules]]
name = "login"
paths = ["/login"]
limit = "3/minute"
algorithm = "gcra"
"""

RESOLVER = "\n[resolver]\ntimeout_ms = 50\ncache_ttl_ms = 60000\ncache_size = 100\n"


def tenant(view):
    return view.header("X-Tenant")


def view(t=None, path="/api/x"):
    return RequestView("GET", path, "192.0.2.1", {"x-tenant": t} if t else {})


def admitted(policy, t, n, path="/api/x"):
    ok = 0
    for _ in range(n):
        outcome = policy.check(view(t, path))
        ok += outcome.status is None
        policy.settle(outcome, 200)
    return ok


async def _ok_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def asgi_admitted(app, t, n):
    ok = 0
    for _ in range(n):
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message, sent=sent):
            sent.append(message)

        headers = [(b"x-tenant", t.encode())]
        scope = {"type": "http", "method": "GET", "path": "/api/x", "headers": headers, "client": ("192.0.2.1", 1)}
        await app(scope, receive, send)
        ok += sent[0]["status"] == 200
    return ok


@pytest.fixture
def doc(prefix):
    return PLANS.format(prefix=prefix)


def test_plans_admit_their_limits_and_a_reload_keeps_each_keys_state(url, doc):
    client = polylimit.Client(url)
    policy = LivePolicy(doc, client, tenant=tenant)
    assert isinstance(policy, Policy) and policy.generation == 1 and policy.last_error == ""
    assert policy.rule_names() == ["api", "login"]
    assert admitted(policy, "acme", 120) == 100  # pro, from the tenants table
    app = RateLimitMiddleware(_ok_app, policy)  # the asyncio path
    assert asyncio.run(asgi_admitted(app, "globex", 15)) == 10  # not in the table: the default plan
    assert admitted(policy, None, 3) == 0  # no tenant: 401
    assert admitted(policy, None, 5, path="/login") == 3  # the rule's own limit
    outcome = policy.check(view("initech"))
    assert ("RateLimit-Policy", '"api";q=10;w=60') in outcome.headers, outcome.headers

    # free: 20/minute. The free tenant has used 10 of them in this window.
    before = policy.check(view("hooli"))  # a request that started on the old policy
    policy.reload(doc.replace('api = "10/minute"', 'api = "20/minute"'))
    assert policy.generation == 2
    assert asyncio.run(asgi_admitted(app, "globex", 15)) == 10
    assert admitted(policy, "globex", 5) == 0
    assert admitted(policy, "acme", 5) == 0  # pro unchanged, used up
    assert admitted(policy, "umbrella", 25) == 20
    assert not policy.settle(before, 200)  # settled on the policy it started on
    metrics = policy.metrics_prometheus()
    assert (
        'polylimit_http_policy_reloads_total{result="accepted"} 2' in metrics
    )  # the first load and the reload, metrics
    client.close()


def test_a_broken_document_is_refused_with_its_line_and_the_old_limits_stay(url, doc):
    client = polylimit.Client(url)
    policy = LivePolicy(doc, client, tenant=tenant)
    broken = doc.replace('limit = "3/minute"', 'limit = "3/fortnight"')
    with pytest.raises(polylimit.InvalidArgument) as raised:
        policy.reload(broken)
    assert 'policy line 23: rules[1] ("login").limit' in str(raised.value)
    with pytest.raises(polylimit.InvalidArgument, match="policy line 26"):
        policy.reload(doc + "\n[plans.free\n")
    assert policy.generation == 1 and "line 26" in policy.last_error
    assert admitted(policy, "globex", 12) == 10
    assert admitted(policy, "acme", 101) == 100
    with pytest.raises(polylimit.InvalidArgument, match="policy line 4: default_plan"):
        LivePolicy(doc.replace('default_plan = "free"', 'default_plan = "gold"'), client)
    client.close()


def test_flask_takes_a_live_policy(doc):
    flask = pytest.importorskip("flask")
    from polylimit.contrib.flask import FlaskRateLimit

    client = polylimit.Client("memory://")
    policy = LivePolicy(doc, client, tenant=tenant)
    app = flask.Flask(__name__)

    @app.route("/api/<name>")
    def api(name):
        return "ok"

    FlaskRateLimit(app, policy)
    web = app.test_client()
    codes = [web.get("/api/x", headers={"X-Tenant": "globex"}).status_code for _ in range(11)]
    assert codes == [200] * 10 + [429]
    policy.reload(doc.replace('api = "10/minute"', 'api = "12/minute"'))
    codes = [web.get("/api/x", headers={"X-Tenant": "globex"}).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    client.close()


def test_a_document_with_a_resolver_needs_one(doc):
    client = polylimit.Client("memory://")
    with pytest.raises(ValueError, match="resolver"):
        LivePolicy(doc + RESOLVER, client, tenant=tenant)
    client.close()


def test_the_resolver_is_asked_once_per_tenant_the_document_does_not_name(url, doc):
    client = polylimit.Client(url)
    asked = []

    async def resolver(t):
        asked.append(t)
        return "pro"

    policy = LivePolicy(doc + RESOLVER, client, tenant=tenant, resolver=resolver)
    app = RateLimitMiddleware(_ok_app, policy)
    assert asyncio.run(asgi_admitted(app, "globex", 101)) == 100
    assert asyncio.run(asgi_admitted(app, "acme", 3)) == 3  # in the table: not asked
    assert asked == ["globex"]  # then cached

    # Blocking (WSGI): a plain function; None is the default plan.
    answers = {"initech": "pro"}
    sync = LivePolicy(doc + RESOLVER, client, tenant=tenant, resolver=answers.get)
    assert admitted(sync, "initech", 101) == 100
    assert admitted(sync, "hooli", 11) == 10
    client.close()


def test_a_resolver_that_fails_or_is_late_gives_the_default_plan_without_holding_the_loop(url, doc):
    client = polylimit.Client(url)

    async def failing(t):
        raise RuntimeError("directory down")

    async def slow(t):
        await asyncio.sleep(0.3)
        return "pro"

    def slow_sync(t):
        time.sleep(0.3)
        return "pro"

    for name, resolver in (("failing", failing), ("slow", slow), ("slow-sync", slow_sync)):
        policy = LivePolicy(doc + RESOLVER, client, tenant=tenant, resolver=resolver)
        app = RateLimitMiddleware(_ok_app, policy)

        async def run(resolver_name=name, app=app):
            ticks = 0
            done = False

            async def ticker():
                nonlocal ticks
                while not done:
                    ticks += 1
                    await asyncio.sleep(0.005)

            task = asyncio.ensure_future(ticker())
            start = time.monotonic()
            ok = await asgi_admitted(app, "t-" + resolver_name, 11)
            elapsed = time.monotonic() - start
            done = True
            await task
            return ok, elapsed, ticks

        ok, elapsed, ticks = asyncio.run(run())
        assert ok == 10, name  # free, not pro
        # 11 requests, each held at most the deadline (50 ms), never the resolver's 0.3 s.
        assert elapsed < 11 * 0.05 + 0.5, (name, elapsed)
        if name != "failing":
            assert elapsed >= 11 * 0.05 * 0.9, (name, elapsed)  # each waited for its deadline
            assert ticks >= 11 * 0.05 / 0.005 / 4, (name, ticks)  # the loop went on meanwhile

    # Blocking: the answer of a resolver slower than the deadline is ignored.
    def late(t):
        time.sleep(0.08)
        return "pro"

    def raising(t):
        raise KeyError(t)

    for resolver in (late, raising):
        policy = LivePolicy(doc + RESOLVER, client, tenant=tenant, resolver=resolver)
        assert admitted(policy, "w-" + resolver.__name__, 11) == 10, resolver.__name__
    client.close()


def _write(path, text):
    tmp = path + ".new"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.rename(tmp, path)  # as editors and configuration tools replace a file


def _wait_generation(policy, g, timeout=1.0):
    deadline = time.monotonic() + timeout
    while policy.generation < g and time.monotonic() < deadline:
        time.sleep(0.01)
    return policy.generation


def test_a_watched_file_is_reloaded_within_a_second(url, doc, tmp_path):
    client = polylimit.Client(url)
    path = str(tmp_path / "policy.toml")
    _write(path, doc)
    policy = LivePolicy.open(path, client, watch=0.02, tenant=tenant)
    assert policy.path == path
    assert admitted(policy, "globex", 12) == 10
    _write(path, doc.replace('api = "10/minute"', 'api = "20/minute"'))
    assert _wait_generation(policy, 2) == 2, "not reloaded within a second"
    assert admitted(policy, "globex", 12) == 10
    # A broken file: remembered, the policy stays; fixed: reloaded.
    _write(path, '[[rules]]\nname = "x"\nlimit = 5\n')
    deadline = time.monotonic() + 1
    while policy.last_error == "" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert 'policy line 3: rules[0] ("x").limit' in policy.last_error
    assert policy.generation == 2
    assert admitted(policy, "hooli", 21) == 20
    _write(path, doc.replace('api = "10/minute"', 'api = "30/minute"'))
    assert _wait_generation(policy, 3) == 3
    assert admitted(policy, "globex", 12) == 10
    policy.close()
    # Unwatched: reload_file() reads it again.
    unwatched = LivePolicy.open(path, client, tenant=tenant)
    _write(path, doc)
    unwatched.reload_file()
    assert unwatched.generation == 2
    with pytest.raises(ValueError):
        LivePolicy.open(path, client, watch=0)
    client.close()


def test_reloads_while_another_thread_runs_and_close(doc):
    client = polylimit.Client("memory://")
    policy = LivePolicy(doc, client, tenant=tenant)
    stop = threading.Event()
    spins = [0]

    def spin():
        while not stop.is_set():
            spins[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    for i in range(50):
        policy.reload(doc.replace('api = "10/minute"', 'api = "%d/minute"' % (10 + i % 2)))
    stop.set()
    t.join()
    assert policy.generation == 51 and spins[0] > 0
    policy.close()
    with pytest.raises(polylimit.Error):
        policy.reload(doc)
    client.close()
