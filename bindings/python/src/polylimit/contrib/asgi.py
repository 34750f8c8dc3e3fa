"""Rate limiting for any ASGI application (Starlette, FastAPI, ...).

Pure ASGI: nothing here imports a framework. ::

    from polylimit.contrib.asgi import RateLimitMiddleware
    from polylimit.contrib.http import Limit, Policy, client_ip, api_key

    client = polylimit.Client("redis://127.0.0.1:6379", name="web")
    policy = Policy(
        Limit(client.limiter("100/minute", prefix="web")),            # default: per client IP
        routes={"/login": Limit(client.limiter("5/minute", prefix="login")),
                "/api/*": Limit(client.limiter("1000/hour", prefix="api"), api_key())},
        exempt=["/health"],
        trusted_proxies=["10.0.0.0/8"],
    )
    app.add_middleware(RateLimitMiddleware, policy=policy)    # Starlette / FastAPI
    # or: app = RateLimitMiddleware(app, policy)

Every request is decided by the policy (the core's, the same in every
language: docs/integrations/contract.md): a denial is ``429 Too Many
Requests`` with the rate-limit headers, a request without a key 400 (401
for a credential such as ``api_key()``) unless its limit says
``on_missing_key="skip"``, the deny list 403, a failed check 503 (or on,
with ``on_error="allow"``); admitted responses get the headers too. The
decision is in ``request.state.polylimit`` (``scope["state"]["polylimit"]``).
The peer is ``scope["client"]``: a test client's ``"testclient"`` is no
address, so an ``ip`` key is missing there (give the test client a real
address, e.g. Starlette's ``TestClient(app, client=("192.0.2.1", 5000))``).
The route template (for ``routes`` and the ``route`` key) is asked of the
Starlette/FastAPI router. The user id is ``scope["user"]`` as Starlette's
``AuthenticationMiddleware`` sets it (``identity`` or ``display_name`` of an
authenticated user; add that middleware first), unless the policy has a
``user`` hook.

A rule with ``count_when`` is settled when the response starts: its units
are refunded when the core says the status does not count (a handler that
raises before answering counts as 500). The FastAPI dependency needs
:class:`CountWhenMiddleware` for that.
"""

from typing import Any, Awaitable, Callable, Dict, List, MutableMapping, Optional, Tuple

from .http import Outcome, Policy, RequestView

__all__ = ["CountWhenMiddleware", "RateLimitMiddleware", "request_view"]

# The scope entry where CountWhenMiddleware collects what to settle.
PENDING = "polylimit.pending"

# As Starlette spells them (so that app.add_middleware type-checks).
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
ASGIApp = Callable[[Any, Receive, Send], Awaitable[None]]


def _scope_user(scope: Scope) -> Optional[str]:
    u = scope.get("user")
    if u is None or not getattr(u, "is_authenticated", False):
        return None
    for attr in ("identity", "display_name"):
        value = getattr(u, attr, None)
        if value:
            return str(value)
    return None


def _route_of(scope: Scope) -> Optional[str]:
    """The route template of a Starlette/FastAPI app's route that matches
    the scope, asked of the app's own router (before routing ran); None
    when there is no such app or no route matches."""
    route = getattr(scope.get("route"), "path", None)  # set once routing ran (dependencies)
    if route is not None:
        return str(route)
    router = getattr(scope.get("app"), "router", None)
    for candidate in getattr(router, "routes", ()):
        try:
            match, _ = candidate.matches(scope)
        except Exception:  # not a Starlette route
            return None
        if getattr(match, "name", "") == "FULL":
            path = getattr(candidate, "path", None)
            return str(path) if path is not None else None
    return None


def request_view(scope: Scope, route: bool = True) -> RequestView:
    """The request of an HTTP scope, for the policy and the application's
    hooks. ``route``: look the route template up (when the policy needs it)."""
    headers: Dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers") or ():
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        headers[name] = headers[name] + ", " + value if name in headers else value
    client = scope.get("client")
    peer = client[0] if client else None
    return RequestView(
        scope.get("method", "GET"),
        scope.get("path", "/"),
        peer,
        headers,
        native=scope,
        route=_route_of(scope) if route else None,
        user=lambda: _scope_user(scope),
    )


def _encode(headers: List[Tuple[str, str]]) -> List[Tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]


async def send_outcome(outcome: Outcome, send: Send) -> None:
    """Sends the core's answer of an outcome (429, 503, 400, 401, 403) as
    the whole response: its status, headers (Content-Type among them) and
    body."""
    body = outcome.body.encode("utf-8")
    headers = _encode(outcome.headers) + [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": outcome.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RateLimitMiddleware:
    """ASGI middleware applying a :class:`polylimit.contrib.http.Policy` to
    every HTTP request (websocket and lifespan scopes pass through).

    ``RateLimitMiddleware(app, policy)``, or with Starlette/FastAPI
    ``app.add_middleware(RateLimitMiddleware, policy=policy)``."""

    def __init__(self, app: ASGIApp, policy: Policy) -> None:
        if not isinstance(policy, Policy):
            raise TypeError("policy must be a polylimit.contrib.http.Policy, not %s" % type(policy).__name__)
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        outcome = await self.policy.acheck(request_view(scope, self.policy.needs_route))
        if outcome.decision is not None:
            state = scope.setdefault("state", {})
            if isinstance(state, dict):
                state["polylimit"] = outcome.decision
        if outcome.status is not None:
            await send_outcome(outcome, send)
            return
        if not outcome.headers and outcome.decision is None:
            await self.app(scope, receive, send)
            return
        await _run_and_settle(self.app, scope, receive, send, [(self.policy, outcome)], _encode(outcome.headers))


async def _run_and_settle(
    app: ASGIApp,
    scope: Scope,
    receive: Receive,
    send: Send,
    pending: List[Tuple[Policy, Outcome]],
    extra: List[Tuple[bytes, bytes]],
) -> None:
    """Runs the app, adding ``extra`` headers to its response, then settles
    each outcome with the response's status."""
    status = 500  # the app raised (or never answered) before a response started

    async def send_wrapped(message: Message) -> None:
        nonlocal status
        if message.get("type") == "http.response.start":
            status = int(message.get("status", 200))
            if extra:
                message = dict(message)
                message["headers"] = list(message.get("headers") or []) + extra
        await send(message)

    try:
        await app(scope, receive, send_wrapped)
    finally:
        for policy, outcome in pending:
            await policy.asettle(outcome, status)


class CountWhenMiddleware:
    """ASGI middleware that settles the ``count_when`` limits of the FastAPI
    dependency (:class:`polylimit.contrib.fastapi.RateLimit`) when the
    response starts; a dependency cannot see the response's status itself.
    ``app.add_middleware(CountWhenMiddleware)``. Not needed with
    :class:`RateLimitMiddleware`, which settles its own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        pending: List[Tuple[Policy, Outcome]] = []
        scope[PENDING] = pending
        await _run_and_settle(self.app, scope, receive, send, pending, [])
