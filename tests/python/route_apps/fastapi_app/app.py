"""The FastAPI dependency: uvicorn app:app."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import polylimit  # noqa: E402
from common import PREFIX, RATE, login_ok, user_key  # noqa: E402
from fastapi import Depends, FastAPI, HTTPException, Request  # noqa: E402
from fastapi.responses import PlainTextResponse  # noqa: E402
from polylimit.contrib.asgi import CountWhenMiddleware  # noqa: E402
from polylimit.contrib.fastapi import RateLimit  # noqa: E402
from polylimit.contrib.http import api_key, count_failures  # noqa: E402

client = polylimit.Client(name="fastapi")
app = FastAPI()
app.add_middleware(CountWhenMiddleware)


@app.get(
    "/login",
    response_class=PlainTextResponse,
    dependencies=[
        Depends(RateLimit(RATE, user_key, client=client, prefix=PREFIX + ":login", count_when=count_failures))
    ],
)
def login(request: Request) -> str:
    if not login_ok(request.url.query):
        raise HTTPException(401, "wrong password")
    return "ok\n"


# One dependency object on two routes: each route still counts apart.
per_route = Depends(RateLimit(RATE, api_key("X-API-Key"), client=client))


@app.get("/spec-a", response_class=PlainTextResponse, dependencies=[per_route])
def spec_a() -> str:
    return "ok\n"


@app.get("/spec-b", response_class=PlainTextResponse, dependencies=[per_route])
def spec_b() -> str:
    return "ok\n"


@app.get(
    "/shared-1",
    response_class=PlainTextResponse,
    dependencies=[Depends(RateLimit(RATE, user_key, client=client, prefix=PREFIX + ":shared"))],
)
def shared_1() -> str:
    return "ok\n"


@app.get(
    "/shared-2",
    response_class=PlainTextResponse,
    dependencies=[Depends(RateLimit(RATE, user_key, client=client, prefix=PREFIX + ":shared"))],
)
def shared_2() -> str:
    return "ok\n"


@app.get("/health", response_class=PlainTextResponse)
def health() -> str:
    return "ok\n"
