"""No password reaches anything the package shows, and keys that UTF-8
cannot encode are the library's InvalidArgument.

A unique marker password goes through every error path Python can reach:
URLs that do not parse (each kind and each part wrong, malformed forms),
TLS option errors, a wrong password and a wrong ACL user password against a
real redis-server, a server that echoes AUTH's arguments, refused ports,
Cluster seeds refused, a wrong sentinel_password and data password against
real sentinels. The marker must not appear in any exception's str/repr, a
Client's repr, a Limiter's repr, the stats or the Prometheus text."""

import asyncio
import json
import shutil
import subprocess
import sys
import uuid

import polylimit
import pytest
from conftest import REDISFIX, _free_port, start_redis

MARKER = "s3cr3t-MARKER-" + uuid.uuid4().hex
SURROGATE = "user:\ud800"


def assert_clean(text, context=""):
    text = str(text)
    assert MARKER not in text, "%s: the marker leaked: %s" % (context, text)
    assert MARKER[14:] not in text, "%s: part of the marker leaked: %s" % (context, text)


def assert_exception_clean(exc, context=""):
    for text in (str(exc), repr(exc), " ".join(str(a) for a in exc.args)):
        assert_clean(text, context)
    # Nothing chained carries it either (a UnicodeError, a pybind11 TypeError).
    cause = exc.__cause__ or exc.__context__
    if cause is not None:
        assert_exception_clean(cause, context + " (chained)")


def exercise(url, **options):
    """Opens `url` and, when it opens, checks, batch-checks, peeks and reads
    the stats; returns the first polylimit.Error raised (or None). Every text
    shown on the way is checked."""
    shown = polylimit.redact_url(url)
    assert_clean(shown, "redact_url")
    assert "***" in shown, shown
    assert polylimit.redact_url(shown) == shown  # idempotent
    try:
        client = polylimit.Client(url, connect_timeout=1, **options)
    except polylimit.Error as e:
        assert_exception_clean(e, "open " + shown)
        return e
    first = None
    try:
        assert_clean(repr(client), "repr(client)")
        limiter = client.limiter(limit=5, window=1)
        assert_clean(repr(limiter), "repr(limiter)")
        for call in (
            lambda: limiter.check("k"),
            lambda: limiter.peek("k"),
            lambda: limiter.check_many(["a", "b"]),
            lambda: limiter.reset("k"),
        ):
            try:
                call()
            except polylimit.Error as e:
                assert_exception_clean(e, "call on " + shown)
                first = first or e
        results = limiter.check_many(["a", "b"], return_exceptions=True)
        for r in results:
            assert_clean(repr(r), "check_many result")
        try:
            asyncio.run(limiter.acheck("k"))
        except polylimit.Error as e:
            assert_exception_clean(e, "acheck on " + shown)
        assert_clean(repr(client.stats()), "stats")
        assert_clean(client.stats_prometheus(), "prometheus")
        assert_clean(polylimit.prometheus_text(client), "prometheus_text")
    finally:
        client.close()
        assert_clean(repr(client), "repr(closed client)")
    return first


BAD_URLS = [
    "redis://user:%s@h:99999",
    "redis://user:%s@h:notaport",
    "redis://:%s@h:1:2",
    "redis://%s@h:0",
    "redis://user:%s@h:6379/notadb",
    "redis://user:%s@h:6379?x=1",
    "redis://user:%s@:6379",
    "redis://user:%s@h\x01st:1",
    "rediss://user:%s@h:99999",
    "redis://user:%s%%zz@h:1",
    "redis://user:%s%%2Fx@h:99999",
    "redis://user:%s/x@h:1",
    "redis://user:%s?x@h:1",
    "redis://user:%s#x@h:99999",
    "redis://user:%s@x@h:99999",
    "redis://user:%s?a=b@h:1",
    "redis+cluster://user:%s@h:1,h:99999",
    "redis+cluster://user:%s@h:1/3",
    "rediss+cluster://:%s@h:1,,h:2",
    "redis+sentinel://user:%s@h:26379",
    "redis+sentinel://h:26379/m?sentinel_password=%s&bogus=1",
    "redis+sentinel://h:26379/m?sentinel_user=u&sentinel_password=%s&x",
    "rediss+sentinel://:%s@h/m/notadb",
    "unix://user:%s@/tmp/x.sock",
    "unix:///tmp/x.sock?db=x&password=%s",
    "unix:///tmp/%s@x.sock",
    "bogus://user:%s@h:1",
    "user:%s@h://x",
    "redis:/user:%s@h",
    "://user:%s@h",
    "memory://u:%s@",
]


@pytest.mark.parametrize("form", BAD_URLS)
def test_bad_urls_never_show_the_password(form):
    url = form % MARKER
    e = exercise(url)
    assert isinstance(e, polylimit.InvalidArgument), e
    assert "url" in str(e)


def test_redaction_forms():
    m = MARKER
    assert polylimit.redact_url("redis://bob:%s@host:6379/2" % m) == "redis://bob:***@host:6379/2"
    assert polylimit.redact_url("rediss://%s@host" % m) == "rediss://***@host"
    assert (
        polylimit.redact_url("redis+sentinel://u:%s@s1,s2/m?sentinel_user=sen&sentinel_password=%s" % (m, m))
        == "redis+sentinel://u:***@s1,s2/m?sentinel_user=sen&sentinel_password=***"
    )
    assert polylimit.redact_url("redis://host:6379") == "redis://host:6379"
    assert polylimit.redact_url("redis://u:%s/x@h" % m) == "redis://u:***@h"
    with pytest.raises(TypeError):
        polylimit.redact_url(b"redis://u:pw@h")
    with pytest.raises(polylimit.InvalidArgument) as info:
        polylimit.redact_url("redis://u:%s\ud800@h" % m)
    assert_exception_clean(info.value)


def test_a_url_utf8_cannot_encode():
    with pytest.raises(polylimit.InvalidArgument) as info:
        polylimit.Client("redis://u:%s\ud800@h:1" % MARKER)
    assert "url" in str(info.value)
    assert_exception_clean(info.value)


def test_tls_option_errors():
    e = exercise("redis://u:%s@127.0.0.1:1" % MARKER, tls_insecure=True)
    assert isinstance(e, polylimit.InvalidArgument), e
    e = exercise("rediss://u:%s@127.0.0.1:1" % MARKER, tls_ca_file="/nonexistent/polylimit-ca.pem")
    assert isinstance(e, polylimit.InvalidArgument), e


def test_tls_to_a_plain_server(redis_server):
    e = exercise("rediss://u:%s@127.0.0.1:%d" % (MARKER, redis_server.port), tls_insecure=True)
    assert isinstance(e, polylimit.Error) and not isinstance(e, polylimit.InvalidArgument), e


@pytest.fixture(scope="module")
def secured():
    server = start_redis("--requirepass", "right-password")
    yield server
    server.stop()


def test_wrong_passwords(secured, redis_server):
    base = "127.0.0.1:%d" % secured.port
    for url in (
        "redis://:%s@%s" % (MARKER, base),
        "redis://default:%s@%s/3" % (MARKER, base),
        "redis://nosuchuser:%s@%s" % (MARKER, base),
        "redis://:%s%%40x@%s" % (MARKER, base),
    ):
        e = exercise(url)
        assert isinstance(e, polylimit.AuthError), (url, e)
        assert "the server refused the user or password of the URL: check both" in str(e), e
    # An ACL user with another password, and a password for a server without one.
    redis_server.command("ACL", "SETUSER", "alice", "on", ">right-password", "~*", "+@all")
    e = exercise("redis://alice:%s@127.0.0.1:%d" % (MARKER, redis_server.port))
    assert isinstance(e, polylimit.AuthError), e
    e = exercise("redis://:%s@127.0.0.1:%d" % (MARKER, redis_server.port))
    assert isinstance(e, polylimit.AuthError), e
    assert "the server has no password configured: remove the password from the URL" in str(e), e


def test_no_password_for_a_server_that_requires_one(secured):
    """What a first-time user sees (issue: a bare protocol error): the fix
    first, the server's own reply after it."""
    with polylimit.Client("redis://127.0.0.1:%d" % secured.port, connect_timeout=1) as client:
        with pytest.raises(polylimit.AuthError) as info:
            client.limiter("5/minute").check("k")
    text = str(info.value)
    assert "the server requires authentication: give a password (and user) in the URL" in text, text
    assert "(the server said: " in text, text


def test_server_echoing_auth_arguments():
    # A server that does not know AUTH answers "unknown command 'AUTH', with
    # args beginning with: '<password>'".
    server = start_redis("--rename-command", "AUTH", "")
    try:
        e = exercise("redis://:%s@127.0.0.1:%d" % (MARKER, server.port))
        assert e is not None and "unknown command" in str(e), e
    finally:
        server.stop()


def test_unreachable_hosts():
    for url in (
        "redis://u:%s@127.0.0.1:%d" % (MARKER, _free_port()),
        "redis+cluster://u:%s@127.0.0.1:%d,127.0.0.1:%d" % (MARKER, _free_port(), _free_port()),
        "redis+sentinel://u:%s@127.0.0.1:%d/m?sentinel_password=%s" % (MARKER, _free_port(), MARKER),
        "rediss+sentinel://:%s@127.0.0.1:%d/m" % (MARKER, _free_port()),
    ):
        e = exercise(url)
        assert isinstance(e, polylimit.Unavailable), (polylimit.redact_url(url), e)


def test_cluster_against_a_server_that_is_not_one(secured):
    e = exercise("redis+cluster://:%s@127.0.0.1:%d" % (MARKER, secured.port))
    assert e is not None


@pytest.fixture(scope="module")
def sentinels():
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    proc = subprocess.Popen(
        [
            sys.executable,
            REDISFIX,
            "sentinel",
            "--name",
            "secretmaster",
            "--replicas",
            "0",
            "--sentinels",
            "1",
            "--password",
            "data-password",
            "--sentinel-password",
            "sentinel-password",
            "--no-discovery",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    desc = json.loads(proc.stdout.readline() or '{"error": "no output"}')
    try:
        if "error" in desc:
            raise RuntimeError("redisfix sentinel: " + desc["error"])
        yield "127.0.0.1:%d" % desc["sentinels"][0]["port"]
    finally:
        proc.stdin.close()
        proc.wait(30)
        proc.stdout.close()


def test_sentinel_credentials(sentinels):
    e = exercise("redis+sentinel://:data-password@%s/secretmaster?sentinel_password=%s" % (sentinels, MARKER))
    assert isinstance(e, polylimit.AuthError), e
    e = exercise("redis+sentinel://:%s@%s/secretmaster?sentinel_password=sentinel-password" % (MARKER, sentinels))
    assert isinstance(e, polylimit.AuthError), e
    e = exercise("redis+sentinel://:%s@%s/nosuchmaster?sentinel_password=%s" % (MARKER, sentinels, MARKER))
    assert e is not None


# -- keys that UTF-8 cannot encode ---------------------------------------------


@pytest.fixture
def limiter():
    with polylimit.Client("memory://") as client:
        yield client.limiter(limit=5, window=1)


@pytest.mark.parametrize(
    "call", ["check", "peek", "reset", "check_at_most", "refund", "acquire", "check_limit", "check_at"]
)
def test_surrogate_key_is_invalid_argument(limiter, call):
    args = {
        "check": (1,),
        "peek": (),
        "reset": (),
        "check_at_most": (2,),
        "refund": (1,),
        "acquire": (1, 0.1),
        "check_limit": (1, 3, 1),
        "check_at": (1, 1.0),
    }[call]
    with pytest.raises(polylimit.InvalidArgument) as info:
        getattr(limiter, call)(SURROGATE, *args)
    assert str(info.value).startswith("key ")
    assert "UTF-8" in str(info.value)
    assert not isinstance(info.value, UnicodeError)


def test_surrogate_key_in_a_batch(limiter):
    with pytest.raises(polylimit.InvalidArgument) as info:
        limiter.check_many(["fine", "also fine", SURROGATE])
    assert str(info.value).startswith("keys[2] "), str(info.value)
    # The keys before it were not checked: the batch was refused whole.
    assert limiter.peek("fine").remaining == 5


def test_surrogate_key_async(limiter):
    async def main():
        with pytest.raises(polylimit.InvalidArgument):
            await limiter.acheck(SURROGATE)
        with pytest.raises(polylimit.InvalidArgument):
            await limiter.acheck_many(["a", SURROGATE])
        with pytest.raises(polylimit.InvalidArgument):
            await limiter.apeek("x\udfff")

    asyncio.run(main())


def test_encodable_keys_still_work(limiter):
    assert limiter.check("ключ-\U0001f600")
    assert limiter.check(b"\xff\xfe raw bytes")
    assert limiter.peek("ключ-\U0001f600").remaining == 4


# -- API keys given in HTTP requests ---------------------------------------------


def _scan(server):
    keys, cursor = [], b"0"
    while True:
        cursor, batch = server.command("SCAN", cursor, "COUNT", 1000)
        keys.extend(batch)
        if cursor in (b"0", 0, "0"):
            return keys


def test_an_api_key_in_a_request_never_reaches_redis_a_log_or_an_error(caplog, private_redis):
    """A request's API key (and a custom header's value) is hashed by the
    core: after requests that check, are denied, fail and are refunded, no
    Redis key, log line, message or metric holds it."""
    import logging

    from polylimit.contrib import http
    from polylimit.contrib.asgi import RateLimitMiddleware

    caplog.set_level(logging.DEBUG)
    secret = MARKER
    client = polylimit.Client(private_redis.url)
    policy = http.Policy(
        None,
        routes={
            "/api/*": http.Limit(
                client.limiter("2/minute", prefix="sec-api"), http.api_key(), count_when=lambda s: s >= 500
            ),
            "/h": http.Limit(
                client.limiter("2/minute", prefix="sec-h"), http.compose(http.header("X-Token"), http.route())
            ),
        },
    )

    async def app(scope, receive, send):
        status = 500 if scope["path"].endswith("/boom") else 200
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    mw = RateLimitMiddleware(app, policy)

    async def get(path, **headers):
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        raw = [(k.lower().replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
        scope = {"type": "http", "method": "GET", "path": path, "headers": raw, "client": ("192.0.2.1", 1)}
        await mw(scope, receive, send)
        return sent[0]["status"], sent

    async def requests():
        statuses = [(await get("/api/x", X_API_Key=secret))[0] for _ in range(3)]
        statuses.append((await get("/api/boom", X_API_Key=secret + "2"))[0])
        statuses += [(await get("/h", X_Token=secret))[0] for _ in range(3)]
        return statuses

    statuses = asyncio.run(requests())
    assert statuses == [200, 200, 200, 500, 200, 200, 429]  # the /api ones under 500 refunded
    stored = _scan(private_redis)
    assert stored, "the requests reached Redis"
    for k in stored:
        assert_clean(k.decode("utf-8", "replace"), "a Redis key")
    for d in (policy.check(http.RequestView("GET", "/api/y", "192.0.2.1", {"x-api-key": secret})),):
        for text in (repr(d), str(d.key), repr(d.step)):
            assert_clean(text, "an outcome")
    assert_clean(policy.metrics_prometheus(), "the metrics")
    assert_clean(polylimit.prometheus_text(client), "the client's metrics")
    # A failing check is logged (rule, code, message): without the key.
    private_redis.stop()
    failed = policy.check(http.RequestView("GET", "/api/z", "192.0.2.1", {"x-api-key": secret}))
    assert failed.status == 503 and failed.error is not None
    assert_exception_clean(failed.error, "the failed check's error")
    assert any("failed" in r.getMessage() for r in caplog.records)
    for r in caplog.records:
        assert_clean(r.getMessage(), "a log line")
    # A document that names a secret in its lists: the error never quotes it.
    with pytest.raises(polylimit.InvalidArgument) as refused:
        http.Policy.from_document({"allow": {"api_keys": [secret], "ipz": []}, "rules": []}, [])
    assert_exception_clean(refused.value, "a refused document")
    client.close()
