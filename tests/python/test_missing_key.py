"""A request whose key function finds no key is never let through unlimited
unless the limit says so by name (docs/integrations/README.md): every Python
integration, over real HTTP, with the apps of tests/python/missing_key_apps
(routes /credential, /tenant, /skip, each limited to 2 per minute)."""

import inspect
import os
import uuid

import pytest
from test_integrations import RATE_HEADERS, Server, request

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "missing_key_apps")
INTEGRATIONS = ["asgi", "fastapi", "flask", "django"]


@pytest.fixture(scope="module")
def apps(redis_server):
    running = {}

    def get(kind):
        if kind not in running:
            running[kind] = Server(
                kind, redis_server.url, "mk" + uuid.uuid4().hex[:8], app_dir=os.path.join(APPS, kind + "_app")
            )
            running[kind].wait()
        return running[kind]

    yield get
    logs = [s.stop() for s in running.values()]
    for log in logs:
        assert "Traceback" not in log, log


@pytest.fixture(params=INTEGRATIONS)
def app(request, apps):
    return apps(request.param)


def _no_rate_headers(h):
    return not [n for n in RATE_HEADERS + ("Retry-After",) if n in h]


def test_default_rejects_a_missing_credential_with_401(app):
    for _ in range(3):  # refused every time, never counted down to a 429
        status, h, body = request(app.base + "/credential")
        assert status == 401, (app.kind, status, body)
        assert _no_rate_headers(h), dict(h)
        assert b"no credential" in body
        if app.kind == "fastapi":
            # No refusal_handler in this app: FastAPI's HTTPException handler
            # answers (the core's status, a JSON detail).
            assert body == b'{"detail":"no credential to rate-limit the request by"}', body
    # With the key, the same route is limited: 2 per minute.
    key = uuid.uuid4().hex
    statuses = [request(app.base + "/credential", headers={"X-API-Key": key})[0] for _ in range(3)]
    assert statuses == [200, 200, 429]


def test_default_rejects_a_missing_key_with_400(app):
    status, h, body = request(app.base + "/tenant")
    assert status == 400, (app.kind, status, body)
    assert _no_rate_headers(h) and b"no rate-limit key" in body
    tenant = uuid.uuid4().hex
    statuses = [request(app.base + "/tenant", headers={"X-Tenant": tenant})[0] for _ in range(3)]
    assert statuses == [200, 200, 429]


def test_skip_lets_a_keyless_request_through_unlimited(app):
    for _ in range(5):  # more than the limit: none of these counts
        status, h, body = request(app.base + "/skip")
        assert status == 200 and body == b"ok\n", (app.kind, status, body)
        assert _no_rate_headers(h), dict(h)
    key = uuid.uuid4().hex
    statuses = [request(app.base + "/skip", headers={"X-API-Key": key})[0] for _ in range(3)]
    assert statuses == [200, 200, 429]


def test_every_entry_point_defaults_to_reject():
    """The default is "reject" wherever a limit is made: Limit, the FastAPI
    dependency, Flask's decorator and the configuration dict of Django and
    Flask (a key that may be missing, no on_missing_key: 401/400)."""
    import polylimit
    from polylimit.contrib.fastapi import RateLimit
    from polylimit.contrib.flask import FlaskRateLimit
    from polylimit.contrib.http import ON_MISSING_KEY, Limit, RequestView, policy_from_config

    assert ON_MISSING_KEY[0] == "reject"
    for fn in (Limit.__init__, RateLimit.__init__, FlaskRateLimit.limit):
        assert inspect.signature(fn).parameters["on_missing_key"].default == "reject", fn
    client = polylimit.Client("memory://")
    policy, _ = policy_from_config(
        {
            "DEFAULT": {"rate": "1/minute", "key": "api_key"},
            "ROUTES": {"/t": {"rate": "1/minute", "key": lambda r: None}},
        },
        client,
    )
    keyless = RequestView("GET", "/", "127.0.0.1", {})
    assert policy.check(keyless).status == 401
    assert policy.check(RequestView("GET", "/t", "127.0.0.1", {})).status == 400
    assert Limit(client.limiter("1/minute")).on_missing_key == "reject"
    with pytest.raises(ValueError, match="on_missing_key 'allow' is unknown"):
        Limit(client.limiter("1/minute"), on_missing_key="allow")


def test_credential_marks_compose_and_first_of():
    from polylimit.contrib.http import api_key, client_ip, compose, credential, first_of, is_credential, route, user

    assert is_credential(api_key()) and is_credential(user())
    assert not is_credential(client_ip()) and not is_credential(route())
    assert is_credential(compose(user(), route())) and is_credential(first_of(api_key(), client_ip()))
    assert not is_credential(compose(route(), client_ip()))

    @credential
    def token(request):
        return request.header("Authorization")

    assert is_credential(token)
