"""bench/http's Python peer: FastAPI + slowapi (its Limiter on Redis storage,
keyed by the X-API-Key header, as slowapi's docs show) under uvicorn, with the
same handler and uvicorn settings as polylimit's service
(tests/http/services/python).

    python peer.py CONFIG_FILE PORT      (POLYLIMIT_URL: the Redis)

CONFIG_FILE: {"limiters": [{"rate": "1000000/hour", "prefix": "..."}], ...}
(only the first limiter is read). Prints "ready" once it accepts
connections; SIGTERM stops it.
"""

import json
import os
import sys
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse
from slowapi import Limiter, _rate_limit_exceeded_handler
from slowapi.errors import RateLimitExceeded

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def api_key(request: Request) -> str:
    return request.headers.get("x-api-key", "")


def make_app(config: Any) -> FastAPI:
    spec = config["limiters"][0]
    # "1000000/hour" is limits' notation too ("1000000 per hour").
    limiter = Limiter(
        key_func=api_key,
        storage_uri=os.environ["POLYLIMIT_URL"],
        key_prefix=spec.get("prefix", ""),
    )
    api = FastAPI()
    api.state.limiter = limiter
    api.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)

    @api.api_route("/{path:path}", methods=METHODS, response_class=PlainTextResponse)
    @limiter.limit(spec["rate"])
    def ok(request: Request, path: str) -> str:
        return "ok\n"

    return api


class Server(uvicorn.Server):
    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            print("ready", flush=True)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: peer.py CONFIG_FILE PORT")
    with open(sys.argv[1], encoding="utf-8") as f:
        config = json.load(f)
    app = make_app(config)
    server = Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=int(sys.argv[2]), proxy_headers=False, log_level="warning", lifespan="off"
        )
    )
    server.run()


if __name__ == "__main__":
    main()
