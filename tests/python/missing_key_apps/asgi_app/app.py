"""The pure ASGI middleware (no framework): uvicorn app:app."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import polylimit  # noqa: E402
from common import limiters, tenant  # noqa: E402
from polylimit.contrib.asgi import RateLimitMiddleware  # noqa: E402
from polylimit.contrib.http import Limit, Policy, api_key  # noqa: E402

client = polylimit.Client(name="asgi")
lim = limiters(client)


async def endpoint(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok\n"})


app = RateLimitMiddleware(
    endpoint,
    Policy(
        None,
        routes={
            "/credential": Limit(lim["credential"], api_key("X-API-Key")),
            "/tenant": Limit(lim["tenant"], tenant),
            "/skip": Limit(lim["skip"], api_key("X-API-Key"), on_missing_key="skip"),
        },
        exempt=["/health"],
    ),
)
