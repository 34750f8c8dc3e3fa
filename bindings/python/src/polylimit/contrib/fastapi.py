"""A FastAPI dependency that rate-limits one route (or a router)::

    from fastapi import Depends, FastAPI
    from polylimit.contrib.fastapi import RateLimit
    from polylimit.contrib.http import api_key

    search = client.limiter("10/minute", prefix="search")

    @app.get("/search", dependencies=[Depends(RateLimit(search, key=api_key()))])
    def do_search(q: str) -> dict: ...

    # the contract's plain-text answers (see below):
    app.add_exception_handler(RateLimitRefusal, refusal_handler)

    # or, to see the decision:
    @app.get("/items")
    def items(decision=Depends(RateLimit(per_ip))) -> dict: ...

    # or with a rate spec: a limiter of its own for each route, made once
    @app.get("/report", dependencies=[Depends(RateLimit("5/minute", client=client))])
    def report() -> dict: ...

    # or counting only failed logins (responses with a status >= 400):
    app.add_middleware(CountWhenMiddleware)       # polylimit.contrib.asgi
    @app.post("/login", dependencies=[Depends(RateLimit("5/minute", client=client, count_when=count_failures))])
    def login(...) -> dict: ...

A refusal raises :class:`RateLimitRefusal`, an ``HTTPException`` with the
core's status and headers: 429 for a denial, 401 for a request without a
key (the key above is a credential; 400 for other keys) unless
``on_missing_key="skip"``, 403, 503. With :func:`refusal_handler`
installed (``app.add_exception_handler(RateLimitRefusal,
refusal_handler)``) the response is the contract's answer exactly, as the
middleware and every other language give it: the status, the core's
headers and its plain-text body (docs/integrations/contract.md,
"Answers"). Without it FastAPI's own ``HTTPException`` handler (or the
application's) answers: the same status and rate-limit headers, with a
JSON body ``{"detail": "Too Many Requests"}``. An explicit handler, as
FastAPI applications register for their own exceptions, rather than one
installed behind the application's back: a handler the application has
for ``HTTPException`` keeps answering refusals until it opts in. An
allowed request gets the
same headers on its response (FastAPI copies them from the injected
``Response`` when the endpoint returns data rather than a Response of its
own). Limiter errors follow ``on_error`` as in
:class:`polylimit.contrib.http.Policy` (503 or pass). The route key
(:func:`polylimit.contrib.http.route`) sees the route template here
(``/items/{item_id}``). For every route at once use
:class:`polylimit.contrib.asgi.RateLimitMiddleware` instead; do not apply
both to one route (the headers would be sent twice).

With a rate spec instead of a limiter (and ``client=``), each route the
dependency is used on gets a limiter of its own, made on the route's first
request and kept, with the prefix ``pl:view:<module.qualname of the
endpoint>:<spec>`` (see :class:`polylimit.contrib.http.RateLimiters`), so two
routes with the same rate never share counts; give ``prefix=`` to make
them share (one limiter for every route of the dependency).

``count_when`` (count only some responses, by status; see
:class:`polylimit.contrib.http.Limit`) needs
:class:`polylimit.contrib.asgi.CountWhenMiddleware` on the app: a
dependency cannot see the response's status, and without the middleware
the request fails (500) rather than counting every response.
"""

from typing import Dict, Iterable, List, Optional, Tuple, Union

from fastapi import HTTPException, Request, Response

from .._client import Client, Limiter
from .._core import Decision
from .._vocabulary import AlgorithmName, FailurePolicyName
from .asgi import PENDING, request_view
from .http import Cost, CountWhen, Hook, KeyFunc, Limit, Outcome, Policy, RateLimiters, view_name

__all__ = ["RateLimit", "RateLimitRefusal", "refusal_handler"]


class RateLimitRefusal(HTTPException):
    """What :class:`RateLimit` raises for a refusal (429, 503, 400, 401,
    403): an ``HTTPException`` with the core's status and headers (``detail``
    the body's text), that also carries the core's answer itself, ``body``
    and ``answer_headers`` (with its ``Content-Type``), for
    :func:`refusal_handler`."""

    def __init__(self, outcome: Outcome) -> None:
        assert outcome.status is not None
        super().__init__(
            status_code=outcome.status,
            detail=outcome.body.strip(),
            headers={k: v for k, v in outcome.headers if k.lower() != "content-type"},
        )
        self.body: str = outcome.body
        self.answer_headers: List[Tuple[str, str]] = list(outcome.headers)

    def response(self) -> Response:
        """The contract's answer: the status, the core's headers in order
        (``Content-Type`` among them) and its plain-text body."""
        return Response(content=self.body, status_code=self.status_code, headers=dict(self.answer_headers))


async def refusal_handler(request: Request, exc: Exception) -> Response:
    """The exception handler that answers a :class:`RateLimitRefusal` as the
    contract says: ``app.add_exception_handler(RateLimitRefusal,
    refusal_handler)``."""
    if not isinstance(exc, RateLimitRefusal):
        raise exc
    return exc.response()


class RateLimit:
    """``Depends(RateLimit(limiter, key=...))``: checks ``limiter`` for the
    request's key (default: the client IP; X-Forwarded-For from
    ``trusted_proxies`` only) and returns the Decision (None when the
    request went on without a check: no key with
    ``on_missing_key="skip"``, or the limiter failed with
    ``on_error="allow"``). A refusal raises :class:`RateLimitRefusal`; a
    request without a key is refused by default (400, or 401 when the key
    is a credential such as :func:`polylimit.contrib.http.api_key`).

    ``limiter`` may be a rate spec (``"5/minute"``) with ``client``: then
    each route gets a limiter of its own (``prefix``, ``algorithm`` and
    ``on_failure`` are its options; a given ``prefix`` is shared by every
    route). The spec is checked here, when the route is declared."""

    def __init__(
        self,
        limiter: Union[Limiter, str],
        key: Optional[KeyFunc] = None,
        *,
        cost: Cost = 1,
        methods: Optional[Iterable[str]] = None,
        trusted_proxies: Iterable[str] = (),
        send_headers: bool = True,
        on_error: str = "unavailable",
        on_missing_key: str = "reject",
        count_when: Optional[CountWhen] = None,
        client: Optional[Client] = None,
        prefix: Optional[str] = None,
        algorithm: Optional[AlgorithmName] = None,
        on_failure: Optional[FailurePolicyName] = None,
        user: Optional[Hook] = None,
        tenant: Optional[Hook] = None,
        name: Optional[str] = None,
    ) -> None:
        self._spec: Optional[str] = None
        self._limiters: Optional[RateLimiters] = None
        self._per_route: Dict[str, Policy] = {}
        if isinstance(limiter, str):
            if client is None:
                raise TypeError("RateLimit(%r): a rate spec needs client=polylimit.Client(...)" % limiter)
            self._spec, self._limiters = limiter, RateLimiters(client)
            self._options = (algorithm, on_failure)
            # Made now so that a bad spec fails when the route is declared;
            # used as is when prefix= is given (one budget for every route).
            limiter = self._limiters.get(
                limiter, prefix or self._limiters.prefix_for("-", limiter), algorithm, on_failure
            )
            if prefix is not None:
                self._spec = None
        elif client is not None or prefix is not None or algorithm is not None or on_failure is not None:
            raise TypeError("client, prefix, algorithm and on_failure go with a rate spec, not a Limiter")
        self.limit = Limit(
            limiter, key, cost=cost, methods=methods, on_missing_key=on_missing_key, count_when=count_when, name=name
        )
        self.policy = Policy(
            self.limit,
            trusted_proxies=trusted_proxies,
            send_headers=send_headers,
            on_error=on_error,
            user=user,
            tenant=tenant,
        )

    def _policy_for(self, request: Request) -> Policy:
        """This route's policy: with a rate spec and no prefix, a limiter per
        endpoint (made once); else the one policy."""
        if self._spec is None or self._limiters is None:
            return self.policy
        endpoint = request.scope.get("endpoint")
        name = view_name(endpoint) if endpoint is not None else "-"
        found = self._per_route.get(name)
        if found is None:
            # No await between the lookup and the store: one limiter per
            # route even with concurrent first requests on this event loop.
            algorithm, on_failure = self._options
            lim = self._limiters.get(self._spec, self._limiters.prefix_for(name, self._spec), algorithm, on_failure)
            base = self.limit
            found = self.policy.derive(
                Limit(
                    lim,
                    base.key,
                    cost=base.cost,
                    methods=base.methods,
                    on_missing_key=base.on_missing_key,
                    count_when=base.count_when,
                    name=base.name,
                )
            )
            self._per_route[name] = found
        return found

    async def __call__(self, request: Request, response: Response) -> Optional[Decision]:
        policy = self._policy_for(request)
        pending = request.scope.get(PENDING)
        if self.limit.count_when is not None and pending is None:
            raise RuntimeError(
                "RateLimit(count_when=...) needs polylimit.contrib.asgi.CountWhenMiddleware: "
                "app.add_middleware(CountWhenMiddleware)"
            )
        outcome = await policy.acheck(request_view(request.scope, policy.needs_route))
        if pending is not None and outcome.decision is not None:
            pending.append((policy, outcome))
        if outcome.status is not None:
            raise RateLimitRefusal(outcome)
        for name, value in outcome.headers:
            response.headers[name] = value
        return outcome.decision
