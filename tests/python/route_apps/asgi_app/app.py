"""The pure ASGI middleware (no framework): uvicorn app:app."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import polylimit  # noqa: E402
from common import PREFIX, RATE, login_ok, user_key  # noqa: E402
from polylimit.contrib.asgi import RateLimitMiddleware  # noqa: E402
from polylimit.contrib.http import Limit, Policy, count_failures  # noqa: E402

client = polylimit.Client(name="asgi")


async def endpoint(scope, receive, send):
    ok = scope["path"] != "/login" or login_ok(scope.get("query_string", b"").decode())
    await send(
        {"type": "http.response.start", "status": 200 if ok else 401, "headers": [(b"content-type", b"text/plain")]}
    )
    await send({"type": "http.response.body", "body": b"ok\n" if ok else b"wrong password\n"})


app = RateLimitMiddleware(
    endpoint,
    Policy(
        None,
        routes={"/login": Limit(client.limiter(RATE, prefix=PREFIX + ":login"), user_key, count_when=count_failures)},
        exempt=["/health"],
    ),
)
