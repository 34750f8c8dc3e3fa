"""The binding surface for integrations (POLYLIMIT_URL, name, tls_*,
headers, Prometheus pages) and polylimit.contrib in process: client
addresses behind proxies, failure behaviour, the prometheus_client
collector."""

import asyncio
import json
import socket

import polylimit
import pytest
from polylimit.contrib import http
from polylimit.contrib.asgi import RateLimitMiddleware
from polylimit.contrib.prometheus import PolylimitCollector
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

# -- Client: no silent default, name, tls_* ------------------------------------


def test_client_without_url_reads_polylimit_url(monkeypatch, redis_server, key):
    monkeypatch.delenv("POLYLIMIT_URL", raising=False)
    with pytest.raises(polylimit.InvalidArgument, match="POLYLIMIT_URL.*memory://"):
        polylimit.Client()
    with pytest.raises(polylimit.InvalidArgument, match="POLYLIMIT_URL"):
        polylimit.Client("")
    monkeypatch.setenv("POLYLIMIT_URL", redis_server.url)
    with polylimit.Client() as client:
        assert client.url == redis_server.url
        lim = client.limiter("2/minute")
        assert [lim.check(key).allowed for _ in range(3)] == [True, True, False]
        assert client.stats()["round_trips"] >= 3  # it really went to Redis


def test_client_name_and_repr_hide_the_password(monkeypatch):
    monkeypatch.setenv("POLYLIMIT_URL", "redis://user:s3cret@127.0.0.1:1")
    client = polylimit.Client(name="api")
    assert client.name == "api"
    assert "s3cret" not in repr(client) and "name='api'" in repr(client)
    client.close()
    with pytest.raises(polylimit.InvalidArgument):
        polylimit.Client("memory://", name="bad name with spaces")
    with pytest.raises(TypeError):
        polylimit.Client("memory://", name=3)  # type: ignore[arg-type]


def test_tls_options_are_passed_to_the_core(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("not a certificate")
    # Until the core speaks TLS (and for a non-TLS URL afterwards) it refuses
    # TLS options on a redis:// URL: proof that they reach it.
    for options in (
        {"tls_ca_file": str(ca)},
        {"tls_ca_file": ca},
        {"tls_server_name": "redis.example"},
        {"tls_insecure": True},
        {"tls_cert_file": str(ca), "tls_key_file": str(ca)},
        {"tls_ca_dir": str(tmp_path)},
    ):
        with pytest.raises(polylimit.InvalidArgument, match="tls"):
            polylimit.Client("redis://127.0.0.1:1", **options)
    with pytest.raises(TypeError):
        polylimit.Client("redis://127.0.0.1:1", tls_insecure=1)  # type: ignore[arg-type]


# -- headers: the core's, exactly ---------------------------------------------


def test_headers_of_a_decision(url, key, prefix):
    with polylimit.Client(url) as client:
        lim = client.limiter(limit=3, window=60, prefix=prefix)
        d = lim.check(key)
        h = lim.headers(d)
        assert list(h) == ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy", "RateLimit"]
        assert h["RateLimit-Limit"] == "3" and h["RateLimit-Remaining"] == "2"
        assert h["RateLimit-Reset"] in ("59", "60")
        assert h["RateLimit-Policy"] == '"default";q=3;w=60'
        assert h["RateLimit"] == '"default";r=2;t=%s' % h["RateLimit-Reset"]
        assert d.headers() == h
        lim.check(key, 2)
        denied = lim.check(key)
        h = denied.headers()
        assert list(h)[0] == "Retry-After" and 1 <= int(h["Retry-After"]) <= 60
        assert h["RateLimit-Remaining"] == "0"
        for d in lim.check_many([key, key + "2"]):
            assert d.headers()["RateLimit-Limit"] == "3"
        with pytest.raises(TypeError):
            lim.headers("not a decision")  # type: ignore[arg-type]


def test_limits_package_rate_specs(url, key, prefix):
    """Specs as the `limits` package writes them work as they are."""
    with polylimit.Client(url) as client:
        lim = client.limiter("200 per day, 50 per hour", prefix=prefix)
        h = lim.check(key).headers()
        assert h["RateLimit-Policy"] == '"200-per-86400s";q=200;w=86400, "50-per-3600s";q=50;w=3600'
        assert h["RateLimit-Limit"] == "50" and h["RateLimit-Remaining"] == "49"
        for spec in ("2/second;5/minute", "2 per second | 5 per minute", "1000 per month", "1/year"):
            assert client.limiter(spec, prefix=prefix).check(key + spec).allowed
        lim = client.limiter("2/second; 3/minute", prefix=prefix)
        assert [lim.check(key + "m").allowed for _ in range(3)] == [True, True, False]


# -- Prometheus ---------------------------------------------------------------


def _families(text):
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_prometheus_text_of_two_clients_parses():
    a = polylimit.Client("memory://", name="a")
    b = polylimit.Client("memory://", name="b")
    la, lb = a.limiter("2/minute"), b.limiter("1/minute")
    for _ in range(3):
        la.check("k")
    lb.check("k")
    page = polylimit.prometheus_text(a, b)
    fams = _families(page)
    checks = {s.labels["client"]: s.value for s in fams["polylimit_checks"].samples}
    assert checks == {"a": 3.0, "b": 1.0}
    denied = {s.labels["client"]: s.value for s in fams["polylimit_denied"].samples}
    assert denied == {"a": 1.0, "b": 0.0}
    assert page.count("# TYPE polylimit_checks_total counter") == 1
    assert fams["polylimit_check_latency_seconds"].type == "histogram"
    # One client alone: labelled by its name.
    assert 'polylimit_checks_total{client="a"} 3' in a.stats_prometheus()
    # Two clients need two distinct names (the core says which).
    c = polylimit.Client("memory://")
    with pytest.raises(polylimit.InvalidArgument, match=r"clients\[1\]"):
        polylimit.prometheus_text(a, c)
    with pytest.raises(polylimit.InvalidArgument, match=r"clients\[1\]"):
        polylimit.prometheus_text(a, a)
    with pytest.raises(polylimit.InvalidArgument):
        polylimit.prometheus_text()
    with pytest.raises(TypeError):
        polylimit.prometheus_text(a, "b")  # type: ignore[arg-type]
    for cl in (a, b, c):
        cl.close()


def test_prometheus_client_collector_scrape(redis_server, key, prefix):
    a = polylimit.Client(redis_server.url, name="redis")
    b = polylimit.Client("memory://", name="local")
    la, lb = a.limiter("2/minute", prefix=prefix), b.limiter("5/minute", prefix=prefix)
    for _ in range(3):
        la.check(key)
    lb.check(key)
    registry = CollectorRegistry()
    registry.register(PolylimitCollector(a, b))
    fams = _families(generate_latest(registry).decode())
    assert {
        s.labels["client"]: s.value for s in fams["polylimit_checks"].samples if s.name == "polylimit_checks_total"
    } == {"redis": 3.0, "local": 1.0}
    assert {
        s.labels["client"]: s.value for s in fams["polylimit_denied"].samples if s.name == "polylimit_denied_total"
    } == {"redis": 1.0, "local": 0.0}
    assert fams["polylimit_evicting_nodes"].type == "gauge"
    hist = fams["polylimit_check_latency_seconds"]
    counts = {s.labels["client"]: s.value for s in hist.samples if s.name.endswith("_count")}
    assert counts == {"redis": 3.0, "local": 1.0}
    inf = {s.labels["client"]: s.value for s in hist.samples if s.labels.get("le") == "+Inf"}
    assert inf == counts
    # The same families and values as the core's own page.
    own = _families(polylimit.prometheus_text(a, b))
    for name in ("polylimit_checks", "polylimit_admitted", "polylimit_denied", "polylimit_round_trips"):
        assert sorted((s.labels["client"], s.value) for s in own[name].samples) == sorted(
            (s.labels["client"], s.value) for s in fams[name].samples if s.name.endswith("_total")
        )
    a.close()
    b.close()


def test_prometheus_client_collector_with_policies():
    client = polylimit.Client("memory://", name="web")
    a = http.Policy(http.Limit(client.limiter("1/minute", prefix="pa"), name="api"))
    b = http.Policy(http.Limit(client.limiter("1/minute", prefix="pb"), name="api"), routes={"/x": None})
    view = http.RequestView("GET", "/", "192.0.2.1", {})
    assert [a.check(view).status, a.check(view).status, b.check(view).status] == [None, 429, None]
    a.check(http.RequestView("GET", "/", "testclient", {}))  # no address: a missing key
    registry = CollectorRegistry()
    registry.register(PolylimitCollector(client, policies=[a, b]))
    fams = _families(generate_latest(registry).decode())
    got = {(s.labels["rule"], s.labels["outcome"]): s.value for s in fams["polylimit_http_requests"].samples}
    assert got[("api", "allowed")] == 2.0 and got[("api", "denied")] == 1.0 and got[("api", "missing_key")] == 1.0
    assert got[("x", "allowed")] == 0.0 and got[("(lists)", "forbidden")] == 0.0
    with pytest.raises(TypeError):
        PolylimitCollector(client, policies=[client])  # type: ignore[list-item]
    client.close()


# -- client addresses ---------------------------------------------------------


@pytest.mark.parametrize(
    "peer, xff, trusted, expected",
    [
        ("10.0.0.1", "203.0.113.9", [], "ip:10.0.0.1"),  # no proxy trusted: header ignored
        ("10.0.0.1", "203.0.113.9", ["10.0.0.0/8"], "ip:203.0.113.9"),
        ("192.0.2.1", "203.0.113.9", ["10.0.0.0/8"], "ip:192.0.2.1"),  # the peer is not a trusted proxy
        ("10.0.0.1", "1.2.3.4, 203.0.113.9", ["10.0.0.0/8"], "ip:203.0.113.9"),  # the client wrote 1.2.3.4 itself
        ("10.0.0.1", "203.0.113.9, 10.0.0.7", ["10.0.0.0/8"], "ip:203.0.113.9"),  # two proxies
        ("10.0.0.1", "10.0.0.8, 10.0.0.7", ["10.0.0.0/8"], "ip:10.0.0.8"),  # all trusted: the first
        ("10.0.0.1", "203.0.113.9, junk", ["10.0.0.0/8"], "ip:10.0.0.1"),  # garbage stops the walk
        ("10.0.0.1", "203.0.113.9:4711", ["10.0.0.1"], "ip:203.0.113.9"),
        ("::1", "2001:db8::5", ["::1"], "ip:2001:db8::/64"),  # IPv6 by its /64
        ("::ffff:10.0.0.1", "[2001:db8::5]:80", ["10.0.0.0/8"], "ip:2001:db8::/64"),
        (None, "203.0.113.9", ["10.0.0.0/8"], None),  # no peer address: no ip key
        ("testclient", None, [], None),  # a test client's peer is no address either
    ],
)
def test_client_address_is_the_cores(peer, xff, trusted, expected):
    """The client's address is the core's (contract.md, "The client's
    address"); the binding passes the peer and X-Forwarded-For as they are."""
    client = polylimit.Client("memory://")
    policy = http.Policy(client.limiter("5/minute"), trusted_proxies=trusted)
    step = policy.prepare(http.RequestView("GET", "/", peer, {"x-forwarded-for": xff} if xff else {}))
    if expected is None:
        assert step.action == polylimit._core.HTTP_RESPOND and step.status == 400
        outcome = policy.check(http.RequestView("GET", "/", peer, {}))
        assert outcome.status == 400 and outcome.body == "no rate-limit key in the request\n"
    else:
        assert step.action == polylimit._core.HTTP_CHECK and step.key == expected
    client.close()


def _key_of(key, view, **hooks):
    client = polylimit.Client("memory://")
    try:
        policy = http.Policy(http.Limit(client.limiter("5/minute"), key), trusted_proxies=["10.0.0.1"], **hooks)
        outcome = policy.check(view)  # the application's key asked for as a middleware asks
        return outcome.key if outcome.key is not None else outcome.status
    finally:
        client.close()


def test_key_helpers_are_the_cores_key_parts():
    view = http.RequestView(
        "get",
        "/items/7",
        "10.0.0.1",
        {"x-api-key": "secret", "x-forwarded-for": "203.0.113.9", "x-tenant-id": "t1"},
        route="/items/{id}",
        user=lambda: "42",
    )
    assert _key_of(http.client_ip(), view) == "ip:203.0.113.9"
    assert _key_of(http.user(), view) == "user:42"
    k = _key_of(http.api_key(), view)
    assert k.startswith("apikey:") and "secret" not in k and len(k) == 7 + 64
    assert k == "apikey:" + __import__("hashlib").sha256(b"secret").hexdigest()
    assert _key_of(http.header("X-Tenant-Id"), view).startswith("header:x-tenant-id:")
    assert _key_of(http.route(), view) == "route:GET /items/{id}"
    assert _key_of(http.compose(http.user(), http.route()), view) == "user:42|route:GET /items/{id}"
    assert _key_of(http.tenant(), view, tenant=lambda v: v.header("X-Tenant-Id")) == "tenant:t1"
    assert _key_of(http.user(get=lambda native: "from-native"), view) == "user:from-native"
    anon = http.RequestView("GET", "/", "10.0.0.2", {})
    assert _key_of(http.user(), anon) == 401 and _key_of(http.api_key(), anon) == 401
    assert _key_of(http.first_of(http.api_key(), http.user(), http.client_ip()), anon) == "ip:10.0.0.2"
    assert _key_of(http.compose(http.user(), http.client_ip()), anon) == 401
    # The application's own key: asked for only when its rule matches, stored as given.
    assert _key_of(lambda r: "tenant:" + r.path, view) == "tenant:/items/7"
    assert _key_of(lambda r: None, view) == 400
    assert _key_of(http.credential(lambda r: None), view) == 401
    assert _key_of(http.first_of(lambda r: None, http.client_ip()), anon) == "ip:10.0.0.2"
    assert _key_of(http.compose(lambda r: "a", lambda r: "b"), anon) == "a|b"
    assert repr(http.first_of(http.api_key(), http.client_ip())) == "Key('api_key:X-API-Key', 'ip')"


def test_policy_rules():
    client = polylimit.Client("memory://")
    default, login = client.limiter("10/minute", prefix="d"), client.limiter("3/minute", prefix="l")
    p = http.Policy(
        default, routes={"/login": http.Limit(login, methods=["POST"]), "/open/*": None}, exempt=["/health"]
    )

    def rule(method, path):
        step = p.prepare(http.RequestView(method, path, "192.0.2.1", {}))
        return (p.rule_name(step.rule) if step.rule >= 0 else None), step.action == polylimit._core.HTTP_CHECK

    assert rule("GET", "/x") == ("default", True)
    assert rule("POST", "/login") == ("login", True)
    assert rule("GET", "/login") == ("login:other-methods", False)  # the route's rule is for POST only
    assert rule("GET", "/open/a/b") == ("open/*", False)
    assert rule("GET", "/health") == (None, False)
    assert p.limiters == [login, default]
    doc = json.loads(p.document)
    assert doc["exempt"] == ["/health"] and doc["rules"][0]["paths"] == ["/login"]
    with pytest.raises(ValueError):
        http.Policy(default, on_error="ignore")
    with pytest.raises(TypeError):
        http.Limit("not a limiter")  # type: ignore[arg-type]
    with pytest.raises(polylimit.InvalidArgument, match="trusted_proxies"):
        http.Policy(default, trusted_proxies=["10.0.0.0/33"])
    client.close()


def test_policy_from_document():
    client = polylimit.Client("memory://")
    limiters = [client.limiter("2/minute", prefix="doc-a"), client.limiter("1/minute", prefix="doc-b")]
    doc = {
        "trusted_proxies": ["10.0.0.0/8"],
        "deny": {"users": ["mallory"]},
        "rules": [
            {"name": "search", "paths": ["/search"], "limiter": 1, "key": "api_key", "cost": {"header": "X-Cost"}},
            {"name": "app", "paths": ["/app"], "limiter": 0, "key": "app"},
            {"name": "all", "limiter": 0, "key": ["user", "ip"]},
        ],
    }
    with pytest.raises(ValueError, match="app_key"):
        http.Policy.from_document(doc, limiters)  # a rule keyed by "app" needs the application's key
    policy = http.Policy.from_document(
        json.dumps(doc), limiters, user=lambda v: v.header("X-User"), app_key=lambda v: v.header("X-App")
    )
    assert policy.header_names() == ["x-forwarded-for", "x-api-key", "x-cost"]
    assert policy.rule_names() == ["search", "app", "all"]

    def view(path, **headers):
        return http.RequestView("GET", path, "10.0.0.1", {k.replace("_", "-").lower(): v for k, v in headers.items()})

    assert [policy.check(view("/", X_Forwarded_For="192.0.2.7")).status for _ in range(3)] == [None, None, 429]
    assert policy.check(view("/", X_User="mallory")).status == 403
    assert policy.check(view("/", X_User="alice")).key == "user:alice"
    assert policy.check(view("/app", X_App="k1")).key == "k1"
    assert policy.check(view("/app")).status == 400
    assert policy.check(view("/search", X_API_Key="s", X_Cost="x")).status == 400
    assert policy.check(view("/search", X_API_Key="s", X_Cost="1")).status is None
    page = policy.metrics_prometheus()
    assert 'polylimit_http_requests_total{rule="all",outcome="denied"} 1' in page
    assert 'polylimit_http_requests_total{rule="(lists)",outcome="forbidden"} 1' in page
    with pytest.raises(polylimit.InvalidArgument, match="limiter"):
        http.Policy.from_document({"rules": [{"name": "x", "limiter": 2}]}, limiters)
    with pytest.raises(TypeError):
        http.Policy.from_document({"rules": []}, ["not a limiter"])  # type: ignore[list-item]
    client.close()


def test_cost_and_send_headers():
    client = polylimit.Client("memory://")
    lim = client.limiter("10/minute")
    by_fn = http.Policy(http.Limit(lim, cost=lambda r: int(r.header("X-Weight") or "1")), send_headers=False)
    outcome = by_fn.check(http.RequestView("GET", "/", "192.0.2.1", {"x-weight": "4"}))
    assert outcome.step.cost == 4 and outcome.headers == [] and outcome.decision.remaining == 6
    by_header = http.Policy(http.Limit(lim, cost={"header": "X-Weight", "max": 5}))
    assert by_header.check(http.RequestView("GET", "/", "192.0.2.2", {"x-weight": "9"})).status == 400
    assert by_header.check(http.RequestView("GET", "/", "192.0.2.2", {"x-weight": "5"})).step.cost == 5
    assert http.Policy(http.Limit(lim, cost=3)).check(http.RequestView("GET", "/", "192.0.2.3", {})).step.cost == 3
    client.close()


def test_policy_from_config_gives_each_rule_its_own_counts():
    policy, client = http.policy_from_config(
        {
            "URL": "memory://",
            "CLIENT": {"name": "cfg"},
            "PREFIX": "t",
            "DEFAULT": "2/minute",
            "ROUTES": {"/a": {"rate": "2/minute", "key": "ip+route"}, "/b": None},
            "EXEMPT": ["/health"],
            "TRUSTED_PROXIES": ["10.0.0.1"],
        }
    )
    assert client.name == "cfg"
    view = http.RequestView("GET", "/x", "192.0.2.1", {})
    assert [policy.check(view).status for _ in range(3)] == [None, None, 429]
    view_a = http.RequestView("GET", "/a", "192.0.2.1", {})
    assert [policy.check(view_a).status for _ in range(3)] == [None, None, 429]
    assert policy.check(http.RequestView("GET", "/b", "192.0.2.1", {})).status is None
    with pytest.raises(ValueError, match="unknown setting"):
        http.policy_from_config({"URL": "memory://", "DEFAULTS": "1/s"})
    with pytest.raises(ValueError, match="unknown option"):
        http.policy_from_config({"URL": "memory://", "DEFAULT": {"rate": "1/s", "burst": 3}})
    client.close()


# -- failure behaviour (Redis does not answer) ---------------------------------


def _dead_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return "redis://127.0.0.1:%d" % s.getsockname()[1]  # closed again: connections are refused


async def _asgi_get(app, path="/"):
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "headers": [], "client": ("192.0.2.1", 5000)}
    await app(scope, receive, send)
    start = sent[0]
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, scope


async def _ok_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


def test_failure_behaviour(caplog):
    client = polylimit.Client(_dead_url(), connect_timeout=0.2, command_timeout=0.2)
    failing = client.limiter("5/minute", prefix="f")  # on_failure="error": the check raises
    # Default: 503, logged, the app keeps serving.
    status, headers, _ = asyncio.run(_asgi_get(RateLimitMiddleware(_ok_app, http.Policy(failing))))
    assert status == 503 and "RateLimit-Limit" not in headers
    assert any("on_error='unavailable'" in r.getMessage() for r in caplog.records)
    # on_error="allow": the request goes on, without headers.
    status, headers, _ = asyncio.run(_asgi_get(RateLimitMiddleware(_ok_app, http.Policy(failing, on_error="allow"))))
    assert status == 200 and "ratelimit-limit" not in headers
    # The limiter's own failure policy answers first, with a decision.
    for on_failure, expected in (("open", 200), ("closed", 429), ("local", 200)):
        lim = client.limiter("5/minute", prefix="f" + on_failure, on_failure=on_failure)
        status, headers, scope = asyncio.run(_asgi_get(RateLimitMiddleware(_ok_app, http.Policy(lim))))
        assert status == expected, on_failure
        assert scope["state"]["polylimit"].degraded
        assert headers["ratelimit-limit"] == "5"
    client.close()


def test_asgi_middleware_passes_other_scopes_and_exempt_paths():
    client = polylimit.Client("memory://")
    lim = client.limiter("1/minute", prefix="asgi")
    app = RateLimitMiddleware(_ok_app, http.Policy(lim, exempt=["/health"]))
    assert asyncio.run(_asgi_get(app))[0] == 200
    status, headers, _ = asyncio.run(_asgi_get(app))
    assert status == 429 and headers["retry-after"] and headers["content-type"].startswith("text/plain")
    assert asyncio.run(_asgi_get(app, "/health"))[0] == 200
    seen = []

    async def lifespan_app(scope, receive, send):
        seen.append(scope["type"])

    asyncio.run(RateLimitMiddleware(lifespan_app, http.Policy(lim))({"type": "lifespan"}, None, None))
    assert seen == ["lifespan"]
    with pytest.raises(TypeError):
        RateLimitMiddleware(_ok_app, lim)  # type: ignore[arg-type]
    client.close()


# -- count_when (response-based counting) and rate specs on routes ---------------


def test_settle_refunds_only_admitted_requests_whose_status_does_not_count():
    client = polylimit.Client("memory://")
    lim = client.limiter("2/minute", prefix="settle")
    policy = http.Policy(http.Limit(lim, count_when=http.count_failures))
    view = http.RequestView("GET", "/login", "192.0.2.1", {})
    for _ in range(4):  # successes: each refunded, never down to a 429
        outcome = policy.check(view)
        assert outcome.status is None and outcome.key == "ip:192.0.2.1"
        assert policy.settle(outcome, 200)
    outcomes = [policy.check(view) for _ in range(3)]
    assert [o.status for o in outcomes] == [None, None, 429]
    assert not policy.settle(outcomes[0], 401)  # counts: kept
    assert not policy.settle(outcomes[2], 200)  # denied: nothing was taken, nothing to give back
    assert lim.peek("ip:192.0.2.1").remaining == 0
    # Without count_when every response counts.
    plain = http.Policy(client.limiter("2/minute", prefix="settle-plain"))
    assert not plain.settle(plain.check(view), 200)
    client.close()


def test_asgi_middleware_counts_by_status_and_a_crash_as_500():
    client = polylimit.Client("memory://")
    status_of = {"/ok": 200, "/fail": 403}

    async def app(scope, receive, send):
        if scope["path"] == "/crash":
            raise RuntimeError("boom")
        await send({"type": "http.response.start", "status": status_of[scope["path"]], "headers": []})
        await send({"type": "http.response.body", "body": b""})

    mw = RateLimitMiddleware(
        app, http.Policy(http.Limit(client.limiter("2/minute", prefix="asgi-cw"), count_when=http.count_failures))
    )
    assert [asyncio.run(_asgi_get(mw, "/ok"))[0] for _ in range(4)] == [200] * 4
    with pytest.raises(RuntimeError):
        asyncio.run(_asgi_get(mw, "/crash"))  # counted (as a 500)
    assert [asyncio.run(_asgi_get(mw, "/fail"))[0] for _ in range(2)] == [403, 429]
    client.close()


def test_count_when_from_config():
    policy, client = http.policy_from_config(
        {
            "URL": "memory://",
            "ROUTES": {
                "/login": {"rate": "1/minute", "count_when": "failures"},
                "/x": {"rate": "1/minute", "count_when": lambda s: s == 418},
                "/y": {"rate": "1/minute", "count_when": lambda s: s in (401, 403) or s >= 500},
            },
        }
    )
    rules = json.loads(policy.document)["rules"]
    assert [r.get("count_when") for r in rules] == ["failures", [418], [401, 403, "500-999"]]
    assert policy.counts("login", 401) and not policy.counts("login", 200)
    assert policy.counts("x", 418) and not policy.counts("x", 200)
    with pytest.raises(ValueError, match="count_when 'errors' is unknown"):
        http.policy_from_config({"URL": "memory://", "DEFAULT": {"rate": "1/s", "count_when": "errors"}})
    with pytest.raises(TypeError, match="count_when must be a function"):
        http.Limit(client.limiter("1/s"), count_when=400)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="counts no response status"):
        http.Policy(http.Limit(client.limiter("1/s"), count_when=lambda s: False))
    client.close()


def test_rate_limiters_make_one_limiter_per_route_and_prefix():
    client = polylimit.Client("memory://")
    made = http.RateLimiters(client, base="app")
    a = made.get("5/minute", made.prefix_for("views.login", "5/minute"))
    assert a.prefix == "app:view:views.login:5/minute"
    assert made.get("5/minute", made.prefix_for("views.login", "5/minute")) is a  # cached
    assert made.get("5/minute", made.prefix_for("views.other", "5/minute")) is not a  # another route
    # Two limits on one route: their stored keys must differ (they do not carry the rate).
    assert made.prefix_for("views.login", "100/hour") != a.prefix
    long_name = made.prefix_for("views.Handler.<locals>.a_view_with_a_long_name", "5 per minute")
    assert long_name.startswith("app:view:") and len(long_name) == len("app:view:") + 16 + 1 + 16  # digests
    with pytest.raises(RuntimeError, match="needs a polylimit.Client"):
        http.RateLimiters().get("5/minute", "p")
    client.close()


def test_fastapi_rate_spec_options():
    from polylimit.contrib.fastapi import RateLimit
    from starlette.requests import Request
    from starlette.responses import Response

    client = polylimit.Client("memory://")
    with pytest.raises(TypeError, match="needs client="):
        RateLimit("5/minute")
    with pytest.raises(TypeError, match="go with a rate spec"):
        RateLimit(client.limiter("5/minute"), prefix="x")
    with pytest.raises(polylimit.InvalidArgument):
        RateLimit("5 per fortnight", client=client)  # when the route is declared, not at its first request

    def endpoint_a():
        pass

    def endpoint_b():
        pass

    def scope(endpoint, extra=None):
        s = {
            "type": "http",
            "method": "GET",
            "path": "/",
            "headers": [],
            "client": ("192.0.2.1", 1),
            "query_string": b"",
            "endpoint": endpoint,
        }
        s.update(extra or {})
        return s

    dep = RateLimit("1/minute", client=client)
    run = asyncio.run
    assert run(dep(Request(scope(endpoint_a)), Response())).allowed
    assert run(dep(Request(scope(endpoint_b)), Response())).allowed  # its own limiter
    with pytest.raises(Exception) as denied:
        run(dep(Request(scope(endpoint_a)), Response()))
    assert denied.value.status_code == 429
    assert len(dep._per_route) == 2
    # count_when without CountWhenMiddleware: refused loudly, not silently counting all.
    # Another limit on the same route: counts apart from the first (the spec is in the prefix).
    counted = RateLimit("2/minute", client=client, count_when=http.count_failures)
    with pytest.raises(RuntimeError, match="CountWhenMiddleware"):
        run(counted(Request(scope(endpoint_a)), Response()))
    pending = []
    assert run(counted(Request(scope(endpoint_a, {"polylimit.pending": pending})), Response())).allowed
    assert len(pending) == 1
    client.close()


def test_flask_rate_spec_before_and_after_init_app():
    import flask
    from polylimit.contrib.flask import FlaskRateLimit

    client = polylimit.Client("memory://")
    rl = FlaskRateLimit(policy=http.Policy(None), client=client)
    app = flask.Flask("t")

    @app.get("/early")
    @rl.limit("1/minute")  # before init_app: made on its first request
    def early():
        return "ok"

    rl.init_app(app)
    with pytest.raises(polylimit.InvalidArgument):
        rl.limit("1 per fortnight")(lambda: "x")  # the client is known: made (and checked) at once

    @app.get("/late")
    @rl.limit("1/minute")
    def late():
        return "ok"

    web = app.test_client()
    assert [web.get("/early").status_code for _ in range(2)] == [200, 429]
    assert [web.get("/late").status_code for _ in range(2)] == [200, 429]
    with pytest.raises(TypeError, match="go with a rate spec"):
        rl.limit(client.limiter("1/minute"), prefix="x")
    # With the config: one client, the given one or the config's, never both silently.
    configured = flask.Flask("c")
    configured.config["POLYLIMIT"] = {"URL": "memory://", "PREFIX": "cfg"}
    with pytest.raises(ValueError, match="not both"):
        FlaskRateLimit(configured, client=client)
    configured.config["POLYLIMIT"] = {"PREFIX": "cfg", "DEFAULT": "5/minute"}
    cfg_limits = FlaskRateLimit(configured, client=client)
    assert cfg_limits.client is client and cfg_limits.policy.default.limiter.prefix == "cfg:default"

    @configured.get("/r")
    @cfg_limits.limit("1/minute")
    def r():
        return "ok"

    assert r.__dict__["_polylimit_rule"].prefix is None  # the default: made from the config's PREFIX
    assert cfg_limits._resolve(r.__dict__["_polylimit_rule"]).limiter.prefix.startswith("cfg:view:")
    client.close()


def test_a_credential_key_function_is_the_cores_401():
    """An application key function marked credential() makes its rule say
    "credential": true: the core answers the missing key 401 itself."""
    client = polylimit.Client("memory://")

    @http.credential
    def token(request):
        return request.header("Authorization")

    policy = http.Policy(
        http.Limit(client.limiter("5/minute"), key=token),
        routes={"/plain": http.Limit(client.limiter("5/minute"), key=lambda r: None)},
    )
    rules = json.loads(policy.document)["rules"]
    assert [r.get("credential") for r in rules] == [None, True]
    outcome = policy.check(http.RequestView("GET", "/", "192.0.2.1", {}))
    assert outcome.status == 401 and outcome.body == "no credential to rate-limit the request by\n"
    assert ("content-type", "text/plain; charset=utf-8") in [(k.lower(), v) for k, v in outcome.headers]
    outcome = policy.check(http.RequestView("GET", "/plain", "192.0.2.1", {}))
    assert outcome.status == 400 and outcome.body == "no rate-limit key in the request\n"
    assert policy.check(http.RequestView("GET", "/", "192.0.2.1", {"authorization": "t"})).status is None
