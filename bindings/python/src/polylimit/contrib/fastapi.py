"""A FastAPI dependency that rate-limits one route (or a router)::

    from fastapi import Depends, FastAPI
    from polylimit.contrib.fastapi import RateLimit
    from polylimit.contrib.http import api_key

    search = client.limiter("10/minute", prefix="search")

    @app.get("/search", dependencies=[Depends(RateLimit(search, key=api_key()))])
    def do_search(q: str) -> dict: ...

    # or, to see the decision:
    @app.get("/items")
    def items(decision=Depends(RateLimit(per_ip))) -> dict: ...

A denial raises ``HTTPException(429)`` carrying the core's headers (FastAPI
answers ``{"detail": "Too Many Requests"}``); a request without a key
``HTTPException(401)`` (the key above is a credential; 400 for other keys)
unless ``on_missing_key="skip"``; an allowed request gets the
same headers on its response (FastAPI copies them from the injected
``Response`` when the endpoint returns data rather than a Response of its
own). Limiter errors follow ``on_error`` as in
:class:`polylimit.contrib.http.Policy` (503 or pass). The route key
(:func:`polylimit.contrib.http.route`) sees the route template here
(``/items/{item_id}``). For every route at once use
:class:`polylimit.contrib.asgi.RateLimitMiddleware` instead; do not apply
both to one route (the headers would be sent twice).
"""

from typing import Iterable, Optional

from fastapi import HTTPException, Request, Response

from .._client import Limiter
from .._core import Decision
from .asgi import request_view
from .http import KeyFunc, Limit, Policy

__all__ = ["RateLimit"]


class RateLimit:
    """``Depends(RateLimit(limiter, key=...))``: checks ``limiter`` for the
    request's key (default: the client IP; X-Forwarded-For from
    ``trusted_proxies`` only) and returns the Decision (None when the
    request went on without a check: no key with
    ``on_missing_key="skip"``, or the limiter failed with
    ``on_error="allow"``). A request without a key is refused by default
    (``HTTPException`` 400, or 401 when the key is a credential such as
    :func:`polylimit.contrib.http.api_key`)."""

    def __init__(self, limiter: Limiter, key: Optional[KeyFunc] = None, *, cost: int = 1,
                 methods: Optional[Iterable[str]] = None, trusted_proxies: Iterable[str] = (),
                 send_headers: bool = True, on_error: str = "unavailable",
                 on_missing_key: str = "reject") -> None:
        self.limit = Limit(limiter, key, cost=cost, methods=methods, on_missing_key=on_missing_key)
        self.policy = Policy(self.limit, trusted_proxies=trusted_proxies, send_headers=send_headers,
                             on_error=on_error)

    async def __call__(self, request: Request, response: Response) -> Optional[Decision]:
        view = request_view(request.scope, self.policy.trusted)
        rule = self.limit if self.limit.methods is None or view.method in self.limit.methods else None
        outcome = await self.policy.acheck(view, rule)
        if outcome.status is not None:
            # The policy's text body, as FastAPI's JSON detail.
            detail = outcome.body.strip()
            raise HTTPException(status_code=outcome.status, detail=detail, headers=dict(outcome.headers))
        for name, value in outcome.headers:
            response.headers[name] = value
        return outcome.decision
