"""Limits on routes, over real HTTP against the suite's redis-server, with
the apps of tests/python/route_apps (every limit 2 per minute):

- response-based counting (``count_when``): only failed logins count, in
  every Python integration;
- a rate spec on the route (``@rl.limit("2/minute")`` in Flask,
  ``RateLimit("2/minute", client=...)`` in FastAPI): each route counts on
  its own unless given one prefix, and the missing-key rule holds."""

import os
import uuid

import pytest
from test_integrations import RATE_HEADERS, Server, request

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "route_apps")


@pytest.fixture(scope="module")
def apps(redis_server):
    running = {}

    def get(kind):
        if kind not in running:
            running[kind] = Server(
                kind, redis_server.url, "rl" + uuid.uuid4().hex[:8], app_dir=os.path.join(APPS, kind + "_app")
            )
            running[kind].wait()
        return running[kind]

    yield get
    logs = [s.stop() for s in running.values()]
    for log in logs:
        assert "Traceback" not in log, log


@pytest.fixture(params=["asgi", "fastapi", "flask", "django"])
def app(request, apps):
    return apps(request.param)


@pytest.fixture(params=["fastapi", "flask"])
def decorated(request, apps):
    return apps(request.param)


def _login(app, user, password):
    return request(app.base + "/login?password=" + password, headers={"X-User": user})[0]


def test_only_failed_logins_count(app):
    user = uuid.uuid4().hex
    # Successes are refunded: five of them under a limit of two.
    assert [_login(app, user, "right") for _ in range(5)] == [200] * 5, app.kind
    # Failures count: two allowed, then the key is refused...
    assert [_login(app, user, "wrong") for _ in range(3)] == [401, 401, 429]
    # ...even with the right password: the check comes before the handler.
    assert _login(app, user, "right") == 429
    # Another user is not affected.
    assert _login(app, uuid.uuid4().hex, "wrong") == 401


def test_a_refused_login_carries_the_rate_headers(app):
    user = uuid.uuid4().hex
    _login(app, user, "wrong")
    _login(app, user, "wrong")
    status, h, _ = request(app.base + "/login?password=wrong", headers={"X-User": user})
    assert status == 429 and h["Retry-After"] is not None
    assert all(h[n] is not None for n in RATE_HEADERS), dict(h)


def test_counted_login_keeps_the_missing_key_rule(app):
    status, _, body = request(app.base + "/login?password=right")
    assert status == 400 and b"no rate-limit key" in body, (app.kind, status, body)


def test_a_rate_spec_per_route_counts_apart(decorated):
    key = {"X-API-Key": uuid.uuid4().hex}
    a = [request(decorated.base + "/spec-a", headers=key)[0] for _ in range(3)]
    b = [request(decorated.base + "/spec-b", headers=key)[0] for _ in range(3)]
    assert a == [200, 200, 429], decorated.kind
    assert b == [200, 200, 429], decorated.kind  # the same rate, its own count


def test_a_shared_prefix_shares_the_count(decorated):
    user = {"X-User": uuid.uuid4().hex}
    first = [request(decorated.base + "/shared-1", headers=user)[0] for _ in range(2)]
    assert first == [200, 200]
    assert request(decorated.base + "/shared-2", headers=user)[0] == 429, decorated.kind


def test_a_rate_spec_route_rejects_a_missing_key(decorated):
    for _ in range(3):  # refused every time, never counted down to a 429
        status, _, body = request(decorated.base + "/spec-a")
        assert status == 401 and b"no credential" in body, (decorated.kind, status, body)
