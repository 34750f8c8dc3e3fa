"""The FastAPI dependency: uvicorn app:app."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import polylimit  # noqa: E402
from common import limiters, tenant  # noqa: E402
from fastapi import Depends, FastAPI  # noqa: E402
from fastapi.responses import PlainTextResponse  # noqa: E402
from polylimit.contrib.fastapi import RateLimit  # noqa: E402
from polylimit.contrib.http import api_key  # noqa: E402

client = polylimit.Client(name="fastapi")
lim = limiters(client)
app = FastAPI()


@app.get(
    "/credential",
    response_class=PlainTextResponse,
    dependencies=[Depends(RateLimit(lim["credential"], key=api_key("X-API-Key")))],
)
def credential() -> str:
    return "ok\n"


@app.get("/tenant", response_class=PlainTextResponse, dependencies=[Depends(RateLimit(lim["tenant"], key=tenant))])
def by_tenant() -> str:
    return "ok\n"


@app.get(
    "/skip",
    response_class=PlainTextResponse,
    dependencies=[Depends(RateLimit(lim["skip"], key=api_key("X-API-Key"), on_missing_key="skip"))],
)
def skip() -> str:
    return "ok\n"


@app.get("/health", response_class=PlainTextResponse)
def health() -> str:
    return "ok\n"
